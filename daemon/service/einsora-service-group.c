/* Group commit (docs/adr/0028-admission-group-commit.md): the writes of
 * a controller pass in one transaction instead of one each, so a pass
 * pays one fsync, not one per workload; and einsora_service_write(), the
 * one way transition and note write, in the open group or alone. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"

gboolean
einsora_service_group_begin(EinsoraService *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(self->group_tenants == NULL, FALSE);

    if (!einsora_store_begin(self->store, error))
        return FALSE;
    self->group_tenants = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->group_machines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                 (GDestroyNotify)einsora_machine_free);
    self->group_failed = FALSE;
    return TRUE;
}

EinsoraMachine *
einsora_service_find_machine(EinsoraService *self, const char *machine_id, GError **error)
{
    EinsoraMachine *machine;

    if (self->group_machines == NULL)
        return einsora_store_find_machine(self->store, machine_id, error);
    machine = g_hash_table_lookup(self->group_machines, machine_id);
    if (machine == NULL) {
        machine = einsora_store_find_machine(self->store, machine_id, error);
        if (machine == NULL)
            return NULL;
        g_hash_table_insert(self->group_machines, g_strdup(machine_id), machine);
    }
    return einsora_machine_copy(machine);
}

gboolean
einsora_service_group_failed(EinsoraService *self)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    return self->group_tenants != NULL && self->group_failed;
}

void
einsora_service_group_rollback(EinsoraService *self)
{
    g_return_if_fail(EINSORA_IS_SERVICE(self));
    g_return_if_fail(self->group_tenants != NULL);

    einsora_store_rollback(self->store);
    /* Nobody hears of a write that was undone. */
    g_clear_pointer(&self->group_tenants, g_hash_table_unref);
    g_clear_pointer(&self->group_machines, g_hash_table_unref);
    self->group_failed = FALSE;
}

gboolean
einsora_service_group_commit(EinsoraService *self, GError **error)
{
    g_autoptr(GHashTable) tenants = NULL;
    GHashTableIter iter;
    gpointer tenant_id;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(self->group_tenants != NULL, FALSE);

    if (self->group_failed) {
        einsora_service_group_rollback(self);
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                            "a write in the group failed; none of the group was kept");
        return FALSE;
    }
    if (!einsora_store_commit(self->store, error)) {
        einsora_service_group_rollback(self);
        return FALSE;
    }
    tenants = g_steal_pointer(&self->group_tenants);
    g_clear_pointer(&self->group_machines, g_hash_table_unref);
    /* Only now, committed, may anyone hear of it. */
    g_hash_table_iter_init(&iter, tenants);
    while (g_hash_table_iter_next(&iter, &tenant_id, NULL))
        einsora_service_events_added(self, tenant_id);
    return TRUE;
}

/* A refusal decided before any write, as opposed to the store failing. */
static gboolean
decided(const GError *error)
{
    return g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT) ||
           g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND) ||
           g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
}

gboolean
einsora_service_write(EinsoraService *self, const char *tenant_id, EinsoraStoreTransactionFunc func,
                      gpointer user_data, const gboolean *partial, GError **error)
{
    g_autoptr(GError) local_error = NULL;

    if (self->group_tenants == NULL) {
        if (!einsora_store_in_transaction(self->store, func, user_data, error))
            return FALSE;
        einsora_service_events_added(self, tenant_id);
        return TRUE;
    }
    if (self->group_failed) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                            "an earlier write in the group failed");
        return FALSE;
    }
    if (!func(self->store, user_data, &local_error)) {
        /* A lost race or a refused step wrote nothing: the group goes on
         * without it. Half a write can't be undone alone, and after a
         * store error SQLite may have ended the transaction itself. */
        if (*partial || !decided(local_error))
            self->group_failed = TRUE;
        g_propagate_error(error, g_steal_pointer(&local_error));
        return FALSE;
    }
    g_hash_table_add(self->group_tenants, g_strdup(tenant_id));
    return TRUE;
}
