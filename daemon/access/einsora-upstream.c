#define G_LOG_DOMAIN "einsora-access"

#include "einsora-upstream.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

/* Reads of the answer's head; a head may be at most the edge's bound. */
#define HEAD_READ (16 * 1024)
#define HEAD_MAX EINSORA_HTTP_MAX_HEAD_BYTES
/* A piece of a request body smaller than this waits to go out with the
 * next ones. */
#define COALESCE_BYTES (64 * 1024)

typedef struct {
    GSource source;
    EinsoraUpstream *upstream;
} UpstreamSource;

/* What the answer's body is read into. libsoup lets go of each piece once
 * it is written, before the next read: the same buffer serves the next
 * one, instead of a fresh 256 KiB each time (malloc's threshold for that
 * size moves, and the heap then grows and shrinks on every read). */
typedef struct {
    gatomicrefcount refs;
    gsize size;
    guint8 data[];
} ReadBuffer;

static ReadBuffer *
read_buffer_new(gsize size)
{
    ReadBuffer *buffer = g_malloc(sizeof(ReadBuffer) + size);

    g_atomic_ref_count_init(&buffer->refs);
    buffer->size = size;
    return buffer;
}

static void
read_buffer_unref(gpointer data)
{
    ReadBuffer *buffer = data;

    if (g_atomic_ref_count_dec(&buffer->refs))
        g_free(buffer);
}

struct _EinsoraUpstream {
    const EinsoraUpstreamCallbacks *callbacks;
    gpointer user_data;
    int fd;
    GSource *source;
    gpointer tag;        /* the socket in the source's poll; NULL once it hung up */
    GIOCondition events; /* polled for now */
    gboolean connecting;
    gboolean hung_up; /* all that will come is in the kernel's buffer */
    gboolean in_dispatch;
    gboolean freed; /* while in dispatch: freed at its end */

    /* Towards the workload: what the socket didn't take yet. */
    GByteArray *out;
    guint head_bytes; /* the head's bytes at the start of out: its token */
    EinsoraHttpBody request_body;
    gboolean write_failed;
    gboolean waiting_writer; /* told to wait for drained */

    /* From it. */
    gboolean head_request;
    GByteArray *in; /* the head as it arrives; then what came after it */
    gboolean answered;
    EinsoraHttpBody answer_body;
    guint64 remaining; /* of a body of known length */
    EinsoraHttpChunked chunked;
    gsize want; /* of the piece asked for; 0 while none is */
    gboolean over;
    ReadBuffer *buffer;
};

static void
upstream_really_free(EinsoraUpstream *self)
{
    if (self->source != NULL) {
        g_source_destroy(self->source);
        g_source_unref(self->source);
    }
    if (self->fd >= 0)
        close(self->fd);
    /* The head holds the workload's token. An array nothing was ever
     * appended to has no data at all. */
    if (self->out->data != NULL)
        explicit_bzero(self->out->data, self->out->len);
    g_byte_array_unref(self->out);
    g_byte_array_unref(self->in);
    if (self->buffer != NULL)
        read_buffer_unref(self->buffer);
    g_free(self);
}

void
einsora_upstream_free(EinsoraUpstream *self)
{
    if (self == NULL)
        return;
    if (self->in_dispatch) {
        self->freed = TRUE;
        return;
    }
    upstream_really_free(self);
}

static void
update_events(EinsoraUpstream *self)
{
    GIOCondition events = 0;

    if (self->tag == NULL)
        return;
    if (self->connecting || (self->out->len > 0 && !self->write_failed))
        events |= G_IO_OUT;
    if (!self->answered || (self->want > 0 && !self->over))
        events |= G_IO_IN;
    if (events != self->events) {
        /* No wake-up from the loop's own thread, unlike adding a poll. */
        g_source_modify_unix_fd(self->source, self->tag, events);
        self->events = events;
    }
}

/* Comes back from the main loop without waiting for the socket: for bytes
 * already read, or a socket that hung up and is no longer polled. */
static void
poke(EinsoraUpstream *self)
{
    g_source_set_ready_time(self->source, 0);
}

/* Sends what waits, as much as the socket takes. */
static void
flush(EinsoraUpstream *self)
{
    while (self->out->len > 0 && !self->connecting && !self->write_failed) {
        gssize sent = send(self->fd, self->out->data, self->out->len, MSG_NOSIGNAL);

        if (sent < 0 && errno == EINTR)
            continue;
        if (sent < 0 && errno == EAGAIN)
            break;
        if (sent < 0) {
            /* It stopped taking the body (it may have answered already):
             * the rest is dropped, and its answer still read. */
            g_debug("the workload took no more of the request: %s", g_strerror(errno));
            self->write_failed = TRUE;
            explicit_bzero(self->out->data, self->out->len);
            g_byte_array_set_size(self->out, 0);
            self->head_bytes = 0;
            break;
        }
        g_byte_array_remove_range(self->out, 0, (guint)sent);
        /* While the head waits, what moved down leaves its old copy, with
         * the token, past the end. */
        if (self->head_bytes > 0) {
            explicit_bzero(self->out->data + self->out->len, (gsize)sent);
            self->head_bytes -= MIN(self->head_bytes, (guint)sent);
        }
    }
}

/* Writes @iov at once where nothing waits before it; the rest waits. */
static void
write_vectors(EinsoraUpstream *self, const struct iovec *iov, int count, gboolean coalesce)
{
    gsize total = 0, sent = 0;

    for (int i = 0; i < count; i++)
        total += iov[i].iov_len;
    if (self->write_failed)
        return;
    /* Small pieces of a body (libsoup reads 8 KiB at a time) wait for the
     * socket's next turn and go out together. */
    if (self->out->len == 0 && !self->connecting && (!coalesce || total >= COALESCE_BYTES)) {
        struct msghdr message = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)count};
        gssize n;

        do
            n = sendmsg(self->fd, &message, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN) {
            g_debug("the workload took no more of the request: %s", g_strerror(errno));
            self->write_failed = TRUE;
            return;
        }
        sent = n > 0 ? (gsize)n : 0;
    }
    for (int i = 0; i < count && sent < total; i++) {
        gsize skip = MIN(sent, iov[i].iov_len);

        g_byte_array_append(self->out, (const guint8 *)iov[i].iov_base + skip,
                            (guint)(iov[i].iov_len - skip));
        sent -= skip;
    }
}

gboolean
einsora_upstream_write_body(EinsoraUpstream *self, const guint8 *data, gsize length)
{
    g_return_val_if_fail(self != NULL, TRUE);
    if (length == 0)
        return TRUE;
    if (self->request_body == EINSORA_HTTP_BODY_CHUNKED) {
        char line[32];
        int line_length = g_snprintf(line, sizeof line, "%" G_GSIZE_MODIFIER "x\r\n", length);
        struct iovec iov[] = {
            {line, (size_t)line_length}, {(void *)data, length}, {(void *)"\r\n", 2}};

        write_vectors(self, iov, G_N_ELEMENTS(iov), TRUE);
    } else {
        struct iovec iov[] = {{(void *)data, length}};

        write_vectors(self, iov, 1, TRUE);
    }
    if (self->out->len >= COALESCE_BYTES)
        flush(self);
    update_events(self);
    if (self->out->len >= EINSORA_UPSTREAM_HIGH_MARK) {
        self->waiting_writer = TRUE;
        return FALSE;
    }
    return TRUE;
}

void
einsora_upstream_finish_body(EinsoraUpstream *self)
{
    g_return_if_fail(self != NULL);
    if (self->request_body == EINSORA_HTTP_BODY_CHUNKED) {
        struct iovec iov[] = {{(void *)"0\r\n\r\n", 5}};

        write_vectors(self, iov, 1, TRUE);
        update_events(self);
    }
}

void
einsora_upstream_read_body(EinsoraUpstream *self, gsize max)
{
    g_return_if_fail(self != NULL && self->answered && max > 0);
    self->want = max;
    if (self->in->len > 0 || self->hung_up || self->over ||
        self->answer_body == EINSORA_HTTP_BODY_NONE ||
        (self->answer_body == EINSORA_HTTP_BODY_LENGTH && self->remaining == 0))
        poke(self);
    else
        update_events(self);
}

static void
fail(EinsoraUpstream *self, const char *why)
{
    g_autoptr(GError) error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, why);

    self->over = TRUE;
    self->answered = TRUE; /* nothing more to read */
    self->callbacks->failed(self, error, self->user_data);
}

/* The answer's head, once it is all here: parsed by libsoup's parser. */
static void
read_head(EinsoraUpstream *self)
{
    guint old = self->in->len;
    gssize n;

    g_byte_array_set_size(self->in, old + HEAD_READ);
    do
        n = recv(self->fd, self->in->data + old, HEAD_READ, 0);
    while (n < 0 && errno == EINTR);
    g_byte_array_set_size(self->in, old + (guint)MAX(n, 0));
    if (n < 0 && errno == EAGAIN)
        return;
    if (n < 0) {
        fail(self, g_strerror(errno));
        return;
    }
    if (n == 0) {
        fail(self, "it closed the connection without an answer");
        return;
    }
    for (;;) {
        gsize end = einsora_http_head_end(self->in->data, self->in->len);
        g_autoptr(SoupMessageHeaders) headers = NULL;
        g_autofree gchar *text = NULL;
        g_autofree gchar *reason = NULL;
        guint status = 0;
        SoupEncoding encoding;

        if (end == 0) {
            if (self->in->len >= HEAD_MAX)
                fail(self, "an oversized answer head");
            return;
        }
        headers = soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE);
        /* libsoup's parser reads numbers with strtol: a terminated copy. */
        text = g_strndup((const char *)self->in->data, end);
        if (!soup_headers_parse_response(text, (int)end, headers, NULL, &status, &reason)) {
            fail(self, "an answer head that can't be read");
            return;
        }
        g_byte_array_remove_range(self->in, 0, (guint)end);
        /* 100 Continue and the like: the answer follows. */
        if (status < 200 && status != SOUP_STATUS_SWITCHING_PROTOCOLS)
            continue;
        encoding = soup_message_headers_get_encoding(headers);
        if (self->head_request || status < 200 || status == 204 || status == 304) {
            self->answer_body = EINSORA_HTTP_BODY_NONE;
        } else if (encoding == SOUP_ENCODING_CHUNKED) {
            self->answer_body = EINSORA_HTTP_BODY_CHUNKED;
        } else if (encoding == SOUP_ENCODING_CONTENT_LENGTH) {
            self->answer_body = EINSORA_HTTP_BODY_LENGTH;
            self->remaining = (guint64)soup_message_headers_get_content_length(headers);
        } else if (encoding == SOUP_ENCODING_EOF || encoding == SOUP_ENCODING_NONE) {
            self->answer_body = encoding == SOUP_ENCODING_NONE ? EINSORA_HTTP_BODY_NONE
                                                               : EINSORA_HTTP_BODY_UNTIL_CLOSE;
        } else {
            fail(self, "an answer framed in a way that can't be read");
            return;
        }
        self->answered = TRUE;
        self->callbacks->answered(self, status, reason, headers, self->user_data);
        return;
    }
}

static void
body_over(EinsoraUpstream *self, GBytes *chunk, const char *why)
{
    g_autoptr(GError) error =
        why != NULL ? g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, why) : NULL;

    self->over = TRUE;
    self->want = 0;
    self->callbacks->body(self, chunk, TRUE, error, self->user_data);
}

/* The next piece of the body asked for, decoded from its framing. */
static void
read_body(EinsoraUpstream *self)
{
    for (;;) {
        gsize max = self->want;
        guint8 *data;
        gssize n;
        gsize length;
        gboolean done = FALSE;

        if (self->answer_body == EINSORA_HTTP_BODY_NONE ||
            (self->answer_body == EINSORA_HTTP_BODY_LENGTH && self->remaining == 0)) {
            body_over(self, NULL, NULL);
            return;
        }
        if (self->answer_body == EINSORA_HTTP_BODY_LENGTH)
            max = (gsize)MIN((guint64)max, self->remaining);
        if (self->buffer == NULL || self->buffer->size < max ||
            !g_atomic_ref_count_compare(&self->buffer->refs, 1)) {
            if (self->buffer != NULL)
                read_buffer_unref(self->buffer);
            self->buffer = read_buffer_new(max);
        }
        data = self->buffer->data;
        if (self->in->len > 0) {
            /* What came with the head. */
            n = (gssize)MIN((gsize)self->in->len, max);
            memcpy(data, self->in->data, (gsize)n);
            g_byte_array_remove_range(self->in, 0, (guint)n);
        } else {
            do
                n = recv(self->fd, data, max, 0);
            while (n < 0 && errno == EINTR);
        }
        if (n < 0 && errno == EAGAIN) {
            update_events(self);
            return;
        }
        if (n < 0) {
            body_over(self, NULL, g_strerror(errno));
            return;
        }
        if (n == 0) {
            body_over(self, NULL,
                      self->answer_body == EINSORA_HTTP_BODY_UNTIL_CLOSE
                          ? NULL
                          : "it closed the connection before the end of its answer");
            return;
        }
        length = (gsize)n;
        if (self->answer_body == EINSORA_HTTP_BODY_CHUNKED) {
            /* Whatever follows the last chunk is not read on. */
            if (einsora_http_chunked_decode(&self->chunked, data, (gsize)n, &length, &done) < 0) {
                body_over(self, NULL, "a malformed chunked answer");
                return;
            }
            if (length == 0 && !done)
                continue; /* framing only: read on */
        } else if (self->answer_body == EINSORA_HTTP_BODY_LENGTH) {
            self->remaining -= (guint64)n;
            done = self->remaining == 0;
        }
        {
            g_autoptr(GBytes) chunk =
                g_bytes_new_with_free_func(data, length, read_buffer_unref, self->buffer);

            g_atomic_ref_count_inc(&self->buffer->refs);

            if (done) {
                body_over(self, length > 0 ? chunk : NULL, NULL);
            } else {
                self->want = 0;
                update_events(self);
                self->callbacks->body(self, chunk, FALSE, NULL, self->user_data);
            }
        }
        return;
    }
}

static gboolean
upstream_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
    EinsoraUpstream *self = ((UpstreamSource *)source)->upstream;
    GIOCondition revents = self->tag != NULL ? g_source_query_unix_fd(source, self->tag) : 0;
    gboolean poked = g_source_get_ready_time(source) == 0;

    /* Each setting wakes the loop: only when it was set. */
    if (poked)
        g_source_set_ready_time(source, -1);
    self->in_dispatch = TRUE;
    if (self->connecting && (revents & (G_IO_OUT | G_IO_ERR | G_IO_HUP)) != 0) {
        int error = 0;
        socklen_t length = sizeof error;

        if (getsockopt(self->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0)
            error = errno;
        self->connecting = FALSE;
        if (error != 0)
            fail(self, g_strerror(error));
    }
    if (!self->freed && !self->over && self->out->len > 0 &&
        (revents & (G_IO_OUT | G_IO_ERR | G_IO_HUP)) != 0) {
        flush(self);
        if (self->waiting_writer && self->out->len < EINSORA_UPSTREAM_HIGH_MARK / 2) {
            self->waiting_writer = FALSE;
            self->callbacks->drained(self, self->user_data);
        }
    }
    /* Hung up while no read is wanted: the poll would report it on every
     * turn. What is left is in the kernel's buffer, read without a poll. */
    if (!self->freed && self->tag != NULL && (revents & (G_IO_HUP | G_IO_ERR)) != 0 &&
        (self->events & G_IO_IN) == 0) {
        g_source_remove_unix_fd(source, self->tag);
        self->tag = NULL;
        self->hung_up = TRUE;
        if (self->out->len > 0)
            self->write_failed = TRUE;
    }
    if (!self->freed && !self->over &&
        (poked || self->hung_up || (revents & (G_IO_IN | G_IO_HUP | G_IO_ERR)) != 0)) {
        if (!self->answered)
            read_head(self);
        else if (self->want > 0)
            read_body(self);
    }
    if (!self->freed)
        update_events(self);
    self->in_dispatch = FALSE;
    if (self->freed)
        upstream_really_free(self);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs upstream_source_funcs = {NULL, NULL, upstream_dispatch, NULL, NULL, NULL};

/* The exchange on @fd, connected or connecting (@connecting), which it
 * takes; @head is sent first and wiped. */
static EinsoraUpstream *
upstream_start(int fd, gboolean connecting, GString *head, EinsoraHttpBody body,
               gboolean head_request, const EinsoraUpstreamCallbacks *callbacks, gpointer user_data)
{
    EinsoraUpstream *self = g_new0(EinsoraUpstream, 1);

    self->fd = fd;
    self->callbacks = callbacks;
    self->user_data = user_data;
    self->request_body = body;
    self->head_request = head_request;
    self->out = g_byte_array_new();
    self->in = g_byte_array_new();
    self->connecting = connecting;
    {
        struct iovec iov[] = {{head->str, head->len}};
        write_vectors(self, iov, 1, FALSE);
        self->head_bytes = self->out->len;
        explicit_bzero(head->str, head->len);
    }
    self->source = g_source_new(&upstream_source_funcs, sizeof(UpstreamSource));
    ((UpstreamSource *)self->source)->upstream = self;
    g_source_set_static_name(self->source, "einsora-upstream");
    /* GLib takes a source's descriptors out of the poll while it runs it,
     * and puts them back, waking the loop each time, unless it may
     * recurse; nothing here runs the loop inside it. */
    g_source_set_can_recurse(self->source, TRUE);
    self->events = G_IO_IN | (self->connecting || self->out->len > 0 ? G_IO_OUT : 0);
    self->tag = g_source_add_unix_fd(self->source, self->fd, self->events);
    g_source_attach(self->source, g_main_context_get_thread_default());
    return self;
}

EinsoraUpstream *
einsora_upstream_new(const char *address, GString *head, EinsoraHttpBody body,
                     gboolean head_request, const EinsoraUpstreamCallbacks *callbacks,
                     gpointer user_data, GError **error)
{
    struct sockaddr_un name = {.sun_family = AF_UNIX};
    int fd, connected, saved;

    if (g_strlcpy(name.sun_path, address, sizeof name.sun_path) >= sizeof name.sun_path) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "a socket name too long");
        return NULL;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "no socket: %s",
                    g_strerror(saved));
        return NULL;
    }
    do
        connected = connect(fd, (struct sockaddr *)&name, sizeof name);
    while (connected < 0 && errno == EINTR);
    saved = errno;
    if (connected < 0 && saved != EINPROGRESS) {
        close(fd);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved),
                    "can't connect to the workload's socket: %s", g_strerror(saved));
        return NULL;
    }
    return upstream_start(fd, connected < 0, head, body, head_request, callbacks, user_data);
}

EinsoraUpstream *
einsora_upstream_new_for_fd(int fd, GString *head, EinsoraHttpBody body, gboolean head_request,
                            const EinsoraUpstreamCallbacks *callbacks, gpointer user_data)
{
    g_return_val_if_fail(fd >= 0, NULL);
    return upstream_start(fd, FALSE, head, body, head_request, callbacks, user_data);
}
