/* Paged lists (docs/adr/0027) against the real einsora-daemon on a free
 * loopback port: every list route walks with ?limit= and ?cursor=, stays
 * stable while rows are created and deleted between pages, refuses limits
 * out of range and cursors it did not give, and no list holds the loop
 * long enough to keep /healthz waiting.
 *
 * Tenant A is Solo's first-run owner and creates its workloads through
 * the API. Tenant B gets BIG_TENANT_WORKLOADS rows straight into SQLite
 * while the daemon is stopped: the API writes the same rows, but 20,000
 * POSTs would be most of the test's time and test nothing here. */
#include <gio/gio.h>

#include "einsora-test-daemon.h"
#include "einsora-test-workload-rows.h"

#define JSON "application/json"
#define BIG_TENANT_WORKLOADS 20000
#define MAX_LIMIT 1000
#define DEFAULT_LIMIT 100

static EinsoraTestDaemon *server_daemon;
static gchar *token_b;

static EinsoraTestResponse *
call(const char *method, const char *path, const char *token, const char *body)
{
    return einsora_test_request(server_daemon, method, path, token, JSON, body, NULL);
}

static gchar *
create_workload(const char *token, const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\": \"notebook\", \"name\": \"%s\", "
                                             "\"gpu_class\": \"cpu-2c-4g\", "
                                             "\"image\": \"jupyter-notebook\"}",
                                             name);
    g_autoptr(EinsoraTestResponse) response = call("POST", "/v1/workloads", token, body);

    g_assert_cmpuint(response->status, ==, 201);
    return g_strdup(einsora_test_response_string(response, "id"));
}

static void
assert_invalid_request(EinsoraTestResponse *response, const char *mentions)
{
    JsonObject *error;

    if (response->status != 400)
        g_test_message("body: %s", response->body);
    g_assert_cmpuint(response->status, ==, 400);
    g_assert_cmpstr(einsora_test_response_error_code(response), ==, "invalid_request");
    error = json_object_get_object_member(json_node_get_object(response->json), "error");
    if (strstr(json_object_get_string_member(error, "message"), mentions) == NULL)
        g_test_message("body: %s", response->body);
    g_assert_nonnull(strstr(json_object_get_string_member(error, "message"), mentions));
}

/* The page's items, and its next_cursor (NULL on the last page). The
 * member is always there, so clients need not guess. */
static JsonArray *
page_items(EinsoraTestResponse *response, const char *member, const char **next_cursor)
{
    JsonObject *root;

    if (response->status != 200)
        g_test_message("body: %s", response->body);
    g_assert_cmpuint(response->status, ==, 200);
    g_assert_nonnull(response->json);
    root = json_node_get_object(response->json);
    g_assert_true(json_object_has_member(root, "next_cursor"));
    g_assert_cmpuint(json_object_get_size(root), ==, 2);
    *next_cursor = json_object_get_string_member_with_default(root, "next_cursor", NULL);
    return json_object_get_array_member(root, member);
}

static gchar *
path_with(const char *path, const char *limit, const char *cursor)
{
    g_autoptr(GString) out = g_string_new(path);
    char sep = strchr(path, '?') != NULL ? '&' : '?';

    if (limit != NULL) {
        g_string_append_printf(out, "%climit=%s", sep, limit);
        sep = '&';
    }
    if (cursor != NULL) {
        g_autofree gchar *escaped = g_uri_escape_string(cursor, NULL, FALSE);
        g_string_append_printf(out, "%ccursor=%s", sep, escaped);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* Follows the cursors from the start, @limit at a time; calls @between
 * after the first page. Returns the IDs in the order they came. */
static GPtrArray *
walk(const char *path, const char *member, const char *token, const char *limit,
     void (*between)(void), guint *pages)
{
    GPtrArray *ids = g_ptr_array_new_with_free_func(g_free);
    g_autofree gchar *cursor = NULL;

    *pages = 0;
    do {
        g_autofree gchar *url = path_with(path, limit, cursor);
        g_autoptr(EinsoraTestResponse) response = call("GET", url, token, NULL);
        const char *next = NULL;
        JsonArray *items = page_items(response, member, &next);

        g_assert_cmpuint(json_array_get_length(items), <=, g_ascii_strtoull(limit, NULL, 10));
        for (guint i = 0; i < json_array_get_length(items); i++)
            g_ptr_array_add(ids, g_strdup(json_object_get_string_member(
                                     json_array_get_object_element(items, i), "id")));
        g_free(cursor);
        cursor = g_strdup(next);
        if (++*pages == 1 && between != NULL)
            between();
    } while (cursor != NULL);
    return ids;
}

static guint
count_of(GPtrArray *ids, const char *id)
{
    guint count = 0;

    for (guint i = 0; i < ids->len; i++)
        count += g_strcmp0(g_ptr_array_index(ids, i), id) == 0;
    return count;
}

/* Workloads: what changes between two pages */

static gchar *created_first[7];
static gchar *created_between;

/* Deletes one workload of the first page and one of the second, and
 * creates one, while the client is between pages. */
static void
change_between_pages(void)
{
    for (guint i = 1; i <= 4; i += 3) {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", created_first[i]);
        g_autoptr(EinsoraTestResponse) deleted =
            call("DELETE", path, server_daemon->owner_token, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    created_between = create_workload(server_daemon->owner_token, "between");
}

static void
test_workloads_walk_stable(void)
{
    g_autoptr(GPtrArray) walked = NULL;
    g_autoptr(EinsoraTestResponse) whole = NULL;
    g_autoptr(GPtrArray) ids = NULL;
    JsonArray *items;
    const char *next = NULL;
    guint pages = 0;

    for (guint i = 0; i < G_N_ELEMENTS(created_first); i++) {
        g_autofree gchar *name = g_strdup_printf("paged-%u", i);
        created_first[i] = create_workload(server_daemon->owner_token, name);
    }
    walked = walk("/v1/workloads", "workloads", server_daemon->owner_token, "3",
                  change_between_pages, &pages);

    /* Every workload there throughout came once, in creation order; the
     * one made meanwhile is found at the end. DELETE leaves a workload
     * "deleting" (listed) until the controller is done, so both deleted
     * ones are there too, each once. */
    g_assert_cmpuint(pages, ==, 3);
    g_assert_cmpuint(walked->len, ==, G_N_ELEMENTS(created_first) + 1);
    for (guint i = 0; i < G_N_ELEMENTS(created_first); i++) {
        g_assert_cmpuint(count_of(walked, created_first[i]), ==, 1);
        g_assert_cmpstr(g_ptr_array_index(walked, i), ==, created_first[i]);
    }
    g_assert_cmpstr(g_ptr_array_index(walked, walked->len - 1), ==, created_between);

    /* A short list is one page with no cursor. */
    whole = call("GET", "/v1/workloads", server_daemon->owner_token, NULL);
    items = page_items(whole, "workloads", &next);
    g_assert_cmpuint(json_array_get_length(items), ==, walked->len);
    g_assert_null(next);
    ids = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < json_array_get_length(items); i++) {
        JsonObject *item = json_array_get_object_element(items, i);
        /* The same item shape as GET /v1/workloads/{id}. */
        g_assert_cmpuint(json_object_get_size(item), ==, 17);
        g_assert_true(json_object_has_member(item, "placed_class"));
        g_assert_true(json_object_has_member(item, "updated_at"));
    }
}

/* The big tenant: the default page, then the largest one from its cursor. */
static void
test_workloads_default_and_max(void)
{
    const char *next = NULL;
    g_autoptr(EinsoraTestResponse) first = call("GET", "/v1/workloads", token_b, NULL);
    JsonArray *items = page_items(first, "workloads", &next);
    g_autofree gchar *cursor = g_strdup(next);
    g_autofree gchar *url = path_with("/v1/workloads", "1000", cursor);
    g_autoptr(EinsoraTestResponse) largest = call("GET", url, token_b, NULL);
    JsonArray *more = page_items(largest, "workloads", &next);
    JsonObject *last_of_first = json_array_get_object_element(items, DEFAULT_LIMIT - 1);
    JsonObject *first_of_next = json_array_get_object_element(more, 0);

    g_assert_cmpuint(json_array_get_length(items), ==, DEFAULT_LIMIT);
    g_assert_nonnull(cursor);
    g_assert_cmpuint(json_array_get_length(more), ==, MAX_LIMIT);
    g_assert_nonnull(next);
    g_assert_cmpstr(json_object_get_string_member(last_of_first, "name"), ==, "big-00099");
    g_assert_cmpstr(json_object_get_string_member(first_of_next, "name"), ==, "big-00100");
    /* The cursor says nothing the page didn't: no tenant ID, no token. */
    g_assert_null(strstr(cursor, token_b));
    {
        g_autofree gchar *decoded = NULL;
        g_autoptr(GString) standard = g_string_new(cursor);
        gsize length = 0;

        g_string_replace(standard, "-", "+", 0);
        g_string_replace(standard, "_", "/", 0);
        while (standard->len % 4 != 0)
            g_string_append_c(standard, '=');
        decoded = (gchar *)g_base64_decode(standard->str, &length);
        g_assert_null(g_strstr_len(decoded, (gssize)length,
                                   json_object_get_string_member(last_of_first, "tenant_id")));
        g_assert_nonnull(g_strstr_len(decoded, (gssize)length,
                                      json_object_get_string_member(last_of_first, "id")));
    }
}

/* Every list route refuses a limit out of range and a cursor it did not
 * give, with a 400 that says which; none of them is read as "from the
 * start". */
static void
test_limits_and_cursors_refused(void)
{
    g_autofree gchar *id = create_workload(server_daemon->owner_token, "refusals");
    g_autofree gchar *events = g_strdup_printf("/v1/workloads/%s/events", id);
    g_autofree gchar *other_id = create_workload(server_daemon->owner_token, "other-timeline");
    g_autofree gchar *other_events = g_strdup_printf("/v1/workloads/%s/events", other_id);
    g_autofree gchar *workload_path = g_strdup_printf("/v1/workloads/%s", id);
    const char *const lists[] = {"/v1/workloads", "/v1/tokens", events};
    const char *const bad_limits[] = {"0", "1001", "-1", "+5",   "abc",
                                      "",  "1.5",  " 7", "0x10", "99999999999999999999"};
    const char *const junk_cursors[] = {
        "", "!!!!", "bm90IGEgY3Vyc29y", "a", "YWJj===", "a/b+c", "%00"};
    g_autoptr(GHashTable) real = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);

    /* A cursor of each list, to try on the others. A second token and a
     * second timeline row, so each has a next page at limit=1. */
    {
        g_autoptr(EinsoraTestResponse) deleted =
            call("DELETE", workload_path, server_daemon->owner_token, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    {
        g_autoptr(EinsoraTestResponse) token =
            call("POST", "/v1/tokens", server_daemon->owner_token, "{\"name\":\"pager\"}");
        g_assert_cmpuint(token->status, ==, 201);
    }
    for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
        g_autofree gchar *url = path_with(lists[i], "1", NULL);
        g_autoptr(EinsoraTestResponse) page = call("GET", url, server_daemon->owner_token, NULL);
        const char *next = NULL;

        page_items(page, i == 1 ? "tokens" : (i == 2 ? "events" : "workloads"), &next);
        g_assert_nonnull(next);
        g_hash_table_insert(real, (gpointer)lists[i], g_strdup(next));
    }

    for (guint i = 0; i < G_N_ELEMENTS(lists); i++) {
        for (guint j = 0; j < G_N_ELEMENTS(bad_limits); j++) {
            g_autofree gchar *escaped = g_uri_escape_string(bad_limits[j], NULL, FALSE);
            g_autofree gchar *url = path_with(lists[i], escaped, NULL);
            g_autoptr(EinsoraTestResponse) refused =
                call("GET", url, server_daemon->owner_token, NULL);
            assert_invalid_request(refused, "\"limit\"");
        }
        for (guint j = 0; j < G_N_ELEMENTS(junk_cursors); j++) {
            g_autofree gchar *url = path_with(lists[i], NULL, junk_cursors[j]);
            g_autoptr(EinsoraTestResponse) refused =
                call("GET", url, server_daemon->owner_token, NULL);
            assert_invalid_request(refused, "\"cursor\"");
        }
        /* Another list's cursor, and a real one cut short. */
        for (guint j = 0; j < G_N_ELEMENTS(lists); j++) {
            const char *cursor = g_hash_table_lookup(real, lists[j]);
            g_autofree gchar *cut = g_strndup(cursor, strlen(cursor) - 6);
            g_autofree gchar *url = path_with(lists[i], NULL, i == j ? cut : cursor);
            g_autoptr(EinsoraTestResponse) refused =
                call("GET", url, server_daemon->owner_token, NULL);
            assert_invalid_request(refused, "\"cursor\"");
        }
        /* The largest page is fine. */
        {
            g_autofree gchar *url = path_with(lists[i], "1000", NULL);
            g_autoptr(EinsoraTestResponse) fine =
                call("GET", url, server_daemon->owner_token, NULL);
            g_assert_cmpuint(fine->status, ==, 200);
        }
    }

    /* One workload's timeline cursor is not another's. */
    {
        g_autofree gchar *url =
            path_with(other_events, NULL, g_hash_table_lookup(real, (gpointer)events));
        g_autoptr(EinsoraTestResponse) refused = call("GET", url, server_daemon->owner_token, NULL);
        assert_invalid_request(refused, "\"cursor\"");
    }
    /* A's cursor is not B's: B's own list is scoped to B whatever the
     * cursor says, and a cursor of A's is refused rather than read. */
    {
        g_autofree gchar *url =
            path_with("/v1/workloads", NULL, g_hash_table_lookup(real, "/v1/workloads"));
        g_autoptr(EinsoraTestResponse) refused = call("GET", url, token_b, NULL);
        assert_invalid_request(refused, "\"cursor\"");
    }
    /* Another tenant's timeline is not found, page or no page. */
    {
        g_autofree gchar *url = path_with(events, "1", NULL);
        g_autoptr(EinsoraTestResponse) hidden = call("GET", url, token_b, NULL);
        g_assert_cmpuint(hidden->status, ==, 404);
    }
    /* The feed's page takes limit too, in the same bounds. */
    {
        g_autoptr(EinsoraTestResponse) refused =
            call("GET", "/v1/events?after=0&limit=1001", server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) zero =
            call("GET", "/v1/events?after=0&limit=0", server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) cursor =
            call("GET", "/v1/events?cursor=abc", server_daemon->owner_token, NULL);
        assert_invalid_request(refused, "\"limit\"");
        assert_invalid_request(zero, "\"limit\"");
        assert_invalid_request(cursor, "\"cursor\"");
    }
}

static void
test_events_and_tokens_walk(void)
{
    g_autofree gchar *id = create_workload(server_daemon->owner_token, "timeline");
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    g_autofree gchar *events = g_strdup_printf("%s/events", path);
    g_autoptr(EinsoraTestResponse) whole = NULL;
    g_autoptr(GPtrArray) walked = NULL;
    g_autoptr(GPtrArray) tokens = NULL;
    const char *next = NULL;
    JsonArray *items;
    guint pages = 0;

    /* created, then deleting: at least two rows. */
    {
        g_autoptr(EinsoraTestResponse) deleted =
            call("DELETE", path, server_daemon->owner_token, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    whole = call("GET", events, server_daemon->owner_token, NULL);
    items = page_items(whole, "events", &next);
    g_assert_null(next);
    g_assert_cmpuint(json_array_get_length(items), >=, 2);
    walked = walk(events, "events", server_daemon->owner_token, "1", NULL, &pages);
    g_assert_cmpuint(walked->len, ==, json_array_get_length(items));
    g_assert_cmpuint(pages, ==, walked->len);
    for (guint i = 0; i < walked->len; i++)
        g_assert_cmpstr(
            g_ptr_array_index(walked, i), ==,
            json_object_get_string_member(json_array_get_object_element(items, i), "id"));

    for (guint i = 0; i < 3; i++) {
        g_autoptr(EinsoraTestResponse) token =
            call("POST", "/v1/tokens", server_daemon->owner_token, "{\"name\":\"walk\"}");
        g_assert_cmpuint(token->status, ==, 201);
    }
    tokens = walk("/v1/tokens", "tokens", server_daemon->owner_token, "2", NULL, &pages);
    g_assert_cmpuint(tokens->len, >=, 4);
    for (guint i = 0; i < tokens->len; i++)
        g_assert_cmpuint(count_of(tokens, g_ptr_array_index(tokens, i)), ==, 1);
    {
        g_autoptr(EinsoraTestResponse) all =
            call("GET", "/v1/tokens?limit=1000", server_daemon->owner_token, NULL);
        JsonArray *listed = page_items(all, "tokens", &next);
        g_assert_cmpuint(json_array_get_length(listed), ==, tokens->len);
    }

    /* The feed's page: ?limit= bounds it, last_event_id goes on. */
    {
        g_autoptr(EinsoraTestResponse) two =
            call("GET", "/v1/events?after=0&limit=2", server_daemon->owner_token, NULL);
        JsonObject *root;
        g_assert_cmpuint(two->status, ==, 200);
        root = json_node_get_object(two->json);
        g_assert_cmpuint(json_array_get_length(json_object_get_array_member(root, "events")), ==,
                         2);
        g_assert_cmpint(json_object_get_int_member(root, "last_event_id"), >, 0);
    }
}

/* The loop bound */

typedef struct {
    GSocketConnection *connection;
    gchar *request;
    gsize received;
    guint status;
} RawExchange;

static GSocketConnection *
connect_to_daemon(void)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(GUri) uri = g_uri_parse(server_daemon->uri, G_URI_FLAGS_NONE, &error);
    GSocketConnection *connection;

    g_assert_no_error(error);
    connection = g_socket_client_connect_to_host(client, g_uri_get_host(uri), g_uri_get_port(uri),
                                                 NULL, &error);
    g_assert_no_error(error);
    return connection;
}

static void
send_request(GSocketConnection *connection, const char *request)
{
    g_autoptr(GError) error = NULL;
    gsize written = 0;

    g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(connection)),
                                            request, strlen(request), &written, NULL, &error));
    g_assert_no_error(error);
}

/* Reads the answer to its end (Connection: close); returns its status. */
static guint
read_answer(GSocketConnection *connection, gsize *received)
{
    GInputStream *input = g_io_stream_get_input_stream(G_IO_STREAM(connection));
    g_autoptr(GString) head = g_string_new(NULL);
    char buffer[65536];
    gssize n;
    guint status = 0;

    *received = 0;
    while ((n = g_input_stream_read(input, buffer, sizeof(buffer), NULL, NULL)) > 0) {
        if (head->len < 16)
            g_string_append_len(head, buffer, MIN(n, 16));
        *received += (gsize)n;
    }
    if (head->len >= 12)
        status = (guint)g_ascii_strtoull(head->str + 9, NULL, 10);
    return status;
}

static gpointer
read_answer_thread(gpointer data)
{
    RawExchange *exchange = data;

    exchange->status = read_answer(exchange->connection, &exchange->received);
    return NULL;
}

/* With the big tenant's largest pages in flight on several connections,
 * /healthz is answered after at most one slice of each (ADR 0027: 100
 * rows a turn of the loop, about 1 ms in a release build on this shared
 * 2-CPU machine). The bound checked is 250 ms, far above four slices or
 * even four whole pages, because this machine runs other builds and
 * tests at once and a tighter one would fail on a busy minute, not on a
 * regression. Before pages, one answer of this tenant's whole 20,000 rows
 * held the loop for about 570 ms, so the bound still tells the two apart.
 * The worst of several rounds counts. */
static void
test_loop_bound(void)
{
    const guint lists = 4;
    const guint rounds = 5;
    g_autofree gchar *list_request = g_strdup_printf(
        "GET /v1/workloads?limit=%u HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
        "Connection: close\r\n\r\n",
        MAX_LIMIT, token_b);
    const char *health_request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 "Connection: close\r\n\r\n";
    gint64 worst_us = 0;

    for (guint round = 0; round < rounds; round++) {
        RawExchange exchanges[4];
        GThread *readers[4];
        g_autoptr(GSocketConnection) health = connect_to_daemon();
        gsize health_bytes = 0;
        gint64 sent_us;
        gint64 took_us;

        /* Connected first, so the handshakes aren't what is measured. */
        for (guint i = 0; i < lists; i++) {
            exchanges[i] = (RawExchange){connect_to_daemon(), NULL, 0, 0};
            readers[i] = NULL;
        }
        for (guint i = 0; i < lists; i++) {
            send_request(exchanges[i].connection, list_request);
            readers[i] = g_thread_new("list-reader", read_answer_thread, &exchanges[i]);
        }
        sent_us = g_get_monotonic_time();
        send_request(health, health_request);
        g_assert_cmpuint(read_answer(health, &health_bytes), ==, 200);
        took_us = g_get_monotonic_time() - sent_us;
        worst_us = MAX(worst_us, took_us);
        for (guint i = 0; i < lists; i++) {
            g_thread_join(readers[i]);
            /* Each was a whole page of 1,000, not a refusal. */
            g_assert_cmpuint(exchanges[i].status, ==, 200);
            g_assert_cmpuint(exchanges[i].received, >, MAX_LIMIT * 300);
            g_object_unref(exchanges[i].connection);
        }
        g_test_message("round %u: /healthz answered in %" G_GINT64_FORMAT " us", round, took_us);
    }
    g_test_message("worst /healthz beside %u lists of %u: %" G_GINT64_FORMAT " us", lists,
                   MAX_LIMIT, worst_us);
    g_assert_cmpint(worst_us, <, 250 * 1000);
}

/* Clients that hang up while their pages are read, slice by slice: the
 * daemon finishes or drops each without a critical, keeps serving, and
 * the next page is whole. */
static void
test_hang_up_mid_page(void)
{
    g_autofree gchar *request = g_strdup_printf(
        "GET /v1/workloads?limit=%u HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
        "\r\n",
        MAX_LIMIT, token_b);

    for (guint i = 0; i < 20; i++) {
        g_autoptr(GSocketConnection) connection = connect_to_daemon();
        g_autoptr(GError) error = NULL;

        send_request(connection, request);
        /* Gone before the first slices are out. */
        g_assert_true(g_io_stream_close(G_IO_STREAM(connection), NULL, &error));
        g_assert_no_error(error);
    }
    {
        g_autoptr(EinsoraTestResponse) health = call("GET", "/healthz", NULL, NULL);
        g_autoptr(EinsoraTestResponse) page =
            call("GET", "/v1/workloads?limit=1000", token_b, NULL);
        const char *next = NULL;

        g_assert_cmpuint(health->status, ==, 200);
        g_assert_cmpuint(json_array_get_length(page_items(page, "workloads", &next)), ==,
                         MAX_LIMIT);
    }
    {
        g_autofree gchar *log = einsora_test_daemon_read_log(server_daemon);
        g_assert_null(strstr(log, "CRITICAL"));
    }
}

int
main(int argc, char **argv)
{
    g_autofree gchar *tenant_b = NULL;
    int status;

    g_test_init(&argc, &argv, NULL);
    server_daemon = einsora_test_daemon_new();
    /* States change here only through the API. */
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_WAKE", "off");
    einsora_test_daemon_start(server_daemon);
    einsora_test_daemon_stop(server_daemon);
    token_b = einsora_test_daemon_create_account(server_daemon, "globex", "bob@globex.example",
                                                 "correct horse battery staple 42");
    einsora_test_daemon_start(server_daemon);
    {
        g_autoptr(EinsoraTestResponse) me = call("GET", "/v1/me", token_b, NULL);
        g_assert_cmpuint(me->status, ==, 200);
        tenant_b = g_strdup(einsora_test_response_string(me, "tenant_id"));
    }
    einsora_test_daemon_stop(server_daemon);
    einsora_test_insert_workloads(server_daemon, tenant_b, BIG_TENANT_WORKLOADS, "big");
    einsora_test_daemon_start(server_daemon);

    g_test_add_func("/pages/workloads/walk-stable-under-creates-and-deletes",
                    test_workloads_walk_stable);
    g_test_add_func("/pages/workloads/default-and-largest-page", test_workloads_default_and_max);
    g_test_add_func("/pages/every-list/refuses-bad-limits-and-foreign-cursors",
                    test_limits_and_cursors_refused);
    g_test_add_func("/pages/events-and-tokens/walk", test_events_and_tokens_walk);
    g_test_add_func("/pages/loop-bound/healthz-beside-largest-lists", test_loop_bound);
    g_test_add_func("/pages/workloads/client-hangs-up-mid-page", test_hang_up_mid_page);
    status = g_test_run();

    einsora_test_daemon_free(server_daemon);
    g_free(token_b);
    for (guint i = 0; i < G_N_ELEMENTS(created_first); i++)
        g_free(created_first[i]);
    g_free(created_between);
    return status;
}
