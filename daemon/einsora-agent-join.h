/* einsora-daemon agent --join URL --token ENR --fingerprint SHA256
 * (docs/adr/0055): this machine enrols as an agent of the daemon at URL.
 * It makes a key pair (OpenSSL), sends a certificate request with the
 * one-time token to POST /agent/v1/enroll over TLS to the server whose
 * certificate has that fingerprint (nothing is sent to any other), and
 * keeps what it gets back in <state dir>/agent/, 0600 in 0700: the key,
 * its certificate, the CA's, the server and its fingerprint, and the
 * machine ID the server gave it (never the host's name). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The files it keeps, in <state dir>/EINSORA_AGENT_JOIN_DIR. */
#define EINSORA_AGENT_JOIN_DIR "agent"
#define EINSORA_AGENT_KEY_FILE "key.pem"
#define EINSORA_AGENT_CERT_FILE "certificate.pem"
#define EINSORA_AGENT_CA_FILE "ca.pem"
#define EINSORA_AGENT_SERVER_FILE "server.json"
#define EINSORA_AGENT_MACHINE_ID_FILE "machine-id"

/* Enrols; on success prints what it did and returns the machine's ID. An
 * agent already enrolled there is refused. */
gchar *einsora_agent_join(const char *state_dir, const char *server, const char *token,
                          const char *fingerprint, GError **error);

G_END_DECLS
