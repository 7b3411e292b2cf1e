/* EinsoraClient's asynchronous calls against the real einsora-daemon on a
 * free loopback port: they answer on the thread-default main context
 * while it keeps turning, map errors as the blocking calls do, can be
 * cancelled, and give the same JSON as the blocking calls. Tenant A is
 * Solo's first-run owner; B an account made with `einsora-daemon account
 * create`, with a password (a login takes an argon2id run: a call that
 * is slow on purpose). */
#include <gio/gio.h>

#include "einsora-client.h"
#include "einsora-pinned-database.h"
#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-test-workload-rows.h"

#define B_EMAIL "bob@globex.example"
#define B_PASSWORD "correct horse battery staple 42"
#define NO_SUCH_WORKLOAD "0190b5d2-7c4e-7abc-8def-0123456789ab"

/* Tenant D's workloads: more than two of the API's largest pages. */
#define D_WORKLOADS 2345

static EinsoraTestDaemon *server_daemon;
static gchar *token_b;
static gchar *token_d;

/* One asynchronous call's outcome, awaited on the thread-default context. */
typedef struct {
    GMainContext *context;
    GAsyncResult *result;
    guint calls;
} Pending;

static void
pending_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Pending *pending = user_data;

    /* It runs on the context the call was made on. */
    g_assert_true(g_main_context_is_owner(pending->context));
    g_assert_true(g_main_context_get_thread_default() == pending->context ||
                  (g_main_context_get_thread_default() == NULL &&
                   pending->context == g_main_context_default()));
    pending->calls++;
    g_clear_object(&pending->result);
    pending->result = g_object_ref(result);
}

static void
pending_init(Pending *pending)
{
    pending->context = g_main_context_ref_thread_default();
    pending->result = NULL;
    pending->calls = 0;
}

static void
pending_clear(Pending *pending)
{
    g_clear_object(&pending->result);
    g_clear_pointer(&pending->context, g_main_context_unref);
}

static gboolean
too_long(gpointer user_data)
{
    g_error("an asynchronous call did not answer within 30 s");
    return G_SOURCE_REMOVE;
}

static JsonNode *
pending_finish(Pending *pending, EinsoraClient *client, GBytes **raw, GError **error)
{
    GSource *guard = g_timeout_source_new_seconds(30);

    g_source_set_callback(guard, too_long, NULL, NULL);
    g_source_attach(guard, pending->context);
    while (pending->result == NULL)
        g_main_context_iteration(pending->context, TRUE);
    g_source_destroy(guard);
    g_source_unref(guard);
    g_assert_cmpuint(pending->calls, ==, 1);
    return einsora_client_request_finish(client, pending->result, raw, error);
}

static EinsoraClient *
client_for(const char *token)
{
    return einsora_client_new(server_daemon->uri, token);
}

static JsonNode *
login_body(void)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "email");
    json_builder_add_string_value(builder, B_EMAIL);
    json_builder_set_member_name(builder, "password");
    json_builder_add_string_value(builder, B_PASSWORD);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

static gboolean
count_tick(gpointer user_data)
{
    guint *ticks = user_data;
    (*ticks)++;
    return G_SOURCE_CONTINUE;
}

/* A login runs argon2id in the daemon (tens of milliseconds at least):
 * while it does, a 1 ms timeout on the same context keeps firing. The
 * context is a private one, pushed as the thread's default, so the call
 * must answer there and nowhere else. */
static void
test_loop_keeps_turning(void)
{
    g_autoptr(GMainContext) context = g_main_context_new();
    g_autoptr(EinsoraClient) client = NULL;
    g_autoptr(JsonNode) body = login_body();
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GSource) tick = g_timeout_source_new(1);
    guint ticks = 0;
    guint ticks_at_answer;
    Pending pending;

    g_main_context_push_thread_default(context);
    client = client_for(NULL);
    pending_init(&pending);
    g_source_set_callback(tick, count_tick, &ticks, NULL);
    g_source_attach(tick, context);

    einsora_client_request_async(client, "POST", "/v1/login", body, NULL, NULL, pending_done,
                                 &pending);
    /* Nothing answered while the call was being made. */
    g_assert_cmpuint(pending.calls, ==, 0);
    root = pending_finish(&pending, client, NULL, &error);
    ticks_at_answer = ticks;
    g_assert_no_error(error);
    g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(json_node_get_object(root), "user"), "email"),
                    ==, B_EMAIL);
    g_test_message("the 1 ms timeout fired %u times during the call", ticks_at_answer);
    /* A call that blocked would let the timeout fire once at most, in
     * the same iteration that delivers the answer. */
    g_assert_cmpuint(ticks_at_answer, >=, 3);

    g_source_destroy(tick);
    pending_clear(&pending);
    g_clear_object(&client);
    /* Whatever the session left on the context (idle connections) goes. */
    while (g_main_context_iteration(context, FALSE))
        ;
    g_main_context_pop_thread_default(context);
}

static void
assert_same_error(const GError *sync_error, const GError *async_error, const char *code,
                  guint status)
{
    g_assert_error(async_error, EINSORA_CLIENT_ERROR, sync_error->code);
    g_assert_cmpstr(einsora_client_error_get_code(async_error), ==, code);
    g_assert_cmpstr(einsora_client_error_get_code(sync_error), ==, code);
    g_assert_cmpstr(async_error->message, ==, sync_error->message);
    g_assert_cmpuint(einsora_client_error_get_status(async_error), ==, status);
    g_assert_cmpuint(einsora_client_error_get_status(sync_error), ==, status);
    if (status != 0) {
        /* The server's request ID, a new one per call. */
        g_assert_nonnull(einsora_client_error_get_request_id(async_error));
        g_assert_cmpstr(einsora_client_error_get_request_id(async_error), !=,
                        einsora_client_error_get_request_id(sync_error));
    }
}

static void
test_errors_map_like_sync(void)
{
    g_autoptr(EinsoraClient) client = client_for(server_daemon->owner_token);
    g_autoptr(EinsoraClient) stranger = client_for("tsk_nottherightone");
    g_autofree gchar *closed_uri = NULL;
    g_autoptr(EinsoraClient) nowhere = NULL;

    {
        /* An unknown workload: the API's not_found, message and ID. */
        g_autoptr(GError) sync_error = NULL;
        g_autoptr(GError) async_error = NULL;
        g_autoptr(JsonNode) sync_root =
            einsora_client_get_workload(client, NO_SUCH_WORKLOAD, FALSE, NULL, &sync_error);
        g_autoptr(JsonNode) async_root = NULL;
        Pending pending;

        pending_init(&pending);
        einsora_client_get_workload_async(client, NO_SUCH_WORKLOAD, FALSE, NULL, pending_done,
                                          &pending);
        async_root = pending_finish(&pending, client, NULL, &async_error);
        g_assert_null(sync_root);
        g_assert_null(async_root);
        g_assert_error(async_error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_NOT_FOUND);
        assert_same_error(sync_error, async_error, "not_found", 404);
        pending_clear(&pending);
    }
    {
        /* A wrong token. */
        g_autoptr(GError) sync_error = NULL;
        g_autoptr(GError) async_error = NULL;
        g_autoptr(JsonNode) sync_root = einsora_client_get_catalog(stranger, NULL, &sync_error);
        g_autoptr(JsonNode) async_root = NULL;
        Pending pending;

        pending_init(&pending);
        einsora_client_get_catalog_async(stranger, NULL, pending_done, &pending);
        async_root = pending_finish(&pending, stranger, NULL, &async_error);
        g_assert_null(sync_root);
        g_assert_null(async_root);
        g_assert_error(async_error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_UNAUTHENTICATED);
        assert_same_error(sync_error, async_error, "unauthenticated", 401);
        pending_clear(&pending);
    }
    {
        /* Nobody listening: unreachable, and no request ID. */
        g_autoptr(GSocketListener) listener = g_socket_listener_new();
        g_autoptr(GError) error = NULL;
        g_autoptr(GError) sync_error = NULL;
        g_autoptr(GError) async_error = NULL;
        g_autoptr(JsonNode) sync_root = NULL;
        g_autoptr(JsonNode) async_root = NULL;
        guint16 port = g_socket_listener_add_any_inet_port(listener, NULL, &error);
        Pending pending;

        g_assert_no_error(error);
        g_socket_listener_close(listener);
        closed_uri = g_strdup_printf("http://127.0.0.1:%u", port);
        nowhere = einsora_client_new(closed_uri, server_daemon->owner_token);
        sync_root = einsora_client_list_machines(nowhere, NULL, &sync_error);
        pending_init(&pending);
        einsora_client_list_machines_async(nowhere, NULL, pending_done, &pending);
        async_root = pending_finish(&pending, nowhere, NULL, &async_error);
        g_assert_null(sync_root);
        g_assert_null(async_root);
        g_assert_error(async_error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_UNREACHABLE);
        assert_same_error(sync_error, async_error, EINSORA_CLIENT_CODE_UNREACHABLE, 0);
        g_assert_null(einsora_client_error_get_request_id(async_error));
        pending_clear(&pending);
    }
}

static gboolean
cancel_now(gpointer user_data)
{
    g_cancellable_cancel(user_data);
    return G_SOURCE_REMOVE;
}

static void
test_cancel(void)
{
    g_autoptr(EinsoraClient) client = client_for(NULL);
    g_autoptr(JsonNode) body = login_body();

    {
        /* Cancelled while the daemon works on it (argon2id). */
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonNode) root = NULL;
        Pending pending;

        pending_init(&pending);
        einsora_client_request_async(client, "POST", "/v1/login", body, NULL, cancellable,
                                     pending_done, &pending);
        g_timeout_add(5, cancel_now, cancellable);
        root = pending_finish(&pending, client, NULL, &error);
        g_assert_null(root);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        pending_clear(&pending);
    }
    {
        /* Cancelled before it was sent. */
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonNode) root = NULL;
        Pending pending;

        g_cancellable_cancel(cancellable);
        pending_init(&pending);
        einsora_client_get_catalog_async(client, cancellable, pending_done, &pending);
        g_assert_cmpuint(pending.calls, ==, 0);
        root = pending_finish(&pending, client, NULL, &error);
        g_assert_null(root);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        pending_clear(&pending);
    }
    {
        /* The client still works afterwards. */
        g_autoptr(EinsoraClient) owner = client_for(server_daemon->owner_token);
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonNode) root = NULL;
        Pending pending;

        pending_init(&pending);
        einsora_client_get_catalog_async(owner, NULL, pending_done, &pending);
        root = pending_finish(&pending, owner, NULL, &error);
        g_assert_no_error(error);
        g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
        pending_clear(&pending);
    }
}

/* One call both ways: @id is the workload's, where the call takes one. */
typedef JsonNode *(*SyncCall)(EinsoraClient *client, const char *id, GBytes **raw, GError **error);
typedef void (*AsyncCall)(EinsoraClient *client, const char *id, GCancellable *cancellable,
                          GAsyncReadyCallback callback, gpointer user_data);

static JsonNode *
list_workloads(EinsoraClient *client, const char *id, GBytes **raw, GError **error)
{
    return einsora_client_list_workloads(client, FALSE, raw, error);
}

static void
list_workloads_async(EinsoraClient *client, const char *id, GCancellable *cancellable,
                     GAsyncReadyCallback callback, gpointer user_data)
{
    einsora_client_list_workloads_async(client, FALSE, cancellable, callback, user_data);
}

static JsonNode *
list_all_workloads(EinsoraClient *client, const char *id, GBytes **raw, GError **error)
{
    return einsora_client_list_workloads(client, TRUE, raw, error);
}

static void
list_all_workloads_async(EinsoraClient *client, const char *id, GCancellable *cancellable,
                         GAsyncReadyCallback callback, gpointer user_data)
{
    einsora_client_list_workloads_async(client, TRUE, cancellable, callback, user_data);
}

static JsonNode *
get_workload(EinsoraClient *client, const char *id, GBytes **raw, GError **error)
{
    return einsora_client_get_workload(client, id, FALSE, raw, error);
}

static void
get_workload_async(EinsoraClient *client, const char *id, GCancellable *cancellable,
                   GAsyncReadyCallback callback, gpointer user_data)
{
    einsora_client_get_workload_async(client, id, FALSE, cancellable, callback, user_data);
}

static JsonNode *
get_catalog(EinsoraClient *client, const char *id, GBytes **raw, GError **error)
{
    return einsora_client_get_catalog(client, raw, error);
}

static void
get_catalog_async(EinsoraClient *client, const char *id, GCancellable *cancellable,
                  GAsyncReadyCallback callback, gpointer user_data)
{
    einsora_client_get_catalog_async(client, cancellable, callback, user_data);
}

static void
list_machines_async(EinsoraClient *client, const char *id, GCancellable *cancellable,
                    GAsyncReadyCallback callback, gpointer user_data)
{
    einsora_client_list_machines_async(client, cancellable, callback, user_data);
}

/* The JSON and the bytes of one asynchronous call. */
static JsonNode *
call_async(EinsoraClient *client, AsyncCall call, const char *id, GBytes **raw, GError **error)
{
    Pending pending;
    JsonNode *root;

    pending_init(&pending);
    call(client, id, NULL, pending_done, &pending);
    root = pending_finish(&pending, client, raw, error);
    pending_clear(&pending);
    return root;
}

static void
assert_same_bytes(GBytes *a, GBytes *b)
{
    g_autofree gchar *text_a = g_strndup(g_bytes_get_data(a, NULL), g_bytes_get_size(a));
    g_autofree gchar *text_b = g_strndup(g_bytes_get_data(b, NULL), g_bytes_get_size(b));
    g_assert_cmpstr(text_a, ==, text_b);
}

/* A machine's status and last_seen_at move with its agent's syncs. */
static void
drop_moving_members(JsonNode *root)
{
    JsonArray *machines = json_object_get_array_member(json_node_get_object(root), "machines");

    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = json_array_get_object_element(machines, i);
        json_object_remove_member(machine, "last_seen_at");
        json_object_remove_member(machine, "status");
    }
}

static void
test_same_json_as_sync(void)
{
    g_autoptr(EinsoraClient) client = client_for(server_daemon->owner_token);
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) created = einsora_client_create_workload(
        client, "notebook", "same-json", "cpu-2c-4g", "jupyter-notebook", NULL, NULL, NULL, &error);
    const char *id;
    const struct {
        const char *what;
        SyncCall sync;
        AsyncCall async;
    } calls[] = {
        {"workloads", list_workloads, list_workloads_async},
        {"workloads, deleted too", list_all_workloads, list_all_workloads_async},
        {"workload", get_workload, get_workload_async},
        {"events", einsora_client_list_events, einsora_client_list_events_async},
        {"catalog", get_catalog, get_catalog_async},
    };

    g_assert_no_error(error);
    id = json_object_get_string_member(json_node_get_object(created), "id");
    for (guint i = 0; i < G_N_ELEMENTS(calls); i++) {
        g_autoptr(GBytes) sync_raw = NULL;
        g_autoptr(GBytes) async_raw = NULL;
        g_autoptr(JsonNode) sync_root = NULL;
        g_autoptr(JsonNode) async_root = NULL;

        g_test_message("%s", calls[i].what);
        sync_root = calls[i].sync(client, id, &sync_raw, &error);
        g_assert_no_error(error);
        async_root = call_async(client, calls[i].async, id, &async_raw, &error);
        g_assert_no_error(error);
        g_assert_true(JSON_NODE_HOLDS_OBJECT(async_root));
        g_assert_true(json_node_equal(sync_root, async_root));
        assert_same_bytes(sync_raw, async_raw);
    }
    {
        g_autoptr(JsonNode) sync_root = einsora_client_list_machines(client, NULL, &error);
        g_autoptr(JsonNode) async_root = NULL;

        g_assert_no_error(error);
        async_root = call_async(client, list_machines_async, NULL, NULL, &error);
        g_assert_no_error(error);
        drop_moving_members(sync_root);
        drop_moving_members(async_root);
        g_assert_true(json_node_equal(sync_root, async_root));
    }
    {
        /* einsora_client_request_async() is einsora_client_request(). */
        g_autoptr(GBytes) sync_raw = NULL;
        g_autoptr(GBytes) async_raw = NULL;
        g_autoptr(JsonNode) sync_root =
            einsora_client_request(client, "GET", "/v1/me", NULL, NULL, &sync_raw, &error);
        g_autoptr(JsonNode) async_root = NULL;
        Pending pending;

        g_assert_no_error(error);
        pending_init(&pending);
        einsora_client_request_async(client, "GET", "/v1/me", NULL, NULL, NULL, pending_done,
                                     &pending);
        async_root = pending_finish(&pending, client, &async_raw, &error);
        g_assert_no_error(error);
        g_assert_true(json_node_equal(sync_root, async_root));
        assert_same_bytes(sync_raw, async_raw);
        pending_clear(&pending);
    }
}

static JsonNode *
finish_action(EinsoraClient *client, Pending *pending, GError **error)
{
    JsonNode *root = pending_finish(pending, client, NULL, error);
    pending_clear(pending);
    return root;
}

/* create, start, stop, open, delete: each sends what its blocking form
 * sends; the daemon's answers (a pending workload is already started,
 * can't stop and can't open) prove they reached the right route with the
 * right workload. */
static void
test_workload_actions(void)
{
    g_autoptr(EinsoraClient) client = client_for(server_daemon->owner_token);
    g_autoptr(JsonNode) created = NULL;
    g_autoptr(JsonNode) again = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *id = NULL;
    Pending pending;

    pending_init(&pending);
    einsora_client_create_workload_async(client, "notebook", "async-one", "cpu-2c-4g",
                                         "jupyter-notebook", "local", "client-test-key-1", NULL,
                                         pending_done, &pending);
    created = finish_action(client, &pending, &error);
    g_assert_no_error(error);
    id = g_strdup(json_object_get_string_member(json_node_get_object(created), "id"));
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(created), "name"), ==,
                    "async-one");
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(created), "state"), ==,
                    "pending");

    /* The same Idempotency-Key: the same workload, not a second one. */
    pending_init(&pending);
    einsora_client_create_workload_async(client, "notebook", "async-one", "cpu-2c-4g",
                                         "jupyter-notebook", "local", "client-test-key-1", NULL,
                                         pending_done, &pending);
    again = finish_action(client, &pending, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(again), "id"), ==, id);

    {
        g_autoptr(JsonNode) root = NULL;
        pending_init(&pending);
        einsora_client_start_workload_async(client, id, NULL, pending_done, &pending);
        root = finish_action(client, &pending, &error);
        g_assert_no_error(error);
        /* Already on its way: answered unchanged (ADR 0003). */
        g_assert_cmpstr(json_object_get_string_member(json_node_get_object(root), "id"), ==, id);
        g_assert_cmpstr(json_object_get_string_member(json_node_get_object(root), "state"), ==,
                        "pending");
    }
    {
        g_autoptr(JsonNode) root = NULL;
        pending_init(&pending);
        einsora_client_stop_workload_async(client, id, NULL, pending_done, &pending);
        root = finish_action(client, &pending, &error);
        g_assert_null(root);
        g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_INVALID_TRANSITION);
        g_clear_error(&error);
    }
    {
        g_autoptr(JsonNode) root = NULL;
        pending_init(&pending);
        einsora_client_open_workload_async(client, id, NULL, pending_done, &pending);
        root = finish_action(client, &pending, &error);
        g_assert_null(root);
        g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_CONFLICT);
        g_clear_error(&error);
    }
    {
        g_autoptr(JsonNode) root = NULL;
        pending_init(&pending);
        einsora_client_delete_workload_async(client, id, NULL, pending_done, &pending);
        root = finish_action(client, &pending, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(json_object_get_string_member(json_node_get_object(root), "id"), ==, id);
        g_assert_cmpstr(json_object_get_string_member(json_node_get_object(root), "state"), ==,
                        "deleting");
    }
    {
        /* Its timeline: created, the note that no machine here runs it
         * (this daemon has no driver), then the delete. */
        g_autoptr(JsonNode) root = NULL;
        JsonArray *events;
        pending_init(&pending);
        einsora_client_list_events_async(client, id, NULL, pending_done, &pending);
        root = finish_action(client, &pending, &error);
        g_assert_no_error(error);
        events = json_object_get_array_member(json_node_get_object(root), "events");
        g_assert_cmpuint(json_array_get_length(events), ==, 3);
    }
    {
        /* Another tenant's workload doesn't exist. */
        g_autoptr(EinsoraClient) other = client_for(token_b);
        g_autoptr(JsonNode) root = NULL;
        pending_init(&pending);
        einsora_client_get_workload_async(other, id, TRUE, NULL, pending_done, &pending);
        root = finish_action(other, &pending, &error);
        g_assert_null(root);
        g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_NOT_FOUND);
    }
}

/* The lists are read whole, following next_cursor, by the blocking and
 * the asynchronous calls alike (the desktop app's list loads through the
 * latter): D's 2,345 workloads come back in order, each once. */
static void
test_lists_follow_cursors(void)
{
    g_autoptr(EinsoraClient) client = client_for(token_d);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) sync_raw = NULL;
    g_autoptr(GBytes) async_raw = NULL;
    g_autoptr(JsonNode) sync_root = einsora_client_list_workloads(client, FALSE, &sync_raw, &error);
    g_autoptr(JsonNode) async_root = NULL;
    JsonArray *workloads;
    Pending pending;

    g_assert_no_error(error);
    workloads = json_object_get_array_member(json_node_get_object(sync_root), "workloads");
    g_assert_cmpuint(json_array_get_length(workloads), ==, D_WORKLOADS);
    for (guint i = 0; i < D_WORKLOADS; i++) {
        g_autofree gchar *name = g_strdup_printf("many-%05u", i);
        g_assert_cmpstr(
            json_object_get_string_member(json_array_get_object_element(workloads, i), "name"), ==,
            name);
    }
    g_assert_true(JSON_NODE_HOLDS_NULL(
        json_object_get_member(json_node_get_object(sync_root), "next_cursor")));

    pending_init(&pending);
    einsora_client_list_workloads_async(client, FALSE, NULL, pending_done, &pending);
    async_root = pending_finish(&pending, client, &async_raw, &error);
    pending_clear(&pending);
    g_assert_no_error(error);
    g_assert_true(json_node_equal(sync_root, async_root));
    g_assert_true(g_bytes_equal(sync_raw, async_raw));
}

/* The machine with @id in GET /v1/machines's answer, or NULL. */
static JsonObject *
machine_in(JsonNode *list, const char *id)
{
    JsonArray *machines = json_object_get_array_member(json_node_get_object(list), "machines");

    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = json_array_get_object_element(machines, i);
        if (g_strcmp0(json_object_get_string_member(machine, "id"), id) == 0)
            return machine;
    }
    return NULL;
}

/* Enrolment and revocation (docs/adr/0055, 0056), blocking and not: a
 * plain-HTTP daemon gives no token; one over TLS gives one whose command
 * the real `einsora-daemon agent --join` runs; revoking that machine
 * takes its certificate, and revoking it again, or the daemon's own
 * machine, is a conflict. */
static void
test_enrol_and_revoke(void)
{
    g_autoptr(EinsoraClient) plain = client_for(server_daemon->owner_token);
    g_autoptr(EinsoraTestDaemon) tls = NULL;
    g_autoptr(EinsoraClient) client = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) enrolled = NULL;
    g_autoptr(JsonNode) named = NULL;
    g_autoptr(JsonNode) revoked = NULL;
    g_autoptr(JsonNode) list = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *other = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *own_id = NULL;
    Pending pending;
    JsonObject *answer;

    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here: install glib-networking");
        return;
    }
    /* Plain HTTP: refused, blocking and not. */
    g_assert_null(einsora_client_enrol_machine(plain, NULL, NULL, NULL, &error));
    g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_CONFLICT);
    g_assert_nonnull(strstr(error->message, "TLS"));
    g_clear_error(&error);
    pending_init(&pending);
    einsora_client_enrol_machine_async(plain, "box", NULL, NULL, pending_done, &pending);
    g_assert_null(pending_finish(&pending, plain, NULL, &error));
    pending_clear(&pending);
    g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_CONFLICT);
    g_clear_error(&error);

    tls = einsora_test_daemon_new();
    einsora_test_daemon_setenv(tls, "EINSORA_TLS", "on");
    einsora_test_daemon_start(tls);
    {
        g_autofree gchar *cert = g_build_filename(tls->data_dir, "tls", "server.pem", NULL);
        g_autoptr(GTlsCertificate) certificate = g_tls_certificate_new_from_file(cert, &error);

        g_assert_no_error(error);
        fingerprint = einsora_certificate_fingerprint(certificate);
    }
    client = einsora_client_new(tls->uri, tls->owner_token);
    einsora_client_set_pinned_certificate(client, fingerprint);

    /* Blocking, no name: the server's defaults. */
    enrolled = einsora_client_enrol_machine(client, NULL, NULL, NULL, &error);
    g_assert_no_error(error);
    answer = json_node_get_object(enrolled);
    g_assert_true(g_str_has_prefix(json_object_get_string_member(answer, "token"), "enr_"));
    g_assert_cmpstr(json_object_get_string_member(answer, "fingerprint"), ==, fingerprint);
    g_assert_true(
        json_object_get_null_member(json_object_get_object_member(answer, "enrolment"), "name"));

    /* Not blocking, with a name and a region: its command enrols. */
    pending_init(&pending);
    einsora_client_enrol_machine_async(client, "client-box", "local", NULL, pending_done, &pending);
    named = pending_finish(&pending, client, NULL, &error);
    pending_clear(&pending);
    g_assert_no_error(error);
    answer = json_node_get_object(named);
    g_assert_cmpstr(
        json_object_get_string_member(json_object_get_object_member(answer, "enrolment"), "name"),
        ==, "client-box");
    {
        g_autofree gchar *expected =
            g_strdup_printf("einsora-daemon agent --join %s --token %s --fingerprint %s", tls->uri,
                            json_object_get_string_member(answer, "token"), fingerprint);
        g_assert_cmpstr(json_object_get_string_member(answer, "command"), ==, expected);
    }
    other = einsora_test_dir_new();
    {
        g_autoptr(GSubprocess) join = g_subprocess_new(
            G_SUBPROCESS_FLAGS_STDOUT_SILENCE, &error, einsora_test_daemon_path(), "--data-dir",
            other, "agent", "--join", tls->uri, "--token",
            json_object_get_string_member(answer, "token"), "--fingerprint", fingerprint, NULL);
        g_autofree gchar *id_path = g_build_filename(other, "agent", "machine-id", NULL);

        g_assert_no_error(error);
        g_assert_true(g_subprocess_wait_check(join, NULL, &error));
        g_assert_no_error(error);
        g_assert_true(g_file_get_contents(id_path, &machine_id, NULL, NULL));
        g_strstrip(machine_id);
    }
    list = einsora_client_list_machines(client, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(machine_in(list, machine_id));
    g_assert_true(JSON_NODE_HOLDS_OBJECT(
        json_object_get_member(machine_in(list, machine_id), "certificate")));
    for (guint i = 0; i < json_array_get_length(
                              json_object_get_array_member(json_node_get_object(list), "machines"));
         i++) {
        JsonObject *machine = json_array_get_object_element(
            json_object_get_array_member(json_node_get_object(list), "machines"), i);
        if (g_strcmp0(json_object_get_string_member(machine, "id"), machine_id) != 0)
            own_id = g_strdup(json_object_get_string_member(machine, "id"));
    }
    g_assert_nonnull(own_id);

    /* Revoked, not blocking: the machine stays, its certificate gone. */
    pending_init(&pending);
    einsora_client_revoke_machine_async(client, machine_id, NULL, pending_done, &pending);
    revoked = pending_finish(&pending, client, NULL, &error);
    pending_clear(&pending);
    g_assert_no_error(error);
    g_assert_cmpstr(json_object_get_string_member(json_node_get_object(revoked), "id"), ==,
                    machine_id);
    g_assert_true(
        JSON_NODE_HOLDS_NULL(json_object_get_member(json_node_get_object(revoked), "certificate")));
    /* Again, blocking; and the daemon's own machine: nothing to revoke. */
    g_assert_null(einsora_client_revoke_machine(client, machine_id, NULL, &error));
    g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_CONFLICT);
    g_clear_error(&error);
    g_assert_null(einsora_client_revoke_machine(client, own_id, NULL, &error));
    g_assert_error(error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_CONFLICT);
    g_clear_error(&error);
    einsora_test_daemon_stop(tls);
    einsora_test_dir_remove(other);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    server_daemon = einsora_test_daemon_new();
    /* States change only through the API here: nothing wakes the
     * controller before its hour. */
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_WAKE", "off");
    einsora_test_daemon_start(server_daemon);
    einsora_test_daemon_stop(server_daemon);
    token_b = einsora_test_daemon_create_account(server_daemon, "globex", B_EMAIL, B_PASSWORD);
    token_d =
        einsora_test_daemon_create_account(server_daemon, "dunder", "dee@dunder.example", NULL);
    einsora_test_daemon_start(server_daemon);
    {
        g_autoptr(EinsoraTestResponse) me =
            einsora_test_request(server_daemon, "GET", "/v1/me", token_d, NULL, NULL, NULL);
        g_autofree gchar *tenant_d = g_strdup(einsora_test_response_string(me, "tenant_id"));

        einsora_test_daemon_stop(server_daemon);
        einsora_test_insert_workloads(server_daemon, tenant_d, D_WORKLOADS, "many");
        einsora_test_daemon_start(server_daemon);
    }

    g_test_add_func("/client/async/loop-keeps-turning", test_loop_keeps_turning);
    g_test_add_func("/client/async/errors-map-like-sync", test_errors_map_like_sync);
    g_test_add_func("/client/async/cancel", test_cancel);
    g_test_add_func("/client/async/same-json-as-sync", test_same_json_as_sync);
    g_test_add_func("/client/async/workload-actions", test_workload_actions);
    g_test_add_func("/client/lists/follow-cursors", test_lists_follow_cursors);
    g_test_add_func("/client/machines/enrol-and-revoke", test_enrol_and_revoke);
    status = g_test_run();

    {
        /* Never a token or the password in the daemon's log. */
        g_autofree gchar *log = einsora_test_daemon_read_log(server_daemon);
        g_assert_null(strstr(log, token_b));
        g_assert_null(strstr(log, server_daemon->owner_token));
        g_assert_null(strstr(log, B_PASSWORD));
    }
    einsora_test_daemon_stop(server_daemon);
    einsora_test_daemon_free(server_daemon);
    g_free(token_b);
    g_free(token_d);
    return status;
}
