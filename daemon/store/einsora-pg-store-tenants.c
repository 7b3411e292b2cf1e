/* Tenants, and the GPU quotas each holds. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns tenant_from_row reads, in its order. */
#define TENANT_COLUMNS "id, name, trusted, created_at"

static EinsoraTenant *
tenant_from_row(const PGresult *res, int row)
{
    return einsora_tenant_new(pg_column_text(res, row, 0), pg_column_text(res, row, 1),
                              pg_column_int64(res, row, 2) != 0, pg_column_text(res, row, 3));
}

/* Tenants */

gboolean
einsora_pg_store_insert_tenant(EinsoraStore *store, const EinsoraTenant *tenant, GError **error)
{
    const char *const params[] = {tenant->id, tenant->name, tenant->trusted ? "1" : "0",
                                  tenant->created_at};

    return einsora_pg_store_write(
        EINSORA_PG_STORE(store), "INSERT INTO tenants (" TENANT_COLUMNS ") VALUES ($1, $2, $3, $4)",
        G_N_ELEMENTS(params), params, "a tenant with this ID or name already exists", NULL, NULL,
        error);
}

EinsoraTenant *
einsora_pg_store_get_tenant(EinsoraStore *store, const char *tenant_id, GError **error)
{
    const char *const params[] = {tenant_id};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store), "SELECT " TENANT_COLUMNS " FROM tenants WHERE id = $1",
        G_N_ELEMENTS(params), params, "no such tenant", error);

    return res != NULL ? tenant_from_row(res, 0) : NULL;
}

GPtrArray *
einsora_pg_store_list_tenants(EinsoraStore *store, GError **error)
{
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT " TENANT_COLUMNS " FROM tenants ORDER BY name COLLATE \"C\"", 0, NULL, error);
    GPtrArray *tenants;

    if (res == NULL)
        return NULL;
    tenants = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_tenant_free);
    for (int i = 0; i < PQntuples(res); i++)
        g_ptr_array_add(tenants, tenant_from_row(res, i));
    return tenants;
}

EinsoraTenant *
einsora_pg_store_find_tenant_by_name(EinsoraStore *store, const char *name, GError **error)
{
    const char *const params[] = {name};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store), "SELECT " TENANT_COLUMNS " FROM tenants WHERE name = $1",
        G_N_ELEMENTS(params), params, "no such tenant", error);

    return res != NULL ? tenant_from_row(res, 0) : NULL;
}

/* Quotas */

gboolean
einsora_pg_store_set_quota(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                           gint64 gpus, GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autofree gchar *updated_at = NULL;
    g_autofree gchar *gpus_text = NULL;

    if (gpus < 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "a quota cannot be negative");
        return FALSE;
    }
    updated_at = einsora_pg_store_now(self);
    gpus_text = pg_int64_param(gpus);
    {
        const char *const params[] = {tenant_id, gpu_class, gpus_text, updated_at};
        return einsora_pg_store_write(self,
                                      "INSERT INTO quotas (tenant_id, gpu_class, gpus, updated_at) "
                                      "VALUES ($1, $2, $3, $4) "
                                      "ON CONFLICT (tenant_id, gpu_class) "
                                      "DO UPDATE SET gpus = excluded.gpus, "
                                      "updated_at = excluded.updated_at",
                                      G_N_ELEMENTS(params), params, NULL, "no such tenant", NULL,
                                      error);
    }
}

gboolean
einsora_pg_store_get_quota(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                           gint64 *gpus, GError **error)
{
    const char *const params[] = {tenant_id, gpu_class};
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store), "SELECT gpus FROM quotas WHERE tenant_id = $1 AND gpu_class = $2",
        G_N_ELEMENTS(params), params, error);

    if (res == NULL)
        return FALSE;
    /* No row allows none. */
    *gpus = PQntuples(res) > 0 ? pg_column_int64(res, 0, 0) : 0;
    return TRUE;
}

gboolean
einsora_pg_store_gpus_by_state(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                               gint64 sums[EINSORA_WORKLOAD_STATE_COUNT], GError **error)
{
    const char *const params[] = {tenant_id, gpu_class};
    g_autoptr(PGresult) res = einsora_pg_store_query(EINSORA_PG_STORE(store),
                                                     "SELECT state, sum(gpus) FROM workloads "
                                                     "WHERE tenant_id = $1 AND gpu_class = $2 "
                                                     "GROUP BY state",
                                                     G_N_ELEMENTS(params), params, error);

    if (res == NULL)
        return FALSE;
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++)
        sums[i] = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        EinsoraWorkloadState state;
        if (!einsora_workload_state_from_string(pg_column_text(res, i, 0), &state))
            return pg_invalid_row("workloads", "state", error);
        sums[state] = pg_column_int64(res, i, 1);
    }
    return TRUE;
}
