#define G_LOG_DOMAIN "einsora-daemon"

#include "einsora-agent-tunnel.h"

#include <gio/gunixsocketaddress.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <string.h>
#include <unistd.h>

#include "einsora-tls-identity.h"
#include "einsora-token-mask.h"
#include "einsora-tunnels.h"
#include "einsora-unix-socket.h"

/* Streams open at once, idle or carrying. */
#define OPEN_MAX 32
/* Opened at once for requests the server says are waiting. */
#define MORE_MAX 8
/* An idle stream is replaced after this: a NAT forgets a quiet
 * connection, and a link that was cut leaves a dead one behind. */
#define IDLE_LIFE_S 240
/* From dialling to the server's 101: a server that stalls a handshake
 * holds no stream longer. (Not a socket timeout: that would end every
 * idle stream too.) */
#define CONNECT_TIMEOUT_S 30
#define ANSWER_HEAD_MAX (16 * 1024)
/* The proxy's request head, at most (its headers are the browser's). */
#define REQUEST_HEAD_MAX (64 * 1024)
/* After a stream is asked for or taken, one is kept ready for this long:
 * a page load is dozens of requests. Then none: an agent whose workloads
 * nobody opens costs the server no connection but its sync. */
#define WARM_S 300
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000

struct _EinsoraAgentTunnel {
    GObject parent_instance;
    gchar *server;
    gchar *fingerprint;
    GTlsCertificate *certificate;
    GWeakRef source;
    GSocketClient *client; /* to the server, over mutual TLS */
    gchar *request;        /* the upgrade every stream asks for */
    GList *streams;
    guint idle; /* connecting or waiting for a request */
    guint open;
    guint retry_id;
    guint backoff_ms;
    gint64 warm_until_us; /* monotonic */
    gboolean running;
    gboolean refused; /* said once, until a stream is taken again */
    guint64 carried;
};

G_DEFINE_FINAL_TYPE(EinsoraAgentTunnel, einsora_agent_tunnel, G_TYPE_OBJECT)

typedef struct {
    EinsoraAgentTunnel *self; /* owned */
    GCancellable *cancellable;
    GIOStream *connection; /* to the server */
    GInputStream *in;      /* buffered over its input */
    GIOStream *workload;
    int workload_fd; /* the socket file, open until connected */
    gchar *workload_id;
    gchar *token;
    const char *scheme;
    gboolean idle;
    gboolean upgrade;
    guint life_id;
    GString *head;               /* the request head as the workload gets it: holds the token */
    const struct _Wait *waiting; /* what read_until waits for */
} Stream;

/* What a stream reads up to: @needle within @max bytes of the buffer.
 * @found gets where it ends (after the needle) and what the buffer holds;
 * @failed is called past @max (@too_long) or at the connection's end or
 * error. */
typedef struct _Wait {
    const char *needle;
    gsize max;
    void (*found)(Stream *stream, gsize end, gsize available);
    void (*failed)(Stream *stream, gboolean too_long, const GError *error);
} Wait;

static void top_up(EinsoraAgentTunnel *self);

static void
wipe(gchar *secret)
{
    if (secret != NULL)
        explicit_bzero(secret, strlen(secret));
    g_free(secret);
}

static void
einsora_agent_tunnel_finalize(GObject *object)
{
    EinsoraAgentTunnel *self = EINSORA_AGENT_TUNNEL(object);

    g_clear_handle_id(&self->retry_id, g_source_remove);
    g_free(self->server);
    g_free(self->fingerprint);
    g_free(self->request);
    g_clear_object(&self->certificate);
    g_clear_object(&self->client);
    g_weak_ref_clear(&self->source);
    G_OBJECT_CLASS(einsora_agent_tunnel_parent_class)->finalize(object);
}

static void
einsora_agent_tunnel_class_init(EinsoraAgentTunnelClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_agent_tunnel_finalize;
}

static void
einsora_agent_tunnel_init(EinsoraAgentTunnel *self)
{
    g_weak_ref_init(&self->source, NULL);
    self->backoff_ms = BACKOFF_MIN_MS;
}

static gboolean
on_accept_certificate(GTlsConnection *connection, GTlsCertificate *certificate,
                      GTlsCertificateFlags errors, gpointer user_data)
{
    EinsoraAgentTunnel *self = user_data;
    g_autofree gchar *presented = einsora_tls_certificate_fingerprint(certificate);

    if (einsora_tls_fingerprint_matches(self->fingerprint, presented))
        return TRUE;
    g_warning("%s presents the certificate %s, not the pinned %s: no tunnel to it", self->server,
              presented, self->fingerprint);
    return FALSE;
}

/* Our certificate, and the server's checked against the pin alone. */
static void
on_client_event(GSocketClient *client, GSocketClientEvent event, GSocketConnectable *connectable,
                GIOStream *connection, gpointer user_data)
{
    EinsoraAgentTunnel *self = user_data;

    if (event != G_SOCKET_CLIENT_TLS_HANDSHAKING || !G_IS_TLS_CLIENT_CONNECTION(connection))
        return;
    g_tls_connection_set_certificate(G_TLS_CONNECTION(connection), self->certificate);
    g_tls_connection_set_database(G_TLS_CONNECTION(connection), NULL);
    g_signal_connect_object(connection, "accept-certificate", G_CALLBACK(on_accept_certificate),
                            self, 0);
}

EinsoraAgentTunnel *
einsora_agent_tunnel_new(const char *server, const char *fingerprint, GTlsCertificate *certificate,
                         EinsoraAccessSource *source)
{
    EinsoraAgentTunnel *self = g_object_new(EINSORA_TYPE_AGENT_TUNNEL, NULL);
    g_autoptr(GUri) uri = g_uri_parse(server, G_URI_FLAGS_NONE, NULL);
    g_autofree gchar *host = NULL;

    self->server = g_strdup(server);
    self->fingerprint = g_strdup(fingerprint);
    self->certificate = g_object_ref(certificate);
    g_weak_ref_set(&self->source, source);
    self->client = g_socket_client_new();
    g_socket_client_set_tls(self->client, TRUE);
    g_signal_connect(self->client, "event", G_CALLBACK(on_client_event), self);
    host = uri != NULL && g_uri_get_port(uri) > 0
               ? g_strdup_printf("%s:%d", g_uri_get_host(uri), g_uri_get_port(uri))
               : g_strdup(uri != NULL ? g_uri_get_host(uri) : "localhost");
    self->request =
        g_strdup_printf("GET /agent/v1/tunnel HTTP/1.1\r\nHost: %s\r\n"
                        "Connection: Upgrade\r\nUpgrade: " EINSORA_TUNNELS_PROTOCOL "\r\n\r\n",
                        host);
    return self;
}

guint
einsora_agent_tunnel_count_idle(EinsoraAgentTunnel *self)
{
    return self->idle;
}

guint64
einsora_agent_tunnel_count_carried(EinsoraAgentTunnel *self)
{
    return self->carried;
}

static gboolean
on_retry(gpointer user_data)
{
    EinsoraAgentTunnel *self = user_data;

    self->retry_id = 0;
    top_up(self);
    return G_SOURCE_REMOVE;
}

/* The stream is over. @retry: it failed before the server took it, so
 * the next one waits a while (longer each time). */
static void
stream_end(Stream *stream, gboolean retry)
{
    EinsoraAgentTunnel *self = stream->self;

    self->streams = g_list_remove(self->streams, stream);
    self->open--;
    if (stream->idle)
        self->idle--;
    g_clear_handle_id(&stream->life_id, g_source_remove);
    if (stream->workload_fd >= 0)
        close(stream->workload_fd);
    if (stream->head != NULL) {
        explicit_bzero(stream->head->str, stream->head->len);
        g_string_free(stream->head, TRUE);
    }
    wipe(stream->token);
    g_free(stream->workload_id);
    if (stream->workload != NULL)
        g_io_stream_close_async(stream->workload, G_PRIORITY_DEFAULT, NULL, NULL, NULL);
    if (stream->connection != NULL)
        g_io_stream_close_async(stream->connection, G_PRIORITY_DEFAULT, NULL, NULL, NULL);
    g_clear_object(&stream->workload);
    g_clear_object(&stream->in);
    g_clear_object(&stream->connection);
    g_clear_object(&stream->cancellable);
    if (self->running && retry && self->retry_id == 0) {
        self->retry_id = g_timeout_add(self->backoff_ms, on_retry, self);
        self->backoff_ms = MIN(self->backoff_ms * 2, BACKOFF_MAX_MS);
    }
    g_free(stream);
    top_up(self);
    g_object_unref(self);
}

static void stream_open(EinsoraAgentTunnel *self);

/* One idle stream while warm (none while waiting to retry). */
static void
top_up(EinsoraAgentTunnel *self)
{
    while (self->running && self->retry_id == 0 && self->idle < 1 && self->open < OPEN_MAX &&
           g_get_monotonic_time() < self->warm_until_us)
        stream_open(self);
}

/* A stream that waited too long: to be switched, or idle. */
static gboolean
on_time_up(gpointer user_data)
{
    Stream *stream = user_data;

    stream->life_id = 0;
    g_cancellable_cancel(stream->cancellable);
    return G_SOURCE_REMOVE;
}

/* Where @needle is in what the buffer holds, as an end offset (0: not yet). */
static gsize
buffered_find(GInputStream *in, const char *needle, gsize *available)
{
    const char *data = g_buffered_input_stream_peek_buffer(G_BUFFERED_INPUT_STREAM(in), available);
    const char *found = *available > 0 ? memmem(data, *available, needle, strlen(needle)) : NULL;

    return found != NULL ? (gsize)(found - data) + strlen(needle) : 0;
}

static void read_until(Stream *stream, const Wait *wait);

static void
on_filled(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Stream *stream = user_data;
    g_autoptr(GError) error = NULL;
    gssize got =
        g_buffered_input_stream_fill_finish(G_BUFFERED_INPUT_STREAM(source), result, &error);

    if (got <= 0) {
        stream->waiting->failed(stream, FALSE, error);
        return;
    }
    read_until(stream, stream->waiting);
}

/* Reads into the buffer until it holds @wait's needle, then hands over. */
static void
read_until(Stream *stream, const Wait *wait)
{
    gsize available = 0;
    gsize end = buffered_find(stream->in, wait->needle, &available);

    if (end != 0) {
        wait->found(stream, end, available);
        return;
    }
    if (available >= wait->max) {
        wait->failed(stream, TRUE, NULL);
        return;
    }
    stream->waiting = wait;
    g_buffered_input_stream_fill_async(G_BUFFERED_INPUT_STREAM(stream->in), -1, G_PRIORITY_DEFAULT,
                                       stream->cancellable, on_filled, stream);
}

static void relay(Stream *stream);

static void
on_head_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Stream *stream = user_data;
    g_autoptr(GError) error = NULL;

    explicit_bzero(stream->head->str, stream->head->len);
    if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, &error)) {
        g_message("tunnel to workload %s: %s", stream->workload_id, error->message);
        stream_end(stream, FALSE);
        return;
    }
    relay(stream);
}

/* The proxy's head, with the workload's token as the only credential. */
static GString *
rewrite_head(Stream *stream, const char *head, gsize length)
{
    GString *out = g_string_sized_new(length + 128);
    const char *line = head;
    const char *end = head + length - 2; /* before the blank line's CRLF */
    gboolean first = TRUE;

    while (line < end) {
        const char *eol = memmem(line, (gsize)(end - line), "\r\n", 2);
        gsize size = eol != NULL ? (gsize)(eol - line) : (gsize)(end - line);

        if (!first && size >= 14 && g_ascii_strncasecmp(line, "Authorization:", 14) == 0) {
            line += size + 2;
            continue;
        }
        if (!first && size >= 8 && g_ascii_strncasecmp(line, "Upgrade:", 8) == 0)
            stream->upgrade = TRUE;
        g_string_append_len(out, line, (gssize)size);
        g_string_append(out, "\r\n");
        first = FALSE;
        line += size + 2;
    }
    g_string_append_printf(out, "Authorization: %s %s\r\n\r\n", stream->scheme, stream->token);
    return out;
}

static void
request_head_failed(Stream *stream, gboolean too_long, const GError *error)
{
    if (too_long)
        g_message("tunnel to workload %s: a request head over %d KiB", stream->workload_id,
                  REQUEST_HEAD_MAX / 1024);
    stream_end(stream, FALSE);
}

static void
request_head_found(Stream *stream, gsize end, gsize available)
{
    const char *data =
        g_buffered_input_stream_peek_buffer(G_BUFFERED_INPUT_STREAM(stream->in), &available);

    stream->head = rewrite_head(stream, data, end);
    /* What came with the head (a body's start) goes with it: the relay
     * reads the connection itself, as a buffered stream's read would wait
     * for more past what it holds. */
    g_string_append_len(stream->head, data + end, (gssize)(available - end));
    g_input_stream_skip(stream->in, available, NULL, NULL);
    g_output_stream_write_all_async(g_io_stream_get_output_stream(stream->workload),
                                    stream->head->str, stream->head->len, G_PRIORITY_DEFAULT,
                                    stream->cancellable, on_head_written, stream);
}

static const Wait request_head = {"\r\n\r\n", REQUEST_HEAD_MAX, request_head_found,
                                  request_head_failed};

static void
on_workload_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Stream *stream = user_data;
    g_autoptr(GError) error = NULL;

    stream->workload =
        G_IO_STREAM(g_socket_client_connect_finish(G_SOCKET_CLIENT(source), result, &error));
    close(stream->workload_fd);
    stream->workload_fd = -1;
    if (stream->workload == NULL) {
        g_message("tunnel to workload %s: its socket: %s", stream->workload_id, error->message);
        stream_end(stream, FALSE);
        return;
    }
    read_until(stream, &request_head);
}

/* Both ways until either side ends; the token masked on the way back. */
static void
on_relayed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Stream *stream = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_io_stream_splice_finish(result, &error) &&
        !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_debug("tunnel to workload %s ended: %s", stream->workload_id, error->message);
    stream->self->carried++;
    stream_end(stream, FALSE);
}

static void
relay(Stream *stream)
{
    g_autoptr(EinsoraTokenMask) mask = einsora_token_mask_new(stream->token, stream->upgrade);
    g_autoptr(GInputStream) masked = g_converter_input_stream_new(
        g_io_stream_get_input_stream(stream->workload), G_CONVERTER(mask));
    g_autoptr(GIOStream) server_side =
        g_simple_io_stream_new(g_io_stream_get_input_stream(stream->connection),
                               g_io_stream_get_output_stream(stream->connection));
    g_autoptr(GIOStream) workload_side =
        g_simple_io_stream_new(masked, g_io_stream_get_output_stream(stream->workload));

    g_clear_pointer(&stream->token, wipe);
    g_debug("tunnel: a request for workload %s goes to its socket", stream->workload_id);
    g_io_stream_splice_async(server_side, workload_side,
                             G_IO_STREAM_SPLICE_CLOSE_STREAM1 | G_IO_STREAM_SPLICE_CLOSE_STREAM2,
                             G_PRIORITY_DEFAULT, stream->cancellable, on_relayed, stream);
}

/* The line that says which workload: this stream is taken. */
static void
take_request(Stream *stream, const char *line, gsize length)
{
    EinsoraAgentTunnel *self = stream->self;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(EinsoraAccessSource) source = g_weak_ref_get(&self->source);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *address = NULL;
    g_autoptr(GSocketAddress) where = NULL;
    g_autoptr(GSocketClient) client = NULL;
    JsonObject *asked;
    const char *scheme;
    gint64 attempt = -1, more;

    g_clear_handle_id(&stream->life_id, g_source_remove);
    stream->idle = FALSE;
    self->idle--;
    self->refused = FALSE;
    self->warm_until_us = g_get_monotonic_time() + WARM_S * G_USEC_PER_SEC;
    if (!json_parser_load_from_data(parser, line, (gssize)length, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_message("a tunnel's request line isn't JSON: closed");
        stream_end(stream, FALSE);
        return;
    }
    asked = json_node_get_object(json_parser_get_root(parser));
    more = json_object_get_int_member_with_default(asked, "more", 0);
    top_up(self);
    for (gint64 i = 0; i < MIN(more, MORE_MAX) && self->running && self->open < OPEN_MAX; i++)
        stream_open(self);
    stream->workload_id =
        g_strdup(json_object_get_string_member_with_default(asked, "workload_id", ""));
    scheme = json_object_get_string_member_with_default(asked, "scheme", "");
    stream->scheme = g_str_equal(scheme, "Bearer") ? "Bearer" : "token";
    /* Only a workload that runs here, in the attempt the server means. */
    if (source == NULL ||
        !einsora_access_source_lookup(source, stream->workload_id, &attempt, &socket_path,
                                      &stream->token) ||
        attempt != json_object_get_int_member_with_default(asked, "attempt", -2)) {
        g_message("a tunnelled request for workload %s, which isn't ready here in that attempt",
                  stream->workload_id);
        stream_end(stream, FALSE);
        return;
    }
    address = einsora_unix_socket_open_own(socket_path, &stream->workload_fd, &error);
    if (address == NULL) {
        g_message("tunnel to workload %s: %s", stream->workload_id, error->message);
        stream_end(stream, FALSE);
        return;
    }
    where = g_unix_socket_address_new(address);
    client = g_socket_client_new();
    g_socket_client_connect_async(client, G_SOCKET_CONNECTABLE(where), stream->cancellable,
                                  on_workload_connected, stream);
}

/* The server let it go (it keeps a few), or it was replaced. */
static void
request_line_failed(Stream *stream, gboolean too_long, const GError *error)
{
    if (too_long)
        g_message("a tunnel's request line is over %d bytes: closed", EINSORA_TUNNELS_PREAMBLE_MAX);
    stream_end(stream, FALSE);
}

static void
request_line_found(Stream *stream, gsize end, gsize available)
{
    g_autofree gchar *line = g_malloc(end);

    g_input_stream_read_all(stream->in, line, end, NULL, NULL, NULL);
    take_request(stream, line, end - 1);
}

static const Wait request_line = {"\n", EINSORA_TUNNELS_PREAMBLE_MAX, request_line_found,
                                  request_line_failed};

static void
answer_failed(Stream *stream, gboolean too_long, const GError *error)
{
    if (!too_long && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_message("%s closed a tunnel before answering%s%s", stream->self->server,
                  error != NULL ? ": " : "", error != NULL ? error->message : "");
    stream_end(stream, TRUE);
}

/* The server's answer to the upgrade: 101, or why not. */
static void
answer_found(Stream *stream, gsize end, gsize available)
{
    EinsoraAgentTunnel *self = stream->self;
    g_autoptr(SoupMessageHeaders) headers = NULL;
    g_autofree gchar *text = NULL;
    guint status = 0;

    text = g_strndup(
        g_buffered_input_stream_peek_buffer(G_BUFFERED_INPUT_STREAM(stream->in), &available), end);
    headers = soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE);
    if (!soup_headers_parse_response(text, (int)end, headers, NULL, &status, NULL) ||
        status != SOUP_STATUS_SWITCHING_PROTOCOLS) {
        /* Said once (a revoked machine, or a server without tunnels),
         * then tried again now and then. */
        if (!self->refused)
            g_message("%s refused a tunnel (HTTP %u): its notebooks and endpoints can't be "
                      "opened from the server until it takes one",
                      self->server, status);
        self->refused = TRUE;
        stream_end(stream, TRUE);
        return;
    }
    g_input_stream_skip(stream->in, end, NULL, NULL);
    self->backoff_ms = BACKOFF_MIN_MS;
    g_clear_handle_id(&stream->life_id, g_source_remove);
    stream->life_id = g_timeout_add_seconds(IDLE_LIFE_S, on_time_up, stream);
    read_until(stream, &request_line);
}

static const Wait answer = {"\r\n\r\n", ANSWER_HEAD_MAX, answer_found, answer_failed};

static void
on_upgrade_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Stream *stream = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, &error)) {
        stream_end(stream, TRUE);
        return;
    }
    stream->in = g_buffered_input_stream_new_sized(g_io_stream_get_input_stream(stream->connection),
                                                   REQUEST_HEAD_MAX);
    read_until(stream, &answer);
}

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Stream *stream = user_data;
    g_autoptr(GError) error = NULL;

    stream->connection =
        G_IO_STREAM(g_socket_client_connect_to_uri_finish(G_SOCKET_CLIENT(source), result, &error));
    if (stream->connection == NULL) {
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_debug("no tunnel to %s: %s", stream->self->server, error->message);
        stream_end(stream, TRUE);
        return;
    }
    g_output_stream_write_all_async(g_io_stream_get_output_stream(stream->connection),
                                    stream->self->request, strlen(stream->self->request),
                                    G_PRIORITY_DEFAULT, stream->cancellable, on_upgrade_sent,
                                    stream);
}

static void
stream_open(EinsoraAgentTunnel *self)
{
    Stream *stream = g_new0(Stream, 1);

    stream->self = g_object_ref(self);
    stream->cancellable = g_cancellable_new();
    stream->workload_fd = -1;
    stream->idle = TRUE;
    self->idle++;
    self->open++;
    self->streams = g_list_prepend(self->streams, stream);
    stream->life_id = g_timeout_add_seconds(CONNECT_TIMEOUT_S, on_time_up, stream);
    g_socket_client_connect_to_uri_async(self->client, self->server, 443, stream->cancellable,
                                         on_connected, stream);
}

void
einsora_agent_tunnel_start(EinsoraAgentTunnel *self)
{
    g_return_if_fail(EINSORA_IS_AGENT_TUNNEL(self));
    self->running = TRUE;
}

void
einsora_agent_tunnel_open(EinsoraAgentTunnel *self, guint count)
{
    g_return_if_fail(EINSORA_IS_AGENT_TUNNEL(self));
    if (!self->running)
        return;
    /* The server asked through the sync: it is there, whatever the last
     * try met. */
    g_clear_handle_id(&self->retry_id, g_source_remove);
    self->warm_until_us = g_get_monotonic_time() + WARM_S * G_USEC_PER_SEC;
    for (guint i = 0; i < MIN(count, MORE_MAX) && self->open < OPEN_MAX; i++)
        stream_open(self);
}

void
einsora_agent_tunnel_stop(EinsoraAgentTunnel *self)
{
    g_return_if_fail(EINSORA_IS_AGENT_TUNNEL(self));
    self->running = FALSE;
    g_clear_handle_id(&self->retry_id, g_source_remove);
    for (GList *link = self->streams; link != NULL; link = link->next)
        g_cancellable_cancel(((Stream *)link->data)->cancellable);
}
