#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-actor.h"

G_DEFINE_BOXED_TYPE(EinsoraActor, einsora_actor, einsora_actor_copy, einsora_actor_free)

EinsoraActor *
einsora_actor_new(const char *tenant_id, const char *user_id, const char *subject, const char *via)
{
    EinsoraActor *actor = g_new0(EinsoraActor, 1);
    actor->tenant_id = g_strdup(tenant_id);
    actor->user_id = g_strdup(user_id);
    actor->subject = g_strdup(subject);
    actor->via = g_strdup(via);
    return actor;
}

EinsoraActor *
einsora_actor_copy(const EinsoraActor *actor)
{
    EinsoraActor *copy =
        einsora_actor_new(actor->tenant_id, actor->user_id, actor->subject, actor->via);

    copy->password_must_change = actor->password_must_change;
    return copy;
}

void
einsora_actor_free(EinsoraActor *actor)
{
    if (actor == NULL)
        return;
    g_free(actor->tenant_id);
    g_free(actor->user_id);
    g_free(actor->subject);
    g_free(actor->via);
    g_free(actor);
}
