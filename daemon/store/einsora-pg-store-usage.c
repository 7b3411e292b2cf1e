/* Usage accounting: the hourly usage records the metering step writes and
 * the cursor that says how far through the timeline it got
 * (docs/adr/0042). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns usage_record_from_row reads, in its order. */
#define USAGE_COLUMNS                                                                              \
    "id, tenant_id, workload_id, region, gpu_class, hour_start, seconds, gpu_seconds, created_at"

static EinsoraUsageRecord *
usage_record_from_row(const PGresult *res, int row)
{
    EinsoraUsageRecord *record = einsora_usage_record_new();

    record->id = pg_column_strdup(res, row, 0);
    record->tenant_id = pg_column_strdup(res, row, 1);
    record->workload_id = pg_column_strdup(res, row, 2);
    record->region = pg_column_strdup(res, row, 3);
    record->gpu_class = pg_column_strdup(res, row, 4);
    record->hour_start = pg_column_strdup(res, row, 5);
    record->seconds = pg_column_int64(res, row, 6);
    record->gpu_seconds = pg_column_int64(res, row, 7);
    record->created_at = pg_column_strdup(res, row, 8);
    return record;
}

static gchar *
record_key(const char *gpu_class, const char *hour_start)
{
    return g_strdup_printf("%s\n%s", gpu_class, hour_start);
}

/* The workload's stored (class, hour) keys. */
static GHashTable *
stored_keys(EinsoraPgStore *self, const char *tenant_id, const char *workload_id, GError **error)
{
    const char *const params[] = {tenant_id, workload_id};
    g_autoptr(PGresult) res = einsora_pg_store_query(self,
                                                     "SELECT gpu_class, hour_start FROM "
                                                     "usage_records "
                                                     "WHERE tenant_id = $1 AND workload_id = $2",
                                                     G_N_ELEMENTS(params), params, error);
    GHashTable *keys;

    if (res == NULL)
        return NULL;
    keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int i = 0; i < PQntuples(res); i++)
        g_hash_table_add(keys, record_key(pg_column_text(res, i, 0), pg_column_text(res, i, 1)));
    return keys;
}

gboolean
einsora_pg_store_replace_usage_records(EinsoraStore *store, const char *tenant_id,
                                       const char *workload_id, GPtrArray *records, GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autoptr(GHashTable) gone = NULL;
    gboolean exists = FALSE;
    GHashTableIter iter;
    gpointer key;

    if (!einsora_pg_store_workload_exists(self, tenant_id, workload_id, &exists, error))
        return FALSE;
    if (!exists) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return FALSE;
    }
    gone = stored_keys(self, tenant_id, workload_id, error);
    if (gone == NULL)
        return FALSE;

    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *record = g_ptr_array_index(records, i);
        g_autofree gchar *this_key = record_key(record->gpu_class, record->hour_start);
        g_autofree gchar *seconds = pg_int64_param(record->seconds);
        g_autofree gchar *gpu_seconds = pg_int64_param(record->gpu_seconds);
        const char *const params[] = {record->id,     tenant_id,         workload_id,
                                      record->region, record->gpu_class, record->hour_start,
                                      seconds,        gpu_seconds,       record->created_at};

        /* The row keeps its ID and created_at; an unchanged one is not
         * written at all. */
        if (!einsora_pg_store_write(
                self,
                "INSERT INTO usage_records (" USAGE_COLUMNS ") "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
                "ON CONFLICT (workload_id, gpu_class, hour_start) DO UPDATE SET "
                "region = excluded.region, seconds = excluded.seconds, "
                "gpu_seconds = excluded.gpu_seconds "
                "WHERE usage_records.region IS DISTINCT FROM excluded.region "
                "OR usage_records.seconds IS DISTINCT FROM excluded.seconds "
                "OR usage_records.gpu_seconds IS DISTINCT FROM excluded.gpu_seconds",
                G_N_ELEMENTS(params), params, "a usage record with this ID exists",
                "no such workload", NULL, error))
            return FALSE;
        g_hash_table_remove(gone, this_key);
    }

    /* What the timeline no longer supports (an hour counted up to a pass
     * that a later event's time came before). */
    g_hash_table_iter_init(&iter, gone);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        g_auto(GStrv) parts = g_strsplit(key, "\n", 2);
        const char *const params[] = {tenant_id, workload_id, parts[0], parts[1]};

        if (!einsora_pg_store_write(self,
                                    "DELETE FROM usage_records WHERE tenant_id = $1 "
                                    "AND workload_id = $2 AND gpu_class = $3 AND hour_start = $4",
                                    G_N_ELEMENTS(params), params, NULL, NULL, NULL, error))
            return FALSE;
    }
    return TRUE;
}

GPtrArray *
einsora_pg_store_list_usage_records(EinsoraStore *store, const char *tenant_id, const char *from,
                                    const char *to, GError **error)
{
    const char *const params[] = {tenant_id, from, to};
    /* The index on (tenant_id, hour_start) serves the tenant; the hours
     * compare, and the rows sort, in byte order as SQLite's do. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT " USAGE_COLUMNS " FROM usage_records "
        "WHERE tenant_id = $1 AND hour_start COLLATE \"C\" >= $2 "
        "AND hour_start COLLATE \"C\" < $3 "
        "ORDER BY hour_start COLLATE \"C\", workload_id COLLATE \"C\", gpu_class COLLATE \"C\"",
        G_N_ELEMENTS(params), params, error);
    GPtrArray *records;

    if (res == NULL)
        return NULL;
    records = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_record_free);
    for (int i = 0; i < PQntuples(res); i++)
        g_ptr_array_add(records, usage_record_from_row(res, i));
    return records;
}

gboolean
einsora_pg_store_get_metering_cursor(EinsoraStore *store, const char *name, gint64 *last_seq,
                                     GError **error)
{
    const char *const params[] = {name};
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store), "SELECT last_seq FROM metering_cursors WHERE name = $1",
        G_N_ELEMENTS(params), params, error);

    if (res == NULL)
        return FALSE;
    /* No row: the timeline's start. */
    *last_seq = PQntuples(res) > 0 ? pg_column_int64(res, 0, 0) : 0;
    return TRUE;
}

gboolean
einsora_pg_store_set_metering_cursor(EinsoraStore *store, const char *name, gint64 last_seq,
                                     const char *updated_at, GError **error)
{
    g_autofree gchar *last_seq_text = pg_int64_param(last_seq);
    const char *const params[] = {name, last_seq_text, updated_at};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO metering_cursors (name, last_seq, updated_at) "
                                  "VALUES ($1, $2, $3) "
                                  "ON CONFLICT (name) DO UPDATE SET last_seq = excluded.last_seq, "
                                  "updated_at = excluded.updated_at",
                                  G_N_ELEMENTS(params), params, NULL, NULL, NULL, error);
}
