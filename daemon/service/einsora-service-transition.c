/* How a workload's state changes: einsora_service_transition() (the
 * lifecycle step, the placement it records, re-checked here, and its
 * timeline row) and einsora_service_note(), a timeline row that changes
 * nothing. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-driver.h"
#include "einsora-error.h"
#include "einsora-gpu-mask.h"

/* Swaps @src's contents into @dst; @src is left holding @dst's old ones. */
static void
workload_swap(EinsoraWorkload *dst, EinsoraWorkload *src)
{
    EinsoraWorkload tmp = *dst;
    *dst = *src;
    *src = tmp;
}

static gboolean
refuse_placement(GError **error, const char *why)
{
    g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION, "placement refused: %s",
                why);
    return FALSE;
}

/* Placement is decided in the controller's placement.c; this re-checks
 * it where it is written, so that no caller can record a placement the
 * rules forbid: the class offered in the workload's region and able to
 * run it, and on a machine: one in the region that may host the tenant's
 * workload, with a driver the image's runtime lists and that the trust
 * matrix allows (isolation from the domain's table). */
static gboolean
check_placement(EinsoraService *self, const EinsoraWorkload *workload,
                const EinsoraPlacement *placement, GError **error)
{
    EinsoraCatalogResolution resolved;
    const EinsoraComputeClass *klass;
    const EinsoraImageRuntime *runtime;
    const EinsoraDriverInfo *driver;
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GError) local_error = NULL;

    einsora_catalog_resolve(self->catalog, placement->placed_class, workload->image, &resolved);
    klass = resolved.klass;
    runtime = resolved.runtime;
    if (klass == NULL || !einsora_catalog_class_offered_in(klass, workload->region))
        return refuse_placement(error, "its class is not offered in the workload's region");
    if (runtime == NULL)
        return refuse_placement(error, "its image has no runtime for the class");
    if ((placement->machine_id == NULL) != (placement->driver == NULL))
        return refuse_placement(error, "a machine and a driver go together");
    if (placement->gpu_mask != 0 && (placement->machine_id == NULL ||
                                     einsora_gpu_mask_count(placement->gpu_mask) != klass->devices))
        return refuse_placement(error, "its GPUs are as many as its class has, on a machine");
    if (placement->machine_id == NULL)
        return TRUE;
    driver = einsora_driver_lookup(placement->driver);
    if (driver == NULL ||
        !g_strv_contains((const char *const *)runtime->driver_refs, placement->driver) ||
        !einsora_driver_runs(driver, workload->kind, klass->accelerator))
        return refuse_placement(error, "the driver can't run it");
    machine = einsora_service_find_machine(self, placement->machine_id, &local_error);
    if (local_error != NULL &&
        !g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&local_error));
        return FALSE;
    }
    if (machine == NULL ||
        !einsora_machine_can_host(machine, workload->region, workload->tenant_id))
        return refuse_placement(error, "the machine can't host this tenant's workload");
    if (!einsora_machine_permits(machine, workload->tenant_id, driver))
        return refuse_placement(error, "the driver's isolation is too weak for this tenant");
    return TRUE;
}

/* The state machine's step, the CAS and the timeline row, for a caller
 * already inside a transaction. @workload is what the caller read; the
 * new row comes back in @out and @workload is left untouched, so that a
 * rolled-back transaction leaves the caller's copy true. */
static gboolean
transition_in_tx(EinsoraService *self, const EinsoraWorkload *workload, EinsoraWorkloadState to,
                 const char *reason, const EinsoraPlacement *placement, EinsoraWorkload **out,
                 gboolean *partial, GError **error)
{
    gint64 now_us = einsora_service_now(self);
    g_autoptr(EinsoraWorkload) next = NULL;
    g_autoptr(EinsoraWorkloadEvent) event = NULL;

    if (!einsora_workload_state_can_transition(workload->state, to)) {
        g_set_error(
            error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
            "a workload can't go from %s to %s", einsora_workload_state_to_string(workload->state),
            einsora_workload_state_to_string(to) != NULL ? einsora_workload_state_to_string(to)
                                                         : "an unknown state");
        return FALSE;
    }
    if (placement != NULL && to != EINSORA_WORKLOAD_STATE_PROVISIONING) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                            "a placement is recorded only with the move to provisioning");
        return FALSE;
    }

    next = einsora_workload_copy(workload);
    next->state = to;
    g_free(next->updated_at);
    next->updated_at = einsora_timestamp_format(now_us);
    if (to == EINSORA_WORKLOAD_STATE_PROVISIONING) {
        if (placement == NULL || placement->placed_class == NULL) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                                "a workload is admitted only with a placement");
            return FALSE;
        }
        if (!check_placement(self, workload, placement, error))
            return FALSE;
        g_free(next->placed_class);
        g_free(next->machine_id);
        g_free(next->driver);
        next->placed_class = g_strdup(placement->placed_class);
        next->machine_id = g_strdup(placement->machine_id);
        next->driver = g_strdup(placement->driver);
        next->gpu_mask = placement->gpu_mask;
        /* Each admission is a new attempt; agents start one at most once. */
        next->attempt = workload->attempt + 1;
    }
    if (einsora_workload_state_needs_placement(to) && next->placed_class == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                    "an unplaced workload can't be %s", einsora_workload_state_to_string(to));
        return FALSE;
    }

    if (!einsora_store_update_workload_state(self->store, next, workload->state, workload->version,
                                             error))
        return FALSE;
    /* The row is written: failing from here leaves half a transition. */
    *partial = TRUE;
    next->version = workload->version + 1;

    event = einsora_service_event_new(self, next, TRUE, workload->state, reason, now_us);
    if (!einsora_store_append_event(self->store, event, error))
        return FALSE;

    *out = g_steal_pointer(&next);
    return TRUE;
}

gboolean
einsora_service_transition_in_tx(EinsoraService *self, const EinsoraWorkload *workload,
                                 EinsoraWorkloadState to, const char *reason,
                                 const EinsoraPlacement *placement, EinsoraWorkload **out,
                                 GError **error)
{
    gboolean partial = FALSE;

    return transition_in_tx(self, workload, to, reason, placement, out, &partial, error);
}

typedef struct {
    EinsoraService *self;
    const EinsoraWorkload *workload;
    EinsoraWorkloadState to;
    const char *reason;
    const EinsoraPlacement *placement;
    EinsoraWorkload *result;
    gboolean partial;
} TransitionContext;

static gboolean
transition_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    TransitionContext *ctx = user_data;
    return transition_in_tx(ctx->self, ctx->workload, ctx->to, ctx->reason, ctx->placement,
                            &ctx->result, &ctx->partial, error);
}

/**
 * einsora_service_transition:
 * @workload: (inout): the workload as the caller last read it; on success
 *   it holds the new row (state, version, placement, attempt)
 * @reason: built from the reason vocabulary; cleaned before it is stored
 * @placement: (nullable): required, and allowed only, with the move to
 *   provisioning
 *
 * Validates the step against the lifecycle, compare-and-swaps the row and
 * appends the timeline row, in one transaction (the open group's, if
 * there is one: einsora_service_group_begin()). A caller that lost a race
 * gets EINSORA_ERROR_CONFLICT and may read again and retry.
 */
gboolean
einsora_service_transition(EinsoraService *self, EinsoraWorkload *workload, EinsoraWorkloadState to,
                           const char *reason, const EinsoraPlacement *placement, GError **error)
{
    TransitionContext ctx = {self, workload, to, reason, placement, NULL, FALSE};
    g_autoptr(EinsoraWorkload) result = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(workload != NULL, FALSE);

    if (!einsora_service_write(self, workload->tenant_id, transition_tx, &ctx, &ctx.partial,
                               error)) {
        einsora_workload_free(ctx.result);
        return FALSE;
    }
    result = ctx.result;
    workload_swap(workload, result);
    return TRUE;
}

typedef struct {
    EinsoraService *self;
    const EinsoraWorkload *workload;
    const char *reason;
} NoteContext;

static gboolean
note_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    NoteContext *ctx = user_data;
    g_autoptr(EinsoraWorkload) current = NULL;
    g_autoptr(EinsoraWorkloadEvent) event = NULL;

    current = einsora_store_get_workload(store, ctx->workload->tenant_id, ctx->workload->id, error);
    if (current == NULL)
        return FALSE;
    /* A note speaks of the state the caller saw; if that has moved on,
     * the decision it records is stale. */
    if (current->state != ctx->workload->state || current->version != ctx->workload->version) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "the workload changed while this was being decided; try again");
        return FALSE;
    }
    event = einsora_service_event_new(ctx->self, current, TRUE, current->state, ctx->reason,
                                      einsora_service_now(ctx->self));
    return einsora_store_append_event(store, event, error);
}

/* Records a decision that changes no state (a retry, a machine gone
 * offline): a timeline row whose from equals its to. */
gboolean
einsora_service_note(EinsoraService *self, const EinsoraWorkload *workload, const char *reason,
                     GError **error)
{
    NoteContext ctx = {self, workload, reason};
    /* Its one write is one statement, which fails whole. */
    const gboolean partial = FALSE;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(workload != NULL, FALSE);

    if (!einsora_workload_state_can_note(workload->state)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                    "a %s workload's timeline is closed",
                    einsora_workload_state_to_string(workload->state));
        return FALSE;
    }
    return einsora_service_write(self, workload->tenant_id, note_tx, &ctx, &partial, error);
}
