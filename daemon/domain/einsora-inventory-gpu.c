#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-inventory-gpu.h"

#include "einsora-inventory.h"
#include "einsora-json-read.h"

G_DEFINE_BOXED_TYPE(EinsoraInventoryGpu, einsora_inventory_gpu, einsora_inventory_gpu_copy,
                    einsora_inventory_gpu_free)

EinsoraInventoryGpu *
einsora_inventory_gpu_new(void)
{
    return g_new0(EinsoraInventoryGpu, 1);
}

EinsoraInventoryGpu *
einsora_inventory_gpu_copy(const EinsoraInventoryGpu *gpu)
{
    EinsoraInventoryGpu *copy = g_new0(EinsoraInventoryGpu, 1);

    *copy = *gpu;
    copy->vendor = g_strdup(gpu->vendor);
    copy->model = g_strdup(gpu->model);
    return copy;
}

void
einsora_inventory_gpu_free(EinsoraInventoryGpu *gpu)
{
    if (gpu == NULL)
        return;
    g_free(gpu->vendor);
    g_free(gpu->model);
    g_free(gpu);
}

JsonNode *
einsora_inventory_gpu_to_json(const EinsoraInventoryGpu *gpu)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "vendor", gpu->vendor);
    einsora_json_add_string(builder, "model", gpu->model);
    einsora_json_add_int(builder, "memory_mib", gpu->memory_mib);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

/* The vendor is only bounded here; einsora_inventory_validate() decides
 * which vendors a machine may report. */
EinsoraInventoryGpu *
einsora_inventory_gpu_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {"vendor", "model", "memory_mib", NULL};
    g_autoptr(EinsoraInventoryGpu) gpu = einsora_inventory_gpu_new();
    JsonObject *object;

    if (!einsora_json_read_object(node, "a GPU", members, &object, error) ||
        !einsora_json_read_string(object, "vendor", TRUE, &gpu->vendor, error) ||
        !einsora_json_read_string(object, "model", TRUE, &gpu->model, error) ||
        !einsora_json_read_int(object, "memory_mib", EINSORA_INVENTORY_MAX_MEMORY_MIB,
                               &gpu->memory_mib, error))
        return NULL;
    return g_steal_pointer(&gpu);
}
