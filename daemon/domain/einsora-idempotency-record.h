/* The first response to a request that carried an Idempotency-Key, kept so
 * that a retry of the same request gets the same answer until it expires. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *tenant_id;
    gchar *key;            /* the client's Idempotency-Key */
    gchar *request_sha256; /* what was asked, so a different request reusing the key is caught */
    gint64 response_status;
    gchar *response_body;
    gchar *created_at;
    gchar *expires_at;
} EinsoraIdempotencyRecord;

#define EINSORA_TYPE_IDEMPOTENCY_RECORD (einsora_idempotency_record_get_type())
GType einsora_idempotency_record_get_type(void);

EinsoraIdempotencyRecord *einsora_idempotency_record_new(void);
EinsoraIdempotencyRecord *einsora_idempotency_record_copy(const EinsoraIdempotencyRecord *record);
void einsora_idempotency_record_free(EinsoraIdempotencyRecord *record);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraIdempotencyRecord, einsora_idempotency_record_free)

G_END_DECLS
