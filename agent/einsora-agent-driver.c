#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-agent-driver.h"

G_DEFINE_INTERFACE(EinsoraAgentDriver, einsora_agent_driver, G_TYPE_OBJECT)

static void
einsora_agent_driver_default_init(EinsoraAgentDriverInterface *iface)
{
    /* A workload's status changed by itself (ready, ended, failed), not
     * as the end of a call: the agent reports it at once rather than at
     * its next check. Drivers that never emit it are checked anyway. */
    g_signal_new("status-changed", G_TYPE_FROM_INTERFACE(iface), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                 NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

/* The driver's name in the driver table (einsora_driver_lookup()). */
const char *
einsora_agent_driver_get_name(EinsoraAgentDriver *self)
{
    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), NULL);
    return EINSORA_AGENT_DRIVER_GET_IFACE(self)->get_name(self);
}

/* Starts @workload's attempt. A driver starts an attempt at most once: a
 * second call for the attempt it is already running succeeds without
 * starting anything; another attempt must be stopped first. Success means
 * started (or launched and reported as starting); a failure leaves its
 * code in get_status(). */
void
einsora_agent_driver_start_async(EinsoraAgentDriver *self, const EinsoraDesiredWorkload *workload,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_AGENT_DRIVER(self));
    g_return_if_fail(workload != NULL && workload->workload_id != NULL);
    g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));
    EINSORA_AGENT_DRIVER_GET_IFACE(self)->start_async(self, workload, cancellable, callback,
                                                      user_data);
}

gboolean
einsora_agent_driver_start_finish(EinsoraAgentDriver *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), FALSE);
    g_return_val_if_fail(G_IS_ASYNC_RESULT(result), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_AGENT_DRIVER_GET_IFACE(self)->start_finish(self, result, error);
}

/* Parks a workload: stops whatever runs and keeps its data. */
void
einsora_agent_driver_stop_async(EinsoraAgentDriver *self, const char *workload_id,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_AGENT_DRIVER(self));
    g_return_if_fail(workload_id != NULL);
    g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));
    EINSORA_AGENT_DRIVER_GET_IFACE(self)->stop_async(self, workload_id, cancellable, callback,
                                                     user_data);
}

gboolean
einsora_agent_driver_stop_finish(EinsoraAgentDriver *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), FALSE);
    g_return_val_if_fail(G_IS_ASYNC_RESULT(result), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_AGENT_DRIVER_GET_IFACE(self)->stop_finish(self, result, error);
}

/* Stops a workload and deletes everything it stored. The agent calls it
 * only for a workload its desired state lists for removal. */
void
einsora_agent_driver_remove_async(EinsoraAgentDriver *self, const char *workload_id,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_AGENT_DRIVER(self));
    g_return_if_fail(workload_id != NULL);
    g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));
    EINSORA_AGENT_DRIVER_GET_IFACE(self)->remove_async(self, workload_id, cancellable, callback,
                                                       user_data);
}

gboolean
einsora_agent_driver_remove_finish(EinsoraAgentDriver *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), FALSE);
    g_return_val_if_fail(G_IS_ASYNC_RESULT(result), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_AGENT_DRIVER_GET_IFACE(self)->remove_finish(self, result, error);
}

/* What the driver sees now, for the attempt it last started (*attempt).
 * Stopped: nothing runs, its data is kept; removed: its data is gone;
 * unknown with EINSORA_AGENT_DRIVER_NO_ATTEMPT: the driver has nothing
 * for it and never had. Cheap and synchronous: drivers answer from what
 * they already know. */
EinsoraStatusCode
einsora_agent_driver_get_status(EinsoraAgentDriver *self, const char *workload_id, gint64 *attempt)
{
    gint64 ignored;

    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), EINSORA_STATUS_CODE_UNKNOWN);
    g_return_val_if_fail(workload_id != NULL, EINSORA_STATUS_CODE_UNKNOWN);
    return EINSORA_AGENT_DRIVER_GET_IFACE(self)->get_status(self, workload_id,
                                                            attempt != NULL ? attempt : &ignored);
}

/* The IDs of every workload the driver holds something for (running or
 * data kept), sorted; never NULL. The agent stops and keeps any that its
 * desired state doesn't list. */
gchar **
einsora_agent_driver_list_workloads(EinsoraAgentDriver *self)
{
    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), NULL);
    return EINSORA_AGENT_DRIVER_GET_IFACE(self)->list_workloads(self);
}

/* The way into a ready workload: the Unix socket it serves on and its own
 * token, for the access proxy in this process only (never sent, stored
 * or logged). FALSE when it isn't ready, or the driver serves nothing. */
gboolean
einsora_agent_driver_get_access(EinsoraAgentDriver *self, const char *workload_id, gint64 *attempt,
                                gchar **socket_path, gchar **token)
{
    EinsoraAgentDriverInterface *iface;

    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), FALSE);
    g_return_val_if_fail(workload_id != NULL && socket_path != NULL && token != NULL, FALSE);
    iface = EINSORA_AGENT_DRIVER_GET_IFACE(self);
    *socket_path = NULL;
    *token = NULL;
    if (iface->get_access == NULL)
        return FALSE;
    return iface->get_access(self, workload_id, attempt, socket_path, token);
}

gboolean
einsora_agent_driver_get_pull_progress(EinsoraAgentDriver *self, const char *workload_id,
                                       EinsoraPullProgress *progress)
{
    EinsoraAgentDriverInterface *iface;

    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), FALSE);
    g_return_val_if_fail(workload_id != NULL && progress != NULL, FALSE);
    iface = EINSORA_AGENT_DRIVER_GET_IFACE(self);
    *progress = (EinsoraPullProgress){0};
    if (iface->get_pull_progress == NULL)
        return FALSE;
    return iface->get_pull_progress(self, workload_id, progress);
}

gchar *
einsora_agent_driver_find_log(EinsoraAgentDriver *self, const char *workload_id, gint64 attempt,
                              gint64 *found_attempt, GError **error)
{
    EinsoraAgentDriverInterface *iface;

    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), NULL);
    g_return_val_if_fail(workload_id != NULL && found_attempt != NULL, NULL);
    iface = EINSORA_AGENT_DRIVER_GET_IFACE(self);
    *found_attempt = 0;
    if (iface->find_log == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "the %s driver keeps no output",
                    einsora_agent_driver_get_name(self));
        return NULL;
    }
    return iface->find_log(self, workload_id, attempt, found_attempt, error);
}

gboolean
einsora_agent_driver_get_activity(EinsoraAgentDriver *self, const char *workload_id,
                                  EinsoraWorkloadActivity *activity)
{
    EinsoraAgentDriverInterface *iface;

    g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(self), FALSE);
    g_return_val_if_fail(workload_id != NULL && activity != NULL, FALSE);
    iface = EINSORA_AGENT_DRIVER_GET_IFACE(self);
    *activity = (EinsoraWorkloadActivity){0};
    if (iface->get_activity == NULL)
        return FALSE;
    return iface->get_activity(self, workload_id, activity);
}
