/* The access proxy serving endpoints (docs/adr/0034), with a real SQLite
 * store, service and auth (real API tokens) and a stand-in worker: a
 * SoupServer on a Unix socket that checks the worker's key, records what
 * reached it and answers like llama-server, plain and as SSE in chunks
 * with pauses between them. Every refusal, what crosses the proxy in
 * each direction, and that what is refused never reaches the worker. */
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <string.h>
#include <sys/socket.h>

#include "einsora-access-proxy.h"
#include "einsora-endpoint-routes.h"
#include "einsora-error.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-models.h"
#include "einsora-uuid.h"

#define MACHINE "0190b5d2-7c4e-7abc-8def-0000000000aa"
#define MACHINE_B "0190b5d2-7c4e-7abc-8def-0000000000bb"
#define START_US G_GINT64_CONSTANT(1764406000000000)
#define WORKER_KEY "worker-key-must-never-reach-a-client-0123456789"
#define SSE_CHUNKS 4
#define SSE_PAUSE_MS 150

typedef struct {
    gint64 now_us;
} Clock;

static gint64
clock_now(gpointer user_data)
{
    return ((Clock *)user_data)->now_us;
}

/* The backend's way in: for the running workloads the test lists (with
 * their tenant), the stand-in's socket and key. */
#define TEST_TYPE_TARGETS (test_targets_get_type())
G_DECLARE_FINAL_TYPE(TestTargets, test_targets, TEST, TARGETS, GObject)

struct _TestTargets {
    GObject parent_instance;
    gchar *socket_path;
    GHashTable *running; /* workload ID -> tenant ID */
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
    self->running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static gboolean
test_targets_lookup(EinsoraWorkloadAccess *access, const char *tenant_id, const char *workload_id,
                    gint64 *attempt, gchar **socket_path, gchar **token, GError **error)
{
    TestTargets *self = TEST_TARGETS(access);
    const char *owner = g_hash_table_lookup(self->running, workload_id);

    if (owner == NULL || g_strcmp0(owner, tenant_id) != 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "not running");
        return FALSE;
    }
    *attempt = 1;
    *socket_path = g_strdup(self->socket_path);
    *token = g_strdup(WORKER_KEY);
    return TRUE;
}

static void
test_targets_iface_init(EinsoraWorkloadAccessInterface *iface)
{
    iface->lookup = test_targets_lookup;
}

/* What reached the stand-in worker. */
typedef struct {
    gchar *method;
    gchar *path;
    gchar *headers; /* "Name: value\n" each */
    gchar *body;
} Seen;

static void
seen_free(Seen *seen)
{
    g_free(seen->method);
    g_free(seen->path);
    g_free(seen->headers);
    g_free(seen->body);
    g_free(seen);
}

typedef struct {
    gchar *dir;
    Clock clock;
    EinsoraCatalog *catalog;
    EinsoraSqliteStore *store;
    EinsoraService *service;
    EinsoraAuth *auth;
    EinsoraActor *alice; /* tenant acme */
    EinsoraActor *gus;   /* tenant globex */
    gchar *alice_token;
    gchar *gus_token;
    TestTargets *targets;
    EinsoraAccessProxy *proxy;
    SoupServer *worker;
    SoupSession *client;
    gchar *endpoint; /* acme's running endpoint "tiny", placed on a bigger class */
    gchar *notebook; /* acme's running notebook */
    gchar *stopped;  /* acme's stopped endpoint "gone" */
    gchar *theirs;   /* globex's running endpoint "tiny" */
    GPtrArray *seen; /* Seen */
    /* The stream the worker is sending. */
    SoupServerMessage *streaming;
    guint stream_timer;
    guint chunks_sent;
    gboolean worker_saw_close;
    gboolean stream_finished;
} Fixture;

/* The stand-in worker. */

static gboolean
on_stream_socket(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    Fixture *f = user_data;
    char byte;

    if ((condition & (G_IO_HUP | G_IO_ERR)) != 0 ||
        recv(g_socket_get_fd(socket), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
        f->worker_saw_close = TRUE;
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

static gboolean
on_stream_tick(gpointer user_data)
{
    Fixture *f = user_data;
    SoupMessageBody *body = soup_server_message_get_response_body(f->streaming);
    g_autofree gchar *event = NULL;

    if (f->chunks_sent < SSE_CHUNKS - 1)
        event = g_strdup_printf("data: {\"choices\":[{\"delta\":{\"content\":\"piece %u\"}}]}\n\n",
                                f->chunks_sent);
    else
        event = g_strdup("data: [DONE]\n\n");
    soup_message_body_append(body, SOUP_MEMORY_COPY, event, strlen(event));
    f->chunks_sent++;
    if (f->chunks_sent == SSE_CHUNKS) {
        soup_message_body_complete(body);
        f->stream_timer = 0;
    }
    soup_server_message_unpause(f->streaming);
    return f->stream_timer != 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
on_stream_finished(SoupServerMessage *msg, gpointer user_data)
{
    Fixture *f = user_data;

    g_clear_handle_id(&f->stream_timer, g_source_remove);
    f->stream_finished = TRUE;
    f->streaming = NULL;
}

static void
start_stream(Fixture *f, SoupServerMessage *msg)
{
    SoupMessageHeaders *answer = soup_server_message_get_response_headers(msg);
    GSource *watch =
        g_socket_create_source(soup_server_message_get_socket(msg), G_IO_IN | G_IO_HUP, NULL);

    g_source_set_callback(watch, G_SOURCE_FUNC(on_stream_socket), f, NULL);
    g_source_attach(watch, NULL);
    g_source_unref(watch);
    soup_message_headers_set_encoding(answer, SOUP_ENCODING_CHUNKED);
    soup_message_headers_set_content_type(answer, "text/event-stream", NULL);
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    f->streaming = msg;
    g_signal_connect(msg, "finished", G_CALLBACK(on_stream_finished), f);
    soup_server_message_pause(msg);
    f->stream_timer = g_timeout_add(SSE_PAUSE_MS, on_stream_tick, f);
}

static void
on_worker(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
          gpointer user_data)
{
    Fixture *f = user_data;
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    SoupMessageHeaders *answer = soup_server_message_get_response_headers(msg);
    g_autoptr(GString) text = g_string_new(NULL);
    g_autoptr(GBytes) body = soup_message_body_flatten(soup_server_message_get_request_body(msg));
    SoupMessageHeadersIter iter;
    const char *name, *value;
    Seen *seen = g_new0(Seen, 1);
    const char *reply;

    soup_message_headers_iter_init(&iter, headers);
    while (soup_message_headers_iter_next(&iter, &name, &value))
        g_string_append_printf(text, "%s: %s\n", name, value);
    seen->method = g_strdup(soup_server_message_get_method(msg));
    seen->path = g_strdup(path);
    seen->headers = g_strdup(text->str);
    seen->body = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
    g_ptr_array_add(f->seen, seen);

    /* llama-server's --api-key. */
    if (g_strcmp0(soup_message_headers_get_one(headers, "Authorization"), "Bearer " WORKER_KEY) !=
        0) {
        reply = "{\"error\":{\"message\":\"Invalid API Key\",\"type\":\"authentication_error\"}}";
        soup_server_message_set_status(msg, SOUP_STATUS_UNAUTHORIZED, NULL);
        soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_STATIC, reply,
                                         strlen(reply));
        return;
    }
    /* A worker that tries to leak its key, and its own request ID: the
     * proxy's answer has neither. */
    soup_message_headers_append(answer, "X-Worker-Key", WORKER_KEY);
    soup_message_headers_append(answer, "X-Request-ID", "the-workers-own");
    if (g_str_equal(path, "/v1/models"))
        reply = "{\"object\":\"list\",\"data\":[{\"id\":\"tiny.gguf\",\"object\":\"model\"}]}";
    else if (g_str_equal(path, "/v1/chat/completions") && strstr(seen->body, "\"stream\": true"))
        return start_stream(f, msg);
    else if (g_str_equal(path, "/v1/chat/completions"))
        reply = "{\"object\":\"chat.completion\",\"choices\":[{\"message\":{\"role\":"
                "\"assistant\",\"content\":\"hi, my key is " WORKER_KEY "\"}}]}";
    else if (g_str_equal(path, "/v1/completions"))
        reply = "{\"object\":\"text_completion\",\"choices\":[{\"text\":\"hello\"}]}";
    else if (g_str_equal(path, "/v1/embeddings"))
        reply = "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"embedding\":[0.5]}]}";
    else
        reply = "{\"secret\":\"a route the proxy must not reach\"}";
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_STATIC, reply,
                                     strlen(reply));
}

/* The service's side. */

static void
move(Fixture *f, const EinsoraActor *owner, const char *id, EinsoraWorkloadState to,
     const EinsoraPlacement *placement)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_get_workload(f->service, owner->tenant_id, id, TRUE, &error);

    g_assert_no_error(error);
    f->clock.now_us += 1000;
    einsora_service_transition(f->service, workload, to, "moved by a test", placement, &error);
    g_assert_no_error(error);
}

/* A workload of @owner's, running on the machine (on @placed_class). */
static gchar *
running(Fixture *f, const EinsoraActor *owner, const char *kind, const char *name,
        const char *placed_class)
{
    g_autoptr(GError) error = NULL;
    gboolean endpoint = g_str_equal(kind, "endpoint");
    EinsoraWorkloadRequest request = {kind, name, "cpu-2c-4g", endpoint ? "llama-cpp" : "jupyter",
                                      NULL, NULL, NULL,        endpoint ? "tiny" : NULL};
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, owner, &request, &error);
    EinsoraPlacement placement = {placed_class, owner == f->gus ? MACHINE_B : MACHINE, "sim"};

    g_assert_no_error(error);
    move(f, owner, workload->id, EINSORA_WORKLOAD_STATE_PROVISIONING, &placement);
    move(f, owner, workload->id, EINSORA_WORKLOAD_STATE_RUNNING, NULL);
    g_hash_table_insert(f->targets->running, g_strdup(workload->id), g_strdup(owner->tenant_id));
    return g_strdup(workload->id);
}

static const char test_catalog[] =
    "{\"version\": 1, \"regions\": [{\"name\": \"local\"}],"
    " \"drivers\": [{\"name\": \"sim\", \"kinds\": [\"notebook\", \"endpoint\"],"
    "   \"accelerators\": [\"cpu\"]}],"
    " \"classes\": [{\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096,"
    "   \"accelerator\": \"cpu\"}, {\"name\": \"cpu-4c-8g\", \"cpus\": 4, \"memory_mib\": 8192,"
    "   \"accelerator\": \"cpu\"}],"
    " \"images\": [{\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\"]}}},"
    "  {\"name\": \"llama-cpp\", \"kinds\": [\"endpoint\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"llama-server\", \"driver_refs\": [\"sim\"]}}}]}";

static EinsoraActor *
account(Fixture *f, const char *tenant, const char *email, gchar **token)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) user = einsora_auth_create_account(
        f->auth, tenant, email, NULL, EINSORA_USER_ROLE_OWNER, FALSE, &error);
    EinsoraActor *actor;
    g_autoptr(EinsoraApiToken) record = NULL;

    g_assert_no_error(error);
    actor = einsora_actor_new(user->tenant_id, user->id, user->email, "test");
    record = einsora_auth_create_token(f->auth, actor, "laptop", token, &error);
    g_assert_no_error(error);
    return actor;
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GSocket) socket = NULL;

    f->dir = einsora_test_dir_new();
    f->clock.now_us = START_US;
    f->seen = g_ptr_array_new_with_free_func((GDestroyNotify)seen_free);
    path = g_build_filename(f->dir, "einsora.db", NULL);
    f->catalog = einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_assert_no_error(error);
    f->store = einsora_sqlite_store_open(path, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(f->store, START_US, &error));
    einsora_sqlite_store_set_clock(f->store, clock_now, &f->clock);
    f->auth = einsora_auth_new(EINSORA_STORE(f->store), clock_now, &f->clock);
    f->alice = account(f, "acme", "alice@acme.example", &f->alice_token);
    f->gus = account(f, "globex", "gus@globex.example", &f->gus_token);
    machine->id = g_strdup(MACHINE);
    machine->tenant_id = g_strdup(f->alice->tenant_id);
    machine->name = g_strdup("box");
    machine->region = g_strdup("local");
    machine->os = g_strdup("linux");
    machine->cpus = 16;
    machine->memory_mib = 65536;
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = g_strdup("2025-11-29T08:46:40.000000Z");
    g_assert_true(einsora_store_insert_machine(EINSORA_STORE(f->store), machine, &error));
    /* Globex's own machine. */
    g_free(machine->id);
    machine->id = g_strdup(MACHINE_B);
    g_free(machine->tenant_id);
    machine->tenant_id = g_strdup(f->gus->tenant_id);
    g_assert_true(einsora_store_insert_machine(EINSORA_STORE(f->store), machine, &error));
    g_assert_no_error(error);
    f->service = einsora_service_new(EINSORA_STORE(f->store), f->catalog, clock_now, &f->clock);
    {
        g_autoptr(EinsoraModelStore) models = einsora_test_model_store_new(f->dir, "tiny");
        einsora_service_set_model_store(f->service, models, f->gus->tenant_id);
    }

    f->targets = g_object_new(TEST_TYPE_TARGETS, NULL);
    f->targets->socket_path = g_build_filename(f->dir, "worker.sock", NULL);
    f->worker = soup_server_new(NULL, NULL);
    soup_server_add_handler(f->worker, NULL, on_worker, f, NULL);
    address = g_unix_socket_address_new(f->targets->socket_path);
    socket =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &error);
    g_assert_true(g_socket_bind(socket, address, TRUE, &error));
    g_assert_true(g_socket_listen(socket, &error));
    g_assert_true(soup_server_listen_socket(f->worker, socket, 0, &error));
    g_assert_no_error(error);

    f->proxy = einsora_access_proxy_new(f->service, f->auth, EINSORA_WORKLOAD_ACCESS(f->targets),
                                        clock_now, &f->clock);
    g_assert_true(einsora_access_proxy_listen(f->proxy, "127.0.0.1:0", &error));
    g_assert_no_error(error);
    f->client = soup_session_new_with_options("timeout", 30, NULL);

    /* Placed on a bigger class than asked for: a fallback. */
    f->endpoint = running(f, f->alice, "endpoint", "tiny", "cpu-4c-8g");
    f->notebook = running(f, f->alice, "notebook", "nb", "cpu-2c-4g");
    f->stopped = running(f, f->alice, "endpoint", "gone", "cpu-2c-4g");
    move(f, f->alice, f->stopped, EINSORA_WORKLOAD_STATE_STOPPING, NULL);
    move(f, f->alice, f->stopped, EINSORA_WORKLOAD_STATE_STOPPED, NULL);
    f->theirs = running(f, f->gus, "endpoint", "tiny", "cpu-2c-4g");
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_clear_handle_id(&f->stream_timer, g_source_remove);
    g_clear_object(&f->client);
    g_clear_object(&f->proxy);
    soup_server_disconnect(f->worker);
    g_clear_object(&f->worker);
    g_clear_object(&f->targets);
    g_clear_object(&f->service);
    g_clear_object(&f->auth);
    g_clear_object(&f->store);
    g_clear_object(&f->catalog);
    einsora_actor_free(f->alice);
    einsora_actor_free(f->gus);
    g_free(f->alice_token);
    g_free(f->gus_token);
    g_free(f->endpoint);
    g_free(f->notebook);
    g_free(f->stopped);
    g_free(f->theirs);
    g_ptr_array_unref(f->seen);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
}

/* The client's side. */

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

/* @token: the API token to send (NULL: none); @headers: NULL-terminated
 * name, value pairs; @body: sent as @type. */
static Answer *
call(Fixture *f, const char *method, const char *path, const char *token,
     const char *const *headers, const char *type, const char *body)
{
    g_autofree gchar *uri =
        g_strdup_printf("http://127.0.0.1:%u%s", einsora_access_proxy_get_port(f->proxy), path);
    g_autoptr(SoupMessage) message = soup_message_new(method, uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(GError) error = NULL;
    Answer *answer = g_new0(Answer, 1);

    g_assert_nonnull(message);
    if (token != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("Bearer %s", token);
        soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                     authorization);
    }
    for (guint i = 0; headers != NULL && headers[i] != NULL; i += 2)
        soup_message_headers_replace(soup_message_get_request_headers(message), headers[i],
                                     headers[i + 1]);
    if (body != NULL) {
        g_autoptr(GBytes) content = g_bytes_new(body, strlen(body));
        soup_message_set_request_body_from_bytes(message, type, content);
    }
    soup_session_send_and_read_async(f->client, message, G_PRIORITY_DEFAULT, NULL, on_answered,
                                     &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    bytes = soup_session_send_and_read_finish(f->client, result, &error);
    g_assert_no_error(error);
    answer->status = soup_message_get_status(message);
    answer->body = g_strndup(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
    answer->headers = soup_message_headers_ref(soup_message_get_response_headers(message));
    return answer;
}

static gchar *
base(Fixture *f, const char *id, const char *route)
{
    return g_strdup_printf("/endpoints/%s/v1%s", id, route);
}

/* An answer in OpenAI's error shape with @code, and never the key. */
static void
assert_error(const Answer *answer, guint status, const char *code)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    JsonObject *inner;

    g_assert_cmpuint(answer->status, ==, status);
    g_assert_cmpstr(soup_message_headers_get_content_type(answer->headers, NULL), ==,
                    "application/json");
    g_assert_true(json_parser_load_from_data(parser, answer->body, -1, &error));
    g_assert_no_error(error);
    inner =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(parser)), "error");
    g_assert_nonnull(inner);
    g_assert_nonnull(json_object_get_string_member(inner, "message"));
    g_assert_nonnull(json_object_get_string_member(inner, "type"));
    g_assert_cmpstr(json_object_get_string_member(inner, "code"), ==, code);
    g_assert_nonnull(soup_message_headers_get_one(answer->headers, "X-Request-ID"));
}

/* Neither the body nor any header holds the worker's key. */
static void
assert_no_key(const Answer *answer)
{
    SoupMessageHeadersIter iter;
    const char *name, *value;

    g_assert_null(strstr(answer->body, WORKER_KEY));
    soup_message_headers_iter_init(&iter, answer->headers);
    while (soup_message_headers_iter_next(&iter, &name, &value))
        g_assert_null(strstr(value, WORKER_KEY));
}

static const Seen *
last_seen(Fixture *f)
{
    g_assert_cmpuint(f->seen->len, >, 0);
    return f->seen->pdata[f->seen->len - 1];
}

/* Each inference route reaches the worker with its key for the client's
 * token, the request ID, no cookie; the answer says where it ran. */
static void
test_routes_forwarded(Fixture *f, gconstpointer data)
{
    static const struct {
        const char *method;
        const char *route;
        const char *body;
        const char *expect;
    } routes[] = {
        {"GET", "/models", NULL, "tiny.gguf"},
        {"POST", "/completions", "{\"prompt\": \"hi\"}", "text_completion"},
        {"POST", "/chat/completions", "{\"messages\": []}", "chat.completion"},
        {"POST", "/embeddings", "{\"input\": \"hi\"}", "embedding"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(routes); i++) {
        g_autofree gchar *path = base(f, f->endpoint, routes[i].route);
        g_autofree gchar *route = g_strdup_printf("/v1%s", routes[i].route);
        const char *headers[] = {"Cookie", "einsora_access=x; other=y", "X-Request-ID",
                                 "client-req.42", NULL};
        g_autoptr(Answer) answer = call(f, routes[i].method, path, f->alice_token, headers,
                                        "application/json", routes[i].body);
        const Seen *seen;

        g_assert_cmpuint(answer->status, ==, 200);
        g_assert_nonnull(strstr(answer->body, routes[i].expect));
        g_assert_cmpuint(f->seen->len, ==, i + 1);
        seen = last_seen(f);
        g_assert_cmpstr(seen->method, ==, routes[i].method);
        g_assert_cmpstr(seen->path, ==, route);
        g_assert_cmpstr(seen->body, ==, routes[i].body != NULL ? routes[i].body : "");
        g_assert_nonnull(strstr(seen->headers, "Authorization: Bearer " WORKER_KEY "\n"));
        g_assert_null(strstr(seen->headers, f->alice_token));
        g_assert_null(strstr(seen->headers, "Cookie"));
        g_assert_nonnull(strstr(seen->headers, "X-Request-ID: client-req.42\n"));
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Request-ID"), ==,
                        "client-req.42");
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Einsora-Region"), ==,
                        "local");
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Einsora-Class"), ==,
                        "cpu-4c-8g");
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Einsora-Fallback"), ==,
                        "true");
        assert_no_key(answer);
    }
}

/* A worker's answer holding its key (in its body and a header) reaches
 * the client without it; a fresh request ID when the client sent none
 * (or one that could forge a log line). */
static void
test_key_never_shown(Fixture *f, gconstpointer data)
{
    g_autofree gchar *path = base(f, f->endpoint, "/chat/completions");
    const char *bad_id[] = {"X-Request-ID", "has spaces\tand tabs", NULL};
    g_autoptr(Answer) answer =
        call(f, "POST", path, f->alice_token, bad_id, "application/json",
             "{\"messages\": [{\"role\": \"user\", \"content\": \"key?\"}]}");
    const char *id = soup_message_headers_get_one(answer->headers, "X-Request-ID");
    g_autofree gchar *sent = NULL;

    g_assert_cmpuint(answer->status, ==, 200);
    g_assert_nonnull(strstr(answer->body, "hi, my key is "));
    assert_no_key(answer);
    g_assert_true(einsora_uuid_is_valid(id));
    sent = g_strdup_printf("X-Request-ID: %s\n", id);
    g_assert_nonnull(strstr(last_seen(f)->headers, sent));
}

/* Only the inference routes: anything else is the proxy's 404, and the
 * worker sees nothing. */
static void
test_other_routes_refused(Fixture *f, gconstpointer data)
{
    static const char *const refused[][2] = {
        {"GET", "/slots"},     {"GET", "/metrics"},
        {"POST", "/models"},   {"GET", "/chat/completions"},
        {"GET", ""},           {"GET", "/props"},
        {"DELETE", "/models"}, {"POST", "/chat/completions/x"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autofree gchar *path = base(f, f->endpoint, refused[i][1]);
        g_autoptr(Answer) answer =
            call(f, refused[i][0], path, f->alice_token, NULL, "application/json",
                 g_str_equal(refused[i][0], "POST") ? "{}" : NULL);

        assert_error(answer, 404, "unknown_url");
    }
    {
        g_autoptr(Answer) answer = call(f, "GET", "/v1/slots", f->alice_token, NULL, NULL, NULL);
        assert_error(answer, 404, "unknown_url");
    }
    g_assert_cmpuint(f->seen->len, ==, 0);
}

/* No token, a cookie alone, a wrong one: 401 with WWW-Authenticate,
 * whatever the route; the worker sees nothing. */
static void
test_unauthenticated(Fixture *f, gconstpointer data)
{
    g_autofree gchar *models = base(f, f->endpoint, "/models");
    g_autofree gchar *slots = base(f, f->endpoint, "/slots");
    const char *cookie[] = {"Cookie", "einsora_access=eas_abc; ses=ses_abc", NULL};
    const char *basic[] = {"Authorization", "Basic YWxpY2U6cHc=", NULL};
    struct {
        const char *path;
        const char *token;
        const char *const *headers;
    } cases[] = {
        {models, NULL, NULL},
        {models, NULL, cookie},
        {models, "tsk_not-a-real-token-at-all-nope", NULL},
        {models, NULL, basic},
        {slots, NULL, NULL},
        {"/v1/models", NULL, cookie},
        {"/v1/models", "", NULL},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Answer) answer =
            call(f, "GET", cases[i].path, cases[i].token, cases[i].headers, NULL, NULL);

        g_assert_cmpuint(answer->status, ==, 401);
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "WWW-Authenticate"), ==,
                        "Bearer");
        g_assert_nonnull(strstr(answer->body, "\"error\""));
        g_assert_nonnull(soup_message_headers_get_one(answer->headers, "X-Request-ID"));
    }
    g_assert_cmpuint(f->seen->len, ==, 0);
}

/* Another tenant's endpoint, a notebook, a stopped endpoint, an unknown
 * ID: the same 404, and the worker sees nothing. */
static void
test_not_found_is_one_answer(Fixture *f, gconstpointer data)
{
    g_autofree gchar *unknown = einsora_uuid_v7_new(START_US / 1000);
    const char *const ids[] = {f->theirs, f->notebook, f->stopped, unknown};
    g_autofree gchar *first = NULL;

    for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
        g_autofree gchar *path = base(f, ids[i], "/chat/completions");
        g_autoptr(Answer) answer =
            call(f, "POST", path, f->alice_token, NULL, "application/json", "{}");
        g_autofree gchar *upper = g_ascii_strup(ids[i], -1);
        g_autofree gchar *upper_path = base(f, upper, "/models");
        g_autoptr(Answer) again = call(f, "GET", upper_path, f->alice_token, NULL, NULL, NULL);

        assert_error(answer, 404, "endpoint_not_found");
        assert_error(again, 404, "endpoint_not_found");
        if (first == NULL)
            first = g_strdup(answer->body);
        g_assert_cmpstr(answer->body, ==, first);
        g_assert_null(soup_message_headers_get_one(answer->headers, "X-Einsora-Class"));
    }
    /* And Gus reaches his own, not Alice's. */
    {
        g_autofree gchar *alices = base(f, f->endpoint, "/models");
        g_autofree gchar *his = base(f, f->theirs, "/models");
        g_autoptr(Answer) refused = call(f, "GET", alices, f->gus_token, NULL, NULL, NULL);
        g_autoptr(Answer) served = NULL;

        g_assert_cmpuint(f->seen->len, ==, 0);
        served = call(f, "GET", his, f->gus_token, NULL, NULL, NULL);
        assert_error(refused, 404, "endpoint_not_found");
        g_assert_cmpuint(served->status, ==, 200);
        g_assert_cmpstr(soup_message_headers_get_one(served->headers, "X-Einsora-Fallback"), ==,
                        "false");
        g_assert_cmpstr(soup_message_headers_get_one(served->headers, "X-Einsora-Class"), ==,
                        "cpu-2c-4g");
        g_assert_cmpuint(f->seen->len, ==, 1);
    }
}

/* Bad bodies never reach the worker. */
static void
test_bad_input_refused(Fixture *f, gconstpointer data)
{
    g_autofree gchar *path = base(f, f->endpoint, "/chat/completions");
    g_autofree gchar *big = g_malloc(EINSORA_ENDPOINT_MAX_BODY_BYTES + 2);
    const char *form[] = {"Content-Type", "application/x-www-form-urlencoded", NULL};

    memset(big, ' ', EINSORA_ENDPOINT_MAX_BODY_BYTES + 1);
    big[0] = '{';
    big[EINSORA_ENDPOINT_MAX_BODY_BYTES] = '}';
    big[EINSORA_ENDPOINT_MAX_BODY_BYTES + 1] = '\0';
    {
        g_autoptr(Answer) answer =
            call(f, "POST", path, f->alice_token, NULL, "application/json", "{\"messages\": [");
        assert_error(answer, 400, "invalid_json");
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Einsora-Class"), ==,
                        "cpu-4c-8g");
    }
    {
        g_autoptr(Answer) answer =
            call(f, "POST", path, f->alice_token, NULL, "application/json", "[1, 2]");
        assert_error(answer, 400, "invalid_json");
    }
    {
        g_autoptr(Answer) answer =
            call(f, "POST", path, f->alice_token, NULL, "application/json", "");
        assert_error(answer, 400, "invalid_json");
    }
    {
        g_autoptr(Answer) answer =
            call(f, "POST", path, f->alice_token, NULL, "application/json", big);
        assert_error(answer, 413, "request_too_large");
    }
    {
        g_autoptr(Answer) answer = call(f, "POST", path, f->alice_token, NULL, "text/plain", "{}");
        assert_error(answer, 415, "unsupported_media_type");
    }
    {
        g_autoptr(Answer) answer = call(f, "POST", path, f->alice_token, form, NULL, NULL);
        assert_error(answer, 415, "unsupported_media_type");
    }
    {
        g_autoptr(Answer) answer =
            call(f, "POST", "/v1/chat/completions", f->alice_token, NULL, "application/json", big);
        assert_error(answer, 413, "request_too_large");
    }
    g_assert_cmpuint(f->seen->len, ==, 0);
    /* Exactly at the bound goes through. */
    big[EINSORA_ENDPOINT_MAX_BODY_BYTES - 1] = '}';
    big[EINSORA_ENDPOINT_MAX_BODY_BYTES] = '\0';
    {
        g_autoptr(Answer) answer =
            call(f, "POST", path, f->alice_token, NULL, "application/json", big);
        g_assert_cmpuint(answer->status, ==, 200);
        g_assert_cmpuint(strlen(last_seen(f)->body), ==, EINSORA_ENDPOINT_MAX_BODY_BYTES);
    }
}

/* The tenant's base URL: its running endpoints by name, each request
 * routed by its "model". */
static void
test_tenant_wide(Fixture *f, gconstpointer data)
{
    {
        g_autoptr(Answer) answer = call(f, "GET", "/v1/models", f->alice_token, NULL, NULL, NULL);
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(GError) error = NULL;
        JsonObject *root, *first;
        JsonArray *list;

        g_assert_cmpuint(answer->status, ==, 200);
        g_assert_true(json_parser_load_from_data(parser, answer->body, -1, &error));
        root = json_node_get_object(json_parser_get_root(parser));
        g_assert_cmpstr(json_object_get_string_member(root, "object"), ==, "list");
        list = json_object_get_array_member(root, "data");
        /* "gone" is stopped, the notebook is no endpoint, "tiny" of
         * globex is another tenant's. */
        g_assert_cmpuint(json_array_get_length(list), ==, 1);
        first = json_array_get_object_element(list, 0);
        g_assert_cmpstr(json_object_get_string_member(first, "id"), ==, "tiny");
        g_assert_cmpstr(json_object_get_string_member(first, "object"), ==, "model");
        g_assert_cmpstr(json_object_get_string_member(first, "owned_by"), ==, "einsora");
        g_assert_cmpint(json_object_get_int_member(first, "created"), >, 1700000000);
        g_assert_nonnull(soup_message_headers_get_one(answer->headers, "X-Request-ID"));
        g_assert_cmpuint(f->seen->len, ==, 0);
    }
    {
        const char *body = "{\"model\": \"tiny\", \"messages\": []}";
        g_autoptr(Answer) answer =
            call(f, "POST", "/v1/chat/completions", f->alice_token, NULL, "application/json", body);

        g_assert_cmpuint(answer->status, ==, 200);
        g_assert_cmpstr(last_seen(f)->path, ==, "/v1/chat/completions");
        g_assert_cmpstr(last_seen(f)->body, ==, body);
        g_assert_nonnull(strstr(last_seen(f)->headers, "Authorization: Bearer " WORKER_KEY "\n"));
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Einsora-Class"), ==,
                        "cpu-4c-8g");
        assert_no_key(answer);
    }
    {
        /* Gus's "tiny" is his own. */
        g_autoptr(Answer) answer =
            call(f, "POST", "/v1/embeddings", f->gus_token, NULL, "application/json",
                 "{\"model\": \"tiny\", \"input\": \"x\"}");
        g_assert_cmpuint(answer->status, ==, 200);
        g_assert_cmpstr(soup_message_headers_get_one(answer->headers, "X-Einsora-Class"), ==,
                        "cpu-2c-4g");
    }
    g_assert_cmpuint(f->seen->len, ==, 2);
    {
        g_autoptr(Answer) gone =
            call(f, "POST", "/v1/completions", f->alice_token, NULL, "application/json",
                 "{\"model\": \"gone\", \"prompt\": \"x\"}");
        g_autoptr(Answer) unknown =
            call(f, "POST", "/v1/completions", f->alice_token, NULL, "application/json",
                 "{\"model\": \"llama-70b\", \"prompt\": \"x\"}");
        g_autoptr(Answer) notebook = call(f, "POST", "/v1/completions", f->alice_token, NULL,
                                          "application/json", "{\"model\": \"nb\"}");
        g_autoptr(Answer) no_model = call(f, "POST", "/v1/completions", f->alice_token, NULL,
                                          "application/json", "{\"prompt\": \"x\"}");
        g_autoptr(Answer) not_string = call(f, "POST", "/v1/completions", f->alice_token, NULL,
                                            "application/json", "{\"model\": 7}");

        assert_error(gone, 404, "model_not_found");
        assert_error(unknown, 404, "model_not_found");
        assert_error(notebook, 404, "model_not_found");
        assert_error(no_model, 400, "model_required");
        assert_error(not_string, 400, "model_required");
    }
    g_assert_cmpuint(f->seen->len, ==, 2);
}

/* A raw client, to see the stream as it arrives and to hang up. */

typedef struct {
    GSocketConnection *connection;
    GString *received;
    gboolean reading;
    gboolean eof;
} RawClient;

static void
on_raw_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
    RawClient *raw = user_data;
    g_autoptr(GBytes) bytes =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, NULL);

    raw->reading = FALSE;
    if (bytes == NULL || g_bytes_get_size(bytes) == 0) {
        raw->eof = TRUE;
        return;
    }
    g_string_append_len(raw->received, g_bytes_get_data(bytes, NULL),
                        (gssize)g_bytes_get_size(bytes));
}

/* Reads until @needle has come (or the end). */
static void
raw_read_until(RawClient *raw, const char *needle)
{
    while (strstr(raw->received->str, needle) == NULL && !raw->eof) {
        if (!raw->reading) {
            raw->reading = TRUE;
            g_input_stream_read_bytes_async(
                g_io_stream_get_input_stream(G_IO_STREAM(raw->connection)), 4096,
                G_PRIORITY_DEFAULT, NULL, on_raw_read, raw);
        }
        g_main_context_iteration(NULL, TRUE);
    }
}

static void
on_raw_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static RawClient *
raw_stream(Fixture *f, const char *path)
{
    const char *body = "{\"model\": \"tiny\", \"stream\": true, \"messages\": []}";
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *request = NULL;
    RawClient *raw = g_new0(RawClient, 1);

    g_socket_client_connect_to_host_async(client, "127.0.0.1",
                                          (guint16)einsora_access_proxy_get_port(f->proxy), NULL,
                                          on_raw_connected, &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    raw->connection = g_socket_client_connect_to_host_finish(client, result, &error);
    g_assert_no_error(error);
    raw->received = g_string_new(NULL);
    request = g_strdup_printf(
        "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAuthorization: Bearer "
        "%s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
        path, einsora_access_proxy_get_port(f->proxy), f->alice_token, strlen(body), body);
    /* Small: the socket takes it at once. */
    g_assert_true(
        g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(raw->connection)),
                                  request, strlen(request), NULL, NULL, &error));
    g_assert_no_error(error);
    return raw;
}

static void
raw_close(RawClient *raw)
{
    g_io_stream_close(G_IO_STREAM(raw->connection), NULL, NULL);
    g_object_unref(raw->connection);
    g_string_free(raw->received, TRUE);
    g_free(raw);
}

/* SSE is relayed as it comes: the first event reaches the client while
 * the worker has not yet sent the last. */
static void
test_stream_relayed_as_it_comes(Fixture *f, gconstpointer data)
{
    const char *paths[] = {NULL, "/v1/chat/completions"};
    g_autofree gchar *own = base(f, f->endpoint, "/chat/completions");

    paths[0] = own;
    for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
        RawClient *raw = raw_stream(f, paths[i]);

        f->chunks_sent = 0;
        f->stream_finished = FALSE;
        raw_read_until(raw, "piece 0");
        g_assert_nonnull(strstr(raw->received->str, "HTTP/1.1 200"));
        g_assert_nonnull(strstr(raw->received->str, "text/event-stream"));
        g_assert_nonnull(strstr(raw->received->str, "X-Einsora-Fallback: true"));
        g_assert_cmpuint(f->chunks_sent, <, SSE_CHUNKS);
        raw_read_until(raw, "data: [DONE]");
        g_assert_nonnull(strstr(raw->received->str, "piece 2"));
        g_assert_cmpuint(f->chunks_sent, ==, SSE_CHUNKS);
        g_assert_null(strstr(raw->received->str, WORKER_KEY));
        raw_close(raw);
        while (!f->stream_finished)
            g_main_context_iteration(NULL, TRUE);
    }
}

static gboolean
on_deadline(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

/* A client that hangs up mid-stream: the worker's connection closes
 * too, before its stream would have ended. */
static void
test_hang_up_closes_upstream(Fixture *f, gconstpointer data)
{
    g_autofree gchar *path = base(f, f->endpoint, "/chat/completions");
    RawClient *raw = raw_stream(f, path);
    gboolean late = FALSE;
    guint deadline;

    raw_read_until(raw, "piece 0");
    g_assert_false(f->worker_saw_close);
    raw_close(raw);
    deadline = g_timeout_add(5000, on_deadline, &late);
    while (!f->worker_saw_close && !late)
        g_main_context_iteration(NULL, TRUE);
    if (!late)
        g_source_remove(deadline);
    g_assert_true(f->worker_saw_close);
    g_assert_cmpuint(f->chunks_sent, <, SSE_CHUNKS);
}

/* The access grant's check: a running endpoint of the actor's tenant
 * (the API answers its base URLs), CONFLICT for what isn't, NOT_FOUND
 * for another tenant's. */
static void
test_endpoint_access(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) served =
        einsora_service_endpoint_access(f->service, f->alice, f->endpoint, &error);
    const char *const conflicts[] = {f->notebook, f->stopped};

    g_assert_no_error(error);
    g_assert_cmpstr(served->id, ==, f->endpoint);
    g_assert_cmpstr(served->name, ==, "tiny");
    for (guint i = 0; i < G_N_ELEMENTS(conflicts); i++) {
        g_autoptr(EinsoraWorkload) refused =
            einsora_service_endpoint_access(f->service, f->alice, conflicts[i], &error);
        g_assert_null(refused);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
        g_clear_error(&error);
    }
    {
        g_autoptr(EinsoraWorkload) theirs =
            einsora_service_endpoint_access(f->service, f->alice, f->theirs, &error);
        g_assert_null(theirs);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    }
}

/* The pure parts. */

static void
test_route_parse(void)
{
    static const struct {
        const char *method;
        const char *path;
        gboolean endpoint_path;
        const char *workload_id;
        const char *route;
        gboolean allowed;
    } cases[] = {
        {"GET", "/v1/models", TRUE, NULL, "/v1/models", TRUE},
        {"POST", "/v1/chat/completions", TRUE, NULL, "/v1/chat/completions", TRUE},
        {"POST", "/v1/completions", TRUE, NULL, "/v1/completions", TRUE},
        {"POST", "/v1/embeddings", TRUE, NULL, "/v1/embeddings", TRUE},
        {"GET", "/v1/embeddings", TRUE, NULL, "/v1/embeddings", FALSE},
        {"GET", "/v1", TRUE, NULL, "/v1", FALSE},
        {"GET", "/v1x/models", FALSE, NULL, NULL, FALSE},
        {"GET", "/", FALSE, NULL, NULL, FALSE},
        {"GET", "/health", FALSE, NULL, NULL, FALSE},
        {"GET", "/endpoints/0190B5D2-7C4E-7ABC-8DEF-0123456789AB/v1/models", TRUE,
         "0190b5d2-7c4e-7abc-8def-0123456789ab", "/v1/models", TRUE},
        {"GET", "/endpoints/0190b5d2-7c4e-7abc-8def-0123456789ab/v1/slots", TRUE,
         "0190b5d2-7c4e-7abc-8def-0123456789ab", "/v1/slots", FALSE},
        {"GET", "/endpoints/0190b5d2-7c4e-7abc-8def-0123456789ab/models", FALSE, NULL, NULL, FALSE},
        {"GET", "/endpoints/0190b5d2-7c4e-7abc-8def-0123456789ab", FALSE, NULL, NULL, FALSE},
        {"GET", "/endpoints/not-a-uuid/v1/models", FALSE, NULL, NULL, FALSE},
        {"GET", "/endpoints//v1/models", FALSE, NULL, NULL, FALSE},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(EinsoraEndpointRoute) route =
            einsora_endpoint_route_parse(cases[i].method, cases[i].path);

        if (!cases[i].endpoint_path) {
            g_assert_null(route);
            continue;
        }
        g_assert_nonnull(route);
        g_assert_cmpstr(route->workload_id, ==, cases[i].workload_id);
        g_assert_cmpstr(route->route, ==, cases[i].route);
        g_assert_cmpint(route->allowed, ==, cases[i].allowed);
        g_assert_cmpint(route->has_body, ==,
                        cases[i].allowed && g_str_equal(cases[i].method, "POST"));
    }
    g_assert_true(einsora_endpoint_request_id_is_sane("abc-123_x.y:z"));
    g_assert_false(einsora_endpoint_request_id_is_sane(""));
    g_assert_false(einsora_endpoint_request_id_is_sane(NULL));
    g_assert_false(einsora_endpoint_request_id_is_sane("a b"));
    g_assert_false(einsora_endpoint_request_id_is_sane("x\r\nSet-Cookie: a"));
    {
        g_autofree gchar *long_id = g_strnfill(65, 'a');
        g_assert_false(einsora_endpoint_request_id_is_sane(long_id));
    }
}

static void
test_body_check(void)
{
    static const struct {
        const char *body;
        gboolean ok;
        const char *model;
    } cases[] = {
        {"{}", TRUE, NULL},
        {"{\"model\": \"tiny\"}", TRUE, "tiny"},
        {"{\"model\": \"\"}", TRUE, NULL},
        {"{\"model\": 7}", TRUE, NULL},
        {"{\"model\": [\"tiny\"]}", TRUE, NULL},
        {"[]", FALSE, NULL},
        {"\"tiny\"", FALSE, NULL},
        {"{", FALSE, NULL},
        {"", FALSE, NULL},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree gchar *model = NULL;
        gboolean ok =
            einsora_endpoint_body_check(cases[i].body, strlen(cases[i].body), &model, &error);

        g_assert_cmpint(ok, ==, cases[i].ok);
        g_assert_cmpstr(model, ==, cases[i].model);
        if (!ok)
            g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    }
    {
        g_autoptr(GError) error = NULL;
        g_assert_false(einsora_endpoint_body_check("{}\0{}", 5, NULL, &error));
    }
    {
        g_autofree gchar *json = einsora_endpoint_error_json("no \"such\" thing", "t", NULL);
        g_assert_cmpstr(json, ==,
                        "{\"error\":{\"message\":\"no \\\"such\\\" thing\",\"type\":\"t\",\"code\":"
                        "null}}");
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/endpoint/route/parse", test_route_parse);
    g_test_add_func("/endpoint/body/check", test_body_check);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/endpoint/routes-forwarded-with-the-worker-key", test_routes_forwarded);
    ADD("/endpoint/worker-key-never-shown", test_key_never_shown);
    ADD("/endpoint/refused/other-routes", test_other_routes_refused);
    ADD("/endpoint/refused/unauthenticated", test_unauthenticated);
    ADD("/endpoint/refused/not-found-is-one-answer", test_not_found_is_one_answer);
    ADD("/endpoint/refused/bad-input", test_bad_input_refused);
    ADD("/endpoint/tenant-wide", test_tenant_wide);
    ADD("/endpoint/access-grant", test_endpoint_access);
    ADD("/endpoint/stream/relayed-as-it-comes", test_stream_relayed_as_it_comes);
    ADD("/endpoint/stream/hang-up-closes-upstream", test_hang_up_closes_upstream);
#undef ADD
    return g_test_run();
}
