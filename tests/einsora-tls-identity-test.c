/* The daemon's own TLS identity (daemon/http/einsora-tls-identity.c):
 * made once with private files, kept after, a server certificate that
 * its CA signed for the names asked, and a real handshake with it
 * through GLib's TLS (glib-networking) over a socket pair. Agents'
 * enrolment: a request the agent makes, signed by the CA into a client
 * certificate checked with OpenSSL, and requests that are refused. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
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

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EVP_PKEY, EVP_PKEY_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509, X509_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509_REQ, X509_REQ_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509_STORE, X509_STORE_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(X509_STORE_CTX, X509_STORE_CTX_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(BIO, BIO_free)

#define MACHINE_ID "3f2c1a9e-5b7d-4e21-9c0a-6d8e2f4b1a77"
#define VALID_DAYS 90

static X509 *
parse_certificate(const char *pem)
{
    g_autoptr(BIO) bio = BIO_new_mem_buf(pem, -1);
    X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);

    g_assert_nonnull(certificate);
    return certificate;
}

static X509 *
read_ca(const char *dir)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *pem = einsora_tls_identity_read_ca(dir, &error);

    g_assert_no_error(error);
    g_assert_nonnull(pem);
    return parse_certificate(pem);
}

static gchar *
pem_of_request(X509_REQ *request)
{
    g_autoptr(BIO) bio = BIO_new(BIO_s_mem());
    char *data = NULL;
    long length;

    g_assert_cmpint(PEM_write_bio_X509_REQ(bio, request), ==, 1);
    length = BIO_get_mem_data(bio, &data);
    return g_strndup(data, (gsize)length);
}

static void
add_request_extension(STACK_OF(X509_EXTENSION) * extensions, int nid, const char *value)
{
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, NULL, nid, value);

    g_assert_nonnull(extension);
    sk_X509_EXTENSION_push(extensions, extension);
}

/* A request of OpenSSL's own for @key, named @common_name (NULL: no
 * name) and, with @claims, asking for what an agent must not get. */
static gchar *
request_for(EVP_PKEY *key, const char *common_name, gboolean claims)
{
    g_autoptr(X509_REQ) request = X509_REQ_new();
    X509_NAME *name = X509_REQ_get_subject_name(request);

    g_assert_cmpint(X509_REQ_set_version(request, 0), ==, 1);
    if (common_name != NULL)
        g_assert_cmpint(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                                   (const guchar *)common_name, -1, -1, 0),
                        ==, 1);
    if (claims) {
        STACK_OF(X509_EXTENSION) *extensions = sk_X509_EXTENSION_new_null();

        add_request_extension(extensions, NID_basic_constraints, "critical,CA:TRUE");
        add_request_extension(extensions, NID_ext_key_usage, "serverAuth,clientAuth");
        add_request_extension(extensions, NID_subject_alt_name, "DNS:another-machine");
        g_assert_cmpint(X509_REQ_add_extensions(request, extensions), ==, 1);
        sk_X509_EXTENSION_pop_free(extensions, X509_EXTENSION_free);
    }
    g_assert_cmpint(X509_REQ_set_pubkey(request, key), ==, 1);
    g_assert_cmpint(X509_REQ_sign(request, key, EVP_sha256()), >, 0);
    return pem_of_request(request);
}

static gchar *
common_name_of(X509 *certificate)
{
    char name[256];

    g_assert_cmpint(X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName,
                                              name, sizeof name),
                    >, 0);
    return g_strdup(name);
}

/* Whether @certificate chains to @ca for @purpose (X509_PURPOSE_…). */
static gboolean
chains_to(X509 *certificate, X509 *ca, int purpose)
{
    g_autoptr(X509_STORE) store = X509_STORE_new();
    g_autoptr(X509_STORE_CTX) context = X509_STORE_CTX_new();

    g_assert_cmpint(X509_STORE_add_cert(store, ca), ==, 1);
    g_assert_cmpint(X509_STORE_CTX_init(context, store, certificate, NULL), ==, 1);
    g_assert_cmpint(X509_STORE_CTX_set_purpose(context, purpose), ==, 1);
    return X509_verify_cert(context) == 1;
}

static gchar *
sign(const char *dir, const char *csr_pem, gchar **fingerprint, gint64 *not_after, GError **error)
{
    return einsora_tls_agent_certificate_sign(dir, csr_pem, MACHINE_ID, VALID_DAYS, fingerprint,
                                              not_after, error);
}

/* The agent's request, signed: named for the machine, by the CA,
 * for clients only, and pinned as any certificate is. */
static void
test_agent_enrolment(void)
{
    g_autofree gchar *root = einsora_test_dir_new();
    g_autofree gchar *dir = g_build_filename(root, "tls", NULL);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *key_pem = NULL;
    g_autofree gchar *csr_pem = NULL;
    g_autofree gchar *certificate_pem = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *common_name = NULL;
    g_autofree gchar *pinned = NULL;
    g_autoptr(BIO) key_bio = NULL;
    g_autoptr(EVP_PKEY) key = NULL;
    g_autoptr(X509) certificate = NULL;
    g_autoptr(X509) ca = NULL;
    g_autoptr(GTlsCertificate) tls_certificate = NULL;
    const ASN1_OCTET_STRING *ca_key_id;
    const ASN1_OCTET_STRING *issuer_key_id;
    gint64 not_after = 0;
    gint64 expected = g_get_real_time() / G_USEC_PER_SEC + (gint64)VALID_DAYS * 24 * 3600;

    g_assert_true(einsora_tls_agent_request_new(&key_pem, &csr_pem, &error));
    g_assert_no_error(error);
    g_assert_true(g_str_has_prefix(key_pem, "-----BEGIN PRIVATE KEY-----\n"));
    g_assert_true(g_str_has_prefix(csr_pem, "-----BEGIN CERTIFICATE REQUEST-----\n"));
    key_bio = BIO_new_mem_buf(key_pem, -1);
    key = PEM_read_bio_PrivateKey(key_bio, NULL, NULL, NULL);
    g_assert_nonnull(key);
    g_assert_true(EVP_PKEY_is_a(key, "EC"));
    g_assert_cmpint(EVP_PKEY_get_bits(key), ==, 256);

    /* The first signing makes the CA, private as the rest. */
    certificate_pem = sign(dir, csr_pem, &fingerprint, &not_after, &error);
    g_assert_no_error(error);
    g_assert_nonnull(certificate_pem);
    g_assert_cmpuint(mode_of(root, "tls"), ==, 0700);
    g_assert_cmpuint(mode_of(dir, EINSORA_TLS_CA_KEY_FILE), ==, 0600);

    certificate = parse_certificate(certificate_pem);
    ca = read_ca(dir);
    common_name = common_name_of(certificate);
    g_assert_cmpstr(common_name, ==, MACHINE_ID);
    g_assert_cmpint(X509_NAME_cmp(X509_get_issuer_name(certificate), X509_get_subject_name(ca)), ==,
                    0);
    g_assert_cmpint(X509_verify(certificate, X509_get0_pubkey(ca)), ==, 1);
    g_assert_cmpint(X509_check_private_key(certificate, key), ==, 1);
    g_assert_true(chains_to(certificate, ca, X509_PURPOSE_SSL_CLIENT));
    g_assert_false(chains_to(certificate, ca, X509_PURPOSE_SSL_SERVER));
    g_assert_cmpuint(X509_get_extension_flags(certificate) & EXFLAG_XKUSAGE, !=, 0);
    g_assert_cmpuint(X509_get_extended_key_usage(certificate) & XKU_SSL_CLIENT, !=, 0);
    g_assert_cmpuint(X509_get_extended_key_usage(certificate) & XKU_SSL_SERVER, ==, 0);
    g_assert_cmpint(X509_check_ca(certificate), ==, 0);
    g_assert_cmpuint(X509_get_key_usage(certificate) & KU_DIGITAL_SIGNATURE, !=, 0);
    g_assert_cmpuint(X509_get_key_usage(certificate) & KU_KEY_CERT_SIGN, ==, 0);
    g_assert_nonnull(X509_get0_subject_key_id(certificate));
    ca_key_id = X509_get0_subject_key_id(ca);
    issuer_key_id = X509_get0_authority_key_id(certificate);
    g_assert_nonnull(issuer_key_id);
    g_assert_cmpint(ASN1_OCTET_STRING_cmp(ca_key_id, issuer_key_id), ==, 0);
    g_assert_cmpint(ASN1_INTEGER_get(X509_get0_serialNumber(certificate)) != 0 &&
                        X509_get0_serialNumber(certificate)->type == V_ASN1_INTEGER,
                    ==, TRUE);
    g_assert_cmpint(X509_cmp_current_time(X509_get0_notBefore(certificate)), <, 0);

    tls_certificate = g_tls_certificate_new_from_pem(certificate_pem, -1, &error);
    g_assert_no_error(error);
    pinned = einsora_tls_certificate_fingerprint(tls_certificate);
    g_assert_cmpstr(fingerprint, ==, pinned);
    g_assert_cmpint(not_after, >=, expected - 60);
    g_assert_cmpint(not_after, <=, expected + 60);

    /* Another request, the same CA: the identity isn't made again. */
    {
        g_autofree gchar *other_key = NULL;
        g_autofree gchar *other_csr = NULL;
        g_autofree gchar *other_pem = NULL;
        g_autoptr(X509) other = NULL;
        g_autoptr(X509) ca_again = NULL;

        g_assert_true(einsora_tls_agent_request_new(&other_key, &other_csr, &error));
        other_pem = sign(dir, other_csr, NULL, NULL, &error);
        g_assert_no_error(error);
        other = parse_certificate(other_pem);
        ca_again = read_ca(dir);
        g_assert_cmpint(X509_cmp(ca, ca_again), ==, 0);
        g_assert_cmpint(X509_verify(other, X509_get0_pubkey(ca)), ==, 1);
        g_assert_cmpint(
            ASN1_INTEGER_cmp(X509_get0_serialNumber(certificate), X509_get0_serialNumber(other)),
            !=, 0);
    }
    einsora_test_dir_remove(root);
}

/* A CA made by an enrolment signs the server certificate made after,
 * and the server certificate keeps serverAuth. */
static void
test_enrolment_ca_kept(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *key_pem = NULL;
    g_autofree gchar *csr_pem = NULL;
    g_autofree gchar *agent_pem = NULL;
    g_autofree gchar *cert_path = g_build_filename(dir, EINSORA_TLS_CERT_FILE, NULL);
    g_autofree gchar *server_pem = NULL;
    g_autoptr(X509) agent = NULL;
    g_autoptr(X509) server = NULL;
    g_autoptr(X509) ca = NULL;

    g_assert_true(einsora_tls_agent_request_new(&key_pem, &csr_pem, &error));
    agent_pem = sign(dir, csr_pem, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_false(g_file_test(cert_path, G_FILE_TEST_EXISTS));
    ca = read_ca(dir);

    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    g_assert_no_error(error);
    g_assert_true(g_file_get_contents(cert_path, &server_pem, NULL, &error));
    server = parse_certificate(server_pem);
    agent = parse_certificate(agent_pem);
    g_assert_true(chains_to(server, ca, X509_PURPOSE_SSL_SERVER));
    g_assert_false(chains_to(server, ca, X509_PURPOSE_SSL_CLIENT));
    g_assert_true(chains_to(agent, ca, X509_PURPOSE_SSL_CLIENT));
    einsora_test_dir_remove(dir);
}

static void
assert_refused(const char *dir, const char *csr_pem, const char *why)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *fingerprint = NULL;
    gint64 not_after = -1;
    g_autofree gchar *pem = sign(dir, csr_pem, &fingerprint, &not_after, &error);

    g_assert_null(pem);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    g_assert_nonnull(strstr(error->message, why));
    g_assert_null(fingerprint);
    g_assert_cmpint(not_after, ==, -1);
}

/* A request whose signature was tampered with: its sender may not hold
 * the key. */
static void
test_refuses_tampered(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *key_pem = NULL;
    g_autofree gchar *csr_pem = NULL;
    g_autofree gchar *tampered_pem = NULL;
    g_autoptr(BIO) bio = NULL;
    g_autoptr(X509_REQ) request = NULL;
    g_autoptr(X509_REQ) tampered = NULL;
    guint8 *der = NULL;
    const guint8 *p;
    int length;

    g_assert_true(einsora_tls_agent_request_new(&key_pem, &csr_pem, &error));
    bio = BIO_new_mem_buf(csr_pem, -1);
    request = PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL);
    g_assert_nonnull(request);
    length = i2d_X509_REQ(request, &der);
    g_assert_cmpint(length, >, 0);
    /* The DER ends with the signature's BIT STRING: its last byte is
     * the last of the signature's s. */
    der[length - 1] ^= 0x01;
    p = der;
    tampered = d2i_X509_REQ(NULL, &p, length);
    OPENSSL_free(der);
    g_assert_nonnull(tampered);
    tampered_pem = pem_of_request(tampered);
    g_assert_cmpstr(tampered_pem, !=, csr_pem);
    assert_refused(dir, tampered_pem, "its signature doesn't verify");
    /* Refused before anything is made. */
    g_assert_null(einsora_tls_identity_read_ca(dir, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    einsora_test_dir_remove(dir);
}

/* Not a request, or one over 16 KiB even if it would parse. */
static void
test_refuses_not_a_request(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *key_pem = NULL;
    g_autofree gchar *csr_pem = NULL;
    g_autoptr(GString) large = NULL;
    g_autofree gchar *certificate_pem = NULL;
    g_autofree gchar *cert_path = g_build_filename(dir, EINSORA_TLS_CERT_FILE, NULL);

    assert_refused(dir, "", "not a PEM certificate request");
    assert_refused(dir, "garbage\x01\x02 not PEM at all", "not a PEM certificate request");
    assert_refused(dir,
                   "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
                   "not a PEM certificate request");
    /* A certificate is not a request. */
    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    g_assert_true(g_file_get_contents(cert_path, &certificate_pem, NULL, &error));
    assert_refused(dir, certificate_pem, "not a PEM certificate request");

    g_assert_true(einsora_tls_agent_request_new(&key_pem, &csr_pem, &error));
    large = g_string_new(csr_pem);
    while (large->len < 20 * 1024)
        g_string_append_c(large, '\n');
    assert_refused(dir, large->str, "over 16 KiB");
    einsora_test_dir_remove(dir);
}

/* Keys too weak or of kinds TLS clients don't hold: refused; P-384 and
 * RSA-2048 signed. */
static void
test_refuses_weak_keys(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    const char *const refused[] = {"RSA-1024", "P-521", "Ed25519"};
    const char *const accepted[] = {"P-384", "RSA-2048"};
    const char *why = "its key is not ECDSA P-256/P-384 or RSA of at least 2048 bits";

    for (guint i = 0; i < G_N_ELEMENTS(refused) + G_N_ELEMENTS(accepted); i++) {
        gboolean accept = i >= G_N_ELEMENTS(refused);
        const char *kind = accept ? accepted[i - G_N_ELEMENTS(refused)] : refused[i];
        g_autoptr(EVP_PKEY) key = NULL;
        g_autofree gchar *csr_pem = NULL;

        if (g_str_equal(kind, "RSA-1024"))
            key = EVP_RSA_gen(1024);
        else if (g_str_equal(kind, "RSA-2048"))
            key = EVP_RSA_gen(2048);
        else if (g_str_equal(kind, "Ed25519"))
            key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
        else
            key = EVP_EC_gen(kind);
        g_assert_nonnull(key);
        /* Ed25519 signs with no separate digest. */
        if (g_str_equal(kind, "Ed25519")) {
            g_autoptr(X509_REQ) request = X509_REQ_new();

            g_assert_cmpint(X509_REQ_set_pubkey(request, key), ==, 1);
            g_assert_cmpint(X509_REQ_sign(request, key, NULL), >, 0);
            csr_pem = pem_of_request(request);
        } else {
            csr_pem = request_for(key, NULL, FALSE);
        }
        if (accept) {
            g_autoptr(GError) error = NULL;
            g_autofree gchar *pem = sign(dir, csr_pem, NULL, NULL, &error);
            g_autoptr(X509) certificate = NULL;

            g_test_message("%s: signed", kind);
            g_assert_no_error(error);
            certificate = parse_certificate(pem);
            g_assert_cmpint(X509_check_private_key(certificate, key), ==, 1);
        } else {
            g_test_message("%s: refused", kind);
            assert_refused(dir, csr_pem, why);
        }
    }
    einsora_test_dir_remove(dir);
}

/* The request claims another machine's name, a CA's powers and a
 * server's use: the certificate has none of it. */
static void
test_request_subject_ignored(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(EVP_PKEY) key = EVP_EC_gen("P-256");
    g_autofree gchar *csr_pem = request_for(key, "another-machine", TRUE);
    g_autofree gchar *pem = sign(dir, csr_pem, NULL, NULL, &error);
    g_autoptr(X509) certificate = NULL;
    g_autoptr(X509) ca = NULL;
    g_autofree gchar *common_name = NULL;
    g_autofree gchar *subject = NULL;

    g_assert_no_error(error);
    certificate = parse_certificate(pem);
    ca = read_ca(dir);
    common_name = common_name_of(certificate);
    g_assert_cmpstr(common_name, ==, MACHINE_ID);
    subject = X509_NAME_oneline(X509_get_subject_name(certificate), NULL, 0);
    g_assert_cmpstr(subject, ==, "/O=Einsora/CN=" MACHINE_ID);
    g_assert_null(strstr(pem, "another-machine"));
    g_assert_cmpint(X509_get_ext_by_NID(certificate, NID_subject_alt_name, -1), <, 0);
    g_assert_cmpint(X509_check_ca(certificate), ==, 0);
    g_assert_cmpuint(X509_get_extended_key_usage(certificate) & XKU_SSL_SERVER, ==, 0);
    g_assert_false(chains_to(certificate, ca, X509_PURPOSE_SSL_SERVER));
    g_assert_true(chains_to(certificate, ca, X509_PURPOSE_SSL_CLIENT));
    OPENSSL_free(g_steal_pointer(&subject));
    einsora_test_dir_remove(dir);
}

/* The machine ID is the certificate's name: one that can't be is an
 * argument error, and a CA is read only where there is one. */
static void
test_machine_id_and_missing_ca(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *key_pem = NULL;
    g_autofree gchar *csr_pem = NULL;
    g_autofree gchar *long_id = g_strnfill(65, 'a');
    g_autofree gchar *pem = NULL;

    g_assert_true(einsora_tls_agent_request_new(&key_pem, &csr_pem, &error));
    g_assert_null(
        einsora_tls_agent_certificate_sign(dir, csr_pem, "", VALID_DAYS, NULL, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error(&error);
    g_assert_null(
        einsora_tls_agent_certificate_sign(dir, csr_pem, long_id, VALID_DAYS, NULL, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error(&error);
    long_id[64] = '\0';
    pem = einsora_tls_agent_certificate_sign(dir, csr_pem, long_id, VALID_DAYS, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(pem);
    einsora_test_dir_remove(dir);

    g_assert_null(einsora_tls_identity_read_ca(dir, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tls-identity/made-once-and-private", test_made_once);
    g_test_add_func("/tls-identity/names-and-issuer", test_names_and_issuer);
    g_test_add_func("/tls-identity/handshake-ca-or-pin", test_handshake);
    g_test_add_func("/tls-identity/fingerprint-matches", test_fingerprint_matches);
    g_test_add_func("/tls-identity/agent/request-signed-for-client-auth", test_agent_enrolment);
    g_test_add_func("/tls-identity/agent/enrolment-ca-signs-later-server", test_enrolment_ca_kept);
    g_test_add_func("/tls-identity/agent/refuses-tampered-signature", test_refuses_tampered);
    g_test_add_func("/tls-identity/agent/refuses-not-a-request", test_refuses_not_a_request);
    g_test_add_func("/tls-identity/agent/refuses-weak-keys", test_refuses_weak_keys);
    g_test_add_func("/tls-identity/agent/request-subject-ignored", test_request_subject_ignored);
    g_test_add_func("/tls-identity/agent/machine-id-and-missing-ca",
                    test_machine_id_and_missing_ca);
    return g_test_run();
}
