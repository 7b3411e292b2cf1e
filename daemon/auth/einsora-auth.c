/* EinsoraAuth itself: the instance's life, the session lifetime, and the
 * helpers every part uses (secrets, names, the user behind a credential).
 * The parts: einsora-auth-tokens.c, -sessions.c, -login.c, -lockout.c,
 * -accounts.c and -first-run.c. */
#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-auth-private.h"

#include <string.h>

#include "einsora-credential.h"
#include "einsora-error.h"

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

gboolean
einsora_auth_new_secret(const char *prefix, gchar **secret, GError **error)
{
    *secret = einsora_credential_new_secret(prefix);
    if (*secret == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "the system's random generator failed");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_auth_check_name(const char *what, const char *name, gsize max_bytes, GError **error)
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

EinsoraUser *
einsora_auth_get_active_user(EinsoraAuth *self, const char *tenant_id, const char *user_id,
                             const char *message, GError **error)
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
