/* Idempotency-Key records: the answer a request got, kept for a day so
 * that its retry gets the same one. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"

#define IDEMPOTENCY_TTL_US (G_GINT64_CONSTANT(24 * 60 * 60) * G_USEC_PER_SEC)

EinsoraIdempotencyRecord *
einsora_service_idempotency_record_new(const char *tenant_id, const char *key,
                                       const char *request_sha256, guint status, const char *body,
                                       gint64 now_us)
{
    EinsoraIdempotencyRecord *record = einsora_idempotency_record_new();

    record->tenant_id = g_strdup(tenant_id);
    record->key = g_strdup(key);
    record->request_sha256 = g_strdup(request_sha256);
    record->response_status = status;
    record->response_body = g_strdup(body);
    record->created_at = einsora_timestamp_format(now_us);
    record->expires_at = einsora_timestamp_format(now_us + IDEMPOTENCY_TTL_US);
    return record;
}

EinsoraIdempotencyRecord *
einsora_service_get_idempotency_record(EinsoraService *self, const char *tenant_id, const char *key,
                                       GError **error)
{
    g_autoptr(EinsoraIdempotencyRecord) record =
        einsora_store_get_idempotency_record(self->store, tenant_id, key, error);
    g_autofree gchar *now = NULL;

    if (record == NULL)
        return NULL;
    now = einsora_timestamp_format(einsora_service_now(self));
    if (g_strcmp0(record->expires_at, now) <= 0) {
        /* Expired keys are forgotten, so the key may be used again. */
        if (!einsora_store_delete_expired_idempotency_records(self->store, now, error))
            return NULL;
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such idempotency key");
        return NULL;
    }
    return g_steal_pointer(&record);
}

gboolean
einsora_service_save_idempotency_record(EinsoraService *self, const char *tenant_id,
                                        const char *key, const char *request_sha256, guint status,
                                        const char *body, GError **error)
{
    g_autoptr(EinsoraIdempotencyRecord) record = einsora_service_idempotency_record_new(
        tenant_id, key, request_sha256, status, body, einsora_service_now(self));

    return einsora_store_insert_idempotency_record(self->store, record, error);
}
