/* Usage records and the metering cursor. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_replace_usage_records(EinsoraStore *store, const char *tenant_id,
                                       const char *workload_id, GPtrArray *records, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

GPtrArray *
einsora_pg_store_list_usage_records(EinsoraStore *store, const char *tenant_id, const char *from,
                                    const char *to, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_get_metering_cursor(EinsoraStore *store, const char *name, gint64 *last_seq,
                                     GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_set_metering_cursor(EinsoraStore *store, const char *name, gint64 last_seq,
                                     const char *updated_at, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
