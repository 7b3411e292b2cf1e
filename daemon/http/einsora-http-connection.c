#define G_LOG_DOMAIN "einsora-http"

#include "einsora-http-connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

/* Bytes asked of the socket at once. */
#define READ_SIZE (64 * 1024)
/* After a refusal or the last answer: what the client still sends is read
 * and dropped for this long (at most LINGER_BYTES), so that closing with
 * unread input doesn't reset the connection before the answer is read. */
#define LINGER_MS 2000
#define LINGER_BYTES (1024 * 1024)
/* An answer's head as libsoup writes it. */
#define MAX_RESPONSE_HEAD (64 * 1024)

typedef enum {
    PHASE_WAITING,   /* for a request's head: read by us */
    PHASE_EXCHANGE,  /* libsoup has the request */
    PHASE_FLUSHING,  /* writing what is left, then closing */
    PHASE_LINGERING, /* written: reading what is left, then closing */
    PHASE_CLOSED,
} Phase;

struct _EinsoraHttpConnection {
    grefcount ref;
    EinsoraHttpConnectionHost host;
    /* Its own copy: an exchange libsoup still holds may outlive the edge. */
    EinsoraHttpEdgeSettings settings;
    gboolean detached;
    GSocket *socket;
    GSocketAddress *local;
    GSocketAddress *remote;
    gchar *client_certificate; /* its fingerprint, when the TLS peer sent one */
    GTlsCertificateFlags client_certificate_errors;
    Phase phase;
    GByteArray *in;  /* read, not yet given to libsoup */
    GByteArray *out; /* ours to write before anything else */
    GSource *read_source;
    GSource *write_source;
    GSource *idle_source;
    gint64 deadline_us;
    gint64 head_started_us;
    GList waiting_link;
    guint requests;
    /* What libsoup wrote from another thread (it closes a chunked body
     * with g_output_stream_close_async(), whose default runs in a worker):
     * kept here under @lock and written from the edge's main context. */
    GMainContext *context;
    GMutex lock;
    GByteArray *offthread;
    gsize lingered;

    /* The request libsoup is reading or answering. */
    EinsoraHttpRequestHead *request;
    GIOStream *exchange; /* not a reference: it holds us */
    SoupServerMessage *message;
    GCancellable *hangup;
    gsize head_left;
    guint64 body_left;
    EinsoraHttpChunked chunked;
    gboolean body_done;
    gboolean watching; /* reading on our own while the answer is awaited */
    gboolean tunnel;   /* after 101: bytes as they come */
    gboolean aborted;
    gboolean peer_gone; /* writing to it failed: nothing more goes out */
    gboolean eof;       /* its input ended (a half-close, or gone): answered, then closed */
    gboolean close_after;
    gboolean keep_alive;

    /* Its answer. */
    GByteArray *response_head;
    gboolean response_head_done;
    EinsoraHttpResponseHead response;
    guint64 response_left;
    EinsoraHttpChunked response_chunked;
    gboolean response_done;
};

static void connection_close(EinsoraHttpConnection *self);
static void start_reading(EinsoraHttpConnection *self);
static void start_watching(EinsoraHttpConnection *self);
static gboolean flush_out(EinsoraHttpConnection *self, GError **error);
static void write_later(EinsoraHttpConnection *self);
static void clear_source(GSource **source);

/* The exchange: one request's stream, as libsoup sees it. */

#define EXCHANGE_TYPE (exchange_get_type())
G_DECLARE_FINAL_TYPE(Exchange, exchange, EINSORA, HTTP_EXCHANGE, GIOStream)
#define EXCHANGE_INPUT_TYPE (exchange_input_get_type())
G_DECLARE_FINAL_TYPE(ExchangeInput, exchange_input, EINSORA, HTTP_EXCHANGE_INPUT, GInputStream)
#define EXCHANGE_OUTPUT_TYPE (exchange_output_get_type())
G_DECLARE_FINAL_TYPE(ExchangeOutput, exchange_output, EINSORA, HTTP_EXCHANGE_OUTPUT, GOutputStream)

struct _Exchange {
    GIOStream parent_instance;
    EinsoraHttpConnection *connection; /* a reference */
    GInputStream *input;
    GOutputStream *output;
    gboolean ended;
};

struct _ExchangeInput {
    GInputStream parent_instance;
    EinsoraHttpConnection *connection; /* a reference */
};

struct _ExchangeOutput {
    GOutputStream parent_instance;
    EinsoraHttpConnection *connection; /* a reference */
};

static void exchange_input_pollable_init(GPollableInputStreamInterface *iface);
static void exchange_output_pollable_init(GPollableOutputStreamInterface *iface);

G_DEFINE_FINAL_TYPE(Exchange, exchange, G_TYPE_IO_STREAM)
G_DEFINE_FINAL_TYPE_WITH_CODE(ExchangeInput, exchange_input, G_TYPE_INPUT_STREAM,
                              G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_INPUT_STREAM,
                                                    exchange_input_pollable_init))
G_DEFINE_FINAL_TYPE_WITH_CODE(ExchangeOutput, exchange_output, G_TYPE_OUTPUT_STREAM,
                              G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_OUTPUT_STREAM,
                                                    exchange_output_pollable_init))

static void exchange_end(Exchange *exchange);

static gboolean
set_aborted_error(EinsoraHttpConnection *self, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR,
                        self->peer_gone ? G_IO_ERROR_BROKEN_PIPE : G_IO_ERROR_TIMED_OUT,
                        self->peer_gone ? "the client went away" : "the connection was closed");
    return FALSE;
}

static void
take_in(EinsoraHttpConnection *self, void *buffer, gsize count)
{
    memcpy(buffer, self->in->data, count);
    g_byte_array_remove_range(self->in, 0, (guint)count);
}

static void
body_progress(EinsoraHttpConnection *self)
{
    const EinsoraHttpEdgeSettings *settings = &self->settings;
    gint64 now = g_get_monotonic_time();
    gint64 deadline = now + (gint64)settings->body_idle_timeout_ms * 1000;

    if (settings->body_timeout_ms > 0)
        deadline = MIN(deadline, self->head_started_us + (gint64)settings->body_timeout_ms * 1000);
    self->deadline_us = deadline;
}

/* A connection that waits (a held long poll, keep-alive between
 * requests) keeps no read buffer: one read of READ_SIZE grew it, and a
 * GByteArray never gives memory back. Thousands of agents each hold one. */
static void
release_in(EinsoraHttpConnection *self)
{
    if (self->in->len == 0) {
        g_byte_array_unref(self->in);
        self->in = g_byte_array_new();
    }
}

static void
body_finished(EinsoraHttpConnection *self)
{
    release_in(self);
    self->body_done = TRUE;
    self->deadline_us = 0;
    /* Upgrades too: a browser that leaves while the workload is slow to
     * take its handshake is noticed (the tunnel reads what the watch
     * kept before the socket). */
    start_watching(self);
}

/* Receives into @in, at most @count. Returns the bytes read, 0 at the
 * end of stream, -1 with @error. */
static gssize
receive_in(EinsoraHttpConnection *self, gsize count, GError **error)
{
    guint before = self->in->len;
    gssize got;

    g_byte_array_set_size(self->in, before + (guint)count);
    got = g_socket_receive(self->socket, (gchar *)self->in->data + before, count, NULL, error);
    g_byte_array_set_size(self->in, before + (guint)MAX(got, 0));
    if (got == 0)
        self->eof = TRUE;
    return got;
}

static gssize
read_body(EinsoraHttpConnection *self, guint8 *buffer, gsize count, GError **error)
{
    gssize got;

    if (self->request->body == EINSORA_HTTP_BODY_LENGTH) {
        gsize want = (gsize)MIN((guint64)count, self->body_left);
        if (self->in->len == 0 && want < READ_SIZE && self->body_left > want) {
            /* libsoup reads bodies 8 KiB at a time: one receive of up to
             * READ_SIZE of the body serves several of its reads (a copy
             * costs less than the system calls it saves). */
            got = receive_in(self, (gsize)MIN((guint64)READ_SIZE, self->body_left), error);
            if (got <= 0)
                return got;
        }
        if (self->in->len > 0) {
            got = (gssize)MIN(want, (gsize)self->in->len);
            take_in(self, buffer, (gsize)got);
        } else {
            got = g_socket_receive(self->socket, (gchar *)buffer, want, NULL, error);
            if (got == 0)
                self->eof = TRUE;
            if (got <= 0)
                return got;
        }
        self->body_left -= (guint64)got;
        body_progress(self);
        if (self->body_left == 0)
            body_finished(self);
        return got;
    }

    /* Chunked: its end is found as it passes, and what follows it stays
     * for the next request. */
    if (self->in->len == 0) {
        got = receive_in(self, READ_SIZE, error);
        if (got <= 0)
            return got;
    }
    {
        gboolean done = FALSE;
        gssize part = einsora_http_chunked_feed(&self->chunked, self->in->data,
                                                MIN(count, (gsize)self->in->len), &done);
        if (part < 0) {
            self->close_after = TRUE;
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                "a malformed chunked body");
            return -1;
        }
        take_in(self, buffer, (gsize)part);
        body_progress(self);
        if (done)
            body_finished(self);
        return part;
    }
}

static gssize
exchange_input_read_nonblocking(GPollableInputStream *stream, void *buffer, gsize count,
                                GError **error)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_INPUT(stream)->connection;

    if (self->aborted) {
        set_aborted_error(self, error);
        return -1;
    }
    if (count == 0)
        return 0;
    if (self->head_left > 0) {
        gsize take = MIN(count, self->head_left);
        take_in(self, buffer, take);
        self->head_left -= take;
        if (self->head_left == 0 && self->request->body == EINSORA_HTTP_BODY_NONE)
            body_finished(self);
        return (gssize)take;
    }
    if (self->tunnel) {
        if (self->in->len > 0) {
            gsize take = MIN(count, (gsize)self->in->len);
            take_in(self, buffer, take);
            return (gssize)take;
        }
        return g_socket_receive(self->socket, buffer, count, NULL, error);
    }
    if (!self->body_done)
        return read_body(self, buffer, count, error);
    if (self->request->upgrade) {
        /* Nothing more until the answer says whether it is a tunnel. */
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "no answer yet");
        return -1;
    }
    return 0;
}

/* Whether a read would return at once without the socket. */
static gboolean
input_ready_without_socket(EinsoraHttpConnection *self)
{
    if (self->aborted || self->head_left > 0)
        return TRUE;
    if (self->tunnel)
        return self->in->len > 0;
    if (!self->body_done)
        return self->in->len > 0;
    return !self->request->upgrade;
}

static gboolean
exchange_input_is_readable(GPollableInputStream *stream)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_INPUT(stream)->connection;

    if (input_ready_without_socket(self))
        return TRUE;
    if (!self->tunnel && self->body_done)
        return FALSE;
    return g_socket_condition_check(self->socket, G_IO_IN | G_IO_HUP | G_IO_ERR) != 0;
}

static GSource *
exchange_input_create_source(GPollableInputStream *stream, GCancellable *cancellable)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_INPUT(stream)->connection;
    g_autoptr(GSource) base = NULL;

    if (input_ready_without_socket(self))
        base = g_timeout_source_new(0);
    else if (self->tunnel || !self->body_done)
        base = g_socket_create_source(self->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
    /* else: an upgrade waiting for its answer; nothing wakes it. */
    if (base == NULL)
        return g_pollable_source_new_full(stream, NULL, cancellable);
    return g_pollable_source_new_full(stream, base, cancellable);
}

static gboolean
exchange_input_can_poll(GPollableInputStream *stream)
{
    return TRUE;
}

static gssize
exchange_input_read(GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
                    GError **error)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_INPUT(stream)->connection;

    for (;;) {
        GError *local = NULL;
        gssize got =
            exchange_input_read_nonblocking(G_POLLABLE_INPUT_STREAM(stream), buffer, count, &local);
        if (got >= 0 || !g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            if (local != NULL)
                g_propagate_error(error, local);
            return got;
        }
        g_error_free(local);
        if (!g_socket_condition_wait(self->socket, G_IO_IN, cancellable, error))
            return -1;
    }
}

static gboolean
exchange_input_close(GInputStream *stream, GCancellable *cancellable, GError **error)
{
    return TRUE;
}

static void
exchange_input_finalize(GObject *object)
{
    g_clear_pointer(&EINSORA_HTTP_EXCHANGE_INPUT(object)->connection,
                    einsora_http_connection_unref);
    G_OBJECT_CLASS(exchange_input_parent_class)->finalize(object);
}

static void
exchange_input_class_init(ExchangeInputClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = exchange_input_finalize;
    G_INPUT_STREAM_CLASS(klass)->read_fn = exchange_input_read;
    G_INPUT_STREAM_CLASS(klass)->close_fn = exchange_input_close;
}

static void
exchange_input_init(ExchangeInput *self)
{
}

static void
exchange_input_pollable_init(GPollableInputStreamInterface *iface)
{
    iface->can_poll = exchange_input_can_poll;
    iface->is_readable = exchange_input_is_readable;
    iface->create_source = exchange_input_create_source;
    iface->read_nonblocking = exchange_input_read_nonblocking;
}

/* What libsoup writes: the head rewritten, then the body as it comes,
 * followed to its end. */

static gssize
send_socket(EinsoraHttpConnection *self, const void *buffer, gsize count, GError **error)
{
    gssize sent = g_socket_send(self->socket, buffer, count, NULL, error);

    if (sent < 0 && error != NULL && *error != NULL &&
        !g_error_matches(*error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        self->peer_gone = TRUE;
    return sent;
}

static gboolean
take_response_head(EinsoraHttpConnection *self, GError **error)
{
    g_autoptr(GString) head = NULL;
    gboolean head_request = g_strcmp0(self->request->method, "HEAD") == 0;

    head = einsora_http_response_head_rewrite(
        (const char *)self->response_head->data, self->response_head->len, head_request,
        self->request->minor_version, &self->keep_alive, &self->response);
    g_byte_array_set_size(self->response_head, 0);
    if (head == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "an answer's head");
        return FALSE;
    }
    g_byte_array_append(self->out, (const guint8 *)head->str, (guint)head->len);
    if (self->response.status == 101) {
        self->tunnel = TRUE;
        self->keep_alive = FALSE;
        self->response_head_done = TRUE;
        /* From here the tunnel reads the socket itself. */
        clear_source(&self->read_source);
        self->watching = FALSE;
    } else if (self->response.status >= 200) {
        self->response_head_done = TRUE;
        self->response_left = self->response.content_length;
        self->response_done = self->response.body == EINSORA_HTTP_BODY_NONE;
    }
    return TRUE;
}

static gssize
write_answer(EinsoraHttpConnection *self, const void *buffer, gsize count, GError **error)
{
    gssize sent;

    if (self->aborted || self->peer_gone) {
        set_aborted_error(self, error);
        return -1;
    }
    if (self->out->len > 0 && !flush_out(self, error))
        return -1;
    if (self->tunnel)
        return send_socket(self, buffer, count, error);
    if (!self->response_head_done) {
        guint before = self->response_head->len;
        gsize end;
        gsize consumed;

        g_byte_array_append(self->response_head, buffer,
                            (guint)MIN(count, (gsize)MAX_RESPONSE_HEAD - before));
        end = einsora_http_head_end(self->response_head->data, self->response_head->len);
        if (end == 0) {
            if (self->response_head->len >= MAX_RESPONSE_HEAD) {
                g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                                    "an answer's head is too large");
                return -1;
            }
            return (gssize)(self->response_head->len - before);
        }
        consumed = end - before;
        g_byte_array_set_size(self->response_head, (guint)end);
        if (!take_response_head(self, error))
            return -1;
        {
            g_autoptr(GError) ignored = NULL;
            if (!flush_out(self, &ignored)) {
                if (!g_error_matches(ignored, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
                    g_propagate_error(error, g_steal_pointer(&ignored));
                    return -1;
                }
                /* Not left waiting for libsoup's next write: after a
                 * 100 Continue that comes only once the client sends. */
                write_later(self);
            }
        }
        return (gssize)consumed;
    }
    /* Nothing may follow an answer without a body, nor one that ended. */
    if (self->response_done) {
        if (self->response.body != EINSORA_HTTP_BODY_NONE)
            self->keep_alive = FALSE;
        return (gssize)count;
    }
    switch (self->response.body) {
    case EINSORA_HTTP_BODY_LENGTH:
        sent = send_socket(self, buffer, (gsize)MIN((guint64)count, self->response_left), error);
        if (sent > 0) {
            self->response_left -= (guint64)sent;
            self->response_done = self->response_left == 0;
        }
        return sent;
    case EINSORA_HTTP_BODY_CHUNKED: {
        gboolean done = FALSE;
        gssize part;
        sent = send_socket(self, buffer, count, error);
        if (sent <= 0)
            return sent;
        part = einsora_http_chunked_feed(&self->response_chunked, buffer, (gsize)sent, &done);
        if (part < 0 || (done && part < sent))
            self->keep_alive = FALSE;
        self->response_done = done;
        return sent;
    }
    default:
        self->keep_alive = FALSE;
        return send_socket(self, buffer, count, error);
    }
}

static gssize
exchange_output_write_nonblocking(GPollableOutputStream *stream, const void *buffer, gsize count,
                                  GError **error)
{
    return write_answer(EINSORA_HTTP_EXCHANGE_OUTPUT(stream)->connection, buffer, count, error);
}

static gboolean
exchange_output_is_writable(GPollableOutputStream *stream)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_OUTPUT(stream)->connection;

    return self->aborted || self->peer_gone ||
           g_socket_condition_check(self->socket, G_IO_OUT | G_IO_HUP | G_IO_ERR) != 0;
}

static GSource *
exchange_output_create_source(GPollableOutputStream *stream, GCancellable *cancellable)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_OUTPUT(stream)->connection;
    g_autoptr(GSource) base = NULL;

    if (self->aborted || self->peer_gone)
        base = g_timeout_source_new(0);
    else
        base = g_socket_create_source(self->socket, G_IO_OUT | G_IO_HUP | G_IO_ERR, NULL);
    return g_pollable_source_new_full(stream, base, cancellable);
}

static gboolean
exchange_output_can_poll(GPollableOutputStream *stream)
{
    return TRUE;
}

/* Bytes of the answer that can't go out now: framed as they pass, and
 * queued to be written after what is queued already. */
static void
queue_answer(EinsoraHttpConnection *self, const guint8 *data, gsize length)
{
    if (self->tunnel) {
        /* As it is. */
    } else if (self->response_done) {
        /* Nothing may follow an answer that ended. */
        self->keep_alive = FALSE;
        return;
    } else if (!self->response_head_done) {
        self->keep_alive = FALSE;
    } else if (self->response.body == EINSORA_HTTP_BODY_LENGTH) {
        length = (gsize)MIN((guint64)length, self->response_left);
        self->response_left -= length;
        self->response_done = self->response_left == 0;
    } else if (self->response.body == EINSORA_HTTP_BODY_CHUNKED) {
        gboolean done = FALSE;
        gssize part = einsora_http_chunked_feed(&self->response_chunked, data, length, &done);
        if (part < 0 || (done && (gsize)part < length))
            self->keep_alive = FALSE;
        self->response_done = done;
    } else if (self->response.body == EINSORA_HTTP_BODY_NONE) {
        return;
    } else {
        self->keep_alive = FALSE;
    }
    g_byte_array_append(self->out, data, (guint)length);
    write_later(self);
}

/* On the edge's main context: what another thread wrote. */
static void
deliver_offthread(EinsoraHttpConnection *self)
{
    g_autoptr(GByteArray) bytes = NULL;
    gsize at = 0;

    g_mutex_lock(&self->lock);
    bytes = g_steal_pointer(&self->offthread);
    self->offthread = g_byte_array_new();
    g_mutex_unlock(&self->lock);
    /* Late, after its exchange ended: there is nothing left to add to. */
    if (self->phase != PHASE_EXCHANGE || self->exchange == NULL || self->request == NULL)
        return;
    while (at < bytes->len && !self->aborted && !self->peer_gone) {
        g_autoptr(GError) error = NULL;
        gssize n = write_answer(self, bytes->data + at, bytes->len - at, &error);
        if (n > 0) {
            at += (gsize)n;
            continue;
        }
        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            queue_answer(self, bytes->data + at, bytes->len - at);
        break;
    }
}

static gboolean
on_offthread(gpointer user_data)
{
    deliver_offthread(user_data);
    return G_SOURCE_REMOVE;
}

static gssize
exchange_output_write(GOutputStream *stream, const void *buffer, gsize count,
                      GCancellable *cancellable, GError **error)
{
    EinsoraHttpConnection *self = EINSORA_HTTP_EXCHANGE_OUTPUT(stream)->connection;

    /* libsoup writes a chunked body's end from a worker thread: nothing of
     * the connection is touched there. */
    if (!g_main_context_is_owner(self->context)) {
        g_mutex_lock(&self->lock);
        g_byte_array_append(self->offthread, buffer, (guint)count);
        g_mutex_unlock(&self->lock);
        /* An idle of the edge's own context (g_main_context_invoke()
         * would run it right here when that context is free). */
        {
            GSource *source = g_idle_source_new();
            g_source_set_priority(source, G_PRIORITY_HIGH);
            g_source_set_callback(source, on_offthread, einsora_http_connection_ref(self),
                                  (GDestroyNotify)einsora_http_connection_unref);
            g_source_attach(source, self->context);
            g_source_unref(source);
        }
        return (gssize)count;
    }
    for (;;) {
        GError *local = NULL;
        gssize sent = exchange_output_write_nonblocking(G_POLLABLE_OUTPUT_STREAM(stream), buffer,
                                                        count, &local);
        if (sent >= 0 || !g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            if (local != NULL)
                g_propagate_error(error, local);
            return sent;
        }
        g_error_free(local);
        if (!g_socket_condition_wait(self->socket, G_IO_OUT, cancellable, error))
            return -1;
    }
}

static gboolean
exchange_output_close(GOutputStream *stream, GCancellable *cancellable, GError **error)
{
    return TRUE;
}

static void
exchange_output_finalize(GObject *object)
{
    g_clear_pointer(&EINSORA_HTTP_EXCHANGE_OUTPUT(object)->connection,
                    einsora_http_connection_unref);
    G_OBJECT_CLASS(exchange_output_parent_class)->finalize(object);
}

static void
exchange_output_class_init(ExchangeOutputClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = exchange_output_finalize;
    G_OUTPUT_STREAM_CLASS(klass)->write_fn = exchange_output_write;
    G_OUTPUT_STREAM_CLASS(klass)->close_fn = exchange_output_close;
}

static void
exchange_output_init(ExchangeOutput *self)
{
}

static void
exchange_output_pollable_init(GPollableOutputStreamInterface *iface)
{
    iface->can_poll = exchange_output_can_poll;
    iface->is_writable = exchange_output_is_writable;
    iface->create_source = exchange_output_create_source;
    iface->write_nonblocking = exchange_output_write_nonblocking;
}

static GInputStream *
exchange_get_input_stream(GIOStream *stream)
{
    return EINSORA_HTTP_EXCHANGE(stream)->input;
}

static GOutputStream *
exchange_get_output_stream(GIOStream *stream)
{
    return EINSORA_HTTP_EXCHANGE(stream)->output;
}

/* libsoup closes the stream when it is done with the request (it has no
 * listener, so it never keeps a connection): the connection goes on. */
static gboolean
exchange_close(GIOStream *stream, GCancellable *cancellable, GError **error)
{
    exchange_end(EINSORA_HTTP_EXCHANGE(stream));
    return G_IO_STREAM_CLASS(exchange_parent_class)->close_fn(stream, cancellable, error);
}

static void
exchange_dispose(GObject *object)
{
    exchange_end(EINSORA_HTTP_EXCHANGE(object));
    G_OBJECT_CLASS(exchange_parent_class)->dispose(object);
}

static void
exchange_finalize(GObject *object)
{
    Exchange *self = EINSORA_HTTP_EXCHANGE(object);

    g_clear_object(&self->input);
    g_clear_object(&self->output);
    g_clear_pointer(&self->connection, einsora_http_connection_unref);
    G_OBJECT_CLASS(exchange_parent_class)->finalize(object);
}

static void
exchange_class_init(ExchangeClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = exchange_dispose;
    G_OBJECT_CLASS(klass)->finalize = exchange_finalize;
    G_IO_STREAM_CLASS(klass)->get_input_stream = exchange_get_input_stream;
    G_IO_STREAM_CLASS(klass)->get_output_stream = exchange_get_output_stream;
    G_IO_STREAM_CLASS(klass)->close_fn = exchange_close;
}

static void
exchange_init(Exchange *self)
{
}

static GIOStream *
exchange_new(EinsoraHttpConnection *connection)
{
    Exchange *self = g_object_new(EXCHANGE_TYPE, NULL);
    ExchangeInput *input = g_object_new(EXCHANGE_INPUT_TYPE, NULL);
    ExchangeOutput *output = g_object_new(EXCHANGE_OUTPUT_TYPE, NULL);

    input->connection = einsora_http_connection_ref(connection);
    output->connection = einsora_http_connection_ref(connection);
    self->connection = einsora_http_connection_ref(connection);
    self->input = G_INPUT_STREAM(input);
    self->output = G_OUTPUT_STREAM(output);
    return G_IO_STREAM(self);
}

/* The connection */

EinsoraHttpConnection *
einsora_http_connection_ref(EinsoraHttpConnection *self)
{
    g_ref_count_inc(&self->ref);
    return self;
}

static void
clear_source(GSource **source)
{
    if (*source != NULL) {
        g_source_destroy(*source);
        g_clear_pointer(source, g_source_unref);
    }
}

static void
clear_request(EinsoraHttpConnection *self)
{
    g_clear_pointer(&self->request, einsora_http_request_head_free);
    g_clear_object(&self->hangup);
    self->message = NULL;
    self->head_left = 0;
    self->body_left = 0;
    memset(&self->chunked, 0, sizeof self->chunked);
    memset(&self->response_chunked, 0, sizeof self->response_chunked);
    memset(&self->response, 0, sizeof self->response);
    self->body_done = FALSE;
    self->watching = FALSE;
    self->close_after = FALSE;
    self->keep_alive = FALSE;
    self->response_head_done = FALSE;
    self->response_left = 0;
    self->response_done = FALSE;
    g_byte_array_set_size(self->response_head, 0);
    release_in(self);
}

void
einsora_http_connection_unref(EinsoraHttpConnection *self)
{
    if (!g_ref_count_dec(&self->ref))
        return;
    clear_source(&self->read_source);
    clear_source(&self->write_source);
    clear_source(&self->idle_source);
    clear_request(self);
    if (self->socket != NULL && !g_socket_is_closed(self->socket))
        g_socket_close(self->socket, NULL);
    g_clear_object(&self->socket);
    g_clear_object(&self->local);
    g_clear_object(&self->remote);
    g_free(self->client_certificate);
    g_byte_array_unref(self->in);
    g_byte_array_unref(self->out);
    g_byte_array_unref(self->response_head);
    g_byte_array_unref(self->offthread);
    g_mutex_clear(&self->lock);
    g_main_context_unref(self->context);
    g_free(self);
}

EinsoraHttpConnection *
einsora_http_connection_new(const EinsoraHttpConnectionHost *host, GSocket *socket)
{
    EinsoraHttpConnection *self = g_new0(EinsoraHttpConnection, 1);

    g_ref_count_init(&self->ref);
    self->host = *host;
    self->settings = *host->settings;
    self->socket = g_object_ref(socket);
    self->in = g_byte_array_new();
    self->out = g_byte_array_new();
    self->response_head = g_byte_array_new();
    self->offthread = g_byte_array_new();
    g_mutex_init(&self->lock);
    self->context = g_main_context_ref_thread_default();
    self->waiting_link.data = self;
    g_socket_set_blocking(socket, FALSE);
    /* Small answers go out at once, as libsoup's own listener does. */
    g_socket_set_option(socket, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
    self->local = g_socket_get_local_address(socket, NULL);
    self->remote = g_socket_get_remote_address(socket, NULL);
    return self;
}

void
einsora_http_connection_set_peer(EinsoraHttpConnection *self, GSocketAddress *local,
                                 GSocketAddress *remote)
{
    g_set_object(&self->local, local);
    g_set_object(&self->remote, remote);
}

void
einsora_http_connection_set_client_certificate(EinsoraHttpConnection *self, const char *fingerprint,
                                               GTlsCertificateFlags errors)
{
    g_free(self->client_certificate);
    self->client_certificate = g_strdup(fingerprint);
    self->client_certificate_errors = errors;
}

const char *
einsora_http_connection_get_client_certificate(EinsoraHttpConnection *self,
                                               GTlsCertificateFlags *errors)
{
    if (errors != NULL)
        *errors = self->client_certificate_errors;
    return self->client_certificate;
}

GList *
einsora_http_connection_get_waiting_link(EinsoraHttpConnection *self)
{
    return &self->waiting_link;
}

gint64
einsora_http_connection_get_deadline(EinsoraHttpConnection *self)
{
    return self->deadline_us;
}

/* The edge (and perhaps its SoupServer) is going: a connection between
 * requests closes now; one in an exchange ends when libsoup lets go of
 * it, and is not kept alive. */
void
einsora_http_connection_detach(EinsoraHttpConnection *self)
{
    self->detached = TRUE;
    if (self->phase != PHASE_EXCHANGE)
        connection_close(self);
}

static void
set_waiting(EinsoraHttpConnection *self, gboolean waiting)
{
    if (!self->detached && self->host.waiting != NULL)
        self->host.waiting(self, waiting, self->host.user_data);
}

/* Writes what is ours to write; FALSE with G_IO_ERROR_WOULD_BLOCK when
 * the socket is full. */
static gboolean
flush_out(EinsoraHttpConnection *self, GError **error)
{
    while (self->out->len > 0) {
        gssize sent = send_socket(self, self->out->data, self->out->len, error);
        if (sent < 0)
            return FALSE;
        g_byte_array_remove_range(self->out, 0, (guint)sent);
    }
    return TRUE;
}

static void finish(EinsoraHttpConnection *self);

static gboolean
on_linger_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraHttpConnection *self = user_data;
    guint8 drop[16 * 1024];

    for (;;) {
        g_autoptr(GError) error = NULL;
        gssize got = g_socket_receive(socket, (gchar *)drop, sizeof drop, NULL, &error);
        if (got < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            return G_SOURCE_CONTINUE;
        if (got <= 0 || (self->lingered += (gsize)got) > LINGER_BYTES) {
            g_clear_pointer(&self->read_source, g_source_unref);
            connection_close(self);
            return G_SOURCE_REMOVE;
        }
    }
}

static void
linger(EinsoraHttpConnection *self)
{
    self->phase = PHASE_LINGERING;
    self->deadline_us = g_get_monotonic_time() + LINGER_MS * 1000;
    if (!g_socket_shutdown(self->socket, FALSE, TRUE, NULL)) {
        connection_close(self);
        return;
    }
    clear_source(&self->read_source);
    self->read_source = g_socket_create_source(self->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
    g_source_set_callback(self->read_source, G_SOURCE_FUNC(on_linger_readable), self, NULL);
    g_source_attach(self->read_source, g_main_context_get_thread_default());
}

static gboolean
on_writable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraHttpConnection *self = user_data;
    g_autoptr(GError) error = NULL;

    if (!flush_out(self, &error) && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        return G_SOURCE_CONTINUE;
    g_clear_pointer(&self->write_source, g_source_unref);
    if (error != NULL || self->phase == PHASE_FLUSHING)
        finish(self);
    return G_SOURCE_REMOVE;
}

static void
write_later(EinsoraHttpConnection *self)
{
    if (self->write_source != NULL)
        return;
    self->write_source = g_socket_create_source(self->socket, G_IO_OUT | G_IO_HUP | G_IO_ERR, NULL);
    g_source_set_callback(self->write_source, G_SOURCE_FUNC(on_writable), self, NULL);
    g_source_attach(self->write_source, g_main_context_get_thread_default());
}

/* The last answer is written, or being written: then linger and close. */
static void
finish(EinsoraHttpConnection *self)
{
    g_autoptr(GError) error = NULL;

    if (self->phase == PHASE_CLOSED)
        return;
    if (self->phase == PHASE_WAITING)
        set_waiting(self, FALSE);
    self->phase = PHASE_FLUSHING;
    clear_source(&self->read_source);
    clear_source(&self->idle_source);
    if (!self->peer_gone && !flush_out(self, &error)) {
        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            self->deadline_us = g_get_monotonic_time() + LINGER_MS * 1000;
            write_later(self);
            return;
        }
    }
    if (self->peer_gone || error != NULL) {
        connection_close(self);
        return;
    }
    linger(self);
}

static void
connection_close(EinsoraHttpConnection *self)
{
    if (self->phase == PHASE_CLOSED)
        return;
    if (self->phase == PHASE_WAITING)
        set_waiting(self, FALSE);
    self->phase = PHASE_CLOSED;
    self->deadline_us = 0;
    clear_source(&self->read_source);
    clear_source(&self->write_source);
    clear_source(&self->idle_source);
    if (!g_socket_is_closed(self->socket))
        g_socket_close(self->socket, NULL);
    if (!self->detached && self->host.closed != NULL)
        self->host.closed(self, self->host.user_data);
}

static const char *
status_phrase(guint status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 405:
        return "Method Not Allowed";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/* A head the rules refuse: answered here, never given to libsoup. */
static void
refuse(EinsoraHttpConnection *self, guint status, const char *reason)
{
    const EinsoraHttpEdgeSettings *settings = &self->settings;
    g_autofree gchar *body = NULL;
    g_autofree gchar *head = NULL;
    g_autofree gchar *id = settings->new_request_id != NULL ? settings->new_request_id() : NULL;
    g_autofree gchar *id_header =
        id != NULL ? g_strdup_printf("X-Request-ID: %s\r\n", id) : g_strdup("");

    /* The reasons are our own fixed texts: nothing of the request; still
     * escaped for JSON, so a reason that quotes a word stays valid. */
    g_autoptr(GString) escaped = g_string_new(NULL);

    for (const char *c = reason; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\')
            g_string_append_c(escaped, '\\');
        g_string_append_c(escaped, *c);
    }
    g_message("%s%srefused a request before reading it: %u %s", id != NULL ? "request_id=" : "",
              id != NULL ? id : "", status, reason);
    if (settings->json_refusals && id != NULL)
        body = g_strdup_printf(
            "{\"error\":{\"code\":\"invalid_request\",\"message\":\"%s\",\"request_id\":\"%s\"}}\n",
            escaped->str, id);
    else if (settings->json_refusals)
        body = g_strdup_printf("{\"error\":{\"code\":\"invalid_request\",\"message\":\"%s\"}}\n",
                               escaped->str);
    else
        body = g_strdup_printf("%s\n", reason);
    head = g_strdup_printf(
        "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
        "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
        "%s%sConnection: close\r\n\r\n",
        status, status_phrase(status),
        settings->json_refusals ? "application/json" : "text/plain; charset=utf-8", strlen(body),
        id_header, status == 405 ? "Allow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS\r\n" : "");
    g_byte_array_append(self->out, (const guint8 *)head, (guint)strlen(head));
    g_byte_array_append(self->out, (const guint8 *)body, (guint)strlen(body));
    finish(self);
}

static void
start_exchange(EinsoraHttpConnection *self, EinsoraHttpRequestHead *head)
{
    g_autoptr(GIOStream) exchange = NULL;
    g_autoptr(GError) error = NULL;
    gboolean accepted;

    set_waiting(self, FALSE);
    clear_source(&self->read_source);
    self->phase = PHASE_EXCHANGE;
    self->request = head;
    /* The empty lines before it are the edge's to skip, not libsoup's. */
    g_byte_array_remove_range(self->in, 0, (guint)head->skipped);
    self->head_left = head->length - head->skipped;
    self->body_left = head->content_length;
    self->keep_alive = head->keep_alive;
    self->hangup = g_cancellable_new();
    self->requests++;
    if (self->requests >= self->settings.max_requests)
        self->keep_alive = FALSE;
    body_progress(self);
    exchange = exchange_new(self);
    self->exchange = exchange;
    if (self->local == NULL || self->remote == NULL) {
        connection_close(self);
        return;
    }
    einsora_http_connection_ref(self);
    if (!self->detached && self->host.accepting != NULL)
        self->host.accepting(self, TRUE, self->host.user_data);
    accepted =
        soup_server_accept_iostream(self->host.server, exchange, self->local, self->remote, &error);
    if (!self->detached && self->host.accepting != NULL)
        self->host.accepting(self, FALSE, self->host.user_data);
    if (!accepted) {
        g_debug("libsoup didn't take a request: %s", error->message);
        connection_close(self);
    }
    einsora_http_connection_unref(self);
}

/* Looks at what has arrived for the next request. */
static void
scan(EinsoraHttpConnection *self)
{
    EinsoraHttpRequestHead *head = NULL;
    guint status = 0;
    const char *reason = NULL;

    switch (einsora_http_request_head_scan(self->in->data, self->in->len, &self->settings.head,
                                           &head, &status, &reason)) {
    case EINSORA_HTTP_HEAD_INCOMPLETE:
        if (self->in->len > 0 && self->head_started_us == 0) {
            self->head_started_us = g_get_monotonic_time();
            self->deadline_us =
                self->head_started_us + (gint64)self->settings.head_timeout_ms * 1000;
        }
        if (self->read_source == NULL)
            start_reading(self);
        break;
    case EINSORA_HTTP_HEAD_REFUSED:
        refuse(self, status, reason);
        break;
    case EINSORA_HTTP_HEAD_COMPLETE:
        if (self->head_started_us == 0)
            self->head_started_us = g_get_monotonic_time();
        start_exchange(self, head);
        break;
    }
}

static gboolean
on_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraHttpConnection *self = user_data;
    g_autoptr(GError) error = NULL;
    gsize room = (gsize)self->settings.head.max_head_bytes + 2 -
                 MIN(self->in->len, (guint)self->settings.head.max_head_bytes);
    gssize got = receive_in(self, MIN((gsize)READ_SIZE, room), &error);

    if (got < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        return G_SOURCE_CONTINUE;
    if (got <= 0) {
        g_clear_pointer(&self->read_source, g_source_unref);
        connection_close(self);
        return G_SOURCE_REMOVE;
    }
    /* scan() may take the source away. */
    g_source_ref(self->read_source);
    {
        GSource *source = self->read_source;
        einsora_http_connection_ref(self);
        scan(self);
        g_source_unref(source);
        if (self->read_source != source) {
            einsora_http_connection_unref(self);
            return G_SOURCE_REMOVE;
        }
        einsora_http_connection_unref(self);
    }
    return G_SOURCE_CONTINUE;
}

static void
start_reading(EinsoraHttpConnection *self)
{
    self->read_source = g_socket_create_source(self->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
    g_source_set_callback(self->read_source, G_SOURCE_FUNC(on_readable), self, NULL);
    g_source_attach(self->read_source, g_main_context_get_thread_default());
}

static void
wait_for_request(EinsoraHttpConnection *self)
{
    self->phase = PHASE_WAITING;
    self->head_started_us = 0;
    self->deadline_us =
        g_get_monotonic_time() + (gint64)(self->requests == 0 ? self->settings.head_timeout_ms
                                                              : self->settings.idle_timeout_ms) *
                                     1000;
    set_waiting(self, TRUE);
}

static gboolean
on_next_request(gpointer user_data)
{
    EinsoraHttpConnection *self = user_data;

    g_clear_pointer(&self->idle_source, g_source_unref);
    scan(self);
    return G_SOURCE_REMOVE;
}

void
einsora_http_connection_start(EinsoraHttpConnection *self)
{
    wait_for_request(self);
    start_reading(self);
}

/* While the answer is awaited: a hang-up is noticed, and a pipelined
 * request waits in @in. Past the head limit what follows is dropped and
 * the connection closes after this answer, so the end of its input is
 * still seen. An end of input (a half-close too) cancels the hang-up
 * watch but the answer still goes out; a reset ends writing as well.
 * Returns whether to go on watching. */
static gboolean
watch_read(EinsoraHttpConnection *self)
{
    /* Reads a turn of the main loop takes at most: a client that floods
     * while it waits can't hold the loop. */
    for (guint reads = 0; reads < 4; reads++) {
        g_autoptr(GError) error = NULL;
        gssize got;

        if (self->in->len >= self->settings.head.max_head_bytes) {
            guint8 drop[16 * 1024];
            /* What comes before a 101 is the tunnel's: never dropped. */
            if (self->request != NULL && self->request->upgrade)
                return FALSE;
            /* Past a megabyte of it, the client is taken as gone. */
            if (self->lingered > LINGER_BYTES)
                break;
            self->close_after = TRUE;
            got = g_socket_receive(self->socket, (gchar *)drop, sizeof drop, NULL, &error);
            if (got == 0)
                self->eof = TRUE;
            if (got > 0)
                self->lingered += (gsize)got;
        } else {
            got = receive_in(self, READ_SIZE, &error);
        }
        if (got < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
            return TRUE;
        if (got < 0)
            self->peer_gone = TRUE;
        if (got <= 0)
            break;
        if (reads == 3)
            return TRUE;
    }
    if (self->hangup != NULL)
        g_cancellable_cancel(self->hangup);
    return FALSE;
}

static gboolean
on_watch_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraHttpConnection *self = user_data;

    if (watch_read(self))
        return G_SOURCE_CONTINUE;
    g_clear_pointer(&self->read_source, g_source_unref);
    return G_SOURCE_REMOVE;
}

/* Also looks at once: a client that sent its request and hung up is
 * known to be gone before any handler runs. */
static void
start_watching(EinsoraHttpConnection *self)
{
    if (self->watching || self->phase != PHASE_EXCHANGE)
        return;
    self->watching = TRUE;
    clear_source(&self->read_source);
    if (!watch_read(self))
        return;
    self->read_source = g_socket_create_source(self->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
    /* Ahead of whatever the handler waits for (a sign-in's verdict): a
     * client that is gone is known before its answer is made. */
    g_source_set_priority(self->read_source, G_PRIORITY_HIGH);
    g_source_set_callback(self->read_source, G_SOURCE_FUNC(on_watch_readable), self, NULL);
    g_source_attach(self->read_source, g_main_context_get_thread_default());
}

/* libsoup is done with the request: next one, or the end. */
static void
exchange_end(Exchange *exchange)
{
    EinsoraHttpConnection *self = exchange->connection;
    gboolean keep;

    if (exchange->ended || self == NULL)
        return;
    exchange->ended = TRUE;
    if (self->exchange != G_IO_STREAM(exchange))
        return;
    /* An answer's end another thread wrote comes before its verdict. */
    if (g_main_context_is_owner(self->context))
        deliver_offthread(self);
    self->exchange = NULL;
    clear_source(&self->read_source);
    if (self->phase != PHASE_EXCHANGE)
        return;
    keep = self->keep_alive && !self->close_after && !self->tunnel && !self->aborted &&
           !self->peer_gone && !self->eof && self->head_left == 0 && self->body_done &&
           self->response_head_done && self->response_done && !self->detached;
    clear_request(self);
    if (!keep) {
        finish(self);
        return;
    }
    if (self->out->len > 0)
        write_later(self);
    wait_for_request(self);
    if (self->in->len > 0) {
        /* A pipelined request: not from inside libsoup's close. */
        self->idle_source = g_idle_source_new();
        g_source_set_callback(self->idle_source, on_next_request, self, NULL);
        g_source_attach(self->idle_source, g_main_context_get_thread_default());
    } else {
        start_reading(self);
    }
}

void
einsora_http_connection_expire(EinsoraHttpConnection *self, const char *why)
{
    g_debug("closing a connection: %s", why);
    switch (self->phase) {
    case PHASE_EXCHANGE:
        /* libsoup is waiting on the socket: its end of stream wakes it,
         * and every read from now on fails. */
        self->aborted = TRUE;
        self->deadline_us = 0;
        if (self->hangup != NULL)
            g_cancellable_cancel(self->hangup);
        g_socket_shutdown(self->socket, TRUE, TRUE, NULL);
        break;
    default:
        connection_close(self);
        break;
    }
}

void
einsora_http_connection_set_message(EinsoraHttpConnection *self, SoupServerMessage *message)
{
    self->message = message;
}

SoupServerMessage *
einsora_http_connection_get_message(EinsoraHttpConnection *self)
{
    return self->message;
}

GSocket *
einsora_http_connection_get_socket(EinsoraHttpConnection *connection)
{
    return connection->socket;
}

GCancellable *
einsora_http_connection_get_hangup(EinsoraHttpConnection *self)
{
    return self->hangup;
}

void
einsora_http_connection_close_after(EinsoraHttpConnection *self)
{
    self->close_after = TRUE;
}
