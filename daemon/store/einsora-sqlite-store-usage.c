/* Usage accounting: the hourly usage records the metering step writes and
 * the cursor that says how far through the timeline it got
 * (docs/adr/0042). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns usage_record_from_row reads, in its order. */
#define USAGE_COLUMNS                                                                              \
    "id, tenant_id, workload_id, region, gpu_class, hour_start, seconds, gpu_seconds, created_at"

static EinsoraUsageRecord *
usage_record_from_row(sqlite3_stmt *stmt)
{
    EinsoraUsageRecord *record = einsora_usage_record_new();

    record->id = column_strdup(stmt, 0);
    record->tenant_id = column_strdup(stmt, 1);
    record->workload_id = column_strdup(stmt, 2);
    record->region = column_strdup(stmt, 3);
    record->gpu_class = column_strdup(stmt, 4);
    record->hour_start = column_strdup(stmt, 5);
    record->seconds = sqlite3_column_int64(stmt, 6);
    record->gpu_seconds = sqlite3_column_int64(stmt, 7);
    record->created_at = column_strdup(stmt, 8);
    return record;
}

static gchar *
record_key(const char *gpu_class, const char *hour_start)
{
    return g_strdup_printf("%s\n%s", gpu_class, hour_start);
}

/* The workload's stored (class, hour) keys. */
static GHashTable *
stored_keys(EinsoraSqliteStore *self, const char *tenant_id, const char *workload_id,
            GError **error)
{
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT gpu_class, hour_start FROM usage_records "
                                           "WHERE tenant_id = ?1 AND workload_id = ?2",
                                           error);
    g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_hash_table_add(keys, record_key((const char *)sqlite3_column_text(stmt, 0),
                                          (const char *)sqlite3_column_text(stmt, 1)));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&keys);
}

gboolean
einsora_sqlite_store_replace_usage_records(EinsoraStore *store, const char *tenant_id,
                                           const char *workload_id, GPtrArray *records,
                                           GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(GHashTable) gone = NULL;
    gboolean exists = FALSE;
    GHashTableIter iter;
    gpointer key;

    if (!einsora_sqlite_store_workload_exists(self, tenant_id, workload_id, &exists, error))
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
        /* The row keeps its ID and created_at; an unchanged one is not
         * written at all. */
        g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached_write(
            self,
            "INSERT INTO usage_records (" USAGE_COLUMNS ") "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
            "ON CONFLICT (workload_id, gpu_class, hour_start) DO UPDATE SET "
            "region = excluded.region, seconds = excluded.seconds, "
            "gpu_seconds = excluded.gpu_seconds "
            "WHERE usage_records.region IS NOT excluded.region "
            "OR usage_records.seconds IS NOT excluded.seconds "
            "OR usage_records.gpu_seconds IS NOT excluded.gpu_seconds",
            error);

        if (stmt == NULL)
            return FALSE;
        bind_text(stmt, 1, record->id);
        bind_text(stmt, 2, tenant_id);
        bind_text(stmt, 3, workload_id);
        bind_text(stmt, 4, record->region);
        bind_text(stmt, 5, record->gpu_class);
        bind_text(stmt, 6, record->hour_start);
        sqlite3_bind_int64(stmt, 7, record->seconds);
        sqlite3_bind_int64(stmt, 8, record->gpu_seconds);
        bind_text(stmt, 9, record->created_at);
        if (!einsora_sqlite_store_step_write(self, stmt, "a usage record with this ID exists",
                                             "no such workload", error))
            return FALSE;
        g_hash_table_remove(gone, this_key);
    }

    /* What the timeline no longer supports (an hour counted up to a pass
     * that a later event's time came before). */
    g_hash_table_iter_init(&iter, gone);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        g_auto(GStrv) parts = g_strsplit(key, "\n", 2);
        g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached_write(
            self,
            "DELETE FROM usage_records WHERE tenant_id = ?1 AND workload_id = ?2 "
            "AND gpu_class = ?3 AND hour_start = ?4",
            error);

        if (stmt == NULL)
            return FALSE;
        bind_text(stmt, 1, tenant_id);
        bind_text(stmt, 2, workload_id);
        bind_text(stmt, 3, parts[0]);
        bind_text(stmt, 4, parts[1]);
        if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
            return FALSE;
    }
    return TRUE;
}

GPtrArray *
einsora_sqlite_store_list_usage_records(EinsoraStore *store, const char *tenant_id,
                                        const char *from, const char *to, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* The index on (tenant_id, hour_start) serves the filter and the
     * first key of the order. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self,
                "SELECT " USAGE_COLUMNS " FROM usage_records "
                "WHERE tenant_id = ?1 AND hour_start >= ?2 AND hour_start < ?3 "
                "ORDER BY hour_start, workload_id, gpu_class",
                error);
    g_autoptr(GPtrArray) records =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_record_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, from);
    bind_text(stmt, 3, to);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(records, usage_record_from_row(stmt));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&records);
}

gboolean
einsora_sqlite_store_get_metering_cursor(EinsoraStore *store, const char *name, gint64 *last_seq,
                                         GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT last_seq FROM metering_cursors WHERE name = ?1", error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, name);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        *last_seq = sqlite3_column_int64(stmt, 0);
        return TRUE;
    }
    if (rc != SQLITE_DONE)
        return set_sqlite_error(self, error);
    *last_seq = 0;
    return TRUE;
}

gboolean
einsora_sqlite_store_set_metering_cursor(EinsoraStore *store, const char *name, gint64 last_seq,
                                         const char *updated_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO metering_cursors (name, last_seq, updated_at) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (name) DO UPDATE SET last_seq = excluded.last_seq, "
        "updated_at = excluded.updated_at",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, name);
    sqlite3_bind_int64(stmt, 2, last_seq);
    bind_text(stmt, 3, updated_at);
    return einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error);
}
