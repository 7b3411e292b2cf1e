#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-usage-record.h"

G_DEFINE_BOXED_TYPE(EinsoraUsageRecord, einsora_usage_record, einsora_usage_record_copy,
                    einsora_usage_record_free)

EinsoraUsageRecord *
einsora_usage_record_new(void)
{
    return g_new0(EinsoraUsageRecord, 1);
}

EinsoraUsageRecord *
einsora_usage_record_copy(const EinsoraUsageRecord *record)
{
    EinsoraUsageRecord *copy = g_new0(EinsoraUsageRecord, 1);

    copy->id = g_strdup(record->id);
    copy->tenant_id = g_strdup(record->tenant_id);
    copy->workload_id = g_strdup(record->workload_id);
    copy->region = g_strdup(record->region);
    copy->gpu_class = g_strdup(record->gpu_class);
    copy->hour_start = g_strdup(record->hour_start);
    copy->seconds = record->seconds;
    copy->gpu_seconds = record->gpu_seconds;
    copy->created_at = g_strdup(record->created_at);
    return copy;
}

void
einsora_usage_record_free(EinsoraUsageRecord *record)
{
    if (record == NULL)
        return;
    g_free(record->id);
    g_free(record->tenant_id);
    g_free(record->workload_id);
    g_free(record->region);
    g_free(record->gpu_class);
    g_free(record->hour_start);
    g_free(record->created_at);
    g_free(record);
}
