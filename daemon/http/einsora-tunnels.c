#define G_LOG_DOMAIN "einsora-http"

#include "einsora-tunnels.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct _Machine Machine;

/* A stream the agent made, waiting for a request. */
typedef struct {
    Machine *machine;
    GIOStream *stream;
    GSource *watch; /* the agent speaking or hanging up while idle */
} Idle;

/* A request waiting for a stream: the proxy wrote (or writes) it into
 * the other end of @pair. */
typedef struct {
    Machine *machine;
    gchar *workload_id;
    gint64 attempt;
    const char *scheme; /* static */
    GIOStream *pair;
    guint timeout_id;
} Waiter;

/* A stream given its request: the pair and the stream spliced. */
typedef struct {
    EinsoraTunnels *tunnels; /* owned: splices may outlast a machine's end */
    Machine *machine;
    GIOStream *pair;
    GIOStream *stream;
    GCancellable *cancellable;
} Carrying;

struct _Machine {
    EinsoraTunnels *tunnels;
    gchar *id;
    GQueue idle;     /* Idle, newest first */
    GQueue waiting;  /* Waiter, oldest first */
    GQueue carrying; /* Carrying */
};

struct _EinsoraTunnels {
    GObject parent_instance;
    GHashTable *machines; /* ID -> Machine */
    EinsoraTunnelsWant want;
    gpointer want_data;
    guint64 opened;
};

G_DEFINE_FINAL_TYPE(EinsoraTunnels, einsora_tunnels, G_TYPE_OBJECT)

static void
close_stream(GIOStream *stream)
{
    if (stream == NULL)
        return;
    g_io_stream_close(stream, NULL, NULL);
    g_object_unref(stream);
}

static void
idle_free(Idle *idle)
{
    if (idle->watch != NULL) {
        g_source_destroy(idle->watch);
        g_source_unref(idle->watch);
    }
    close_stream(idle->stream);
    g_free(idle);
}

static void
waiter_free(Waiter *waiter)
{
    g_clear_handle_id(&waiter->timeout_id, g_source_remove);
    close_stream(waiter->pair);
    g_free(waiter->workload_id);
    g_free(waiter);
}

static void
machine_free(Machine *machine)
{
    /* Carrying streams hold the registry: none is left when it ends. */
    g_queue_clear_full(&machine->idle, (GDestroyNotify)idle_free);
    g_queue_clear_full(&machine->waiting, (GDestroyNotify)waiter_free);
    g_free(machine->id);
    g_free(machine);
}

static void
einsora_tunnels_finalize(GObject *object)
{
    EinsoraTunnels *self = EINSORA_TUNNELS(object);

    g_hash_table_unref(self->machines);
    G_OBJECT_CLASS(einsora_tunnels_parent_class)->finalize(object);
}

static void
einsora_tunnels_class_init(EinsoraTunnelsClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_tunnels_finalize;
}

static void
einsora_tunnels_init(EinsoraTunnels *self)
{
    self->machines =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)machine_free);
}

EinsoraTunnels *
einsora_tunnels_new(void)
{
    return g_object_new(EINSORA_TYPE_TUNNELS, NULL);
}

static Machine *
machine_for(EinsoraTunnels *self, const char *machine_id)
{
    Machine *machine = g_hash_table_lookup(self->machines, machine_id);

    if (machine == NULL) {
        machine = g_new0(Machine, 1);
        machine->tunnels = self;
        machine->id = g_strdup(machine_id);
        g_hash_table_insert(self->machines, machine->id, machine);
    }
    return machine;
}

static void
on_spliced(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Carrying *carrying = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_io_stream_splice_finish(result, &error) &&
        !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_debug("a tunnel of machine %s ended: %s", carrying->machine->id, error->message);
    g_queue_remove(&carrying->machine->carrying, carrying);
    close_stream(carrying->pair);
    close_stream(carrying->stream);
    g_object_unref(carrying->cancellable);
    g_object_unref(carrying->tunnels);
    g_free(carrying);
}

/* Tells @idle's agent which workload, and joins it to @waiter's pair.
 * FALSE when the stream can't take the line: it is closed. */
static gboolean
start(Machine *machine, Idle *idle, Waiter *waiter)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *line = g_strdup_printf(
        "{\"workload_id\":\"%s\",\"attempt\":%" G_GINT64_FORMAT ",\"scheme\":\"%s\",\"more\":%u}\n",
        waiter->workload_id, waiter->attempt, waiter->scheme, machine->waiting.length);
    GOutputStream *out = g_io_stream_get_output_stream(idle->stream);
    gsize length = strlen(line);
    gssize written = -1;
    Carrying *carrying;

    /* An idle stream has sent and been sent nothing: its socket takes a
     * line at once, or it is of no use. */
    if (G_IS_POLLABLE_OUTPUT_STREAM(out))
        written = g_pollable_output_stream_write_nonblocking(G_POLLABLE_OUTPUT_STREAM(out), line,
                                                             length, NULL, &error);
    if (written != (gssize)length) {
        g_debug("an idle tunnel of machine %s didn't take its request: %s", machine->id,
                error != NULL ? error->message : "a short write");
        return FALSE;
    }
    carrying = g_new0(Carrying, 1);
    carrying->tunnels = g_object_ref(machine->tunnels);
    carrying->machine = machine;
    carrying->pair = g_steal_pointer(&waiter->pair);
    carrying->stream = g_steal_pointer(&idle->stream);
    carrying->cancellable = g_cancellable_new();
    g_queue_push_tail(&machine->carrying, carrying);
    machine->tunnels->opened++;
    g_io_stream_splice_async(carrying->pair, carrying->stream, G_IO_STREAM_SPLICE_NONE,
                             G_PRIORITY_DEFAULT, carrying->cancellable, on_spliced, carrying);
    return TRUE;
}

/* Gives waiting requests the newest idle streams. */
static void
assign(Machine *machine)
{
    while (machine->waiting.length > 0 && machine->idle.length > 0) {
        Idle *idle = g_queue_pop_head(&machine->idle);
        Waiter *waiter = g_queue_pop_head(&machine->waiting);

        if (idle->watch != NULL) {
            g_source_destroy(idle->watch);
            g_clear_pointer(&idle->watch, g_source_unref);
        }
        if (start(machine, idle, waiter))
            waiter_free(waiter);
        else
            g_queue_push_head(&machine->waiting, waiter);
        idle_free(idle);
    }
}

static gboolean
on_idle_stirred(GObject *stream, gpointer user_data)
{
    Idle *idle = user_data;

    g_debug("an idle tunnel of machine %s closed", idle->machine->id);
    g_queue_remove(&idle->machine->idle, idle);
    g_clear_pointer(&idle->watch, g_source_unref);
    idle_free(idle);
    return G_SOURCE_REMOVE;
}

void
einsora_tunnels_add(EinsoraTunnels *self, const char *machine_id, GIOStream *stream)
{
    Machine *machine;
    GInputStream *in;
    Idle *idle;
    guint8 byte;
    gssize got;
    g_autoptr(GError) error = NULL;

    g_return_if_fail(EINSORA_IS_TUNNELS(self));
    g_return_if_fail(G_IS_IO_STREAM(stream));
    in = g_io_stream_get_input_stream(stream);
    if (!G_IS_POLLABLE_INPUT_STREAM(in)) {
        close_stream(g_object_ref(stream));
        return;
    }
    /* Anything the agent sent past its request, or a hang-up, already:
     * not a stream to give a request to. */
    got = g_pollable_input_stream_read_nonblocking(G_POLLABLE_INPUT_STREAM(in), &byte, 1, NULL,
                                                   &error);
    if (got >= 0 || !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
        g_message("machine %s's tunnel %s before its first request: closed", machine_id,
                  got > 0 ? "spoke" : "ended");
        close_stream(g_object_ref(stream));
        return;
    }
    machine = machine_for(self, machine_id);
    idle = g_new0(Idle, 1);
    idle->machine = machine;
    idle->stream = g_object_ref(stream);
    idle->watch = g_pollable_input_stream_create_source(G_POLLABLE_INPUT_STREAM(in), NULL);
    g_source_set_callback(idle->watch, G_SOURCE_FUNC(on_idle_stirred), idle, NULL);
    g_source_set_static_name(idle->watch, "einsora-tunnel-idle");
    g_source_attach(idle->watch, g_main_context_get_thread_default());
    g_queue_push_head(&machine->idle, idle);
    while (machine->idle.length > EINSORA_TUNNELS_IDLE_MAX)
        idle_free(g_queue_pop_tail(&machine->idle));
    assign(machine);
}

static gboolean
on_wait_over(gpointer user_data)
{
    Waiter *waiter = user_data;

    waiter->timeout_id = 0;
    g_message("no tunnel from machine %s for workload %s in %d s: its agent may be offline or "
              "too old for tunnels",
              waiter->machine->id, waiter->workload_id, EINSORA_TUNNELS_WAIT_MS / 1000);
    g_queue_remove(&waiter->machine->waiting, waiter);
    waiter_free(waiter);
    return G_SOURCE_REMOVE;
}

/* IDs go into the line as they are: only what a UUID is made of. */
static gboolean
plain_id(const char *id)
{
    return id != NULL && *id != '\0' && strlen(id) <= 64 &&
           strspn(id, "0123456789abcdefABCDEF-") == strlen(id);
}

int
einsora_tunnels_open(EinsoraTunnels *self, const char *machine_id, const char *workload_id,
                     gint64 attempt, const char *scheme, GError **error)
{
    Machine *machine;
    Waiter *waiter;
    g_autoptr(GSocket) ours = NULL;
    gboolean none_free;
    int fds[2];

    g_return_val_if_fail(EINSORA_IS_TUNNELS(self), -1);
    g_return_val_if_fail(machine_id != NULL, -1);
    if (!plain_id(workload_id) ||
        (g_strcmp0(scheme, "token") != 0 && g_strcmp0(scheme, "Bearer") != 0)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "not a workload a tunnel can name");
        return -1;
    }
    machine = machine_for(self, machine_id);
    if (machine->waiting.length + machine->carrying.length >= EINSORA_TUNNELS_ACTIVE_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY,
                    "machine %s has %d tunnelled requests open already", machine_id,
                    EINSORA_TUNNELS_ACTIVE_MAX);
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "no socket pair: %s",
                    g_strerror(saved));
        return -1;
    }
    ours = g_socket_new_from_fd(fds[1], error);
    if (ours == NULL) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    waiter = g_new0(Waiter, 1);
    waiter->machine = machine;
    waiter->workload_id = g_strdup(workload_id);
    waiter->attempt = attempt;
    waiter->scheme = g_str_equal(scheme, "token") ? "token" : "Bearer";
    waiter->pair = G_IO_STREAM(g_socket_connection_factory_create_connection(ours));
    waiter->timeout_id = g_timeout_add(EINSORA_TUNNELS_WAIT_MS, on_wait_over, waiter);
    none_free = machine->idle.length == 0;
    g_queue_push_tail(&machine->waiting, waiter);
    assign(machine);
    /* None was free: the agent opens one more for each request left. */
    if (none_free && self->want != NULL)
        self->want(machine_id, 1, self->want_data);
    return fds[0];
}

void
einsora_tunnels_set_want(EinsoraTunnels *self, EinsoraTunnelsWant want, gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_TUNNELS(self));
    self->want = want;
    self->want_data = user_data;
}

void
einsora_tunnels_close_machine(EinsoraTunnels *self, const char *machine_id)
{
    Machine *machine;

    g_return_if_fail(EINSORA_IS_TUNNELS(self));
    machine = g_hash_table_lookup(self->machines, machine_id);
    if (machine == NULL)
        return;
    g_queue_clear_full(&machine->idle, (GDestroyNotify)idle_free);
    g_queue_clear_full(&machine->waiting, (GDestroyNotify)waiter_free);
    for (GList *link = machine->carrying.head; link != NULL; link = link->next)
        g_cancellable_cancel(((Carrying *)link->data)->cancellable);
}

guint
einsora_tunnels_count_idle(EinsoraTunnels *self, const char *machine_id)
{
    Machine *machine = g_hash_table_lookup(self->machines, machine_id);

    return machine != NULL ? machine->idle.length : 0;
}

guint
einsora_tunnels_count_active(EinsoraTunnels *self, const char *machine_id)
{
    Machine *machine = g_hash_table_lookup(self->machines, machine_id);

    return machine != NULL ? machine->waiting.length + machine->carrying.length : 0;
}

guint64
einsora_tunnels_count_opened(EinsoraTunnels *self)
{
    return self->opened;
}
