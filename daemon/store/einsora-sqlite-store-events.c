/* The timeline: each workload's events, and the tenant's change feed. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns event_from_row reads, in its order. */
#define EVENT_INSERT_COLUMNS                                                                       \
    "id, tenant_id, workload_id, from_state, to_state, reason, attempt, created_at, placed_class"
/* seq is the store's to give: read back, never inserted. */
#define EVENT_COLUMNS EVENT_INSERT_COLUMNS ", seq"

static EinsoraWorkloadEvent *
event_from_row(sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();

    event->id = column_strdup(stmt, 0);
    event->tenant_id = column_strdup(stmt, 1);
    event->workload_id = column_strdup(stmt, 2);
    event->has_from_state = sqlite3_column_type(stmt, 3) != SQLITE_NULL;
    if (event->has_from_state &&
        !einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 3),
                                            &event->from_state)) {
        invalid_row("workload_events", "from_state", error);
        return NULL;
    }
    if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 4),
                                            &event->to_state)) {
        invalid_row("workload_events", "to_state", error);
        return NULL;
    }
    event->reason = column_strdup(stmt, 5);
    event->attempt = sqlite3_column_int64(stmt, 6);
    event->created_at = column_strdup(stmt, 7);
    event->placed_class = column_strdup(stmt, 8);
    event->seq = sqlite3_column_int64(stmt, 9);
    return g_steal_pointer(&event);
}

gboolean
einsora_sqlite_store_append_event(EinsoraStore *store, const EinsoraWorkloadEvent *event,
                                  GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached_write(
        self,
        "INSERT INTO workload_events (" EVENT_INSERT_COLUMNS ") "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, event->id);
    bind_text(stmt, 2, event->tenant_id);
    bind_text(stmt, 3, event->workload_id);
    bind_text(stmt, 4,
              event->has_from_state ? einsora_workload_state_to_string(event->from_state) : NULL);
    bind_text(stmt, 5, einsora_workload_state_to_string(event->to_state));
    bind_text(stmt, 6, event->reason);
    sqlite3_bind_int64(stmt, 7, event->attempt);
    bind_text(stmt, 8, event->created_at);
    bind_text(stmt, 9, event->placed_class);
    /* The foreign key is (tenant_id, workload_id): another tenant's
     * workload is not found. */
    return einsora_sqlite_store_step_write(self, stmt, "an event with this ID already exists",
                                           "no such workload", error);
}

GPtrArray *
einsora_sqlite_store_list_events(EinsoraStore *store, const char *tenant_id,
                                 const char *workload_id, gint64 after_seq, guint limit,
                                 GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " EVENT_COLUMNS " FROM workload_events "
                                           "WHERE tenant_id = ?1 AND workload_id = ?2 "
                                           "AND seq > ?3 ORDER BY seq LIMIT ?4",
                                           error);
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    gboolean exists = FALSE;
    int rc;

    if (stmt == NULL)
        return NULL;
    /* An empty list would say the workload exists. */
    if (!einsora_sqlite_store_workload_exists(self, tenant_id, workload_id, &exists, error))
        return NULL;
    if (!exists) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    sqlite3_bind_int64(stmt, 3, after_seq);
    sqlite3_bind_int64(stmt, 4, limit);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadEvent *event = event_from_row(stmt, error);
        if (event == NULL)
            return NULL;
        g_ptr_array_add(events, event);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&events);
}

GPtrArray *
einsora_sqlite_store_list_tenant_events(EinsoraStore *store, const char *tenant_id,
                                        gint64 after_seq, guint limit, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* The index on (tenant_id, seq) serves both the filter and the order. */
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " EVENT_COLUMNS " FROM workload_events "
                                           "WHERE tenant_id = ?1 AND seq > ?2 "
                                           "ORDER BY seq LIMIT ?3",
                                           error);
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    sqlite3_bind_int64(stmt, 2, after_seq);
    sqlite3_bind_int64(stmt, 3, limit);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadEvent *event = event_from_row(stmt, error);
        if (event == NULL)
            return NULL;
        g_ptr_array_add(events, event);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&events);
}

gboolean
einsora_sqlite_store_last_event_seq(EinsoraStore *store, const char *tenant_id, gint64 *seq,
                                    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT coalesce(max(seq), 0) FROM workload_events WHERE tenant_id = ?1", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return set_sqlite_error(self, error);
    *seq = sqlite3_column_int64(stmt, 0);
    return TRUE;
}
