/* Workload kinds, states and the lifecycle: the one place that says which
 * steps are allowed and what each state holds. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    EINSORA_WORKLOAD_KIND_NOTEBOOK,
    EINSORA_WORKLOAD_KIND_ENDPOINT,
    EINSORA_WORKLOAD_KIND_VM,
} EinsoraWorkloadKind;

#define EINSORA_WORKLOAD_KIND_COUNT 3

typedef enum {
    EINSORA_WORKLOAD_STATE_PENDING,
    EINSORA_WORKLOAD_STATE_QUEUED,
    EINSORA_WORKLOAD_STATE_PROVISIONING,
    EINSORA_WORKLOAD_STATE_RUNNING,
    EINSORA_WORKLOAD_STATE_STOPPING,
    EINSORA_WORKLOAD_STATE_STOPPED,
    EINSORA_WORKLOAD_STATE_FAILED,
    EINSORA_WORKLOAD_STATE_DELETING,
    EINSORA_WORKLOAD_STATE_DELETED,
} EinsoraWorkloadState;

#define EINSORA_WORKLOAD_STATE_COUNT 9

const char *einsora_workload_kind_to_string(EinsoraWorkloadKind kind);
gboolean einsora_workload_kind_from_string(const char *str, EinsoraWorkloadKind *kind);

const char *einsora_workload_state_to_string(EinsoraWorkloadState state);
gboolean einsora_workload_state_from_string(const char *str, EinsoraWorkloadState *state);

/* The state a new workload starts in. */
#define EINSORA_WORKLOAD_STATE_INITIAL EINSORA_WORKLOAD_STATE_PENDING

gboolean einsora_workload_state_can_transition(EinsoraWorkloadState from, EinsoraWorkloadState to);
gboolean einsora_workload_state_can_note(EinsoraWorkloadState state);
gboolean einsora_workload_state_holds_quota(EinsoraWorkloadState state);
gboolean einsora_workload_state_holds_capacity(EinsoraWorkloadState state);
gboolean einsora_workload_state_metered(EinsoraWorkloadState state);
gboolean einsora_workload_state_needs_placement(EinsoraWorkloadState state);

G_END_DECLS
