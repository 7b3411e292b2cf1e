/* Machines: the tenants' own, and the hub's look-ups across tenants. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns machine_from_row reads, in its order. */
#define MACHINE_COLUMNS                                                                            \
    "id, tenant_id, name, region, os, cpus, memory_mib, sharing, last_seen_at, created_at, "       \
    "inventory, cert_fingerprint, cert_expires_at, agent_version, clock_offset_ms"

static EinsoraMachine *
machine_from_row(sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    machine->id = column_strdup(stmt, 0);
    machine->tenant_id = column_strdup(stmt, 1);
    machine->name = column_strdup(stmt, 2);
    machine->region = column_strdup(stmt, 3);
    machine->os = column_strdup(stmt, 4);
    machine->cpus = sqlite3_column_int64(stmt, 5);
    machine->memory_mib = sqlite3_column_int64(stmt, 6);
    if (!einsora_sharing_from_string((const char *)sqlite3_column_text(stmt, 7),
                                     &machine->sharing)) {
        invalid_row("machines", "sharing", error);
        return NULL;
    }
    machine->last_seen_at = column_strdup(stmt, 8);
    machine->created_at = column_strdup(stmt, 9);
    machine->inventory = column_strdup(stmt, 10);
    machine->cert_fingerprint = column_strdup(stmt, 11);
    machine->cert_expires_at = column_strdup(stmt, 12);
    machine->agent_version = column_strdup(stmt, 13);
    machine->has_clock_offset = sqlite3_column_type(stmt, 14) != SQLITE_NULL;
    machine->clock_offset_ms = sqlite3_column_int64(stmt, 14);
    return g_steal_pointer(&machine);
}

/* NULL: its agent never said. */
static void
bind_clock_offset(sqlite3_stmt *stmt, int index, const gint64 *clock_offset_ms)
{
    if (clock_offset_ms != NULL)
        sqlite3_bind_int64(stmt, index, *clock_offset_ms);
    else
        sqlite3_bind_null(stmt, index);
}

gboolean
einsora_sqlite_store_insert_machine(EinsoraStore *store, const EinsoraMachine *machine,
                                    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO machines (" MACHINE_COLUMNS ") "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
        "?13, ?14, ?15)",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 11, machine->inventory);
    bind_text(stmt, 1, machine->id);
    bind_text(stmt, 2, machine->tenant_id);
    bind_text(stmt, 3, machine->name);
    bind_text(stmt, 4, machine->region);
    bind_text(stmt, 5, machine->os);
    sqlite3_bind_int64(stmt, 6, machine->cpus);
    sqlite3_bind_int64(stmt, 7, machine->memory_mib);
    bind_text(stmt, 8, einsora_sharing_to_string(machine->sharing));
    bind_text(stmt, 9, machine->last_seen_at);
    bind_text(stmt, 10, machine->created_at);
    bind_text(stmt, 12, machine->cert_fingerprint);
    bind_text(stmt, 13, machine->cert_expires_at);
    bind_text(stmt, 14, machine->agent_version);
    bind_clock_offset(stmt, 15, machine->has_clock_offset ? &machine->clock_offset_ms : NULL);
    return einsora_sqlite_store_step_write(self, stmt, "a machine with this ID already exists",
                                           "no such tenant", error);
}

EinsoraMachine *
einsora_sqlite_store_get_machine(EinsoraStore *store, const char *tenant_id, const char *machine_id,
                                 GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE tenant_id = ?1 AND id = ?2", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, machine_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return machine_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
    else
        set_sqlite_error(self, error);
    return NULL;
}

GPtrArray *
einsora_sqlite_store_list_machines(EinsoraStore *store, const char *tenant_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " MACHINE_COLUMNS " FROM machines "
                                           "WHERE tenant_id = ?1 ORDER BY created_at, id",
                                           error);
    g_autoptr(GPtrArray) machines =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraMachine *machine = machine_from_row(stmt, error);
        if (machine == NULL)
            return NULL;
        g_ptr_array_add(machines, machine);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&machines);
}

static GPtrArray *
machines_from(EinsoraSqliteStore *self, sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(GPtrArray) machines =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_free);
    int rc;

    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraMachine *machine = machine_from_row(stmt, error);
        if (machine == NULL)
            return NULL;
        g_ptr_array_add(machines, machine);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&machines);
}

EinsoraMachine *
einsora_sqlite_store_find_machine(EinsoraStore *store, const char *machine_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached(
        self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE id = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, machine_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return machine_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
    else
        set_sqlite_error(self, error);
    return NULL;
}

EinsoraMachine *
einsora_sqlite_store_find_machine_by_certificate(EinsoraStore *store, const char *fingerprint,
                                                 GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(EinsoraSqliteCachedStmt) stmt = einsora_sqlite_store_prepare_cached(
        self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE cert_fingerprint = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, fingerprint);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return machine_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no machine holds this certificate");
    else
        set_sqlite_error(self, error);
    return NULL;
}

GPtrArray *
einsora_sqlite_store_list_region_machines(EinsoraStore *store, const char *region, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE region = ?1 ORDER BY created_at, id",
        error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, region);
    return machines_from(self, stmt, error);
}

gboolean
einsora_sqlite_store_set_machine_sharing(EinsoraStore *store, const char *tenant_id,
                                         const char *machine_id, EinsoraSharing sharing,
                                         GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self, "UPDATE machines SET sharing = ?3 WHERE tenant_id = ?1 AND id = ?2", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, machine_id);
    bind_text(stmt, 3, einsora_sharing_to_string(sharing));
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_sqlite_store_clear_machine_certificate(EinsoraStore *store, const char *tenant_id,
                                               const char *machine_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE machines SET cert_fingerprint = NULL "
        "WHERE tenant_id = ?1 AND id = ?2 AND cert_fingerprint IS NOT NULL",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, machine_id);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such machine with an agent certificate");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_sqlite_store_record_machine_seen(EinsoraStore *store, const char *machine_id,
                                         const char *last_seen_at, const char *inventory,
                                         const char *agent_version, const gint64 *clock_offset_ms,
                                         GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* A report without an inventory keeps the last one; the agent's
     * version and clock are this sync's, said or not. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE machines SET last_seen_at = ?2, inventory = coalesce(?3, inventory), "
        "agent_version = ?4, clock_offset_ms = ?5 WHERE id = ?1",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, machine_id);
    bind_text(stmt, 2, last_seen_at);
    bind_text(stmt, 3, inventory);
    bind_text(stmt, 4, agent_version);
    bind_clock_offset(stmt, 5, clock_offset_ms);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return FALSE;
    }
    return TRUE;
}
