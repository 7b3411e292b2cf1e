#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-uuid.h"

#define EMAIL_MIN_BYTES 3
#define EMAIL_MAX_BYTES 254
#define TOKEN_TOUCH_INTERVAL_US (60 * G_TIME_SPAN_SECOND)
#define TOKEN_FILE_MODE 0600
/* Emails whose failures are remembered at once: enough for any real
 * traffic, and a bound on what random emails can make us keep. */
#define LOGIN_FAILURES_MAX_EMAILS 4096

#define INVALID_TOKEN_MESSAGE "invalid or revoked API token"
#define INVALID_SESSION_MESSAGE "invalid or expired session"
#define WRONG_LOGIN_MESSAGE "wrong email or password"
#define LOCKED_OUT_MESSAGE "too many failed sign-ins; try again later"
#define WRONG_CSRF_MESSAGE "missing or wrong CSRF token"
#define SESSION_VIA "browser session"

/* An argon2id hash with the same parameters as real ones, of a random
 * password nobody kept: an unknown email is checked against it, so that a
 * sign-in takes as long whether or not the account exists. */
#define DUMMY_PASSWORD_HASH                                                                        \
    "$argon2id$v=19$m=65536,t=3,p=1$hpicceEKPP8XTva3sZC/Ag$"                                       \
    "Mqc3vdPbFG7igT6hatwC5M+V8tFWB5TOxG7QEEPsIpQ"

/* Recent failed sign-ins for one email (known or not). */
typedef struct {
    gint64 window_start_us; /* the first failure counted */
    guint failures;
} LoginFailures;

struct _EinsoraAuth {
    GObject parent_instance;
    EinsoraStore *store;
    EinsoraNowFunc now;
    gpointer now_data;
    GHashTable *login_failures; /* lower-case email -> LoginFailures; main thread only */
    gint64 session_lifetime_us;
};

G_DEFINE_FINAL_TYPE(EinsoraAuth, einsora_auth, G_TYPE_OBJECT)

static void
einsora_auth_finalize(GObject *object)
{
    EinsoraAuth *self = EINSORA_AUTH(object);

    g_clear_object(&self->store);
    g_clear_pointer(&self->login_failures, g_hash_table_unref);
    G_OBJECT_CLASS(einsora_auth_parent_class)->finalize(object);
}

static void
einsora_auth_class_init(EinsoraAuthClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_auth_finalize;
}

static void
einsora_auth_init(EinsoraAuth *self)
{
    self->login_failures = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    self->session_lifetime_us = EINSORA_AUTH_SESSION_LIFETIME_US;
}

void
einsora_auth_set_session_lifetime(EinsoraAuth *self, gint64 lifetime_us)
{
    g_return_if_fail(EINSORA_IS_AUTH(self));
    g_return_if_fail(lifetime_us > 0);
    self->session_lifetime_us = lifetime_us;
}

gint64
einsora_auth_get_session_lifetime(EinsoraAuth *self)
{
    g_return_val_if_fail(EINSORA_IS_AUTH(self), 0);
    return self->session_lifetime_us;
}

EinsoraAuth *
einsora_auth_new(EinsoraStore *store, EinsoraNowFunc now, gpointer now_data)
{
    EinsoraAuth *self;

    g_return_val_if_fail(EINSORA_IS_STORE(store), NULL);
    g_return_val_if_fail(now != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_AUTH, NULL);
    self->store = g_object_ref(store);
    self->now = now;
    self->now_data = now_data;
    return self;
}

/* Helpers */

/* Frees a secret after wiping it. */
static void
secret_free(gchar *secret)
{
    if (secret == NULL)
        return;
    OPENSSL_cleanse(secret, strlen(secret));
    g_free(secret);
}

typedef gchar Secret;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Secret, secret_free)

static gboolean
new_secret(const char *prefix, gchar **secret, GError **error)
{
    *secret = einsora_credential_new_secret(prefix);
    if (*secret == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "the system's random generator failed");
        return FALSE;
    }
    return TRUE;
}

static gboolean
is_expired(const char *expires_at, const char *now)
{
    /* Fixed-width UTC text: text order is time order. */
    return expires_at != NULL && strcmp(expires_at, now) <= 0;
}

/* A name a person gave: 1 to @max_bytes of UTF-8, no control characters
 * (they would garble logs and terminals). */
static gboolean
check_name(const char *what, const char *name, gsize max_bytes, GError **error)
{
    gsize len = name != NULL ? strlen(name) : 0;

    if (len == 0 || len > max_bytes) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "%s must be 1 to %" G_GSIZE_FORMAT " bytes long", what, max_bytes);
        return FALSE;
    }
    if (!g_utf8_validate(name, len, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST, "%s must be UTF-8", what);
        return FALSE;
    }
    for (const char *p = name; *p != '\0'; p = g_utf8_next_char(p)) {
        if (g_unichar_iscntrl(g_utf8_get_char(p))) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "%s cannot contain control characters", what);
            return FALSE;
        }
    }
    return TRUE;
}

/* Checks an email address enough to catch mistakes (delivery is not ours
 * to judge) and returns it in ASCII lower case, the form the store keeps. */
static gchar *
normalize_email(const char *email, GError **error)
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

static gboolean
set_unauthenticated(GError **error, const char *message)
{
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED, message);
    return FALSE;
}

/* The user behind a token or session, if they may still act: a missing or
 * disabled user is UNAUTHENTICATED with @message. */
static EinsoraUser *
get_active_user(EinsoraAuth *self, const char *tenant_id, const char *user_id, const char *message,
                GError **error)
{
    g_autoptr(GError) local_error = NULL;
    g_autoptr(EinsoraUser) user =
        einsora_store_get_user(self->store, tenant_id, user_id, &local_error);

    if (user == NULL) {
        if (g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND))
            set_unauthenticated(error, message);
        else
            g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    if (user->disabled_at != NULL) {
        set_unauthenticated(error, message);
        return NULL;
    }
    return g_steal_pointer(&user);
}

/* API tokens */

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
    user = get_active_user(self, record->tenant_id, record->user_id, INVALID_TOKEN_MESSAGE, error);
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

    if (!check_name("a token's name", name, EINSORA_AUTH_TOKEN_NAME_MAX_BYTES, error))
        return NULL;
    if (!new_secret(EINSORA_CREDENTIAL_TOKEN_PREFIX, &value, error))
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

/* Browser sessions */

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

    g_return_val_if_fail(EINSORA_IS_AUTH(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    session = find_session(self, session_value, TRUE, error);
    if (session == NULL)
        return NULL;
    user =
        get_active_user(self, session->tenant_id, session->user_id, INVALID_SESSION_MESSAGE, error);
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
    return einsora_actor_new(user->tenant_id, user->id, user->email, SESSION_VIA);
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

/* Sign-in */

/* Failed sign-ins are counted per email in a window that opens with the
 * first failure; the fifth within the window locks the email until the
 * window closes, so a guesser gets at most 5 argon2 runs per window and
 * email. Unknown emails are counted the same, so a lock says nothing
 * about whether an account exists. In memory only: a restart forgets. */

static gboolean
login_failures_expired(const LoginFailures *record, gint64 now_us)
{
    return now_us - record->window_start_us >= EINSORA_AUTH_LOGIN_FAILURE_WINDOW_US;
}

static gboolean
is_locked_out(EinsoraAuth *self, const char *email)
{
    LoginFailures *record = g_hash_table_lookup(self->login_failures, email);
    gint64 now_us = self->now(self->now_data);

    if (record == NULL)
        return FALSE;
    if (login_failures_expired(record, now_us)) {
        g_hash_table_remove(self->login_failures, email);
        return FALSE;
    }
    return record->failures >= EINSORA_AUTH_LOGIN_FAILURES_MAX;
}

/* Keeps the table bounded: expired windows go first, then, if it is still
 * full, the oldest window. */
static void
make_room_for_failures(EinsoraAuth *self, gint64 now_us)
{
    GHashTableIter iter;
    gpointer key;
    gpointer value;
    const char *oldest = NULL;
    gint64 oldest_us = G_MAXINT64;

    if (g_hash_table_size(self->login_failures) < LOGIN_FAILURES_MAX_EMAILS)
        return;
    g_hash_table_iter_init(&iter, self->login_failures);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        if (login_failures_expired(value, now_us))
            g_hash_table_iter_remove(&iter);
    }
    if (g_hash_table_size(self->login_failures) < LOGIN_FAILURES_MAX_EMAILS)
        return;
    g_hash_table_iter_init(&iter, self->login_failures);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        LoginFailures *record = value;
        if (record->window_start_us < oldest_us) {
            oldest_us = record->window_start_us;
            oldest = key;
        }
    }
    g_hash_table_remove(self->login_failures, oldest);
}

static void
record_login_failure(EinsoraAuth *self, const char *email)
{
    gint64 now_us = self->now(self->now_data);
    LoginFailures *record = g_hash_table_lookup(self->login_failures, email);

    if (record != NULL && login_failures_expired(record, now_us)) {
        g_hash_table_remove(self->login_failures, email);
        record = NULL;
    }
    if (record == NULL) {
        make_room_for_failures(self, now_us);
        record = g_new0(LoginFailures, 1);
        record->window_start_us = now_us;
        g_hash_table_insert(self->login_failures, g_strdup(email), record);
    }
    record->failures++;
}

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

    if (!new_secret(EINSORA_CREDENTIAL_SESSION_PREFIX, &session_value, error) ||
        !new_secret(EINSORA_CREDENTIAL_CSRF_PREFIX, &csrf_token, error))
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
    result->session_value = g_steal_pointer(&session_value);
    result->csrf_token = g_steal_pointer(&csrf_token);
    return result;
}

static void
login_failed(EinsoraAuth *self, GTask *task, LoginContext *ctx)
{
    record_login_failure(self, ctx->email);
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
    current = get_active_user(self, user->tenant_id, user->id, WRONG_LOGIN_MESSAGE, &error);
    if (current != NULL && g_strcmp0(current->password_hash, user->password_hash) != 0) {
        g_clear_pointer(&current, einsora_user_free);
        g_clear_error(&error);
        login_failed(self, task, ctx);
        return;
    }
    if (current == NULL) {
        if (g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED))
            record_login_failure(self, ctx->email);
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
    if (is_locked_out(self, ctx->email)) {
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

/* Accounts */

typedef struct {
    const EinsoraTenant *tenant;
    const EinsoraUser *user;
    /* First run only */
    const EinsoraApiToken *token;
    const char *const *gpu_classes;
    gint64 gpus_per_class;
    gboolean users_exist;
} AccountContext;

/* The store's conflict messages cover both unique keys; say which. */
static gboolean
insert_account_tx(EinsoraStore *store, gpointer user_data, GError **error)
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

static EinsoraUser *
user_new(const char *tenant_id, const char *email, const char *password_hash, const char *role,
         gint64 now_us)
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

    if (!check_name("a tenant's name", tenant_name, EINSORA_AUTH_TENANT_NAME_MAX_BYTES, error))
        return NULL;
    normalized = normalize_email(email, error);
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
    user = user_new(tenant_id, normalized, password_hash, role, now_us);
    ctx.tenant = tenant;
    ctx.user = user;
    if (!einsora_store_in_transaction(self->store, insert_account_tx, &ctx, error))
        return NULL;
    return g_steal_pointer(&user);
}

/* Solo's first run */

static gboolean
first_run_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    AccountContext *ctx = user_data;
    gint64 users = 0;

    /* Checked again under the write lock, in case another process got
     * here first. */
    if (!einsora_store_count_users(store, &users, error))
        return FALSE;
    if (users > 0) {
        ctx->users_exist = TRUE;
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "accounts were created meanwhile");
        return FALSE;
    }
    if (!insert_account_tx(store, ctx, error))
        return FALSE;
    for (guint i = 0; ctx->gpu_classes != NULL && ctx->gpu_classes[i] != NULL; i++) {
        if (!einsora_store_set_quota(store, ctx->tenant->id, ctx->gpu_classes[i],
                                     ctx->gpus_per_class, error))
            return FALSE;
    }
    return einsora_store_insert_api_token(store, ctx->token, error);
}

static gboolean
write_all(int fd, const char *data, gsize len)
{
    while (len > 0) {
        ssize_t written = write(fd, data, len);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return FALSE;
        data += written;
        len -= (gsize)written;
    }
    return TRUE;
}

/* Creates @path, refusing to replace anything (a symbolic link included),
 * and makes the secret durable before the account that honours it exists.
 * FALSE with *exists set when the file was already there. */
static gboolean
write_token_file(const char *path, const char *secret, gboolean *exists, GError **error)
{
    g_autofree gchar *contents = g_strconcat(secret, "\n", NULL);
    g_autofree gchar *dir = g_path_get_dirname(path);
    int fd;
    int dir_fd;
    gboolean ok;
    int saved_errno;

    *exists = FALSE;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, TOKEN_FILE_MODE);
    if (fd < 0) {
        saved_errno = errno;
        OPENSSL_cleanse(contents, strlen(contents));
        *exists = saved_errno == EEXIST;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "can't create %s: %s",
                    path, g_strerror(saved_errno));
        return FALSE;
    }
    /* The umask may have removed bits; say exactly what is meant. */
    ok = fchmod(fd, TOKEN_FILE_MODE) == 0 && write_all(fd, contents, strlen(contents)) &&
         fsync(fd) == 0;
    saved_errno = errno;
    OPENSSL_cleanse(contents, strlen(contents));
    if (close(fd) != 0 && ok) {
        ok = FALSE;
        saved_errno = errno;
    }
    if (!ok) {
        unlink(path);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "can't write %s: %s",
                    path, g_strerror(saved_errno));
        return FALSE;
    }
    /* So that the file's name survives a crash too. */
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        fsync(dir_fd);
        close(dir_fd);
    }
    return TRUE;
}

gboolean
einsora_auth_ensure_first_run(EinsoraAuth *self, const char *data_dir,
                              const char *const *gpu_classes, gint64 gpus_per_class,
                              EinsoraUser **owner, GError **error)
{
    g_autofree gchar *path = NULL;
    g_autoptr(Secret) secret = NULL;
    g_autofree gchar *tenant_id = NULL;
    g_autofree gchar *created_at = NULL;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autoptr(EinsoraApiToken) token = NULL;
    g_autoptr(GError) local_error = NULL;
    AccountContext ctx = {0};
    gboolean exists = FALSE;
    gint64 users = 0;
    gint64 now_us;

    g_return_val_if_fail(EINSORA_IS_AUTH(self), FALSE);
    g_return_val_if_fail(data_dir != NULL, FALSE);
    g_return_val_if_fail(gpus_per_class >= 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (owner != NULL)
        *owner = NULL;
    if (!einsora_store_count_users(self->store, &users, error))
        return FALSE;
    if (users > 0)
        return TRUE;

    path = g_build_filename(data_dir, EINSORA_AUTH_TOKEN_FILE, NULL);
    if (!new_secret(EINSORA_CREDENTIAL_TOKEN_PREFIX, &secret, error))
        return FALSE;
    if (!write_token_file(path, secret, &exists, &local_error)) {
        if (!exists) {
            g_propagate_error(error, g_steal_pointer(&local_error));
            return FALSE;
        }
        /* Someone's token (or a stale one): never replaced behind their
         * back. */
        g_warning("the store has no accounts, but %s exists; leaving it alone. Remove it and "
                  "start again to create the local account and its API token",
                  path);
        return TRUE;
    }

    now_us = self->now(self->now_data);
    tenant_id = einsora_uuid_v7_new(now_us / 1000);
    created_at = einsora_timestamp_format(now_us);
    tenant = einsora_tenant_new(tenant_id, EINSORA_AUTH_LOCAL_TENANT, TRUE, created_at);
    user =
        user_new(tenant_id, EINSORA_AUTH_LOCAL_OWNER_EMAIL, NULL, EINSORA_USER_ROLE_OWNER, now_us);
    token = einsora_api_token_new();
    token->id = einsora_uuid_v7_new(now_us / 1000);
    token->tenant_id = g_strdup(tenant_id);
    token->user_id = g_strdup(user->id);
    token->name = g_strdup(EINSORA_AUTH_LOCAL_TOKEN_NAME);
    token->prefix = einsora_credential_display_prefix(secret);
    token->token_sha256 = einsora_credential_sha256_hex(secret);
    token->created_at = g_strdup(created_at);

    ctx.tenant = tenant;
    ctx.user = user;
    ctx.token = token;
    ctx.gpu_classes = gpu_classes;
    ctx.gpus_per_class = gpus_per_class;
    if (!einsora_store_in_transaction(self->store, first_run_tx, &ctx, &local_error)) {
        /* The file holds a token no account honours. */
        unlink(path);
        if (ctx.users_exist)
            return TRUE;
        g_propagate_prefixed_error(error, g_steal_pointer(&local_error),
                                   "creating the local account: ");
        return FALSE;
    }
    if (owner != NULL)
        *owner = g_steal_pointer(&user);
    return TRUE;
}
