#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-user.h"

G_DEFINE_BOXED_TYPE(EinsoraUser, einsora_user, einsora_user_copy, einsora_user_free)

EinsoraUser *
einsora_user_new(void)
{
    return g_new0(EinsoraUser, 1);
}

EinsoraUser *
einsora_user_copy(const EinsoraUser *user)
{
    EinsoraUser *copy = g_new0(EinsoraUser, 1);

    copy->id = g_strdup(user->id);
    copy->tenant_id = g_strdup(user->tenant_id);
    copy->email = g_strdup(user->email);
    copy->display_name = g_strdup(user->display_name);
    copy->password_hash = g_strdup(user->password_hash);
    copy->role = g_strdup(user->role);
    copy->created_at = g_strdup(user->created_at);
    copy->disabled_at = g_strdup(user->disabled_at);
    copy->admin = user->admin;
    copy->password_must_change = user->password_must_change;
    return copy;
}

void
einsora_user_free(EinsoraUser *user)
{
    if (user == NULL)
        return;
    g_free(user->id);
    g_free(user->tenant_id);
    g_free(user->email);
    g_free(user->display_name);
    g_free(user->password_hash);
    g_free(user->role);
    g_free(user->created_at);
    g_free(user->disabled_at);
    g_free(user);
}

gboolean
einsora_user_role_is_valid(const char *role)
{
    return g_strcmp0(role, EINSORA_USER_ROLE_OWNER) == 0 ||
           g_strcmp0(role, EINSORA_USER_ROLE_MEMBER) == 0;
}
