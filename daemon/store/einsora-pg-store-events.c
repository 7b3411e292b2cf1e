/* The timeline. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_append_event(EinsoraStore *store, const EinsoraWorkloadEvent *event,
                              GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

GPtrArray *
einsora_pg_store_list_events(EinsoraStore *store, const char *tenant_id, const char *workload_id,
                             gint64 after_seq, guint limit, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_tenant_events(EinsoraStore *store, const char *tenant_id, gint64 after_seq,
                                    guint limit, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_last_event_seq(EinsoraStore *store, const char *tenant_id, gint64 *seq,
                                GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
