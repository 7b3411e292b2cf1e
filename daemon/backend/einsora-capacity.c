#define G_LOG_DOMAIN "einsora-backend"

#include "einsora-capacity.h"

#include "einsora-gpu-mask.h"

EinsoraMachineCapacity *
einsora_machine_capacity_new(const EinsoraMachine *machine)
{
    EinsoraMachineCapacity *capacity = g_new0(EinsoraMachineCapacity, 1);

    capacity->machine = einsora_machine_copy(machine);
    capacity->cpus = machine->cpus;
    capacity->memory_mib = machine->memory_mib;
    capacity->devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    capacity->gpu_masks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    capacity->drivers = g_new0(gchar *, 1);
    return capacity;
}

void
einsora_machine_capacity_free(EinsoraMachineCapacity *capacity)
{
    if (capacity == NULL)
        return;
    einsora_machine_free(capacity->machine);
    g_hash_table_unref(capacity->devices);
    g_hash_table_unref(capacity->gpu_masks);
    g_strfreev(capacity->drivers);
    g_free(capacity);
}

gint64
einsora_machine_capacity_devices(const EinsoraMachineCapacity *capacity, const char *gpu_class)
{
    return GPOINTER_TO_INT(g_hash_table_lookup(capacity->devices, gpu_class));
}

guint64
einsora_machine_capacity_gpu_mask(const EinsoraMachineCapacity *capacity, const char *gpu_class)
{
    const guint64 *mask = g_hash_table_lookup(capacity->gpu_masks, gpu_class);

    return mask != NULL ? *mask : 0;
}

void
einsora_machine_capacity_add_gpu(EinsoraMachineCapacity *capacity, const char *gpu_class,
                                 guint index)
{
    gint64 count = einsora_machine_capacity_devices(capacity, gpu_class);
    guint64 *mask = g_hash_table_lookup(capacity->gpu_masks, gpu_class);

    g_return_if_fail(index < EINSORA_GPU_MASK_BITS);
    g_hash_table_insert(capacity->devices, g_strdup(gpu_class), GINT_TO_POINTER((gint)count + 1));
    if (mask == NULL) {
        mask = g_new0(guint64, 1);
        g_hash_table_insert(capacity->gpu_masks, g_strdup(gpu_class), mask);
    }
    *mask |= G_GUINT64_CONSTANT(1) << index;
}

gboolean
einsora_machine_capacity_has_driver(const EinsoraMachineCapacity *capacity, const char *driver)
{
    return driver != NULL && g_strv_contains((const char *const *)capacity->drivers, driver);
}

EinsoraCapacity *
einsora_capacity_new_units(void)
{
    EinsoraCapacity *capacity = g_new0(EinsoraCapacity, 1);
    capacity->units = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return capacity;
}

EinsoraCapacity *
einsora_capacity_new_machines(void)
{
    EinsoraCapacity *capacity = g_new0(EinsoraCapacity, 1);
    capacity->machines =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_capacity_free);
    return capacity;
}

void
einsora_capacity_free(EinsoraCapacity *capacity)
{
    if (capacity == NULL)
        return;
    g_clear_pointer(&capacity->units, g_hash_table_unref);
    g_clear_pointer(&capacity->machines, g_ptr_array_unref);
    g_free(capacity);
}

gint64
einsora_capacity_units(const EinsoraCapacity *capacity, const char *gpu_class)
{
    if (capacity->units == NULL)
        return 0;
    return GPOINTER_TO_INT(g_hash_table_lookup(capacity->units, gpu_class));
}
