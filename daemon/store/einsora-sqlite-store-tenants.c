/* Tenants, and the GPU quotas each holds. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns tenant_from_row reads, in its order. */
#define TENANT_COLUMNS "id, name, trusted, created_at"

static EinsoraTenant *
tenant_from_row(sqlite3_stmt *stmt)
{
    return einsora_tenant_new(
        (const char *)sqlite3_column_text(stmt, 0), (const char *)sqlite3_column_text(stmt, 1),
        sqlite3_column_int64(stmt, 2) != 0, (const char *)sqlite3_column_text(stmt, 3));
}

/* Tenants */

gboolean
einsora_sqlite_store_insert_tenant(EinsoraStore *store, const EinsoraTenant *tenant, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self, "INSERT INTO tenants (" TENANT_COLUMNS ") VALUES (?1, ?2, ?3, ?4)", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant->id);
    bind_text(stmt, 2, tenant->name);
    sqlite3_bind_int(stmt, 3, tenant->trusted ? 1 : 0);
    bind_text(stmt, 4, tenant->created_at);
    return einsora_sqlite_store_step_write(
        self, stmt, "a tenant with this ID or name already exists", NULL, error);
}

EinsoraTenant *
einsora_sqlite_store_get_tenant(EinsoraStore *store, const char *tenant_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " TENANT_COLUMNS " FROM tenants WHERE id = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return tenant_from_row(stmt);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such tenant");
    else
        set_sqlite_error(self, error);
    return NULL;
}

GPtrArray *
einsora_sqlite_store_list_tenants(EinsoraStore *store, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " TENANT_COLUMNS " FROM tenants ORDER BY name", error);
    g_autoptr(GPtrArray) tenants =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_tenant_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(tenants, tenant_from_row(stmt));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&tenants);
}

EinsoraTenant *
einsora_sqlite_store_find_tenant_by_name(EinsoraStore *store, const char *name, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " TENANT_COLUMNS " FROM tenants WHERE name = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, name);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return tenant_from_row(stmt);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such tenant");
    else
        set_sqlite_error(self, error);
    return NULL;
}

/* Quotas */

gboolean
einsora_sqlite_store_set_quota(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                               gint64 gpus, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autofree gchar *updated_at = NULL;
    g_autoptr(sqlite3_stmt) stmt = NULL;

    if (gpus < 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "a quota cannot be negative");
        return FALSE;
    }
    stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO quotas (tenant_id, gpu_class, gpus, updated_at) "
        "VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT (tenant_id, gpu_class) "
        "DO UPDATE SET gpus = excluded.gpus, updated_at = excluded.updated_at",
        error);
    if (stmt == NULL)
        return FALSE;
    updated_at = einsora_timestamp_format(self->now(self->now_data));
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, gpu_class);
    sqlite3_bind_int64(stmt, 3, gpus);
    bind_text(stmt, 4, updated_at);
    return einsora_sqlite_store_step_write(self, stmt, NULL, "no such tenant", error);
}

gboolean
einsora_sqlite_store_get_quota(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                               gint64 *gpus, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT gpus FROM quotas WHERE tenant_id = ?1 AND gpu_class = ?2", error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, gpu_class);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        *gpus = sqlite3_column_int64(stmt, 0);
        return TRUE;
    }
    if (rc == SQLITE_DONE) {
        /* No row allows none. */
        *gpus = 0;
        return TRUE;
    }
    return set_sqlite_error(self, error);
}

gboolean
einsora_sqlite_store_gpus_by_state(EinsoraStore *store, const char *tenant_id,
                                   const char *gpu_class, gint64 sums[EINSORA_WORKLOAD_STATE_COUNT],
                                   GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT state, sum(gpus) FROM workloads "
                                           "WHERE tenant_id = ?1 AND gpu_class = ?2 "
                                           "GROUP BY state",
                                           error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++)
        sums[i] = 0;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, gpu_class);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadState state;
        if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 0), &state))
            return invalid_row("workloads", "state", error);
        sums[state] = sqlite3_column_int64(stmt, 1);
    }
    if (rc != SQLITE_DONE)
        return set_sqlite_error(self, error);
    return TRUE;
}
