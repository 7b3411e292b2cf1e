#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service.h"

#include "einsora-driver.h"
#include "einsora-error.h"
#include "einsora-inventory.h"
#include "einsora-reason.h"
#include "einsora-redact.h"
#include "einsora-uuid.h"
#include "einsora-workload-json.h"

#define EXPORT_FORMAT_VERSION 1
#define IDEMPOTENCY_TTL_US (G_GINT64_CONSTANT(24 * 60 * 60) * G_USEC_PER_SEC)

struct _EinsoraService {
    GObject parent_instance;
    EinsoraStore *store;
    EinsoraCatalog *catalog;
    EinsoraNowFunc now;
    gpointer now_data;
};

G_DEFINE_FINAL_TYPE(EinsoraService, einsora_service, G_TYPE_OBJECT)

enum {
    SIGNAL_EVENTS_ADDED,
    N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void
einsora_service_finalize(GObject *object)
{
    EinsoraService *self = EINSORA_SERVICE(object);

    g_clear_object(&self->store);
    g_clear_object(&self->catalog);
    G_OBJECT_CLASS(einsora_service_parent_class)->finalize(object);
}

static void
einsora_service_class_init(EinsoraServiceClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_service_finalize;

    /**
     * EinsoraService::events-added:
     * @tenant_id: whose timeline grew
     *
     * Emitted after a transaction that appended workload events has
     * committed (never from inside one, never after a rollback), so a
     * handler may read the store at once. It says only whose; readers ask
     * the store for what came after the last seq they saw.
     */
    signals[SIGNAL_EVENTS_ADDED] =
        g_signal_new("events-added", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

/* Called once the transaction that appended to @tenant_id's timeline has
 * committed. */
static void
events_added(EinsoraService *self, const char *tenant_id)
{
    g_signal_emit(self, signals[SIGNAL_EVENTS_ADDED], 0, tenant_id);
}

static void
einsora_service_init(EinsoraService *self)
{
}

EinsoraService *
einsora_service_new(EinsoraStore *store, EinsoraCatalog *catalog, EinsoraNowFunc now,
                    gpointer now_data)
{
    EinsoraService *self;

    g_return_val_if_fail(EINSORA_IS_STORE(store), NULL);
    g_return_val_if_fail(EINSORA_IS_CATALOG(catalog), NULL);
    g_return_val_if_fail(now != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_SERVICE, NULL);
    self->store = g_object_ref(store);
    self->catalog = g_object_ref(catalog);
    self->now = now;
    self->now_data = now_data;
    return self;
}

EinsoraCatalog *
einsora_service_get_catalog(EinsoraService *self)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    return self->catalog;
}

static gint64
service_now(EinsoraService *self)
{
    return self->now(self->now_data);
}

/* Swaps @src's contents into @dst; @src is left holding @dst's old ones. */
static void
workload_swap(EinsoraWorkload *dst, EinsoraWorkload *src)
{
    EinsoraWorkload tmp = *dst;
    *dst = *src;
    *src = tmp;
}

static EinsoraWorkloadEvent *
event_new(EinsoraService *self, const EinsoraWorkload *workload, gboolean has_from_state,
          EinsoraWorkloadState from, const char *reason, gint64 now_us)
{
    EinsoraWorkloadEvent *event = einsora_workload_event_new();

    event->id = einsora_uuid_v7_new(now_us / 1000);
    event->tenant_id = g_strdup(workload->tenant_id);
    event->workload_id = g_strdup(workload->id);
    event->has_from_state = has_from_state;
    event->from_state = has_from_state ? from : workload->state;
    event->to_state = workload->state;
    event->reason = einsora_reason_clean(reason);
    event->attempt = workload->attempt;
    event->created_at = einsora_timestamp_format(now_us);
    return event;
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
    if (placement->machine_id == NULL)
        return TRUE;
    driver = einsora_driver_lookup(placement->driver);
    if (driver == NULL ||
        !g_strv_contains((const char *const *)runtime->driver_refs, placement->driver) ||
        !einsora_driver_runs(driver, workload->kind, klass->accelerator))
        return refuse_placement(error, "the driver can't run it");
    machine = einsora_store_find_machine(self->store, placement->machine_id, &local_error);
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
                 GError **error)
{
    gint64 now_us = service_now(self);
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
    next->version = workload->version + 1;

    event = event_new(self, next, TRUE, workload->state, reason, now_us);
    if (!einsora_store_append_event(self->store, event, error))
        return FALSE;

    *out = g_steal_pointer(&next);
    return TRUE;
}

typedef struct {
    EinsoraService *self;
    const EinsoraWorkload *workload;
    EinsoraWorkloadState to;
    const char *reason;
    const EinsoraPlacement *placement;
    EinsoraWorkload *result;
} TransitionContext;

static gboolean
transition_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    TransitionContext *ctx = user_data;
    return transition_in_tx(ctx->self, ctx->workload, ctx->to, ctx->reason, ctx->placement,
                            &ctx->result, error);
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
 * appends the timeline row, in one transaction. A caller that lost a race
 * gets EINSORA_ERROR_CONFLICT and may read again and retry.
 */
gboolean
einsora_service_transition(EinsoraService *self, EinsoraWorkload *workload, EinsoraWorkloadState to,
                           const char *reason, const EinsoraPlacement *placement, GError **error)
{
    TransitionContext ctx = {self, workload, to, reason, placement, NULL};
    g_autoptr(EinsoraWorkload) result = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(workload != NULL, FALSE);

    if (!einsora_store_in_transaction(self->store, transition_tx, &ctx, error)) {
        einsora_workload_free(ctx.result);
        return FALSE;
    }
    result = ctx.result;
    workload_swap(workload, result);
    events_added(self, workload->tenant_id);
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
    event =
        event_new(ctx->self, current, TRUE, current->state, ctx->reason, service_now(ctx->self));
    return einsora_store_append_event(store, event, error);
}

/* Records a decision that changes no state (a retry, a machine gone
 * offline): a timeline row whose from equals its to. */
gboolean
einsora_service_note(EinsoraService *self, const EinsoraWorkload *workload, const char *reason,
                     GError **error)
{
    NoteContext ctx = {self, workload, reason};

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(workload != NULL, FALSE);

    if (!einsora_workload_state_can_note(workload->state)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION,
                    "a %s workload's timeline is closed",
                    einsora_workload_state_to_string(workload->state));
        return FALSE;
    }
    if (!einsora_store_in_transaction(self->store, note_tx, &ctx, error))
        return FALSE;
    events_added(self, workload->tenant_id);
    return TRUE;
}

gboolean
einsora_service_get_gpu_quota(EinsoraService *self, const char *tenant_id, const char *gpu_class,
                              gint64 *quota, gint64 *held, GError **error)
{
    gint64 sums[EINSORA_WORKLOAD_STATE_COUNT] = {0};

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(quota != NULL && held != NULL, FALSE);

    if (!einsora_store_get_quota(self->store, tenant_id, gpu_class, quota, error))
        return FALSE;
    if (!einsora_store_gpus_by_state(self->store, tenant_id, gpu_class, sums, error))
        return FALSE;
    *held = 0;
    for (guint state = 0; state < EINSORA_WORKLOAD_STATE_COUNT; state++) {
        if (einsora_workload_state_holds_quota((EinsoraWorkloadState)state))
            *held += sums[state];
    }
    return TRUE;
}

/* GPUs held plus the request must not exceed the tenant's quota for the
 * class. Runs inside the creating or starting transaction, which holds the
 * store's write lock, so concurrent requests serialize. */
static gboolean
check_quota_in_tx(EinsoraService *self, const char *tenant_id, const char *gpu_class,
                  gint64 requested, GError **error)
{
    gint64 quota = 0;
    gint64 held = 0;

    if (requested <= 0)
        return TRUE;
    if (!einsora_service_get_gpu_quota(self, tenant_id, gpu_class, &quota, &held, error))
        return FALSE;
    if (held + requested > quota) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED,
                    "quota exceeded for %s: %" G_GINT64_FORMAT " GPU(s) held, %" G_GINT64_FORMAT
                    " requested, quota %" G_GINT64_FORMAT,
                    gpu_class, held, requested, quota);
        return FALSE;
    }
    return TRUE;
}

static gboolean
validate_name(const char *name, GError **error)
{
    if (name == NULL || *name == '\0') {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "name is required");
        return FALSE;
    }
    if (strlen(name) > EINSORA_WORKLOAD_NAME_MAX_BYTES || !g_utf8_validate(name, -1, NULL)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "name must be valid UTF-8 of at most %d bytes",
                    EINSORA_WORKLOAD_NAME_MAX_BYTES);
        return FALSE;
    }
    for (const char *p = name; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        /* Format characters are invisible and can reorder what is shown. */
        if (g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                                "name must not contain control or invisible formatting "
                                "characters");
            return FALSE;
        }
    }
    if (g_unichar_isspace(g_utf8_get_char(name)) ||
        g_unichar_isspace(g_utf8_get_char(g_utf8_find_prev_char(name, name + strlen(name))))) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "name must not start or end with a space");
        return FALSE;
    }
    return TRUE;
}

/* Checks a request against the catalog and builds the new workload row.
 * Nothing is written. */
static EinsoraWorkload *
workload_from_request(EinsoraService *self, const EinsoraActor *actor,
                      const EinsoraWorkloadRequest *request, gint64 now_us, GError **error)
{
    EinsoraWorkloadKind kind;
    const char *region;
    const EinsoraComputeClass *klass;
    const EinsoraImage *image;
    EinsoraCatalogResolution resolved;
    g_autoptr(EinsoraWorkload) workload = NULL;

    if (request->kind == NULL || !einsora_workload_kind_from_string(request->kind, &kind)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "kind must be one of notebook, endpoint, vm");
        return NULL;
    }
    if (request->name != NULL && !validate_name(request->name, error))
        return NULL;

    region = request->region != NULL ? request->region
                                     : einsora_catalog_get_default_region(self->catalog);
    if (einsora_catalog_lookup_region(self->catalog, region) == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "region is not one this installation offers");
        return NULL;
    }
    if (request->gpu_class == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "gpu_class is required");
        return NULL;
    }
    einsora_catalog_resolve(self->catalog, request->gpu_class, request->image, &resolved);
    klass = resolved.klass;
    if (klass == NULL || !einsora_catalog_class_offered_in(klass, region)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "gpu_class is not offered in this region");
        return NULL;
    }
    if (request->image == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "image is required");
        return NULL;
    }
    image = resolved.image;
    if (image == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "image is not one this installation offers");
        return NULL;
    }
    if (!einsora_image_supports_kind(image, kind)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "image %s can't run as a %s", image->name,
                    einsora_workload_kind_to_string(kind));
        return NULL;
    }
    if (resolved.runtime == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "image %s has no runtime for %s's accelerator (%s)", image->name, klass->name,
                    einsora_accelerator_to_string(klass->accelerator));
        return NULL;
    }

    workload = einsora_workload_new();
    workload->id = einsora_uuid_v7_new(now_us / 1000);
    workload->tenant_id = g_strdup(actor->tenant_id);
    workload->kind = kind;
    /* No name given: the kind and the ID's last characters, which vary
     * even between workloads created in the same millisecond. */
    workload->name = request->name != NULL
                         ? g_strdup(request->name)
                         : g_strdup_printf("%s-%s", einsora_workload_kind_to_string(kind),
                                           workload->id + EINSORA_UUID_STRING_LEN - 6);
    workload->state = EINSORA_WORKLOAD_STATE_INITIAL;
    workload->region = g_strdup(region);
    workload->gpu_class = g_strdup(klass->name);
    workload->image = g_strdup(image->name);
    workload->gpus = klass->devices;
    workload->attempt = 0;
    workload->version = 0;
    workload->created_by = g_strdup(actor->user_id);
    workload->created_at = einsora_timestamp_format(now_us);
    workload->updated_at = einsora_timestamp_format(now_us);
    return g_steal_pointer(&workload);
}

typedef struct {
    EinsoraService *self;
    const EinsoraActor *actor;
    const EinsoraWorkload *workload;
    const EinsoraWorkloadRequest *request;
    gint64 now_us;
} CreateContext;

static EinsoraIdempotencyRecord *
idempotency_record_new(const char *tenant_id, const char *key, const char *request_sha256,
                       guint status, const char *body, gint64 now_us)
{
    EinsoraIdempotencyRecord *record = einsora_idempotency_record_new();

    record->tenant_id = g_strdup(tenant_id);
    record->key = g_strdup(key);
    record->request_sha256 = g_strdup(request_sha256);
    record->response_status = status;
    record->response_body = g_strdup(body);
    record->created_at = einsora_timestamp_format(now_us);
    record->expires_at = einsora_timestamp_format(now_us + IDEMPOTENCY_TTL_US);
    return record;
}

static gboolean
create_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    CreateContext *ctx = user_data;
    g_autofree gchar *reason = einsora_reason_created(ctx->actor);
    g_autoptr(EinsoraWorkloadEvent) event = NULL;

    if (!check_quota_in_tx(ctx->self, ctx->workload->tenant_id, ctx->workload->gpu_class,
                           ctx->workload->gpus, error))
        return FALSE;
    if (!einsora_store_insert_workload(store, ctx->workload, error))
        return FALSE;
    event = event_new(ctx->self, ctx->workload, FALSE, ctx->workload->state, reason, ctx->now_us);
    if (!einsora_store_append_event(store, event, error))
        return FALSE;
    /* The answer the API is about to give, kept with the workload. */
    if (ctx->request->idempotency_key != NULL && ctx->request->request_sha256 != NULL) {
        g_autoptr(JsonNode) node = einsora_workload_to_json(ctx->workload);
        g_autofree gchar *body = json_to_string(node, FALSE);
        g_autoptr(EinsoraIdempotencyRecord) record =
            idempotency_record_new(ctx->workload->tenant_id, ctx->request->idempotency_key,
                                   ctx->request->request_sha256, 201, body, ctx->now_us);

        return einsora_store_insert_idempotency_record(store, record, error);
    }
    return TRUE;
}

EinsoraWorkload *
einsora_service_create_workload(EinsoraService *self, const EinsoraActor *actor,
                                const EinsoraWorkloadRequest *request, GError **error)
{
    gint64 now_us;
    g_autoptr(EinsoraWorkload) workload = NULL;
    CreateContext ctx;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL, NULL);
    g_return_val_if_fail(request != NULL, NULL);

    now_us = service_now(self);
    workload = workload_from_request(self, actor, request, now_us, error);
    if (workload == NULL)
        return NULL;
    ctx = (CreateContext){self, actor, workload, request, now_us};
    if (!einsora_store_in_transaction(self->store, create_tx, &ctx, error))
        return NULL;
    events_added(self, workload->tenant_id);
    return g_steal_pointer(&workload);
}

EinsoraWorkload *
einsora_service_get_workload(EinsoraService *self, const char *tenant_id, const char *workload_id,
                             gboolean include_deleted, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    workload = einsora_store_get_workload(self->store, tenant_id, workload_id, error);
    if (workload == NULL)
        return NULL;
    if (workload->state == EINSORA_WORKLOAD_STATE_DELETED && !include_deleted) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return g_steal_pointer(&workload);
}

GPtrArray *
einsora_service_list_workloads(EinsoraService *self, const char *tenant_id,
                               gboolean include_deleted, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);
    return einsora_store_list_workloads(self->store, tenant_id, include_deleted, error);
}

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
        !check_quota_in_tx(ctx->self, current->tenant_id, current->gpu_class, current->gpus, error))
        return FALSE;
    reason = einsora_reason_requested(ctx->action, ctx->actor);
    ctx->moved = transition_in_tx(ctx->self, current, to, reason, NULL, &ctx->result, error);
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
    if (ctx.moved)
        events_added(self, actor->tenant_id);
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

/* The whole timeline, deleted workloads included: history stays. */
GPtrArray *
einsora_service_list_events(EinsoraService *self, const char *tenant_id, const char *workload_id,
                            GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return einsora_store_list_events(self->store, tenant_id, workload_id, error);
}

/* The change feed: the tenant's events after @after_seq, of every
 * workload, deleted ones included (history stays). */
GPtrArray *
einsora_service_list_tenant_events(EinsoraService *self, const char *tenant_id, gint64 after_seq,
                                   guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (after_seq < 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an event ID is a non-negative integer");
        return NULL;
    }
    return einsora_store_list_tenant_events(self->store, tenant_id, after_seq, limit, error);
}

gboolean
einsora_service_last_event_seq(EinsoraService *self, const char *tenant_id, gint64 *seq,
                               GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    return einsora_store_last_event_seq(self->store, tenant_id, seq, error);
}

/* Replaces a string member with its redacted form when redaction changed
 * it, and says so in @redactions: data is never dropped silently. */
static void
redact_member(JsonObject *object, const char *member, const char *path, JsonArray *redactions)
{
    const char *value;
    g_autofree gchar *redacted = NULL;
    JsonObject *entry;

    if (!json_object_has_member(object, member) || json_object_get_null_member(object, member))
        return;
    value = json_object_get_string_member(object, member);
    redacted = einsora_redact_secrets(value);
    if (g_strcmp0(redacted, value) == 0)
        return;
    json_object_set_string_member(object, member, redacted);
    entry = json_object_new();
    json_object_set_string_member(entry, "field", path);
    json_object_set_string_member(entry, "reason", "it held what looked like a credential");
    json_array_add_object_element(redactions, entry);
}

typedef struct {
    const char *tenant_id;
    const char *workload_id;
    EinsoraWorkload *workload;
    GPtrArray *events;
} ExportContext;

static gboolean
export_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    ExportContext *ctx = user_data;

    /* One transaction, so the record and its timeline agree. */
    ctx->workload = einsora_store_get_workload(store, ctx->tenant_id, ctx->workload_id, error);
    if (ctx->workload == NULL)
        return FALSE;
    ctx->events = einsora_store_list_events(store, ctx->tenant_id, ctx->workload_id, error);
    return ctx->events != NULL;
}

/* The complete record and timeline of one workload, deleted or not. Fields
 * a user or a runtime could have filled with a secret are redacted, each
 * with an entry in "redactions". */
JsonNode *
einsora_service_export_workload(EinsoraService *self, const char *tenant_id,
                                const char *workload_id, GError **error)
{
    ExportContext ctx = {tenant_id, workload_id, NULL, NULL};
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autofree gchar *exported_at = NULL;
    JsonObject *root;
    JsonObject *record;
    JsonArray *timeline;
    JsonArray *redactions;
    JsonNode *node;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    if (!einsora_store_in_transaction(self->store, export_tx, &ctx, error)) {
        einsora_workload_free(ctx.workload);
        g_clear_pointer(&ctx.events, g_ptr_array_unref);
        return NULL;
    }
    workload = ctx.workload;
    events = ctx.events;

    root = json_object_new();
    redactions = json_array_new();
    json_object_set_int_member(root, "export_version", EXPORT_FORMAT_VERSION);
    exported_at = einsora_timestamp_format(service_now(self));
    json_object_set_string_member(root, "exported_at", exported_at);

    node = einsora_workload_to_json(workload);
    record = json_node_get_object(node);
    redact_member(record, "name", "workload.name", redactions);
    redact_member(record, "image", "workload.image", redactions);
    json_object_set_member(root, "workload", node);

    timeline = json_array_new();
    for (guint i = 0; i < events->len; i++) {
        g_autofree gchar *path = g_strdup_printf("events[%u].reason", i);
        node = einsora_workload_event_to_json(g_ptr_array_index(events, i));
        redact_member(json_node_get_object(node), "reason", path, redactions);
        json_array_add_element(timeline, node);
    }
    json_object_set_array_member(root, "events", timeline);
    json_object_set_array_member(root, "redactions", redactions);

    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    return node;
}

static gboolean
is_sha256_hex(const char *text)
{
    if (text == NULL || strlen(text) != 64)
        return FALSE;
    for (const char *p = text; *p != '\0'; p++) {
        if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
            return FALSE;
    }
    return TRUE;
}

/* Only a running notebook on one of our machines has a server the proxy
 * can reach: its agent reports the socket for that run. */
static gboolean
check_openable(const EinsoraWorkload *workload, GError **error)
{
    if (workload->kind != EINSORA_WORKLOAD_KIND_NOTEBOOK) {
        const char *kind = einsora_workload_kind_to_string(workload->kind);
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s is %s %s; only a running notebook can be opened in a browser",
                    workload->id, strchr("aeiou", kind[0]) != NULL ? "an" : "a", kind);
        return FALSE;
    }
    if (workload->state != EINSORA_WORKLOAD_STATE_RUNNING) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s is %s; only a running notebook can be opened", workload->id,
                    einsora_workload_state_to_string(workload->state));
        return FALSE;
    }
    if (workload->machine_id == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s doesn't run on a machine of this installation; it can't be "
                    "opened in a browser",
                    workload->id);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    EinsoraService *self;
    const EinsoraActor *actor;
    const char *workload_id;
    const char *ticket_hash;
    EinsoraAccessTicket *result;
} GrantContext;

/* Read, check, store and note in one transaction: a workload that stops
 * meanwhile can't get a ticket, and a ticket is never stored without its
 * note. */
static gboolean
grant_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    GrantContext *ctx = user_data;
    gint64 now_us = service_now(ctx->self);
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    g_autoptr(EinsoraWorkloadEvent) event = NULL;
    g_autofree gchar *reason = NULL;

    workload = einsora_store_get_workload(store, ctx->actor->tenant_id, ctx->workload_id, error);
    if (workload == NULL)
        return FALSE;
    if (workload->state == EINSORA_WORKLOAD_STATE_DELETED) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return FALSE;
    }
    if (!check_openable(workload, error))
        return FALSE;

    ticket = einsora_access_ticket_new();
    ticket->hash = g_strdup(ctx->ticket_hash);
    ticket->tenant_id = g_strdup(workload->tenant_id);
    ticket->workload_id = g_strdup(workload->id);
    ticket->attempt = workload->attempt;
    ticket->created_by =
        g_strdup(ctx->actor->subject != NULL ? ctx->actor->subject : ctx->actor->user_id);
    ticket->created_at = einsora_timestamp_format(now_us);
    ticket->expires_at = einsora_timestamp_format(now_us + EINSORA_ACCESS_TICKET_TTL_US);
    if (!einsora_store_insert_access_ticket(store, ticket, error))
        return FALSE;

    reason = einsora_reason_access_requested(ctx->actor);
    event = event_new(ctx->self, workload, TRUE, workload->state, reason, now_us);
    if (!einsora_store_append_event(store, event, error))
        return FALSE;
    ctx->result = g_steal_pointer(&ticket);
    return TRUE;
}

EinsoraAccessTicket *
einsora_service_grant_access(EinsoraService *self, const EinsoraActor *actor,
                             const char *workload_id, const char *ticket_hash, GError **error)
{
    GrantContext ctx = {self, actor, workload_id, ticket_hash, NULL};

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL, NULL);
    /* Never a secret in clear: the store keeps what it is given. */
    g_return_val_if_fail(is_sha256_hex(ticket_hash), NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    if (!einsora_store_in_transaction(self->store, grant_tx, &ctx, error)) {
        einsora_access_ticket_free(ctx.result);
        return NULL;
    }
    /* Its note is in the timeline. */
    events_added(self, actor->tenant_id);
    return ctx.result;
}

EinsoraAccessTicket *
einsora_service_take_access_ticket(EinsoraService *self, const char *ticket_hash, GError **error)
{
    g_autofree gchar *now = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);

    /* Whatever a browser sent is refused before it reaches the store. */
    if (!is_sha256_hex(ticket_hash)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such access ticket, or it expired or was used");
        return NULL;
    }
    now = einsora_timestamp_format(service_now(self));
    return einsora_store_take_access_ticket(self->store, ticket_hash, now, error);
}

GPtrArray *
einsora_service_list_machines(EinsoraService *self, const char *tenant_id, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    return einsora_store_list_machines(self->store, tenant_id, error);
}

EinsoraMachine *
einsora_service_get_machine(EinsoraService *self, const char *tenant_id, const char *machine_id,
                            GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);

    if (!einsora_uuid_is_valid(machine_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return NULL;
    }
    return einsora_store_get_machine(self->store, tenant_id, machine_id, error);
}

gboolean
einsora_service_machine_online(EinsoraService *self, const EinsoraMachine *machine)
{
    return einsora_machine_seen_within(machine, service_now(self),
                                       EINSORA_MACHINE_ONLINE_WINDOW_US);
}

gboolean
einsora_service_machine_placeable(EinsoraService *self, const EinsoraMachine *machine)
{
    return einsora_machine_seen_within(machine, service_now(self),
                                       EINSORA_MACHINE_PLACEABLE_WINDOW_US);
}

/* The stored inventory, read the one way the hub reads it for capacity,
 * so the API shows only what placement may use. One that doesn't fit the
 * machine shows as none: the hub says why in its debug log. */
static EinsoraInventory *
stored_inventory(const EinsoraMachine *machine)
{
    EinsoraInventory *inventory = NULL;

    if (!einsora_inventory_read_stored(machine, &inventory, NULL))
        return NULL;
    return inventory;
}

GPtrArray *
einsora_service_machine_gpus(EinsoraService *self, const EinsoraMachine *machine)
{
    GPtrArray *gpus = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_gpu_free);
    g_autoptr(EinsoraInventory) inventory = stored_inventory(machine);

    for (guint i = 0; inventory != NULL && i < inventory->gpus->len; i++) {
        const EinsoraInventoryGpu *reported = g_ptr_array_index(inventory->gpus, i);
        g_autoptr(EinsoraMachineGpu) gpu = einsora_machine_gpu_new();
        EinsoraAccelerator vendor;

        gpu->vendor = g_strdup(reported->vendor);
        gpu->model = g_strdup(reported->model);
        gpu->memory_mib = reported->memory_mib;
        if (einsora_accelerator_from_string(gpu->vendor, &vendor))
            gpu->gpu_class = g_strdup(einsora_catalog_class_for_gpu(
                self->catalog, machine->region, vendor, gpu->model, inventory->memory_mib));
        g_ptr_array_add(gpus, g_steal_pointer(&gpu));
    }
    return gpus;
}

gchar **
einsora_service_machine_drivers(EinsoraService *self, const EinsoraMachine *machine)
{
    g_autoptr(EinsoraInventory) inventory = stored_inventory(machine);

    if (inventory == NULL)
        return g_new0(gchar *, 1);
    return g_strdupv(inventory->drivers);
}

GHashTable *
einsora_service_count_machine_workloads(EinsoraService *self, const char *tenant_id, GError **error)
{
    g_autoptr(GPtrArray) workloads =
        einsora_store_list_workloads(self->store, tenant_id, FALSE, error);
    GHashTable *counts;

    if (workloads == NULL)
        return NULL;
    counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < workloads->len; i++) {
        const EinsoraWorkload *workload = g_ptr_array_index(workloads, i);
        if (workload->machine_id == NULL || !einsora_workload_state_holds_capacity(workload->state))
            continue;
        g_hash_table_insert(
            counts, g_strdup(workload->machine_id),
            GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(counts, workload->machine_id)) +
                            1));
    }
    return counts;
}

EinsoraIdempotencyRecord *
einsora_service_get_idempotency_record(EinsoraService *self, const char *tenant_id, const char *key,
                                       GError **error)
{
    g_autoptr(EinsoraIdempotencyRecord) record =
        einsora_store_get_idempotency_record(self->store, tenant_id, key, error);
    g_autofree gchar *now = NULL;

    if (record == NULL)
        return NULL;
    now = einsora_timestamp_format(service_now(self));
    if (g_strcmp0(record->expires_at, now) <= 0) {
        /* Expired keys are forgotten, so the key may be used again. */
        if (!einsora_store_delete_expired_idempotency_records(self->store, now, error))
            return NULL;
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such idempotency key");
        return NULL;
    }
    return g_steal_pointer(&record);
}

gboolean
einsora_service_save_idempotency_record(EinsoraService *self, const char *tenant_id,
                                        const char *key, const char *request_sha256, guint status,
                                        const char *body, GError **error)
{
    g_autoptr(EinsoraIdempotencyRecord) record =
        idempotency_record_new(tenant_id, key, request_sha256, status, body, service_now(self));

    return einsora_store_insert_idempotency_record(self->store, record, error);
}

gboolean
einsora_service_check_ready(EinsoraService *self, GError **error)
{
    return einsora_store_check_ready(self->store, error);
}
