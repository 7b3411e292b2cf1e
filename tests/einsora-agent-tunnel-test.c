/* The agent's side of its tunnels (daemon/einsora-agent-tunnel.c,
 * docs/adr/0059), against a server played here over real TLS (a thread
 * with blocking GIO, presenting a certificate the agent pins and asking
 * for the agent's own) and a workload that is a real HTTP server on a
 * Unix socket (libsoup, on the main loop). The server's request carries
 * a forged credential; the workload must get only its own token, and
 * the server must never see that token in the answer. A request for a
 * workload that doesn't run there is closed unanswered. Streams open
 * when the server asks, and while they are used every taken one is
 * replaced. */
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-access-source.h"
#include "einsora-agent-tunnel.h"
#include "einsora-test-dir.h"
#include "einsora-tls-identity.h"

#define WORKLOAD "01890a5d-ac96-774b-bcce-b302099a8057"
#define OTHER "01890a5d-ac96-774b-bcce-b302099a8058"
#define TOKEN "5f0c7a3e9d1b4c2a8e6f0d9c7b5a3e1f2d4c6b8a0e9f7d5c"
#define ATTEMPT 2

/* The access source: one workload, ready, with its socket and token. */
#define TEST_TYPE_SOURCE (test_source_get_type())
G_DECLARE_FINAL_TYPE(TestSource, test_source, TEST, SOURCE, GObject)

struct _TestSource {
    GObject parent_instance;
    gchar *socket_path;
};

static void test_source_iface_init(EinsoraAccessSourceInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(TestSource, test_source, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_ACCESS_SOURCE,
                                                    test_source_iface_init))

static void
test_source_finalize(GObject *object)
{
    g_free(TEST_SOURCE(object)->socket_path);
    G_OBJECT_CLASS(test_source_parent_class)->finalize(object);
}

static void
test_source_class_init(TestSourceClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = test_source_finalize;
}

static void
test_source_init(TestSource *self)
{
}

static gboolean
test_source_lookup(EinsoraAccessSource *source, const char *workload_id, gint64 *attempt,
                   gchar **socket_path, gchar **token)
{
    if (g_strcmp0(workload_id, WORKLOAD) != 0)
        return FALSE;
    *attempt = ATTEMPT;
    *socket_path = g_strdup(TEST_SOURCE(source)->socket_path);
    *token = g_strdup(TOKEN);
    return TRUE;
}

static void
test_source_iface_init(EinsoraAccessSourceInterface *iface)
{
    iface->lookup = test_source_lookup;
}

/* The workload: says what credential it got, and its token, as Jupyter's
 * pages do. */
static gchar *workload_saw; /* its Authorization headers, joined */

static void
on_workload_request(SoupServer *server, SoupServerMessage *message, const char *path,
                    GHashTable *query, gpointer user_data)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(message);
    g_autofree gchar *body = NULL;
    GString *seen = g_string_new(NULL);
    SoupMessageHeadersIter iter;
    const char *name, *value;

    soup_message_headers_iter_init(&iter, headers);
    while (soup_message_headers_iter_next(&iter, &name, &value)) {
        if (g_ascii_strcasecmp(name, "Authorization") == 0)
            g_string_append_printf(seen, "[%s]", value);
    }
    g_free(workload_saw);
    workload_saw = g_string_free(seen, FALSE);
    {
        g_autoptr(GBytes) sent =
            soup_message_body_flatten(soup_server_message_get_request_body(message));
        body = g_strdup_printf("path=%s body=%.*s token=%s end", path, (int)g_bytes_get_size(sent),
                               (const char *)g_bytes_get_data(sent, NULL), TOKEN);
    }
    soup_server_message_set_status(message, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(message, "text/html", SOUP_MEMORY_COPY, body, strlen(body));
}

/* The server, in a thread of its own. Its reads have a deadline: a
 * stream stuck in the relay fails the test instead of hanging it. */
typedef struct {
    GSocketListener *listener;
    GTlsCertificate *certificate;
    gchar *answer;      /* to the first request, as the server got it */
    gchar *unknown;     /* what came back for a workload not there */
    gboolean peer_cert; /* the agent presented its certificate */
    gboolean replaced;  /* a third stream came after the two taken */
    gchar *failure;
    gboolean done;
} Server;

static gboolean
accept_any(GTlsConnection *connection, GTlsCertificate *peer, GTlsCertificateFlags errors,
           gpointer user_data)
{
    return TRUE;
}

/* A stream: accepted, TLS, the upgrade answered 101. */
static GIOStream *
accept_stream(Server *server, GError **error)
{
    g_autoptr(GSocketConnection) tcp =
        g_socket_listener_accept(server->listener, NULL, NULL, error);
    g_autoptr(GIOStream) tls = NULL;
    g_autoptr(GString) head = g_string_new(NULL);
    const char *switched = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
                           "einsora-tunnel/1\r\nConnection: Upgrade\r\n\r\n";

    if (tcp == NULL)
        return NULL;
    g_socket_set_timeout(g_socket_connection_get_socket(tcp), 10);
    tls = g_tls_server_connection_new(G_IO_STREAM(tcp), server->certificate, error);
    if (tls == NULL)
        return NULL;
    g_object_set(tls, "authentication-mode", G_TLS_AUTHENTICATION_REQUESTED, NULL);
    g_signal_connect(tls, "accept-certificate", G_CALLBACK(accept_any), NULL);
    if (!g_tls_connection_handshake(G_TLS_CONNECTION(tls), NULL, error))
        return NULL;
    server->peer_cert = g_tls_connection_get_peer_certificate(G_TLS_CONNECTION(tls)) != NULL;
    while (strstr(head->str, "\r\n\r\n") == NULL) {
        char byte;
        if (g_input_stream_read(g_io_stream_get_input_stream(tls), &byte, 1, NULL, error) != 1)
            return NULL;
        g_string_append_c(head, byte);
    }
    if (!g_str_has_prefix(head->str, "GET /agent/v1/tunnel HTTP/1.1\r\n") ||
        strstr(head->str, "\r\nUpgrade: einsora-tunnel/1\r\n") == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "not a tunnel's upgrade: %s", head->str);
        return NULL;
    }
    if (!g_output_stream_write_all(g_io_stream_get_output_stream(tls), switched, strlen(switched),
                                   NULL, NULL, error))
        return NULL;
    return g_steal_pointer(&tls);
}

/* Sends @request down @stream and reads what comes back to its end. */
static gchar *
exchange(GIOStream *stream, const char *request, GError **error)
{
    g_autoptr(GString) got = g_string_new(NULL);
    char buffer[4096];
    gssize n;

    if (!g_output_stream_write_all(g_io_stream_get_output_stream(stream), request, strlen(request),
                                   NULL, NULL, error))
        return NULL;
    while ((n = g_input_stream_read(g_io_stream_get_input_stream(stream), buffer, sizeof buffer,
                                    NULL, NULL)) > 0)
        g_string_append_len(got, buffer, n);
    return g_strdup(got->str);
}

static gpointer
serve(gpointer user_data)
{
    Server *server = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GIOStream) first = NULL;
    g_autoptr(GIOStream) second = NULL;
    g_autoptr(GIOStream) third = NULL;

    first = accept_stream(server, &error);
    if (first != NULL)
        server->answer =
            exchange(first,
                     "{\"workload_id\":\"" WORKLOAD "\",\"attempt\":2,\"scheme\":\"token\","
                     "\"more\":0}\nPOST /tree HTTP/1.1\r\nHost: localhost\r\n"
                     "Authorization: token forged\r\nConnection: close\r\n"
                     "Content-Length: 5\r\n\r\nhello",
                     &error);
    if (error == NULL)
        second = accept_stream(server, &error);
    if (second != NULL)
        server->unknown = exchange(second,
                                   "{\"workload_id\":\"" OTHER "\",\"attempt\":1,\"scheme\":"
                                   "\"token\",\"more\":0}\nGET / HTTP/1.1\r\n\r\n",
                                   &error);
    if (error == NULL)
        third = accept_stream(server, &error);
    server->replaced = third != NULL;
    if (error != NULL)
        server->failure = g_strdup(error->message);
    g_atomic_int_set(&server->done, TRUE);
    return NULL;
}

static GTlsCertificate *
agent_certificate(const char *dir)
{
    g_autofree gchar *key_pem = NULL;
    g_autofree gchar *csr_pem = NULL;
    g_autofree gchar *cert_pem = NULL;
    g_autofree gchar *cert_path = g_build_filename(dir, "agent.pem", NULL);
    g_autofree gchar *key_path = g_build_filename(dir, "agent-key.pem", NULL);
    g_autoptr(GError) error = NULL;
    GTlsCertificate *certificate;

    g_assert_true(einsora_tls_agent_request_new(&key_pem, &csr_pem, &error));
    cert_pem = einsora_tls_agent_certificate_sign(dir, csr_pem, "m1", 30, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(g_file_set_contents(cert_path, cert_pem, -1, &error));
    g_assert_true(g_file_set_contents(key_path, key_pem, -1, &error));
    certificate = einsora_tls_identity_load(cert_path, key_path, &error);
    g_assert_no_error(error);
    return certificate;
}

static void
test_request_through_the_agent(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    const char *const hosts[] = {"127.0.0.1", NULL};
    g_autofree gchar *cert_path = g_build_filename(dir, "server.pem", NULL);
    g_autofree gchar *key_path = g_build_filename(dir, "server-key.pem", NULL);
    g_autofree gchar *socket_path = g_build_filename(dir, "workload.sock", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(GTlsCertificate) client_certificate = NULL;
    g_autoptr(SoupServer) workload = soup_server_new(NULL, NULL);
    g_autoptr(GSocketAddress) workload_address = g_unix_socket_address_new(socket_path);
    g_autoptr(GSocketAddress) loopback = NULL;
    g_autoptr(GSocketAddress) bound = NULL;
    g_autoptr(TestSource) source = g_object_new(TEST_TYPE_SOURCE, NULL);
    g_autoptr(EinsoraAgentTunnel) tunnel = NULL;
    g_autoptr(GThread) thread = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *url = NULL;
    g_autofree gchar *mask = g_strnfill(strlen(TOKEN), 'x');
    g_autofree gchar *expected = NULL;
    Server server = {0};
    gint64 deadline;

    g_assert_true(einsora_tls_identity_ensure(dir, hosts, &error));
    server.certificate = einsora_tls_identity_load(cert_path, key_path, &error);
    g_assert_no_error(error);
    fingerprint = einsora_tls_certificate_fingerprint(server.certificate);
    client_certificate = agent_certificate(dir);

    soup_server_add_handler(workload, NULL, on_workload_request, NULL, NULL);
    g_assert_true(soup_server_listen(workload, workload_address, 0, &error));
    source->socket_path = g_strdup(socket_path);

    server.listener = g_socket_listener_new();
    loopback = g_inet_socket_address_new_from_string("127.0.0.1", 0);
    g_assert_true(g_socket_listener_add_address(server.listener, loopback, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, &bound, &error));
    url = g_strdup_printf("https://127.0.0.1:%u",
                          g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound)));
    thread = g_thread_new("server", serve, &server);

    tunnel = einsora_agent_tunnel_new(url, fingerprint, client_certificate,
                                      EINSORA_ACCESS_SOURCE(source));
    einsora_agent_tunnel_start(tunnel);
    /* None opens until the server asks (through a sync's answer). */
    g_assert_cmpuint(einsora_agent_tunnel_count_idle(tunnel), ==, 0);
    einsora_agent_tunnel_open(tunnel, 1);
    deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    while (!g_atomic_int_get(&server.done) && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, FALSE), g_usleep(1000);
    g_assert_true(g_atomic_int_get(&server.done));
    g_assert_null(server.failure);
    g_assert_true(server.peer_cert);

    /* The workload got its own token, once, and not the forged one. */
    expected = g_strdup_printf("[token %s]", TOKEN);
    g_assert_cmpstr(workload_saw, ==, expected);
    /* The server got the answer, with the token masked, length kept. */
    g_test_message("answer: %s", server.answer);
    g_assert_true(g_str_has_prefix(server.answer, "HTTP/1.1 200 OK\r\n"));
    /* The body that came with the head (one write) reached it at once. */
    g_assert_nonnull(strstr(server.answer, "path=/tree body=hello token="));
    g_assert_nonnull(strstr(server.answer, mask));
    g_assert_null(strstr(server.answer, TOKEN));
    /* A workload that isn't there: closed, nothing said. */
    g_assert_cmpstr(server.unknown, ==, "");
    /* Each taken stream was replaced. */
    g_assert_true(server.replaced);
    g_assert_cmpuint(einsora_agent_tunnel_count_carried(tunnel), ==, 1);

    einsora_agent_tunnel_stop(tunnel);
    deadline = g_get_monotonic_time() + G_USEC_PER_SEC / 5;
    while (g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, FALSE), g_usleep(1000);
    g_thread_join(g_steal_pointer(&thread));
    g_socket_listener_close(server.listener);
    g_object_unref(server.listener);
    g_object_unref(server.certificate);
    g_free(server.answer);
    g_free(server.unknown);
    g_clear_pointer(&workload_saw, g_free);
    soup_server_disconnect(workload);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here: install glib-networking");
        return g_test_run();
    }
    g_test_add_func("/agent-tunnel/request-through-the-agent", test_request_through_the_agent);
    return g_test_run();
}
