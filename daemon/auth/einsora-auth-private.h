/* What the parts of EinsoraAuth share: the instance, the helpers every
 * part uses (defined in einsora-auth.c, or here when a line or two), and
 * the functions one part offers another, by the file that holds them.
 * Private to daemon/auth. */
#pragma once

#include <openssl/crypto.h>
#include <string.h>

#include "einsora-auth.h"
#include "einsora-error.h"

G_BEGIN_DECLS

/* How an actor signed in with a session came (sessions and sign-in). */
#define SESSION_VIA "browser session"

struct _EinsoraAuth {
    GObject parent_instance;
    EinsoraStore *store;
    EinsoraNowFunc now;
    gpointer now_data;
    GHashTable *login_failures; /* lower-case email -> LoginFailures; main thread only */
    gint64 session_lifetime_us;
};

/* Frees a secret after wiping it. */
static inline void
secret_free(gchar *secret)
{
    if (secret == NULL)
        return;
    OPENSSL_cleanse(secret, strlen(secret));
    g_free(secret);
}

typedef gchar Secret;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Secret, secret_free)

static inline gboolean
is_expired(const char *expires_at, const char *now)
{
    /* Fixed-width UTC text: text order is time order. */
    return expires_at != NULL && strcmp(expires_at, now) <= 0;
}

static inline gboolean
set_unauthenticated(GError **error, const char *message)
{
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED, message);
    return FALSE;
}

/* Helpers, in einsora-auth.c. */

/* A new secret with @prefix; FALSE if the random generator failed. */
gboolean einsora_auth_new_secret(const char *prefix, gchar **secret, GError **error);

/* A name a person gave: 1 to @max_bytes of UTF-8, no control characters
 * (they would garble logs and terminals). */
gboolean einsora_auth_check_name(const char *what, const char *name, gsize max_bytes,
                                 GError **error);

/* The user behind a token or session, if they may still act: a missing or
 * disabled user is UNAUTHENTICATED with @message. */
EinsoraUser *einsora_auth_get_active_user(EinsoraAuth *self, const char *tenant_id,
                                          const char *user_id, const char *message, GError **error);

/* einsora-auth-lockout.c: failed sign-ins per email. */

/* Whether @email is locked out now (an expired window is forgotten). */
gboolean einsora_auth_is_locked_out(EinsoraAuth *self, const char *email);
/* Counts a failed sign-in for @email. */
void einsora_auth_record_login_failure(EinsoraAuth *self, const char *email);

/* einsora-auth-accounts.c: what a new account is, shared with Solo's first
 * run (einsora-auth-first-run.c). */
typedef struct {
    const EinsoraTenant *tenant;
    const EinsoraUser *user;
    /* First run only */
    const EinsoraApiToken *token;
    const char *const *gpu_classes;
    gint64 gpus_per_class;
    gboolean users_exist;
} AccountContext;

/* Inserts the tenant and user of @user_data, an AccountContext, in the
 * store's transaction. The store's conflict messages cover both unique
 * keys; say which. */
gboolean einsora_auth_insert_account_tx(EinsoraStore *store, gpointer user_data, GError **error);
/* A new user, its display name the part of @email before the @. */
/* The account @user_id in whatever tenant (a Lab has tens: the list is
 * the index), or NOT_FOUND. For admins' operations. */
EinsoraUser *einsora_auth_find_account(EinsoraAuth *self, const char *user_id, GError **error);
/* @email checked and in ASCII lower case, or NULL with INVALID_REQUEST. */
gchar *einsora_auth_normalize_email(const char *email, GError **error);
EinsoraUser *einsora_auth_user_new(const char *tenant_id, const char *email,
                                   const char *password_hash, const char *role, gint64 now_us);

G_END_DECLS
