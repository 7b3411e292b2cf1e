/* Who asked for something: the authenticated subject behind an action,
 * and how they proved it. Reasons name the actor; logic scopes by tenant. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *tenant_id;
    gchar *user_id;
    gchar *subject; /* e.g. the user's email */
    gchar *via;     /* e.g. browser session, or API token "laptop" (tsk_Ab3x…) */
    /* Signed in with a password an admin reset: until it is changed, the
     * session may do nothing else. */
    gboolean password_must_change;
} EinsoraActor;

#define EINSORA_TYPE_ACTOR (einsora_actor_get_type())
GType einsora_actor_get_type(void);

EinsoraActor *einsora_actor_new(const char *tenant_id, const char *user_id, const char *subject,
                                const char *via);
EinsoraActor *einsora_actor_copy(const EinsoraActor *actor);
void einsora_actor_free(EinsoraActor *actor);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraActor, einsora_actor_free)

G_END_DECLS
