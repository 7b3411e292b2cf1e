/* One hour of one workload's usage on one class: how many seconds of
 * that hour it spent in a metered state (einsora_workload_state_metered()),
 * written by the metering step (docs/adr/0042). Usage, never money. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define EINSORA_USAGE_HOUR_SECONDS 3600

typedef struct {
    gchar *id; /* the store's: kept when a pass re-writes the record */
    gchar *tenant_id;
    gchar *workload_id;
    gchar *region;
    gchar *gpu_class;  /* the placed class: what actually ran */
    gchar *hour_start; /* a UTC hour, as a store timestamp */
    gint64 seconds;    /* 1..3600 */
    /* seconds × the devices its class holds (0 for CPU classes), so that
     * GPU time adds up across classes. */
    gint64 gpu_seconds;
    gchar *created_at; /* when a pass first wrote it */
} EinsoraUsageRecord;

#define EINSORA_TYPE_USAGE_RECORD (einsora_usage_record_get_type())
GType einsora_usage_record_get_type(void);

EinsoraUsageRecord *einsora_usage_record_new(void);
EinsoraUsageRecord *einsora_usage_record_copy(const EinsoraUsageRecord *record);
void einsora_usage_record_free(EinsoraUsageRecord *record);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraUsageRecord, einsora_usage_record_free)

G_END_DECLS
