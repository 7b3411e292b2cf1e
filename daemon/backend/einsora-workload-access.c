#define G_LOG_DOMAIN "einsora-backend"

#include "einsora-workload-access.h"

#include "einsora-error.h"

G_DEFINE_INTERFACE(EinsoraWorkloadAccess, einsora_workload_access, G_TYPE_OBJECT)

static void
einsora_workload_access_default_init(EinsoraWorkloadAccessInterface *iface)
{
}

gboolean
einsora_workload_access_lookup(EinsoraWorkloadAccess *self, const char *tenant_id,
                               const char *workload_id, gint64 *attempt, gchar **socket_path,
                               gchar **token, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_WORKLOAD_ACCESS(self), FALSE);
    g_return_val_if_fail(attempt != NULL && socket_path != NULL && token != NULL, FALSE);
    *socket_path = NULL;
    *token = NULL;
    return EINSORA_WORKLOAD_ACCESS_GET_IFACE(self)->lookup(self, tenant_id, workload_id, attempt,
                                                           socket_path, token, error);
}

gchar *
einsora_workload_access_lookup_remote(EinsoraWorkloadAccess *self, const char *tenant_id,
                                      const char *workload_id, gint64 *attempt, GError **error)
{
    EinsoraWorkloadAccessInterface *iface;

    g_return_val_if_fail(EINSORA_IS_WORKLOAD_ACCESS(self), NULL);
    g_return_val_if_fail(attempt != NULL, NULL);
    iface = EINSORA_WORKLOAD_ACCESS_GET_IFACE(self);
    if (iface->lookup_remote == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "workload %s isn't running on this machine", workload_id);
        return NULL;
    }
    return iface->lookup_remote(self, tenant_id, workload_id, attempt, error);
}
