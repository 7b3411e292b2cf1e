#define G_LOG_DOMAIN "einsora-controller"

#include "einsora-usage.h"

static void
machine_usage_free(EinsoraMachineUsage *usage)
{
    g_hash_table_unref(usage->devices);
    g_hash_table_unref(usage->drivers);
    g_free(usage);
}

EinsoraUsage *
einsora_usage_new(void)
{
    EinsoraUsage *usage = g_new0(EinsoraUsage, 1);

    usage->machines =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)machine_usage_free);
    usage->units = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return usage;
}

void
einsora_usage_free(EinsoraUsage *usage)
{
    if (usage == NULL)
        return;
    g_hash_table_unref(usage->machines);
    g_hash_table_unref(usage->units);
    g_free(usage);
}

static void
add_count(GHashTable *table, const char *key, gint64 count)
{
    gint64 now = GPOINTER_TO_INT(g_hash_table_lookup(table, key));
    g_hash_table_insert(table, g_strdup(key), GINT_TO_POINTER((gint)(now + count)));
}

void
einsora_usage_add(EinsoraUsage *usage, const EinsoraWorkload *workload,
                  const EinsoraComputeClass *placed_class)
{
    EinsoraMachineUsage *machine;

    /* A cluster counts units of the class; a GPU class's unit is a device. */
    add_count(usage->units, placed_class->name,
              placed_class->devices > 0 ? placed_class->devices : 1);
    if (workload->machine_id == NULL)
        return;
    machine = g_hash_table_lookup(usage->machines, workload->machine_id);
    if (machine == NULL) {
        machine = g_new0(EinsoraMachineUsage, 1);
        machine->devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        machine->drivers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_insert(usage->machines, g_strdup(workload->machine_id), machine);
    }
    machine->cpus += placed_class->cpus;
    machine->memory_mib += placed_class->memory_mib;
    if (placed_class->devices > 0)
        add_count(machine->devices, placed_class->name, placed_class->devices);
    if (workload->driver != NULL)
        add_count(machine->drivers, workload->driver, 1);
    machine->gpu_mask |= workload->gpu_mask;
}

const EinsoraMachineUsage *
einsora_usage_lookup_machine(const EinsoraUsage *usage, const char *machine_id)
{
    return machine_id != NULL ? g_hash_table_lookup(usage->machines, machine_id) : NULL;
}

gint64
einsora_usage_units(const EinsoraUsage *usage, const char *gpu_class)
{
    return GPOINTER_TO_INT(g_hash_table_lookup(usage->units, gpu_class));
}

gint64
einsora_machine_usage_devices(const EinsoraMachineUsage *usage, const char *gpu_class)
{
    return usage != NULL ? GPOINTER_TO_INT(g_hash_table_lookup(usage->devices, gpu_class)) : 0;
}

gint64
einsora_machine_usage_driver(const EinsoraMachineUsage *usage, const char *driver)
{
    return usage != NULL ? GPOINTER_TO_INT(g_hash_table_lookup(usage->drivers, driver)) : 0;
}
