/* Workloads (intent, state and placement) and the controllers' leases. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include <string.h>

#include "einsora-error.h"

/* The columns workload_from_row reads, in its order. */
#define WORKLOAD_COLUMNS                                                                           \
    "id, tenant_id, kind, name, state, region, gpu_class, placed_class, image, gpus, "             \
    "machine_id, driver, attempt, version, created_by, created_at, updated_at, model, "            \
    "model_digest, gpu_mask, idle_timeout_s, fallback, fallback_after_s"

static EinsoraWorkload *
workload_from_row(sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = einsora_workload_new();

    workload->id = column_strdup(stmt, 0);
    workload->tenant_id = column_strdup(stmt, 1);
    if (!einsora_workload_kind_from_string((const char *)sqlite3_column_text(stmt, 2),
                                           &workload->kind)) {
        invalid_row("workloads", "kind", error);
        return NULL;
    }
    workload->name = column_strdup(stmt, 3);
    if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 4),
                                            &workload->state)) {
        invalid_row("workloads", "state", error);
        return NULL;
    }
    workload->region = column_strdup(stmt, 5);
    workload->gpu_class = column_strdup(stmt, 6);
    workload->placed_class = column_strdup(stmt, 7);
    workload->image = column_strdup(stmt, 8);
    workload->gpus = sqlite3_column_int64(stmt, 9);
    workload->machine_id = column_strdup(stmt, 10);
    workload->driver = column_strdup(stmt, 11);
    workload->attempt = sqlite3_column_int64(stmt, 12);
    workload->version = sqlite3_column_int64(stmt, 13);
    workload->created_by = column_strdup(stmt, 14);
    workload->created_at = column_strdup(stmt, 15);
    workload->updated_at = column_strdup(stmt, 16);
    workload->model = column_strdup(stmt, 17);
    workload->model_digest = column_strdup(stmt, 18);
    workload->gpu_mask = (guint64)sqlite3_column_int64(stmt, 19);
    workload->idle_timeout_s = sqlite3_column_int64(stmt, 20);
    workload->fallback = column_strdup(stmt, 21);
    workload->fallback_after_s = sqlite3_column_int64(stmt, 22);
    return g_steal_pointer(&workload);
}

gboolean
einsora_sqlite_store_workload_exists(EinsoraSqliteStore *self, const char *tenant_id,
                                     const char *workload_id, gboolean *exists, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT 1 FROM workloads WHERE tenant_id = ?1 AND id = ?2", error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return set_sqlite_error(self, error);
    *exists = rc == SQLITE_ROW;
    return TRUE;
}

gboolean
einsora_sqlite_store_count_workloads_with_model(EinsoraStore *store, const char *model,
                                                gint64 *count, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT count(*) FROM workloads WHERE model = ?1 AND state != 'deleted'", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, model);
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return set_sqlite_error(self, error);
    *count = sqlite3_column_int64(stmt, 0);
    return TRUE;
}

gboolean
einsora_sqlite_store_count_workloads(
    EinsoraStore *store, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self,
                "SELECT kind, state, count(*) FROM workloads WHERE state != 'deleted' "
                "GROUP BY kind, state",
                error);
    int step;

    if (stmt == NULL)
        return FALSE;
    memset(counts, 0, sizeof(gint64) * EINSORA_WORKLOAD_KIND_COUNT * EINSORA_WORKLOAD_STATE_COUNT);
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadKind kind;
        EinsoraWorkloadState state;

        if (!einsora_workload_kind_from_string((const char *)sqlite3_column_text(stmt, 0), &kind))
            return invalid_row("workloads", "kind", error);
        if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 1), &state))
            return invalid_row("workloads", "state", error);
        counts[kind][state] = sqlite3_column_int64(stmt, 2);
    }
    if (step != SQLITE_DONE)
        return set_sqlite_error(self, error);
    return TRUE;
}

gboolean
einsora_sqlite_store_insert_workload(EinsoraStore *store, const EinsoraWorkload *workload,
                                     GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO workloads (" WORKLOAD_COLUMNS ") "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, workload->id);
    bind_text(stmt, 2, workload->tenant_id);
    bind_text(stmt, 3, einsora_workload_kind_to_string(workload->kind));
    bind_text(stmt, 4, workload->name);
    bind_text(stmt, 5, einsora_workload_state_to_string(workload->state));
    bind_text(stmt, 6, workload->region);
    bind_text(stmt, 7, workload->gpu_class);
    bind_text(stmt, 8, workload->placed_class);
    bind_text(stmt, 9, workload->image);
    sqlite3_bind_int64(stmt, 10, workload->gpus);
    bind_text(stmt, 11, workload->machine_id);
    bind_text(stmt, 12, workload->driver);
    sqlite3_bind_int64(stmt, 13, workload->attempt);
    sqlite3_bind_int64(stmt, 14, workload->version);
    bind_text(stmt, 15, workload->created_by);
    bind_text(stmt, 16, workload->created_at);
    bind_text(stmt, 17, workload->updated_at);
    bind_text(stmt, 18, workload->model);
    bind_text(stmt, 19, workload->model_digest);
    sqlite3_bind_int64(stmt, 20, (gint64)workload->gpu_mask);
    sqlite3_bind_int64(stmt, 21, workload->idle_timeout_s);
    bind_text(stmt, 22, workload->fallback);
    sqlite3_bind_int64(stmt, 23, workload->fallback_after_s);
    return einsora_sqlite_store_step_write(self, stmt, "a workload with this ID already exists",
                                           "no such tenant or machine", error);
}

EinsoraWorkload *
einsora_sqlite_store_get_workload(EinsoraStore *store, const char *tenant_id,
                                  const char *workload_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached(
        self, "SELECT " WORKLOAD_COLUMNS " FROM workloads WHERE tenant_id = ?1 AND id = ?2", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return workload_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
    else
        set_sqlite_error(self, error);
    return NULL;
}

/* Every row of a workload query, oldest first as the query orders them. */
static GPtrArray *
workloads_from(EinsoraSqliteStore *self, sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(GPtrArray) workloads =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_free);
    int rc;

    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkload *workload = workload_from_row(stmt, error);
        if (workload == NULL)
            return NULL;
        g_ptr_array_add(workloads, workload);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&workloads);
}

GPtrArray *
einsora_sqlite_store_list_workloads(EinsoraStore *store, const char *tenant_id,
                                    gboolean include_deleted, const char *after_created_at,
                                    const char *after_id, guint limit, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* A row value, so the index on (tenant_id, created_at, id) seeks to
     * the page's start rather than reading the rows before it; "" sorts
     * before every real time and ID. */
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                                           "WHERE tenant_id = ?1 "
                                           "AND (?2 = 1 OR state <> 'deleted') "
                                           "AND (created_at, id) > (?3, ?4) "
                                           "ORDER BY created_at, id LIMIT ?5",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    sqlite3_bind_int(stmt, 2, include_deleted ? 1 : 0);
    bind_text(stmt, 3, after_created_at != NULL ? after_created_at : "");
    bind_text(stmt, 4, after_id != NULL ? after_id : "");
    sqlite3_bind_int64(stmt, 5, limit);
    return workloads_from(self, stmt, error);
}

GPtrArray *
einsora_sqlite_store_list_region_workloads(EinsoraStore *store, const char *region, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self,
                "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                "WHERE region = ?1 AND state NOT IN ('stopped', 'failed', 'deleted') "
                "ORDER BY created_at, id",
                error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, region);
    return workloads_from(self, stmt, error);
}

GPtrArray *
einsora_sqlite_store_list_machine_workloads(EinsoraStore *store, const char *machine_id,
                                            GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                                           "WHERE machine_id = ?1 AND state <> 'deleted' "
                                           "ORDER BY created_at, id",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, machine_id);
    return workloads_from(self, stmt, error);
}

GPtrArray *
einsora_sqlite_store_list_workloads_with_events_after(EinsoraStore *store, gint64 after_seq,
                                                      GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* The seq's primary key finds the new events; each workload once. */
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                                           "WHERE id IN (SELECT workload_id FROM workload_events "
                                           "WHERE seq > ?1) "
                                           "ORDER BY created_at, id",
                                           error);

    if (stmt == NULL)
        return NULL;
    sqlite3_bind_int64(stmt, 1, after_seq);
    return workloads_from(self, stmt, error);
}

GPtrArray *
einsora_sqlite_store_list_workloads_in_state(EinsoraStore *store, EinsoraWorkloadState state,
                                             GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                                           "WHERE state = ?1 ORDER BY created_at, id",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, einsora_workload_state_to_string(state));
    return workloads_from(self, stmt, error);
}

gboolean
einsora_sqlite_store_update_workload_state(EinsoraStore *store, const EinsoraWorkload *workload,
                                           EinsoraWorkloadState expected_state,
                                           gint64 expected_version, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached_write(
        self,
        "UPDATE workloads SET state = ?1, placed_class = ?2, machine_id = ?3, "
        "driver = ?4, attempt = ?5, updated_at = ?6, gpu_mask = ?11, version = version + 1 "
        "WHERE tenant_id = ?7 AND id = ?8 AND state = ?9 AND version = ?10",
        error);
    gboolean exists = FALSE;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, einsora_workload_state_to_string(workload->state));
    bind_text(stmt, 2, workload->placed_class);
    bind_text(stmt, 3, workload->machine_id);
    bind_text(stmt, 4, workload->driver);
    sqlite3_bind_int64(stmt, 5, workload->attempt);
    bind_text(stmt, 6, workload->updated_at);
    bind_text(stmt, 7, workload->tenant_id);
    bind_text(stmt, 8, workload->id);
    bind_text(stmt, 9, einsora_workload_state_to_string(expected_state));
    sqlite3_bind_int64(stmt, 10, expected_version);
    sqlite3_bind_int64(stmt, 11, (gint64)workload->gpu_mask);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, "no such machine", error))
        return FALSE;
    if (sqlite3_changes(self->db) == 1)
        return TRUE;

    /* Nothing matched: either someone else changed it first, or it is not
     * this tenant's. */
    if (!einsora_sqlite_store_workload_exists(self, workload->tenant_id, workload->id, &exists,
                                              error))
        return FALSE;
    if (exists)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "the workload changed while this request was handled; try again");
    else
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
    return FALSE;
}

/* Leases */

gboolean
einsora_sqlite_store_acquire_lease(EinsoraStore *store, const char *name, const char *holder,
                                   const char *now, const char *expires_at, gboolean *held,
                                   GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* One statement: insert, or take over only what is ours or expired. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO leases (name, holder, acquired_at, expires_at) "
        "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET "
        "acquired_at = CASE WHEN leases.holder = excluded.holder "
        "THEN leases.acquired_at ELSE excluded.acquired_at END, "
        "holder = excluded.holder, expires_at = excluded.expires_at "
        "WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.acquired_at",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, name);
    bind_text(stmt, 2, holder);
    bind_text(stmt, 3, now);
    bind_text(stmt, 4, expires_at);
    if (sqlite3_step(stmt) != SQLITE_DONE)
        return set_sqlite_error(self, error);
    *held = sqlite3_changes(self->db) == 1;
    return TRUE;
}

gboolean
einsora_sqlite_store_release_lease(EinsoraStore *store, const char *name, const char *holder,
                                   GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self, "DELETE FROM leases WHERE name = ?1 AND holder = ?2", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, name);
    bind_text(stmt, 2, holder);
    if (sqlite3_step(stmt) != SQLITE_DONE)
        return set_sqlite_error(self, error);
    return TRUE;
}
