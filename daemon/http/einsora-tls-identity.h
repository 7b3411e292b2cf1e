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
 * already there is kept as it is, whatever @hosts says. */
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

G_END_DECLS
