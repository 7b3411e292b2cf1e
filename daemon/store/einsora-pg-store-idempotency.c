/* Idempotency keys. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

EinsoraIdempotencyRecord *
einsora_pg_store_get_idempotency_record(EinsoraStore *store, const char *tenant_id, const char *key,
                                        GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_insert_idempotency_record(EinsoraStore *store,
                                           const EinsoraIdempotencyRecord *record, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_delete_expired_idempotency_records(EinsoraStore *store, const char *now,
                                                    GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
