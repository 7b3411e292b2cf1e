/* Accounts, API tokens and browser sessions. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_insert_user(EinsoraStore *store, const EinsoraUser *user, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraUser *
einsora_pg_store_get_user(EinsoraStore *store, const char *tenant_id, const char *user_id,
                          GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

EinsoraUser *
einsora_pg_store_find_user_by_email(EinsoraStore *store, const char *email, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_count_users(EinsoraStore *store, gint64 *count, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

GPtrArray *
einsora_pg_store_list_users(EinsoraStore *store, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}

gboolean
einsora_pg_store_revoke_user_sessions(EinsoraStore *store, const char *tenant_id,
                                      const char *user_id, const char *revoked_at, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_set_machine_sharing(EinsoraStore *store, const char *tenant_id,
                                     const char *machine_id, EinsoraSharing sharing, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_clear_machine_certificate(EinsoraStore *store, const char *tenant_id,
                                           const char *machine_id, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_set_user_disabled(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                   const char *disabled_at, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

gboolean
einsora_pg_store_set_user_password(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                   const char *password_hash, gboolean must_change, GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}
