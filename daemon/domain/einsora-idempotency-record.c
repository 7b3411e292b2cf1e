#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-idempotency-record.h"

G_DEFINE_BOXED_TYPE(EinsoraIdempotencyRecord, einsora_idempotency_record,
                    einsora_idempotency_record_copy, einsora_idempotency_record_free)

EinsoraIdempotencyRecord *
einsora_idempotency_record_new(void)
{
    return g_new0(EinsoraIdempotencyRecord, 1);
}

EinsoraIdempotencyRecord *
einsora_idempotency_record_copy(const EinsoraIdempotencyRecord *record)
{
    EinsoraIdempotencyRecord *copy = g_new0(EinsoraIdempotencyRecord, 1);

    copy->tenant_id = g_strdup(record->tenant_id);
    copy->key = g_strdup(record->key);
    copy->request_sha256 = g_strdup(record->request_sha256);
    copy->response_status = record->response_status;
    copy->response_body = g_strdup(record->response_body);
    copy->created_at = g_strdup(record->created_at);
    copy->expires_at = g_strdup(record->expires_at);
    return copy;
}

void
einsora_idempotency_record_free(EinsoraIdempotencyRecord *record)
{
    if (record == NULL)
        return;
    g_free(record->tenant_id);
    g_free(record->key);
    g_free(record->request_sha256);
    g_free(record->response_body);
    g_free(record->created_at);
    g_free(record->expires_at);
    g_free(record);
}
