#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-workload-logs.h"

G_DEFINE_INTERFACE(EinsoraWorkloadLogs, einsora_workload_logs, G_TYPE_OBJECT)

static void
einsora_workload_logs_default_init(EinsoraWorkloadLogsInterface *iface)
{
}

gchar *
einsora_workload_logs_find(EinsoraWorkloadLogs *self, const EinsoraWorkload *workload,
                           gint64 attempt, gint64 *found_attempt, gchar **token, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_WORKLOAD_LOGS(self), NULL);
    g_return_val_if_fail(workload != NULL && found_attempt != NULL && token != NULL, NULL);
    *found_attempt = 0;
    *token = NULL;
    return EINSORA_WORKLOAD_LOGS_GET_IFACE(self)->find(self, workload, attempt, found_attempt,
                                                       token, error);
}
