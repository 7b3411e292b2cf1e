#define G_LOG_DOMAIN "einsora-store"

#include "einsora-store.h"

G_DEFINE_INTERFACE(EinsoraStore, einsora_store, G_TYPE_OBJECT)

static void
einsora_store_default_init(EinsoraStoreInterface *iface)
{
}

/* Runs @func in one transaction: committed if it returns TRUE, rolled back
 * otherwise (and when the commit itself fails). */
gboolean
einsora_store_in_transaction(EinsoraStore *self, EinsoraStoreTransactionFunc func,
                             gpointer user_data, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(func != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (!einsora_store_begin(self, error))
        return FALSE;
    if (!func(self, user_data, error)) {
        einsora_store_rollback(self);
        return FALSE;
    }
    if (!einsora_store_commit(self, error)) {
        einsora_store_rollback(self);
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_store_begin(EinsoraStore *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->begin(self, error);
}

gboolean
einsora_store_commit(EinsoraStore *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->commit(self, error);
}

void
einsora_store_rollback(EinsoraStore *self)
{
    g_return_if_fail(EINSORA_IS_STORE(self));
    EINSORA_STORE_GET_IFACE(self)->rollback(self);
}

gboolean
einsora_store_check_ready(EinsoraStore *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->check_ready(self, error);
}

gboolean
einsora_store_insert_tenant(EinsoraStore *self, const EinsoraTenant *tenant, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_tenant(self, tenant, error);
}

EinsoraTenant *
einsora_store_get_tenant(EinsoraStore *self, const char *tenant_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->get_tenant(self, tenant_id, error);
}

gboolean
einsora_store_set_quota(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                        gint64 gpus, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(gpu_class != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->set_quota(self, tenant_id, gpu_class, gpus, error);
}

gboolean
einsora_store_get_quota(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                        gint64 *gpus, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(gpu_class != NULL, FALSE);
    g_return_val_if_fail(gpus != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->get_quota(self, tenant_id, gpu_class, gpus, error);
}

gboolean
einsora_store_gpus_by_state(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                            gint64 sums[EINSORA_WORKLOAD_STATE_COUNT], GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(gpu_class != NULL, FALSE);
    g_return_val_if_fail(sums != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->gpus_by_state(self, tenant_id, gpu_class, sums, error);
}

gboolean
einsora_store_insert_machine(EinsoraStore *self, const EinsoraMachine *machine, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(machine != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_machine(self, machine, error);
}

EinsoraMachine *
einsora_store_get_machine(EinsoraStore *self, const char *tenant_id, const char *machine_id,
                          GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(machine_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->get_machine(self, tenant_id, machine_id, error);
}

GPtrArray *
einsora_store_list_machines(EinsoraStore *self, const char *tenant_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_machines(self, tenant_id, error);
}

gboolean
einsora_store_insert_workload(EinsoraStore *self, const EinsoraWorkload *workload, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(workload != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_workload(self, workload, error);
}

EinsoraWorkload *
einsora_store_get_workload(EinsoraStore *self, const char *tenant_id, const char *workload_id,
                           GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(workload_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->get_workload(self, tenant_id, workload_id, error);
}

GPtrArray *
einsora_store_list_workloads(EinsoraStore *self, const char *tenant_id, gboolean include_deleted,
                             GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_workloads(self, tenant_id, include_deleted, error);
}

gboolean
einsora_store_update_workload_state(EinsoraStore *self, const EinsoraWorkload *workload,
                                    EinsoraWorkloadState expected_state, gint64 expected_version,
                                    GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(workload != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->update_workload_state(self, workload, expected_state,
                                                                expected_version, error);
}

gboolean
einsora_store_append_event(EinsoraStore *self, const EinsoraWorkloadEvent *event, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(event != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->append_event(self, event, error);
}

GPtrArray *
einsora_store_list_events(EinsoraStore *self, const char *tenant_id, const char *workload_id,
                          GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(workload_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_events(self, tenant_id, workload_id, error);
}
