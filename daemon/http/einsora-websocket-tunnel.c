#define G_LOG_DOMAIN "einsora-http"

#include "einsora-websocket-tunnel.h"

#include <string.h>

/* After the tunnel decides to close, both sides have this long to take
 * its close frames. */
#define CLOSING_MS 2000
#define CLOSE_TOO_BIG 1009

/* RFC 6455 §5.2 */

gboolean
einsora_websocket_frames_at_boundary(const EinsoraWebsocketFrames *frames)
{
    return frames->header_length == 0 && frames->payload_left == 0;
}

static gssize
frames_feed(EinsoraWebsocketFrames *frames, const guint8 *data, gsize length, guint64 max_message,
            gboolean stop_at_boundary, gboolean *too_big)
{
    gsize i = 0;

    *too_big = FALSE;
    while (i < length) {
        guint need;
        guint64 payload = 0;
        guint opcode;
        gboolean fin;

        if (frames->payload_left > 0) {
            gsize take = (gsize)MIN((guint64)(length - i), frames->payload_left);
            frames->payload_left -= take;
            i += take;
            if (stop_at_boundary && frames->payload_left == 0)
                return (gssize)i;
            continue;
        }
        if (stop_at_boundary && frames->header_length == 0 && i > 0)
            return (gssize)i;
        frames->header[frames->header_length++] = data[i++];
        if (frames->header_length < 2)
            continue;
        need = 2 + ((frames->header[1] & 0x80) ? 4 : 0);
        if ((frames->header[1] & 0x7f) == 126)
            need += 2;
        else if ((frames->header[1] & 0x7f) == 127)
            need += 8;
        if (frames->header_length < need)
            continue;
        if ((frames->header[1] & 0x7f) == 126) {
            payload = ((guint64)frames->header[2] << 8) | frames->header[3];
        } else if ((frames->header[1] & 0x7f) == 127) {
            for (guint b = 2; b < 10; b++)
                payload = (payload << 8) | frames->header[b];
            if (payload >> 63)
                return -1;
        } else {
            payload = frames->header[1] & 0x7f;
        }
        opcode = frames->header[0] & 0x0f;
        fin = (frames->header[0] & 0x80) != 0;
        if (opcode >= 8) {
            /* Control frames: short and whole; they may come between a
             * message's fragments. */
            if (opcode > 10 || payload > 125 || !fin)
                return -1;
        } else if (opcode == 0) {
            if (!frames->in_message)
                return -1;
            frames->message_bytes += payload;
        } else if (opcode == 1 || opcode == 2) {
            if (frames->in_message)
                return -1;
            frames->in_message = TRUE;
            frames->message_bytes = payload;
        } else {
            return -1;
        }
        if (opcode < 8 && frames->message_bytes > max_message) {
            /* The header stays unforwarded: the caller cuts here. */
            *too_big = TRUE;
            return (gssize)i;
        }
        if (opcode < 8 && fin)
            frames->in_message = FALSE;
        frames->payload_left = payload;
        frames->header_length = 0;
        if (stop_at_boundary && payload == 0)
            return (gssize)i;
    }
    return (gssize)i;
}

gssize
einsora_websocket_frames_feed(EinsoraWebsocketFrames *frames, const guint8 *data, gsize length,
                              guint64 max_message, gboolean *too_big)
{
    return frames_feed(frames, data, length, max_message, FALSE, too_big);
}

/* The tunnel */

typedef struct {
    EinsoraWebsocketTunnel *tunnel;
    GPollableInputStream *from;
    GPollableOutputStream *to;
    gboolean to_upstream; /* what we write ourselves is masked */
    guint8 *buffer;
    gsize start;   /* written up to here */
    gsize checked; /* may be written up to here */
    gsize end;     /* read up to here */
    EinsoraWebsocketFrames frames;
    GByteArray *tail; /* our close frame, once the checked bytes are out */
    GSource *read_source;
    GSource *write_source;
    gboolean want_read; /* on the tunnel's watch of the two sockets */
    gboolean want_write;
    gboolean eof;
    gboolean stopped;           /* reads no more */
    gboolean close_at_boundary; /* stops at the end of the frame it is in */
} Direction;

struct _EinsoraWebsocketTunnel {
    GIOStream *client;
    GIOStream *upstream;
    Direction up;   /* browser to workload */
    Direction down; /* workload to browser */
    guint64 max_message;
    guint close_code;
    GSource *closing;
    /* One source for both sockets, kept for the tunnel's life: waits
     * change its poll mask rather than make sources (each of which, and
     * each layer of the streams above a socket, wakes the main loop). */
    GSource *watch;
    GSocket *client_socket;
    gpointer client_tag;
    gpointer upstream_tag;
    GIOCondition client_events;
    GIOCondition upstream_events;
    gboolean ended;
    EinsoraWebsocketTunnelDone done;
    gpointer user_data;
};

static void pump(Direction *direction);
static void tunnel_end(EinsoraWebsocketTunnel *self);

typedef struct {
    GSource source;
    EinsoraWebsocketTunnel *tunnel;
} TunnelSource;

static void
clear_source(GSource **source)
{
    if (*source != NULL) {
        g_source_destroy(*source);
        g_clear_pointer(source, g_source_unref);
    }
}

static gboolean
free_tunnel(gpointer data)
{
    EinsoraWebsocketTunnel *self = data;

    g_free(self->up.buffer);
    g_free(self->down.buffer);
    g_clear_pointer(&self->up.tail, g_byte_array_unref);
    g_clear_pointer(&self->down.tail, g_byte_array_unref);
    g_clear_object(&self->client);
    g_clear_object(&self->client_socket);
    g_clear_object(&self->upstream);
    g_free(self);
    return G_SOURCE_REMOVE;
}

static void
tunnel_end(EinsoraWebsocketTunnel *self)
{
    if (self->ended)
        return;
    self->ended = TRUE;
    clear_source(&self->up.read_source);
    clear_source(&self->up.write_source);
    clear_source(&self->down.read_source);
    clear_source(&self->down.write_source);
    clear_source(&self->closing);
    clear_source(&self->watch);
    g_io_stream_close(self->client, NULL, NULL);
    g_io_stream_close(self->upstream, NULL, NULL);
    if (self->done != NULL)
        self->done(self->close_code, self->user_data);
    /* Not while a callback of ours is on the stack. */
    g_idle_add(free_tunnel, self);
}

static gboolean
on_closing_late(gpointer user_data)
{
    EinsoraWebsocketTunnel *self = user_data;

    g_clear_pointer(&self->closing, g_source_unref);
    tunnel_end(self);
    return G_SOURCE_REMOVE;
}

/* A close frame with @code: masked towards the workload, as a client's. */
static GByteArray *
close_frame(gboolean masked, guint16 code)
{
    GByteArray *frame = g_byte_array_new();
    guint8 payload[2] = {(guint8)(code >> 8), (guint8)(code & 0xff)};
    guint8 head[2] = {0x88, (guint8)((masked ? 0x80 : 0) | 2)};

    g_byte_array_append(frame, head, 2);
    if (masked) {
        guint32 key = g_random_int();
        guint8 mask[4];
        memcpy(mask, &key, 4);
        g_byte_array_append(frame, mask, 4);
        payload[0] ^= mask[0];
        payload[1] ^= mask[1];
    }
    g_byte_array_append(frame, payload, 2);
    return frame;
}

static void
stop_with_close(Direction *direction, guint16 code)
{
    direction->stopped = TRUE;
    direction->close_at_boundary = FALSE;
    clear_source(&direction->read_source);
    direction->want_read = FALSE;
    /* Whatever follows the last whole frame is dropped. */
    direction->end = direction->checked;
    if (direction->tail == NULL)
        direction->tail = close_frame(direction->to_upstream, code);
}

/* A message past the bound in @direction: it is cut before that frame,
 * and both sides get 1009 at a frame boundary. */
static void
overflow(Direction *direction)
{
    EinsoraWebsocketTunnel *self = direction->tunnel;
    Direction *other = direction == &self->up ? &self->down : &self->up;

    g_message("a WebSocket message over %" G_GUINT64_FORMAT " bytes from the %s: closing with "
              "1009",
              self->max_message, direction == &self->up ? "browser" : "workload");
    self->close_code = CLOSE_TOO_BIG;
    stop_with_close(direction, CLOSE_TOO_BIG);
    if (einsora_websocket_frames_at_boundary(&other->frames) && other->checked == other->end)
        stop_with_close(other, CLOSE_TOO_BIG);
    else
        other->close_at_boundary = TRUE;
    if (self->closing == NULL) {
        self->closing = g_timeout_source_new(CLOSING_MS);
        g_source_set_callback(self->closing, on_closing_late, self, NULL);
        g_source_attach(self->closing, g_main_context_get_thread_default());
    }
    pump(other);
}

static gboolean
on_ready(GObject *stream, gpointer user_data)
{
    Direction *direction = user_data;

    if (G_IS_POLLABLE_INPUT_STREAM(stream))
        g_clear_pointer(&direction->read_source, g_source_unref);
    else
        g_clear_pointer(&direction->write_source, g_source_unref);
    pump(direction);
    return G_SOURCE_REMOVE;
}

static void
watch_update(EinsoraWebsocketTunnel *self)
{
    GIOCondition client =
        (self->up.want_read ? G_IO_IN : 0) | (self->down.want_write ? G_IO_OUT : 0);
    GIOCondition upstream =
        (self->down.want_read ? G_IO_IN : 0) | (self->up.want_write ? G_IO_OUT : 0);

    if (client != self->client_events) {
        g_source_modify_unix_fd(self->watch, self->client_tag, client);
        self->client_events = client;
    }
    if (upstream != self->upstream_events) {
        g_source_modify_unix_fd(self->watch, self->upstream_tag, upstream);
        self->upstream_events = upstream;
    }
}

static gboolean
watch_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
    EinsoraWebsocketTunnel *self = ((TunnelSource *)source)->tunnel;
    GIOCondition client = g_source_query_unix_fd(source, self->client_tag);
    GIOCondition upstream = g_source_query_unix_fd(source, self->upstream_tag);
    const GIOCondition readable = G_IO_IN | G_IO_HUP | G_IO_ERR;
    const GIOCondition writable = G_IO_OUT | G_IO_HUP | G_IO_ERR;
    gboolean served = FALSE;

    if (!self->ended && self->up.want_read && (client & readable) != 0) {
        self->up.want_read = FALSE;
        served = TRUE;
        pump(&self->up);
    }
    if (!self->ended && self->down.want_write && (client & writable) != 0) {
        self->down.want_write = FALSE;
        served = TRUE;
        pump(&self->down);
    }
    if (!self->ended && self->down.want_read && (upstream & readable) != 0) {
        self->down.want_read = FALSE;
        served = TRUE;
        pump(&self->down);
    }
    if (!self->ended && self->up.want_write && (upstream & writable) != 0) {
        self->up.want_write = FALSE;
        served = TRUE;
        pump(&self->up);
    }
    /* A socket that hung up while nothing waits on it (its direction is
     * full, waiting for the other side) would be reported on every turn:
     * its peer is gone, and so is the tunnel. */
    if (!self->ended && !served && ((client | upstream) & (G_IO_HUP | G_IO_ERR | G_IO_NVAL)) != 0)
        tunnel_end(self);
    if (!self->ended)
        watch_update(self);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs watch_funcs = {NULL, NULL, watch_dispatch, NULL, NULL, NULL};

static void
wait_writable(Direction *direction)
{
    if (direction->tunnel->watch != NULL) {
        direction->want_write = TRUE;
        watch_update(direction->tunnel);
        return;
    }
    if (direction->write_source != NULL)
        return;
    direction->write_source = g_pollable_output_stream_create_source(direction->to, NULL);
    g_source_set_callback(direction->write_source, G_SOURCE_FUNC(on_ready), direction, NULL);
    g_source_attach(direction->write_source, g_main_context_get_thread_default());
}

static void
wait_readable(Direction *direction)
{
    if (direction->tunnel->watch != NULL) {
        direction->want_read = TRUE;
        watch_update(direction->tunnel);
        return;
    }
    if (direction->read_source != NULL)
        return;
    direction->read_source = g_pollable_input_stream_create_source(direction->from, NULL);
    g_source_set_callback(direction->read_source, G_SOURCE_FUNC(on_ready), direction, NULL);
    g_source_attach(direction->read_source, g_main_context_get_thread_default());
}

/* Writes [start, checked), then the tail. FALSE: wait (or ended). */
static gboolean
flush(Direction *direction)
{
    EinsoraWebsocketTunnel *self = direction->tunnel;

    while (direction->start < direction->checked ||
           (direction->stopped && direction->tail != NULL && direction->tail->len > 0)) {
        g_autoptr(GError) error = NULL;
        gboolean tail = direction->start == direction->checked;
        const guint8 *data = tail ? direction->tail->data : direction->buffer + direction->start;
        gsize length = tail ? direction->tail->len : direction->checked - direction->start;
        gssize n =
            g_pollable_output_stream_write_nonblocking(direction->to, data, length, NULL, &error);

        if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            wait_writable(direction);
            return FALSE;
        }
        if (n < 0) {
            tunnel_end(self);
            return FALSE;
        }
        if (tail)
            g_byte_array_remove_range(direction->tail, 0, (guint)n);
        else
            direction->start += (gsize)n;
    }
    /* All out: what is unchecked (a frame header's first bytes) moves to
     * the front. */
    if (direction->start > 0) {
        memmove(direction->buffer, direction->buffer + direction->start,
                direction->end - direction->start);
        direction->end -= direction->start;
        direction->checked -= direction->start;
        direction->start = 0;
    }
    return TRUE;
}

static gboolean
both_done(EinsoraWebsocketTunnel *self)
{
    gboolean up = self->up.stopped && self->up.tail != NULL && self->up.tail->len == 0;
    gboolean down = self->down.stopped && self->down.tail != NULL && self->down.tail->len == 0;

    return up && down;
}

static void
pump(Direction *direction)
{
    EinsoraWebsocketTunnel *self = direction->tunnel;
    gboolean short_read = FALSE;

    while (!self->ended) {
        g_autoptr(GError) error = NULL;
        gboolean too_big = FALSE;
        gsize room;
        gssize n;
        gssize fed;

        if (!flush(direction))
            return;
        if (both_done(self) || direction->eof) {
            /* Closed by us both ways, or one side ended: all is said. */
            tunnel_end(self);
            return;
        }
        if (direction->stopped)
            return;
        if (direction->end == EINSORA_WEBSOCKET_TUNNEL_BUFFER)
            return; /* full: the writer's turn (flush waits for it) */
        if (short_read && direction->tunnel->watch != NULL) {
            /* A read that didn't fill the room emptied the socket: the
             * poll says when there is more (it is level-triggered), which
             * saves a read that would block. */
            wait_readable(direction);
            return;
        }
        room = EINSORA_WEBSOCKET_TUNNEL_BUFFER - direction->end;
        n = g_pollable_input_stream_read_nonblocking(
            direction->from, direction->buffer + direction->end, room, NULL, &error);
        short_read = n > 0 && (gsize)n < room;
        if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            wait_readable(direction);
            return;
        }
        if (n <= 0) {
            direction->eof = TRUE;
            continue;
        }
        fed = frames_feed(&direction->frames, direction->buffer + direction->end, (gsize)n,
                          self->max_message, direction->close_at_boundary, &too_big);
        if (fed < 0) {
            g_debug("a WebSocket peer sent something that isn't WebSocket framing");
            tunnel_end(self);
            return;
        }
        direction->end += (gsize)fed;
        /* A frame header's first bytes wait for the rest of it. */
        direction->checked = direction->end - direction->frames.header_length;
        if (too_big) {
            overflow(direction);
            continue;
        }
        if (direction->close_at_boundary &&
            einsora_websocket_frames_at_boundary(&direction->frames))
            stop_with_close(direction, (guint16)self->close_code);
    }
}

static void
direction_init(EinsoraWebsocketTunnel *self, Direction *direction, GIOStream *from, GIOStream *to,
               gboolean to_upstream)
{
    direction->tunnel = self;
    direction->from = G_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(from));
    direction->to = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(to));
    direction->to_upstream = to_upstream;
    direction->buffer = g_malloc(EINSORA_WEBSOCKET_TUNNEL_BUFFER);
}

EinsoraWebsocketTunnel *
einsora_websocket_tunnel_start(GIOStream *client, GSocket *client_socket, GIOStream *upstream,
                               GBytes *pending, guint64 max_message,
                               EinsoraWebsocketTunnelDone done, gpointer user_data)
{
    EinsoraWebsocketTunnel *self = g_new0(EinsoraWebsocketTunnel, 1);

    g_return_val_if_fail(G_IS_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(client)), NULL);
    g_return_val_if_fail(G_IS_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(upstream)), NULL);
    self->client = g_object_ref(client);
    self->upstream = g_object_ref(upstream);
    self->max_message = max_message;
    self->done = done;
    self->user_data = user_data;
    direction_init(self, &self->up, client, upstream, TRUE);
    direction_init(self, &self->down, upstream, client, FALSE);
    if (client_socket != NULL && G_IS_SOCKET_CONNECTION(upstream)) {
        /* Streams above a socket read what they hold before it, so a
         * stream that would block is waited for on its socket. */
        self->client_socket = g_object_ref(client_socket);
        self->watch = g_source_new(&watch_funcs, sizeof(TunnelSource));
        ((TunnelSource *)self->watch)->tunnel = self;
        g_source_set_static_name(self->watch, "einsora-websocket-tunnel");
        /* GLib takes a source's descriptors out of the poll while it runs
         * it, and puts them back, waking the loop each time, unless it
         * may recurse; nothing here runs the loop inside it. */
        g_source_set_can_recurse(self->watch, TRUE);
        self->client_tag = g_source_add_unix_fd(self->watch, g_socket_get_fd(client_socket), 0);
        self->upstream_tag = g_source_add_unix_fd(
            self->watch,
            g_socket_get_fd(g_socket_connection_get_socket(G_SOCKET_CONNECTION(upstream))), 0);
        g_source_attach(self->watch, g_main_context_get_thread_default());
    }
    if (pending != NULL && g_bytes_get_size(pending) > 0) {
        /* Frames the workload sent right after its handshake: bounded by
         * the head reader that got them. */
        gsize size = MIN(g_bytes_get_size(pending), (gsize)EINSORA_WEBSOCKET_TUNNEL_BUFFER);
        gboolean too_big = FALSE;
        gssize fed;
        memcpy(self->down.buffer, g_bytes_get_data(pending, NULL), size);
        fed =
            frames_feed(&self->down.frames, self->down.buffer, size, max_message, FALSE, &too_big);
        if (fed < 0) {
            tunnel_end(self);
            return self;
        }
        self->down.end = (gsize)fed;
        self->down.checked = self->down.end - self->down.frames.header_length;
        if (too_big)
            overflow(&self->down);
    }
    pump(&self->up);
    if (!self->ended)
        pump(&self->down);
    return self;
}
