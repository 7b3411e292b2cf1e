/* Where a tenant's workload's output is: the tenant's own workloads
 * only, through the backend that runs them (docs/adr/0041). */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-error.h"
#include "einsora-service-private.h"

#include <string.h>

void
einsora_service_set_workload_logs(EinsoraService *self, EinsoraWorkloadLogs *logs)
{
    g_return_if_fail(EINSORA_IS_SERVICE(self));
    g_return_if_fail(logs == NULL || EINSORA_IS_WORKLOAD_LOGS(logs));
    g_set_object(&self->logs, logs);
}

gchar *
einsora_service_find_workload_log(EinsoraService *self, const char *tenant_id,
                                  const char *workload_id, gint64 attempt, gint64 *found_attempt,
                                  gchar **token, EinsoraWorkload **workload_out, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = NULL;
    gchar *path;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(found_attempt != NULL && token != NULL, NULL);
    *found_attempt = 0;
    *token = NULL;
    workload = einsora_store_get_workload(self->store, tenant_id, workload_id, error);
    if (workload == NULL)
        return NULL;
    if (workload->state == EINSORA_WORKLOAD_STATE_DELETED ||
        workload->state == EINSORA_WORKLOAD_STATE_DELETING) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "workload %s was deleted, and its logs with its data", workload_id);
        return NULL;
    }
    if (attempt > workload->attempt) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "workload %s has had %" G_GINT64_FORMAT " attempt(s); attempt %" G_GINT64_FORMAT
                    " is yet to come",
                    workload_id, workload->attempt, attempt);
        return NULL;
    }
    if (self->logs == NULL || workload->attempt == 0) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "workload %s has no output yet: it hasn't started", workload_id);
        return NULL;
    }
    path = einsora_workload_logs_find(self->logs, workload, attempt, found_attempt, token, error);
    if (path != NULL && workload_out != NULL)
        *workload_out = g_steal_pointer(&workload);
    return path;
}
