/* The metering step (docs/adr/0042): turns the timeline into hourly usage
 * records. Each pass re-meters every workload that has an event it has
 * not read yet or that is in a metered state now, from the workload's
 * whole timeline, and replaces that workload's records with the result,
 * in one transaction with the cursor's move. So a pass is idempotent, a
 * restarted daemon (or one whose metering was down) writes what an
 * uninterrupted one would have, and an interval still open is counted up
 * to the pass's "now" and re-written by the next. No money anywhere. */
#pragma once

#include "einsora-catalog.h"
#include "einsora-store.h"
#include "einsora-timestamp.h"

G_BEGIN_DECLS

/* The cursor's name in the store: one metering step for the store. */
#define EINSORA_METER_CURSOR "usage"
#define EINSORA_METER_INTERVAL_DEFAULT_US (G_GINT64_CONSTANT(60) * G_USEC_PER_SEC)

#define EINSORA_TYPE_METER (einsora_meter_get_type())
G_DECLARE_FINAL_TYPE(EinsoraMeter, einsora_meter, EINSORA, METER, GObject)

/* @catalog: how many devices each class holds, for gpu_seconds. */
EinsoraMeter *einsora_meter_new(EinsoraStore *store, EinsoraCatalog *catalog, EinsoraNowFunc now,
                                gpointer now_data);

/* One pass. Fails (and writes nothing) only when the store can't be read
 * or written, or holds a time it can't read. */
gboolean einsora_meter_run_once(EinsoraMeter *self, GError **error);

/* Runs a pass now and then every @interval_us on the main loop until
 * stopped; a failed pass is logged and tried again at the next. */
void einsora_meter_start(EinsoraMeter *self, gint64 interval_us);
void einsora_meter_stop(EinsoraMeter *self);

/* Passes that completed since it was made (tests count them). */
guint64 einsora_meter_count_passes(EinsoraMeter *self);

G_END_DECLS
