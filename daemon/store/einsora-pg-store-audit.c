/* The audit trail. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_insert_audit_event(EinsoraStore *store, const EinsoraAuditEvent *event,
                                    GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

GPtrArray *
einsora_pg_store_list_audit_events(EinsoraStore *store, const char *tenant_id, guint limit,
                                   GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_count_workloads_with_model(EinsoraStore *store, const char *model, gint64 *count,
                                            GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_count_workloads(
    EinsoraStore *store, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_insert_api_token(EinsoraStore *store, const EinsoraApiToken *token, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraApiToken *
einsora_pg_store_find_api_token(EinsoraStore *store, const char *token_sha256, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

GPtrArray *
einsora_pg_store_list_api_tokens(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                 const char *after_created_at, const char *after_id, guint limit,
                                 GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_revoke_api_token(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                  const char *token_id, const char *revoked_at, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_touch_api_token(EinsoraStore *store, const char *token_id,
                                 const char *last_used_at, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_insert_session(EinsoraStore *store, const EinsoraSession *session, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraSession *
einsora_pg_store_find_session(EinsoraStore *store, const char *session_sha256, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_revoke_session(EinsoraStore *store, const char *tenant_id, const char *session_id,
                                const char *revoked_at, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
