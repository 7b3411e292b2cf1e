/* Workloads (intent, state and placement) and the controllers' leases. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns workload_from_row reads, in its order. */
#define WORKLOAD_COLUMNS                                                                           \
    "id, tenant_id, kind, name, state, region, gpu_class, placed_class, image, gpus, "             \
    "machine_id, driver, attempt, version, created_by, created_at, updated_at, model, "            \
    "model_digest, gpu_mask, idle_timeout_s, fallback, fallback_after_s"

/* The order every workload list has: oldest first, by byte order as
 * SQLite sorts. */
#define WORKLOAD_ORDER " ORDER BY created_at COLLATE \"C\", id COLLATE \"C\""

static EinsoraWorkload *
workload_from_row(const PGresult *res, int row, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = einsora_workload_new();

    workload->id = pg_column_strdup(res, row, 0);
    workload->tenant_id = pg_column_strdup(res, row, 1);
    if (!einsora_workload_kind_from_string(pg_column_text(res, row, 2), &workload->kind)) {
        pg_invalid_row("workloads", "kind", error);
        return NULL;
    }
    workload->name = pg_column_strdup(res, row, 3);
    if (!einsora_workload_state_from_string(pg_column_text(res, row, 4), &workload->state)) {
        pg_invalid_row("workloads", "state", error);
        return NULL;
    }
    workload->region = pg_column_strdup(res, row, 5);
    workload->gpu_class = pg_column_strdup(res, row, 6);
    workload->placed_class = pg_column_strdup(res, row, 7);
    workload->image = pg_column_strdup(res, row, 8);
    workload->gpus = pg_column_int64(res, row, 9);
    workload->machine_id = pg_column_strdup(res, row, 10);
    workload->driver = pg_column_strdup(res, row, 11);
    workload->attempt = pg_column_int64(res, row, 12);
    workload->version = pg_column_int64(res, row, 13);
    workload->created_by = pg_column_strdup(res, row, 14);
    workload->created_at = pg_column_strdup(res, row, 15);
    workload->updated_at = pg_column_strdup(res, row, 16);
    workload->model = pg_column_strdup(res, row, 17);
    workload->model_digest = pg_column_strdup(res, row, 18);
    workload->gpu_mask = (guint64)pg_column_int64(res, row, 19);
    workload->idle_timeout_s = pg_column_int64(res, row, 20);
    workload->fallback = pg_column_strdup(res, row, 21);
    workload->fallback_after_s = pg_column_int64(res, row, 22);
    return g_steal_pointer(&workload);
}

/* Every row of a workload query, in the query's order. */
static GPtrArray *
workloads_from(const PGresult *res, GError **error)
{
    g_autoptr(GPtrArray) workloads =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_free);

    for (int i = 0; i < PQntuples(res); i++) {
        EinsoraWorkload *workload = workload_from_row(res, i, error);
        if (workload == NULL)
            return NULL;
        g_ptr_array_add(workloads, workload);
    }
    return g_steal_pointer(&workloads);
}

gboolean
einsora_pg_store_workload_exists(EinsoraPgStore *self, const char *tenant_id,
                                 const char *workload_id, gboolean *exists, GError **error)
{
    const char *const params[] = {tenant_id, workload_id};
    g_autoptr(PGresult) res =
        einsora_pg_store_query(self, "SELECT 1 FROM workloads WHERE tenant_id = $1 AND id = $2",
                               G_N_ELEMENTS(params), params, error);

    if (res == NULL)
        return FALSE;
    *exists = PQntuples(res) > 0;
    return TRUE;
}

gboolean
einsora_pg_store_insert_workload(EinsoraStore *store, const EinsoraWorkload *workload,
                                 GError **error)
{
    g_autofree gchar *gpus = pg_int64_param(workload->gpus);
    g_autofree gchar *attempt = pg_int64_param(workload->attempt);
    g_autofree gchar *version = pg_int64_param(workload->version);
    g_autofree gchar *gpu_mask = pg_int64_param((gint64)workload->gpu_mask);
    g_autofree gchar *idle_timeout_s = pg_int64_param(workload->idle_timeout_s);
    g_autofree gchar *fallback_after_s = pg_int64_param(workload->fallback_after_s);
    const char *const params[] = {workload->id,
                                  workload->tenant_id,
                                  einsora_workload_kind_to_string(workload->kind),
                                  workload->name,
                                  einsora_workload_state_to_string(workload->state),
                                  workload->region,
                                  workload->gpu_class,
                                  workload->placed_class,
                                  workload->image,
                                  gpus,
                                  workload->machine_id,
                                  workload->driver,
                                  attempt,
                                  version,
                                  workload->created_by,
                                  workload->created_at,
                                  workload->updated_at,
                                  workload->model,
                                  workload->model_digest,
                                  gpu_mask,
                                  idle_timeout_s,
                                  workload->fallback,
                                  fallback_after_s};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO workloads (" WORKLOAD_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
                                  "$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, "
                                  "$23)",
                                  G_N_ELEMENTS(params), params,
                                  "a workload with this ID already exists",
                                  "no such tenant or machine", NULL, error);
}

EinsoraWorkload *
einsora_pg_store_get_workload(EinsoraStore *store, const char *tenant_id, const char *workload_id,
                              GError **error)
{
    const char *const params[] = {tenant_id, workload_id};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store),
        "SELECT " WORKLOAD_COLUMNS " FROM workloads WHERE tenant_id = $1 AND id = $2",
        G_N_ELEMENTS(params), params, "no such workload", error);

    return res != NULL ? workload_from_row(res, 0, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_workloads(EinsoraStore *store, const char *tenant_id,
                                gboolean include_deleted, const char *after_created_at,
                                const char *after_id, guint limit, GError **error)
{
    g_autofree gchar *limit_text = pg_int64_param(limit);
    const char *const params[] = {tenant_id, include_deleted ? "1" : "0",
                                  after_created_at != NULL ? after_created_at : "",
                                  after_id != NULL ? after_id : "", limit_text};
    /* "" sorts before every real time and ID. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT " WORKLOAD_COLUMNS " FROM workloads "
        "WHERE tenant_id = $1 "
        "AND ($2::bigint = 1 OR state <> 'deleted') "
        "AND (created_at COLLATE \"C\", id COLLATE \"C\") > ($3, $4)" WORKLOAD_ORDER " LIMIT $5",
        G_N_ELEMENTS(params), params, error);

    return res != NULL ? workloads_from(res, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_region_workloads(EinsoraStore *store, const char *region, GError **error)
{
    const char *const params[] = {region};
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT " WORKLOAD_COLUMNS " FROM workloads "
        "WHERE region = $1 AND state NOT IN ('stopped', 'failed', 'deleted')" WORKLOAD_ORDER,
        G_N_ELEMENTS(params), params, error);

    return res != NULL ? workloads_from(res, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_machine_workloads(EinsoraStore *store, const char *machine_id, GError **error)
{
    const char *const params[] = {machine_id};
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                               "WHERE machine_id = $1 AND state <> 'deleted'" WORKLOAD_ORDER,
                               G_N_ELEMENTS(params), params, error);

    return res != NULL ? workloads_from(res, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_workloads_with_events_after(EinsoraStore *store, gint64 after_seq,
                                                  GError **error)
{
    g_autofree gchar *after_seq_text = pg_int64_param(after_seq);
    const char *const params[] = {after_seq_text};
    /* The seq's primary key finds the new events; each workload once. */
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                               "WHERE id IN (SELECT workload_id FROM workload_events "
                               "WHERE seq > $1)" WORKLOAD_ORDER,
                               G_N_ELEMENTS(params), params, error);

    return res != NULL ? workloads_from(res, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_workloads_in_state(EinsoraStore *store, EinsoraWorkloadState state,
                                         GError **error)
{
    const char *const params[] = {einsora_workload_state_to_string(state)};
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT " WORKLOAD_COLUMNS " FROM workloads WHERE state = $1" WORKLOAD_ORDER,
        G_N_ELEMENTS(params), params, error);

    return res != NULL ? workloads_from(res, error) : NULL;
}

gboolean
einsora_pg_store_update_workload_state(EinsoraStore *store, const EinsoraWorkload *workload,
                                       EinsoraWorkloadState expected_state, gint64 expected_version,
                                       GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autofree gchar *attempt = pg_int64_param(workload->attempt);
    g_autofree gchar *version = pg_int64_param(expected_version);
    g_autofree gchar *gpu_mask = pg_int64_param((gint64)workload->gpu_mask);
    const char *const params[] = {einsora_workload_state_to_string(workload->state),
                                  workload->placed_class,
                                  workload->machine_id,
                                  workload->driver,
                                  attempt,
                                  workload->updated_at,
                                  workload->tenant_id,
                                  workload->id,
                                  einsora_workload_state_to_string(expected_state),
                                  version,
                                  gpu_mask};
    gboolean exists = FALSE;
    gint64 rows = 0;

    /* The machines it leaves and joins are told at commit: their agents'
     * syncs may be held by another process's hub (docs/adr/0062). */
    if (!einsora_pg_store_write(
            self,
            "UPDATE workloads SET state = $1, placed_class = $2, machine_id = $3, "
            "driver = $4, attempt = $5, updated_at = $6, gpu_mask = $11, version = version + 1 "
            "FROM (SELECT pg_notify('" EINSORA_PG_STORE_MACHINES_CHANNEL "', coalesce($3, '')), "
            "pg_notify('" EINSORA_PG_STORE_MACHINES_CHANNEL "', coalesce((SELECT machine_id "
            "FROM workloads WHERE tenant_id = $7 AND id = $8), ''))) AS machines_told "
            "WHERE tenant_id = $7 AND id = $8 AND state = $9 AND version = $10",
            G_N_ELEMENTS(params), params, NULL, "no such machine", &rows, error))
        return FALSE;
    if (rows == 1)
        return TRUE;

    /* Nothing matched: either someone else changed it first, or it is not
     * this tenant's. */
    if (!einsora_pg_store_workload_exists(self, workload->tenant_id, workload->id, &exists, error))
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
einsora_pg_store_acquire_lease(EinsoraStore *store, const char *name, const char *holder,
                               const char *now, const char *expires_at, gboolean *held,
                               GError **error)
{
    const char *const params[] = {name, holder, now, expires_at};
    gint64 rows = 0;

    /* One statement: insert, or take over only what is ours or expired. */
    if (!einsora_pg_store_write(EINSORA_PG_STORE(store),
                                "INSERT INTO leases (name, holder, acquired_at, expires_at) "
                                "VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE SET "
                                "acquired_at = CASE WHEN leases.holder = excluded.holder "
                                "THEN leases.acquired_at ELSE excluded.acquired_at END, "
                                "holder = excluded.holder, expires_at = excluded.expires_at "
                                "WHERE leases.holder = excluded.holder "
                                "OR leases.expires_at COLLATE \"C\" <= excluded.acquired_at",
                                G_N_ELEMENTS(params), params, NULL, NULL, &rows, error))
        return FALSE;
    *held = rows == 1;
    return TRUE;
}

gboolean
einsora_pg_store_release_lease(EinsoraStore *store, const char *name, const char *holder,
                               GError **error)
{
    const char *const params[] = {name, holder};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "DELETE FROM leases WHERE name = $1 AND holder = $2",
                                  G_N_ELEMENTS(params), params, NULL, NULL, NULL, error);
}
