#define G_LOG_DOMAIN "einsora-metering"

#include "einsora-metered-interval.h"

#include "einsora-timestamp.h"
#include "einsora-workload-event.h"

void
einsora_metered_interval_free(EinsoraMeteredInterval *interval)
{
    if (interval == NULL)
        return;
    g_free(interval->placed_class);
    g_free(interval);
}

static void
close_interval(GPtrArray *intervals, EinsoraMeteredInterval **open, gint64 end_s)
{
    EinsoraMeteredInterval *interval = g_steal_pointer(open);

    interval->end_s = MAX(end_s, interval->start_s);
    /* An interval of no whole second counts nothing. */
    if (interval->end_s > interval->start_s)
        g_ptr_array_add(intervals, interval);
    else
        einsora_metered_interval_free(interval);
}

GPtrArray *
einsora_metered_intervals_from_events(GPtrArray *events, const char *fallback_class, gint64 now_us,
                                      GError **error)
{
    g_autoptr(GPtrArray) intervals =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_metered_interval_free);
    g_autoptr(EinsoraMeteredInterval) open = NULL;
    gint64 last_s = G_MININT64;

    g_return_val_if_fail(events != NULL, NULL);

    for (guint i = 0; i < events->len; i++) {
        const EinsoraWorkloadEvent *event = g_ptr_array_index(events, i);
        const char *klass = event->placed_class != NULL ? event->placed_class : fallback_class;
        gboolean metered = einsora_workload_state_metered(event->to_state);
        gint64 at_us = 0;
        gint64 at_s;

        /* Notes change nothing (the seeds: ignored by usage accounting). */
        if (einsora_workload_event_is_note(event))
            continue;
        if (!einsora_timestamp_parse(event->created_at, &at_us, error)) {
            g_prefix_error(error, "event %" G_GINT64_FORMAT " of workload %s: ", event->seq,
                           event->workload_id);
            return NULL;
        }
        at_s = MAX(at_us / G_USEC_PER_SEC, last_s);
        last_s = at_s;

        if (open != NULL && (!metered || g_strcmp0(open->placed_class, klass) != 0))
            close_interval(intervals, &open, at_s);
        if (metered && open == NULL && klass != NULL) {
            open = g_new0(EinsoraMeteredInterval, 1);
            open->placed_class = g_strdup(klass);
            open->start_s = at_s;
        }
    }
    if (open != NULL)
        close_interval(intervals, &open, now_us / G_USEC_PER_SEC);
    return g_steal_pointer(&intervals);
}

typedef struct {
    const char *placed_class; /* borrowed from the interval */
    gint64 hour_s;
    gint64 seconds;
} HourBucket;

static gint
compare_buckets(gconstpointer a, gconstpointer b)
{
    const HourBucket *x = *(const HourBucket *const *)a;
    const HourBucket *y = *(const HourBucket *const *)b;

    if (x->hour_s != y->hour_s)
        return x->hour_s < y->hour_s ? -1 : 1;
    return g_strcmp0(x->placed_class, y->placed_class);
}

GPtrArray *
einsora_metered_intervals_to_hours(const EinsoraWorkload *workload, GPtrArray *intervals,
                                   EinsoraClassDevicesFunc devices, gpointer devices_data)
{
    g_autoptr(GHashTable) by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GPtrArray) buckets = g_ptr_array_new();
    GPtrArray *records = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_record_free);

    for (guint i = 0; i < intervals->len; i++) {
        const EinsoraMeteredInterval *interval = g_ptr_array_index(intervals, i);
        gint64 hour_s = interval->start_s - interval->start_s % EINSORA_USAGE_HOUR_SECONDS;

        for (; hour_s < interval->end_s; hour_s += EINSORA_USAGE_HOUR_SECONDS) {
            gint64 from = MAX(interval->start_s, hour_s);
            gint64 to = MIN(interval->end_s, hour_s + EINSORA_USAGE_HOUR_SECONDS);
            g_autofree gchar *key =
                g_strdup_printf("%s\n%" G_GINT64_FORMAT, interval->placed_class, hour_s);
            HourBucket *bucket = g_hash_table_lookup(by_key, key);

            if (bucket == NULL) {
                bucket = g_new0(HourBucket, 1);
                bucket->placed_class = interval->placed_class;
                bucket->hour_s = hour_s;
                g_hash_table_insert(by_key, g_steal_pointer(&key), bucket);
                g_ptr_array_add(buckets, bucket);
            }
            bucket->seconds += to - from;
        }
    }
    g_ptr_array_sort(buckets, compare_buckets);
    for (guint i = 0; i < buckets->len; i++) {
        const HourBucket *bucket = g_ptr_array_index(buckets, i);
        EinsoraUsageRecord *record = einsora_usage_record_new();
        gint64 units = devices != NULL ? devices(bucket->placed_class, devices_data) : 0;

        record->tenant_id = g_strdup(workload->tenant_id);
        record->workload_id = g_strdup(workload->id);
        record->region = g_strdup(workload->region);
        record->gpu_class = g_strdup(bucket->placed_class);
        record->hour_start = einsora_timestamp_format(bucket->hour_s * G_USEC_PER_SEC);
        record->seconds = bucket->seconds;
        record->gpu_seconds = bucket->seconds * MAX(units, 0);
        g_ptr_array_add(records, record);
    }
    return records;
}
