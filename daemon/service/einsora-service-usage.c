/* Usage reports: the tenant's hourly usage records (written by the
 * metering step, docs/adr/0042) summed by class, workload or day. Only
 * the caller's tenant's records are read. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"

#define HOUR_US (G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC)

static gint
compare_groups(gconstpointer a, gconstpointer b)
{
    const EinsoraUsageGroup *x = *(const EinsoraUsageGroup *const *)a;
    const EinsoraUsageGroup *y = *(const EinsoraUsageGroup *const *)b;
    gint by_name = g_strcmp0(x->name, y->name);

    return by_name != 0 ? by_name : g_strcmp0(x->key, y->key);
}

/* A day's amounts are also kept by class. */
static void
add_to_class(EinsoraUsageGroup *day, const EinsoraUsageRecord *record)
{
    EinsoraUsageGroup *class = NULL;

    if (day->classes == NULL)
        day->classes = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_group_free);
    for (guint i = 0; i < day->classes->len && class == NULL; i++) {
        EinsoraUsageGroup *candidate = g_ptr_array_index(day->classes, i);
        if (g_str_equal(candidate->key, record->gpu_class))
            class = candidate;
    }
    if (class == NULL) {
        class = einsora_usage_group_new(record->gpu_class);
        g_ptr_array_add(day->classes, class);
    }
    class->seconds += record->seconds;
    class->gpu_seconds += record->gpu_seconds;
}

/* Records are whole hours: @from_us is taken back to its hour's start and
 * @to_us on to the end of its hour; *from_hour and *to_hour say so. */
GPtrArray *
einsora_service_usage(EinsoraService *self, const char *tenant_id, gint64 from_us, gint64 to_us,
                      EinsoraUsageGrouping grouping, gint64 *from_hour_us, gint64 *to_hour_us,
                      GError **error)
{
    g_autoptr(GPtrArray) records = NULL;
    g_autoptr(GHashTable) by_key = NULL;
    g_autoptr(GPtrArray) groups = NULL;
    g_autofree gchar *from = NULL;
    g_autofree gchar *to = NULL;
    gint64 from_hour;
    gint64 to_hour;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (from_us < 0 || to_us <= from_us) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "from must come before to");
        return NULL;
    }
    if (to_us - from_us > EINSORA_USAGE_MAX_SPAN_US) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "a usage report covers at most %" G_GINT64_FORMAT " days; ask for less",
                    EINSORA_USAGE_MAX_SPAN_US / (24 * HOUR_US));
        return NULL;
    }
    from_hour = from_us - from_us % HOUR_US;
    to_hour = to_us % HOUR_US == 0 ? to_us : to_us - to_us % HOUR_US + HOUR_US;
    from = einsora_timestamp_format(from_hour);
    to = einsora_timestamp_format(to_hour);
    records = einsora_store_list_usage_records(self->store, tenant_id, from, to, error);
    if (records == NULL)
        return NULL;

    by_key = g_hash_table_new(g_str_hash, g_str_equal);
    groups = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_group_free);
    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *record = g_ptr_array_index(records, i);
        g_autofree gchar *day = g_strndup(record->hour_start, 10);
        const char *key = grouping == EINSORA_USAGE_BY_CLASS      ? record->gpu_class
                          : grouping == EINSORA_USAGE_BY_WORKLOAD ? record->workload_id
                                                                  : day;
        EinsoraUsageGroup *group = g_hash_table_lookup(by_key, key);

        if (group == NULL) {
            group = einsora_usage_group_new(key);
            if (grouping == EINSORA_USAGE_BY_WORKLOAD) {
                g_autoptr(EinsoraWorkload) workload =
                    einsora_store_get_workload(self->store, tenant_id, record->workload_id, error);
                if (workload == NULL) {
                    einsora_usage_group_free(group);
                    return NULL;
                }
                group->name = g_strdup(workload->name);
                group->kind = g_strdup(einsora_workload_kind_to_string(workload->kind));
            }
            g_hash_table_insert(by_key, group->key, group);
            g_ptr_array_add(groups, group);
        }
        group->seconds += record->seconds;
        group->gpu_seconds += record->gpu_seconds;
        if (grouping == EINSORA_USAGE_BY_DAY)
            add_to_class(group, record);
    }
    /* Classes and days by name; workloads by name, then ID. */
    g_ptr_array_sort(groups, compare_groups);
    for (guint i = 0; grouping == EINSORA_USAGE_BY_DAY && i < groups->len; i++) {
        EinsoraUsageGroup *group = g_ptr_array_index(groups, i);
        g_ptr_array_sort(group->classes, compare_groups);
    }
    if (from_hour_us != NULL)
        *from_hour_us = from_hour;
    if (to_hour_us != NULL)
        *to_hour_us = to_hour;
    return g_steal_pointer(&groups);
}
