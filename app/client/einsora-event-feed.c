/* EinsoraEventFeed: one SoupSession, one stream at a time, read line by
 * line (GDataInputStream) into the SSE parser. Each connection is its own
 * refcounted record that the feed lets go of when it closes it, so a
 * callback that arrives late (cancelled, or already queued) finds no
 * feed and touches nothing. */
#define G_LOG_DOMAIN "einsora-client"

#include "einsora-event-feed.h"

#include <glib/gi18n-lib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-client.h"
#include "einsora-sse-parser.h"

#define FIRST_BACKOFF_MS 1000
#define MAX_BACKOFF_MS 30000
/* The server writes at least every 15 s: a stream silent for three of
 * those is dead (a peer that vanished without closing it). */
#define READ_TIMEOUT_SECONDS 45
/* An error answer is read up to this much. */
#define MAX_ERROR_BODY_BYTES (64 * 1024)

typedef struct {
    grefcount ref;
    EinsoraEventFeed *feed; /* NULL once the feed let go of this connection */
    GCancellable *cancellable;
    SoupMessage *msg;
    GInputStream *body;
    GDataInputStream *lines;
    EinsoraSseParser *parser;
} Connection;

struct _EinsoraEventFeed {
    GObject parent_instance;
    gchar *base_url;
    gchar *token;
    SoupSession *session;
    GMainContext *context;
    Connection *connection;
    GSource *reconnect;
    gchar *last_event_id;
    gboolean running;
    gboolean connected;
    guint first_backoff_ms;
    guint max_backoff_ms;
    guint backoff_ms;
};

G_DEFINE_FINAL_TYPE(EinsoraEventFeed, einsora_event_feed, G_TYPE_OBJECT)

enum {
    PROP_0,
    PROP_BASE_URL,
    PROP_TOKEN,
    PROP_CONNECTED,
    PROP_LAST_EVENT_ID,
    N_PROPS,
};

static GParamSpec *properties[N_PROPS];

enum {
    SIGNAL_EVENT,
    SIGNAL_FAILED,
    N_SIGNALS,
};

static guint signals[N_SIGNALS];

/* Connections */

static Connection *
connection_new(EinsoraEventFeed *feed)
{
    Connection *connection = g_new0(Connection, 1);

    g_ref_count_init(&connection->ref);
    connection->feed = feed;
    connection->cancellable = g_cancellable_new();
    connection->parser = einsora_sse_parser_new(feed->last_event_id);
    return connection;
}

static Connection *
connection_ref(Connection *connection)
{
    g_ref_count_inc(&connection->ref);
    return connection;
}

static void
connection_unref(Connection *connection)
{
    if (!g_ref_count_dec(&connection->ref))
        return;
    g_clear_object(&connection->cancellable);
    g_clear_object(&connection->msg);
    g_clear_object(&connection->lines);
    g_clear_object(&connection->body);
    einsora_sse_parser_free(connection->parser);
    g_free(connection);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Connection, connection_unref)

/* The feed's side */

static void
set_connected(EinsoraEventFeed *self, gboolean connected)
{
    if (self->connected == connected)
        return;
    self->connected = connected;
    g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CONNECTED]);
}

static void
set_last_event_id(EinsoraEventFeed *self, const char *id)
{
    if (g_strcmp0(self->last_event_id, id) == 0)
        return;
    g_free(self->last_event_id);
    self->last_event_id = g_strdup(id);
    g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_LAST_EVENT_ID]);
}

/* Lets go of the current connection: whatever of it is still in flight
 * is cancelled and finds no feed when it comes back. */
static void
drop_connection(EinsoraEventFeed *self)
{
    Connection *connection = g_steal_pointer(&self->connection);

    if (connection == NULL)
        return;
    connection->feed = NULL;
    g_cancellable_cancel(connection->cancellable);
    connection_unref(connection);
}

static void open_stream(EinsoraEventFeed *self);

static gboolean
on_reconnect(gpointer user_data)
{
    EinsoraEventFeed *self = user_data;

    g_clear_pointer(&self->reconnect, g_source_unref);
    open_stream(self);
    return G_SOURCE_REMOVE;
}

static void
schedule_reconnect(EinsoraEventFeed *self, guint at_least_ms)
{
    guint delay = MAX(self->backoff_ms, at_least_ms);

    if (!self->running || self->reconnect != NULL)
        return;
    g_debug("event feed: reconnecting in %u ms", delay);
    self->reconnect = g_timeout_source_new(delay);
    g_source_set_callback(self->reconnect, on_reconnect, self, NULL);
    g_source_attach(self->reconnect, self->context);
    self->backoff_ms = MIN(self->backoff_ms * 2, self->max_backoff_ms);
}

/* The stream broke or ended: try again after the pause. */
static void
lost(EinsoraEventFeed *self, const char *why, guint at_least_ms)
{
    g_debug("event feed: disconnected: %s", why);
    drop_connection(self);
    set_connected(self, FALSE);
    schedule_reconnect(self, at_least_ms);
}

static void
fail(EinsoraEventFeed *self, GError *error)
{
    g_autoptr(EinsoraEventFeed) hold G_GNUC_UNUSED = g_object_ref(self);

    einsora_event_feed_stop(self);
    g_signal_emit(self, signals[SIGNAL_FAILED], 0, error);
}

/* Reading the stream */

static void read_next(Connection *connection);

static void
deliver(EinsoraEventFeed *self, const EinsoraSseEvent *event)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonNode *root;

    if (!g_str_equal(event->type, "workload"))
        return; /* a kind of event this client doesn't know yet */
    if (!json_parser_load_from_data(parser, event->data, -1, NULL) ||
        (root = json_parser_get_root(parser)) == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_debug("event feed: event %s isn't a JSON object; skipped",
                event->id != NULL ? event->id : "without an ID");
        return;
    }
    g_signal_emit(self, signals[SIGNAL_EVENT], 0, json_node_get_object(root));
}

static void
on_line(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Connection) connection = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSseEvent) event = NULL;
    gsize length = 0;
    g_autofree gchar *line =
        g_data_input_stream_read_line_finish(G_DATA_INPUT_STREAM(source), result, &length, &error);
    EinsoraEventFeed *self = connection->feed;

    if (self == NULL)
        return;
    if (line == NULL) {
        lost(self, error != NULL ? error->message : "the server ended the stream", 0);
        return;
    }
    if (!einsora_sse_parser_push_line(connection->parser, line, length, &event, &error)) {
        lost(self, error->message, 0);
        return;
    }
    set_last_event_id(self, einsora_sse_parser_get_last_event_id(connection->parser));
    if (event != NULL) {
        /* A handler may stop the feed, or drop the last reference to it. */
        g_autoptr(EinsoraEventFeed) hold G_GNUC_UNUSED = g_object_ref(self);

        deliver(self, event);
        if (connection->feed == NULL)
            return;
    }
    read_next(connection);
}

static void
read_next(Connection *connection)
{
    g_data_input_stream_read_line_async(connection->lines, G_PRIORITY_DEFAULT,
                                        connection->cancellable, on_line,
                                        connection_ref(connection));
}

/* Refusals */

static GError *
refusal_error(SoupMessage *msg, GBytes *bytes)
{
    guint status = soup_message_get_status(msg);
    const char *header_id =
        soup_message_headers_get_one(soup_message_get_response_headers(msg), "X-Request-ID");
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autofree gchar *text = NULL;
    gsize size = 0;
    const char *data = bytes != NULL ? g_bytes_get_data(bytes, &size) : NULL;

    if (size > 0 && json_parser_load_from_data(parser, data, (gssize)size, NULL)) {
        JsonNode *root = json_parser_get_root(parser);
        JsonNode *member = root != NULL && JSON_NODE_HOLDS_OBJECT(root)
                               ? json_object_get_member(json_node_get_object(root), "error")
                               : NULL;

        if (member != NULL && JSON_NODE_HOLDS_OBJECT(member)) {
            JsonObject *problem = json_node_get_object(member);
            const char *code = json_object_get_string_member_with_default(problem, "code", NULL);
            const char *detail =
                json_object_get_string_member_with_default(problem, "message", NULL);
            const char *request_id =
                json_object_get_string_member_with_default(problem, "request_id", header_id);

            if (code != NULL && *code != '\0')
                return einsora_client_error_new(code, request_id, status,
                                                detail != NULL ? detail : code);
        }
    }
    text = g_strdup_printf(_("the server answered HTTP %u %s, which isn't an Einsora event feed"),
                           status, soup_status_get_phrase(status));
    return einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, header_id, status, text);
}

/* What retrying can't change: the request itself, or who sends it. */
static gboolean
is_final(guint status)
{
    return status == SOUP_STATUS_BAD_REQUEST || status == SOUP_STATUS_UNAUTHORIZED ||
           status == SOUP_STATUS_FORBIDDEN || status == SOUP_STATUS_NOT_FOUND;
}

static guint
retry_after_ms(SoupMessage *msg)
{
    const char *text =
        soup_message_headers_get_one(soup_message_get_response_headers(msg), "Retry-After");
    guint64 seconds = 0;

    if (text == NULL || !g_ascii_string_to_unsigned(text, 10, 0, 3600, &seconds, NULL))
        return 0;
    return (guint)seconds * 1000;
}

static void
on_error_body(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Connection) connection = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, &error);
    guint status;
    EinsoraEventFeed *self = connection->feed;

    if (self == NULL)
        return;
    status = soup_message_get_status(connection->msg);
    if (is_final(status)) {
        g_autoptr(GError) refusal = refusal_error(connection->msg, bytes);
        fail(self, refusal);
        return;
    }
    {
        g_autofree gchar *why =
            g_strdup_printf("HTTP %u %s", status, soup_status_get_phrase(status));
        lost(self, why, retry_after_ms(connection->msg));
    }
}

static gboolean
is_event_stream(SoupMessage *msg)
{
    const char *type =
        soup_message_headers_get_content_type(soup_message_get_response_headers(msg), NULL);
    return type != NULL && g_ascii_strcasecmp(type, "text/event-stream") == 0;
}

static void
on_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Connection) connection = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GInputStream) body = soup_session_send_finish(SOUP_SESSION(source), result, &error);
    EinsoraEventFeed *self = connection->feed;
    guint status;

    if (self == NULL)
        return;
    if (body == NULL) {
        lost(self, error->message, 0);
        return;
    }
    status = soup_message_get_status(connection->msg);
    connection->body = g_steal_pointer(&body);
    if (status != SOUP_STATUS_OK || !is_event_stream(connection->msg)) {
        /* Read what it says, then fail or retry. An error answer is
         * small: one read of at most 64 KiB has it. */
        g_input_stream_read_bytes_async(connection->body, MAX_ERROR_BODY_BYTES, G_PRIORITY_DEFAULT,
                                        connection->cancellable, on_error_body,
                                        connection_ref(connection));
        return;
    }
    connection->lines = g_data_input_stream_new(connection->body);
    /* SSE lines end in CR, LF or CRLF. */
    g_data_input_stream_set_newline_type(connection->lines, G_DATA_STREAM_NEWLINE_TYPE_ANY);
    self->backoff_ms = self->first_backoff_ms;
    set_connected(self, TRUE);
    if (connection->feed == NULL)
        return; /* a handler of notify::connected stopped it */
    read_next(connection);
}

static void
open_stream(EinsoraEventFeed *self)
{
    g_autofree gchar *url = g_strconcat(self->base_url, "/v1/events?follow=true", NULL);
    g_autoptr(SoupMessage) msg = soup_message_new(SOUP_METHOD_GET, url);
    SoupMessageHeaders *headers;
    Connection *connection;

    drop_connection(self);
    if (msg == NULL) {
        g_autofree gchar *text =
            g_strdup_printf(_("“%s” is not an http:// or https:// URL"), self->base_url);
        g_autoptr(GError) error =
            einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0, text);
        fail(self, error);
        return;
    }
    headers = soup_message_get_request_headers(msg);
    soup_message_headers_replace(headers, "Accept", "text/event-stream");
    if (self->token != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("Bearer %s", self->token);
        soup_message_headers_replace(headers, "Authorization", authorization);
        explicit_bzero(authorization, strlen(authorization));
    }
    if (self->last_event_id != NULL)
        soup_message_headers_replace(headers, "Last-Event-ID", self->last_event_id);
    connection = connection_new(self);
    connection->msg = g_steal_pointer(&msg);
    self->connection = connection;
    soup_session_send_async(self->session, connection->msg, G_PRIORITY_DEFAULT,
                            connection->cancellable, on_sent, connection_ref(connection));
}

/* The object */

void
einsora_event_feed_start(EinsoraEventFeed *self, const char *last_event_id)
{
    g_return_if_fail(EINSORA_IS_EVENT_FEED(self));

    einsora_event_feed_stop(self);
    set_last_event_id(self, last_event_id);
    self->running = TRUE;
    self->backoff_ms = self->first_backoff_ms;
    open_stream(self);
}

void
einsora_event_feed_stop(EinsoraEventFeed *self)
{
    g_return_if_fail(EINSORA_IS_EVENT_FEED(self));

    self->running = FALSE;
    if (self->reconnect != NULL) {
        g_source_destroy(self->reconnect);
        g_clear_pointer(&self->reconnect, g_source_unref);
    }
    drop_connection(self);
    set_connected(self, FALSE);
}

gboolean
einsora_event_feed_get_connected(EinsoraEventFeed *self)
{
    g_return_val_if_fail(EINSORA_IS_EVENT_FEED(self), FALSE);
    return self->connected;
}

const char *
einsora_event_feed_get_last_event_id(EinsoraEventFeed *self)
{
    g_return_val_if_fail(EINSORA_IS_EVENT_FEED(self), NULL);
    return self->last_event_id;
}

void
einsora_event_feed_set_backoff(EinsoraEventFeed *self, guint first_ms, guint max_ms)
{
    g_return_if_fail(EINSORA_IS_EVENT_FEED(self));
    g_return_if_fail(first_ms > 0 && max_ms >= first_ms);
    self->first_backoff_ms = first_ms;
    self->max_backoff_ms = max_ms;
    self->backoff_ms = first_ms;
}

void
einsora_event_feed_set_tls_database(EinsoraEventFeed *self, GTlsDatabase *database)
{
    g_return_if_fail(EINSORA_IS_EVENT_FEED(self));
    soup_session_set_tls_database(self->session, database);
}

EinsoraEventFeed *
einsora_event_feed_new(const char *base_url, const char *token)
{
    g_return_val_if_fail(base_url != NULL, NULL);
    return g_object_new(EINSORA_TYPE_EVENT_FEED, "base-url", base_url, "token", token, NULL);
}

/* A secret: wiped before its memory goes back. */
static void
forget_token(EinsoraEventFeed *self)
{
    if (self->token != NULL)
        explicit_bzero(self->token, strlen(self->token));
    g_clear_pointer(&self->token, g_free);
}

static void
einsora_event_feed_set_property(GObject *object, guint prop_id, const GValue *value,
                                GParamSpec *pspec)
{
    EinsoraEventFeed *self = EINSORA_EVENT_FEED(object);

    switch (prop_id) {
    case PROP_BASE_URL:
        g_free(self->base_url);
        self->base_url = einsora_client_base_url_new(g_value_get_string(value));
        break;
    case PROP_TOKEN:
        forget_token(self);
        self->token = g_value_dup_string(value);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_event_feed_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    EinsoraEventFeed *self = EINSORA_EVENT_FEED(object);

    switch (prop_id) {
    case PROP_BASE_URL:
        g_value_set_string(value, self->base_url);
        break;
    case PROP_CONNECTED:
        g_value_set_boolean(value, self->connected);
        break;
    case PROP_LAST_EVENT_ID:
        g_value_set_string(value, self->last_event_id);
        break;
    default:
        /* The token is write-only: nothing reads it back out. */
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_event_feed_dispose(GObject *object)
{
    EinsoraEventFeed *self = EINSORA_EVENT_FEED(object);

    self->running = FALSE;
    if (self->reconnect != NULL) {
        g_source_destroy(self->reconnect);
        g_clear_pointer(&self->reconnect, g_source_unref);
    }
    drop_connection(self);
    self->connected = FALSE;
    g_clear_object(&self->session);
    G_OBJECT_CLASS(einsora_event_feed_parent_class)->dispose(object);
}

static void
einsora_event_feed_finalize(GObject *object)
{
    EinsoraEventFeed *self = EINSORA_EVENT_FEED(object);

    g_free(self->base_url);
    forget_token(self);
    g_free(self->last_event_id);
    g_main_context_unref(self->context);
    G_OBJECT_CLASS(einsora_event_feed_parent_class)->finalize(object);
}

static void
einsora_event_feed_class_init(EinsoraEventFeedClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->set_property = einsora_event_feed_set_property;
    object_class->get_property = einsora_event_feed_get_property;
    object_class->dispose = einsora_event_feed_dispose;
    object_class->finalize = einsora_event_feed_finalize;

    properties[PROP_BASE_URL] =
        g_param_spec_string("base-url", NULL, NULL, NULL,
                            G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
    properties[PROP_TOKEN] =
        g_param_spec_string("token", NULL, NULL, NULL,
                            G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
    properties[PROP_CONNECTED] = g_param_spec_boolean("connected", NULL, NULL, FALSE,
                                                      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    properties[PROP_LAST_EVENT_ID] = g_param_spec_string("last-event-id", NULL, NULL, NULL,
                                                         G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(object_class, N_PROPS, properties);

    signals[SIGNAL_EVENT] = g_signal_new("event", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                         NULL, NULL, NULL, G_TYPE_NONE, 1, JSON_TYPE_OBJECT);
    signals[SIGNAL_FAILED] = g_signal_new("failed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                          NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

static void
einsora_event_feed_init(EinsoraEventFeed *self)
{
    self->context = g_main_context_ref_thread_default();
    self->first_backoff_ms = FIRST_BACKOFF_MS;
    self->max_backoff_ms = MAX_BACKOFF_MS;
    self->backoff_ms = FIRST_BACKOFF_MS;
    self->session = soup_session_new_with_options("timeout", READ_TIMEOUT_SECONDS, "user-agent",
                                                  "einsora/" EINSORA_VERSION, NULL);
}
