#define G_LOG_DOMAIN "einsora-http"

#include "einsora-tls-front.h"

#include "einsora-tls-identity.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes held each way at most. */
#define BUFFER_SIZE (16 * 1024)
/* A TLS client's first byte: a handshake record. */
#define TLS_HANDSHAKE_RECORD 0x16
/* The answer to a plain HTTP request on the TLS port, so that someone
 * who typed http:// reads what to type instead. */
#define PLAIN_REFUSAL                                                                              \
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 48\r\n"               \
    "Connection: close\r\n\r\nThis port speaks TLS: use https:// to reach it.\n"
/* glib-networking 2.74 runs each handshake as a blocking job in GLib's
 * shared worker pool (10 threads, growing slowly): a peer that starts one
 * and stalls holds a thread. So only this many run at once, at most two
 * from one address, each for at most HANDSHAKE_TIMEOUT_MS; the rest wait
 * their turn on the main loop (within the connection's head deadline). */
#define MAX_HANDSHAKES 6
#define MAX_HANDSHAKES_PER_PEER 2
#define HANDSHAKE_TIMEOUT_MS 10000
/* What a refused plain request may leave unread, read and dropped so the
 * close doesn't reset the refusal away. */
#define REFUSAL_DRAIN_BYTES 65536
/* Once the connection has closed its end: how long what it wrote last
 * may take to reach a peer that reads slowly, before the front gives up. */
#define FLUSH_AFTER_CLOSE_MS 5000

struct _EinsoraTlsFront {
    grefcount ref;
    GSocket *tcp;
    GSocket *outer; /* our end of the pair; the connection has the other */
    GIOStream *tls;
    /* Made when its handshake's turn comes: a connection that waits, or
     * never says a word, costs no TLS session. */
    GTlsCertificate *certificate;
    GPollableInputStream *tls_in;
    GPollableOutputStream *tls_out;
    GCancellable *cancellable;
    void (*done)(EinsoraTlsFront *front, gpointer user_data);
    gpointer user_data;

    gboolean relaying; /* handshaken: the pumps run */
    /* Up: what the peer sends, from TLS to the connection. Each buffer is
     * held only while bytes pass: an idle connection (a held long poll)
     * keeps none, and thousands of agents each hold one. */
    guint8 *up;
    gsize up_at, up_len;
    gboolean up_ended; /* the peer's TLS ended: the pair's write side is shut */
    /* Down: the connection's answers, to TLS. */
    guint8 *down;
    gsize down_at, down_len;
    gboolean down_ended;  /* the connection wrote its last */
    gboolean down_closed; /* and TLS said so to the peer (close_notify) */
    gboolean inner_gone;  /* the connection closed its end */
    gboolean finished;

    GSource *up_read;    /* TLS readable */
    GSource *up_write;   /* the pair writable */
    GSource *down_read;  /* the pair readable */
    GSource *down_write; /* TLS writable */
    GSource *hangup;     /* the pair's other end closed */
    GSource *first_byte; /* the peer's first, before the handshake */
    gchar *peer;         /* its address, for the per-peer handshake cap */
    gboolean handshaking;
    GList queue_link; /* in waiting_handshakes while it waits its turn */
    gboolean queued;
    GSource *handshake_timeout;
    GSource *flush_timeout;
    /* Client certificates, when asked for. */
    GTlsDatabase *authority;
    void (*peer_known)(const char *fingerprint, GTlsCertificateFlags errors, gpointer user_data);
    gpointer peer_data;
    GDestroyNotify peer_destroy;
};

static guint running_handshakes;
static GQueue waiting_handshakes = G_QUEUE_INIT;
static GHashTable *handshakes_by_peer; /* address -> GUINT_TO_POINTER(running) */

static void pump_up(EinsoraTlsFront *self);
static void pump_down(EinsoraTlsFront *self);

static EinsoraTlsFront *
front_ref(EinsoraTlsFront *self)
{
    g_ref_count_inc(&self->ref);
    return self;
}

static void
front_unref(EinsoraTlsFront *self)
{
    if (!g_ref_count_dec(&self->ref))
        return;
    g_clear_object(&self->tls);
    g_clear_object(&self->certificate);
    g_clear_object(&self->tcp);
    g_clear_object(&self->outer);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->authority);
    if (self->peer_destroy != NULL)
        self->peer_destroy(self->peer_data);
    g_free(self->peer);
    g_free(self->up);
    g_free(self->down);
    g_free(self);
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
watch(GSource **slot, GSource *source, GSourceFunc callback, EinsoraTlsFront *self)
{
    g_assert(*slot == NULL);
    g_source_set_callback(source, callback, self, NULL);
    g_source_attach(source, g_main_context_get_thread_default());
    *slot = source;
}

/* The source whose callback runs is removed by its returning
 * G_SOURCE_REMOVE: its slot only lets go. */
static void
release_source(GSource **source)
{
    g_clear_pointer(source, g_source_unref);
}

static void
shut_down(EinsoraTlsFront *self)
{
    clear_source(&self->up_read);
    clear_source(&self->up_write);
    clear_source(&self->down_read);
    clear_source(&self->down_write);
    clear_source(&self->hangup);
    clear_source(&self->first_byte);
    clear_source(&self->flush_timeout);
    clear_source(&self->handshake_timeout);
    g_cancellable_cancel(self->cancellable);
    if (self->queued) {
        self->queued = FALSE;
        g_queue_unlink(&waiting_handshakes, &self->queue_link);
        front_unref(self);
    }
    /* The TLS connection is never closed as a stream: that would write
     * to a peer that may not read. Its socket is shut down under it,
     * which wakes a worker thread blocked on it; the descriptor is closed
     * with the last reference, once no job can still use it. */
    if (!g_socket_is_closed(self->tcp))
        g_socket_shutdown(self->tcp, TRUE, TRUE, NULL);
    if (!g_socket_is_closed(self->outer))
        g_socket_close(self->outer, NULL);
}

static gboolean
report_done(gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    if (self->done != NULL)
        self->done(self, self->user_data);
    return G_SOURCE_REMOVE;
}

static void
finish(EinsoraTlsFront *self)
{
    if (self->finished)
        return;
    self->finished = TRUE;
    shut_down(self);
    /* Not from inside a pump: the owner may drop its reference. */
    g_idle_add_full(G_PRIORITY_DEFAULT, report_done, front_ref(self), (GDestroyNotify)front_unref);
}

static void
fail(EinsoraTlsFront *self, const char *what, GError *error)
{
    if (!self->finished && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_debug("TLS connection: %s: %s", what, error->message);
    finish(self);
}

static void
check_finished(EinsoraTlsFront *self)
{
    if (self->down_closed && (self->up_ended || self->inner_gone))
        finish(self);
}

static gboolean
on_up_readable(GObject *stream, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->up_read);
    pump_up(self);
    return G_SOURCE_REMOVE;
}

static gboolean
on_up_writable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->up_write);
    pump_up(self);
    return G_SOURCE_REMOVE;
}

/* The peer's bytes to the connection, a buffer at a time. */
static void
pump_up(EinsoraTlsFront *self)
{
    while (!self->finished && !self->inner_gone) {
        g_autoptr(GError) error = NULL;
        gssize count;

        if (self->up_at == self->up_len) {
            if (self->up_ended)
                return;
            if (self->up == NULL)
                self->up = g_malloc(BUFFER_SIZE);
            count = g_pollable_input_stream_read_nonblocking(self->tls_in, self->up, BUFFER_SIZE,
                                                             NULL, &error);
            if (count < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
                g_clear_pointer(&self->up, g_free);
                watch(&self->up_read, g_pollable_input_stream_create_source(self->tls_in, NULL),
                      G_SOURCE_FUNC(on_up_readable), self);
                return;
            }
            /* A peer that ends its TCP without close_notify ends its
             * requests all the same: the connection decides what that
             * means for a request half read. */
            if (count == 0 || g_error_matches(error, G_TLS_ERROR, G_TLS_ERROR_EOF)) {
                self->up_ended = TRUE;
                g_socket_shutdown(self->outer, FALSE, TRUE, NULL);
                check_finished(self);
                return;
            }
            if (count < 0) {
                fail(self, "reading", error);
                return;
            }
            self->up_at = 0;
            self->up_len = (gsize)count;
        }
        count = g_socket_send(self->outer, (const gchar *)self->up + self->up_at,
                              self->up_len - self->up_at, NULL, &error);
        if (count < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            watch(&self->up_write, g_socket_create_source(self->outer, G_IO_OUT, NULL),
                  G_SOURCE_FUNC(on_up_writable), self);
            return;
        }
        if (count < 0) {
            /* The connection closed its end: its hang-up watch finishes. */
            self->inner_gone = TRUE;
            return;
        }
        self->up_at += (gsize)count;
    }
}

static void
on_down_closed(GObject *stream, GAsyncResult *result, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_output_stream_close_finish(G_OUTPUT_STREAM(stream), result, &error))
        fail(self, "ending", error);
    else if (!self->finished) {
        self->down_closed = TRUE;
        check_finished(self);
    }
    front_unref(self);
}

static gboolean
on_down_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->down_read);
    pump_down(self);
    return G_SOURCE_REMOVE;
}

static gboolean
on_down_writable(GObject *stream, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->down_write);
    pump_down(self);
    return G_SOURCE_REMOVE;
}

/* The connection's bytes to the peer; at their end, TLS's close_notify. */
static void
pump_down(EinsoraTlsFront *self)
{
    while (!self->finished) {
        g_autoptr(GError) error = NULL;
        gssize count;

        if (self->down_at == self->down_len) {
            if (self->down_ended)
                return;
            if (self->down == NULL)
                self->down = g_malloc(BUFFER_SIZE);
            count = g_socket_receive(self->outer, (gchar *)self->down, BUFFER_SIZE, NULL, &error);
            if (count < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
                g_clear_pointer(&self->down, g_free);
                watch(&self->down_read, g_socket_create_source(self->outer, G_IO_IN, NULL),
                      G_SOURCE_FUNC(on_down_readable), self);
                return;
            }
            /* A connection that closed with our bytes unread resets the
             * pair: its end all the same. */
            if (count < 0 && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED) &&
                !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE)) {
                fail(self, "relaying", error);
                return;
            }
            if (count <= 0) {
                self->down_ended = TRUE;
                g_output_stream_close_async(G_OUTPUT_STREAM(self->tls_out), G_PRIORITY_DEFAULT,
                                            self->cancellable, on_down_closed, front_ref(self));
                return;
            }
            self->down_at = 0;
            self->down_len = (gsize)count;
        }
        count = g_pollable_output_stream_write_nonblocking(
            self->tls_out, self->down + self->down_at, self->down_len - self->down_at, NULL,
            &error);
        if (count < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
            watch(&self->down_write, g_pollable_output_stream_create_source(self->tls_out, NULL),
                  G_SOURCE_FUNC(on_down_writable), self);
            return;
        }
        if (count < 0) {
            fail(self, "writing", error);
            return;
        }
        self->down_at += (gsize)count;
    }
}

static gboolean
on_flush_timeout(gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->flush_timeout);
    g_debug("TLS connection: its peer didn't read the last answer in %d ms", FLUSH_AFTER_CLOSE_MS);
    finish(self);
    return G_SOURCE_REMOVE;
}

/* The connection closed its end: what it wrote before still goes out,
 * for a while; what the peer sends has nowhere to go. */
static gboolean
on_hangup(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->hangup);
    self->inner_gone = TRUE;
    if (!self->relaying) {
        /* Still in the handshake. */
        finish(self);
        return G_SOURCE_REMOVE;
    }
    clear_source(&self->up_read);
    clear_source(&self->up_write);
    self->flush_timeout = g_timeout_source_new(FLUSH_AFTER_CLOSE_MS);
    g_source_set_callback(self->flush_timeout, on_flush_timeout, self, NULL);
    g_source_attach(self->flush_timeout, g_main_context_get_thread_default());
    check_finished(self);
    return G_SOURCE_REMOVE;
}

static guint
peer_handshakes(const char *peer)
{
    return handshakes_by_peer != NULL
               ? GPOINTER_TO_UINT(g_hash_table_lookup(handshakes_by_peer, peer))
               : 0;
}

static void
count_peer(const char *peer, gint delta)
{
    guint now = peer_handshakes(peer) + delta;

    if (handshakes_by_peer == NULL)
        handshakes_by_peer = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (now == 0)
        g_hash_table_remove(handshakes_by_peer, peer);
    else
        g_hash_table_insert(handshakes_by_peer, g_strdup(peer), GUINT_TO_POINTER(now));
}

static void on_handshake(GObject *source, GAsyncResult *result, gpointer user_data);

static gboolean
on_handshake_timeout(gpointer user_data)
{
    EinsoraTlsFront *self = user_data;

    release_source(&self->handshake_timeout);
    g_debug("TLS connection: no handshake within %d ms", HANDSHAKE_TIMEOUT_MS);
    finish(self);
    return G_SOURCE_REMOVE;
}

/* Whatever the client sent goes through the handshake: the handler
 * that needs a good one refuses with a reason instead of a TLS alert. */
static gboolean
accept_any_certificate(GTlsConnection *connection, GTlsCertificate *certificate,
                       GTlsCertificateFlags errors, gpointer user_data)
{
    return TRUE;
}

static void
tell_peer(EinsoraTlsFront *self)
{
    GTlsCertificate *certificate;
    g_autofree gchar *fingerprint = NULL;
    GTlsCertificateFlags errors = 0;

    if (self->peer_known == NULL)
        return;
    certificate = g_tls_connection_get_peer_certificate(G_TLS_CONNECTION(self->tls));
    if (certificate != NULL) {
        fingerprint = einsora_tls_certificate_fingerprint(certificate);
        errors = g_tls_connection_get_peer_certificate_errors(G_TLS_CONNECTION(self->tls));
    }
    self->peer_known(fingerprint, errors, self->peer_data);
    self->peer_known = NULL;
    if (self->peer_destroy != NULL)
        self->peer_destroy(self->peer_data);
    self->peer_destroy = NULL;
    self->peer_data = NULL;
}

static void
start_handshake(EinsoraTlsFront *self)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocketConnection) base = g_socket_connection_factory_create_connection(self->tcp);

    self->tls = g_tls_server_connection_new(G_IO_STREAM(base), self->certificate, &error);
    if (self->tls == NULL) {
        fail(self, "starting", error);
        return;
    }
    if (self->authority != NULL) {
        /* Checked against the authority in the handshake's thread; any
         * result lets it through, and the peer callback says which. */
        g_tls_connection_set_database(G_TLS_CONNECTION(self->tls), self->authority);
        g_object_set(self->tls, "authentication-mode", G_TLS_AUTHENTICATION_REQUESTED, NULL);
        g_signal_connect(self->tls, "accept-certificate", G_CALLBACK(accept_any_certificate), NULL);
    }
    self->tls_in = G_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(self->tls));
    self->tls_out = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(self->tls));
    self->handshaking = TRUE;
    running_handshakes++;
    count_peer(self->peer, 1);
    self->handshake_timeout = g_timeout_source_new(HANDSHAKE_TIMEOUT_MS);
    g_source_set_callback(self->handshake_timeout, on_handshake_timeout, self, NULL);
    g_source_attach(self->handshake_timeout, g_main_context_get_thread_default());
    g_tls_connection_handshake_async(G_TLS_CONNECTION(self->tls), G_PRIORITY_DEFAULT,
                                     self->cancellable, on_handshake, front_ref(self));
}

static gboolean
may_start_handshake(const EinsoraTlsFront *self)
{
    return running_handshakes < MAX_HANDSHAKES &&
           peer_handshakes(self->peer) < MAX_HANDSHAKES_PER_PEER;
}

/* A thread came free: the oldest waiters whose address has room. */
static void
start_waiting_handshakes(void)
{
    GList *link = waiting_handshakes.head;

    while (link != NULL && running_handshakes < MAX_HANDSHAKES) {
        GList *next = link->next;
        EinsoraTlsFront *front = link->data;

        if (may_start_handshake(front)) {
            g_queue_unlink(&waiting_handshakes, link);
            front->queued = FALSE;
            start_handshake(front);
            /* The queue's reference passes to nobody: the job has its own. */
            front_unref(front);
        }
        link = next;
    }
}

static void
on_handshake(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;
    g_autoptr(GError) error = NULL;

    self->handshaking = FALSE;
    running_handshakes--;
    count_peer(self->peer, -1);
    clear_source(&self->handshake_timeout);
    start_waiting_handshakes();
    if (!g_tls_connection_handshake_finish(G_TLS_CONNECTION(source), result, &error))
        fail(self, "handshake", error);
    else if (!self->finished) {
        tell_peer(self);
        self->relaying = TRUE;
        pump_up(self);
        pump_down(self);
    }
    front_unref(self);
}

EinsoraTlsFront *
einsora_tls_front_new(GSocket *tcp, GTlsCertificate *certificate, GSocket **inner, GError **error)
{
    g_autoptr(GSocket) outer = NULL;
    EinsoraTlsFront *self;
    GSocket *other;
    int pair[2];

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "socketpair: %s",
                    g_strerror(saved));
        return NULL;
    }
    outer = g_socket_new_from_fd(pair[0], error);
    if (outer == NULL) {
        close(pair[0]);
        close(pair[1]);
        return NULL;
    }
    other = g_socket_new_from_fd(pair[1], error);
    if (other == NULL) {
        close(pair[1]);
        return NULL;
    }
    self = g_new0(EinsoraTlsFront, 1);
    g_ref_count_init(&self->ref);
    self->certificate = g_object_ref(certificate);
    self->tcp = g_object_ref(tcp);
    {
        g_autoptr(GSocketAddress) remote = g_socket_get_remote_address(tcp, NULL);
        self->peer = remote != NULL && G_IS_INET_SOCKET_ADDRESS(remote)
                         ? g_inet_address_to_string(
                               g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(remote)))
                         : g_strdup("");
    }
    self->outer = g_steal_pointer(&outer);
    self->cancellable = g_cancellable_new();
    g_socket_set_blocking(self->tcp, FALSE);
    g_socket_set_blocking(self->outer, FALSE);
    *inner = other;
    return self;
}

/* TLS, or a plain HTTP request (anything else): answered in plain text
 * and closed, never given to the connection. */
static gboolean
on_first_byte(GSocket *socket, GIOCondition condition, gpointer user_data)
{
    EinsoraTlsFront *self = user_data;
    g_autoptr(GError) error = NULL;
    gchar first = 0;
    GInputVector vector = {&first, 1};
    gint flags = MSG_PEEK;
    gssize got;

    release_source(&self->first_byte);
    got = g_socket_receive_message(self->tcp, NULL, &vector, 1, NULL, NULL, &flags, NULL, &error);
    if (got < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
        watch(&self->first_byte, g_socket_create_source(self->tcp, G_IO_IN, NULL),
              G_SOURCE_FUNC(on_first_byte), self);
        return G_SOURCE_REMOVE;
    }
    if (got <= 0) {
        finish(self);
        return G_SOURCE_REMOVE;
    }
    if ((guint8)first != TLS_HANDSHAKE_RECORD) {
        gchar drop[4096];
        gsize dropped = 0;

        /* Small enough for any socket's buffer; a peer that reads nothing
         * loses nothing it needs. What it sent is read first: closing on
         * unread bytes would reset the refusal away. */
        g_socket_send(self->tcp, PLAIN_REFUSAL, strlen(PLAIN_REFUSAL), NULL, NULL);
        g_socket_shutdown(self->tcp, FALSE, TRUE, NULL);
        while (dropped < REFUSAL_DRAIN_BYTES) {
            gssize count = g_socket_receive(self->tcp, drop, sizeof drop, NULL, NULL);
            if (count <= 0)
                break;
            dropped += (gsize)count;
        }
        finish(self);
        return G_SOURCE_REMOVE;
    }
    if (may_start_handshake(self)) {
        start_handshake(self);
    } else {
        self->queued = TRUE;
        self->queue_link.data = front_ref(self);
        g_queue_push_tail_link(&waiting_handshakes, &self->queue_link);
    }
    return G_SOURCE_REMOVE;
}

void
einsora_tls_front_request_client_certificate(EinsoraTlsFront *self, GTlsDatabase *authority,
                                             void (*peer)(const char *fingerprint,
                                                          GTlsCertificateFlags errors,
                                                          gpointer user_data),
                                             gpointer user_data, GDestroyNotify destroy)
{
    g_return_if_fail(self->authority == NULL && self->done == NULL);

    self->authority = g_object_ref(authority);
    self->peer_known = peer;
    self->peer_data = user_data;
    self->peer_destroy = destroy;
}

void
einsora_tls_front_start(EinsoraTlsFront *self,
                        void (*done)(EinsoraTlsFront *front, gpointer user_data),
                        gpointer user_data)
{
    self->done = done;
    self->user_data = user_data;
    watch(&self->hangup, g_socket_create_source(self->outer, G_IO_HUP | G_IO_ERR, NULL),
          G_SOURCE_FUNC(on_hangup), self);
    watch(&self->first_byte, g_socket_create_source(self->tcp, G_IO_IN, NULL),
          G_SOURCE_FUNC(on_first_byte), self);
}

void
einsora_tls_front_close(EinsoraTlsFront *self)
{
    self->done = NULL;
    self->finished = TRUE;
    shut_down(self);
    front_unref(self);
}
