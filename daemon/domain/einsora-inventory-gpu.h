/* One GPU in a machine's inventory, as its agent reports it. Whether it
 * fits the machine is einsora_inventory_validate()'s to say. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef struct {
    gchar *vendor; /* "nvidia", "amd" or "apple" */
    gchar *model;
    gint64 memory_mib;
} EinsoraInventoryGpu;

#define EINSORA_TYPE_INVENTORY_GPU (einsora_inventory_gpu_get_type())
GType einsora_inventory_gpu_get_type(void);

EinsoraInventoryGpu *einsora_inventory_gpu_new(void);
EinsoraInventoryGpu *einsora_inventory_gpu_copy(const EinsoraInventoryGpu *gpu);
void einsora_inventory_gpu_free(EinsoraInventoryGpu *gpu);

JsonNode *einsora_inventory_gpu_to_json(const EinsoraInventoryGpu *gpu);
EinsoraInventoryGpu *einsora_inventory_gpu_from_json(JsonNode *node, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraInventoryGpu, einsora_inventory_gpu_free)

G_END_DECLS
