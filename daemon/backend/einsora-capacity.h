/* What a backend can run now. A cluster backend (Kubernetes, the fake)
 * reports units per class and picks nodes itself; the agent backend (the
 * hub) reports the machines connected now, and the controller picks the
 * machine and driver. Either way the controller subtracts what the store
 * says is held. */
#pragma once

#include <glib-object.h>

#include "einsora-machine.h"

G_BEGIN_DECLS

typedef struct {
    EinsoraMachine *machine;
    gboolean online;     /* synced in the last 45 s */
    gint64 cpus;         /* schedulable CPUs */
    gint64 memory_mib;   /* schedulable memory */
    GHashTable *devices; /* class name -> device count (GINT_TO_POINTER) */
    /* class name -> which GPUs (guint64 *, einsora-gpu-mask.h), for
     * backends that know them (the hub, from the inventory); a class
     * with a count and no mask is placed by count only. */
    GHashTable *gpu_masks;
    GStrv drivers; /* drivers that work on this machine */
} EinsoraMachineCapacity;

typedef struct {
    /* Right after a restart, until the machines have reconnected: nothing
     * may be admitted. */
    gboolean settling;
    /* Cluster backends: class name -> units (GINT_TO_POINTER); else NULL. */
    GHashTable *units;
    /* Machine backends: EinsoraMachineCapacity; else NULL. */
    GPtrArray *machines;
} EinsoraCapacity;

EinsoraMachineCapacity *einsora_machine_capacity_new(const EinsoraMachine *machine);
void einsora_machine_capacity_free(EinsoraMachineCapacity *capacity);
gint64 einsora_machine_capacity_devices(const EinsoraMachineCapacity *capacity,
                                        const char *gpu_class);
guint64 einsora_machine_capacity_gpu_mask(const EinsoraMachineCapacity *capacity,
                                          const char *gpu_class);
/* Counts the inventory's GPU @index as one of @gpu_class's. */
void einsora_machine_capacity_add_gpu(EinsoraMachineCapacity *capacity, const char *gpu_class,
                                      guint index);
gboolean einsora_machine_capacity_has_driver(const EinsoraMachineCapacity *capacity,
                                             const char *driver);

EinsoraCapacity *einsora_capacity_new_units(void);
EinsoraCapacity *einsora_capacity_new_machines(void);
void einsora_capacity_free(EinsoraCapacity *capacity);
gint64 einsora_capacity_units(const EinsoraCapacity *capacity, const char *gpu_class);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraMachineCapacity, einsora_machine_capacity_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraCapacity, einsora_capacity_free)

G_END_DECLS
