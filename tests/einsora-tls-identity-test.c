/* The daemon's own TLS identity (daemon/http/einsora-tls-identity.c):
 * made once with private files, kept after, a server certificate that
 * its CA signed for the names asked, and a real handshake with it
 * through GLib's TLS (glib-networking) over a socket pair. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "einsora-test-dir.h"
#include "einsora-tls-identity.h"

static const char *const hosts[] = {"localhost", "127.0.0.1", "lab.example", NULL};

static guint
mode_of(const char *dir, const char *name)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);
    struct stat st;

    g_assert_cmpint(g_stat(path, &st), ==, 0);
    return st.st_mode & 0777;
}

static GTlsCertificate *
load(const char *dir)
{
    g_autofree gchar *cert = g_build_filename(dir, EINSORA_TLS_CERT_FILE, NULL);
    g_autofree gchar *key = g_build_filename(dir, EINSORA_TLS_KEY_FILE, NULL);
    g_autoptr(GError) error = NULL;
    GTlsCertificate *certificate = einsora_tls_identity_load(cert, key, &error);

    g_assert_no_error(error);
    g_assert_nonnull(certificate);
    return certificate;
}

static GTlsCertificate *
load_ca(const char *dir)
{
    g_autofree gchar *path = g_build_filename(dir, EINSORA_TLS_CA_FILE, NULL);
    g_autoptr(GError) error = NULL;
    GTlsCertificate *ca = g_tls_certificate_new_from_file(path, &error);

    g_assert_no_error(error);
    return ca;
}

/* Made once, private, and kept: the second call changes nothing. */
static void
test_made_once(void)
{
    g_autofree gchar *root = einsora_test_dir_new();
    g_autofree gchar *dir = g_build_filename(root, "tls", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(GTlsCertificate) first = NULL;
    g_autoptr(GTlsCertificate) again = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *fingerprint_again = NULL;

    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(mode_of(root, "tls"), ==, 0700);
    g_assert_cmpuint(mode_of(dir, EINSORA_TLS_KEY_FILE), ==, 0600);
    g_assert_cmpuint(mode_of(dir, EINSORA_TLS_CA_KEY_FILE), ==, 0600);
    g_assert_cmpuint(mode_of(dir, EINSORA_TLS_CERT_FILE), ==, 0644);
    first = load(dir);
    fingerprint = einsora_tls_certificate_fingerprint(first);
    g_assert_true(g_str_has_prefix(fingerprint, "SHA256:"));
    g_assert_cmpuint(strlen(fingerprint), ==, 7 + 64);
    /* The chain: the server certificate, then its CA. */
    g_assert_nonnull(g_tls_certificate_get_issuer(first));

    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    again = load(dir);
    fingerprint_again = einsora_tls_certificate_fingerprint(again);
    g_assert_cmpstr(fingerprint, ==, fingerprint_again);
    einsora_test_dir_remove(root);
}

/* Signed by its own CA, for the names asked and no others. */
static void
test_names_and_issuer(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(GTlsCertificate) certificate = NULL;
    g_autoptr(GTlsCertificate) ca = NULL;
    g_autoptr(GSocketConnectable) localhost = g_network_address_new("localhost", 443);
    g_autoptr(GSocketConnectable) lab = g_network_address_new("lab.example", 443);
    g_autoptr(GSocketConnectable) loopback = g_network_address_new("127.0.0.1", 443);
    g_autoptr(GSocketConnectable) other = g_network_address_new("other.example", 443);

    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    certificate = load(dir);
    ca = load_ca(dir);
    g_assert_cmpint(g_tls_certificate_verify(certificate, localhost, ca), ==, 0);
    g_assert_cmpint(g_tls_certificate_verify(certificate, lab, ca), ==, 0);
    g_assert_cmpint(g_tls_certificate_verify(certificate, loopback, ca), ==, 0);
    g_assert_cmpint(
        g_tls_certificate_verify(certificate, other, ca) & G_TLS_CERTIFICATE_BAD_IDENTITY, !=, 0);
    /* Another daemon's CA didn't sign it. */
    {
        g_autofree gchar *other_dir = einsora_test_dir_new();
        g_autoptr(GTlsCertificate) other_ca = NULL;

        g_assert_true(einsora_tls_identity_ensure(other_dir, hosts, &error));
        other_ca = load_ca(other_dir);
        g_assert_cmpint(g_tls_certificate_verify(certificate, localhost, other_ca) &
                            G_TLS_CERTIFICATE_UNKNOWN_CA,
                        !=, 0);
        einsora_test_dir_remove(other_dir);
    }
    einsora_test_dir_remove(dir);
}

typedef struct {
    GMainLoop *loop;
    GSocket *sockets[2];
    guint pending;
    GError *server_error;
    GError *client_error;
} Handshakes;

static void
on_handshake(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Handshakes *handshakes = user_data;
    GError **error =
        G_IS_TLS_SERVER_CONNECTION(source) ? &handshakes->server_error : &handshakes->client_error;

    /* A side that gives up hangs up, as a real peer would, so that the
     * other one's handshake ends too. */
    if (!g_tls_connection_handshake_finish(G_TLS_CONNECTION(source), result, error))
        for (guint i = 0; i < 2; i++)
            g_socket_shutdown(handshakes->sockets[i], TRUE, TRUE, NULL);
    if (--handshakes->pending == 0)
        g_main_loop_quit(handshakes->loop);
}

/* The client accepts only the CA, or only the pinned fingerprint. */
static gboolean
on_accept_pinned(GTlsConnection *connection, GTlsCertificate *peer, GTlsCertificateFlags errors,
                 gpointer user_data)
{
    g_autofree gchar *seen = einsora_tls_certificate_fingerprint(peer);

    return einsora_tls_fingerprint_matches(user_data, seen);
}

/* A handshake between a server with the identity and a client that
 * either trusts its CA or pins @pin (NULL: trusts the CA). */
static void
handshake(const char *dir, const char *pin, GError **server_error, GError **client_error)
{
    g_autoptr(GTlsCertificate) certificate = load(dir);
    g_autofree gchar *ca_path = g_build_filename(dir, EINSORA_TLS_CA_FILE, NULL);
    g_autoptr(GTlsDatabase) database = NULL;
    g_autoptr(GSocket) a = NULL;
    g_autoptr(GSocket) b = NULL;
    g_autoptr(GSocketConnection) server_base = NULL;
    g_autoptr(GSocketConnection) client_base = NULL;
    g_autoptr(GIOStream) server = NULL;
    g_autoptr(GIOStream) client = NULL;
    g_autoptr(GSocketConnectable) name = g_network_address_new("localhost", 443);
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    Handshakes handshakes = {loop, {NULL, NULL}, 2, NULL, NULL};
    g_autoptr(GError) error = NULL;
    int fds[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), ==, 0);
    a = g_socket_new_from_fd(fds[0], &error);
    g_assert_no_error(error);
    b = g_socket_new_from_fd(fds[1], &error);
    g_assert_no_error(error);
    handshakes.sockets[0] = a;
    handshakes.sockets[1] = b;
    server_base = g_socket_connection_factory_create_connection(a);
    client_base = g_socket_connection_factory_create_connection(b);
    server = g_tls_server_connection_new(G_IO_STREAM(server_base), certificate, &error);
    g_assert_no_error(error);
    client = g_tls_client_connection_new(G_IO_STREAM(client_base), name, &error);
    g_assert_no_error(error);
    if (pin == NULL) {
        database = g_tls_file_database_new(ca_path, &error);
        g_assert_no_error(error);
        g_tls_connection_set_database(G_TLS_CONNECTION(client), database);
    } else {
        g_tls_connection_set_database(G_TLS_CONNECTION(client), NULL);
        g_signal_connect(client, "accept-certificate", G_CALLBACK(on_accept_pinned), (gpointer)pin);
    }
    g_tls_connection_handshake_async(G_TLS_CONNECTION(server), G_PRIORITY_DEFAULT, NULL,
                                     on_handshake, &handshakes);
    g_tls_connection_handshake_async(G_TLS_CONNECTION(client), G_PRIORITY_DEFAULT, NULL,
                                     on_handshake, &handshakes);
    g_main_loop_run(loop);
    *server_error = handshakes.server_error;
    *client_error = handshakes.client_error;
}

static void
test_handshake(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *other_dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(GTlsCertificate) certificate = NULL;
    g_autoptr(GTlsCertificate) other = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *other_fingerprint = NULL;

    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here (glib-networking)");
        return;
    }
    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    g_assert_true(einsora_tls_identity_ensure(other_dir, hosts, &error));
    certificate = load(dir);
    other = load(other_dir);
    fingerprint = einsora_tls_certificate_fingerprint(certificate);
    other_fingerprint = einsora_tls_certificate_fingerprint(other);
    g_assert_cmpstr(fingerprint, !=, other_fingerprint);

    {
        GError *server_error = NULL, *client_error = NULL;
        handshake(dir, NULL, &server_error, &client_error);
        g_assert_no_error(server_error);
        g_assert_no_error(client_error);
    }
    {
        GError *server_error = NULL, *client_error = NULL;
        handshake(dir, fingerprint, &server_error, &client_error);
        g_assert_no_error(client_error);
        g_assert_no_error(server_error);
        g_clear_error(&server_error);
    }
    {
        /* Another daemon's certificate under the same name: refused. */
        GError *server_error = NULL, *client_error = NULL;
        handshake(other_dir, fingerprint, &server_error, &client_error);
        g_assert_error(client_error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE);
        g_clear_error(&client_error);
        g_clear_error(&server_error);
    }
    einsora_test_dir_remove(dir);
    einsora_test_dir_remove(other_dir);
}

static void
test_fingerprint_matches(void)
{
    const char *fingerprint =
        "SHA256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    g_assert_true(einsora_tls_fingerprint_matches(fingerprint, fingerprint));
    g_assert_true(einsora_tls_fingerprint_matches(
        "9F:86:D0:81:88:4C:7D:65:9A:2F:EA:A0:C5:5A:D0:15:A3:BF:4F:1B:2B:0B:82:2C:D1:5D:6C:15:B0:"
        "F0:0A:08",
        fingerprint));
    g_assert_true(einsora_tls_fingerprint_matches(
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", fingerprint));
    /* One digit off, too short, empty, NULL. */
    g_assert_false(einsora_tls_fingerprint_matches(
        "SHA256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a09", fingerprint));
    g_assert_false(einsora_tls_fingerprint_matches("SHA256:9f86d081", fingerprint));
    g_assert_false(einsora_tls_fingerprint_matches("", fingerprint));
    g_assert_false(einsora_tls_fingerprint_matches(NULL, fingerprint));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tls-identity/made-once-and-private", test_made_once);
    g_test_add_func("/tls-identity/names-and-issuer", test_names_and_issuer);
    g_test_add_func("/tls-identity/handshake-ca-or-pin", test_handshake);
    g_test_add_func("/tls-identity/fingerprint-matches", test_fingerprint_matches);
    return g_test_run();
}
