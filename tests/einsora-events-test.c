/* The change feed against the real einsora-daemon on a loopback port:
 * GET /v1/events as JSON and as server-sent events, EinsoraEventFeed (the
 * client the app and the CLI use) including a daemon restart on the same
 * port, and `einsora watch` (EINSORA_CLI). Tenant A is Solo's first-run
 * owner, B an account made with `einsora-daemon account create`. The sim
 * driver and a 200 ms controller make workloads move on their own; a
 * keep-alive of 300 ms (EINSORA_TEST_EVENTS_KEEPALIVE_MS) keeps the
 * keep-alive test short. */
#include <glib-unix.h>
#include <signal.h>

#include "einsora-event-feed.h"
#include "einsora-test-daemon.h"

#define JSON "application/json"
#define B_PASSWORD "events-test-password-b"
#define WAIT_SECONDS 30
#define MAX_FEEDS 32

static EinsoraTestDaemon *server;
static gchar *token_b;

/* Waiting on the main context, with a deadline. */

typedef gboolean (*Condition)(gpointer data);

static gboolean
set_flag(gpointer data)
{
    *(gboolean *)data = TRUE;
    return G_SOURCE_REMOVE;
}

static gboolean
keep_looking(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

/* Runs the main context until @condition holds, looking again at least
 * every 20 ms (it may depend on something outside, like a log file). */
static gboolean
wait_until(Condition condition, gpointer data, guint seconds)
{
    gboolean timed_out = FALSE;
    guint timer = g_timeout_add_seconds(seconds, set_flag, &timed_out);
    guint tick = g_timeout_add(20, keep_looking, NULL);

    while (!condition(data) && !timed_out)
        g_main_context_iteration(NULL, TRUE);
    if (!timed_out)
        g_source_remove(timer);
    g_source_remove(tick);
    return condition(data);
}

static gboolean
flag_is_set(gpointer data)
{
    return *(gboolean *)data;
}

/* One line from @lines, or NULL at its end; fails the test after
 * @seconds. */
typedef struct {
    gboolean done;
    gchar *line;
} LineRead;

static void
on_line_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
    LineRead *read = user_data;

    read->line =
        g_data_input_stream_read_line_finish(G_DATA_INPUT_STREAM(source), result, NULL, NULL);
    read->done = TRUE;
}

static gchar *
read_line_within(GDataInputStream *lines, guint seconds)
{
    LineRead read = {FALSE, NULL};
    g_autoptr(GCancellable) cancellable = g_cancellable_new();

    g_data_input_stream_read_line_async(lines, G_PRIORITY_DEFAULT, cancellable, on_line_read,
                                        &read);
    if (!wait_until(flag_is_set, &read.done, seconds)) {
        g_cancellable_cancel(cancellable);
        wait_until(flag_is_set, &read.done, 5);
        g_error("no line within %u s", seconds);
    }
    return read.line;
}

/* HTTP helpers */

static EinsoraTestResponse *
call(const char *method, const char *path, const char *token, const char *body)
{
    return einsora_test_request(server, method, path, token, body != NULL ? JSON : NULL, body,
                                NULL);
}

static void
assert_error(EinsoraTestResponse *response, guint status, const char *code)
{
    if (response->status != status)
        g_test_message("body: %s", response->body);
    g_assert_cmpuint(response->status, ==, status);
    g_assert_cmpstr(einsora_test_response_error_code(response), ==, code);
}

static gchar *
create_workload(const char *token, const char *name)
{
    g_autofree gchar *body =
        g_strdup_printf("{\"kind\":\"notebook\",\"name\":\"%s\","
                        "\"gpu_class\":\"cpu-1c-2g\",\"image\":\"jupyter-linux\"}",
                        name);
    g_autoptr(EinsoraTestResponse) created = call("POST", "/v1/workloads", token, body);

    g_assert_cmpuint(created->status, ==, 201);
    return g_strdup(einsora_test_response_string(created, "id"));
}

static void
wait_for_state(const char *token, const char *id, const char *state)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    gint64 deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response = call("GET", path, token, NULL);
        const char *now = einsora_test_response_string(response, "state");
        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s", id, now, state);
        g_usleep(50 * 1000);
    }
}

static void
stop_workload(const char *token, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/stop", id);
    g_autoptr(EinsoraTestResponse) stopping = call("POST", path, token, NULL);

    g_assert_cmpuint(stopping->status, ==, 202);
}

/* GET /v1/events (JSON): the events member, with @last_event_id. */
static JsonArray *
list_events(const char *token, const char *query, gint64 *last_event_id, JsonNode **keep)
{
    g_autofree gchar *path = g_strdup_printf("/v1/events%s", query != NULL ? query : "");
    g_autoptr(EinsoraTestResponse) response = call("GET", path, token, NULL);
    JsonObject *root;

    g_assert_cmpuint(response->status, ==, 200);
    g_assert_nonnull(response->json);
    root = json_node_get_object(response->json);
    if (last_event_id != NULL)
        *last_event_id = json_object_get_int_member(root, "last_event_id");
    *keep = json_node_ref(response->json);
    return json_object_get_array_member(root, "events");
}

/* The seq of the tenant's latest event, through the JSON listing's
 * pages. */
static gint64
latest_seq(const char *token)
{
    gint64 last = 0;

    for (;;) {
        g_autofree gchar *query = g_strdup_printf("?after=%" G_GINT64_FORMAT, last);
        g_autoptr(JsonNode) node = NULL;
        JsonArray *events = list_events(token, query, &last, &node);

        if (json_array_get_length(events) < 500)
            return last;
    }
}

static gint64
event_seq(JsonArray *events, guint index)
{
    return json_object_get_int_member(json_array_get_object_element(events, index), "seq");
}

/* Every workload ID @token's tenant has, deleted ones included. */
static GHashTable *
workload_ids(const char *token)
{
    g_autoptr(EinsoraTestResponse) list =
        call("GET", "/v1/workloads?include_deleted=true", token, NULL);
    JsonArray *workloads =
        json_object_get_array_member(json_node_get_object(list->json), "workloads");
    GHashTable *ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint i = 0; i < json_array_get_length(workloads); i++)
        g_hash_table_add(ids, g_strdup(json_object_get_string_member(
                                  json_array_get_object_element(workloads, i), "id")));
    return ids;
}

/* Whether the daemon's log says the feed of request @data closed. Waited
 * for on the main context: the client's side closes its connection from
 * there. */
static gboolean
feed_closed_in_log(gpointer data)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(server);
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++) {
        if (strstr(lines[i], data) != NULL && strstr(lines[i], "event feed closed") != NULL)
            return TRUE;
    }
    return FALSE;
}

/* A server-sent event stream, read as it arrives. Each has a session of
 * its own, so that closing it closes its connection. */

typedef struct {
    SoupSession *session;
    SoupMessage *msg;
    GCancellable *cancellable;
    GInputStream *body;
    GDataInputStream *lines;
    gboolean sent;
} Sse;

typedef struct {
    gint64 seq;
    gchar *type;
    JsonObject *data;
} FeedEvent;

static void
feed_event_free(FeedEvent *event)
{
    g_free(event->type);
    json_object_unref(event->data);
    g_free(event);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(FeedEvent, feed_event_free)

static void
sse_close(Sse *sse)
{
    if (sse == NULL)
        return;
    g_cancellable_cancel(sse->cancellable);
    /* Closing the body before its end closes the connection. */
    if (sse->lines != NULL)
        g_input_stream_close(G_INPUT_STREAM(sse->lines), NULL, NULL);
    g_clear_object(&sse->lines);
    g_clear_object(&sse->body);
    soup_session_abort(sse->session);
    g_clear_object(&sse->msg);
    g_clear_object(&sse->session);
    g_clear_object(&sse->cancellable);
    g_free(sse);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Sse, sse_close)

static void
on_sse_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Sse *sse = user_data;

    sse->body = soup_session_send_finish(SOUP_SESSION(source), result, NULL);
    sse->sent = TRUE;
}

/* Opens GET /v1/events with @query; @headers: NULL-terminated name,
 * value pairs. Returns once the answer's headers are in. */
static Sse *
sse_open(const char *token, const char *query, const char *const *headers)
{
    g_autofree gchar *url = g_strdup_printf("%s/v1/events%s", server->uri, query);
    Sse *sse = g_new0(Sse, 1);
    SoupMessageHeaders *request_headers;

    sse->session = soup_session_new_with_options("timeout", WAIT_SECONDS, NULL);
    sse->cancellable = g_cancellable_new();
    sse->msg = soup_message_new("GET", url);
    request_headers = soup_message_get_request_headers(sse->msg);
    if (token != NULL) {
        g_autofree gchar *value = g_strdup_printf("Bearer %s", token);
        soup_message_headers_replace(request_headers, "Authorization", value);
    }
    for (guint i = 0; headers != NULL && headers[i] != NULL; i += 2)
        soup_message_headers_replace(request_headers, headers[i], headers[i + 1]);
    soup_session_send_async(sse->session, sse->msg, G_PRIORITY_DEFAULT, sse->cancellable,
                            on_sse_sent, sse);
    g_assert_true(wait_until(flag_is_set, &sse->sent, WAIT_SECONDS));
    g_assert_nonnull(sse->body);
    sse->lines = g_data_input_stream_new(sse->body);
    return sse;
}

static guint
sse_status(Sse *sse)
{
    return soup_message_get_status(sse->msg);
}

static const char *
sse_header(Sse *sse, const char *name)
{
    return soup_message_headers_get_one(soup_message_get_response_headers(sse->msg), name);
}

/* Opens a feed that must be accepted, and reads its first block. */
static Sse *
sse_open_ok(const char *token, const char *query, const char *const *headers, gint64 *start)
{
    Sse *sse = sse_open(token, query, headers);
    g_autofree gchar *connected = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *blank = NULL;

    g_assert_cmpuint(sse_status(sse), ==, 200);
    connected = read_line_within(sse->lines, WAIT_SECONDS);
    id = read_line_within(sse->lines, WAIT_SECONDS);
    blank = read_line_within(sse->lines, WAIT_SECONDS);
    /* ": connected", then where the feed stands, before any event. */
    g_assert_cmpstr(connected, ==, ": connected");
    g_assert_true(g_str_has_prefix(id, "id: "));
    g_assert_cmpstr(blank, ==, "");
    if (start != NULL)
        *start = g_ascii_strtoll(id + strlen("id: "), NULL, 10);
    return sse;
}

/* The lines of the next block (up to a blank line). */
static GPtrArray *
sse_read_block(Sse *sse)
{
    GPtrArray *block = g_ptr_array_new_with_free_func(g_free);

    for (;;) {
        gchar *line = read_line_within(sse->lines, WAIT_SECONDS);

        g_assert_nonnull(line); /* the stream never ends by itself */
        if (*line == '\0') {
            g_free(line);
            if (block->len > 0)
                return block;
            continue;
        }
        g_ptr_array_add(block, line);
    }
}

/* The next event, in the exact wire form: id, event, one data line. */
static FeedEvent *
sse_next_event(Sse *sse)
{
    for (;;) {
        g_autoptr(GPtrArray) block = sse_read_block(sse);
        g_autoptr(JsonParser) parser = json_parser_new();
        const char *id;
        const char *type;
        const char *data;
        FeedEvent *event;

        if (((const char *)g_ptr_array_index(block, 0))[0] == ':')
            continue; /* a comment: keep-alive */
        g_assert_cmpuint(block->len, ==, 3);
        id = g_ptr_array_index(block, 0);
        type = g_ptr_array_index(block, 1);
        data = g_ptr_array_index(block, 2);
        g_assert_true(g_str_has_prefix(id, "id: "));
        g_assert_cmpstr(type, ==, "event: workload");
        g_assert_true(g_str_has_prefix(data, "data: {"));
        g_assert_true(json_parser_load_from_data(parser, data + strlen("data: "), -1, NULL));
        event = g_new0(FeedEvent, 1);
        event->seq = g_ascii_strtoll(id + strlen("id: "), NULL, 10);
        event->type = g_strdup(type + strlen("event: "));
        event->data = json_object_ref(json_node_get_object(json_parser_get_root(parser)));
        g_assert_cmpint(json_object_get_int_member(event->data, "seq"), ==, event->seq);
        g_assert_false(json_object_has_member(event->data, "tenant_id"));
        return event;
    }
}

/* The next event of workload @id, skipping others' (the controller may
 * still move older ones). */
static FeedEvent *
sse_next_event_of(Sse *sse, const char *id)
{
    for (;;) {
        g_autoptr(FeedEvent) event = sse_next_event(sse);
        if (g_strcmp0(json_object_get_string_member(event->data, "workload_id"), id) == 0)
            return g_steal_pointer(&event);
    }
}

static void
assert_transition(FeedEvent *event, const char *from, const char *to)
{
    g_assert_cmpstr(json_object_get_string_member_with_default(event->data, "from_state", NULL), ==,
                    from);
    g_assert_cmpstr(json_object_get_string_member(event->data, "to_state"), ==, to);
}

/* GET /v1/events without follow: the tenant's events after a point, a
 * page of JSON, never another tenant's. */
static void
test_json_listing(void)
{
    g_autofree gchar *theirs = create_workload(token_b, "listing-theirs");
    g_autofree gchar *first = create_workload(server->owner_token, "listing-first");
    g_autofree gchar *second = create_workload(server->owner_token, "listing-second");
    g_autoptr(JsonNode) all_node = NULL;
    g_autoptr(JsonNode) after_node = NULL;
    g_autoptr(JsonNode) header_node = NULL;
    g_autoptr(JsonNode) b_node = NULL;
    g_autoptr(JsonNode) none_node = NULL;
    g_autoptr(GHashTable) b_ids = workload_ids(token_b);
    g_autofree gchar *query = NULL;
    JsonArray *all;
    JsonArray *after;
    JsonArray *b_events;
    JsonArray *none;
    gint64 last = -1;
    gint64 first_seq = -1;
    gint64 none_last = -1;
    guint first_index = 0;

    all = list_events(server->owner_token, "", &last, &all_node);
    g_assert_cmpuint(json_array_get_length(all), >=, 2);
    for (guint i = 0; i < json_array_get_length(all); i++) {
        JsonObject *event = json_array_get_object_element(all, i);
        const char *workload_id = json_object_get_string_member(event, "workload_id");

        g_assert_false(g_hash_table_contains(b_ids, workload_id));
        if (i > 0)
            g_assert_cmpint(event_seq(all, i), >, event_seq(all, i - 1));
        if (g_strcmp0(workload_id, first) == 0 && first_seq < 0) {
            first_seq = event_seq(all, i);
            first_index = i;
            g_assert_true(json_object_get_null_member(event, "from_state"));
            g_assert_cmpstr(json_object_get_string_member(event, "to_state"), ==, "pending");
        }
        /* The per-workload timeline's members, plus seq. */
        g_assert_true(json_object_has_member(event, "id"));
        g_assert_true(json_object_has_member(event, "reason"));
        g_assert_true(json_object_has_member(event, "note"));
        g_assert_true(json_object_has_member(event, "created_at"));
    }
    g_assert_cmpint(first_seq, >, 0);
    g_assert_cmpint(last, ==, event_seq(all, json_array_get_length(all) - 1));

    /* after: what follows, from the next one on. */
    query = g_strdup_printf("?after=%" G_GINT64_FORMAT, first_seq);
    after = list_events(server->owner_token, query, NULL, &after_node);
    g_assert_cmpint(event_seq(after, 0), ==, event_seq(all, first_index + 1));
    for (guint i = 0; i < json_array_get_length(after); i++)
        g_assert_cmpint(event_seq(after, i), >, first_seq);

    /* Last-Event-ID says the same, and wins over after. */
    {
        g_autofree gchar *value = g_strdup_printf("%" G_GINT64_FORMAT, first_seq);
        const char *headers[] = {"Last-Event-ID", value, NULL};
        g_autoptr(EinsoraTestResponse) response = einsora_test_request(
            server, "GET", "/v1/events?after=0", server->owner_token, NULL, NULL, headers);
        JsonArray *events;

        g_assert_cmpuint(response->status, ==, 200);
        header_node = json_node_ref(response->json);
        events = json_object_get_array_member(json_node_get_object(header_node), "events");
        g_assert_cmpint(event_seq(events, 0), ==, event_seq(after, 0));
    }

    /* B sees its own only. */
    b_events = list_events(token_b, "?after=0", NULL, &b_node);
    g_assert_cmpuint(json_array_get_length(b_events), >=, 1);
    for (guint i = 0; i < json_array_get_length(b_events); i++) {
        const char *workload_id = json_object_get_string_member(
            json_array_get_object_element(b_events, i), "workload_id");
        g_assert_true(g_hash_table_contains(b_ids, workload_id));
        g_assert_cmpstr(workload_id, !=, first);
        g_assert_cmpstr(workload_id, !=, second);
    }

    /* Past the end: nothing, and last_event_id stays where it was asked. */
    none = list_events(server->owner_token, "?after=900000000000", &none_last, &none_node);
    g_assert_cmpuint(json_array_get_length(none), ==, 0);
    g_assert_cmpint(none_last, ==, 900000000000);
}

/* What isn't a non-negative integer is 400 before anything streams; no
 * credentials is 401, as on every route. */
static void
test_refusals(void)
{
    const char *bad_queries[] = {
        "?after=-1",   "?after=abc",           "?after=1.5",
        "?after=",     "?after=%2B1",          "?after=9223372036854775808",
        "?follow=yes", "?follow=true&after=x", "?follow=true&from=1",
        "?since=1",
    };
    const char *bad_ids[] = {"abc", "-1", "1e3", "0x10", "99999999999999999999"};

    for (guint i = 0; i < G_N_ELEMENTS(bad_queries); i++) {
        g_autofree gchar *path = g_strdup_printf("/v1/events%s", bad_queries[i]);
        g_autoptr(EinsoraTestResponse) refused = call("GET", path, server->owner_token, NULL);

        g_test_message("GET %s", path);
        assert_error(refused, 400, "invalid_request");
    }
    for (guint i = 0; i < G_N_ELEMENTS(bad_ids); i++) {
        const char *headers[] = {"Last-Event-ID", bad_ids[i], NULL};
        const char *paths[] = {"/v1/events?follow=true", "/v1/events"};

        for (guint p = 0; p < G_N_ELEMENTS(paths); p++) {
            g_autoptr(EinsoraTestResponse) refused = einsora_test_request(
                server, "GET", paths[p], server->owner_token, NULL, NULL, headers);

            g_test_message("Last-Event-ID: %s on %s", bad_ids[i], paths[p]);
            assert_error(refused, 400, "invalid_request");
            g_assert_cmpstr(soup_message_headers_get_content_type(refused->headers, NULL), ==,
                            JSON);
        }
    }
    {
        g_autoptr(Sse) anonymous = sse_open(NULL, "?follow=true", NULL);
        g_autoptr(Sse) wrong = sse_open("tsk_not-a-token", "?follow=true", NULL);
        g_autoptr(EinsoraTestResponse) listing = call("GET", "/v1/events", NULL, NULL);

        g_assert_cmpuint(sse_status(anonymous), ==, 401);
        g_assert_cmpuint(sse_status(wrong), ==, 401);
        assert_error(listing, 401, "unauthenticated");
    }
}

/* A feed from now: no backlog, then the new workload's creation and every
 * step it takes, as they are committed, with the same seqs as the JSON
 * listing, no gap and nothing twice. The request is logged once, not per
 * event. */
static void
test_follow_live(void)
{
    g_autoptr(Sse) sse = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *request_id = NULL;
    g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func((GDestroyNotify)feed_event_free);
    g_autoptr(JsonNode) listing_node = NULL;
    JsonArray *listing;
    gint64 start = -1;
    gint64 before = -1;
    gint64 now = -1;
    const char *steps[][2] = {
        {NULL, "pending"},       {"pending", "provisioning"}, {"provisioning", "running"},
        {"running", "stopping"}, {"stopping", "stopped"},
    };

    /* From now: the feed stands at the tenant's latest event (older
     * workloads may still be moving meanwhile). */
    before = latest_seq(server->owner_token);
    sse = sse_open_ok(server->owner_token, "?follow=true", NULL, &start);
    now = latest_seq(server->owner_token);
    g_assert_cmpint(before, <=, start);
    g_assert_cmpint(start, <=, now);
    g_assert_cmpstr(
        soup_message_headers_get_content_type(soup_message_get_response_headers(sse->msg), NULL),
        ==, "text/event-stream");
    g_assert_cmpstr(sse_header(sse, "Cache-Control"), ==, "no-store");
    g_assert_cmpint(soup_message_headers_get_encoding(soup_message_get_response_headers(sse->msg)),
                    ==, SOUP_ENCODING_CHUNKED);
    request_id = g_strdup(sse_header(sse, "X-Request-ID"));
    g_assert_nonnull(request_id);

    id = create_workload(server->owner_token, "followed");
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        FeedEvent *event = sse_next_event_of(sse, id);

        assert_transition(event, steps[i][0], steps[i][1]);
        g_assert_cmpint(event->seq, >, start);
        if (seen->len > 0)
            g_assert_cmpint(event->seq, >,
                            ((FeedEvent *)g_ptr_array_index(seen, seen->len - 1))->seq);
        g_ptr_array_add(seen, event);
        if (g_str_equal(steps[i][1], "running"))
            stop_workload(server->owner_token, id);
    }

    /* The listing after the start has these, with the same seqs. */
    {
        g_autofree gchar *query = g_strdup_printf("?after=%" G_GINT64_FORMAT, start);
        guint found = 0;

        listing = list_events(server->owner_token, query, NULL, &listing_node);
        for (guint i = 0; i < json_array_get_length(listing); i++) {
            JsonObject *listed = json_array_get_object_element(listing, i);
            if (found < seen->len &&
                g_strcmp0(json_object_get_string_member(listed, "id"),
                          json_object_get_string_member(
                              ((FeedEvent *)g_ptr_array_index(seen, found))->data, "id")) == 0) {
                g_assert_cmpint(event_seq(listing, i), ==,
                                ((FeedEvent *)g_ptr_array_index(seen, found))->seq);
                found++;
            }
        }
        g_assert_cmpuint(found, ==, seen->len);
    }

    /* Closed by the client: the daemon notices, and its log has the
     * request line and the closing line, and nothing per event. */
    g_clear_pointer(&sse, sse_close);
    if (!wait_until(feed_closed_in_log, request_id, WAIT_SECONDS))
        g_error("the daemon didn't see feed %s closed", request_id);
    {
        g_autofree gchar *log = einsora_test_daemon_read_log(server);
        g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
        guint mentions = 0;

        for (guint i = 0; lines[i] != NULL; i++)
            mentions += strstr(lines[i], request_id) != NULL;
        g_assert_cmpuint(mentions, ==, 2);
    }
}

/* A feed runs as long as the token that opened it holds: once revoked,
 * the stream ends at its next write and shows nothing more. */
static void
test_revoked_token_ends_feed(void)
{
    g_autoptr(EinsoraTestResponse) made =
        call("POST", "/v1/tokens", server->owner_token, "{\"name\":\"feed-revoked\"}");
    g_autoptr(EinsoraTestResponse) revoked = NULL;
    g_autoptr(Sse) sse = NULL;
    g_autofree gchar *secret = NULL;
    g_autofree gchar *token_id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *id = NULL;
    gint64 at_revoke = 0;
    gint64 last_id = G_MAXINT64;
    JsonObject *answer;

    g_assert_cmpuint(made->status, ==, 201);
    answer = json_node_get_object(made->json);
    secret = g_strdup(json_object_get_string_member(answer, "secret"));
    token_id = g_strdup(
        json_object_get_string_member(json_object_get_object_member(answer, "token"), "id"));
    sse = sse_open_ok(secret, "?follow=true", NULL, NULL);

    path = g_strdup_printf("/v1/tokens/%s", token_id);
    revoked = call("DELETE", path, server->owner_token, NULL);
    g_assert_cmpuint(revoked->status, ==, 204);
    /* Events from before the revocation may still be on their way (a
     * workload of an earlier test moving, slowly under the sanitizers);
     * none from after it may show. */
    at_revoke = latest_seq(server->owner_token);
    /* An event for the tenant wakes the feed: it ends instead. */
    id = create_workload(server->owner_token, "after-revoke");
    for (;;) {
        g_autofree gchar *line = read_line_within(sse->lines, WAIT_SECONDS);

        if (line == NULL)
            break; /* the end of the stream */
        if (g_str_has_prefix(line, "id:"))
            last_id = g_ascii_strtoll(line + 3, NULL, 10);
        if (g_str_has_prefix(line, "data:"))
            g_assert_cmpint(last_id, <=, at_revoke);
    }
}

/* Last-Event-ID (or after) resumes right after what the client had:
 * the backlog first, in order, then what happens next. */
static void
test_resume(void)
{
    g_autoptr(Sse) sse = NULL;
    g_autoptr(JsonNode) listing_node = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *last_text = NULL;
    g_autofree gchar *query = NULL;
    JsonArray *listing;
    gint64 last = 0;
    gint64 start = -1;

    /* From the very start: the whole listing, event for event. */
    {
        const char *headers[] = {"Last-Event-ID", "0", NULL};

        listing = list_events(server->owner_token, "?after=0", NULL, &listing_node);
        g_assert_cmpuint(json_array_get_length(listing), >=, 3);
        sse = sse_open_ok(server->owner_token, "?follow=true", headers, &start);
        g_assert_cmpint(start, ==, 0);
        for (guint i = 0; i < 3; i++) {
            g_autoptr(FeedEvent) event = sse_next_event(sse);

            g_assert_cmpint(event->seq, ==, event_seq(listing, i));
            last = event->seq;
        }
        g_clear_pointer(&sse, sse_close);
    }

    /* While the client is away, more happens; it comes back with the
     * last ID it had and gets exactly what followed. */
    id = create_workload(server->owner_token, "while-away");
    g_clear_pointer(&listing_node, json_node_unref);
    query = g_strdup_printf("?after=%" G_GINT64_FORMAT, last);
    listing = list_events(server->owner_token, query, NULL, &listing_node);
    last_text = g_strdup_printf("%" G_GINT64_FORMAT, last);
    {
        /* Last-Event-ID wins over an after the URL still carries. */
        const char *headers[] = {"Last-Event-ID", last_text, NULL};

        sse = sse_open_ok(server->owner_token, "?follow=true&after=0", headers, &start);
        g_assert_cmpint(start, ==, last);
        for (guint i = 0; i < json_array_get_length(listing); i++) {
            g_autoptr(FeedEvent) event = sse_next_event(sse);
            g_assert_cmpint(event->seq, ==, event_seq(listing, i));
        }
        g_clear_pointer(&sse, sse_close);
    }
    {
        /* after alone does the same. */
        g_autofree gchar *with_after =
            g_strdup_printf("?follow=true&after=%" G_GINT64_FORMAT, last);
        g_autoptr(FeedEvent) event = NULL;

        sse = sse_open_ok(server->owner_token, with_after, NULL, &start);
        g_assert_cmpint(start, ==, last);
        event = sse_next_event(sse);
        g_assert_cmpint(event->seq, ==, event_seq(listing, 0));
    }
}

/* Two tenants' feeds side by side: each gets its own events only, in the
 * backlog and live. */
static void
test_tenant_isolation(void)
{
    const char *from_start[] = {"Last-Event-ID", "0", NULL};
    g_autoptr(Sse) feed_a = sse_open_ok(server->owner_token, "?follow=true", NULL, NULL);
    g_autoptr(Sse) feed_b = sse_open_ok(token_b, "?follow=true", from_start, NULL);
    g_autoptr(GHashTable) a_ids = workload_ids(server->owner_token);
    g_autoptr(JsonNode) b_node = NULL;
    g_autofree gchar *theirs = NULL;
    g_autofree gchar *ours = NULL;
    JsonArray *b_listing = list_events(token_b, "?after=0", NULL, &b_node);

    /* B's backlog: its own, none of A's. */
    for (guint i = 0; i < json_array_get_length(b_listing); i++) {
        g_autoptr(FeedEvent) event = sse_next_event(feed_b);
        const char *workload_id = json_object_get_string_member(event->data, "workload_id");

        g_assert_cmpint(event->seq, ==, event_seq(b_listing, i));
        g_assert_false(g_hash_table_contains(a_ids, workload_id));
    }

    /* B's new workload reaches B; A's next event is A's own, created
     * after it. */
    theirs = create_workload(token_b, "isolated-theirs");
    {
        g_autoptr(FeedEvent) event = sse_next_event_of(feed_b, theirs);
        assert_transition(event, NULL, "pending");
    }
    ours = create_workload(server->owner_token, "isolated-ours");
    for (;;) {
        g_autoptr(FeedEvent) event = sse_next_event(feed_a);
        const char *workload_id = json_object_get_string_member(event->data, "workload_id");

        g_assert_cmpstr(workload_id, !=, theirs);
        if (g_strcmp0(workload_id, ours) == 0)
            break;
    }
}

/* A session cookie opens a feed as well as a token does (a browser's
 * EventSource can't send Authorization). */
static void
test_session_cookie(void)
{
    g_autoptr(EinsoraTestResponse) login =
        call("POST", "/v1/login", NULL,
             "{\"email\":\"bob@globex.example\",\"password\":\"" B_PASSWORD "\"}");
    const char *set_cookie = soup_message_headers_get_one(login->headers, "Set-Cookie");
    g_autofree gchar *cookie = NULL;
    g_autoptr(Sse) sse = NULL;

    g_assert_cmpuint(login->status, ==, 200);
    g_assert_nonnull(set_cookie);
    cookie = g_strndup(set_cookie, strcspn(set_cookie, ";"));
    {
        const char *headers[] = {"Cookie", cookie, NULL};
        sse = sse_open_ok(NULL, "?follow=true", headers, NULL);
    }
}

/* A quiet feed says it is alive (every 300 ms here, 15 s by default). */
static void
test_keep_alive(void)
{
    g_autoptr(Sse) sse = sse_open_ok(server->owner_token, "?follow=true", NULL, NULL);
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    /* Events of workloads still moving may come first. */
    for (;;) {
        g_autoptr(GPtrArray) block = sse_read_block(sse);

        if (g_str_equal(g_ptr_array_index(block, 0), ": keep-alive")) {
            g_assert_cmpuint(block->len, ==, 1);
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
    }
}

/* Feeds closed by their clients are freed and stop counting: after 50,
 * a tenant can still open its 32, the 33rd is 429, another tenant isn't
 * affected, and closing one makes room again. */
static void
test_close_frees_and_limit(void)
{
    g_autoptr(GPtrArray) open = g_ptr_array_new_with_free_func((GDestroyNotify)sse_close);
    gint64 deadline;

    for (guint i = 0; i < 50; i++) {
        g_autoptr(Sse) sse = sse_open_ok(server->owner_token, "?follow=true", NULL, NULL);
    }
    /* The daemon sees each close as it comes; give the last ones a moment. */
    deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;
    while (open->len < MAX_FEEDS) {
        Sse *sse = sse_open(server->owner_token, "?follow=true", NULL);

        if (sse_status(sse) == 429) {
            sse_close(sse);
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_usleep(50 * 1000);
            continue;
        }
        g_assert_cmpuint(sse_status(sse), ==, 200);
        g_ptr_array_add(open, sse);
    }
    {
        g_autoptr(EinsoraTestResponse) refused =
            call("GET", "/v1/events?follow=true", server->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) listing =
            call("GET", "/v1/events?after=900000000000", server->owner_token, NULL);
        g_autoptr(Sse) other = sse_open_ok(token_b, "?follow=true", NULL, NULL);
        g_autoptr(EinsoraTestResponse) health = call("GET", "/healthz", NULL, NULL);

        assert_error(refused, 429, "too_many_requests");
        g_assert_cmpstr(soup_message_headers_get_one(refused->headers, "Retry-After"), ==, "5");
        /* The JSON listing isn't a feed. */
        g_assert_cmpuint(listing->status, ==, 200);
        g_assert_cmpuint(health->status, ==, 200);
    }
    g_ptr_array_remove_index(open, 0);
    deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;
    for (;;) {
        g_autoptr(Sse) again = sse_open(server->owner_token, "?follow=true", NULL);
        if (sse_status(again) == 200)
            break;
        g_assert_cmpuint(sse_status(again), ==, 429);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50 * 1000);
    }
    g_ptr_array_set_size(open, 0);
    {
        g_autofree gchar *log = einsora_test_daemon_read_log(server);
        guint closed = 0;

        for (const char *p = log; (p = strstr(p, "event feed closed")) != NULL; p++)
            closed++;
        g_assert_cmpuint(closed, >=, 50);
    }
}

/* EinsoraEventFeed, the client */

typedef struct {
    GPtrArray *events; /* JsonObject */
    GError *failure;
} Collected;

static void
on_feed_event(EinsoraEventFeed *feed, JsonObject *event, gpointer user_data)
{
    Collected *collected = user_data;
    g_ptr_array_add(collected->events, json_object_ref(event));
}

static void
on_feed_failed(EinsoraEventFeed *feed, GError *error, gpointer user_data)
{
    Collected *collected = user_data;
    collected->failure = g_error_copy(error);
}

static gboolean
feed_connected(gpointer data)
{
    return einsora_event_feed_get_connected(data);
}

static gboolean
feed_disconnected(gpointer data)
{
    return !einsora_event_feed_get_connected(data);
}

typedef struct {
    Collected *collected;
    const char *workload_id;
    const char *to_state;
} Awaited;

static gboolean
has_event(gpointer data)
{
    Awaited *awaited = data;

    for (guint i = 0; i < awaited->collected->events->len; i++) {
        JsonObject *event = g_ptr_array_index(awaited->collected->events, i);
        if (g_strcmp0(json_object_get_string_member(event, "workload_id"), awaited->workload_id) ==
                0 &&
            g_strcmp0(json_object_get_string_member(event, "to_state"), awaited->to_state) == 0)
            return TRUE;
    }
    return FALSE;
}

static void
wait_for_event(Collected *collected, const char *workload_id, const char *to_state)
{
    Awaited awaited = {collected, workload_id, to_state};

    if (!wait_until(has_event, &awaited, WAIT_SECONDS))
        g_error("no %s event for %s", to_state, workload_id);
}

static void
assert_increasing(Collected *collected)
{
    for (guint i = 1; i < collected->events->len; i++)
        g_assert_cmpint(
            json_object_get_int_member(g_ptr_array_index(collected->events, i), "seq"), >,
            json_object_get_int_member(g_ptr_array_index(collected->events, i - 1), "seq"));
}

static void
on_notify_connected(EinsoraEventFeed *feed, GParamSpec *pspec, gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
}

static gboolean
failed(gpointer data)
{
    return ((Collected *)data)->failure != NULL;
}

/* The client follows the feed, resumes after it was stopped, and after
 * the daemon itself restarts (kill -9) on the same port: nothing twice,
 * nothing missed. */
static void
test_client_feed(void)
{
    Collected collected = {g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref), NULL};
    g_autoptr(EinsoraEventFeed) feed = einsora_event_feed_new(server->uri, server->owner_token);
    g_autofree gchar *first = NULL;
    g_autofree gchar *away = NULL;
    g_autofree gchar *after_restart = NULL;
    g_autofree gchar *resume_from = NULL;
    g_autoptr(GUri) uri = g_uri_parse(server->uri, G_URI_FLAGS_NONE, NULL);

    einsora_event_feed_set_backoff(feed, 100, 500);
    g_signal_connect(feed, "event", G_CALLBACK(on_feed_event), &collected);
    g_signal_connect(feed, "failed", G_CALLBACK(on_feed_failed), &collected);
    einsora_event_feed_start(feed, NULL);
    g_assert_true(wait_until(feed_connected, feed, WAIT_SECONDS));

    first = create_workload(server->owner_token, "client-first");
    wait_for_event(&collected, first, "pending");
    wait_for_event(&collected, first, "running");
    g_assert_cmpstr(einsora_event_feed_get_last_event_id(feed), !=, NULL);

    /* Stopped, it hears nothing; started from its last ID, it gets what
     * it missed. */
    resume_from = g_strdup(einsora_event_feed_get_last_event_id(feed));
    einsora_event_feed_stop(feed);
    g_assert_false(einsora_event_feed_get_connected(feed));
    away = create_workload(server->owner_token, "client-away");
    einsora_event_feed_start(feed, resume_from);
    wait_for_event(&collected, away, "pending");
    assert_increasing(&collected);

    /* The daemon dies and comes back on the same port. */
    server->listen = g_strdup_printf("127.0.0.1:%d", g_uri_get_port(uri));
    einsora_test_daemon_kill(server);
    g_assert_true(wait_until(feed_disconnected, feed, WAIT_SECONDS));
    einsora_test_daemon_start(server);
    g_assert_true(wait_until(feed_connected, feed, WAIT_SECONDS));
    after_restart = create_workload(server->owner_token, "client-after-restart");
    wait_for_event(&collected, after_restart, "pending");
    assert_increasing(&collected);
    g_assert_null(collected.failure);

    einsora_event_feed_stop(feed);
    g_ptr_array_unref(collected.events);
}

/* A feed stopped, or dropped while connected, closes its connection:
 * more than the daemon's 32 per tenant come and go, each connecting at
 * once (a leaked one would soon be refused with 429, Retry-After 5 s). */
static void
test_client_feed_closes(void)
{
    for (guint i = 0; i < MAX_FEEDS + 8; i++) {
        g_autoptr(EinsoraEventFeed) feed = einsora_event_feed_new(server->uri, server->owner_token);

        einsora_event_feed_start(feed, NULL);
        if (!wait_until(feed_connected, feed, 3))
            g_error("feed %u didn't connect within 3 s", i);
        if (i % 2 == 0)
            einsora_event_feed_stop(feed);
    }
}

/* A token the server refuses is final: "failed", never connected. */
static void
test_client_feed_refused(void)
{
    Collected collected = {g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref), NULL};
    g_autoptr(EinsoraEventFeed) feed = einsora_event_feed_new(server->uri, "tsk_not-a-token");
    gboolean ever_connected = FALSE;

    g_signal_connect(feed, "failed", G_CALLBACK(on_feed_failed), &collected);
    g_signal_connect(feed, "notify::connected", G_CALLBACK(on_notify_connected), &ever_connected);
    einsora_event_feed_start(feed, NULL);
    g_assert_true(wait_until(failed, &collected, WAIT_SECONDS));
    g_assert_error(collected.failure, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_UNAUTHENTICATED);
    g_assert_cmpuint(einsora_client_error_get_status(collected.failure), ==, 401);
    g_assert_false(ever_connected);
    g_assert_false(einsora_event_feed_get_connected(feed));
    g_clear_error(&collected.failure);
    g_ptr_array_unref(collected.events);
}

/* einsora watch */

static GSubprocess *
spawn_watch(const char *token, GError **error, ...)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    const char *arg;
    va_list args;

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", server->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", token, TRUE);
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    g_subprocess_launcher_setenv(launcher, "TZ", "UTC", TRUE);
    g_ptr_array_add(argv, (gpointer)g_getenv("EINSORA_CLI"));
    g_ptr_array_add(argv, "watch");
    va_start(args, error);
    while ((arg = va_arg(args, const char *)) != NULL)
        g_ptr_array_add(argv, (gpointer)arg);
    va_end(args);
    g_ptr_array_add(argv, NULL);
    return g_subprocess_launcher_spawnv(launcher, (const char *const *)argv->pdata, error);
}

static gboolean
process_done(gpointer data)
{
    return g_subprocess_get_identifier(data) == NULL;
}

static void
on_waited(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_subprocess_wait_finish(G_SUBPROCESS(source), result, NULL);
    *(gboolean *)user_data = TRUE;
}

/* Ctrl+C ends it, with status 0. */
static void
interrupt_watch(GSubprocess *process)
{
    gboolean waited = FALSE;

    g_subprocess_send_signal(process, SIGINT);
    g_subprocess_wait_async(process, NULL, on_waited, &waited);
    g_assert_true(wait_until(flag_is_set, &waited, WAIT_SECONDS));
    g_assert_true(process_done(process));
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
}

/* "2026-01-02 03:04:05  01a226bf  NAME  FROM → TO  reason": the short
 * ID a prefix of @id, at least 8 long. */
static void
assert_watch_line(const char *line, const char *id, const char *name, const char *step)
{
    g_autofree gchar *middle = g_strdup_printf("  %s  %s  ", name, step);
    const char *found = strstr(line, middle);
    const char *short_id = line + strlen("2026-01-02 03:04:05  ");

    g_assert_nonnull(found);
    g_assert_true(g_ascii_isdigit(line[0]));
    g_assert_cmpuint((gsize)(found - line), >, strlen("2026-01-02 03:04:05  "));
    g_assert_cmpuint((gsize)(found - short_id), >=, 8);
    g_assert_true(strncmp(short_id, id, (gsize)(found - short_id)) == 0);
}

/* The next line of @out that names @name. */
static gchar *
next_line_naming(GDataInputStream *out, const char *name)
{
    for (;;) {
        gchar *line = read_line_within(out, WAIT_SECONDS);

        g_assert_nonnull(line);
        g_test_message("watch: %s", line);
        if (strstr(line, name) != NULL)
            return line;
        g_free(line);
    }
}

static void
test_cli_watch(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) watch = spawn_watch(server->owner_token, &error, NULL);
    g_autoptr(GDataInputStream) out = NULL;
    g_autoptr(GDataInputStream) err = NULL;
    g_autofree gchar *ready = NULL;
    g_autofree gchar *id = NULL;
    const char *steps[] = {"- → pending", "pending → provisioning", "provisioning → running",
                           "running → stopping", "stopping → stopped"};

    g_assert_no_error(error);
    out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(watch));
    err = g_data_input_stream_new(g_subprocess_get_stderr_pipe(watch));
    /* It says on stderr when it is following: from then on, nothing is
     * missed. */
    ready = read_line_within(err, WAIT_SECONDS);
    g_assert_cmpstr(ready, ==, "Watching for events (Ctrl+C to stop)…");

    id = create_workload(server->owner_token, "watched-by-cli");
    wait_for_state(server->owner_token, id, "running");
    stop_workload(server->owner_token, id);
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autofree gchar *line = next_line_naming(out, "watched-by-cli");
        assert_watch_line(line, id, "watched-by-cli", steps[i]);
    }
    interrupt_watch(watch);

    /* One workload, from the start: its whole timeline and nothing else. */
    {
        g_autoptr(GSubprocess) one =
            spawn_watch(server->owner_token, &error, "--from-start", id, NULL);
        g_autoptr(GDataInputStream) one_out = NULL;

        g_assert_no_error(error);
        one_out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(one));
        for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
            g_autofree gchar *line = read_line_within(one_out, WAIT_SECONDS);
            g_assert_nonnull(line);
            assert_watch_line(line, id, "watched-by-cli", steps[i]);
        }
        interrupt_watch(one);
    }

    /* A refused token: the API's error, status 1, no waiting. */
    {
        g_autoptr(GSubprocess) refused = spawn_watch("tsk_not-a-token", &error, NULL);
        g_autofree gchar *stdout_text = NULL;
        g_autofree gchar *stderr_text = NULL;

        g_assert_no_error(error);
        g_assert_true(
            g_subprocess_communicate_utf8(refused, NULL, NULL, &stdout_text, &stderr_text, &error));
        g_assert_no_error(error);
        g_assert_cmpint(g_subprocess_get_exit_status(refused), ==, 1);
        g_assert_true(g_str_has_prefix(stderr_text, "einsora: unauthenticated: "));
        g_assert_cmpstr(stdout_text, ==, "");
    }
}

/* Last: no token is anywhere in the daemon's log. */
static void
test_log_has_no_secrets(void)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(server);

    g_assert_null(strstr(log, server->owner_token));
    g_assert_null(strstr(log, token_b));
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    server = einsora_test_daemon_new();
    einsora_test_daemon_setenv(server, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(server, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    einsora_test_daemon_setenv(server, "EINSORA_TEST_EVENTS_KEEPALIVE_MS", "300");
    /* Room for every workload the tests make: none waits in queued. */
    einsora_test_daemon_setenv(server, "EINSORA_SIM_CPUS", "256");
    einsora_test_daemon_setenv(server, "EINSORA_SIM_MEMORY_MIB", "1048576");
    einsora_test_daemon_start(server);
    einsora_test_daemon_stop(server);
    token_b =
        einsora_test_daemon_create_account(server, "globex", "bob@globex.example", B_PASSWORD);
    einsora_test_daemon_start(server);

    g_test_add_func("/events/list/json-after-and-tenant", test_json_listing);
    g_test_add_func("/events/refusals/400-and-401", test_refusals);
    g_test_add_func("/events/follow/live-from-now-logged-once", test_follow_live);
    g_test_add_func("/events/follow/resume-without-gap-or-repeat", test_resume);
    g_test_add_func("/events/follow/tenant-isolation", test_tenant_isolation);
    g_test_add_func("/events/follow/session-cookie", test_session_cookie);
    g_test_add_func("/events/follow/revoked-token-ends-feed", test_revoked_token_ends_feed);
    g_test_add_func("/events/follow/keep-alive", test_keep_alive);
    g_test_add_func("/events/follow/closed-feeds-freed-and-limit", test_close_frees_and_limit);
    g_test_add_func("/events/client/feed-resumes-across-restart", test_client_feed);
    g_test_add_func("/events/client/refused-token-fails", test_client_feed_refused);
    g_test_add_func("/events/client/stopped-or-dropped-feeds-close", test_client_feed_closes);
    g_test_add_func("/events/cli/watch", test_cli_watch);
    g_test_add_func("/events/log/no-secrets", test_log_has_no_secrets);
    status = g_test_run();

    einsora_test_daemon_stop(server);
    einsora_test_daemon_free(server);
    g_free(token_b);
    return status;
}
