/* Machines, read-only: listing them, whether they are online or
 * placeable, the GPUs and drivers their agent last reported as stored,
 * and how many of a tenant's workloads each holds. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-inventory.h"
#include "einsora-uuid.h"

GPtrArray *
einsora_service_list_machines(EinsoraService *self, const char *tenant_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    return einsora_store_list_machines(self->store, tenant_id, error);
}

EinsoraMachine *
einsora_service_get_machine(EinsoraService *self, const char *tenant_id, const char *machine_id,
                            GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);

    if (!einsora_uuid_is_valid(machine_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return NULL;
    }
    return einsora_store_get_machine(self->store, tenant_id, machine_id, error);
}

gboolean
einsora_service_machine_online(EinsoraService *self, const EinsoraMachine *machine)
{
    return einsora_machine_seen_within(machine, einsora_service_now(self),
                                       EINSORA_MACHINE_ONLINE_WINDOW_US);
}

gboolean
einsora_service_machine_placeable(EinsoraService *self, const EinsoraMachine *machine)
{
    return einsora_machine_seen_within(machine, einsora_service_now(self),
                                       EINSORA_MACHINE_PLACEABLE_WINDOW_US);
}

/* The stored inventory, read the one way the hub reads it for capacity,
 * so the API shows only what placement may use. One that doesn't fit the
 * machine shows as none: the hub says why in its debug log. */
static EinsoraInventory *
stored_inventory(const EinsoraMachine *machine)
{
    EinsoraInventory *inventory = NULL;

    if (!einsora_inventory_read_stored(machine, &inventory, NULL))
        return NULL;
    return inventory;
}

GPtrArray *
einsora_service_machine_gpus(EinsoraService *self, const EinsoraMachine *machine)
{
    GPtrArray *gpus = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_gpu_free);
    g_autoptr(EinsoraInventory) inventory = stored_inventory(machine);

    for (guint i = 0; inventory != NULL && i < inventory->gpus->len; i++) {
        const EinsoraInventoryGpu *reported = g_ptr_array_index(inventory->gpus, i);
        g_autoptr(EinsoraMachineGpu) gpu = einsora_machine_gpu_new();
        EinsoraAccelerator vendor;

        gpu->vendor = g_strdup(reported->vendor);
        gpu->model = g_strdup(reported->model);
        gpu->memory_mib = reported->memory_mib;
        if (einsora_accelerator_from_string(gpu->vendor, &vendor))
            gpu->gpu_class = g_strdup(einsora_catalog_class_for_gpu(
                self->catalog, machine->region, vendor, gpu->model, inventory->memory_mib));
        g_ptr_array_add(gpus, g_steal_pointer(&gpu));
    }
    return gpus;
}

gchar **
einsora_service_machine_drivers(EinsoraService *self, const EinsoraMachine *machine)
{
    g_autoptr(EinsoraInventory) inventory = stored_inventory(machine);

    if (inventory == NULL)
        return g_new0(gchar *, 1);
    return g_strdupv(inventory->drivers);
}

GHashTable *
einsora_service_count_machine_workloads(EinsoraService *self, const char *tenant_id, GError **error)
{
    g_autoptr(GPtrArray) workloads =
        einsora_store_list_workloads(self->store, tenant_id, FALSE, error);
    GHashTable *counts;

    if (workloads == NULL)
        return NULL;
    counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < workloads->len; i++) {
        const EinsoraWorkload *workload = g_ptr_array_index(workloads, i);
        if (workload->machine_id == NULL || !einsora_workload_state_holds_capacity(workload->state))
            continue;
        g_hash_table_insert(
            counts, g_strdup(workload->machine_id),
            GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(counts, workload->machine_id)) +
                            1));
    }
    return counts;
}
