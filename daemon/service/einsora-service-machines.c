/* Machines, read-only: listing them, whether they are online or
 * placeable, the GPUs and drivers their agent last reported as stored,
 * and how many of a tenant's workloads each holds. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-inventory.h"
#include "einsora-reason.h"
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

void
einsora_service_machine_size(EinsoraService *self, const EinsoraMachine *machine, gint64 *cpus,
                             gint64 *memory_mib)
{
    g_autoptr(EinsoraInventory) inventory = stored_inventory(machine);

    /* An enrolled machine's row knows nothing of its size until its
     * agent says: what it said last is what placement uses too. */
    *cpus = inventory != NULL ? inventory->cpus : machine->cpus;
    *memory_mib = inventory != NULL ? inventory->memory_mib : machine->memory_mib;
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

gboolean
einsora_service_machine_guest_use(EinsoraService *self, const EinsoraMachine *machine,
                                  EinsoraGuestUse *use, GError **error)
{
    g_autoptr(GPtrArray) workloads =
        einsora_store_list_machine_workloads(self->store, machine->id, error);

    *use = (EinsoraGuestUse){0};
    if (workloads == NULL)
        return FALSE;
    for (guint i = 0; i < workloads->len; i++) {
        const EinsoraWorkload *workload = g_ptr_array_index(workloads, i);
        const EinsoraComputeClass *klass;

        if (g_strcmp0(workload->tenant_id, machine->tenant_id) == 0 ||
            !einsora_workload_state_holds_capacity(workload->state))
            continue;
        klass = einsora_catalog_lookup_class(self->catalog, workload->placed_class != NULL
                                                                ? workload->placed_class
                                                                : workload->gpu_class);
        use->workloads++;
        if (klass != NULL) {
            use->cpus += klass->cpus;
            use->memory_mib += klass->memory_mib;
            use->gpus += klass->devices;
        }
    }
    return TRUE;
}

gchar **
einsora_service_image_drivers(EinsoraService *self, const char *image_name)
{
    const EinsoraImage *image = einsora_catalog_lookup_image(self->catalog, image_name);
    g_autoptr(GStrvBuilder) names = g_strv_builder_new();
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

    for (guint i = 0; image != NULL && i < image->runtimes->len; i++) {
        const EinsoraImageRuntime *runtime = g_ptr_array_index(image->runtimes, i);
        for (guint j = 0; runtime->driver_refs[j] != NULL; j++) {
            const char *name = runtime->driver_refs[j];
            /* sim runs nothing: it is never what an image needs. */
            if (g_str_equal(name, "sim") || !g_hash_table_add(seen, (gpointer)name))
                continue;
            g_strv_builder_add(names, name);
        }
    }
    return g_strv_builder_end(names);
}

/* Whether a machine of the tenant's, placeable now, offers a driver some
 * runtime of @image_name names (sim included: a development machine's). */
static gboolean
image_runs_now(EinsoraService *self, const char *tenant_id, const EinsoraImage *image)
{
    g_autoptr(GPtrArray) machines = einsora_store_list_machines(self->store, tenant_id, NULL);

    for (guint m = 0; machines != NULL && m < machines->len; m++) {
        const EinsoraMachine *machine = g_ptr_array_index(machines, m);
        g_auto(GStrv) offered = NULL;

        if (!einsora_service_machine_placeable(self, machine))
            continue;
        offered = einsora_service_machine_drivers(self, machine);
        for (guint i = 0; i < image->runtimes->len; i++) {
            const EinsoraImageRuntime *runtime = g_ptr_array_index(image->runtimes, i);
            for (guint j = 0; runtime->driver_refs[j] != NULL; j++) {
                if (g_strv_contains((const char *const *)offered, runtime->driver_refs[j]))
                    return TRUE;
            }
        }
    }
    return FALSE;
}

gboolean
einsora_service_image_runs_now(EinsoraService *self, const char *tenant_id, const char *image_name)
{
    const EinsoraImage *image = einsora_catalog_lookup_image(self->catalog, image_name);

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    return image != NULL && image_runs_now(self, tenant_id, image);
}

gchar *
einsora_service_runs_nowhere_reason(EinsoraService *self, const EinsoraWorkload *workload)
{
    g_auto(GStrv) drivers = NULL;
    g_autofree gchar *names = NULL;
    g_autoptr(GPtrArray) machines = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    if (workload->image == NULL ||
        einsora_service_image_runs_now(self, workload->tenant_id, workload->image))
        return NULL;
    /* With no machine at all there is nothing to say of one (a server
     * whose agents haven't joined yet). */
    machines = einsora_store_list_machines(self->store, workload->tenant_id, NULL);
    if (machines == NULL || machines->len == 0)
        return NULL;
    drivers = einsora_service_image_drivers(self, workload->image);
    names = g_strjoinv(", ", drivers);
    return einsora_reason_runs_nowhere_now(workload->image, names);
}

EinsoraMachine *
einsora_service_find_agent_machine(EinsoraService *self, const char *fingerprint, GError **error)
{
    g_autoptr(GError) local_error = NULL;
    EinsoraMachine *machine;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(fingerprint != NULL, NULL);

    machine = einsora_store_find_machine_by_certificate(self->store, fingerprint, &local_error);
    if (machine == NULL && g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                            "this client certificate is no machine's here: revoked, or never "
                            "enrolled (enrol again with einsora machines add)");
        return NULL;
    }
    if (machine == NULL)
        g_propagate_error(error, g_steal_pointer(&local_error));
    return machine;
}

GHashTable *
einsora_service_placed_workload_ids(EinsoraService *self, const char *machine_id, GError **error)
{
    g_autoptr(GPtrArray) placed = NULL;
    GHashTable *ids;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);

    placed = einsora_store_list_machine_workloads(self->store, machine_id, error);
    if (placed == NULL)
        return NULL;
    ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < placed->len; i++) {
        const EinsoraWorkload *workload = g_ptr_array_index(placed, i);
        g_hash_table_add(ids, g_strdup(workload->id));
    }
    return ids;
}
