#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-workload-state.h"

static const char *const kind_names[] = {
    [EINSORA_WORKLOAD_KIND_NOTEBOOK] = "notebook",
    [EINSORA_WORKLOAD_KIND_ENDPOINT] = "endpoint",
    [EINSORA_WORKLOAD_KIND_VM] = "vm",
};

static const char *const state_names[] = {
    [EINSORA_WORKLOAD_STATE_PENDING] = "pending",
    [EINSORA_WORKLOAD_STATE_QUEUED] = "queued",
    [EINSORA_WORKLOAD_STATE_PROVISIONING] = "provisioning",
    [EINSORA_WORKLOAD_STATE_RUNNING] = "running",
    [EINSORA_WORKLOAD_STATE_STOPPING] = "stopping",
    [EINSORA_WORKLOAD_STATE_STOPPED] = "stopped",
    [EINSORA_WORKLOAD_STATE_FAILED] = "failed",
    [EINSORA_WORKLOAD_STATE_DELETING] = "deleting",
    [EINSORA_WORKLOAD_STATE_DELETED] = "deleted",
};

G_STATIC_ASSERT(G_N_ELEMENTS(kind_names) == EINSORA_WORKLOAD_KIND_COUNT);
G_STATIC_ASSERT(G_N_ELEMENTS(state_names) == EINSORA_WORKLOAD_STATE_COUNT);

#define S(x) (1u << EINSORA_WORKLOAD_STATE_##x)

/* The lifecycle diagram, row by row: the states each state may move to.
 * Keep in sync with docs/lifecycle.md. */
static const guint allowed_steps[] = {
    [EINSORA_WORKLOAD_STATE_PENDING] = S(QUEUED) | S(PROVISIONING) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_QUEUED] = S(PROVISIONING) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_PROVISIONING] = S(RUNNING) | S(FAILED) | S(STOPPING) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_RUNNING] = S(STOPPING) | S(FAILED) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_STOPPING] = S(STOPPED) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_STOPPED] = S(PENDING) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_FAILED] = S(PENDING) | S(DELETING),
    [EINSORA_WORKLOAD_STATE_DELETING] = S(DELETED),
    [EINSORA_WORKLOAD_STATE_DELETED] = 0,
};

static const guint holds_quota =
    S(PENDING) | S(QUEUED) | S(PROVISIONING) | S(RUNNING) | S(STOPPING);
static const guint holds_capacity = S(PROVISIONING) | S(RUNNING) | S(STOPPING) | S(DELETING);
static const guint metered = S(RUNNING);
/* States that only a placed workload may be in (provisioning needs a machine
 * and class before anything runs; running is metered by placed class). */
static const guint needs_placement = S(PROVISIONING) | S(RUNNING);

#undef S

static gboolean
state_valid(EinsoraWorkloadState state)
{
    return (guint)state < EINSORA_WORKLOAD_STATE_COUNT;
}

static gboolean
state_in(EinsoraWorkloadState state, guint set)
{
    return state_valid(state) && (set & (1u << state)) != 0;
}

const char *
einsora_workload_kind_to_string(EinsoraWorkloadKind kind)
{
    if ((guint)kind >= EINSORA_WORKLOAD_KIND_COUNT)
        return NULL;
    return kind_names[kind];
}

gboolean
einsora_workload_kind_from_string(const char *str, EinsoraWorkloadKind *kind)
{
    for (guint i = 0; str != NULL && i < EINSORA_WORKLOAD_KIND_COUNT; i++) {
        if (g_strcmp0(str, kind_names[i]) == 0) {
            *kind = (EinsoraWorkloadKind)i;
            return TRUE;
        }
    }
    return FALSE;
}

const char *
einsora_workload_state_to_string(EinsoraWorkloadState state)
{
    if (!state_valid(state))
        return NULL;
    return state_names[state];
}

gboolean
einsora_workload_state_from_string(const char *str, EinsoraWorkloadState *state)
{
    for (guint i = 0; str != NULL && i < EINSORA_WORKLOAD_STATE_COUNT; i++) {
        if (g_strcmp0(str, state_names[i]) == 0) {
            *state = (EinsoraWorkloadState)i;
            return TRUE;
        }
    }
    return FALSE;
}

/* Whether @from may move to @to. A step to the same state is never a
 * transition: that is a note (einsora_workload_state_can_note()). */
gboolean
einsora_workload_state_can_transition(EinsoraWorkloadState from, EinsoraWorkloadState to)
{
    if (!state_valid(from) || !state_valid(to))
        return FALSE;
    return (allowed_steps[from] & (1u << to)) != 0;
}

/* Notes record decisions that change nothing; a deleted workload's
 * timeline is closed. */
gboolean
einsora_workload_state_can_note(EinsoraWorkloadState state)
{
    return state_valid(state) && state != EINSORA_WORKLOAD_STATE_DELETED;
}

gboolean
einsora_workload_state_holds_quota(EinsoraWorkloadState state)
{
    return state_in(state, holds_quota);
}

gboolean
einsora_workload_state_holds_capacity(EinsoraWorkloadState state)
{
    return state_in(state, holds_capacity);
}

gboolean
einsora_workload_state_metered(EinsoraWorkloadState state)
{
    return state_in(state, metered);
}

gboolean
einsora_workload_state_needs_placement(EinsoraWorkloadState state)
{
    return state_in(state, needs_placement);
}
