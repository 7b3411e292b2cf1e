/* Passwords changed by their owner, and reset by a Lab's admin (docs/adr/
 * 0049). argon2id runs on the credential module's pool, never on the main
 * loop. A reset password is shown once, to the admin who made it, and
 * must be changed at the next sign-in. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include "einsora-credential.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

#define MIN_PASSWORD_CHARS 8
#define TEMPORARY_PREFIX "tmp_"

typedef struct {
    EinsoraActor *actor; /* NULL: an admin's reset needs none kept */
    EinsoraUser *user;   /* as read before the slow part */
    gchar *new_password;
    gchar *new_hash;
    gboolean must_change;
    const char *action;
    EinsoraAuditEvent *event;
} PasswordChange;

static void
password_change_free(PasswordChange *change)
{
    einsora_actor_free(change->actor);
    einsora_user_free(change->user);
    secret_free(change->new_password);
    g_free(change->new_hash);
    einsora_audit_event_free(change->event);
    g_free(change);
}

static gboolean
check_new_password(const char *password, GError **error)
{
    if (password == NULL || g_utf8_strlen(password, -1) < MIN_PASSWORD_CHARS) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "a password has at least %d characters", MIN_PASSWORD_CHARS);
        return FALSE;
    }
    if (strlen(password) > EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "a password has at most %d bytes", EINSORA_CREDENTIAL_PASSWORD_MAX_BYTES);
        return FALSE;
    }
    return TRUE;
}

static gboolean
store_password_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    PasswordChange *change = user_data;

    /* Whoever signed in with the old password is signed out: a stolen
     * session doesn't outlive the change (tokens are their own
     * credential and stay). */
    return einsora_store_set_user_password(store, change->user->tenant_id, change->user->id,
                                           change->new_hash, change->must_change, error) &&
           einsora_store_revoke_user_sessions(store, change->user->tenant_id, change->user->id,
                                              change->event->at, error) &&
           einsora_store_insert_audit_event(store, change->event, error);
}

static void
on_hashed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    EinsoraAuth *self = g_task_get_source_object(task);
    PasswordChange *change = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) current = NULL;
    gint64 now_us;

    change->new_hash = einsora_credential_hash_password_finish(result, &error);
    if (change->new_hash == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    /* The client went away: nothing changes that nobody will be told. */
    if (g_task_return_error_if_cancelled(task))
        return;
    /* Changed meanwhile (another change, a reset): the later one wins,
     * never this one over it. */
    current =
        einsora_store_get_user(self->store, change->user->tenant_id, change->user->id, &error);
    if (current == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    if (g_strcmp0(current->password_hash, change->user->password_hash) != 0) {
        g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                                "the password changed meanwhile: try again");
        return;
    }
    now_us = self->now(self->now_data);
    change->event = einsora_audit_event_new();
    change->event->id = einsora_uuid_v7_new(now_us / 1000);
    change->event->tenant_id = g_strdup(current->tenant_id);
    change->event->at = einsora_timestamp_format(now_us);
    change->event->actor =
        g_strdup(change->actor != NULL ? change->actor->subject : "einsora-daemon");
    change->event->actor_user_id = g_strdup(change->actor != NULL ? change->actor->user_id : NULL);
    change->event->action = g_strdup(change->action);
    change->event->target = g_strdup(current->email);
    change->event->detail = g_strdup(change->must_change ? "to be changed at the next sign-in"
                                                         : "changed by its owner");
    if (!einsora_store_in_transaction(self->store, store_password_tx, change, &error)) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    g_message("audit: %s: %s %s (%s), tenant %s", change->event->actor, change->event->action,
              change->event->target, change->event->detail, change->event->tenant_id);
    g_task_return_pointer(task, g_steal_pointer(&change->new_password),
                          (GDestroyNotify)secret_free);
}

static void
on_verified(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    PasswordChange *change = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;

    if (!einsora_credential_verify_password_finish(result, &error)) {
        /* A wrong guess counts as a failed sign-in: the same lockout. */
        if (g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED)) {
            einsora_auth_record_login_failure(g_task_get_source_object(task), change->user->email);
            g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN,
                                    "the current password is wrong");
        } else
            g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    einsora_credential_hash_password_async(change->new_password, g_task_get_cancellable(task),
                                           on_hashed, g_object_ref(task));
}

void
einsora_auth_change_password_async(EinsoraAuth *self, const EinsoraActor *actor,
                                   const char *current_password, const char *new_password,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GError) error = NULL;
    PasswordChange *change;
    EinsoraUser *user;

    g_return_if_fail(EINSORA_IS_AUTH(self));
    g_return_if_fail(actor != NULL);
    g_task_set_source_tag(task, einsora_auth_change_password_async);
    if (!check_new_password(new_password, &error)) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    user = einsora_auth_get_active_user(self, actor->tenant_id, actor->user_id,
                                        "this account can no longer sign in", &error);
    if (user == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    change = g_new0(PasswordChange, 1);
    change->actor = einsora_actor_copy(actor);
    change->user = user;
    change->new_password = g_strdup(new_password);
    change->action = EINSORA_AUDIT_PASSWORD_CHANGED;
    g_task_set_task_data(task, change, (GDestroyNotify)password_change_free);
    /* The first password of an account that had none: its token or
     * session is the proof. */
    if (user->password_hash == NULL) {
        einsora_credential_hash_password_async(new_password, cancellable, on_hashed,
                                               g_steal_pointer(&task));
        return;
    }
    if (current_password == NULL) {
        g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                                "give the current password too");
        return;
    }
    if (einsora_auth_is_locked_out(self, user->email)) {
        g_task_return_new_error(task, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN,
                                "too many wrong passwords; try again later");
        return;
    }
    einsora_credential_verify_password_async(user->password_hash, current_password, cancellable,
                                             on_verified, g_steal_pointer(&task));
}

gboolean
einsora_auth_change_password_finish(EinsoraAuth *self, GAsyncResult *result, GError **error)
{
    g_autoptr(Secret) password = NULL;

    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    password = g_task_propagate_pointer(G_TASK(result), error);
    return password != NULL;
}

void
einsora_auth_admin_reset_password_async(EinsoraAuth *self, const EinsoraActor *actor,
                                        const char *user_id, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    PasswordChange *change;

    g_return_if_fail(EINSORA_IS_AUTH(self));
    g_task_set_source_tag(task, einsora_auth_admin_reset_password_async);
    if (!einsora_auth_require_admin(self, actor, &error) ||
        (user = einsora_auth_find_account(self, user_id, &error)) == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    change = g_new0(PasswordChange, 1);
    change->actor = actor != NULL ? einsora_actor_copy(actor) : NULL;
    change->user = g_steal_pointer(&user);
    g_task_set_task_data(task, change, (GDestroyNotify)password_change_free);
    if (!einsora_auth_new_secret(TEMPORARY_PREFIX, &change->new_password, &error)) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    change->must_change = TRUE;
    change->action = EINSORA_AUDIT_PASSWORD_RESET;
    einsora_credential_hash_password_async(change->new_password, cancellable, on_hashed,
                                           g_steal_pointer(&task));
}

gchar *
einsora_auth_admin_reset_password_finish(EinsoraAuth *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}
