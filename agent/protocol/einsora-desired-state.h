/* A machine's complete desired state, as the hub answers a Sync: every
 * workload placed on it and what to do with it, under a generation that
 * grows whenever it changes. A workload the agent has but that isn't
 * listed is stopped and kept, never deleted. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-desired-workload.h"

G_BEGIN_DECLS

typedef struct {
    gchar *machine_id;
    gint64 generation;
    GPtrArray *workloads; /* EinsoraDesiredWorkload, owned */
    /* The hub has every replayed status change up to this one: the
     * agent's outbox may drop them. 0: none (left out of the JSON). */
    gint64 replayed_through;
    /* Streams the access proxy is waiting for: the agent opens this many
     * tunnel streams now (docs/adr/0059). 0: none (left out of the JSON,
     * and only ever sent to an agent whose report said it takes them). */
    gint64 open_tunnels;
} EinsoraDesiredState;

#define EINSORA_TYPE_DESIRED_STATE (einsora_desired_state_get_type())
GType einsora_desired_state_get_type(void);

EinsoraDesiredState *einsora_desired_state_new(void);
EinsoraDesiredState *einsora_desired_state_copy(const EinsoraDesiredState *state);
void einsora_desired_state_free(EinsoraDesiredState *state);
/* Whether @a and @b ask the same of the machine, generations aside: what
 * a sync would carry. */
gboolean einsora_desired_state_same_content(const EinsoraDesiredState *a,
                                            const EinsoraDesiredState *b);

JsonNode *einsora_desired_state_to_json(const EinsoraDesiredState *state);
EinsoraDesiredState *einsora_desired_state_from_json(JsonNode *node, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraDesiredState, einsora_desired_state_free)

G_END_DECLS
