/* API tokens: authenticating one, and a user's own tokens (create, list,
 * revoke). */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-uuid.h"

#define TOKEN_TOUCH_INTERVAL_US (60 * G_TIME_SPAN_SECOND)

#define INVALID_TOKEN_MESSAGE "invalid or revoked API token"

/* Bookkeeping, not security: a failure is logged and the request goes on. */
static void
touch_token(EinsoraAuth *self, const EinsoraApiToken *token, gint64 now_us)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *now = NULL;
    gint64 last_used_us = 0;

    if (token->last_used_at != NULL &&
        einsora_timestamp_parse(token->last_used_at, &last_used_us, NULL) &&
        now_us - last_used_us < TOKEN_TOUCH_INTERVAL_US)
        return;
    now = einsora_timestamp_format(now_us);
    if (!einsora_store_touch_api_token(self->store, token->id, now, &error))
        g_warning("recording the use of API token %s: %s", token->id, error->message);
}

EinsoraActor *
einsora_auth_authenticate_token(EinsoraAuth *self, const char *token, GError **error)
{
    gint64 now_us;
    g_autofree gchar *now = NULL;
    g_autofree gchar *token_sha256 = NULL;
    g_autoptr(EinsoraApiToken) record = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(GError) local_error = NULL;
    g_autofree gchar *via = NULL;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (!einsora_credential_looks_like_secret(token, EINSORA_CREDENTIAL_TOKEN_PREFIX)) {
        set_unauthenticated(error, INVALID_TOKEN_MESSAGE);
        return NULL;
    }
    token_sha256 = einsora_credential_sha256_hex(token);
    record = einsora_store_find_api_token(self->store, token_sha256, &local_error);
    if (record == NULL) {
        if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND))
            set_unauthenticated(error, INVALID_TOKEN_MESSAGE);
        else
            g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    now_us = self->now(self->now_data);
    now = einsora_timestamp_format(now_us);
    if (record->revoked_at != NULL || is_expired(record->expires_at, now)) {
        set_unauthenticated(error, INVALID_TOKEN_MESSAGE);
        return NULL;
    }
    user = einsora_auth_get_active_user(self, record->tenant_id, record->user_id,
                                        INVALID_TOKEN_MESSAGE, error);
    if (user == NULL)
        return NULL;
    touch_token(self, record, now_us);
    via = g_strdup_printf("API token \"%s\" (%s…)", record->name, record->prefix);
    return einsora_actor_new(user->tenant_id, user->id, user->email, via);
}

EinsoraApiToken *
einsora_auth_create_token(EinsoraAuth *self, const EinsoraActor *actor, const char *name,
                          gchar **secret, GError **error)
{
    gint64 now_us;
    g_autoptr(Secret) value = NULL;
    g_autoptr(EinsoraApiToken) token = NULL;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL && actor->user_id != NULL, NULL);
    g_return_val_if_fail(secret != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (!einsora_auth_check_name("a token's name", name, EINSORA_AUTH_TOKEN_NAME_MAX_BYTES, error))
        return NULL;
    if (!einsora_auth_new_secret(EINSORA_CREDENTIAL_TOKEN_PREFIX, &value, error))
        return NULL;
    now_us = self->now(self->now_data);
    token = einsora_api_token_new();
    token->id = einsora_uuid_v7_new(now_us / 1000);
    token->tenant_id = g_strdup(actor->tenant_id);
    token->user_id = g_strdup(actor->user_id);
    token->name = g_strdup(name);
    token->prefix = einsora_credential_display_prefix(value);
    token->token_sha256 = einsora_credential_sha256_hex(value);
    token->created_at = einsora_timestamp_format(now_us);
    if (!einsora_store_insert_api_token(self->store, token, error))
        return NULL;
    *secret = g_steal_pointer(&value);
    return g_steal_pointer(&token);
}

GPtrArray *
einsora_auth_list_tokens(EinsoraAuth *self, const EinsoraActor *actor, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL && actor->user_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    return einsora_store_list_api_tokens(self->store, actor->tenant_id, actor->user_id, error);
}

GPtrArray *
einsora_auth_list_tokens_page(EinsoraAuth *self, const EinsoraActor *actor,
                              const char *after_created_at, const char *after_id, guint limit,
                              GError **error)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL && actor->user_id != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    return einsora_store_list_api_tokens_page(self->store, actor->tenant_id, actor->user_id,
                                              after_created_at, after_id, limit, error);
}

gboolean
einsora_auth_revoke_token(EinsoraAuth *self, const EinsoraActor *actor, const char *token_id,
                          GError **error)
{
    g_autofree gchar *now = NULL;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL && actor->user_id != NULL,
                         FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    /* A malformed ID names no token, as far as the caller can tell. */
    if (token_id == NULL || !einsora_uuid_is_valid(token_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    now = einsora_timestamp_format(self->now(self->now_data));
    return einsora_store_revoke_api_token(self->store, actor->tenant_id, actor->user_id, token_id,
                                          now, error);
}
