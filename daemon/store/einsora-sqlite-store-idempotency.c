/* Idempotency keys: the answers a retried request gets again. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns idempotency_record_from_row reads, in its order. */
#define IDEMPOTENCY_COLUMNS                                                                        \
    "tenant_id, key, request_sha256, response_status, response_body, created_at, expires_at"

static EinsoraIdempotencyRecord *
idempotency_record_from_row(sqlite3_stmt *stmt)
{
    EinsoraIdempotencyRecord *record = einsora_idempotency_record_new();

    record->tenant_id = column_strdup(stmt, 0);
    record->key = column_strdup(stmt, 1);
    record->request_sha256 = column_strdup(stmt, 2);
    record->response_status = sqlite3_column_int64(stmt, 3);
    record->response_body = column_strdup(stmt, 4);
    record->created_at = column_strdup(stmt, 5);
    record->expires_at = column_strdup(stmt, 6);
    return record;
}

EinsoraIdempotencyRecord *
einsora_sqlite_store_get_idempotency_record(EinsoraStore *store, const char *tenant_id,
                                            const char *key, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " IDEMPOTENCY_COLUMNS " FROM idempotency_keys "
                                           "WHERE tenant_id = ?1 AND key = ?2",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, key);
    if (!einsora_sqlite_store_step_one(self, stmt, "no such idempotency key", error))
        return NULL;
    return idempotency_record_from_row(stmt);
}

gboolean
einsora_sqlite_store_insert_idempotency_record(EinsoraStore *store,
                                               const EinsoraIdempotencyRecord *record,
                                               GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* A record that expired by now is replaced rather than blocking the key
     * until the next clean-up; a live one is left alone. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO idempotency_keys (" IDEMPOTENCY_COLUMNS ") "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
        "ON CONFLICT (tenant_id, key) DO UPDATE SET "
        "request_sha256 = excluded.request_sha256, "
        "response_status = excluded.response_status, "
        "response_body = excluded.response_body, created_at = excluded.created_at, "
        "expires_at = excluded.expires_at "
        "WHERE idempotency_keys.expires_at <= excluded.created_at",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, record->tenant_id);
    bind_text(stmt, 2, record->key);
    bind_text(stmt, 3, record->request_sha256);
    sqlite3_bind_int64(stmt, 4, record->response_status);
    bind_text(stmt, 5, record->response_body);
    bind_text(stmt, 6, record->created_at);
    bind_text(stmt, 7, record->expires_at);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, "no such tenant", error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "this Idempotency-Key was already used");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_sqlite_store_delete_expired_idempotency_records(EinsoraStore *store, const char *now,
                                                        GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self, "DELETE FROM idempotency_keys WHERE expires_at <= ?1", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, now);
    return einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error);
}
