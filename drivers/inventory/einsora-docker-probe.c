#define G_LOG_DOMAIN "einsora-inventory"

#include "einsora-docker-probe.h"

#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>

typedef struct {
    gchar *socket_path;
    guint timeout_ms;
    SoupSession *session;
    SoupMessage *message;
    /* Ours, cancelled by the caller's or by the time limit, so that a
     * timeout can be told from a caller's cancel. */
    GCancellable *cancellable;
    GCancellable *caller_cancellable;
    gulong caller_handler;
    GSource *timeout;
    gboolean timed_out;
} Probe;

static void
probe_stop_timer(Probe *probe)
{
    if (probe->timeout == NULL)
        return;
    g_source_destroy(probe->timeout);
    g_clear_pointer(&probe->timeout, g_source_unref);
}

static void
probe_free(Probe *probe)
{
    probe_stop_timer(probe);
    if (probe->caller_handler != 0)
        g_cancellable_disconnect(probe->caller_cancellable, probe->caller_handler);
    g_clear_object(&probe->caller_cancellable);
    g_clear_object(&probe->cancellable);
    g_clear_object(&probe->message);
    g_clear_object(&probe->session);
    g_free(probe->socket_path);
    g_free(probe);
}

static void
on_caller_cancelled(GCancellable *caller, gpointer user_data)
{
    g_cancellable_cancel(G_CANCELLABLE(user_data));
}

static gboolean
on_timeout(gpointer user_data)
{
    Probe *probe = g_task_get_task_data(G_TASK(user_data));

    probe->timed_out = TRUE;
    g_cancellable_cancel(probe->cancellable);
    g_clear_pointer(&probe->timeout, g_source_unref);
    return G_SOURCE_REMOVE;
}

static void
on_ping_answered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = G_TASK(user_data);
    Probe *probe = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) body =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &error);
    guint status;
    gsize size = 0;
    const char *data;

    probe_stop_timer(probe);
    if (body == NULL) {
        /* Our own cancel, when the time limit fired; the caller's cancel
         * is the caller's to see. */
        if (probe->timed_out && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) &&
            !g_cancellable_is_cancelled(probe->caller_cancellable)) {
            g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                    "Docker didn't answer on %s within %u ms", probe->socket_path,
                                    probe->timeout_ms);
            return;
        }
        g_prefix_error(&error, "Docker doesn't answer on %s: ", probe->socket_path);
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    status = soup_message_get_status(probe->message);
    if (status != SOUP_STATUS_OK) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED,
                                "Docker on %s answered %u %s to /_ping", probe->socket_path, status,
                                soup_message_get_reason_phrase(probe->message));
        return;
    }
    data = g_bytes_get_data(body, &size);
    if (size != 2 || memcmp(data, "OK", 2) != 0) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                "what answers on %s isn't Docker: /_ping didn't say OK",
                                probe->socket_path);
        return;
    }
    g_task_return_boolean(task, TRUE);
}

void
einsora_docker_probe_async(const char *socket_path, guint timeout_ms, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);
    g_autoptr(GSocketAddress) address = NULL;
    Probe *probe = g_new0(Probe, 1);

    g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));

    g_task_set_source_tag(task, einsora_docker_probe_async);
    g_task_set_task_data(task, probe, (GDestroyNotify)probe_free);
    probe->socket_path = g_strdup(socket_path != NULL ? socket_path : EINSORA_DOCKER_SOCKET);
    probe->timeout_ms = timeout_ms;
    probe->cancellable = g_cancellable_new();
    if (cancellable != NULL) {
        probe->caller_cancellable = g_object_ref(cancellable);
        probe->caller_handler =
            g_cancellable_connect(cancellable, G_CALLBACK(on_caller_cancelled),
                                  g_object_ref(probe->cancellable), g_object_unref);
    }

    /* Every connection goes to the socket, whatever the URL's host; and
     * never through a proxy from the environment. */
    address = g_unix_socket_address_new(probe->socket_path);
    probe->session =
        soup_session_new_with_options("remote-connectable", address, "proxy-resolver", NULL, NULL);
    probe->message = soup_message_new(SOUP_METHOD_GET, "http://localhost/_ping");

    probe->timeout = g_timeout_source_new(timeout_ms);
    g_task_attach_source(task, probe->timeout, on_timeout);
    soup_session_send_and_read_async(probe->session, probe->message, G_PRIORITY_DEFAULT,
                                     probe->cancellable, on_ping_answered, g_object_ref(task));
}

gboolean
einsora_docker_probe_finish(GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, NULL), FALSE);
    g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == einsora_docker_probe_async,
                         FALSE);

    return g_task_propagate_boolean(G_TASK(result), error);
}
