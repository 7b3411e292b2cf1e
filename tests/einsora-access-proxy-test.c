/* The access proxy with a real SQLite store and service (tickets) and a
 * stand-in workload: a SoupServer on a Unix socket that shows what it
 * received, answers big bodies, sets cookies and echoes WebSocket
 * messages. Every refusal the design names, and what crosses the proxy
 * in each direction. */
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <string.h>
#include <sys/socket.h>

#include "einsora-access-host.h"
#include "einsora-access-proxy.h"
#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-uuid.h"

#define TENANT_A "0190b5d2-7c4e-7abc-8def-00000000000a"
#define TENANT_B "0190b5d2-7c4e-7abc-8def-00000000000b"
#define MACHINE "0190b5d2-7c4e-7abc-8def-0000000000aa"
#define START_US G_GINT64_CONSTANT(1764406000000000)
#define UPSTREAM_TOKEN "upstream-token-must-never-reach-the-browser"
#define BIG_SIZE (10 * 1024 * 1024)

typedef struct {
    gint64 now_us;
} Clock;

static gint64
clock_now(gpointer user_data)
{
    return ((Clock *)user_data)->now_us;
}

/* The backend's way in, as the hub gives it: for running workloads that
 * the test lists, the stand-in's socket. */
#define TEST_TYPE_TARGETS (test_targets_get_type())
G_DECLARE_FINAL_TYPE(TestTargets, test_targets, TEST, TARGETS, GObject)

struct _TestTargets {
    GObject parent_instance;
    gchar *socket_path;
    GHashTable *running; /* workload ID -> attempt (GINT_TO_POINTER) */
    gchar *token;
};

static void test_targets_iface_init(EinsoraWorkloadAccessInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(TestTargets, test_targets, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_WORKLOAD_ACCESS,
                                                    test_targets_iface_init))

static void
test_targets_finalize(GObject *object)
{
    TestTargets *self = TEST_TARGETS(object);

    g_free(self->socket_path);
    g_free(self->token);
    g_hash_table_unref(self->running);
    G_OBJECT_CLASS(test_targets_parent_class)->finalize(object);
}

static void
test_targets_class_init(TestTargetsClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = test_targets_finalize;
}

static void
test_targets_init(TestTargets *self)
{
    self->running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->token = g_strdup(UPSTREAM_TOKEN);
}

static gboolean
test_targets_lookup(EinsoraWorkloadAccess *access, const char *tenant_id, const char *workload_id,
                    gint64 *attempt, gchar **socket_path, gchar **token, GError **error)
{
    TestTargets *self = TEST_TARGETS(access);
    gpointer found = NULL;

    if (g_strcmp0(tenant_id, TENANT_A) != 0 ||
        !g_hash_table_lookup_extended(self->running, workload_id, NULL, &found)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "not running");
        return FALSE;
    }
    *attempt = GPOINTER_TO_INT(found);
    *socket_path = g_strdup(self->socket_path);
    *token = g_strdup(self->token);
    return TRUE;
}

static void
test_targets_iface_init(EinsoraWorkloadAccessInterface *iface)
{
    iface->lookup = test_targets_lookup;
}

typedef struct {
    gchar *dir;
    Clock clock;
    EinsoraCatalog *catalog;
    EinsoraSqliteStore *store;
    EinsoraService *service;
    EinsoraAuth *auth;
    EinsoraActor *alice;
    TestTargets *targets;
    EinsoraAccessProxy *proxy;
    SoupServer *upstream;
    SoupSession *browser;
    gchar *notebook;              /* a running notebook of tenant A */
    gchar *other;                 /* another one */
    GPtrArray *upstream_requests; /* what the stand-in received: its headers, as text */
    SoupServerMessage *slow;      /* a request the stand-in never answers */
    GHashTable *empty_query;
    gboolean slow_ended;
} Fixture;

/* The stand-in workload. */

/* A paused request's connection ending: libsoup reads nothing while it
 * waits, so look at the socket. */
static gboolean
on_slow_socket(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    Fixture *f = user_data;
    char byte;

    if ((condition & (G_IO_HUP | G_IO_ERR)) != 0 ||
        recv(g_socket_get_fd(socket), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
        f->slow_ended = TRUE;
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

static void
on_upstream(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
            gpointer user_data)
{
    Fixture *f = user_data;
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    SoupMessageHeaders *answer = soup_server_message_get_response_headers(msg);
    g_autoptr(GString) seen = g_string_new(NULL);
    SoupMessageHeadersIter iter;
    const char *name, *value;

    soup_message_headers_iter_init(&iter, headers);
    while (soup_message_headers_iter_next(&iter, &name, &value))
        g_string_append_printf(seen, "%s: %s\n", name, value);
    g_ptr_array_add(f->upstream_requests, g_strdup(seen->str));
    if (g_strcmp0(path, "/big") == 0) {
        gchar *body = g_malloc(BIG_SIZE);
        memset(body, 'x', BIG_SIZE);
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "application/octet-stream", SOUP_MEMORY_TAKE, body,
                                         BIG_SIZE);
        return;
    }
    if (g_strcmp0(path, "/slow") == 0) {
        /* Never answered: only the connection's end ends it. */
        GSource *watch =
            g_socket_create_source(soup_server_message_get_socket(msg), G_IO_IN | G_IO_HUP, NULL);
        f->slow = msg;
        g_source_set_callback(watch, G_SOURCE_FUNC(on_slow_socket), f, NULL);
        g_source_attach(watch, NULL);
        g_source_unref(watch);
        soup_server_message_pause(msg);
        return;
    }
    if (g_strcmp0(path, "/nocontent") == 0) {
        /* libsoup writes the header though no body follows a 204. */
        soup_message_headers_set_encoding(answer, SOUP_ENCODING_CHUNKED);
        soup_server_message_set_status(msg, SOUP_STATUS_NO_CONTENT, NULL);
        return;
    }
    if (g_strcmp0(path, "/redirect") == 0) {
        soup_server_message_set_redirect(msg, SOUP_STATUS_FOUND, "/echo");
        return;
    }
    if (g_strcmp0(path, "/page") == 0) {
        /* Jupyter writes its token into its pages; here also across the
         * proxy's 64 KiB chunks, and into a redirect. */
        g_autoptr(GString) page =
            g_string_new("<html data-jupyter-api-token=\"" UPSTREAM_TOKEN "\">");
        while (page->len < 65536 - 20)
            g_string_append_c(page, 'a');
        g_string_append(page, UPSTREAM_TOKEN);
        while (page->len < 3 * 65536)
            g_string_append_c(page, 'b');
        g_string_append(page, "<a href=\"/tree?token=" UPSTREAM_TOKEN "\">end</a></html>");
        soup_message_headers_append(answer, "Location", "/tree?token=" UPSTREAM_TOKEN);
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        if (g_hash_table_contains(query != NULL ? query : f->empty_query, "chunked")) {
            /* No length: the proxy scrubs it as it streams. */
            SoupMessageBody *body = soup_server_message_get_response_body(msg);
            soup_message_headers_set_encoding(answer, SOUP_ENCODING_CHUNKED);
            soup_message_headers_set_content_type(answer, "text/html", NULL);
            for (gsize at = 0; at < page->len; at += 1000)
                soup_message_body_append(body, SOUP_MEMORY_COPY, page->str + at,
                                         MIN(1000, page->len - at));
            soup_message_body_complete(body);
            return;
        }
        soup_server_message_set_response(msg, "text/html", SOUP_MEMORY_COPY, page->str, page->len);
        return;
    }
    if (g_strcmp0(path, "/set-cookie") == 0) {
        soup_message_headers_append(answer, "Set-Cookie", "einsora_access=planted; Path=/");
        soup_message_headers_append(answer, "Set-Cookie", "_xsrf=abc; Path=/");
    }
    if (g_strcmp0(path, "/size") == 0) {
        g_autoptr(GBytes) body =
            soup_message_body_flatten(soup_server_message_get_request_body(msg));
        g_autofree gchar *size = g_strdup_printf("%zu", g_bytes_get_size(body));
        gboolean all_x = TRUE;
        gsize length = 0;
        const char *data = g_bytes_get_data(body, &length);
        for (gsize i = 0; i < length && all_x; i++)
            all_x = data[i] == 'x';
        soup_server_message_set_status(msg, all_x ? SOUP_STATUS_OK : SOUP_STATUS_BAD_REQUEST, NULL);
        soup_server_message_set_response(msg, "text/plain", SOUP_MEMORY_COPY, size, strlen(size));
        return;
    }
    if (g_strcmp0(path, "/post") == 0) {
        g_autoptr(GBytes) body =
            soup_message_body_flatten(soup_server_message_get_request_body(msg));
        soup_server_message_set_status(msg, SOUP_STATUS_CREATED, NULL);
        soup_server_message_set_response(msg, "text/plain", SOUP_MEMORY_COPY,
                                         g_bytes_get_data(body, NULL), g_bytes_get_size(body));
        return;
    }
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "text/plain", SOUP_MEMORY_COPY, seen->str, seen->len);
}

static void
on_upstream_message(SoupWebsocketConnection *connection, gint type, GBytes *message,
                    gpointer user_data)
{
    soup_websocket_connection_send_message(connection, (SoupWebsocketDataType)type, message);
}

static void
on_upstream_websocket(SoupServer *server, SoupServerMessage *msg, const char *path,
                      SoupWebsocketConnection *connection, gpointer user_data)
{
    Fixture *f = user_data;
    const char *authorization =
        soup_message_headers_get_one(soup_server_message_get_request_headers(msg), "Authorization");

    g_ptr_array_add(f->upstream_requests,
                    g_strdup_printf("websocket Authorization: %s\n", authorization));
    g_signal_connect(connection, "message", G_CALLBACK(on_upstream_message), NULL);
    /* The proxy's bound, not the stand-in's, is under test. */
    soup_websocket_connection_set_max_incoming_payload_size(connection, 0);
    g_object_set_data_full(G_OBJECT(server), "connection", g_object_ref(connection),
                           g_object_unref);
}

static void
move(Fixture *f, const char *id, EinsoraWorkloadState to, const EinsoraPlacement *placement)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_get_workload(f->service, TENANT_A, id, TRUE, &error);

    g_assert_no_error(error);
    f->clock.now_us += 1000;
    g_assert_true(
        einsora_service_transition(f->service, workload, to, "moved by a test", placement, &error));
    g_assert_no_error(error);
}

/* A notebook of tenant A, running on this machine (attempt 1). */
static gchar *
running_notebook(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest request = {"notebook", "nb", "cpu-2c-4g", "jupyter", NULL};
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, f->alice, &request, &error);
    EinsoraPlacement placement = {"cpu-2c-4g", MACHINE, "sim"};

    g_assert_no_error(error);
    move(f, workload->id, EINSORA_WORKLOAD_STATE_PROVISIONING, &placement);
    move(f, workload->id, EINSORA_WORKLOAD_STATE_RUNNING, NULL);
    g_hash_table_insert(f->targets->running, g_strdup(workload->id), GINT_TO_POINTER(1));
    return g_strdup(workload->id);
}

static const char test_catalog[] =
    "{\"version\": 1, \"regions\": [{\"name\": \"local\"}],"
    " \"drivers\": [{\"name\": \"sim\", \"kinds\": [\"notebook\"], \"accelerators\": [\"cpu\"]}],"
    " \"classes\": [{\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096,"
    "   \"accelerator\": \"cpu\"}],"
    " \"images\": [{\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\"]}}}]}";

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(EinsoraTenant) tenant =
        einsora_tenant_new(TENANT_A, "acme", FALSE, "2025-11-29T08:46:40.000000Z");
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GSocket) socket = NULL;
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) proxy_address = NULL;

    f->dir = einsora_test_dir_new();
    f->clock.now_us = START_US;
    f->upstream_requests = g_ptr_array_new_with_free_func(g_free);
    f->empty_query = g_hash_table_new(g_str_hash, g_str_equal);
    path = g_build_filename(f->dir, "einsora.db", NULL);
    f->catalog = einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_assert_no_error(error);
    f->store = einsora_sqlite_store_open(path, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(f->store, START_US, &error));
    einsora_sqlite_store_set_clock(f->store, clock_now, &f->clock);
    g_assert_true(einsora_store_insert_tenant(EINSORA_STORE(f->store), tenant, &error));
    machine->id = g_strdup(MACHINE);
    machine->tenant_id = g_strdup(TENANT_A);
    machine->name = g_strdup("box");
    machine->region = g_strdup("local");
    machine->os = g_strdup("linux");
    machine->cpus = 16;
    machine->memory_mib = 65536;
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = g_strdup("2025-11-29T08:46:40.000000Z");
    g_assert_true(einsora_store_insert_machine(EINSORA_STORE(f->store), machine, &error));
    g_assert_no_error(error);
    f->service = einsora_service_new(EINSORA_STORE(f->store), f->catalog, clock_now, &f->clock);
    f->alice = einsora_actor_new(TENANT_A, "u-a", "alice@acme.example", "browser session");

    /* The stand-in workload on its Unix socket. */
    f->targets = g_object_new(TEST_TYPE_TARGETS, NULL);
    f->targets->socket_path = g_build_filename(f->dir, "notebook.sock", NULL);
    f->upstream = soup_server_new(NULL, NULL);
    soup_server_add_handler(f->upstream, NULL, on_upstream, f, NULL);
    soup_server_add_websocket_handler(f->upstream, "/ws", NULL, NULL, on_upstream_websocket, f,
                                      NULL);
    address = g_unix_socket_address_new(f->targets->socket_path);
    socket =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_true(g_socket_bind(socket, address, TRUE, &error));
    g_assert_true(g_socket_listen(socket, &error));
    g_assert_true(soup_server_listen_socket(f->upstream, socket, 0, &error));
    g_assert_no_error(error);

    f->auth = einsora_auth_new(EINSORA_STORE(f->store), clock_now, &f->clock);
    f->proxy = einsora_access_proxy_new(f->service, f->auth, EINSORA_WORKLOAD_ACCESS(f->targets),
                                        clock_now, &f->clock);
    g_assert_true(einsora_access_proxy_listen(f->proxy, "127.0.0.1:0", &error));
    g_assert_no_error(error);
    /* The browser: names under .localhost are loopback to it. */
    proxy_address = g_inet_socket_address_new(loopback, einsora_access_proxy_get_port(f->proxy));
    f->browser =
        soup_session_new_with_options("remote-connectable", proxy_address, "timeout", 30, NULL);
    f->notebook = running_notebook(f);
    f->other = running_notebook(f);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_clear_object(&f->browser);
    g_clear_object(&f->proxy);
    soup_server_disconnect(f->upstream);
    g_clear_object(&f->upstream);
    g_clear_object(&f->targets);
    g_clear_object(&f->auth);
    g_clear_object(&f->service);
    g_clear_object(&f->store);
    g_clear_object(&f->catalog);
    einsora_actor_free(f->alice);
    g_free(f->notebook);
    g_free(f->other);
    g_ptr_array_unref(f->upstream_requests);
    g_hash_table_unref(f->empty_query);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
}

/* The browser's side. */

typedef struct {
    guint status;
    gchar *body;
    SoupMessageHeaders *headers;
} Answer;

static void
answer_free(Answer *answer)
{
    g_free(answer->body);
    if (answer->headers != NULL)
        soup_message_headers_unref(answer->headers);
    g_free(answer);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Answer, answer_free)

static void
on_answered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

/* @host: the Host to send; @headers: NULL-terminated name, value pairs. */
static Answer *
request(Fixture *f, const char *method, const char *host, const char *path_and_query,
        const char *const *headers, const char *body)
{
    g_autofree gchar *uri = g_strdup_printf("http://%s%s", host, path_and_query);
    g_autoptr(SoupMessage) message = soup_message_new(method, uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(GError) error = NULL;
    Answer *answer = g_new0(Answer, 1);

    g_assert_nonnull(message);
    for (guint i = 0; headers != NULL && headers[i] != NULL; i += 2)
        soup_message_headers_replace(soup_message_get_request_headers(message), headers[i],
                                     headers[i + 1]);
    if (body != NULL) {
        g_autoptr(GBytes) content = g_bytes_new(body, strlen(body));
        soup_message_set_request_body_from_bytes(message, "text/plain", content);
    }
    soup_session_send_and_read_async(f->browser, message, G_PRIORITY_DEFAULT, NULL, on_answered,
                                     &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    bytes = soup_session_send_and_read_finish(f->browser, result, &error);
    g_assert_no_error(error);
    answer->status = soup_message_get_status(message);
    answer->body = g_strndup(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
    answer->headers = soup_message_headers_ref(soup_message_get_response_headers(message));
    return answer;
}

static gchar *
host_of(Fixture *f, const char *id)
{
    return g_strdup_printf("w-%s.localhost:%u", id, einsora_access_proxy_get_port(f->proxy));
}

/* A ticket as the API makes one: its secret for the link. */
static gchar *
grant(Fixture *f, const char *id)
{
    g_autoptr(GError) error = NULL;
    gchar *secret = einsora_credential_new_secret("tkt_");
    g_autofree gchar *hash = einsora_credential_sha256_hex(secret);
    g_autoptr(EinsoraAccessTicket) ticket =
        einsora_service_grant_access(f->service, f->alice, id, hash, &error);

    g_assert_no_error(error);
    g_assert_nonnull(ticket);
    return secret;
}

static Answer *
open_with(Fixture *f, const char *host, const char *ticket)
{
    g_autofree gchar *path = g_strdup_printf(EINSORA_ACCESS_OPEN_PATH "?ticket=%s", ticket);
    const char *headers[] = {"Sec-Fetch-Site", "cross-site", NULL};

    return request(f, "GET", host, path, headers, NULL);
}

/* Opens @id and returns the Cookie header value for its host. */
static gchar *
open_session(Fixture *f, const char *id)
{
    g_autofree gchar *ticket = grant(f, id);
    g_autofree gchar *host = host_of(f, id);
    g_autoptr(Answer) answer = open_with(f, host, ticket);
    const char *set_cookie;
    g_auto(GStrv) parts = NULL;

    g_assert_cmpuint(answer->status, ==, 200);
    set_cookie = soup_message_headers_get_one(answer->headers, "Set-Cookie");
    g_assert_nonnull(set_cookie);
    parts = g_strsplit(set_cookie, ";", 2);
    return g_strdup(parts[0]);
}

static Answer *
get_with_cookie(Fixture *f, const char *id, const char *path, const char *cookie)
{
    g_autofree gchar *host = host_of(f, id);
    const char *headers[] = {"Cookie", cookie, NULL};

    return request(f, "GET", host, path, cookie != NULL ? headers : NULL, NULL);
}

/* Tests */

static void
test_host_parse(void)
{
    guint port = 0;
    g_autofree gchar *id =
        einsora_access_host_parse("W-0190B5D2-7C4E-7ABC-8DEF-00000000000A.LocalHost:8090", &port);

    g_assert_cmpstr(id, ==, "0190b5d2-7c4e-7abc-8def-00000000000a");
    g_assert_cmpuint(port, ==, 8090);
    {
        const char *refused[] = {"evil.example",
                                 "127.0.0.1",
                                 "localhost",
                                 "localhost:8090",
                                 "w-.localhost",
                                 "w-0190b5d2-7c4e-7abc-8def-00000000000a.localhost.evil.example",
                                 "x-0190b5d2-7c4e-7abc-8def-00000000000a.localhost",
                                 "w-0190b5d2-7c4e-7abc-8def-00000000000a.localhost:",
                                 "w-0190b5d2-7c4e-7abc-8def-00000000000a.localhost:99999",
                                 "w-0190b5d2-7c4e-7abc-8def-00000000000a.localhost:80x",
                                 "w-not-a-uuid-at-all-but-36-chars-long.localhost",
                                 "",
                                 NULL};
        for (guint i = 0; refused[i] != NULL; i++) {
            g_autofree gchar *none = einsora_access_host_parse(refused[i], &port);
            if (none != NULL)
                g_error("\"%s\" was taken for a workload host", refused[i]);
        }
    }
}

static void
test_cookie_parse(void)
{
    g_autofree gchar *rest = NULL;
    g_autofree gchar *value = einsora_access_cookie_take("_xsrf=1; einsora_access=abc; b=2", &rest);
    g_autofree gchar *rest2 = NULL;
    g_autofree gchar *twice =
        einsora_access_cookie_take("einsora_access=a; einsora_access=b", &rest2);
    g_autofree gchar *rest3 = NULL;
    g_autofree gchar *none = einsora_access_cookie_take("einsora_accessx=a", &rest3);

    g_assert_cmpstr(value, ==, "abc");
    g_assert_cmpstr(rest, ==, "_xsrf=1; b=2");
    g_assert_null(twice);
    g_assert_null(rest2);
    g_assert_null(none);
    g_assert_cmpstr(rest3, ==, "einsora_accessx=a");
    g_assert_true(einsora_access_cookie_is_ours(" einsora_access =x; Path=/"));
    /* Found by tests/fuzz/fuzz-access-host: a space before "=" still names
     * the proxy's cookie to the workload's parser, so it is taken too. */
    {
        g_autofree gchar *rest4 = NULL;
        g_autofree gchar *spaced = einsora_access_cookie_take("a=1; einsora_access =abc", &rest4);
        g_assert_cmpstr(spaced, ==, "abc");
        g_assert_cmpstr(rest4, ==, "a=1");
    }
    g_assert_false(einsora_access_cookie_is_ours("_xsrf=x"));
}

static void
test_ticket_parse(void)
{
    const char *good = "tkt_0123456789abcdefghijklmnopqrstuvwxyzABCD-_C";
    g_autofree gchar *query = g_strdup_printf("ticket=%s", good);
    g_autofree gchar *with_other = g_strdup_printf("a=1&ticket=%s&b=", good);
    g_autofree gchar *ticket = einsora_access_ticket_parse(query);
    g_autofree gchar *ticket2 = einsora_access_ticket_parse(with_other);
    g_autofree gchar *twice = g_strdup_printf("ticket=%s&ticket=%s", good, good);
    g_autofree gchar *escaped = g_strdup_printf("ticket=%s&x=%%zz", good);
    g_autofree gchar *longer = g_strdup_printf("ticket=%sx", good);
    const char *refused[] = {twice,
                             escaped,
                             longer,
                             "",
                             "ticket=",
                             "ticket=x",
                             "ticket=tsk_0123456789abcdefghijklmnopqrstuvwxyzABCD-_C",
                             "ticket=tkt_0123456789abcdefghijklmnopqrstuvwxyzABCD+/C",
                             "ticket=tkt_0123456789abcdefghijklmnopqrstuvwxyzABCD%00C",
                             "Ticket=tkt_0123456789abcdefghijklmnopqrstuvwxyzABCD-_C",
                             NULL};

    g_assert_cmpuint(strlen(good), ==, strlen("tkt_") + 43);
    g_assert_cmpstr(ticket, ==, good);
    g_assert_cmpstr(ticket2, ==, good);
    g_assert_null(einsora_access_ticket_parse(NULL));
    for (guint i = 0; refused[i] != NULL; i++) {
        g_autofree gchar *none = einsora_access_ticket_parse(refused[i]);
        if (none != NULL)
            g_error("\"%s\" was taken for a ticket", refused[i]);
    }
}

/* Opening sets a host-only, HttpOnly, SameSite=Strict cookie; what then
 * reaches the workload has its token and none of the proxy's cookie, and
 * what comes back has neither. */
static void
test_open_and_forward(Fixture *f, gconstpointer data)
{
    g_autofree gchar *ticket = grant(f, f->notebook);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autoptr(Answer) opened = open_with(f, host, ticket);
    const char *set_cookie = soup_message_headers_get_one(opened->headers, "Set-Cookie");
    g_auto(GStrv) parts = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *both = NULL;
    g_autoptr(Answer) echoed = NULL;
    const char *seen;

    g_assert_cmpuint(opened->status, ==, 200);
    g_assert_nonnull(set_cookie);
    g_assert_true(g_str_has_prefix(set_cookie, "einsora_access="));
    g_assert_nonnull(strstr(set_cookie, "HttpOnly"));
    g_assert_nonnull(strstr(set_cookie, "SameSite=Strict"));
    g_assert_null(strstr(set_cookie, "Domain"));
    g_assert_cmpstr(soup_message_headers_get_one(opened->headers, "Cache-Control"), ==, "no-store");
    g_assert_cmpuint(einsora_access_proxy_count_sessions(f->proxy), ==, 1);
    parts = g_strsplit(set_cookie, ";", 2);
    cookie = g_strdup(parts[0]);
    both = g_strdup_printf("_xsrf=abc; %s; theme=dark", cookie);

    {
        const char *headers[] = {"Cookie", both, "Origin", NULL, NULL};
        g_autofree gchar *origin = g_strdup_printf("http://%s", host);
        headers[3] = origin;
        echoed = request(f, "GET", host, "/echo?q=1", headers, NULL);
    }
    g_assert_cmpuint(echoed->status, ==, 200);
    /* What the workload received (the browser gets it back without the
     * token: see token-scrubbed). */
    g_assert_cmpuint(f->upstream_requests->len, ==, 1);
    seen = g_ptr_array_index(f->upstream_requests, 0);
    g_assert_null(strstr(echoed->body, UPSTREAM_TOKEN));
    g_assert_nonnull(strstr(seen, "Authorization: token " UPSTREAM_TOKEN));
    g_assert_nonnull(strstr(seen, "Host: localhost"));
    g_assert_nonnull(strstr(seen, "Origin: http://localhost\n"));
    g_assert_nonnull(strstr(seen, "Cookie: _xsrf=abc; theme=dark"));
    g_assert_null(strstr(seen, "einsora_access"));
    /* No token in any header the browser gets. */
    {
        SoupMessageHeadersIter iter;
        const char *name, *value;
        soup_message_headers_iter_init(&iter, echoed->headers);
        while (soup_message_headers_iter_next(&iter, &name, &value))
            g_assert_null(strstr(value, UPSTREAM_TOKEN));
    }
}

/* The workload's token never reaches the browser, even where the server
 * writes it into a page or a header. */
static void
test_token_scrubbed(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) answer =
        get_with_cookie(f, f->notebook, data != NULL ? "/page?chunked=1" : "/page", cookie);

    g_assert_cmpuint(answer->status, ==, 200);
    g_assert_null(strstr(answer->body, UPSTREAM_TOKEN));
    g_assert_true(g_str_has_prefix(answer->body, "<html data-jupyter-api-token=\"\">"));
    g_assert_true(g_str_has_suffix(answer->body, "<a href=\"/tree?token=\">end</a></html>"));
    /* Three tokens out: two before the padding's end, one in the tail. */
    g_assert_cmpuint(strlen(answer->body), ==,
                     3 * 65536 - 2 * strlen(UPSTREAM_TOKEN) +
                         strlen("<a href=\"/tree?token=\">end</a></html>"));
    g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "Location"), ==, "/tree?token=");
}

static void
test_upstream_cannot_set_our_cookie(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) answer = get_with_cookie(f, f->notebook, "/set-cookie", cookie);
    SoupMessageHeadersIter iter;
    const char *name, *value;
    guint cookies = 0;

    g_assert_cmpuint(answer->status, ==, 200);
    soup_message_headers_iter_init(&iter, answer->headers);
    while (soup_message_headers_iter_next(&iter, &name, &value)) {
        if (g_ascii_strcasecmp(name, "Set-Cookie") != 0)
            continue;
        cookies++;
        g_assert_false(einsora_access_cookie_is_ours(value));
    }
    g_assert_cmpuint(cookies, ==, 1); /* _xsrf passes */
}

static void
test_ticket_once(Fixture *f, gconstpointer data)
{
    g_autofree gchar *ticket = grant(f, f->notebook);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autoptr(Answer) first = open_with(f, host, ticket);
    g_autoptr(Answer) again = open_with(f, host, ticket);

    g_assert_cmpuint(first->status, ==, 200);
    g_assert_cmpuint(again->status, ==, 403);
    g_assert_null(soup_message_headers_get_one(again->headers, "Set-Cookie"));
}

static void
test_ticket_expired(Fixture *f, gconstpointer data)
{
    g_autofree gchar *ticket = grant(f, f->notebook);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autoptr(Answer) answer = NULL;

    f->clock.now_us += 61 * G_USEC_PER_SEC;
    answer = open_with(f, host, ticket);
    g_assert_cmpuint(answer->status, ==, 403);
    g_assert_cmpuint(einsora_access_proxy_count_sessions(f->proxy), ==, 0);
}

/* A link with the ticket twice, or beside a malformed one, opens nothing
 * and spends nothing: the real ticket still works afterwards. */
static void
test_ticket_malformed(Fixture *f, gconstpointer data)
{
    g_autofree gchar *ticket = grant(f, f->notebook);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autofree gchar *twice = g_strdup_printf("%s&ticket=%s", ticket, ticket);
    g_autoptr(Answer) doubled = open_with(f, host, twice);
    g_autoptr(Answer) garbage = open_with(f, host, "tkt_%ff");
    g_autoptr(Answer) then = NULL;

    g_assert_cmpuint(doubled->status, ==, 400);
    g_assert_cmpuint(garbage->status, ==, 400);
    g_assert_cmpuint(einsora_access_proxy_count_sessions(f->proxy), ==, 0);
    then = open_with(f, host, ticket);
    g_assert_cmpuint(then->status, ==, 200);
}

/* A ticket works at its own workload's host only, and is spent trying. */
static void
test_ticket_other_host(Fixture *f, gconstpointer data)
{
    g_autofree gchar *ticket = grant(f, f->notebook);
    g_autofree gchar *other_host = host_of(f, f->other);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autoptr(Answer) elsewhere = open_with(f, other_host, ticket);
    g_autoptr(Answer) then = open_with(f, host, ticket);

    g_assert_cmpuint(elsewhere->status, ==, 403);
    g_assert_cmpuint(then->status, ==, 403);
    g_assert_cmpuint(einsora_access_proxy_count_sessions(f->proxy), ==, 0);
}

static void
test_not_workload_hosts(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autofree gchar *wrong_port = g_strdup_printf("w-%s.localhost:%u", f->notebook,
                                                   einsora_access_proxy_get_port(f->proxy) + 1);
    const char *hosts[] = {"evil.example", "127.0.0.1", "localhost", wrong_port, NULL};

    for (guint i = 0; hosts[i] != NULL; i++) {
        const char *headers[] = {"Cookie", cookie, NULL};
        g_autoptr(Answer) answer = request(f, "GET", hosts[i], "/echo", headers, NULL);
        g_assert_cmpuint(answer->status, ==, 421);
    }
    for (guint i = 0; i < f->upstream_requests->len; i++)
        g_assert_null(strstr(g_ptr_array_index(f->upstream_requests, i), "/echo"));
    g_assert_cmpuint(f->upstream_requests->len, ==, 0);
}

static void
test_other_origins_refused(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autofree gchar *other_origin = g_strdup_printf("http://w-%s.localhost:%u", f->other,
                                                     einsora_access_proxy_get_port(f->proxy));
    const char *const cases[][4] = {
        {"Origin", "http://evil.example", NULL, NULL},
        {"Origin", "http://localhost:8080", NULL, NULL},
        {"Origin", "null", NULL, NULL},
        {"Sec-Fetch-Site", "cross-site", NULL, NULL},
        {"Sec-Fetch-Site", "same-site", NULL, NULL},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *headers[] = {"Cookie", cookie, cases[i][0], cases[i][1], NULL};
        g_autoptr(Answer) answer = request(f, "POST", host, "/post", headers, "x");
        g_assert_cmpuint(answer->status, ==, 403);
    }
    {
        const char *headers[] = {"Cookie", cookie, "Origin", other_origin, NULL};
        g_autoptr(Answer) answer = request(f, "GET", host, "/echo", headers, NULL);
        g_assert_cmpuint(answer->status, ==, 403);
    }
    g_assert_cmpuint(f->upstream_requests->len, ==, 0);
}

static void
test_cookie_of_another_workload(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) answer = get_with_cookie(f, f->other, "/echo", cookie);
    g_autoptr(Answer) none = get_with_cookie(f, f->notebook, "/echo", NULL);
    g_autoptr(Answer) forged = get_with_cookie(f, f->notebook, "/echo", "einsora_access=eas_x");

    g_assert_cmpuint(answer->status, ==, 403);
    g_assert_cmpuint(none->status, ==, 403);
    g_assert_cmpuint(forged->status, ==, 403);
    g_assert_cmpuint(f->upstream_requests->len, ==, 0);
}

/* A session belongs to the server run it opened: once that stops (and
 * even when a new attempt runs), it opens nothing. */
static void
test_session_ends_with_its_server(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) before = get_with_cookie(f, f->notebook, "/echo", cookie);
    g_autoptr(Answer) after = NULL;
    g_autoptr(Answer) gone = NULL;

    g_assert_cmpuint(before->status, ==, 200);
    /* Stopped and started again: a new attempt, a new token (and the
     * timeline says so, which is what the session's held way in heeds). */
    g_hash_table_insert(f->targets->running, g_strdup(f->notebook), GINT_TO_POINTER(2));
    g_free(f->targets->token);
    f->targets->token = g_strdup("a-new-run-token");
    move(f, f->notebook, EINSORA_WORKLOAD_STATE_STOPPING, NULL);
    after = get_with_cookie(f, f->notebook, "/echo", cookie);
    g_assert_cmpuint(after->status, ==, 404);
    g_assert_cmpuint(einsora_access_proxy_count_sessions(f->proxy), ==, 0);
    g_hash_table_remove(f->targets->running, f->notebook);
    gone = get_with_cookie(f, f->notebook, "/echo", cookie);
    g_assert_cmpuint(gone->status, ==, 403);
}

static guint own_fds(void);

/* A session holds its server's way in: requests after the opening don't
 * ask the backend (whose look-up reads the store) until the tenant's
 * timeline changes, and once the run has ended nothing reaches its old
 * socket. */
static void
test_session_holds_its_way_in(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) other = NULL;
    g_autoptr(Answer) noted = NULL;
    g_autoptr(Answer) ended = NULL;
    guint fds;

    g_assert_cmpuint(einsora_access_proxy_count_lookups(f->proxy), ==, 1);
    for (guint i = 0; i < 5; i++) {
        g_autoptr(Answer) answer = get_with_cookie(f, f->notebook, "/echo", cookie);
        g_assert_cmpuint(answer->status, ==, 200);
    }
    g_assert_cmpuint(f->upstream_requests->len, ==, 5);
    g_assert_cmpuint(einsora_access_proxy_count_lookups(f->proxy), ==, 1);

    /* Any event of the tenant's: looked up once more, still running. */
    other = einsora_service_get_workload(f->service, TENANT_A, f->other, TRUE, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_service_note(f->service, other, "noted by a test", &error));
    g_assert_no_error(error);
    noted = get_with_cookie(f, f->notebook, "/echo", cookie);
    g_assert_cmpuint(noted->status, ==, 200);
    g_assert_cmpuint(einsora_access_proxy_count_lookups(f->proxy), ==, 2);

    /* The run ends: the socket the session held open is let go at once,
     * and the next request doesn't reach it. */
    fds = own_fds();
    g_hash_table_remove(f->targets->running, f->notebook);
    move(f, f->notebook, EINSORA_WORKLOAD_STATE_STOPPING, NULL);
    g_assert_cmpuint(own_fds(), ==, fds - 1);
    ended = get_with_cookie(f, f->notebook, "/echo", cookie);
    g_assert_cmpuint(ended->status, ==, 404);
    g_assert_cmpuint(f->upstream_requests->len, ==, 6);
    g_assert_cmpuint(einsora_access_proxy_count_sessions(f->proxy), ==, 0);
}

static void
test_session_expires(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) answer = NULL;

    f->clock.now_us += EINSORA_ACCESS_SESSION_US + 1;
    answer = get_with_cookie(f, f->notebook, "/echo", cookie);
    g_assert_cmpuint(answer->status, ==, 403);
}

static void
test_stopped_workload_page(Fixture *f, gconstpointer data)
{
    g_autofree gchar *ticket = grant(f, f->notebook);
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autoptr(Answer) answer = NULL;

    g_hash_table_remove(f->targets->running, f->notebook);
    answer = open_with(f, host, ticket);
    g_assert_cmpuint(answer->status, ==, 404);
    g_assert_nonnull(strstr(answer->body, "This notebook isn&apos;t running"));
}

static void
test_big_body_and_post(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) big = get_with_cookie(f, f->notebook, "/big", cookie);
    g_autofree gchar *host = host_of(f, f->notebook);
    const char *headers[] = {"Cookie", cookie, NULL};
    g_autoptr(Answer) posted = request(f, "POST", host, "/post", headers, "hello upstream");

    g_assert_cmpuint(big->status, ==, 200);
    g_assert_cmpuint(strlen(big->body), ==, BIG_SIZE);
    g_assert_cmpuint(posted->status, ==, 201);
    g_assert_cmpstr(posted->body, ==, "hello upstream");
}

/* The workload's redirects go to the browser, which follows them at the
 * workload's own address; the proxy never follows one itself. */
static void
test_redirect_passed_on(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autofree gchar *uri = g_strdup_printf("http://w-%s.localhost:%u/redirect", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GBytes) body = NULL;
    g_autoptr(GError) error = NULL;
    SoupMessageHeaders *headers;
    SoupMessageHeadersIter iter;
    const char *name, *value;
    guint dates = 0;

    soup_message_add_flags(message, SOUP_MESSAGE_NO_REDIRECT);
    soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);
    soup_session_send_and_read_async(f->browser, message, G_PRIORITY_DEFAULT, NULL, on_answered,
                                     &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    body = soup_session_send_and_read_finish(f->browser, result, &error);
    g_assert_no_error(error);
    headers = soup_message_get_response_headers(message);
    g_assert_cmpuint(soup_message_get_status(message), ==, SOUP_STATUS_FOUND);
    g_assert_cmpstr(soup_message_headers_get_one(headers, "Location"), ==, "/echo");
    g_assert_cmpuint(f->upstream_requests->len, ==, 1);
    soup_message_headers_iter_init(&iter, headers);
    while (soup_message_headers_iter_next(&iter, &name, &value))
        dates += g_ascii_strcasecmp(name, "Date") == 0;
    g_assert_cmpuint(dates, ==, 1);
}

/* A big upload streams through (sent with a length, and chunked). */
static void
test_big_upload(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autofree gchar *uri = g_strdup_printf("http://w-%s.localhost:%u/size", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));

    for (guint chunked = 0; chunked < 2; chunked++) {
        g_autoptr(SoupMessage) message = soup_message_new("POST", uri);
        g_autoptr(GAsyncResult) result = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GBytes) answer = NULL;
        gchar *body = g_malloc(BIG_SIZE);
        g_autoptr(GBytes) bytes = NULL;

        memset(body, 'x', BIG_SIZE);
        bytes = g_bytes_new_take(body, BIG_SIZE);
        soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);
        if (chunked) {
            g_autoptr(GInputStream) stream = g_memory_input_stream_new_from_bytes(bytes);
            soup_message_set_request_body(message, "application/octet-stream", stream, -1);
        } else {
            soup_message_set_request_body_from_bytes(message, "application/octet-stream", bytes);
        }
        soup_session_send_and_read_async(f->browser, message, G_PRIORITY_DEFAULT, NULL, on_answered,
                                         &result);
        while (result == NULL)
            g_main_context_iteration(NULL, TRUE);
        answer = soup_session_send_and_read_finish(f->browser, result, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(soup_message_get_status(message), ==, 200);
        g_assert_cmpmem(g_bytes_get_data(answer, NULL), g_bytes_get_size(answer), "10485760", 8);
    }
}

/* A refused request's body goes nowhere. */
static void
test_refused_upload(Fixture *f, gconstpointer data)
{
    g_autofree gchar *host = host_of(f, f->notebook);
    g_autoptr(Answer) answer = request(f, "POST", host, "/size", NULL, "a body nobody may send");

    g_assert_cmpuint(answer->status, ==, 403);
    g_assert_cmpuint(f->upstream_requests->len, ==, 0);
}

/* The browser going away cancels the workload's side at once. */
static void
test_client_gone_cancels_upstream(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autofree gchar *uri = g_strdup_printf("http://w-%s.localhost:%u/slow", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autoptr(GAsyncResult) result = NULL;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);
    soup_session_send_async(f->browser, message, G_PRIORITY_DEFAULT, cancellable, on_answered,
                            &result);
    while (f->slow == NULL) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_cancellable_cancel(cancellable);
    while (!f->slow_ended) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
}

/* WebSockets */

static void
on_ws_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static void
on_ws_message(SoupWebsocketConnection *connection, gint type, GBytes *message, gpointer user_data)
{
    GString *got = user_data;

    g_string_append_len(got, g_bytes_get_data(message, NULL), (gssize)g_bytes_get_size(message));
}

static void
test_websocket(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autofree gchar *uri = g_strdup_printf("ws://w-%s.localhost:%u/ws", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(SoupWebsocketConnection) connection = NULL;
    g_autoptr(GString) got = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);
    soup_session_websocket_connect_async(f->browser, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         on_ws_connected, &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    connection = soup_session_websocket_connect_finish(f->browser, result, &error);
    g_assert_no_error(error);
    g_signal_connect(connection, "message", G_CALLBACK(on_ws_message), got);
    soup_websocket_connection_send_text(connection, "ping 42");
    while (got->len < strlen("ping 42")) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_assert_cmpstr(got->str, ==, "ping 42");
    g_assert_nonnull(strstr(g_ptr_array_index(f->upstream_requests, 0),
                            "websocket Authorization: token " UPSTREAM_TOKEN));
    soup_websocket_connection_close(connection, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
    while (soup_websocket_connection_get_state(connection) != SOUP_WEBSOCKET_STATE_CLOSED) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
}

static double
requests_of(EinsoraMetric *requests, const char *kind, const char *code)
{
    return einsora_metric_get(requests, (const char *const[]){kind, code, NULL});
}

/* Every answer is counted once, by what it was for and its status
 * class, a WebSocket's at its switch; a relay is open from its switch
 * until both sides closed. */
static void
test_metrics(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *uri = g_strdup_printf("ws://w-%s.localhost:%u/ws", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(SoupWebsocketConnection) connection = NULL;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    const char *const notebook[] = {"notebook", NULL};
    EinsoraMetric *requests, *durations, *relays;

    einsora_access_proxy_set_metrics(f->proxy, metrics);
    requests = einsora_metrics_counter(metrics, "einsora_proxy_requests_total", "",
                                       (const char *const[]){"kind", "code", NULL});
    durations = einsora_metrics_histogram(metrics, "einsora_proxy_request_duration_seconds", "",
                                          (const char *const[]){"kind", NULL}, NULL, 0);
    relays = einsora_metrics_gauge(metrics, "einsora_proxy_websocket_relays_open", "", NULL);

    cookie = open_session(f, f->notebook);
    {
        g_autoptr(Answer) echo = get_with_cookie(f, f->notebook, "/echo", cookie);
        g_autoptr(Answer) refused = request(f, "GET", "evil.example", "/echo", NULL, NULL);
        g_assert_cmpuint(echo->status, ==, 200);
        g_assert_cmpuint(refused->status, ==, 421);
    }
    g_assert_cmpfloat(requests_of(requests, "notebook", "2xx"), ==, 2);
    /* libsoup's client asks once more after a 421, on a new connection. */
    g_assert_cmpfloat(requests_of(requests, "other", "4xx"), >=, 1);
    g_assert_cmpfloat(requests_of(requests, "other", "2xx"), ==, 0);
    g_assert_cmpfloat(einsora_metric_get(relays, NULL), ==, 0);

    soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);
    soup_session_websocket_connect_async(f->browser, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         on_ws_connected, &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    connection = soup_session_websocket_connect_finish(f->browser, result, &error);
    g_assert_no_error(error);
    g_assert_cmpfloat(einsora_metric_get(relays, NULL), ==, 1);
    g_assert_cmpfloat(requests_of(requests, "notebook", "1xx"), ==, 1);
    g_assert_cmpfloat(einsora_metric_get(durations, notebook), ==, 3);
    soup_websocket_connection_close(connection, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
    while (einsora_metric_get(relays, NULL) != 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_assert_cmpfloat(requests_of(requests, "notebook", "1xx"), ==, 1);
    g_assert_cmpfloat(requests_of(requests, "notebook", "2xx"), ==, 2);
}

/* A 204 goes out with no Transfer-Encoding (Python's http.client waits
 * for a body that never comes otherwise), and the connection stays. */
static void
test_no_content_framing(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(Answer) empty = get_with_cookie(f, f->notebook, "/nocontent", cookie);
    g_autoptr(Answer) after = get_with_cookie(f, f->notebook, "/echo", cookie);

    g_assert_cmpuint(empty->status, ==, 204);
    g_assert_null(soup_message_headers_get_one(empty->headers, "Transfer-Encoding"));
    g_assert_null(soup_message_headers_get_one(empty->headers, "Content-Length"));
    g_assert_true(empty->body == NULL || *empty->body == '\0');
    g_assert_cmpuint(after->status, ==, 200);
}

static void send_all(GSocket *socket, const char *text);

/* A workload that answers each connection with a scripted reply, as
 * bytes: what libsoup's server never writes. */
typedef struct {
    const char *reply;
    GString *seen; /* the last request head it read */
} RawWorkload;

static gboolean
on_raw_connection(GSocket *listener, GIOCondition condition, gpointer user_data)
{
    RawWorkload *raw = user_data;
    g_autoptr(GSocket) socket = g_socket_accept(listener, NULL, NULL);
    char buffer[4096];

    if (socket == NULL)
        return G_SOURCE_CONTINUE;
    g_socket_set_blocking(socket, TRUE);
    g_string_truncate(raw->seen, 0);
    while (strstr(raw->seen->str, "\r\n\r\n") == NULL) {
        gssize n = g_socket_receive(socket, buffer, sizeof buffer, NULL, NULL);
        if (n <= 0)
            break;
        g_string_append_len(raw->seen, buffer, n);
    }
    if (raw->reply[0] != '\0')
        send_all(socket, raw->reply);
    g_socket_close(socket, NULL);
    return G_SOURCE_CONTINUE;
}

/* What the proxy makes of answers framed every way HTTP/1.1 allows (and
 * of ones it can't read): read by the proxy's own parser of the answer,
 * with the token still taken out. */
static void
test_raw_answers(Fixture *f, gconstpointer data)
{
    static const struct {
        const char *name;
        const char *reply;
        guint status;
        const char *body;
    } cases[] = {
        {"100 Continue, then a body until the close",
         "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"
         "Content-Type: application/octet-stream\r\n\r\nuntil the close",
         200, "until the close"},
        {"chunked, a token across two chunks, a trailer",
         "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
         "3;ext=1\r\nab \r\n14\r\nupstream-token-must-\r\n18\r\nnever-reach-the-browser \r\n"
         "2\r\ncd\r\n0\r\nX-Trailer: 1\r\n\r\n",
         200, "ab  cd"},
        {"a length, a 201", "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\nmade", 201, "made"},
        {"a head that isn't HTTP", "garbage\r\n\r\n", 502, NULL},
        {"closed without an answer", "", 502, NULL},
        {"a malformed chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200,
         ""},
    };
    g_autofree gchar *path = g_build_filename(f->dir, "raw.sock", NULL);
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(path);
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocket) listener =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_autoptr(GSource) source = NULL;
    g_autoptr(GString) seen = g_string_new(NULL);
    RawWorkload raw = {NULL, seen};
    g_autofree gchar *cookie = NULL;

    g_assert_true(g_socket_bind(listener, address, TRUE, &error));
    g_assert_true(g_socket_listen(listener, &error));
    g_socket_set_blocking(listener, FALSE);
    source = g_socket_create_source(listener, G_IO_IN, NULL);
    g_source_set_callback(source, G_SOURCE_FUNC(on_raw_connection), &raw, NULL);
    g_source_attach(source, NULL);
    g_free(f->targets->socket_path);
    f->targets->socket_path = g_strdup(path);
    cookie = open_session(f, f->notebook);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *host = host_of(f, f->notebook);
        const char *headers[] = {"Cookie", cookie, "Accept-Encoding", "gzip", NULL};
        g_autoptr(Answer) answer = NULL;

        g_test_message("%s", cases[i].name);
        raw.reply = cases[i].reply;
        answer = request(f, "GET", host, "/raw", headers, NULL);
        g_assert_cmpuint(answer->status, ==, cases[i].status);
        if (cases[i].body != NULL)
            g_assert_cmpstr(answer->body != NULL ? answer->body : "", ==, cases[i].body);
        /* What went to the workload: its token, a close, no compression. */
        g_assert_true(g_str_has_prefix(seen->str, "GET /raw HTTP/1.1\r\nHost: localhost\r\n"));
        g_assert_nonnull(strstr(seen->str, "\r\nAuthorization: token " UPSTREAM_TOKEN "\r\n"));
        g_assert_nonnull(strstr(seen->str, "\r\nConnection: close\r\n"));
        g_assert_null(strstr(seen->str, "Accept-Encoding"));
        g_assert_null(strstr(seen->str, "einsora_access"));
    }
    g_source_destroy(source);
}

static SoupWebsocketConnection *
connect_websocket(Fixture *f, const char *cookie)
{
    g_autofree gchar *uri = g_strdup_printf("ws://w-%s.localhost:%u/ws", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    SoupWebsocketConnection *connection;

    soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);
    soup_session_websocket_connect_async(f->browser, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         on_ws_connected, &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    connection = soup_session_websocket_connect_finish(f->browser, result, &error);
    g_assert_no_error(error);
    soup_websocket_connection_set_max_incoming_payload_size(connection, 0);
    return connection;
}

static guint64
own_rss_kib(void)
{
    g_autofree gchar *text = NULL;
    const char *line;

    g_assert_true(g_file_get_contents("/proc/self/status", &text, NULL, NULL));
    line = strstr(text, "VmRSS:");
    g_assert_nonnull(line);
    return g_ascii_strtoull(line + strlen("VmRSS:"), NULL, 10);
}

#define WS_LIMIT (64 * 1024)

/* ASan's quarantine keeps freed memory in RSS: the bounds on RSS hold in
 * the plain tree only (what was pushed in is bounded in both). */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KIB(kib) G_MAXUINT64
#else
#define RSS_BOUND_KIB(kib) (kib)
#endif

/* Past the bound, both sides are closed with 1009; under it, relayed. */
static void
test_websocket_message_bound(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(SoupWebsocketConnection) connection = NULL;
    g_autoptr(GString) got = g_string_new(NULL);
    g_autofree guint8 *big = g_malloc0(WS_LIMIT + 1);
    g_autoptr(GBytes) fits = g_bytes_new_static(big, WS_LIMIT);
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    einsora_access_proxy_set_websocket_max_message(f->proxy, WS_LIMIT);
    connection = connect_websocket(f, cookie);
    g_signal_connect(connection, "message", G_CALLBACK(on_ws_message), got);
    soup_websocket_connection_send_message(connection, SOUP_WEBSOCKET_DATA_BINARY, fits);
    while (got->len < WS_LIMIT) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    soup_websocket_connection_send_binary(connection, big, WS_LIMIT + 1);
    while (soup_websocket_connection_get_state(connection) != SOUP_WEBSOCKET_STATE_CLOSED) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_assert_cmpuint(soup_websocket_connection_get_close_code(connection), ==,
                     SOUP_WEBSOCKET_CLOSE_TOO_BIG);
    /* And the workload's side hears the same. */
    {
        SoupWebsocketConnection *upstream = g_object_get_data(G_OBJECT(f->upstream), "connection");
        g_assert_nonnull(upstream);
        while (soup_websocket_connection_get_state(upstream) != SOUP_WEBSOCKET_STATE_CLOSED) {
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_main_context_iteration(NULL, TRUE);
        }
        g_assert_cmpuint(soup_websocket_connection_get_close_code(upstream), ==,
                         SOUP_WEBSOCKET_CLOSE_TOO_BIG);
    }
}

/* A frame that says it carries 256 MiB: the relay closes at its header
 * and holds none of it. The proxy runs in this process: its RSS is ours,
 * measured while 32 MiB of the payload is pushed at it. */
static void
test_websocket_huge_frame(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = open_session(f, f->notebook);
    g_autoptr(SoupWebsocketConnection) connection = connect_websocket(f, cookie);
    GOutputStream *out =
        g_io_stream_get_output_stream(soup_websocket_connection_get_io_stream(connection));
    guint8 header[14] = {0x82, 0x80 | 127, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0};
    g_autofree guint8 *chunk = g_malloc0(64 * 1024);
    guint64 before = own_rss_kib();
    guint64 peak = before;
    gsize pushed = 0;
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    g_assert_true(g_output_stream_write_all(out, header, sizeof header, NULL, NULL, NULL));
    while (pushed < 32 * 1024 * 1024 &&
           soup_websocket_connection_get_state(connection) == SOUP_WEBSOCKET_STATE_OPEN) {
        gssize n = g_pollable_output_stream_write_nonblocking(G_POLLABLE_OUTPUT_STREAM(out), chunk,
                                                              64 * 1024, NULL, NULL);
        if (n > 0)
            pushed += (gsize)n;
        else if (n < 0 && g_get_monotonic_time() > deadline)
            break;
        while (g_main_context_iteration(NULL, FALSE))
            ;
        peak = MAX(peak, own_rss_kib());
    }
    while (soup_websocket_connection_get_state(connection) != SOUP_WEBSOCKET_STATE_CLOSED) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_test_message("a 256 MiB frame: %zu bytes pushed before the close, RSS %" G_GUINT64_FORMAT
                   " KiB -> peak %" G_GUINT64_FORMAT " KiB",
                   pushed, before, peak);
    g_assert_cmpuint(peak - before, <, RSS_BOUND_KIB(16 * 1024));
}

/* A stalled side: a workload that makes its handshake and then reads
 * nothing (or a browser that reads nothing), while the other side sends
 * all it can. The proxy stops reading from the sender instead of
 * buffering: what the sender gets in is bounded by the sockets' own
 * buffers and the tunnel's, and this process (the proxy's) grows by no
 * more than a few MiB. */

static void
iterate_a_while(guint ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;

    while (g_get_monotonic_time() < until) {
        while (g_main_context_iteration(NULL, FALSE))
            ;
        g_usleep(1000);
    }
}

/* Sends all of @text on a blocking socket, the main loop turning. */
static void
send_all(GSocket *socket, const char *text)
{
    gsize sent = 0;

    while (sent < strlen(text)) {
        gssize n = g_socket_send(socket, text + sent, strlen(text) - sent, NULL, NULL);
        g_assert_cmpint(n, >, 0);
        sent += (gsize)n;
    }
}

/* Reads a head (to its blank line) from a non-blocking socket, the main
 * loop turning. */
static gchar *
receive_head(GSocket *socket)
{
    g_autoptr(GString) head = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    char byte;

    while (!g_str_has_suffix(head->str, "\r\n\r\n")) {
        gssize n = g_socket_receive(socket, &byte, 1, NULL, NULL);
        if (n == 1) {
            g_string_append_c(head, byte);
            continue;
        }
        g_assert_cmpint(n, <, 0);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        iterate_a_while(1);
    }
    return g_string_free(g_steal_pointer(&head), FALSE);
}

/* Pushes @frame again and again until @socket takes nothing for 500 ms;
 * returns the bytes it took. */
static gsize
flood(GSocket *socket, const guint8 *frame, gsize length, guint64 *peak_kib)
{
    gsize pushed = 0;
    gsize at = 0;
    gint64 last = g_get_monotonic_time();

    while (g_get_monotonic_time() - last < 500 * 1000 && pushed < 256 * 1024 * 1024) {
        gssize n = g_socket_send(socket, (const gchar *)frame + at, length - at, NULL, NULL);
        if (n > 0) {
            pushed += (gsize)n;
            at = (at + (gsize)n) % length;
            last = g_get_monotonic_time();
        } else {
            iterate_a_while(5);
        }
        while (g_main_context_iteration(NULL, FALSE))
            ;
        *peak_kib = MAX(*peak_kib, own_rss_kib());
    }
    return pushed;
}

static void
test_websocket_stalled_side(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *path = g_build_filename(f->dir, "stalled.sock", NULL);
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(path);
    g_autoptr(GSocket) listener = NULL;
    g_autoptr(GSocket) upstream = NULL;
    g_autoptr(GSocket) browser = NULL;
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) proxy_address =
        g_inet_socket_address_new(loopback, (guint16)einsora_access_proxy_get_port(f->proxy));
    g_autoptr(GError) error = NULL;
    g_autofree gchar *request = NULL;
    g_autofree gchar *seen = NULL;
    g_autofree gchar *answer = NULL;
    /* A masked binary frame of 60 KiB (the mask is zero: the bytes are as
     * they are), and an unmasked one as a server sends. */
    gsize payload = 60 * 1024;
    g_autofree guint8 *masked = g_malloc0(payload + 8);
    g_autofree guint8 *plain = g_malloc0(payload + 4);
    guint64 before, peak;
    gsize pushed;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    masked[0] = 0x82;
    masked[1] = 0x80 | 126;
    masked[2] = (guint8)(payload >> 8);
    masked[3] = (guint8)(payload & 0xff);
    plain[0] = 0x82;
    plain[1] = 126;
    plain[2] = (guint8)(payload >> 8);
    plain[3] = (guint8)(payload & 0xff);

    listener =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_true(g_socket_bind(listener, address, TRUE, &error));
    g_assert_true(g_socket_listen(listener, &error));
    g_socket_set_blocking(listener, FALSE);
    g_free(f->targets->socket_path);
    f->targets->socket_path = g_strdup(path);
    /* Opened once the workload serves there: a session holds its way in. */
    cookie = open_session(f, f->notebook);

    browser =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
    g_assert_true(g_socket_connect(browser, proxy_address, NULL, &error));
    request = g_strdup_printf("GET /ws HTTP/1.1\r\nHost: w-%s.localhost:%u\r\nCookie: %s\r\n"
                              "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Version: 13\r\n\r\n",
                              f->notebook, einsora_access_proxy_get_port(f->proxy), cookie);
    send_all(browser, request);
    g_socket_set_blocking(browser, FALSE);
    while ((upstream = g_socket_accept(listener, NULL, NULL)) == NULL) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        iterate_a_while(1);
    }
    g_socket_set_blocking(upstream, FALSE);
    seen = receive_head(upstream);
    g_assert_nonnull(strstr(seen, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"));
    g_assert_nonnull(strstr(seen, "Authorization: token " UPSTREAM_TOKEN "\r\n"));
    g_assert_null(strstr(seen, "Sec-WebSocket-Extensions"));
    g_socket_set_blocking(upstream, TRUE);
    send_all(upstream,
             "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
             "\r\n");
    g_socket_set_blocking(upstream, FALSE);
    answer = receive_head(browser);
    g_assert_true(g_str_has_prefix(answer, "HTTP/1.1 101 "));
    g_assert_nonnull(strstr(answer, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));

    /* The browser floods a workload that reads nothing. */
    before = peak = own_rss_kib();
    pushed = flood(browser, masked, payload + 8, &peak);
    g_test_message("browser to a stalled workload: %zu KiB taken before the proxy stopped "
                   "reading; RSS %" G_GUINT64_FORMAT " KiB -> peak %" G_GUINT64_FORMAT " KiB",
                   pushed / 1024, before, peak);
    g_assert_cmpuint(pushed, <, 64 * 1024 * 1024);
    g_assert_cmpuint(peak - before, <, RSS_BOUND_KIB(8 * 1024));

    /* The workload floods a browser that reads nothing. */
    before = peak = own_rss_kib();
    pushed = flood(upstream, plain, payload + 4, &peak);
    g_test_message("workload to a stalled browser: %zu KiB taken; RSS %" G_GUINT64_FORMAT
                   " KiB -> peak %" G_GUINT64_FORMAT " KiB",
                   pushed / 1024, before, peak);
    g_assert_cmpuint(pushed, <, 64 * 1024 * 1024);
    g_assert_cmpuint(peak - before, <, RSS_BOUND_KIB(8 * 1024));
}

static guint
own_fds(void)
{
    g_autoptr(GDir) dir = g_dir_open("/proc/self/fd", 0, NULL);
    guint n = 0;

    g_assert_nonnull(dir);
    while (g_dir_read_name(dir) != NULL)
        n++;
    return n;
}

/* A browser that resets its connection while the workload is still
 * answering its handshake: the proxy lets go of the workload's socket
 * (it held it, and the handshake with the workload's token, for good)
 * and of the browser's connection (its message was left paused). */
static void
test_websocket_browser_resets_before_101(Fixture *f, gconstpointer data)
{
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *path = g_build_filename(f->dir, "late.sock", NULL);
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(path);
    g_autoptr(GSocket) listener = NULL;
    g_autoptr(GSocket) upstream = NULL;
    g_autoptr(GSocket) browser = NULL;
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) proxy_address =
        g_inet_socket_address_new(loopback, (guint16)einsora_access_proxy_get_port(f->proxy));
    g_autoptr(GError) error = NULL;
    g_autofree gchar *request = NULL;
    g_autofree gchar *seen = NULL;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    char byte;
    gssize n;
    guint before;

    listener =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_true(g_socket_bind(listener, address, TRUE, &error));
    g_assert_true(g_socket_listen(listener, &error));
    g_socket_set_blocking(listener, FALSE);
    g_free(f->targets->socket_path);
    f->targets->socket_path = g_strdup(path);
    /* Opened once the workload serves there: a session holds its way in. */
    cookie = open_session(f, f->notebook);
    iterate_a_while(50);
    before = own_fds();
    browser =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
    g_assert_true(g_socket_connect(browser, proxy_address, NULL, &error));
    request = g_strdup_printf("GET /ws HTTP/1.1\r\nHost: w-%s.localhost:%u\r\nCookie: %s\r\n"
                              "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                              "Sec-WebSocket-Version: 13\r\n\r\n",
                              f->notebook, einsora_access_proxy_get_port(f->proxy), cookie);
    send_all(browser, request);
    while ((upstream = g_socket_accept(listener, NULL, NULL)) == NULL) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        iterate_a_while(1);
    }
    g_socket_set_blocking(upstream, FALSE);
    seen = receive_head(upstream);
    /* A reset, not a close: SO_LINGER with no time. */
    {
        struct linger reset = {1, 0};
        g_assert_cmpint(
            setsockopt(g_socket_get_fd(browser), SOL_SOCKET, SO_LINGER, &reset, sizeof reset), ==,
            0);
        g_clear_object(&browser);
    }
    iterate_a_while(100);
    /* The answer comes late (the proxy may have let go already, seeing
     * the reset: then this send fails, which is as good). */
    {
        const char *answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        g_socket_send(upstream, answer, strlen(answer), NULL, NULL);
    }
    for (;;) {
        g_autoptr(GError) receive_error = NULL;
        n = g_socket_receive(upstream, &byte, 1, NULL, &receive_error);
        if (n == 0 ||
            (n < 0 && !g_error_matches(receive_error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)))
            break; /* the proxy let go of it */
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        iterate_a_while(5);
    }
    /* Of this test's sockets only the workload's end is left open. */
    g_clear_object(&upstream);
    iterate_a_while(300);
    g_assert_cmpuint(own_fds(), <=, before);
}

static void
test_websocket_refused_without_session(Fixture *f, gconstpointer data)
{
    g_autofree gchar *uri = g_strdup_printf("ws://w-%s.localhost:%u/ws", f->notebook,
                                            einsora_access_proxy_get_port(f->proxy));
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(SoupWebsocketConnection) connection = NULL;

    soup_session_websocket_connect_async(f->browser, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         on_ws_connected, &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    connection = soup_session_websocket_connect_finish(f->browser, result, &error);
    g_assert_null(connection);
    g_assert_nonnull(error);
    g_assert_cmpuint(soup_message_get_status(message), ==, 403);
    g_assert_cmpuint(f->upstream_requests->len, ==, 0);
}

static void
test_listen_loopback_only(Fixture *f, gconstpointer data)
{
    const char *refused[] = {"0.0.0.0:0", "192.0.2.1:8090", "[::]:0", "localhost:8090", NULL};

    for (guint i = 0; refused[i] != NULL; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraAccessProxy) proxy = einsora_access_proxy_new(
            f->service, f->auth, EINSORA_WORKLOAD_ACCESS(f->targets), clock_now, &f->clock);
        g_assert_false(einsora_access_proxy_listen(proxy, refused[i], &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/access/host/parse", test_host_parse);
    g_test_add_func("/access/cookie/parse", test_cookie_parse);
    g_test_add_func("/access/ticket/parse", test_ticket_parse);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/access/open-and-forward", test_open_and_forward);
    ADD("/access/upstream-cannot-set-our-cookie", test_upstream_cannot_set_our_cookie);
    ADD("/access/token-scrubbed/with-length", test_token_scrubbed);
    g_test_add("/access/token-scrubbed/streamed", Fixture, "chunked", fixture_set_up,
               test_token_scrubbed, fixture_tear_down);
    ADD("/access/refused/ticket-used-twice", test_ticket_once);
    ADD("/access/refused/ticket-expired", test_ticket_expired);
    ADD("/access/refused/ticket-at-another-host", test_ticket_other_host);
    ADD("/access/refused/ticket-malformed", test_ticket_malformed);
    ADD("/access/refused/not-workload-hosts", test_not_workload_hosts);
    ADD("/access/refused/other-origins", test_other_origins_refused);
    ADD("/access/refused/cookie-of-another-workload", test_cookie_of_another_workload);
    ADD("/access/refused/session-of-a-stopped-server", test_session_ends_with_its_server);
    ADD("/access/refused/session-expired", test_session_expires);
    ADD("/access/session/holds-its-way-in", test_session_holds_its_way_in);
    ADD("/access/stopped-workload-page", test_stopped_workload_page);
    ADD("/access/stream/big-body-and-post", test_big_body_and_post);
    ADD("/access/stream/client-gone-cancels-upstream", test_client_gone_cancels_upstream);
    ADD("/access/stream/big-upload", test_big_upload);
    ADD("/access/redirect-passed-on", test_redirect_passed_on);
    ADD("/access/refused/upload", test_refused_upload);
    ADD("/access/websocket/relayed", test_websocket);
    ADD("/access/metrics/requests-and-relays", test_metrics);
    ADD("/access/websocket/message-bound", test_websocket_message_bound);
    ADD("/access/websocket/huge-frame", test_websocket_huge_frame);
    ADD("/access/websocket/stalled-side", test_websocket_stalled_side);
    ADD("/access/websocket/browser-resets-before-101", test_websocket_browser_resets_before_101);
    ADD("/access/no-content-framing", test_no_content_framing);
    ADD("/access/raw-answers", test_raw_answers);
    ADD("/access/websocket/refused-without-session", test_websocket_refused_without_session);
    ADD("/access/listen/loopback-only", test_listen_loopback_only);
#undef ADD
    return g_test_run();
}
