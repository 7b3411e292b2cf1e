/* Idempotency keys: the answers a retried request gets again. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns idempotency_record_from_row reads, in its order. */
#define IDEMPOTENCY_COLUMNS                                                                        \
    "tenant_id, key, request_sha256, response_status, response_body, created_at, expires_at"

static EinsoraIdempotencyRecord *
idempotency_record_from_row(const PGresult *res, int row)
{
    EinsoraIdempotencyRecord *record = einsora_idempotency_record_new();

    record->tenant_id = pg_column_strdup(res, row, 0);
    record->key = pg_column_strdup(res, row, 1);
    record->request_sha256 = pg_column_strdup(res, row, 2);
    record->response_status = pg_column_int64(res, row, 3);
    record->response_body = pg_column_strdup(res, row, 4);
    record->created_at = pg_column_strdup(res, row, 5);
    record->expires_at = pg_column_strdup(res, row, 6);
    return record;
}

EinsoraIdempotencyRecord *
einsora_pg_store_get_idempotency_record(EinsoraStore *store, const char *tenant_id, const char *key,
                                        GError **error)
{
    const char *const params[] = {tenant_id, key};
    g_autoptr(PGresult) res =
        einsora_pg_store_query_one(EINSORA_PG_STORE(store),
                                   "SELECT " IDEMPOTENCY_COLUMNS " FROM idempotency_keys "
                                   "WHERE tenant_id = $1 AND key = $2",
                                   G_N_ELEMENTS(params), params, "no such idempotency key", error);

    return res != NULL ? idempotency_record_from_row(res, 0) : NULL;
}

gboolean
einsora_pg_store_insert_idempotency_record(EinsoraStore *store,
                                           const EinsoraIdempotencyRecord *record, GError **error)
{
    g_autofree gchar *response_status = pg_int64_param(record->response_status);
    const char *const params[] = {record->tenant_id, record->key,           record->request_sha256,
                                  response_status,   record->response_body, record->created_at,
                                  record->expires_at};
    gint64 rows = 0;

    /* A record that expired by now is replaced rather than blocking the key
     * until the next clean-up; a live one is left alone. */
    if (!einsora_pg_store_write(EINSORA_PG_STORE(store),
                                "INSERT INTO idempotency_keys (" IDEMPOTENCY_COLUMNS ") "
                                "VALUES ($1, $2, $3, $4, $5, $6, $7) "
                                "ON CONFLICT (tenant_id, key) DO UPDATE SET "
                                "request_sha256 = excluded.request_sha256, "
                                "response_status = excluded.response_status, "
                                "response_body = excluded.response_body, "
                                "created_at = excluded.created_at, "
                                "expires_at = excluded.expires_at "
                                "WHERE idempotency_keys.expires_at <= excluded.created_at",
                                G_N_ELEMENTS(params), params, NULL, "no such tenant", &rows, error))
        return FALSE;
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "this Idempotency-Key was already used");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_pg_store_delete_expired_idempotency_records(EinsoraStore *store, const char *now,
                                                    GError **error)
{
    const char *const params[] = {now};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "DELETE FROM idempotency_keys WHERE expires_at <= $1",
                                  G_N_ELEMENTS(params), params, NULL, NULL, NULL, error);
}
