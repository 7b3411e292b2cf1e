/* Local authentication: API tokens, browser sessions with their CSRF
 * token, password sign-in, local accounts, and Solo's first run. Secrets
 * are returned to the caller once and stored only as SHA-256 hashes;
 * passwords only as argon2id hashes, computed outside any store
 * transaction. Time comes from the injected clock. */
#pragma once

#include <gio/gio.h>

#include "einsora-actor.h"
#include "einsora-api-token.h"
#include "einsora-store.h"
#include "einsora-timestamp.h"
#include "einsora-user.h"

G_BEGIN_DECLS

#define EINSORA_AUTH_SESSION_LIFETIME_US (7 * G_TIME_SPAN_DAY)
/* This many failed sign-ins for one email within the window lock it until
 * the window, which opens with the first of them, closes. */
#define EINSORA_AUTH_LOGIN_FAILURES_MAX 5
#define EINSORA_AUTH_LOGIN_FAILURE_WINDOW_US (15 * G_TIME_SPAN_MINUTE)
#define EINSORA_AUTH_TOKEN_NAME_MAX_BYTES 64
#define EINSORA_AUTH_TENANT_NAME_MAX_BYTES 64
/* GPUs of one class a quota may give (a check against typing mistakes). */
#define EINSORA_AUTH_MAX_QUOTA 4096

/* Solo's first run. */
#define EINSORA_AUTH_LOCAL_TENANT "local"
#define EINSORA_AUTH_LOCAL_OWNER_EMAIL "owner@localhost"
#define EINSORA_AUTH_LOCAL_TOKEN_NAME "local"
#define EINSORA_AUTH_TOKEN_FILE "token"

#define EINSORA_TYPE_AUTH (einsora_auth_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAuth, einsora_auth, EINSORA, AUTH, GObject)

EinsoraAuth *einsora_auth_new(EinsoraStore *store, EinsoraNowFunc now, gpointer now_data);

/* The actor behind an API token ("tsk_..."). Unknown, revoked and expired
 * tokens, and tokens of a disabled user, are all
 * EINSORA_ERROR_UNAUTHENTICATED with one message. Records last_used_at, at
 * most once a minute per token so that reads do not each cost a write. */
EinsoraActor *einsora_auth_authenticate_token(EinsoraAuth *self, const char *token, GError **error);

/* The actor behind a session cookie's value ("ses_..."): unknown, expired
 * or revoked is EINSORA_ERROR_UNAUTHENTICATED. For an @unsafe_method
 * (anything but GET, HEAD, OPTIONS), @csrf_token must match the session's,
 * or it is EINSORA_ERROR_FORBIDDEN. */
EinsoraActor *einsora_auth_authenticate_session(EinsoraAuth *self, const char *session_value,
                                                const char *csrf_token, gboolean unsafe_method,
                                                GError **error);

/* Password sign-in. The password is checked on the credential module's
 * bounded pool; on success a session valid for 7 days is stored and its
 * cookie value and CSRF token are returned (only here). A wrong email or
 * password is EINSORA_ERROR_UNAUTHENTICATED, taking the same time either
 * way. An email (known or not) with EINSORA_AUTH_LOGIN_FAILURES_MAX
 * failures in the window is refused without a password check, also
 * EINSORA_ERROR_UNAUTHENTICATED but with its own message; a success
 * forgets its failures. A full pool is G_IO_ERROR_BUSY. Cancelling
 * @cancellable skips the password check if it has not started, and stores
 * no session once it has: G_IO_ERROR_CANCELLED. */
void einsora_auth_login_async(EinsoraAuth *self, const char *email, const char *password,
                              GCancellable *cancellable, GAsyncReadyCallback callback,
                              gpointer user_data);
/* @actor, @session_value and @csrf_token may each be NULL. */
gboolean einsora_auth_login_finish(EinsoraAuth *self, GAsyncResult *result, EinsoraActor **actor,
                                   gchar **session_value, gchar **csrf_token, GError **error);

/* How long a new session lasts: EINSORA_AUTH_SESSION_LIFETIME_US unless
 * set (tests shorten it). */
void einsora_auth_set_session_lifetime(EinsoraAuth *self, gint64 lifetime_us);
gint64 einsora_auth_get_session_lifetime(EinsoraAuth *self);

/* Revokes the session whose cookie value is @session_value; revoking one
 * already revoked succeeds. An unknown session is
 * EINSORA_ERROR_UNAUTHENTICATED. */
gboolean einsora_auth_logout(EinsoraAuth *self, const char *session_value, GError **error);

/* A new API token for the actor's own user. The secret comes back in
 * @secret, and nowhere else, ever. @name: 1 to 64 bytes of UTF-8 without
 * control characters. */
EinsoraApiToken *einsora_auth_create_token(EinsoraAuth *self, const EinsoraActor *actor,
                                           const char *name, gchar **secret, GError **error);
/* The actor's own tokens, oldest first, revoked ones included. */
GPtrArray *einsora_auth_list_tokens(EinsoraAuth *self, const EinsoraActor *actor, GError **error);
/* A keyset page of them: after (@after_created_at, @after_id), both NULL
 * for the first, at most @limit. */
GPtrArray *einsora_auth_list_tokens_page(EinsoraAuth *self, const EinsoraActor *actor,
                                         const char *after_created_at, const char *after_id,
                                         guint limit, GError **error);
/* Another user's token, or a malformed ID, is EINSORA_ERROR_NOT_FOUND. */
gboolean einsora_auth_revoke_token(EinsoraAuth *self, const EinsoraActor *actor,
                                   const char *token_id, GError **error);

/* Lab administration (docs/adr/0049). @actor must be an active Lab
 * admin, else EINSORA_ERROR_FORBIDDEN; NULL is the daemon's own command,
 * run on the machine. Each change is written with its line in the
 * tenant's audit trail, in one transaction, and logged; no secret in
 * either. */
gboolean einsora_auth_require_admin(EinsoraAuth *self, const EinsoraActor *actor, GError **error);
GPtrArray *einsora_auth_admin_list_accounts(EinsoraAuth *self, const EinsoraActor *actor,
                                            GError **error);
GPtrArray *einsora_auth_admin_list_tenants(EinsoraAuth *self, const EinsoraActor *actor,
                                           GError **error);
/* A new account, a member of the tenant @tenant_id or the owner of a new
 * tenant named @new_tenant (exactly one), with a first API token whose
 * secret goes to *@secret. @password: NULL for none (the API never sets
 * one: argon2 is slow on purpose, and no request waits for it). */
EinsoraUser *einsora_auth_admin_create_account(EinsoraAuth *self, const EinsoraActor *actor,
                                               const char *tenant_id, const char *new_tenant,
                                               const char *email, const char *password,
                                               gboolean admin, gchar **secret, GError **error);
/* Disables (its tokens and sessions stop at the next request) or enables
 * the account @user_id, in whatever tenant; an admin can't disable
 * itself. The account as it is now. */
EinsoraUser *einsora_auth_admin_set_disabled(EinsoraAuth *self, const EinsoraActor *actor,
                                             const char *user_id, gboolean disabled,
                                             GError **error);
/* The GPUs of @gpu_class the tenant may hold (the caller checks the
 * class against the catalog). */
gboolean einsora_auth_admin_set_quota(EinsoraAuth *self, const EinsoraActor *actor,
                                      const char *tenant_id, const char *gpu_class, gint64 gpus,
                                      GError **error);
/* @actor's own new password (at least 8 characters), checked against
 * @current_password when the account has one; a wrong one is
 * EINSORA_ERROR_FORBIDDEN. Clears a reset's must-change. */
void einsora_auth_change_password_async(EinsoraAuth *self, const EinsoraActor *actor,
                                        const char *current_password, const char *new_password,
                                        GCancellable *cancellable, GAsyncReadyCallback callback,
                                        gpointer user_data);
gboolean einsora_auth_change_password_finish(EinsoraAuth *self, GAsyncResult *result,
                                             GError **error);
/* An admin resets @user_id's password: a new random one, returned once
 * (to be given to the person), that must be changed at the next sign-in. */
void einsora_auth_admin_reset_password_async(EinsoraAuth *self, const EinsoraActor *actor,
                                             const char *user_id, GCancellable *cancellable,
                                             GAsyncReadyCallback callback, gpointer user_data);
gchar *einsora_auth_admin_reset_password_finish(EinsoraAuth *self, GAsyncResult *result,
                                                GError **error);
/* The machine's owner (the owner role of its tenant) or a Lab admin
 * chooses who may run on it: private, or community (the Lab's tenants,
 * on drivers that host guests). Another tenant's machine is NOT_FOUND to
 * anyone but an admin; "invite" is refused until invite lists exist. The
 * machine as it is now. */
EinsoraMachine *einsora_auth_set_machine_sharing(EinsoraAuth *self, const EinsoraActor *actor,
                                                 const char *machine_id, EinsoraSharing sharing,
                                                 GError **error);
/* Revocation (docs/adr/0056): the machine's agent certificate finds it
 * no more, so its next sync is refused; the owner or a Lab admin, as for
 * sharing. A machine with no agent certificate (this daemon's own, or
 * one revoked already) is CONFLICT. The machine as it was. */
EinsoraMachine *einsora_auth_revoke_machine(EinsoraAuth *self, const EinsoraActor *actor,
                                            const char *machine_id, GError **error);
/* A tenant's quota of @gpu_class, for a caller that checked who may ask. */
gboolean einsora_auth_get_quota(EinsoraAuth *self, const char *tenant_id, const char *gpu_class,
                                gint64 *gpus, GError **error);
/* The latest @limit lines of @actor's own tenant's audit trail. */
GPtrArray *einsora_auth_list_audit(EinsoraAuth *self, const EinsoraActor *actor, guint limit,
                                   GError **error);

/* A new tenant and its first user, in one transaction. The password (NULL:
 * no password sign-in) is hashed first, synchronously: this is for
 * start-up and operator commands, not the main loop of a serving daemon.
 * Emails are stored in ASCII lower case. Bad input is
 * EINSORA_ERROR_INVALID_REQUEST; a taken email or tenant name is
 * EINSORA_ERROR_CONFLICT. */
EinsoraUser *einsora_auth_create_account(EinsoraAuth *self, const char *tenant_name,
                                         const char *email, const char *password, const char *role,
                                         gboolean trusted, GError **error);

/* Solo's first run. When the store has no users: creates the tenant
 * "local" (trusted) with a quota of @gpus_per_class for each of
 * @gpu_classes (NULL-terminated, may be NULL), its owner
 * "owner@localhost" without a password, and an API token named "local"
 * whose secret goes to <data_dir>/token (mode 0600, followed by a
 * newline). An existing token file is never overwritten: if one is there,
 * nothing is created and a warning says to remove it. When users exist,
 * nothing happens. @owner gets the new owner, or NULL when nothing was
 * created. */
gboolean einsora_auth_ensure_first_run(EinsoraAuth *self, const char *data_dir,
                                       const char *const *gpu_classes, gint64 gpus_per_class,
                                       EinsoraUser **owner, GError **error);

G_END_DECLS
