/* Browser sessions: authenticating one with its CSRF token, and signing
 * out. Sessions are started by sign-in (einsora-auth-login.c). */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include "einsora-credential.h"
#include "einsora-error.h"

#define INVALID_SESSION_MESSAGE "invalid or expired session"
#define WRONG_CSRF_MESSAGE "missing or wrong CSRF token"

/* The stored session behind a cookie value; with @live_only, only if it
 * has neither expired nor been revoked. */
static EinsoraSession *
find_session(EinsoraAuth *self, const char *session_value, gboolean live_only, GError **error)
{
    g_autofree gchar *session_sha256 = NULL;
    g_autofree gchar *now = NULL;
    g_autoptr(EinsoraSession) session = NULL;
    g_autoptr(GError) local_error = NULL;

    if (!einsora_credential_looks_like_secret(session_value, EINSORA_CREDENTIAL_SESSION_PREFIX)) {
        set_unauthenticated(error, INVALID_SESSION_MESSAGE);
        return NULL;
    }
    session_sha256 = einsora_credential_sha256_hex(session_value);
    session = einsora_store_find_session(self->store, session_sha256, &local_error);
    if (session == NULL) {
        if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND))
            set_unauthenticated(error, INVALID_SESSION_MESSAGE);
        else
            g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    now = einsora_timestamp_format(self->now(self->now_data));
    if (live_only && (session->revoked_at != NULL || is_expired(session->expires_at, now))) {
        set_unauthenticated(error, INVALID_SESSION_MESSAGE);
        return NULL;
    }
    return g_steal_pointer(&session);
}

EinsoraActor *
einsora_auth_authenticate_session(EinsoraAuth *self, const char *session_value,
                                  const char *csrf_token, gboolean unsafe_method, GError **error)
{
    g_autoptr(EinsoraSession) session = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    EinsoraActor *actor;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    session = find_session(self, session_value, TRUE, error);
    if (session == NULL)
        return NULL;
    user = einsora_auth_get_active_user(self, session->tenant_id, session->user_id,
                                        INVALID_SESSION_MESSAGE, error);
    if (user == NULL)
        return NULL;
    /* A cookie rides along on requests other sites make; the CSRF token
     * only this site's pages know. */
    if (unsafe_method) {
        g_autofree gchar *csrf_sha256 = NULL;

        if (!einsora_credential_looks_like_secret(csrf_token, EINSORA_CREDENTIAL_CSRF_PREFIX)) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN, WRONG_CSRF_MESSAGE);
            return NULL;
        }
        csrf_sha256 = einsora_credential_sha256_hex(csrf_token);
        if (!einsora_credential_equal(csrf_sha256, session->csrf_sha256)) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN, WRONG_CSRF_MESSAGE);
            return NULL;
        }
    }
    actor = einsora_actor_new(user->tenant_id, user->id, user->email, SESSION_VIA);
    actor->password_must_change = user->password_must_change;
    return actor;
}

gboolean
einsora_auth_logout(EinsoraAuth *self, const char *session_value, GError **error)
{
    g_autoptr(EinsoraSession) session = NULL;
    g_autofree gchar *now = NULL;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    /* An expired or revoked session is still revoked: signing out twice
     * is not an error. */
    session = find_session(self, session_value, FALSE, error);
    if (session == NULL)
        return FALSE;
    now = einsora_timestamp_format(self->now(self->now_data));
    return einsora_store_revoke_session(self->store, session->tenant_id, session->id, now, error);
}
