/* A local account: someone who signs in with a password or uses API tokens.
 * Belongs to one tenant; emails are unique across all tenants. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define EINSORA_USER_ROLE_OWNER "owner"
#define EINSORA_USER_ROLE_MEMBER "member"

typedef struct {
    gchar *id;
    gchar *tenant_id;
    gchar *email;
    gchar *display_name;
    gchar *password_hash; /* argon2id, encoded; NULL: no password sign-in */
    gchar *role;          /* "owner" or "member" */
    gchar *created_at;
    gchar *disabled_at; /* NULL while the account may sign in */
    /* A Lab admin: manages every tenant's accounts and quotas. */
    gboolean admin;
    /* Its password was reset: it must be changed at the next sign-in. */
    gboolean password_must_change;
} EinsoraUser;

#define EINSORA_TYPE_USER (einsora_user_get_type())
GType einsora_user_get_type(void);

EinsoraUser *einsora_user_new(void);
EinsoraUser *einsora_user_copy(const EinsoraUser *user);
void einsora_user_free(EinsoraUser *user);

gboolean einsora_user_role_is_valid(const char *role);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraUser, einsora_user_free)

G_END_DECLS
