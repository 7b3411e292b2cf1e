/* Workloads and leases. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_workload_exists(EinsoraPgStore *self, const char *tenant_id,
                                 const char *workload_id, gboolean *exists, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_insert_workload(EinsoraStore *store, const EinsoraWorkload *workload,
                                 GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraWorkload *
einsora_pg_store_get_workload(EinsoraStore *store, const char *tenant_id, const char *workload_id,
                              GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_workloads(EinsoraStore *store, const char *tenant_id,
                                gboolean include_deleted, const char *after_created_at,
                                const char *after_id, guint limit, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_region_workloads(EinsoraStore *store, const char *region, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_machine_workloads(EinsoraStore *store, const char *machine_id, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_workloads_with_events_after(EinsoraStore *store, gint64 after_seq,
                                                  GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_workloads_in_state(EinsoraStore *store, EinsoraWorkloadState state,
                                         GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_update_workload_state(EinsoraStore *store, const EinsoraWorkload *workload,
                                       EinsoraWorkloadState expected_state, gint64 expected_version,
                                       GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_acquire_lease(EinsoraStore *store, const char *name, const char *holder,
                               const char *now, const char *expires_at, gboolean *held,
                               GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_release_lease(EinsoraStore *store, const char *name, const char *holder,
                               GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
