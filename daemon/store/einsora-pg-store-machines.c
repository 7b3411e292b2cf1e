/* Machines: the tenants' own, and the hub's look-ups across tenants. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns machine_from_row reads, in its order. */
#define MACHINE_COLUMNS                                                                            \
    "id, tenant_id, name, region, os, cpus, memory_mib, sharing, last_seen_at, created_at, "       \
    "inventory, cert_fingerprint, cert_expires_at, agent_version, clock_offset_ms"

static EinsoraMachine *
machine_from_row(const PGresult *res, int row, GError **error)
{
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    machine->id = pg_column_strdup(res, row, 0);
    machine->tenant_id = pg_column_strdup(res, row, 1);
    machine->name = pg_column_strdup(res, row, 2);
    machine->region = pg_column_strdup(res, row, 3);
    machine->os = pg_column_strdup(res, row, 4);
    machine->cpus = pg_column_int64(res, row, 5);
    machine->memory_mib = pg_column_int64(res, row, 6);
    if (!einsora_sharing_from_string(pg_column_text(res, row, 7), &machine->sharing)) {
        pg_invalid_row("machines", "sharing", error);
        return NULL;
    }
    machine->last_seen_at = pg_column_strdup(res, row, 8);
    machine->created_at = pg_column_strdup(res, row, 9);
    machine->inventory = pg_column_strdup(res, row, 10);
    machine->cert_fingerprint = pg_column_strdup(res, row, 11);
    machine->cert_expires_at = pg_column_strdup(res, row, 12);
    machine->agent_version = pg_column_strdup(res, row, 13);
    machine->has_clock_offset = !PQgetisnull(res, row, 14);
    machine->clock_offset_ms = pg_column_int64(res, row, 14);
    return g_steal_pointer(&machine);
}

/* Every row of @res, or NULL with an error (@res NULL: the query's). */
static GPtrArray *
machines_from(const PGresult *res, GError **error)
{
    g_autoptr(GPtrArray) machines = NULL;

    if (res == NULL)
        return NULL;
    machines = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_free);
    for (int i = 0; i < PQntuples(res); i++) {
        EinsoraMachine *machine = machine_from_row(res, i, error);
        if (machine == NULL)
            return NULL;
        g_ptr_array_add(machines, machine);
    }
    return g_steal_pointer(&machines);
}

gboolean
einsora_pg_store_insert_machine(EinsoraStore *store, const EinsoraMachine *machine, GError **error)
{
    g_autofree gchar *cpus = pg_int64_param(machine->cpus);
    g_autofree gchar *memory_mib = pg_int64_param(machine->memory_mib);
    /* NULL: its agent never said. */
    g_autofree gchar *clock_offset_ms =
        machine->has_clock_offset ? pg_int64_param(machine->clock_offset_ms) : NULL;
    const char *const params[] = {machine->id,
                                  machine->tenant_id,
                                  machine->name,
                                  machine->region,
                                  machine->os,
                                  cpus,
                                  memory_mib,
                                  einsora_sharing_to_string(machine->sharing),
                                  machine->last_seen_at,
                                  machine->created_at,
                                  machine->inventory,
                                  machine->cert_fingerprint,
                                  machine->cert_expires_at,
                                  machine->agent_version,
                                  clock_offset_ms};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO machines (" MACHINE_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
                                  "$13, $14, $15)",
                                  G_N_ELEMENTS(params), params,
                                  "a machine with this ID already exists", "no such tenant", NULL,
                                  error);
}

EinsoraMachine *
einsora_pg_store_get_machine(EinsoraStore *store, const char *tenant_id, const char *machine_id,
                             GError **error)
{
    const char *const params[] = {tenant_id, machine_id};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store),
        "SELECT " MACHINE_COLUMNS " FROM machines WHERE tenant_id = $1 AND id = $2",
        G_N_ELEMENTS(params), params, "no such machine", error);

    return res != NULL ? machine_from_row(res, 0, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_machines(EinsoraStore *store, const char *tenant_id, GError **error)
{
    const char *const params[] = {tenant_id};
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT " MACHINE_COLUMNS " FROM machines "
                               "WHERE tenant_id = $1 "
                               "ORDER BY created_at COLLATE \"C\", id COLLATE \"C\"",
                               G_N_ELEMENTS(params), params, error);

    return machines_from(res, error);
}

EinsoraMachine *
einsora_pg_store_find_machine(EinsoraStore *store, const char *machine_id, GError **error)
{
    const char *const params[] = {machine_id};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store), "SELECT " MACHINE_COLUMNS " FROM machines WHERE id = $1",
        G_N_ELEMENTS(params), params, "no such machine", error);

    return res != NULL ? machine_from_row(res, 0, error) : NULL;
}

EinsoraMachine *
einsora_pg_store_find_machine_by_certificate(EinsoraStore *store, const char *fingerprint,
                                             GError **error)
{
    const char *const params[] = {fingerprint};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store),
        "SELECT " MACHINE_COLUMNS " FROM machines WHERE cert_fingerprint = $1",
        G_N_ELEMENTS(params), params, "no machine holds this certificate", error);

    return res != NULL ? machine_from_row(res, 0, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_region_machines(EinsoraStore *store, const char *region, GError **error)
{
    const char *const params[] = {region};
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT " MACHINE_COLUMNS " FROM machines WHERE region = $1 "
                               "ORDER BY created_at COLLATE \"C\", id COLLATE \"C\"",
                               G_N_ELEMENTS(params), params, error);

    return machines_from(res, error);
}

gboolean
einsora_pg_store_record_machine_seen(EinsoraStore *store, const char *machine_id,
                                     const char *last_seen_at, const char *inventory,
                                     const char *agent_version, const gint64 *clock_offset_ms,
                                     GError **error)
{
    /* NULL: its agent never said. */
    g_autofree gchar *offset = clock_offset_ms != NULL ? pg_int64_param(*clock_offset_ms) : NULL;
    const char *const params[] = {machine_id, last_seen_at, inventory, agent_version, offset};
    gint64 rows = 0;

    /* A report without an inventory keeps the last one; the agent's
     * version and clock are this sync's, said or not. */
    if (!einsora_pg_store_write(EINSORA_PG_STORE(store),
                                "UPDATE machines SET last_seen_at = $2, "
                                "inventory = coalesce($3::text, inventory), "
                                "agent_version = $4, clock_offset_ms = $5::bigint WHERE id = $1",
                                G_N_ELEMENTS(params), params, NULL, NULL, &rows, error))
        return FALSE;
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return FALSE;
    }
    return TRUE;
}
