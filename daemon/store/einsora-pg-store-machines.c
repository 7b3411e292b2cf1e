/* Machines. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_insert_machine(EinsoraStore *store, const EinsoraMachine *machine, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraMachine *
einsora_pg_store_get_machine(EinsoraStore *store, const char *tenant_id, const char *machine_id,
                             GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_machines(EinsoraStore *store, const char *tenant_id, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

EinsoraMachine *
einsora_pg_store_find_machine_by_certificate(EinsoraStore *store, const char *fingerprint,
                                             GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

EinsoraMachine *
einsora_pg_store_find_machine(EinsoraStore *store, const char *machine_id, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_region_machines(EinsoraStore *store, const char *region, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_record_machine_seen(EinsoraStore *store, const char *machine_id,
                                     const char *last_seen_at, const char *inventory,
                                     const char *agent_version, const gint64 *clock_offset_ms,
                                     GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
