/* Machine enrolments. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_insert_enrolment(EinsoraStore *store, const EinsoraEnrolment *enrolment,
                                  GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraEnrolment *
einsora_pg_store_take_enrolment(EinsoraStore *store, const char *token_sha256, const char *now,
                                const char *machine_id, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}
