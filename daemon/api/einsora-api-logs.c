/* GET /v1/workloads/{id}/logs: one attempt's output, redacted
 * (docs/adr/0041).
 *
 * Without follow, the text there is now. With follow=true, a chunked
 * text/plain answer: that text, then each line as it is written, until
 * the attempt is over. Plain text rather than server-sent events: a log
 * is lines already, `curl -N` shows them as they come, and nothing needs
 * an ID to resume (a client reads again with since=).
 *
 * A follower reads the files, not a buffer the workload fills: the next
 * step is read only once libsoup has written the last ("wrote-chunk"),
 * so a slow client holds one step in memory however fast the workload
 * writes. One that falls further behind than the log keeps is told so
 * in a last line and the answer ends. The files are written by other
 * processes, so a follower looks at them every POLL_MS. */
#define G_LOG_DOMAIN "einsora-api"

#include <string.h>

#include "einsora-api-routes.h"
#include "einsora-error.h"
#include "einsora-http-edge.h"
#include "einsora-log-reader.h"

#define POLL_MS 250
/* The credentials and the attempt are looked at once in this many polls. */
#define CHECK_EVERY 4
#define STEP_BYTES (64 * 1024)
#define MAX_TAIL G_GUINT64_CONSTANT(1000000)

typedef struct {
    EinsoraApiServer *server;   /* owned */
    EinsoraApiRequest *request; /* owned */
    SoupServerMessage *msg;     /* owned */
    EinsoraLogReader *reader;
    gchar *tenant_id;
    gchar *workload_id;
    gint64 attempt;
    guint in_flight; /* chunks appended, not yet written */
    guint poll;
    guint polls;
    gboolean over; /* the attempt ended: what is left is drained, then the end */
    GSource *hangup_watch;
    gulong wrote_handler;
    gulong finished_handler;
    gulong disconnected_handler;
    gboolean ended;
} Follow;

static gboolean
release_message(gpointer data)
{
    g_object_unref(data);
    return G_SOURCE_REMOVE;
}

static void
follow_free(Follow *follow)
{
    if (follow->msg != NULL)
        g_idle_add(release_message, g_steal_pointer(&follow->msg));
    g_clear_object(&follow->request);
    g_clear_object(&follow->server);
    g_clear_pointer(&follow->reader, einsora_log_reader_free);
    g_free(follow->tenant_id);
    g_free(follow->workload_id);
    g_free(follow);
}

static void
follow_end(Follow *follow, const char *why)
{
    if (follow->ended)
        return;
    follow->ended = TRUE;
    g_clear_handle_id(&follow->poll, g_source_remove);
    if (follow->wrote_handler != 0)
        g_clear_signal_handler(&follow->wrote_handler, follow->msg);
    if (follow->hangup_watch != NULL) {
        g_source_destroy(follow->hangup_watch);
        g_clear_pointer(&follow->hangup_watch, g_source_unref);
    }
    einsora_api_request_log(follow->request, G_LOG_LEVEL_DEBUG, "log follower closed (%s)", why);
}

static void
follow_close(Follow *follow, const char *why)
{
    if (follow->ended)
        return;
    follow_end(follow, why);
    soup_message_body_complete(soup_server_message_get_response_body(follow->msg));
    soup_server_message_unpause(follow->msg);
}

static void
follow_write(Follow *follow, GString *text)
{
    gsize length = text->len;

    follow->in_flight++;
    soup_message_body_append(soup_server_message_get_response_body(follow->msg), SOUP_MEMORY_TAKE,
                             g_string_free(text, FALSE), length);
    soup_server_message_unpause(follow->msg);
}

/* Whether the attempt it follows is still under way: admitted, running
 * or stopping, and still the workload's latest. A workload gone (or
 * moved out of reach of these credentials) ends it too. */
static gboolean
attempt_goes_on(Follow *follow)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraActor) actor =
        einsora_api_server_authenticate(follow->server, follow->request, &error);
    g_autoptr(EinsoraWorkload) workload = NULL;

    if (actor == NULL || g_strcmp0(actor->tenant_id, follow->tenant_id) != 0)
        return FALSE;
    workload = einsora_service_get_workload(einsora_api_server_get_service(follow->server),
                                            follow->tenant_id, follow->workload_id, FALSE, &error);
    if (workload == NULL)
        return !g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    return workload->attempt == follow->attempt &&
           (workload->state == EINSORA_WORKLOAD_STATE_PROVISIONING ||
            workload->state == EINSORA_WORKLOAD_STATE_RUNNING ||
            workload->state == EINSORA_WORKLOAD_STATE_STOPPING);
}

static void
follow_pump(Follow *follow)
{
    GString *text;
    EinsoraLogRead read;

    if (follow->ended || follow->in_flight > 0)
        return;
    text = g_string_new(NULL);
    /* A step that only began a line reads on. */
    do
        read = einsora_log_reader_next(follow->reader, STEP_BYTES, text);
    while (read == EINSORA_LOG_READ_MORE && text->len == 0);
    if (read == EINSORA_LOG_READ_NOTHING && follow->over)
        einsora_log_reader_flush(follow->reader, text);
    if (text->len > 0)
        follow_write(follow, text);
    else
        g_string_free(text, TRUE);
    if (read == EINSORA_LOG_READ_LOST)
        follow_close(follow, "it fell behind the workload's output");
    else if (read == EINSORA_LOG_READ_NOTHING && follow->over)
        follow_close(follow, "the attempt is over");
}

static gboolean
on_poll(gpointer user_data)
{
    Follow *follow = user_data;

    if (!follow->over && ++follow->polls % CHECK_EVERY == 0 && !attempt_goes_on(follow))
        follow->over = TRUE;
    follow_pump(follow);
    return follow->ended ? (follow->poll = 0, G_SOURCE_REMOVE) : G_SOURCE_CONTINUE;
}

static void
on_wrote_chunk(SoupServerMessage *msg, gpointer user_data)
{
    Follow *follow = user_data;

    if (follow->in_flight > 0)
        follow->in_flight--;
    follow_pump(follow);
}

static gboolean
on_hangup(GCancellable *hangup, gpointer user_data)
{
    Follow *follow = user_data;

    g_clear_pointer(&follow->hangup_watch, g_source_unref);
    follow_close(follow, "the client went away");
    return G_SOURCE_REMOVE;
}

static void
on_message_done(SoupServerMessage *msg, gpointer user_data)
{
    Follow *follow = user_data;

    follow_end(follow, "the connection ended");
    g_clear_signal_handler(&follow->finished_handler, follow->msg);
    g_clear_signal_handler(&follow->disconnected_handler, follow->msg);
    follow_free(follow);
}

/* "30s", "10m", "2h", "1d" before now, or an RFC 3339 time. */
static gboolean
parse_since(const char *text, gint64 now_us, gint64 *since_us, GError **error)
{
    static const struct {
        char unit;
        gint64 us;
    } units[] = {{'s', G_USEC_PER_SEC},
                 {'m', G_GINT64_CONSTANT(60) * G_USEC_PER_SEC},
                 {'h', G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC},
                 {'d', G_GINT64_CONSTANT(86400) * G_USEC_PER_SEC}};
    gsize length = strlen(text);
    g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
    g_autoptr(GDateTime) when = NULL;

    if (length >= 2 && strspn(text, "0123456789") == length - 1) {
        g_autofree gchar *number = g_strndup(text, length - 1);
        guint64 count = 0;

        for (guint i = 0; i < G_N_ELEMENTS(units); i++) {
            if (text[length - 1] != units[i].unit)
                continue;
            if (!g_ascii_string_to_unsigned(number, 10, 0, 100 * 365, &count, NULL))
                break;
            *since_us = MAX(now_us - (gint64)count * units[i].us, 1);
            return TRUE;
        }
    }
    when = g_date_time_new_from_iso8601(text, utc);
    if (when == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "since must be a time (RFC 3339, as 2026-12-03T14:02:00Z) or a span before "
                    "now (as 30s, 10m, 2h or 1d); \"%s\" is neither",
                    text);
        return FALSE;
    }
    *since_us =
        MAX(g_date_time_to_unix(when) * G_USEC_PER_SEC + g_date_time_get_microsecond(when), 1);
    return TRUE;
}

static gboolean
parse_count(const char *text, const char *what, guint64 max, guint64 *value, GError **error)
{
    if (*text == '\0' || strspn(text, "0123456789") != strlen(text) ||
        !g_ascii_string_to_unsigned(text, 10, 1, max, value, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "%s must be a whole number from 1 to %" G_GUINT64_FORMAT, what, max);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    gint64 attempt; /* 0: the latest */
    guint64 tail;   /* 0: all */
    gint64 since_us;
    gboolean follow;
} LogQuery;

static gboolean
read_query(EinsoraApiServer *server, EinsoraApiRequest *request, LogQuery *query, GError **error)
{
    const char *text = einsora_api_request_get_query(request);
    g_autoptr(GHashTable) params = NULL;
    const char *value;
    guint64 number = 0;

    *query = (LogQuery){0};
    if (!einsora_api_request_query_flag(request, "follow", &query->follow, error))
        return FALSE;
    if (text == NULL)
        return TRUE;
    params = g_uri_parse_params(text, -1, "&", G_URI_PARAMS_NONE, NULL);
    if (params == NULL)
        return TRUE;
    value = g_hash_table_lookup(params, "attempt");
    if (value != NULL) {
        if (!parse_count(value, "attempt", G_MAXINT64, &number, error))
            return FALSE;
        query->attempt = (gint64)number;
    }
    value = g_hash_table_lookup(params, "tail");
    if (value != NULL && !parse_count(value, "tail", MAX_TAIL, &query->tail, error))
        return FALSE;
    value = g_hash_table_lookup(params, "since");
    if (value != NULL &&
        !parse_since(value, einsora_api_server_now(server), &query->since_us, error))
        return FALSE;
    return TRUE;
}

static void
start_follow(EinsoraApiServer *server, EinsoraApiRequest *request, EinsoraLogReader *reader,
             const char *workload_id, gint64 attempt, GString *backlog)
{
    SoupServerMessage *msg = einsora_api_request_get_message(request);
    Follow *follow = g_new0(Follow, 1);

    follow->server = g_object_ref(server);
    follow->request = g_object_ref(request);
    follow->msg = g_object_ref(msg);
    follow->reader = reader;
    follow->tenant_id = g_strdup(einsora_api_request_get_actor(request)->tenant_id);
    follow->workload_id = g_strdup(workload_id);
    follow->attempt = attempt;

    soup_message_headers_set_encoding(soup_server_message_get_response_headers(msg),
                                      SOUP_ENCODING_CHUNKED);
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "X-Accel-Buffering",
                                 "no");
    soup_message_body_set_accumulate(soup_server_message_get_response_body(msg), FALSE);
    follow->wrote_handler =
        g_signal_connect(msg, "wrote-chunk", G_CALLBACK(on_wrote_chunk), follow);
    follow->finished_handler =
        g_signal_connect(msg, "finished", G_CALLBACK(on_message_done), follow);
    follow->disconnected_handler =
        g_signal_connect(msg, "disconnected", G_CALLBACK(on_message_done), follow);
    follow->poll = g_timeout_add(POLL_MS, on_poll, follow);
    follow->hangup_watch = einsora_http_message_watch_hangup(msg, on_hangup, follow);
    follow->over = !attempt_goes_on(follow);
    /* An empty chunk would end the answer: with no backlog, only the
     * head goes out now. */
    if (backlog->len > 0) {
        follow_write(follow, backlog);
    } else {
        g_string_free(backlog, TRUE);
        soup_server_message_unpause(msg);
    }
}

void
einsora_api_workloads_logs(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    EinsoraService *service = einsora_api_server_get_service(server);
    const char *workload_id = einsora_api_request_get_param(request, 0);
    SoupServerMessage *msg = einsora_api_request_get_message(request);
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(EinsoraLogReader) reader = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *attempt_text = NULL;
    gchar *token = NULL;
    GString *text;
    gint64 attempt = 0;
    LogQuery query;

    if (!read_query(server, request, &query, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    path = einsora_service_find_workload_log(
        service, einsora_api_request_get_actor(request)->tenant_id, workload_id, query.attempt,
        &attempt, &token, &workload, &error);
    if (path == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    reader = einsora_log_reader_new(path, token);
    if (token != NULL)
        explicit_bzero(token, strlen(token));
    g_free(token);
    text = g_string_new(NULL);
    if (!einsora_log_reader_read(reader, query.since_us, query.tail, query.follow, text, &error)) {
        g_string_free(text, TRUE);
        einsora_api_request_respond_error(request, error);
        return;
    }
    einsora_api_request_respond_empty(request, SOUP_STATUS_OK);
    attempt_text = g_strdup_printf("%" G_GINT64_FORMAT, attempt);
    soup_message_headers_replace(headers, "Einsora-Attempt", attempt_text);
    if (query.follow) {
        soup_message_headers_replace(headers, "Content-Type", "text/plain; charset=utf-8");
        start_follow(server, request, g_steal_pointer(&reader), workload_id, attempt, text);
        return;
    }
    {
        gsize length = text->len;
        soup_server_message_set_response(msg, "text/plain; charset=utf-8", SOUP_MEMORY_TAKE,
                                         g_string_free(text, FALSE), length);
    }
}
