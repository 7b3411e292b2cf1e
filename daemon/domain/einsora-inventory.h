/* What a machine has, as its agent reports it: its system, CPUs, memory,
 * GPUs and drivers. Sent only when it changed. Nothing here decides policy
 * until einsora_inventory_validate() has checked it fits the machine.
 * The hub keeps the last one that fitted with the machine (as JSON);
 * einsora_inventory_read_stored() is the one reader of that copy, for
 * the hub's capacity and the API's /v1/machines alike. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-inventory-gpu.h"
#include "einsora-machine.h"

G_BEGIN_DECLS

/* The most a machine may report; the Sync protocol carries an inventory
 * within these same bounds. */
#define EINSORA_INVENTORY_MAX_GPUS 64
#define EINSORA_INVENTORY_MAX_DRIVERS 32
#define EINSORA_INVENTORY_MAX_CPUS 4096
/* 64 TiB, in MiB. */
#define EINSORA_INVENTORY_MAX_MEMORY_MIB (G_GINT64_CONSTANT(64) * 1024 * 1024)

typedef struct {
    gchar *os;   /* "linux" or "darwin" */
    gchar *arch; /* as uname -m says: "x86_64", "arm64", "aarch64" */
    gint64 cpus;
    gint64 memory_mib;
    GPtrArray *gpus; /* EinsoraInventoryGpu, owned */
    GStrv drivers;   /* driver names, never NULL */
} EinsoraInventory;

#define EINSORA_TYPE_INVENTORY (einsora_inventory_get_type())
GType einsora_inventory_get_type(void);

EinsoraInventory *einsora_inventory_new(void);
EinsoraInventory *einsora_inventory_copy(const EinsoraInventory *inventory);
void einsora_inventory_free(EinsoraInventory *inventory);

JsonNode *einsora_inventory_to_json(const EinsoraInventory *inventory);
EinsoraInventory *einsora_inventory_from_json(JsonNode *node, GError **error);

gboolean einsora_inventory_validate(const EinsoraInventory *inventory, const char *machine_os,
                                    GError **error);
gboolean einsora_inventory_read_stored(const EinsoraMachine *machine, EinsoraInventory **out,
                                       GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraInventory, einsora_inventory_free)

G_END_DECLS
