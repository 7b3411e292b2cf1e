/* Local accounts: a new tenant and its first user, in one transaction. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include <string.h>

#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-uuid.h"

#define EMAIL_MIN_BYTES 3
#define EMAIL_MAX_BYTES 254

/* Checks an email address enough to catch mistakes (delivery is not ours
 * to judge) and returns it in ASCII lower case, the form the store keeps. */
gchar *
einsora_auth_normalize_email(const char *email, GError **error)
{
    gsize len = email != NULL ? strlen(email) : 0;
    const char *at;

    if (len < EMAIL_MIN_BYTES || len > EMAIL_MAX_BYTES || !g_utf8_validate(email, len, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "an email address must be %d to %d bytes of UTF-8", EMAIL_MIN_BYTES,
                    EMAIL_MAX_BYTES);
        return NULL;
    }
    for (const char *p = email; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        if (g_unichar_iscntrl(c) || g_unichar_isspace(c)) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                                "an email address cannot contain spaces or control characters");
            return NULL;
        }
    }
    at = strchr(email, '@');
    if (at == NULL || at == email || at[1] == '\0' || strchr(at + 1, '@') != NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an email address needs exactly one @, with text on both sides");
        return NULL;
    }
    return g_ascii_strdown(email, -1);
}

gboolean
einsora_auth_insert_account_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    AccountContext *ctx = user_data;
    g_autoptr(GError) local_error = NULL;

    if (!einsora_store_insert_tenant(store, ctx->tenant, &local_error)) {
        if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT))
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                        "a tenant named \"%s\" already exists", ctx->tenant->name);
        else
            g_propagate_error(error, g_steal_pointer(&local_error));
        return FALSE;
    }
    if (!einsora_store_insert_user(store, ctx->user, &local_error)) {
        if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT))
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                                "an account with this email address already exists");
        else
            g_propagate_error(error, g_steal_pointer(&local_error));
        return FALSE;
    }
    return TRUE;
}

EinsoraUser *
einsora_auth_user_new(const char *tenant_id, const char *email, const char *password_hash,
                      const char *role, gint64 now_us)
{
    EinsoraUser *user = einsora_user_new();
    const char *at = strchr(email, '@');

    user->id = einsora_uuid_v7_new(now_us / 1000);
    user->tenant_id = g_strdup(tenant_id);
    user->email = g_strdup(email);
    user->display_name = at != NULL ? g_strndup(email, at - email) : g_strdup(email);
    user->password_hash = g_strdup(password_hash);
    user->role = g_strdup(role);
    user->created_at = einsora_timestamp_format(now_us);
    return user;
}

EinsoraUser *
einsora_auth_create_account(EinsoraAuth *self, const char *tenant_name, const char *email,
                            const char *password, const char *role, gboolean trusted,
                            GError **error)
{
    g_autofree gchar *normalized = NULL;
    g_autofree gchar *password_hash = NULL;
    g_autofree gchar *tenant_id = NULL;
    g_autofree gchar *created_at = NULL;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    AccountContext ctx = {0};
    gint64 now_us;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (!einsora_auth_check_name("a tenant's name", tenant_name, EINSORA_AUTH_TENANT_NAME_MAX_BYTES,
                                 error))
        return NULL;
    normalized = einsora_auth_normalize_email(email, error);
    if (normalized == NULL)
        return NULL;
    if (!einsora_user_role_is_valid(role)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "a role is \"owner\" or \"member\"");
        return NULL;
    }
    /* Before the transaction: argon2id is slow on purpose, and SQLite runs
     * one transaction at a time. */
    if (password != NULL) {
        password_hash = einsora_credential_hash_password(password, error);
        if (password_hash == NULL)
            return NULL;
    }

    now_us = self->now(self->now_data);
    tenant_id = einsora_uuid_v7_new(now_us / 1000);
    created_at = einsora_timestamp_format(now_us);
    tenant = einsora_tenant_new(tenant_id, tenant_name, trusted, created_at);
    user = einsora_auth_user_new(tenant_id, normalized, password_hash, role, now_us);
    ctx.tenant = tenant;
    ctx.user = user;
    if (!einsora_store_in_transaction(self->store, einsora_auth_insert_account_tx, &ctx, error))
        return NULL;
    return g_steal_pointer(&user);
}
