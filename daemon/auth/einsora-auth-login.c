/* Password sign-in: the check on the credential module's pool, then a new
 * browser session. The lock-out it consults is einsora-auth-lockout.c. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-uuid.h"

#define WRONG_LOGIN_MESSAGE "wrong email or password"
#define LOCKED_OUT_MESSAGE "too many failed sign-ins; try again later"

/* An argon2id hash with the same parameters as real ones, of a random
 * password nobody kept: an unknown email is checked against it, so that a
 * sign-in takes as long whether or not the account exists. */
#define DUMMY_PASSWORD_HASH                                                                        \
    "$argon2id$v=19$m=65536,t=3,p=1$hpicceEKPP8XTva3sZC/Ag$"                                       \
    "Mqc3vdPbFG7igT6hatwC5M+V8tFWB5TOxG7QEEPsIpQ"

typedef struct {
    gchar *email; /* lower case */
    EinsoraUser *user;
} LoginContext;

static void
login_context_free(LoginContext *ctx)
{
    g_free(ctx->email);
    einsora_user_free(ctx->user);
    g_free(ctx);
}

typedef struct {
    EinsoraActor *actor;
    gchar *session_value;
    gchar *csrf_token;
} LoginResult;

static void
login_result_free(LoginResult *result)
{
    einsora_actor_free(result->actor);
    secret_free(result->session_value);
    secret_free(result->csrf_token);
    g_free(result);
}

static LoginResult *
start_session(EinsoraAuth *self, const EinsoraUser *user, GError **error)
{
    gint64 now_us = self->now(self->now_data);
    g_autoptr(Secret) session_value = NULL;
    g_autoptr(Secret) csrf_token = NULL;
    g_autoptr(EinsoraSession) session = NULL;
    LoginResult *result;

    if (!einsora_auth_new_secret(EINSORA_CREDENTIAL_SESSION_PREFIX, &session_value, error) ||
        !einsora_auth_new_secret(EINSORA_CREDENTIAL_CSRF_PREFIX, &csrf_token, error))
        return NULL;
    session = einsora_session_new();
    session->id = einsora_uuid_v7_new(now_us / 1000);
    session->tenant_id = g_strdup(user->tenant_id);
    session->user_id = g_strdup(user->id);
    session->session_sha256 = einsora_credential_sha256_hex(session_value);
    session->csrf_sha256 = einsora_credential_sha256_hex(csrf_token);
    session->created_at = einsora_timestamp_format(now_us);
    session->expires_at = einsora_timestamp_format(now_us + self->session_lifetime_us);
    if (!einsora_store_insert_session(self->store, session, error))
        return NULL;

    result = g_new0(LoginResult, 1);
    result->actor = einsora_actor_new(user->tenant_id, user->id, user->email, SESSION_VIA);
    result->actor->password_must_change = user->password_must_change;
    result->session_value = g_steal_pointer(&session_value);
    result->csrf_token = g_steal_pointer(&csrf_token);
    return result;
}

static void
login_failed(EinsoraAuth *self, GTask *task, LoginContext *ctx)
{
    einsora_auth_record_login_failure(self, ctx->email);
    g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                            WRONG_LOGIN_MESSAGE);
}

static void
login_verified(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    EinsoraAuth *self = g_task_get_source_object(task);
    LoginContext *ctx = g_task_get_task_data(task);
    EinsoraUser *user = ctx->user;
    g_autoptr(EinsoraUser) current = NULL;
    g_autoptr(GError) error = NULL;
    LoginResult *login;

    if (!einsora_credential_verify_password_finish(result, &error)) {
        /* Only a wrong password counts against the email: not a full
         * queue, nor a client that went away. */
        if (g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED)) {
            login_failed(self, task, ctx);
            return;
        }
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    /* Matching the dummy hash opens nothing. */
    if (user == NULL || user->password_hash == NULL) {
        login_failed(self, task, ctx);
        return;
    }
    /* The caller may have gone away while the password was checked: no
     * session for nobody. */
    if (g_task_return_error_if_cancelled(task))
        return;
    /* The account may have been disabled, or its password changed, while
     * the password was checked. */
    current =
        einsora_auth_get_active_user(self, user->tenant_id, user->id, WRONG_LOGIN_MESSAGE, &error);
    if (current != NULL && g_strcmp0(current->password_hash, user->password_hash) != 0) {
        g_clear_pointer(&current, einsora_user_free);
        g_clear_error(&error);
        login_failed(self, task, ctx);
        return;
    }
    if (current == NULL) {
        if (g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED))
            einsora_auth_record_login_failure(self, ctx->email);
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    g_hash_table_remove(self->login_failures, ctx->email);
    login = start_session(self, current, &error);
    if (login == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    g_task_return_pointer(task, login, (GDestroyNotify)login_result_free);
}

void
einsora_auth_login_async(EinsoraAuth *self, const char *email, const char *password,
                         GCancellable *cancellable, GAsyncReadyCallback callback,
                         gpointer user_data)
{
    g_autoptr(GTask) task = NULL;
    g_autoptr(GError) error = NULL;
    LoginContext *ctx;
    const char *encoded = DUMMY_PASSWORD_HASH;

    g_return_if_fail(EINSORA_IS_AUTH(self));

    task = g_task_new(self, cancellable, callback, user_data);
    g_task_set_source_tag(task, einsora_auth_login_async);
    if (g_task_return_error_if_cancelled(task))
        return;
    if (email == NULL || password == NULL) {
        g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                                WRONG_LOGIN_MESSAGE);
        return;
    }
    ctx = g_new0(LoginContext, 1);
    g_task_set_task_data(task, ctx, (GDestroyNotify)login_context_free);
    /* The same form create_account stored. A malformed address is simply
     * not found: it still costs a password check. */
    ctx->email = g_ascii_strdown(email, -1);
    /* Before any argon2 run, and whether or not the account exists. */
    if (einsora_auth_is_locked_out(self, ctx->email)) {
        g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                                LOCKED_OUT_MESSAGE);
        return;
    }
    ctx->user = einsora_store_find_user_by_email(self->store, ctx->email, &error);
    if (ctx->user == NULL && !g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND)) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    if (ctx->user != NULL && ctx->user->password_hash != NULL)
        encoded = ctx->user->password_hash;
    /* The password is checked on the credential module's pool: argon2id
     * takes a noticeable fraction of a second, and the main loop must not
     * wait for it. */
    einsora_credential_verify_password_async(encoded, password, cancellable, login_verified,
                                             g_object_ref(task));
}

gboolean
einsora_auth_login_finish(EinsoraAuth *self, GAsyncResult *result, EinsoraActor **actor,
                          gchar **session_value, gchar **csrf_token, GError **error)
{
    LoginResult *login;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    g_return_val_if_fail(g_async_result_is_tagged(result, einsora_auth_login_async), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    login = g_task_propagate_pointer(G_TASK(result), error);
    if (login == NULL)
        return FALSE;
    if (actor != NULL)
        *actor = g_steal_pointer(&login->actor);
    if (session_value != NULL)
        *session_value = g_steal_pointer(&login->session_value);
    if (csrf_token != NULL)
        *csrf_token = g_steal_pointer(&login->csrf_token);
    login_result_free(login);
    return TRUE;
}
