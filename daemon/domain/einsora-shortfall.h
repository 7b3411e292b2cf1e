/* What a workload waiting for capacity is short of, and by how much, on
 * the machine (or cluster) closest to taking it. Placement measures it;
 * the reason says it, with figures to trusted tenants only. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    EINSORA_SHORTFALL_GPUS = 1 << 0, /* the class's GPUs */
    EINSORA_SHORTFALL_CPUS = 1 << 1,
    EINSORA_SHORTFALL_MEMORY = 1 << 2,
    /* A cluster's units of a CPU class (a GPU class's units are GPUs). */
    EINSORA_SHORTFALL_UNITS = 1 << 3,
    /* Workloads its driver may run on the machine at once. */
    EINSORA_SHORTFALL_DRIVER = 1 << 4,
} EinsoraShortfallKind;

typedef struct {
    gint64 requested;
    gint64 free; /* never below 0 */
} EinsoraShortfallAmount;

typedef struct {
    guint short_of; /* EinsoraShortfallKind bits; 0: nothing known */
    EinsoraShortfallAmount gpus;
    EinsoraShortfallAmount cpus;
    EinsoraShortfallAmount memory_mib;
    EinsoraShortfallAmount units;
    EinsoraShortfallAmount driver_slots;
    gchar *driver;       /* DRIVER: the one at its limit */
    gint64 driver_limit; /* DRIVER: per machine */
} EinsoraShortfall;

EinsoraShortfall *einsora_shortfall_new(void);
EinsoraShortfall *einsora_shortfall_copy(const EinsoraShortfall *shortfall);
void einsora_shortfall_free(EinsoraShortfall *shortfall);
/* Records what @kind asks for and has free, marking it short when
 * @free is less. */
void einsora_shortfall_measure(EinsoraShortfall *shortfall, EinsoraShortfallKind kind,
                               gint64 requested, gint64 free);
/* The amount @kind's figures are kept in. */
const EinsoraShortfallAmount *einsora_shortfall_amount(const EinsoraShortfall *shortfall,
                                                       EinsoraShortfallKind kind);
/* How many kinds it is short of. */
guint einsora_shortfall_count(const EinsoraShortfall *shortfall);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraShortfall, einsora_shortfall_free)

G_END_DECLS
