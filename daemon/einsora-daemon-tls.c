#define G_LOG_DOMAIN "einsora-daemon"

#include "einsora-daemon-tls.h"

#include "einsora-http-edge.h"
#include "einsora-tls-identity.h"

#define IDENTITY_DIR "tls"

struct _EinsoraDaemonTls {
    gchar *cert_path;
    gchar *key_path;
    gchar *description;
    GTlsCertificate *certificate;
    gchar *fingerprint;
};

gboolean
einsora_tls_mode_parse(const char *text, EinsoraTlsMode *mode)
{
    static const struct {
        const char *name;
        EinsoraTlsMode mode;
    } modes[] = {
        {"auto", EINSORA_TLS_AUTO},
        {"on", EINSORA_TLS_ON},
        {"plain-behind-tls-proxy", EINSORA_TLS_PLAIN_BEHIND_TLS_PROXY},
    };

    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        if (g_strcmp0(text, modes[i].name) == 0) {
            *mode = modes[i].mode;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
einsora_address_is_loopback(const char *listen)
{
    g_autoptr(GInetSocketAddress) address = einsora_http_address_parse(listen, NULL);

    return address != NULL &&
           g_inet_address_get_is_loopback(g_inet_socket_address_get_address(address));
}

gboolean
einsora_daemon_tls_wanted(EinsoraTlsMode mode, const char *listen, const char *cert)
{
    return cert != NULL || mode == EINSORA_TLS_ON ||
           (mode == EINSORA_TLS_AUTO && !einsora_address_is_loopback(listen));
}

gchar *
einsora_daemon_tls_identity_path(const char *data_dir)
{
    return g_build_filename(data_dir, IDENTITY_DIR, EINSORA_TLS_CERT_FILE, NULL);
}

void
einsora_daemon_tls_free(EinsoraDaemonTls *self)
{
    g_free(self->cert_path);
    g_free(self->key_path);
    g_free(self->description);
    g_clear_object(&self->certificate);
    g_free(self->fingerprint);
    g_free(self);
}

/* The names the daemon's own certificate gives: a client checking the
 * name (one that trusts the CA rather than pinning) finds the one it
 * typed among them. */
static GStrv
identity_hosts(const char *listen)
{
    g_autoptr(GStrvBuilder) hosts = g_strv_builder_new();
    g_autoptr(GInetSocketAddress) address = einsora_http_address_parse(listen, NULL);
    GInetAddress *ip = address != NULL ? g_inet_socket_address_get_address(address) : NULL;

    const char *name = g_get_host_name();
    gboolean plain_name = *name != '\0';

    for (const char *c = name; *c != '\0'; c++)
        plain_name = plain_name && (g_ascii_isalnum(*c) || *c == '-' || *c == '.');
    g_strv_builder_add_many(hosts, "localhost", "127.0.0.1", "::1", NULL);
    if (plain_name && !g_str_equal(name, "localhost"))
        g_strv_builder_add(hosts, name);
    if (ip != NULL && !g_inet_address_get_is_any(ip) && !g_inet_address_get_is_loopback(ip)) {
        g_autofree gchar *text = g_inet_address_to_string(ip);
        g_strv_builder_add(hosts, text);
    }
    return g_strv_builder_end(hosts);
}

gboolean
einsora_daemon_tls_reload(EinsoraDaemonTls *self, GError **error)
{
    g_autoptr(GTlsCertificate) certificate =
        einsora_tls_identity_load(self->cert_path, self->key_path, error);

    if (certificate == NULL)
        return FALSE;
    g_set_object(&self->certificate, certificate);
    g_free(self->fingerprint);
    self->fingerprint = einsora_tls_certificate_fingerprint(certificate);
    return TRUE;
}

gboolean
einsora_daemon_tls_new(EinsoraTlsMode mode, const char *listen, const char *cert, const char *key,
                       const char *data_dir, EinsoraDaemonTls **tls, GError **error)
{
    g_autoptr(EinsoraDaemonTls) self = NULL;

    *tls = NULL;
    if ((cert == NULL) != (key == NULL)) {
        g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "EINSORA_TLS_CERT (--tls-cert) and EINSORA_TLS_KEY (--tls-key) go "
                            "together: give both or neither");
        return FALSE;
    }
    if (cert != NULL && mode == EINSORA_TLS_PLAIN_BEHIND_TLS_PROXY) {
        g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "EINSORA_TLS (--tls) is plain-behind-tls-proxy, yet a certificate is "
                            "given: choose one");
        return FALSE;
    }
    if (!einsora_daemon_tls_wanted(mode, listen, cert))
        return TRUE;
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            "TLS is needed here, and GLib has no TLS backend: install "
                            "glib-networking");
        return FALSE;
    }
    self = g_new0(EinsoraDaemonTls, 1);
    if (cert != NULL) {
        self->cert_path = g_strdup(cert);
        self->key_path = g_strdup(key);
        self->description = g_strdup_printf("%s", cert);
    } else {
        g_autofree gchar *dir = g_build_filename(data_dir, IDENTITY_DIR, NULL);
        g_auto(GStrv) hosts = identity_hosts(listen);

        if (!einsora_tls_identity_ensure(dir, (const char *const *)hosts, error))
            return FALSE;
        self->cert_path = g_build_filename(dir, EINSORA_TLS_CERT_FILE, NULL);
        self->key_path = g_build_filename(dir, EINSORA_TLS_KEY_FILE, NULL);
        self->description = g_strdup_printf("the daemon's own, in %s", dir);
    }
    if (!einsora_daemon_tls_reload(self, error))
        return FALSE;
    *tls = g_steal_pointer(&self);
    return TRUE;
}

GTlsCertificate *
einsora_daemon_tls_get_certificate(EinsoraDaemonTls *self)
{
    return self->certificate;
}

const char *
einsora_daemon_tls_get_fingerprint(EinsoraDaemonTls *self)
{
    return self->fingerprint;
}

const char *
einsora_daemon_tls_describe(EinsoraDaemonTls *self)
{
    return self->description;
}
