#define G_LOG_DOMAIN "einsora-controller"

#include "einsora-placement.h"

#include "einsora-gpu-mask.h"
#include "einsora-machine.h"

EinsoraPlacementResult *
einsora_placement_result_new(EinsoraPlacementOutcome outcome)
{
    EinsoraPlacementResult *result = g_new0(EinsoraPlacementResult, 1);
    result->outcome = outcome;
    return result;
}

void
einsora_placement_result_free(EinsoraPlacementResult *result)
{
    if (result == NULL)
        return;
    g_free(result->placed_class);
    g_free(result->machine_id);
    g_free(result->machine_name);
    g_free(result->driver);
    einsora_shortfall_free(result->shortfall);
    g_free(result);
}

static gint64
units_of(const EinsoraComputeClass *klass)
{
    return klass->devices > 0 ? klass->devices : 1;
}

static EinsoraPlacementResult *
place_on_cluster(const EinsoraComputeClass *klass, const EinsoraCapacity *capacity,
                 const EinsoraUsage *usage)
{
    gint64 free =
        einsora_capacity_units(capacity, klass->name) - einsora_usage_units(usage, klass->name);
    EinsoraPlacementResult *result;

    result = einsora_placement_result_new(free >= units_of(klass) ? EINSORA_PLACEMENT_PLACED
                                                                  : EINSORA_PLACEMENT_NO_CAPACITY);
    result->placed_class = g_strdup(klass->name);
    if (result->outcome == EINSORA_PLACEMENT_NO_CAPACITY) {
        result->shortfall = einsora_shortfall_new();
        einsora_shortfall_measure(result->shortfall,
                                  klass->devices > 0 ? EINSORA_SHORTFALL_GPUS
                                                     : EINSORA_SHORTFALL_UNITS,
                                  units_of(klass), free);
    }
    return result;
}

/* The driver this machine would use for the workload, from the image's
 * runtime in the catalog's order, or NULL; *@full says which driver, if
 * any, was passed over for being at its per-machine limit. Isolation
 * comes from the domain's table (the catalog driver's info), never from
 * the machine. */
static const char *
pick_driver(const EinsoraWorkload *workload, EinsoraCatalog *catalog,
            const EinsoraImageRuntime *runtime, EinsoraAccelerator accelerator,
            const EinsoraMachineCapacity *machine, const EinsoraMachineUsage *used,
            const char *only, const EinsoraCatalogDriver **full)
{
    *full = NULL;
    for (guint i = 0; runtime->driver_refs[i] != NULL; i++) {
        const char *name = runtime->driver_refs[i];
        const EinsoraCatalogDriver *driver = einsora_catalog_lookup_driver(catalog, name);

        if (only != NULL && g_strcmp0(name, only) != 0)
            continue;
        if (driver == NULL || !einsora_catalog_driver_runs(driver, workload->kind, accelerator))
            continue;
        if (!einsora_machine_capacity_has_driver(machine, name))
            continue;
        if (!einsora_machine_permits(machine->machine, workload->tenant_id, driver->info))
            continue;
        /* A full driver is a matter of capacity: room frees up later. */
        if (driver->info->per_machine_limit > 0 &&
            einsora_machine_usage_driver(used, name) >= driver->info->per_machine_limit) {
            if (*full == NULL)
                *full = driver;
            continue;
        }
        return name;
    }
    return NULL;
}

static gint64
free_devices(const EinsoraMachineCapacity *machine, const EinsoraMachineUsage *used,
             const char *gpu_class)
{
    return einsora_machine_capacity_devices(machine, gpu_class) -
           einsora_machine_usage_devices(used, gpu_class);
}

static gboolean
fits(const EinsoraComputeClass *klass, const EinsoraMachineCapacity *machine,
     const EinsoraMachineUsage *used)
{
    gint64 cpus = machine->cpus - (used != NULL ? used->cpus : 0);
    gint64 memory = machine->memory_mib - (used != NULL ? used->memory_mib : 0);

    if (cpus < klass->cpus || memory < klass->memory_mib)
        return FALSE;
    return klass->devices == 0 || free_devices(machine, used, klass->name) >= klass->devices;
}

/* What @machine lacks for @klass, with @full the driver it would use at
 * its limit (or NULL). Only said, never decided on: fits() decides. The
 * driver's name is left to the caller, so that measuring allocates
 * nothing. */
static void
measure(const EinsoraComputeClass *klass, const EinsoraMachineCapacity *machine,
        const EinsoraMachineUsage *used, const EinsoraCatalogDriver *full,
        EinsoraShortfall *shortfall)
{
    *shortfall = (EinsoraShortfall){0};
    if (klass->devices > 0)
        einsora_shortfall_measure(shortfall, EINSORA_SHORTFALL_GPUS, klass->devices,
                                  free_devices(machine, used, klass->name));
    einsora_shortfall_measure(shortfall, EINSORA_SHORTFALL_CPUS, klass->cpus,
                              machine->cpus - (used != NULL ? used->cpus : 0));
    einsora_shortfall_measure(shortfall, EINSORA_SHORTFALL_MEMORY, klass->memory_mib,
                              machine->memory_mib - (used != NULL ? used->memory_mib : 0));
    if (full != NULL) {
        gint64 limit = full->info->per_machine_limit;

        shortfall->driver_limit = limit;
        einsora_shortfall_measure(shortfall, EINSORA_SHORTFALL_DRIVER, 1,
                                  limit - einsora_machine_usage_driver(used, full->name));
    }
}

/* Whether @a is closer to fitting than @b: short of fewer things, or of
 * the same things by less (GPUs first, then CPUs, memory, driver slots).
 * Otherwise the machine looked at first stays the one the reason names. */
static gboolean
closer(const EinsoraShortfall *a, const EinsoraShortfall *b)
{
    static const EinsoraShortfallKind order[] = {EINSORA_SHORTFALL_GPUS, EINSORA_SHORTFALL_CPUS,
                                                 EINSORA_SHORTFALL_MEMORY,
                                                 EINSORA_SHORTFALL_DRIVER};
    guint count_a = einsora_shortfall_count(a);
    guint count_b = einsora_shortfall_count(b);

    if (count_a != count_b)
        return count_a < count_b;
    if (a->short_of != b->short_of)
        return FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        const EinsoraShortfallAmount *x = einsora_shortfall_amount(a, order[i]);
        const EinsoraShortfallAmount *y = einsora_shortfall_amount(b, order[i]);

        if ((a->short_of & order[i]) == 0)
            continue;
        if (x->requested - x->free != y->requested - y->free)
            return x->requested - x->free < y->requested - y->free;
    }
    return FALSE;
}

/* The lowest GPUs of the class that nothing placed here holds. When
 * something holds one without a recorded choice (placed before choices
 * were recorded, or by a backend that knew only counts), which are free
 * can't be told: none is chosen and the runtime picks, as it did then. */
static guint64
pick_gpus(const EinsoraComputeClass *klass, const EinsoraMachineCapacity *machine,
          const EinsoraMachineUsage *used)
{
    guint64 mask = einsora_machine_capacity_gpu_mask(machine, klass->name);
    guint64 held = used != NULL ? used->gpu_mask & mask : 0;

    if (klass->devices <= 0 ||
        einsora_gpu_mask_count(held) != einsora_machine_usage_devices(used, klass->name))
        return 0;
    return einsora_gpu_mask_pick(mask & ~held, klass->devices);
}

/* A notebook or VM that has run before goes back to the machine and
 * driver holding its disk, and waits for them. */
static gboolean
has_disk(const EinsoraWorkload *workload)
{
    return workload->machine_id != NULL && (workload->kind == EINSORA_WORKLOAD_KIND_NOTEBOOK ||
                                            workload->kind == EINSORA_WORKLOAD_KIND_VM);
}

static EinsoraPlacementResult *
place_on_machines(const EinsoraWorkload *workload, EinsoraCatalog *catalog,
                  const EinsoraComputeClass *klass, const EinsoraImageRuntime *runtime,
                  const EinsoraCapacity *capacity, const EinsoraUsage *usage, guint start,
                  guint *placed_at)
{
    EinsoraPlacementOutcome outcome = EINSORA_PLACEMENT_NO_MACHINE;
    gboolean sticky = has_disk(workload);
    EinsoraShortfall best = {0};
    const EinsoraCatalogDriver *best_full = NULL;
    gboolean measured = FALSE;
    EinsoraPlacementResult *result;

    if (sticky)
        outcome = EINSORA_PLACEMENT_WAITING_FOR_DISK;
    for (guint i = start; i < capacity->machines->len; i++) {
        const EinsoraMachineCapacity *machine = g_ptr_array_index(capacity->machines, i);
        const EinsoraMachineUsage *used = einsora_usage_lookup_machine(usage, machine->machine->id);
        const char *driver;
        const EinsoraCatalogDriver *full = NULL;
        EinsoraShortfall shortfall;

        if (sticky && g_strcmp0(machine->machine->id, workload->machine_id) != 0)
            continue;
        if (!machine->online ||
            !einsora_machine_can_host(machine->machine, workload->region, workload->tenant_id))
            continue;
        if (klass->devices > 0 && einsora_machine_capacity_devices(machine, klass->name) == 0)
            continue;
        if (outcome == EINSORA_PLACEMENT_NO_MACHINE ||
            outcome == EINSORA_PLACEMENT_WAITING_FOR_DISK)
            outcome = EINSORA_PLACEMENT_NO_DRIVER;
        driver = pick_driver(workload, catalog, runtime, klass->accelerator, machine, used,
                             sticky ? workload->driver : NULL, &full);
        if (driver == NULL && full == NULL)
            continue;
        outcome = EINSORA_PLACEMENT_NO_CAPACITY;
        if (driver == NULL || !fits(klass, machine, used)) {
            measure(klass, machine, used, driver == NULL ? full : NULL, &shortfall);
            if (!measured || closer(&shortfall, &best)) {
                best = shortfall;
                best_full = driver == NULL ? full : NULL;
                measured = TRUE;
            }
            continue;
        }

        result = einsora_placement_result_new(EINSORA_PLACEMENT_PLACED);
        result->placed_class = g_strdup(klass->name);
        result->machine_id = g_strdup(machine->machine->id);
        result->machine_name = g_strdup(machine->machine->name);
        result->driver = g_strdup(driver);
        result->gpu_mask = pick_gpus(klass, machine, used);
        *placed_at = i;
        return result;
    }
    result = einsora_placement_result_new(outcome);
    result->placed_class = g_strdup(klass->name);
    if (outcome == EINSORA_PLACEMENT_NO_CAPACITY) {
        result->shortfall = einsora_shortfall_copy(&best);
        result->shortfall->driver = best_full != NULL ? g_strdup(best_full->name) : NULL;
    }
    return result;
}

/**
 * einsora_placement_place:
 *
 * Where @workload can run now, given what @capacity offers and @usage
 * holds. On a cluster the class is enough; on machines it picks a machine
 * and a driver: in the workload's region and the tenant's own (or a
 * community pool's), with a driver the image's runtime lists that runs the
 * kind on the class's accelerator and that the trust matrix allows, within
 * the driver's per-machine limit, with the class's CPUs, memory and
 * devices free. The caller has checked that the class and image exist.
 */
static EinsoraPlacementResult *
place(const EinsoraWorkload *workload, EinsoraCatalog *catalog, const EinsoraCapacity *capacity,
      const EinsoraUsage *usage, guint *first)
{
    EinsoraCatalogResolution resolved;
    const EinsoraComputeClass *klass;
    const EinsoraImageRuntime *runtime;

    einsora_catalog_resolve(catalog, workload->gpu_class, workload->image, &resolved);
    g_return_val_if_fail(resolved.klass != NULL && resolved.image != NULL, NULL);
    klass = resolved.klass;
    runtime = resolved.runtime;
    if (capacity->machines == NULL)
        return place_on_cluster(klass, capacity, usage);
    if (runtime == NULL) {
        EinsoraPlacementResult *result = einsora_placement_result_new(EINSORA_PLACEMENT_NO_DRIVER);
        result->placed_class = g_strdup(klass->name);
        return result;
    }
    if (*first > 0) {
        EinsoraPlacementResult *result =
            place_on_machines(workload, catalog, klass, runtime, capacity, usage, *first, first);
        if (result->outcome == EINSORA_PLACEMENT_PLACED)
            return result;
        einsora_placement_result_free(result);
    }
    return place_on_machines(workload, catalog, klass, runtime, capacity, usage, 0, first);
}

EinsoraPlacementResult *
einsora_placement_place(const EinsoraWorkload *workload, EinsoraCatalog *catalog,
                        const EinsoraCapacity *capacity, const EinsoraUsage *usage)
{
    guint first = 0;

    return place(workload, catalog, capacity, usage, &first);
}

EinsoraPlacementResult *
einsora_placement_place_from(const EinsoraWorkload *workload, EinsoraCatalog *catalog,
                             const EinsoraCapacity *capacity, const EinsoraUsage *usage,
                             guint *first)
{
    g_return_val_if_fail(first != NULL, NULL);
    return place(workload, catalog, capacity, usage, first);
}
