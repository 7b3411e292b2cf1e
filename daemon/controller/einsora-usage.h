/* What the store says is held, for placement: per machine (CPUs, memory,
 * devices per class, workloads per driver) and, for cluster backends,
 * units per class. Built by the controller from workloads that hold
 * capacity, by placed class. */
#pragma once

#include "einsora-catalog.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

typedef struct {
    gint64 cpus;
    gint64 memory_mib;
    GHashTable *devices; /* class -> count (GINT_TO_POINTER) */
    GHashTable *drivers; /* driver -> workloads (GINT_TO_POINTER) */
    guint64 gpu_mask;    /* the GPUs placement chose for what it holds */
} EinsoraMachineUsage;

typedef struct {
    GHashTable *machines; /* machine ID -> EinsoraMachineUsage */
    GHashTable *units;    /* class -> units held (GINT_TO_POINTER) */
} EinsoraUsage;

EinsoraUsage *einsora_usage_new(void);
void einsora_usage_free(EinsoraUsage *usage);
/* Counts @workload, which holds capacity as @placed_class. */
void einsora_usage_add(EinsoraUsage *usage, const EinsoraWorkload *workload,
                       const EinsoraComputeClass *placed_class);
const EinsoraMachineUsage *einsora_usage_lookup_machine(const EinsoraUsage *usage,
                                                        const char *machine_id);
gint64 einsora_usage_units(const EinsoraUsage *usage, const char *gpu_class);
gint64 einsora_machine_usage_devices(const EinsoraMachineUsage *usage, const char *gpu_class);
gint64 einsora_machine_usage_driver(const EinsoraMachineUsage *usage, const char *driver);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraUsage, einsora_usage_free)

G_END_DECLS
