/* The certificate a TLS listener presents (docs/adr/0045): files the
 * operator gives, or the daemon's own, made on first run: a certificate
 * authority and a server certificate it signs, both ECDSA P-256 with
 * OpenSSL, kept in a private directory (0700, keys 0600) so that a
 * client's pin holds across restarts. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* In @dir: ca.pem and ca-key.pem, server.pem (the server certificate,
 * then the CA's) and server-key.pem. */
#define EINSORA_TLS_CA_FILE "ca.pem"
#define EINSORA_TLS_CA_KEY_FILE "ca-key.pem"
#define EINSORA_TLS_CERT_FILE "server.pem"
#define EINSORA_TLS_KEY_FILE "server-key.pem"

/* Makes @dir's identity unless it has one: the server certificate names
 * @hosts (host names and IP literals, NULL-terminated) as its subject
 * alternative names. Files are written whole or not at all. An identity
 * already there is kept as it is, whatever @hosts says; so is a CA
 * already there without a server certificate (one that signed agents'
 * certificates), which then signs the new server certificate. */
gboolean einsora_tls_identity_ensure(const char *dir, const char *const *hosts, GError **error);

/* The certificate (and its chain) with its private key, from PEM files. */
GTlsCertificate *einsora_tls_identity_load(const char *cert_path, const char *key_path,
                                           GError **error);

/* "SHA256:" and the lowercase hex of the SHA-256 of @certificate's DER:
 * what a client pins. */
gchar *einsora_tls_certificate_fingerprint(GTlsCertificate *certificate);

/* Whether @text names @fingerprint: "SHA256:" optional, colons and case
 * ignored, as people copy fingerprints from other tools. */
gboolean einsora_tls_fingerprint_matches(const char *text, const char *fingerprint);

/* Networked agents' enrolment: the agent makes a key and a request, the
 * server signs a client certificate for it with @dir's CA. */

/* For the agent: a new ECDSA P-256 key (@key_pem, PKCS#8 PEM, not
 * encrypted) and a PKCS#10 request for it (@csr_pem), signed with it
 * (SHA-256). Its subject is O=Einsora only: the server ignores the
 * request's subject and extensions, and names the certificate itself. */
gboolean einsora_tls_agent_request_new(gchar **key_pem, gchar **csr_pem, GError **error);

/* The most @valid_days einsora_tls_agent_certificate_sign() takes. */
#define EINSORA_TLS_AGENT_MAX_VALID_DAYS 10000

/* For the server: a client certificate (PEM) for @csr_pem's key, named
 * O=Einsora, CN=@machine_id, for client authentication only, signed by
 * @dir's CA (made if missing) and valid from a minute ago for
 * @valid_days (1 to EINSORA_TLS_AGENT_MAX_VALID_DAYS). Nothing of the
 * request but its key reaches the certificate. The request (at most
 * 16 KiB of PEM) must carry an ECDSA P-256/P-384 key or an RSA key of
 * 2048 bits or more, and be signed with that key, the proof that its
 * sender holds it; any other is G_IO_ERROR_INVALID_DATA. @fingerprint
 * (as einsora_tls_certificate_fingerprint() gives) and @not_after_unix
 * (its notAfter, Unix seconds) may be NULL. */
gchar *einsora_tls_agent_certificate_sign(const char *dir, const char *csr_pem,
                                          const char *machine_id, gint64 valid_days,
                                          gchar **fingerprint, gint64 *not_after_unix,
                                          GError **error);

/* @dir's CA (made if missing) as the authority agents' client
 * certificates are checked against. */
GTlsDatabase *einsora_tls_identity_agent_authority(const char *dir, GError **error);
/* @dir's CA certificate (ca.pem), PEM, for an enrolled agent to keep. */
gchar *einsora_tls_identity_read_ca(const char *dir, GError **error);

G_END_DECLS
