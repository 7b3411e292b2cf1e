#define G_LOG_DOMAIN "einsora-access"

#include "einsora-body-pipe.h"

#include <string.h>

struct _EinsoraBodyPipe {
    GInputStream parent_instance;

    GMutex lock;
    GCond changed;
    GQueue chunks; /* GBytes, oldest first */
    gsize offset;  /* into the oldest chunk */
    gsize queued;  /* bytes waiting */
    gboolean finished;
    gboolean aborted;
    gboolean writer_paused;

    GMainContext *context;
    EinsoraBodyPipeFlow flow;
    gpointer flow_data;
};

G_DEFINE_FINAL_TYPE(EinsoraBodyPipe, einsora_body_pipe, G_TYPE_INPUT_STREAM)

typedef struct {
    EinsoraBodyPipe *pipe; /* owned */
} Resume;

/* Back on the main loop: tell the writer it may go on, unless it is gone. */
static gboolean
resume_writer(gpointer user_data)
{
    Resume *resume = user_data;
    EinsoraBodyPipe *self = resume->pipe;
    EinsoraBodyPipeFlow flow = NULL;
    gpointer flow_data = NULL;

    g_mutex_lock(&self->lock);
    if (!self->aborted && self->writer_paused) {
        self->writer_paused = FALSE;
        flow = self->flow;
        flow_data = self->flow_data;
    }
    g_mutex_unlock(&self->lock);
    if (flow != NULL)
        flow(FALSE, flow_data);
    g_object_unref(resume->pipe);
    g_free(resume);
    return G_SOURCE_REMOVE;
}

static void
on_cancelled(GCancellable *cancellable, gpointer user_data)
{
    EinsoraBodyPipe *self = user_data;

    g_mutex_lock(&self->lock);
    g_cond_broadcast(&self->changed);
    g_mutex_unlock(&self->lock);
}

/* In a worker thread: waits for data, the end, or cancellation. */
static gssize
pipe_read(GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
          GError **error)
{
    EinsoraBodyPipe *self = EINSORA_BODY_PIPE(stream);
    gulong handler = 0;
    gsize copied = 0;
    gboolean resume = FALSE;

    if (cancellable != NULL)
        handler = g_cancellable_connect(cancellable, G_CALLBACK(on_cancelled), self, NULL);
    g_mutex_lock(&self->lock);
    while (self->queued == 0 && !self->finished && !self->aborted &&
           !g_cancellable_is_cancelled(cancellable))
        g_cond_wait(&self->changed, &self->lock);
    if (self->queued == 0 && (self->aborted || g_cancellable_is_cancelled(cancellable))) {
        g_mutex_unlock(&self->lock);
        if (handler != 0)
            g_cancellable_disconnect(cancellable, handler);
        if (!g_cancellable_set_error_if_cancelled(cancellable, error))
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE,
                                "the browser stopped sending the request");
        return -1;
    }
    while (copied < count && self->queued > 0) {
        GBytes *chunk = g_queue_peek_head(&self->chunks);
        gsize size = 0;
        const guint8 *data = g_bytes_get_data(chunk, &size);
        gsize take = MIN(count - copied, size - self->offset);

        memcpy((guint8 *)buffer + copied, data + self->offset, take);
        copied += take;
        self->offset += take;
        self->queued -= take;
        if (self->offset == size) {
            g_bytes_unref(g_queue_pop_head(&self->chunks));
            self->offset = 0;
        }
    }
    resume = self->writer_paused && self->queued <= EINSORA_BODY_PIPE_LOW_MARK;
    g_mutex_unlock(&self->lock);
    if (handler != 0)
        g_cancellable_disconnect(cancellable, handler);
    if (resume) {
        Resume *data = g_new0(Resume, 1);
        data->pipe = g_object_ref(self);
        g_main_context_invoke(self->context, resume_writer, data);
    }
    return (gssize)copied;
}

static gboolean
pipe_close(GInputStream *stream, GCancellable *cancellable, GError **error)
{
    return TRUE;
}

static void
einsora_body_pipe_finalize(GObject *object)
{
    EinsoraBodyPipe *self = EINSORA_BODY_PIPE(object);

    g_queue_clear_full(&self->chunks, (GDestroyNotify)g_bytes_unref);
    g_mutex_clear(&self->lock);
    g_cond_clear(&self->changed);
    g_main_context_unref(self->context);
    G_OBJECT_CLASS(einsora_body_pipe_parent_class)->finalize(object);
}

static void
einsora_body_pipe_class_init(EinsoraBodyPipeClass *klass)
{
    GInputStreamClass *stream_class = G_INPUT_STREAM_CLASS(klass);

    G_OBJECT_CLASS(klass)->finalize = einsora_body_pipe_finalize;
    stream_class->read_fn = pipe_read;
    stream_class->close_fn = pipe_close;
}

static void
einsora_body_pipe_init(EinsoraBodyPipe *self)
{
    g_mutex_init(&self->lock);
    g_cond_init(&self->changed);
    g_queue_init(&self->chunks);
    self->context = g_main_context_ref_thread_default();
}

EinsoraBodyPipe *
einsora_body_pipe_new(EinsoraBodyPipeFlow flow, gpointer user_data)
{
    EinsoraBodyPipe *self = g_object_new(EINSORA_TYPE_BODY_PIPE, NULL);

    self->flow = flow;
    self->flow_data = user_data;
    return self;
}

gboolean
einsora_body_pipe_push(EinsoraBodyPipe *self, const guint8 *data, gsize size)
{
    gboolean pause;

    g_return_val_if_fail(EINSORA_IS_BODY_PIPE(self), FALSE);
    g_mutex_lock(&self->lock);
    if (size > 0 && !self->aborted) {
        g_queue_push_tail(&self->chunks, g_bytes_new(data, size));
        self->queued += size;
    }
    pause = !self->writer_paused && self->queued > EINSORA_BODY_PIPE_HIGH_MARK;
    if (pause)
        self->writer_paused = TRUE;
    g_cond_broadcast(&self->changed);
    g_mutex_unlock(&self->lock);
    return pause;
}

void
einsora_body_pipe_finish(EinsoraBodyPipe *self)
{
    g_return_if_fail(EINSORA_IS_BODY_PIPE(self));
    g_mutex_lock(&self->lock);
    self->finished = TRUE;
    g_cond_broadcast(&self->changed);
    g_mutex_unlock(&self->lock);
}

void
einsora_body_pipe_abort(EinsoraBodyPipe *self)
{
    g_return_if_fail(EINSORA_IS_BODY_PIPE(self));
    g_mutex_lock(&self->lock);
    self->aborted = TRUE;
    self->flow = NULL;
    g_cond_broadcast(&self->changed);
    g_mutex_unlock(&self->lock);
}
