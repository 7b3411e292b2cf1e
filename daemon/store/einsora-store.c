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

EinsoraTenant *
einsora_store_find_tenant_by_name(EinsoraStore *self, const char *name, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(name != NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->find_tenant_by_name(self, name, error);
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

EinsoraMachine *
einsora_store_find_machine(EinsoraStore *self, const char *machine_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(machine_id != NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->find_machine(self, machine_id, error);
}

EinsoraMachine *
einsora_store_find_machine_by_certificate(EinsoraStore *self, const char *fingerprint,
                                          GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(fingerprint != NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->find_machine_by_certificate(self, fingerprint, error);
}

GPtrArray *
einsora_store_list_region_machines(EinsoraStore *self, const char *region, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(region != NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_region_machines(self, region, error);
}

gboolean
einsora_store_record_machine_seen(EinsoraStore *self, const char *machine_id,
                                  const char *last_seen_at, const char *inventory,
                                  const char *agent_version, const gint64 *clock_offset_ms,
                                  GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(machine_id != NULL && last_seen_at != NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->record_machine_seen(
        self, machine_id, last_seen_at, inventory, agent_version, clock_offset_ms, error);
}

GPtrArray *
einsora_store_list_machine_workloads(EinsoraStore *self, const char *machine_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(machine_id != NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_machine_workloads(self, machine_id, error);
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
    return EINSORA_STORE_GET_IFACE(self)->list_workloads(self, tenant_id, include_deleted, NULL,
                                                         NULL, G_MAXUINT, error);
}

GPtrArray *
einsora_store_list_workloads_page(EinsoraStore *self, const char *tenant_id,
                                  gboolean include_deleted, const char *after_created_at,
                                  const char *after_id, guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail((after_created_at == NULL) == (after_id == NULL), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_workloads(self, tenant_id, include_deleted,
                                                         after_created_at, after_id, limit, error);
}

GPtrArray *
einsora_store_list_region_workloads(EinsoraStore *self, const char *region, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(region != NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_region_workloads(self, region, error);
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
einsora_store_acquire_lease(EinsoraStore *self, const char *name, const char *holder,
                            const char *now, const char *expires_at, gboolean *held, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(name != NULL && holder != NULL && held != NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->acquire_lease(self, name, holder, now, expires_at, held,
                                                        error);
}

gboolean
einsora_store_release_lease(EinsoraStore *self, const char *name, const char *holder,
                            GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    return EINSORA_STORE_GET_IFACE(self)->release_lease(self, name, holder, error);
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
    return EINSORA_STORE_GET_IFACE(self)->list_events(self, tenant_id, workload_id, 0, G_MAXUINT,
                                                      error);
}

GPtrArray *
einsora_store_list_events_page(EinsoraStore *self, const char *tenant_id, const char *workload_id,
                               gint64 after_seq, guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(workload_id != NULL, NULL);
    g_return_val_if_fail(after_seq >= 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_events(self, tenant_id, workload_id, after_seq,
                                                      limit, error);
}

GPtrArray *
einsora_store_list_tenant_events(EinsoraStore *self, const char *tenant_id, gint64 after_seq,
                                 guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(after_seq >= 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_tenant_events(self, tenant_id, after_seq, limit,
                                                             error);
}

gboolean
einsora_store_last_event_seq(EinsoraStore *self, const char *tenant_id, gint64 *seq, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(seq != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->last_event_seq(self, tenant_id, seq, error);
}

gboolean
einsora_store_insert_user(EinsoraStore *self, const EinsoraUser *user, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(user != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_user(self, user, error);
}

EinsoraUser *
einsora_store_get_user(EinsoraStore *self, const char *tenant_id, const char *user_id,
                       GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(user_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->get_user(self, tenant_id, user_id, error);
}

EinsoraUser *
einsora_store_find_user_by_email(EinsoraStore *self, const char *email, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(email != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->find_user_by_email(self, email, error);
}

gboolean
einsora_store_count_workloads_with_model(EinsoraStore *self, const char *model, gint64 *count,
                                         GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(model != NULL && count != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->count_workloads_with_model(self, model, count, error);
}

gboolean
einsora_store_count_workloads(
    EinsoraStore *self, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(counts != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->count_workloads(self, counts, error);
}

gboolean
einsora_store_count_users(EinsoraStore *self, gint64 *count, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(count != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->count_users(self, count, error);
}

gboolean
einsora_store_set_machine_sharing(EinsoraStore *self, const char *tenant_id, const char *machine_id,
                                  EinsoraSharing sharing, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL && machine_id != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->set_machine_sharing(self, tenant_id, machine_id, sharing,
                                                              error);
}

gboolean
einsora_store_clear_machine_certificate(EinsoraStore *self, const char *tenant_id,
                                        const char *machine_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL && machine_id != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->clear_machine_certificate(self, tenant_id, machine_id,
                                                                    error);
}

gboolean
einsora_store_revoke_user_sessions(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                   const char *revoked_at, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL && user_id != NULL && revoked_at != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->revoke_user_sessions(self, tenant_id, user_id, revoked_at,
                                                               error);
}

GPtrArray *
einsora_store_list_users(EinsoraStore *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_users(self, error);
}

gboolean
einsora_store_set_user_disabled(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                const char *disabled_at, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL && user_id != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->set_user_disabled(self, tenant_id, user_id, disabled_at,
                                                            error);
}

gboolean
einsora_store_set_user_password(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                const char *password_hash, gboolean must_change, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL && user_id != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->set_user_password(self, tenant_id, user_id, password_hash,
                                                            must_change, error);
}

GPtrArray *
einsora_store_list_tenants(EinsoraStore *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_tenants(self, error);
}

gboolean
einsora_store_insert_audit_event(EinsoraStore *self, const EinsoraAuditEvent *event, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(event != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_audit_event(self, event, error);
}

GPtrArray *
einsora_store_list_audit_events(EinsoraStore *self, const char *tenant_id, guint limit,
                                GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_audit_events(self, tenant_id, limit, error);
}

gboolean
einsora_store_insert_api_token(EinsoraStore *self, const EinsoraApiToken *token, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(token != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_api_token(self, token, error);
}

EinsoraApiToken *
einsora_store_find_api_token(EinsoraStore *self, const char *token_sha256, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(token_sha256 != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->find_api_token(self, token_sha256, error);
}

GPtrArray *
einsora_store_list_api_tokens(EinsoraStore *self, const char *tenant_id, const char *user_id,
                              GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(user_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_api_tokens(self, tenant_id, user_id, NULL, NULL,
                                                          G_MAXUINT, error);
}

GPtrArray *
einsora_store_list_api_tokens_page(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                   const char *after_created_at, const char *after_id, guint limit,
                                   GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(user_id != NULL, NULL);
    g_return_val_if_fail((after_created_at == NULL) == (after_id == NULL), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_api_tokens(self, tenant_id, user_id,
                                                          after_created_at, after_id, limit, error);
}

gboolean
einsora_store_revoke_api_token(EinsoraStore *self, const char *tenant_id, const char *user_id,
                               const char *token_id, const char *revoked_at, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(user_id != NULL, FALSE);
    g_return_val_if_fail(token_id != NULL, FALSE);
    g_return_val_if_fail(revoked_at != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->revoke_api_token(self, tenant_id, user_id, token_id,
                                                           revoked_at, error);
}

gboolean
einsora_store_touch_api_token(EinsoraStore *self, const char *token_id, const char *last_used_at,
                              GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(token_id != NULL, FALSE);
    g_return_val_if_fail(last_used_at != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->touch_api_token(self, token_id, last_used_at, error);
}

gboolean
einsora_store_insert_session(EinsoraStore *self, const EinsoraSession *session, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(session != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_session(self, session, error);
}

EinsoraSession *
einsora_store_find_session(EinsoraStore *self, const char *session_sha256, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(session_sha256 != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->find_session(self, session_sha256, error);
}

gboolean
einsora_store_revoke_session(EinsoraStore *self, const char *tenant_id, const char *session_id,
                             const char *revoked_at, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(session_id != NULL, FALSE);
    g_return_val_if_fail(revoked_at != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->revoke_session(self, tenant_id, session_id, revoked_at,
                                                         error);
}

EinsoraIdempotencyRecord *
einsora_store_get_idempotency_record(EinsoraStore *self, const char *tenant_id, const char *key,
                                     GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(key != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->get_idempotency_record(self, tenant_id, key, error);
}

gboolean
einsora_store_insert_idempotency_record(EinsoraStore *self, const EinsoraIdempotencyRecord *record,
                                        GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(record != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_idempotency_record(self, record, error);
}

gboolean
einsora_store_delete_expired_idempotency_records(EinsoraStore *self, const char *now,
                                                 GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(now != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->delete_expired_idempotency_records(self, now, error);
}

gboolean
einsora_store_insert_access_ticket(EinsoraStore *self, const EinsoraAccessTicket *ticket,
                                   GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(ticket != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_access_ticket(self, ticket, error);
}

EinsoraAccessTicket *
einsora_store_take_access_ticket(EinsoraStore *self, const char *ticket_sha256, const char *now,
                                 GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(ticket_sha256 != NULL, NULL);
    g_return_val_if_fail(now != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->take_access_ticket(self, ticket_sha256, now, error);
}

gboolean
einsora_store_insert_enrolment(EinsoraStore *self, const EinsoraEnrolment *enrolment,
                               GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(enrolment != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->insert_enrolment(self, enrolment, error);
}

EinsoraEnrolment *
einsora_store_take_enrolment(EinsoraStore *self, const char *token_sha256, const char *now,
                             const char *machine_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(token_sha256 != NULL && now != NULL && machine_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->take_enrolment(self, token_sha256, now, machine_id,
                                                         error);
}

GPtrArray *
einsora_store_list_workloads_with_events_after(EinsoraStore *self, gint64 after_seq, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(after_seq >= 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_workloads_with_events_after(self, after_seq, error);
}

GPtrArray *
einsora_store_list_workloads_in_state(EinsoraStore *self, EinsoraWorkloadState state,
                                      GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(einsora_workload_state_to_string(state) != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_workloads_in_state(self, state, error);
}

gboolean
einsora_store_replace_usage_records(EinsoraStore *self, const char *tenant_id,
                                    const char *workload_id, GPtrArray *records, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    g_return_val_if_fail(workload_id != NULL, FALSE);
    g_return_val_if_fail(records != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *record = g_ptr_array_index(records, i);
        g_return_val_if_fail(g_strcmp0(record->tenant_id, tenant_id) == 0, FALSE);
        g_return_val_if_fail(g_strcmp0(record->workload_id, workload_id) == 0, FALSE);
    }
    return EINSORA_STORE_GET_IFACE(self)->replace_usage_records(self, tenant_id, workload_id,
                                                                records, error);
}

GPtrArray *
einsora_store_list_usage_records(EinsoraStore *self, const char *tenant_id, const char *from,
                                 const char *to, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    g_return_val_if_fail(from != NULL, NULL);
    g_return_val_if_fail(to != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return EINSORA_STORE_GET_IFACE(self)->list_usage_records(self, tenant_id, from, to, error);
}

gboolean
einsora_store_get_metering_cursor(EinsoraStore *self, const char *name, gint64 *last_seq,
                                  GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(name != NULL, FALSE);
    g_return_val_if_fail(last_seq != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->get_metering_cursor(self, name, last_seq, error);
}

gboolean
einsora_store_set_metering_cursor(EinsoraStore *self, const char *name, gint64 last_seq,
                                  const char *updated_at, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_STORE(self), FALSE);
    g_return_val_if_fail(name != NULL, FALSE);
    g_return_val_if_fail(last_seq >= 0, FALSE);
    g_return_val_if_fail(updated_at != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return EINSORA_STORE_GET_IFACE(self)->set_metering_cursor(self, name, last_seq, updated_at,
                                                              error);
}

EinsoraMetric *
einsora_store_transactions_metric(EinsoraMetrics *metrics)
{
    /* From a tenth of a millisecond (one small write) to the busy
     * timeout (another process holding the lock). */
    static const double bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    15};
    static const char *const labels[] = {"outcome", NULL};
    EinsoraMetric *transactions;

    g_return_val_if_fail(EINSORA_IS_METRICS(metrics), NULL);
    transactions = einsora_metrics_histogram(
        metrics, "einsora_store_transaction_duration_seconds",
        "Time from BEGIN (the wait for the write lock included) to COMMIT or ROLLBACK, by outcome.",
        labels, bounds, G_N_ELEMENTS(bounds));
    einsora_metric_touch(transactions, (const char *const[]){"commit", NULL});
    einsora_metric_touch(transactions, (const char *const[]){"rollback", NULL});
    return transactions;
}
