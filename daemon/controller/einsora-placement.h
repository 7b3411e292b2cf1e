/* Placement: the one place that decides where a workload runs. Pure
 * functions of the workload, the catalog, what the backend can run and
 * what the store says is held; table-driven tests in
 * tests/einsora-placement-test.c. */
#pragma once

#include "einsora-capacity.h"
#include "einsora-catalog.h"
#include "einsora-shortfall.h"
#include "einsora-usage.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

typedef enum {
    EINSORA_PLACEMENT_PLACED,
    /* Machines (or the cluster) could run it, but not now: too little free. */
    EINSORA_PLACEMENT_NO_CAPACITY,
    /* No online machine in its region that may host it has the class. */
    EINSORA_PLACEMENT_NO_MACHINE,
    /* Machines could host it, but none has a driver for its kind and
     * class that the trust matrix allows. */
    EINSORA_PLACEMENT_NO_DRIVER,
    /* It ran before: its disk is on a machine that is offline now. */
    EINSORA_PLACEMENT_WAITING_FOR_DISK,
} EinsoraPlacementOutcome;

typedef struct {
    EinsoraPlacementOutcome outcome;
    gchar *placed_class;
    gchar *machine_id; /* NULL on cluster backends */
    gchar *machine_name;
    gchar *driver;
    guint64 gpu_mask; /* the machine's GPUs it gets; 0: none chosen */
    /* NO_CAPACITY: what the machine closest to taking it (or the
     * cluster) lacks, for the reason; else NULL. */
    EinsoraShortfall *shortfall;
} EinsoraPlacementResult;

EinsoraPlacementResult *einsora_placement_result_new(EinsoraPlacementOutcome outcome);
void einsora_placement_result_free(EinsoraPlacementResult *result);

EinsoraPlacementResult *einsora_placement_place(const EinsoraWorkload *workload,
                                                EinsoraCatalog *catalog,
                                                const EinsoraCapacity *capacity,
                                                const EinsoraUsage *usage);
/* The same answer, looking first from machine *@first on: for a pass that
 * places many workloads of one shape (class, image, kind, tenant, region,
 * no disk held anywhere) while usage only grows, no machine before the
 * last one that took that shape can take it now. *@first (0 to start)
 * moves to the machine placed on; when nothing from there fits, the whole
 * list is looked at again, so the outcome and its figures are exactly
 * einsora_placement_place()'s. */
EinsoraPlacementResult *einsora_placement_place_from(const EinsoraWorkload *workload,
                                                     EinsoraCatalog *catalog,
                                                     const EinsoraCapacity *capacity,
                                                     const EinsoraUsage *usage, guint *first);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraPlacementResult, einsora_placement_result_free)

G_END_DECLS
