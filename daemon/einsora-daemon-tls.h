/* The API listener's TLS (docs/adr/0046): the operator's certificate and
 * key when given, else the daemon's own identity in its data directory
 * (docs/adr/0045), made on first need; reloaded from its files on SIGHUP. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef enum {
    /* TLS when the address isn't loopback. */
    EINSORA_TLS_AUTO,
    /* TLS whatever the address. */
    EINSORA_TLS_ON,
    /* Plain HTTP whatever the address: a proxy in front ends TLS. */
    EINSORA_TLS_PLAIN_BEHIND_TLS_PROXY,
} EinsoraTlsMode;

/* "auto", "on", "plain-behind-tls-proxy". */
gboolean einsora_tls_mode_parse(const char *text, EinsoraTlsMode *mode);

typedef struct _EinsoraDaemonTls EinsoraDaemonTls;

/* Whether @listen gets TLS in @mode, @cert given or not. */
gboolean einsora_daemon_tls_wanted(EinsoraTlsMode mode, const char *listen, const char *cert);
/* Where the daemon's own certificate is, made or not. */
gchar *einsora_daemon_tls_identity_path(const char *data_dir);

/* Decides whether @listen gets TLS: *@tls is NULL for plain HTTP. @cert
 * and @key (both or neither) are the operator's PEM files; without them
 * the identity is @data_dir/tls, made when missing, naming localhost,
 * the loopback addresses, this host's name and @listen's address. */
gboolean einsora_daemon_tls_new(EinsoraTlsMode mode, const char *listen, const char *cert,
                                const char *key, const char *data_dir, EinsoraDaemonTls **tls,
                                GError **error);
void einsora_daemon_tls_free(EinsoraDaemonTls *tls);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraDaemonTls, einsora_daemon_tls_free)

GTlsCertificate *einsora_daemon_tls_get_certificate(EinsoraDaemonTls *tls);
const char *einsora_daemon_tls_get_fingerprint(EinsoraDaemonTls *tls);
/* "the daemon's own, in DIR" or "CERT's". */
const char *einsora_daemon_tls_describe(EinsoraDaemonTls *tls);
/* Reads the files again; on failure the certificate in use stays. */
gboolean einsora_daemon_tls_reload(EinsoraDaemonTls *tls, GError **error);

/* Whether @listen (an address einsora_http_address_parse() takes) is a
 * loopback one. */
gboolean einsora_address_is_loopback(const char *listen);

G_END_DECLS
