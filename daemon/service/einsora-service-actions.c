/* What a user asks of a workload: start, stop, delete. Each is a
 * transition, a no-op when the workload is already on its way, or a
 * refusal. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-reason.h"
#include "einsora-uuid.h"

/* What a user action does from each state: move, do nothing (it is already
 * on its way there), or refuse. */
typedef enum {
    ACTION_REFUSE,
    ACTION_NOTHING,
    ACTION_MOVE,
} ActionOutcome;

typedef struct {
    EinsoraService *self;
    const EinsoraActor *actor;
    const char *workload_id;
    EinsoraUserAction action;
    EinsoraWorkload *result;
    gboolean moved; /* a timeline row was appended */
} ActionContext;

static ActionOutcome
action_outcome(EinsoraUserAction action, EinsoraWorkloadState state, EinsoraWorkloadState *to)
{
    switch (action) {
    case EINSORA_USER_ACTION_START:
        *to = EINSORA_WORKLOAD_STATE_PENDING;
        if (state == EINSORA_WORKLOAD_STATE_STOPPED || state == EINSORA_WORKLOAD_STATE_FAILED)
            return ACTION_MOVE;
        if (state == EINSORA_WORKLOAD_STATE_PENDING || state == EINSORA_WORKLOAD_STATE_QUEUED ||
            state == EINSORA_WORKLOAD_STATE_PROVISIONING || state == EINSORA_WORKLOAD_STATE_RUNNING)
            return ACTION_NOTHING;
        return ACTION_REFUSE;
    case EINSORA_USER_ACTION_STOP:
        *to = EINSORA_WORKLOAD_STATE_STOPPING;
        if (state == EINSORA_WORKLOAD_STATE_PROVISIONING || state == EINSORA_WORKLOAD_STATE_RUNNING)
            return ACTION_MOVE;
        if (state == EINSORA_WORKLOAD_STATE_STOPPING || state == EINSORA_WORKLOAD_STATE_STOPPED ||
            state == EINSORA_WORKLOAD_STATE_FAILED)
            return ACTION_NOTHING;
        return ACTION_REFUSE;
    case EINSORA_USER_ACTION_DELETE:
        *to = EINSORA_WORKLOAD_STATE_DELETING;
        if (state == EINSORA_WORKLOAD_STATE_DELETING)
            return ACTION_NOTHING;
        if (einsora_workload_state_can_transition(state, EINSORA_WORKLOAD_STATE_DELETING))
            return ACTION_MOVE;
        return ACTION_REFUSE;
    default:
        break;
    }
    return ACTION_REFUSE;
}

static void
set_refusal(GError **error, EinsoraUserAction action, EinsoraWorkloadState state)
{
    const char *name = einsora_workload_state_to_string(state);

    switch (action) {
    case EINSORA_USER_ACTION_START:
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                    "a %s workload can't be started; try again once it has stopped", name);
        return;
    case EINSORA_USER_ACTION_STOP:
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                    "a %s workload can't be stopped: it isn't running; delete it to cancel it",
                    name);
        return;
    case EINSORA_USER_ACTION_DELETE:
    default:
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                    "a %s workload can't be deleted", name);
        return;
    }
}

static gboolean
action_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    ActionContext *ctx = user_data;
    g_autoptr(EinsoraWorkload) current = NULL;
    g_autofree gchar *reason = NULL;
    EinsoraWorkloadState to;

    current = einsora_store_get_workload(store, ctx->actor->tenant_id, ctx->workload_id, error);
    if (current == NULL)
        return FALSE;
    /* A deleted workload is history: visible to reads that ask for it,
     * gone for actions. */
    if (current->state == EINSORA_WORKLOAD_STATE_DELETED) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return FALSE;
    }
    switch (action_outcome(ctx->action, current->state, &to)) {
    case ACTION_NOTHING:
        ctx->result = g_steal_pointer(&current);
        return TRUE;
    case ACTION_REFUSE:
        set_refusal(error, ctx->action, current->state);
        return FALSE;
    case ACTION_MOVE:
    default:
        break;
    }
    /* Starting again takes quota again. */
    if (ctx->action == EINSORA_USER_ACTION_START &&
        !einsora_service_check_quota_in_tx(ctx->self, current->tenant_id, current->gpu_class,
                                           current->gpus, error))
        return FALSE;
    reason = einsora_reason_requested(ctx->action, ctx->actor);
    ctx->moved =
        einsora_service_transition_in_tx(ctx->self, current, to, reason, NULL, &ctx->result, error);
    return ctx->moved;
}

static EinsoraWorkload *
run_action(EinsoraService *self, const EinsoraActor *actor, const char *workload_id,
           EinsoraUserAction action, GError **error)
{
    ActionContext ctx = {self, actor, workload_id, action, NULL, FALSE};

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    if (!einsora_store_in_transaction(self->store, action_tx, &ctx, error)) {
        einsora_workload_free(ctx.result);
        return NULL;
    }
    /* A no-op (already on its way) wrote nothing. */
    if (ctx.moved) {
        einsora_service_events_added(self, actor->tenant_id);
        einsora_service_intent_changed(self, workload_id);
    }
    return ctx.result;
}

EinsoraWorkload *
einsora_service_start_workload(EinsoraService *self, const EinsoraActor *actor,
                               const char *workload_id, GError **error)
{
    return run_action(self, actor, workload_id, EINSORA_USER_ACTION_START, error);
}

EinsoraWorkload *
einsora_service_stop_workload(EinsoraService *self, const EinsoraActor *actor,
                              const char *workload_id, GError **error)
{
    return run_action(self, actor, workload_id, EINSORA_USER_ACTION_STOP, error);
}

EinsoraWorkload *
einsora_service_delete_workload(EinsoraService *self, const EinsoraActor *actor,
                                const char *workload_id, GError **error)
{
    return run_action(self, actor, workload_id, EINSORA_USER_ACTION_DELETE, error);
}
