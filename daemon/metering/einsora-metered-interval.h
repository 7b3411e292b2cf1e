/* Metering's pure part (docs/adr/0042): one workload's timeline ->
 * the intervals it spent in metered states, by placed class -> its hourly
 * usage records. No store, no clock: "now" is a parameter, so tests drive
 * it and a re-run over the same events gives the same answer. */
#pragma once

#include <glib-object.h>

#include "einsora-usage-record.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

/* [start_s, end_s) in whole seconds since the Unix epoch: event times are
 * truncated to the second, so that hours add up exactly. */
typedef struct {
    gchar *placed_class;
    gint64 start_s;
    gint64 end_s;
} EinsoraMeteredInterval;

void einsora_metered_interval_free(EinsoraMeteredInterval *interval);

/* @events: one workload's whole timeline (EinsoraWorkloadEvent), in seq
 * order. An interval opens at the event that moves the workload into a
 * metered state and closes at the one that moves it out (or onto another
 * class), at those events' times, whenever the metering step reads them;
 * notes are skipped. One still open is counted up to @now_us. An event
 * that doesn't name its class (written before the store recorded it)
 * counts as @fallback_class. A time earlier than the one before it counts
 * as that one, so intervals never overlap and nothing is counted twice.
 * Returns EinsoraMeteredInterval in time order; an unreadable time is an
 * error. */
GPtrArray *einsora_metered_intervals_from_events(GPtrArray *events, const char *fallback_class,
                                                 gint64 now_us, GError **error);

/* How many devices @gpu_class holds, for gpu_seconds. */
typedef gint64 (*EinsoraClassDevicesFunc)(const char *gpu_class, gpointer user_data);

/* Splits @intervals of @workload at UTC hour boundaries and sums them per
 * class and hour: EinsoraUsageRecord (without id and created_at, which
 * the writer gives) by hour, then class; an hour with no time in it has
 * no record. */
GPtrArray *einsora_metered_intervals_to_hours(const EinsoraWorkload *workload, GPtrArray *intervals,
                                              EinsoraClassDevicesFunc devices,
                                              gpointer devices_data);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraMeteredInterval, einsora_metered_interval_free)

G_END_DECLS
