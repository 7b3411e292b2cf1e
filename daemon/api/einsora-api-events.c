/* GET /v1/events: the caller's tenant's change feed (docs/adr/0016).
 *
 * Without follow, a page of JSON. With follow=true, server-sent events:
 * ": connected" and the start point as an ID ("id: N", no event), then
 * the backlog after it, then each new event when the service says a
 * committed transaction appended some ("events-added"); a comment every
 * 15 s keeps proxies and clients from taking a quiet feed for a dead one.
 * Nothing polls.
 *
 * A feed writes one chunk at a time: the next page is read from the store
 * only once libsoup has written the last ("wrote-chunk"), so a slow client
 * holds at most one page in memory, and reads nothing it isn't ready for.
 * While there is nothing to write, libsoup pauses the message and reads
 * nothing from the client, so the HTTP edge watches the connection for
 * the client's hang-up (einsora_http_message_watch_hangup()). */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-page.h"
#include "einsora-api-routes.h"
#include "einsora-error.h"
#include "einsora-http-edge.h"
#include "einsora-workload-json.h"

/* The most events one chunk of a feed holds, and a JSON answer's length
 * unless ?limit= says otherwise (at most EINSORA_API_PAGE_MAX_LIMIT). The
 * feed's position is its event ID (after, last_event_id), not an opaque
 * cursor: it is also SSE's Last-Event-ID (docs/adr/0027). */
#define PAGE_SIZE 500
/* Feeds one tenant may hold open at once; the next is 429. */
#define MAX_FEEDS_PER_TENANT 32
#define KEEP_ALIVE_MS (15 * 1000)
/* Tests only: a shorter keep-alive, in milliseconds. */
#define KEEP_ALIVE_TEST_VARIABLE "EINSORA_TEST_EVENTS_KEEPALIVE_MS"
#define RETRY_AFTER_SECONDS "5"
/* libsoup 3.2 names no 429. */
#define STATUS_TOO_MANY_REQUESTS 429

/* How many feeds each tenant holds open on one API server. Kept beside
 * the server (as its object data): the feeds' own bookkeeping, which
 * nothing else reads. Each feed holds a reference, so it outlives the
 * server while a feed is still being torn down. */
typedef struct {
    GHashTable *per_tenant; /* tenant ID -> count (GUINT_TO_POINTER) */
} FeedRegistry;

static void
feed_registry_clear(FeedRegistry *registry)
{
    g_hash_table_unref(registry->per_tenant);
}

static FeedRegistry *
feed_registry_ref(FeedRegistry *registry)
{
    return g_rc_box_acquire(registry);
}

static void
feed_registry_unref(FeedRegistry *registry)
{
    g_rc_box_release_full(registry, (GDestroyNotify)feed_registry_clear);
}

static FeedRegistry *
feed_registry_get(EinsoraApiServer *server)
{
    FeedRegistry *registry = g_object_get_data(G_OBJECT(server), "einsora-event-feeds");

    if (registry == NULL) {
        registry = g_rc_box_new0(FeedRegistry);
        registry->per_tenant = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_object_set_data_full(G_OBJECT(server), "einsora-event-feeds", registry,
                               (GDestroyNotify)feed_registry_unref);
    }
    return registry;
}

static guint
feed_registry_count(FeedRegistry *registry, const char *tenant_id)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(registry->per_tenant, tenant_id));
}

static void
feed_registry_add(FeedRegistry *registry, const char *tenant_id, gint delta)
{
    guint count = feed_registry_count(registry, tenant_id) + (guint)delta;

    if (count == 0)
        g_hash_table_remove(registry->per_tenant, tenant_id);
    else
        g_hash_table_insert(registry->per_tenant, g_strdup(tenant_id), GUINT_TO_POINTER(count));
}

/* Input */

/* An event ID is a seq: digits only, no sign, no space, at most what a
 * gint64 holds. */
static gboolean
parse_event_id(const char *text, const char *what, gint64 *seq, GError **error)
{
    guint64 value = 0;

    if (*text == '\0' || strspn(text, "0123456789") != strlen(text) ||
        !g_ascii_string_to_unsigned(text, 10, 0, G_MAXINT64, &value, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "%s must be an event ID: a non-negative integer", what);
        return FALSE;
    }
    *seq = (gint64)value;
    return TRUE;
}

/* Where the feed starts: Last-Event-ID (a reconnecting client's) wins
 * over the after query parameter (the URL it first opened). *given is
 * FALSE when neither is there. Both are checked when both are sent. */
static gboolean
read_start(EinsoraApiRequest *request, gint64 *start, gboolean *given, GError **error)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    const char *query = g_uri_get_query(soup_server_message_get_uri(message));
    const char *header = soup_message_headers_get_one(
        soup_server_message_get_request_headers(message), "Last-Event-ID");
    g_autoptr(GHashTable) params = NULL;
    const char *after = NULL;
    gint64 from_query = 0;
    gint64 from_header = 0;

    if (query != NULL)
        params = g_uri_parse_params(query, -1, "&", G_URI_PARAMS_NONE, NULL);
    if (params != NULL)
        after = g_hash_table_lookup(params, "after");
    if (after != NULL && !parse_event_id(after, "query parameter \"after\"", &from_query, error))
        return FALSE;
    if (header != NULL && !parse_event_id(header, "Last-Event-ID", &from_header, error))
        return FALSE;
    *given = header != NULL || after != NULL;
    *start = header != NULL ? from_header : from_query;
    return TRUE;
}

static void
append_feed_event(GString *out, gconstpointer item)
{
    einsora_workload_event_append_json(out, item, TRUE);
}

/* ?limit= as lists read it; absent: PAGE_SIZE. The route takes no
 * cursor (einsora_api_request_check_query refused one already). */
static gboolean
read_limit(EinsoraApiRequest *request, guint *limit, GError **error)
{
    g_autoptr(EinsoraApiPage) page =
        einsora_api_page_read(einsora_api_request_get_query(request), "events",
                              EINSORA_API_PAGE_BY_SEQ, "", PAGE_SIZE, error);

    if (page == NULL)
        return FALSE;
    *limit = page->limit;
    return TRUE;
}

/* Without follow: a page, and where to go on from. */
static void
respond_page(EinsoraApiServer *server, EinsoraApiRequest *request, gint64 after, guint limit)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;
    GString *body;
    gint64 last = after;

    events = einsora_service_list_tenant_events(einsora_api_server_get_service(server),
                                                einsora_api_request_get_actor(request)->tenant_id,
                                                after, limit, &error);
    if (events == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (events->len > 0)
        last = ((EinsoraWorkloadEvent *)g_ptr_array_index(events, events->len - 1))->seq;
    /* {"events":[...],"last_event_id":N}, as before lists were paged. */
    body = g_string_sized_new(64 + (gsize)events->len * 256);
    g_string_append(body, "{\"events\":[");
    for (guint i = 0; i < events->len; i++) {
        if (i > 0)
            g_string_append_c(body, ',');
        append_feed_event(body, g_ptr_array_index(events, i));
    }
    g_string_append_printf(body, "],\"last_event_id\":%" G_GINT64_FORMAT "}", last);
    einsora_api_request_respond_text(request, SOUP_STATUS_OK, body);
}

/* The stream */

typedef struct {
    FeedRegistry *registry;     /* owned reference */
    EinsoraService *service;    /* owned */
    EinsoraApiServer *server;   /* owned: to ask again who the caller is */
    EinsoraApiRequest *request; /* owned: its ID is on the feed's log lines */
    SoupServerMessage *msg;     /* owned */
    gchar *tenant_id;
    gint64 last_seq; /* the last event written (or skipped: before the start) */
    guint in_flight; /* chunks appended, not yet written */
    guint64 sent;
    gulong events_handler;
    gulong wrote_handler;
    gulong finished_handler;
    gulong disconnected_handler;
    guint keep_alive;
    GSource *hangup_watch;
    gboolean stalled; /* the last read of the store failed */
    gboolean ended;   /* counted out, signals gone; only freeing is left */
} Feed;

static gboolean
release_message(gpointer data)
{
    g_object_unref(data);
    return G_SOURCE_REMOVE;
}

/* Once the message is done with (its own signals disconnected). */
static void
feed_free(Feed *feed)
{
    /* Not while the message is emitting: ours may be its last reference. */
    if (feed->msg != NULL)
        g_idle_add(release_message, g_steal_pointer(&feed->msg));
    g_clear_object(&feed->request);
    g_clear_object(&feed->service);
    g_clear_object(&feed->server);
    g_clear_pointer(&feed->registry, feed_registry_unref);
    g_free(feed->tenant_id);
    g_free(feed);
}

/* Everything but the message's own signals: the feed stops counting
 * against its tenant, hears no more events and writes nothing more. */
static void
feed_end(Feed *feed, const char *why)
{
    if (feed->ended)
        return;
    feed->ended = TRUE;
    feed_registry_add(feed->registry, feed->tenant_id, -1);
    if (feed->events_handler != 0)
        g_clear_signal_handler(&feed->events_handler, feed->service);
    if (feed->wrote_handler != 0)
        g_clear_signal_handler(&feed->wrote_handler, feed->msg);
    g_clear_handle_id(&feed->keep_alive, g_source_remove);
    if (feed->hangup_watch != NULL) {
        g_source_destroy(feed->hangup_watch);
        g_clear_pointer(&feed->hangup_watch, g_source_unref);
    }
    einsora_api_request_log(feed->request, G_LOG_LEVEL_DEBUG,
                            "event feed closed (%s) after %" G_GUINT64_FORMAT " event(s)", why,
                            feed->sent);
}

static void feed_close(Feed *feed, const char *why);

/* A feed runs for hours: the token or session that opened it must still
 * be good (not revoked, not expired) each time it writes. A store that
 * fails to answer is not a refusal: the next try decides. */
static gboolean
feed_still_allowed(Feed *feed)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraActor) actor =
        einsora_api_server_authenticate(feed->server, feed->request, &error);

    if (actor != NULL && g_strcmp0(actor->tenant_id, feed->tenant_id) == 0)
        return TRUE;
    if (actor == NULL && !g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED))
        return TRUE;
    feed_close(feed, "its credentials no longer hold");
    return FALSE;
}

static void
feed_write(Feed *feed, GString *text)
{
    gsize length = text->len;

    feed->in_flight++;
    soup_message_body_append(soup_server_message_get_response_body(feed->msg), SOUP_MEMORY_TAKE,
                             g_string_free(text, FALSE), length);
    soup_server_message_unpause(feed->msg);
}

/* The next page after the last event written, once what was written
 * before has gone out. */
static void
feed_pump(Feed *feed)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;
    GString *text;

    if (feed->ended || feed->in_flight > 0 || !feed_still_allowed(feed))
        return;
    events = einsora_service_list_tenant_events(feed->service, feed->tenant_id, feed->last_seq,
                                                PAGE_SIZE, &error);
    if (events == NULL) {
        /* The store failed: try again from the same point at the next
         * event or keep-alive. */
        if (!feed->stalled)
            einsora_api_request_log(feed->request, G_LOG_LEVEL_WARNING,
                                    "event feed: reading the timeline: %s", error->message);
        feed->stalled = TRUE;
        return;
    }
    feed->stalled = FALSE;
    if (events->len == 0)
        return;
    text = g_string_new(NULL);
    for (guint i = 0; i < events->len; i++) {
        const EinsoraWorkloadEvent *event = g_ptr_array_index(events, i);

        /* The writer escapes every control character: data is one line. */
        g_string_append_printf(text,
                               "id: %" G_GINT64_FORMAT "\nevent: workload\ndata: ", event->seq);
        einsora_workload_event_append_json(text, event, TRUE);
        g_string_append(text, "\n\n");
        feed->last_seq = event->seq;
    }
    feed->sent += events->len;
    feed_write(feed, text);
}

static void
on_events_added(EinsoraService *service, const char *tenant_id, gpointer user_data)
{
    Feed *feed = user_data;

    if (tenant_id == NULL || g_strcmp0(tenant_id, feed->tenant_id) == 0)
        feed_pump(feed);
}

static void
on_wrote_chunk(SoupServerMessage *msg, gpointer user_data)
{
    Feed *feed = user_data;

    if (feed->in_flight > 0)
        feed->in_flight--;
    feed_pump(feed);
}

static gboolean
on_keep_alive(gpointer user_data)
{
    Feed *feed = user_data;

    if (!feed_still_allowed(feed))
        return G_SOURCE_REMOVE; /* closed: its source is already gone */
    if (feed->stalled)
        feed_pump(feed);
    /* Something is still on its way out: that says enough. */
    if (feed->in_flight == 0)
        feed_write(feed, g_string_new(": keep-alive\n\n"));
    return G_SOURCE_CONTINUE;
}

/* The client went away while the feed waited: end the answer, so that
 * libsoup writes its last chunk (or fails to) and lets the connection
 * go; "finished" then frees the feed. */
static void
feed_close(Feed *feed, const char *why)
{
    feed_end(feed, why);
    soup_message_body_complete(soup_server_message_get_response_body(feed->msg));
    soup_server_message_unpause(feed->msg);
}

/* The edge noticed the client's hang-up while the feed waited. */
static gboolean
on_hangup(GCancellable *hangup, gpointer user_data)
{
    Feed *feed = user_data;

    g_clear_pointer(&feed->hangup_watch, g_source_unref);
    feed_close(feed, "the client went away");
    return G_SOURCE_REMOVE;
}

static void
watch_client(Feed *feed)
{
    feed->hangup_watch = einsora_http_message_watch_hangup(feed->msg, on_hangup, feed);
}

/* The answer is over (written, or its connection broke or closed): the
 * message is libsoup's again. */
static void
on_message_done(SoupServerMessage *msg, gpointer user_data)
{
    Feed *feed = user_data;

    feed_end(feed, "the connection ended");
    g_clear_signal_handler(&feed->finished_handler, feed->msg);
    g_clear_signal_handler(&feed->disconnected_handler, feed->msg);
    feed_free(feed);
}

static guint
keep_alive_ms(void)
{
    const char *text = g_getenv(KEEP_ALIVE_TEST_VARIABLE);
    guint64 value = 0;

    if (text != NULL && g_ascii_string_to_unsigned(text, 10, 10, KEEP_ALIVE_MS, &value, NULL))
        return (guint)value;
    return KEEP_ALIVE_MS;
}

static void
start_feed(EinsoraApiServer *server, EinsoraApiRequest *request, gint64 start, gboolean given)
{
    EinsoraService *service = einsora_api_server_get_service(server);
    const char *tenant_id = einsora_api_request_get_actor(request)->tenant_id;
    FeedRegistry *registry = feed_registry_get(server);
    SoupServerMessage *msg = einsora_api_request_get_message(request);
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
    g_autoptr(GError) error = NULL;
    Feed *feed;

    if (feed_registry_count(registry, tenant_id) >= MAX_FEEDS_PER_TENANT) {
        soup_message_headers_replace(headers, "Retry-After", RETRY_AFTER_SECONDS);
        einsora_api_request_respond_problem(
            request, STATUS_TOO_MANY_REQUESTS, "too_many_requests",
            "this account already has 32 event feeds open; close one (or wait for one to end) "
            "and try again");
        soup_server_message_set_status(msg, STATUS_TOO_MANY_REQUESTS, "Too Many Requests");
        return;
    }
    /* No start point: from now, with no backlog. */
    if (!given && !einsora_service_last_event_seq(service, tenant_id, &start, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }

    feed = g_new0(Feed, 1);
    feed->registry = feed_registry_ref(registry);
    feed->service = g_object_ref(service);
    feed->server = g_object_ref(server);
    feed->request = g_object_ref(request);
    feed->msg = g_object_ref(msg);
    feed->tenant_id = g_strdup(tenant_id);
    feed->last_seq = start;
    feed_registry_add(registry, tenant_id, +1);

    /* The one log line of the feed is the request's, now. */
    einsora_api_request_respond_empty(request, SOUP_STATUS_OK);
    soup_message_headers_set_content_type(headers, "text/event-stream", NULL);
    soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED);
    /* Proxies in front (nginx) must pass each event on as it comes. */
    soup_message_headers_replace(headers, "X-Accel-Buffering", "no");
    /* What was written is gone: a feed's memory is what is in flight. */
    soup_message_body_set_accumulate(soup_server_message_get_response_body(msg), FALSE);

    feed->events_handler =
        g_signal_connect(service, "events-added", G_CALLBACK(on_events_added), feed);
    feed->wrote_handler = g_signal_connect(msg, "wrote-chunk", G_CALLBACK(on_wrote_chunk), feed);
    feed->finished_handler = g_signal_connect(msg, "finished", G_CALLBACK(on_message_done), feed);
    feed->disconnected_handler =
        g_signal_connect(msg, "disconnected", G_CALLBACK(on_message_done), feed);
    feed->keep_alive = g_timeout_add(keep_alive_ms(), on_keep_alive, feed);
    watch_client(feed);

    /* Where the feed stands, as an ID without an event: a client that
     * started from now and loses the connection before any event comes
     * resumes from here, not from a later now. The backlog follows once
     * this is out (on_wrote_chunk). */
    {
        GString *text = g_string_new(NULL);
        g_string_printf(text, ": connected\nid: %" G_GINT64_FORMAT "\n\n", start);
        feed_write(feed, text);
    }
}

void
einsora_api_events_feed(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    gboolean follow = FALSE;
    gboolean given = FALSE;
    gint64 start = 0;
    guint limit = PAGE_SIZE;

    if (!einsora_api_request_query_flag(request, "follow", &follow, &error) ||
        !read_start(request, &start, &given, &error) || !read_limit(request, &limit, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (follow)
        start_feed(server, request, start, given);
    else
        respond_page(server, request, start, limit);
}
