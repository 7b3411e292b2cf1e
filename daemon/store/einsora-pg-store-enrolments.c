/* Machine enrolments: one-time tokens for agents that join over the
 * network (docs/adr/0055). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns enrolment_from_row reads, in its order. */
#define ENROLMENT_COLUMNS                                                                          \
    "id, tenant_id, token_sha256, name, region, created_by, created_at, expires_at, used_at, "     \
    "machine_id"

static EinsoraEnrolment *
enrolment_from_row(const PGresult *res, int row)
{
    EinsoraEnrolment *enrolment = einsora_enrolment_new();

    enrolment->id = pg_column_strdup(res, row, 0);
    enrolment->tenant_id = pg_column_strdup(res, row, 1);
    enrolment->hash = pg_column_strdup(res, row, 2);
    enrolment->name = pg_column_strdup(res, row, 3);
    enrolment->region = pg_column_strdup(res, row, 4);
    enrolment->created_by = pg_column_strdup(res, row, 5);
    enrolment->created_at = pg_column_strdup(res, row, 6);
    enrolment->expires_at = pg_column_strdup(res, row, 7);
    enrolment->used_at = pg_column_strdup(res, row, 8);
    enrolment->machine_id = pg_column_strdup(res, row, 9);
    return enrolment;
}

gboolean
einsora_pg_store_insert_enrolment(EinsoraStore *store, const EinsoraEnrolment *enrolment,
                                  GError **error)
{
    const char *const params[] = {
        enrolment->id,     enrolment->tenant_id,  enrolment->hash,       enrolment->name,
        enrolment->region, enrolment->created_by, enrolment->created_at, enrolment->expires_at};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO machine_enrolments (" ENROLMENT_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL)",
                                  G_N_ELEMENTS(params), params,
                                  "an enrolment with this hash already exists", "no such tenant",
                                  NULL, error);
}

EinsoraEnrolment *
einsora_pg_store_take_enrolment(EinsoraStore *store, const char *token_sha256, const char *now,
                                const char *machine_id, GError **error)
{
    const char *const params[] = {token_sha256, now, machine_id};
    /* One statement: of two racing takes only the one whose UPDATE
     * returns the row has it. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "UPDATE machine_enrolments SET used_at = $2, machine_id = $3 "
        "WHERE token_sha256 = $1 AND used_at IS NULL AND expires_at COLLATE \"C\" > $2 "
        "RETURNING " ENROLMENT_COLUMNS,
        G_N_ELEMENTS(params), params, error);
    int rows;

    if (res == NULL)
        return NULL;
    rows = PQntuples(res);
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such enrolment, or it was used or expired");
        return NULL;
    }
    return enrolment_from_row(res, rows - 1);
}
