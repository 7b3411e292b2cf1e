#define G_LOG_DOMAIN "einsora-controller"

#include "einsora-controller.h"

#include "einsora-error.h"
#include "einsora-lease.h"
#include "einsora-log.h"
#include "einsora-metrics.h"
#include "einsora-placement.h"
#include "einsora-reason.h"
#include "einsora-usage.h"

struct _EinsoraController {
    GObject parent_instance;
    EinsoraService *service;
    EinsoraStore *store;
    EinsoraCatalog *catalog;
    EinsoraBackend *backend;
    gchar *region;
    EinsoraNowFunc now;
    gpointer now_data;
    gint64 provisioning_timeout_us;
    /* Workload ID -> the reason its timeline last says, so that a note is
     * written once per episode, not once per pass. */
    GHashTable *last_reasons;
    gchar *lease_holder;
    EinsoraLease *lease;
    guint timer_id;
    guint renew_id;
    GSource *wake_source;
    gint64 next_wake_us; /* monotonic: no woken pass before this */
    guint64 passes;
    /* The store wasn't ready at the last tick: said once, not per pass. */
    gboolean paused;
    /* /metrics (docs/adr/0043-metrics.md); NULL families count nothing. */
    EinsoraMetrics *metrics;
    EinsoraMetric *pass_duration;
    EinsoraMetric *admissions;
    EinsoraMetric *admission_wait;
    /* Workload ID -> when it became pending (a gint64, real time), for
     * the ones this controller moved on to queued: a queued row's own
     * time is when it was queued, not when it began to wait. */
    GHashTable *waiting_since;
    /* A waiter older than this that doesn't fit holds its kind of
     * capacity against younger ones (docs/adr/0051); 0: never. */
    gint64 aging_us;
};

G_DEFINE_FINAL_TYPE(EinsoraController, einsora_controller, G_TYPE_OBJECT)

/* How many admission decisions share one transaction (docs/adr/0028):
 * enough that a pass pays a few fsyncs instead of one per workload, few
 * enough that the write lock is held for a bounded time. */
#define ADMISSION_GROUP_MAX 1000

/* What one pass knows: the capacity the backend offers (NULL when it
 * couldn't be read), what is held, and tenants' trust; and the open
 * admission group's workloads, which are run only once it commits. */
typedef struct {
    EinsoraCapacity *capacity;
    EinsoraUsage *usage;
    GHashTable *trusted;    /* tenant ID -> GINT_TO_POINTER(trusted + 1) */
    GPtrArray *admitted;    /* EinsoraWorkload*, borrowed from the pass's list */
    GArray *admitted_waits; /* double: how long each of @admitted waited, in seconds */
    /* Where placement of each shape of workload looks first this pass:
     * "class image kind tenant region" -> a guint machine index. */
    GHashTable *first_fit;
    /* The kind of capacity ("cpu", or a GPU accelerator) -> the aged
     * waiter of that kind that didn't fit (borrowed from the pass's list). */
    GHashTable *held_for_aged;
    /* Waiters whose own class didn't fit and who may fall back
     * (borrowed), with the reason each gives if no fallback fits either:
     * tried once every waiter had its own class's turn. */
    GPtrArray *fallback_candidates;
    GPtrArray *fallback_reasons;
} Pass;

static void
einsora_controller_finalize(GObject *object)
{
    EinsoraController *self = EINSORA_CONTROLLER(object);

    einsora_controller_stop(self);
    g_clear_object(&self->lease);
    g_free(self->lease_holder);
    g_clear_object(&self->service);
    g_clear_object(&self->store);
    g_clear_object(&self->catalog);
    g_clear_object(&self->backend);
    g_free(self->region);
    g_hash_table_unref(self->last_reasons);
    g_hash_table_unref(self->waiting_since);
    g_clear_object(&self->metrics);
    G_OBJECT_CLASS(einsora_controller_parent_class)->finalize(object);
}

static void
einsora_controller_class_init(EinsoraControllerClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_controller_finalize;
}

static void
einsora_controller_init(EinsoraController *self)
{
    self->last_reasons = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    self->waiting_since = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    self->provisioning_timeout_us = EINSORA_PROVISIONING_TIMEOUT_DEFAULT_US;
    self->aging_us = EINSORA_CONTROLLER_AGING_DEFAULT_US;
}

EinsoraController *
einsora_controller_new(EinsoraService *service, EinsoraStore *store, EinsoraCatalog *catalog,
                       EinsoraBackend *backend, const char *region, EinsoraNowFunc now,
                       gpointer now_data)
{
    EinsoraController *self = g_object_new(EINSORA_TYPE_CONTROLLER, NULL);

    self->service = g_object_ref(service);
    self->store = g_object_ref(store);
    self->catalog = g_object_ref(catalog);
    self->backend = g_object_ref(backend);
    self->region = g_strdup(region);
    self->now = now;
    self->now_data = now_data;
    return self;
}

void
einsora_controller_set_provisioning_timeout(EinsoraController *self, gint64 timeout_us)
{
    self->provisioning_timeout_us = timeout_us;
}

void
einsora_controller_set_aging(EinsoraController *self, gint64 aging_us)
{
    g_return_if_fail(EINSORA_IS_CONTROLLER(self));
    self->aging_us = MAX(aging_us, 0);
}

void
einsora_controller_set_metrics(EinsoraController *self, EinsoraMetrics *metrics)
{
    /* A pass over a few workloads takes a millisecond; over thousands,
     * seconds. */
    static const double pass_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,  0.5,    1,     2.5,  5,     10};
    /* A workload admitted at once waits milliseconds; one queued for a
     * GPU, up to hours. */
    static const double wait_bounds[] = {0.01, 0.05, 0.1, 0.5,  1,    5,     10,   30,
                                         60,   300,  900, 1800, 3600, 14400, 86400};
    static const char *const kind[] = {"kind", NULL};

    g_return_if_fail(EINSORA_IS_CONTROLLER(self));
    g_return_if_fail(EINSORA_IS_METRICS(metrics));
    g_set_object(&self->metrics, metrics);
    self->pass_duration =
        einsora_metrics_histogram(metrics, "einsora_controller_pass_duration_seconds",
                                  "How long each reconcile pass of the controller took.", NULL,
                                  pass_bounds, G_N_ELEMENTS(pass_bounds));
    self->admissions = einsora_metrics_counter(
        metrics, "einsora_admissions_total",
        "Workloads admitted (placed on a machine and moved to provisioning), by kind.", kind);
    for (guint i = 0; i < EINSORA_WORKLOAD_KIND_COUNT; i++)
        einsora_metric_touch(self->admissions,
                             (const char *const[]){einsora_workload_kind_to_string(i), NULL});
    self->admission_wait = einsora_metrics_histogram(
        metrics, "einsora_admission_wait_seconds",
        "How long each admitted workload waited: from becoming pending (created or started) to "
        "admitted.",
        NULL, wait_bounds, G_N_ELEMENTS(wait_bounds));
}

/* When @workload began to wait, in real time; 0 when unknown. */
static gint64
waiting_since(EinsoraController *self, const EinsoraWorkload *workload)
{
    const gint64 *known = g_hash_table_lookup(self->waiting_since, workload->id);
    gint64 since = 0;

    if (known != NULL && workload->state == EINSORA_WORKLOAD_STATE_QUEUED)
        return *known;
    /* Pending since its last step; queued with no memory of it (after a
     * restart): since it was queued, which is the first pass after. */
    if (!einsora_timestamp_parse(workload->updated_at, &since, NULL))
        return 0;
    return since;
}

/* Forgets the waits of workloads no longer waiting (deleted while
 * queued), so the table holds only what waits now. */
static void
forget_waits(EinsoraController *self, GPtrArray *workloads)
{
    g_autoptr(GHashTable) waiting = NULL;
    GHashTableIter iter;
    gpointer key;

    if (g_hash_table_size(self->waiting_since) == 0)
        return;
    waiting = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < workloads->len; i++) {
        const EinsoraWorkload *workload = g_ptr_array_index(workloads, i);
        if (workload->state == EINSORA_WORKLOAD_STATE_QUEUED)
            g_hash_table_add(waiting, workload->id);
    }
    g_hash_table_iter_init(&iter, self->waiting_since);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (!g_hash_table_contains(waiting, key))
            g_hash_table_iter_remove(&iter);
    }
}

/* The reason the workload's timeline says last: from memory, else from
 * the store (after a restart), so a restart doesn't repeat a note. */
static const char *
last_reason(EinsoraController *self, const EinsoraWorkload *workload)
{
    const char *known = g_hash_table_lookup(self->last_reasons, workload->id);
    g_autoptr(GPtrArray) events = NULL;
    const EinsoraWorkloadEvent *last;

    if (known != NULL)
        return known;
    events = einsora_store_list_events(self->store, workload->tenant_id, workload->id, NULL);
    if (events == NULL || events->len == 0)
        return NULL;
    last = g_ptr_array_index(events, events->len - 1);
    g_hash_table_insert(self->last_reasons, g_strdup(workload->id), g_strdup(last->reason));
    return g_hash_table_lookup(self->last_reasons, workload->id);
}

static void
remember_reason(EinsoraController *self, const EinsoraWorkload *workload, const char *reason)
{
    g_autofree gchar *clean = einsora_reason_clean(reason);
    g_hash_table_insert(self->last_reasons, g_strdup(workload->id), g_steal_pointer(&clean));
}

/* A decision that changes nothing: noted once, while it stays the same. */
static void
note_once(EinsoraController *self, const EinsoraWorkload *workload, const char *reason)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *clean = einsora_reason_clean(reason);

    if (g_strcmp0(last_reason(self, workload), clean) == 0)
        return;
    if (!einsora_service_note(self->service, workload, reason, &error)) {
        einsora_log_workload(
            G_LOG_LEVEL_INFO, workload->id, workload->tenant_id, workload->machine_id,
            "workload %s: note not written, retrying next pass: %s", workload->id, error->message);
        return;
    }
    remember_reason(self, workload, reason);
}

static gboolean
move(EinsoraController *self, EinsoraWorkload *workload, EinsoraWorkloadState to,
     const char *reason, const EinsoraPlacement *placement)
{
    g_autoptr(GError) error = NULL;

    /* A lost race (the user stopped it meanwhile) is retried next pass
     * from the row as it is then. */
    if (!einsora_service_transition(self->service, workload, to, reason, placement, &error)) {
        einsora_log_workload(G_LOG_LEVEL_INFO, workload->id, workload->tenant_id,
                             workload->machine_id,
                             "workload %s: %s not written, retrying next pass: %s", workload->id,
                             einsora_workload_state_to_string(to), error->message);
        return FALSE;
    }
    remember_reason(self, workload, reason);
    return TRUE;
}

static EinsoraWorkloadSpec *
spec_for(EinsoraController *self, const EinsoraWorkload *workload)
{
    EinsoraWorkloadSpec *spec = einsora_workload_spec_new();
    const char *class_name = einsora_workload_get_class(workload);
    EinsoraCatalogResolution resolved;
    const EinsoraImageRuntime *runtime;

    einsora_catalog_resolve(self->catalog, class_name, workload->image, &resolved);
    runtime = resolved.runtime;

    spec->workload_id = g_strdup(workload->id);
    spec->tenant_id = g_strdup(workload->tenant_id);
    spec->region = g_strdup(workload->region);
    spec->kind = workload->kind;
    spec->placed_class = g_strdup(class_name);
    spec->image = g_strdup(workload->image);
    spec->runtime_reference = runtime != NULL ? g_strdup(runtime->reference) : NULL;
    spec->machine_id = g_strdup(workload->machine_id);
    spec->driver = g_strdup(workload->driver);
    spec->attempt = workload->attempt;
    return spec;
}

static gboolean
tenant_trusted(EinsoraController *self, Pass *pass, const char *tenant_id)
{
    gpointer known = g_hash_table_lookup(pass->trusted, tenant_id);

    if (known == NULL) {
        g_autoptr(EinsoraTenant) tenant = einsora_store_get_tenant(self->store, tenant_id, NULL);
        known = GINT_TO_POINTER((tenant != NULL && tenant->trusted) + 1);
        g_hash_table_insert(pass->trusted, g_strdup(tenant_id), known);
    }
    return GPOINTER_TO_INT(known) == 2;
}

/* Not admitted now: a pending workload goes to queued with the reason; a
 * queued one gets a note when the reason changes. */
static void
keep_waiting(EinsoraController *self, EinsoraWorkload *workload, const char *reason)
{
    gint64 since;

    if (workload->state != EINSORA_WORKLOAD_STATE_PENDING) {
        note_once(self, workload, reason);
        return;
    }
    since = self->metrics != NULL ? waiting_since(self, workload) : 0;
    if (move(self, workload, EINSORA_WORKLOAD_STATE_QUEUED, reason, NULL) && since != 0)
        g_hash_table_insert(self->waiting_since, g_strdup(workload->id),
                            g_memdup2(&since, sizeof since));
}

static gchar *
waiting_reason(EinsoraController *self, Pass *pass, const EinsoraWorkload *workload,
               const EinsoraPlacementResult *result)
{
    switch (result->outcome) {
    case EINSORA_PLACEMENT_NO_MACHINE:
        return einsora_reason_waiting_for_machine(workload->gpu_class);
    case EINSORA_PLACEMENT_NO_DRIVER:
        return einsora_reason_waiting_for_driver(workload->kind, workload->gpu_class);
    case EINSORA_PLACEMENT_WAITING_FOR_DISK:
        return g_strdup(einsora_reason_waiting_for_disk());
    case EINSORA_PLACEMENT_NO_CAPACITY:
    case EINSORA_PLACEMENT_PLACED:
    default:
        return einsora_reason_waiting_for_capacity(workload->gpu_class, result->shortfall,
                                                   tenant_trusted(self, pass, workload->tenant_id));
    }
}

/* First fit, skipping the machines this pass already found full for the
 * workload's shape: placing 10,000 over 1,000 machines looked at half of
 * them each time. One that ran before goes back to its disk: no skipping. */
static EinsoraPlacementResult *
place(EinsoraController *self, Pass *pass, const EinsoraWorkload *workload)
{
    g_autofree gchar *shape = NULL;
    gpointer known = NULL;
    guint first = 0;
    EinsoraPlacementResult *result;

    if (workload->machine_id != NULL)
        return einsora_placement_place(workload, self->catalog, pass->capacity, pass->usage);
    shape = g_strdup_printf("%s\x1f%s\x1f%d\x1f%s\x1f%s", workload->gpu_class, workload->image,
                            workload->kind, workload->tenant_id, workload->region);
    if (g_hash_table_lookup_extended(pass->first_fit, shape, NULL, &known))
        first = GPOINTER_TO_UINT(known);
    result =
        einsora_placement_place_from(workload, self->catalog, pass->capacity, pass->usage, &first);
    g_hash_table_insert(pass->first_fit, g_steal_pointer(&shape), GUINT_TO_POINTER(first));
    return result;
}

static void
admit(EinsoraController *self, Pass *pass, EinsoraWorkload *workload)
{
    EinsoraCatalogResolution resolved;
    g_autoptr(EinsoraPlacementResult) result = NULL;
    g_autofree gchar *reason = NULL;
    EinsoraPlacement placement;
    const char *capacity_kind;
    const EinsoraWorkload *held;
    gint64 since;

    /* The lifecycle has no step from waiting to failed: a workload whose
     * class or image was withdrawn waits, saying why, until the operator
     * restores the entry or its owner deletes it (docs/adr/0009). */
    if (!einsora_catalog_resolve(self->catalog, workload->gpu_class, workload->image, &resolved) &&
        resolved.klass == NULL) {
        reason = einsora_reason_class_withdrawn(workload->gpu_class);
        keep_waiting(self, workload, reason);
        return;
    }
    if (resolved.runtime == NULL) {
        reason = einsora_reason_image_withdrawn(workload->image);
        keep_waiting(self, workload, reason);
        return;
    }
    if (pass->capacity == NULL) {
        note_once(self, workload, einsora_reason_capacity_retrying());
        return;
    }
    /* Right after a restart the machines are still reconnecting: what
     * they hold isn't known yet, so nothing is admitted. */
    if (pass->capacity->settling)
        return;

    /* An older request waited past the aging bound and didn't fit: what
     * frees up of its kind is its, not this one's to backfill. */
    capacity_kind = resolved.klass->devices > 0
                        ? einsora_accelerator_to_string(resolved.klass->accelerator)
                        : "cpu";
    held = g_hash_table_lookup(pass->held_for_aged, capacity_kind);
    if (held != NULL) {
        /* Who waits, and since when, is other tenants' business: only a
         * trusted tenant reads it. */
        reason = tenant_trusted(self, pass, workload->tenant_id)
                     ? einsora_reason_waiting_behind(held->gpu_class, waiting_since(self, held),
                                                     self->now(self->now_data))
                     : einsora_reason_waiting_for_capacity(workload->gpu_class, NULL, FALSE);
        keep_waiting(self, workload, reason);
        return;
    }
    result = place(self, pass, workload);
    if (result->outcome != EINSORA_PLACEMENT_PLACED) {
        since = waiting_since(self, workload);
        if (result->outcome == EINSORA_PLACEMENT_NO_CAPACITY && self->aging_us > 0 && since != 0 &&
            self->now(self->now_data) - since >= self->aging_us)
            g_hash_table_insert(pass->held_for_aged, (gpointer)capacity_kind, workload);
        reason = waiting_reason(self, pass, workload, result);
        /* Its own class had its turn; a fallback's comes after every
         * waiter's own (docs/adr/0052). */
        if (workload->fallback != NULL && since != 0 &&
            self->now(self->now_data) - since >= workload->fallback_after_s * G_USEC_PER_SEC) {
            g_ptr_array_add(pass->fallback_candidates, workload);
            g_ptr_array_add(pass->fallback_reasons, g_steal_pointer(&reason));
            return;
        }
        keep_waiting(self, workload, reason);
        return;
    }
    reason = einsora_reason_admitted(resolved.klass->devices, result->placed_class,
                                     result->machine_name, result->driver, result->gpu_mask);
    placement = (EinsoraPlacement){result->placed_class, result->machine_id, result->driver,
                                   result->gpu_mask};
    since = self->metrics != NULL ? waiting_since(self, workload) : 0;
    if (!move(self, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, reason, &placement))
        return;
    einsora_usage_add(pass->usage, workload, resolved.klass);
    /* Run once the group commits: no agent hears of an admission that
     * a crash could still undo. */
    g_ptr_array_add(pass->admitted, workload);
    {
        double waited =
            since != 0 ? MAX(0, einsora_metrics_seconds(since, self->now(self->now_data))) : -1;
        g_array_append_val(pass->admitted_waits, waited);
    }
}

/* Tells the backend to run what the committed group admitted. */
static void
run_admitted(EinsoraController *self, Pass *pass)
{
    for (guint i = 0; i < pass->admitted->len; i++) {
        EinsoraWorkload *workload = g_ptr_array_index(pass->admitted, i);
        g_autoptr(EinsoraWorkloadSpec) spec = spec_for(self, workload);
        g_autoptr(GError) error = NULL;
        double waited = g_array_index(pass->admitted_waits, double, i);

        /* Counted once committed: a group rolled back admitted nothing. */
        einsora_metric_add(
            self->admissions,
            (const char *const[]){einsora_workload_kind_to_string(workload->kind), NULL}, 1);
        if (waited >= 0)
            einsora_metric_observe(self->admission_wait, NULL, waited);
        g_hash_table_remove(self->waiting_since, workload->id);

        /* Provisioning but absent from the runtime is run again by observe. */
        if (!einsora_backend_run(self->backend, spec, &error)) {
            einsora_log_workload(G_LOG_LEVEL_MESSAGE, workload->id, workload->tenant_id,
                                 workload->machine_id, "workload %s: run failed: %s", workload->id,
                                 error->message);
            note_once(self, workload, einsora_reason_run_retrying());
        }
    }
    g_ptr_array_set_size(pass->admitted, 0);
    g_array_set_size(pass->admitted_waits, 0);
}

/* Commits the open admission group, then runs what it admitted. A group
 * that doesn't commit leaves every workload in it as the store had it,
 * to be decided again next pass. */
static gboolean
close_group(EinsoraController *self, Pass *pass)
{
    g_autoptr(GError) error = NULL;

    if (!einsora_service_group_commit(self->service, &error)) {
        g_message("region %s: %u admissions not written, decided again next pass: %s", self->region,
                  pass->admitted->len, error->message);
        g_ptr_array_set_size(pass->admitted, 0);
        g_array_set_size(pass->admitted_waits, 0);
        /* The reasons remembered for the group's rows are gone with them. */
        g_hash_table_remove_all(self->last_reasons);
        return FALSE;
    }
    run_admitted(self, pass);
    return TRUE;
}

/* Admission decisions go in groups of ADMISSION_GROUP_MAX, each one
 * transaction: before a decision, a group is opened if none is... */
static gboolean
group_before(EinsoraController *self, guint *in_group)
{
    g_autoptr(GError) error = NULL;

    if (*in_group == 0 && !einsora_service_group_begin(self->service, &error)) {
        g_message("region %s: admission paused: %s", self->region, error->message);
        return FALSE;
    }
    return TRUE;
}

/* ...and after it, a failed or full group is closed. FALSE: stop. */
static gboolean
group_after(EinsoraController *self, Pass *pass, guint *in_group)
{
    if (einsora_service_group_failed(self->service)) {
        close_group(self, pass);
        return FALSE;
    }
    if (++*in_group == ADMISSION_GROUP_MAX) {
        *in_group = 0;
        return close_group(self, pass);
    }
    return TRUE;
}

/* Every pending and queued workload, oldest first (FIFO, with backfill:
 * one that doesn't fit leaves the room to later ones that do), in groups
 * of ADMISSION_GROUP_MAX decisions per transaction. */
static void
admit_waiting(EinsoraController *self, Pass *pass, GPtrArray *workloads)
{
    guint in_group = 0;

    for (guint i = 0; i < workloads->len; i++) {
        EinsoraWorkload *workload = g_ptr_array_index(workloads, i);

        if (workload->state != EINSORA_WORKLOAD_STATE_PENDING &&
            workload->state != EINSORA_WORKLOAD_STATE_QUEUED)
            continue;
        if (!group_before(self, &in_group))
            return;
        admit(self, pass, workload);
        if (!group_after(self, pass, &in_group))
            return;
    }
    if (in_group > 0)
        close_group(self, pass);
}

/* The first of the workload's fallback classes that fits now, admitted
 * on it; none: it waits with its own class's reason. */
static void
admit_fallback(EinsoraController *self, Pass *pass, EinsoraWorkload *workload,
               const char *own_reason)
{
    g_auto(GStrv) classes = g_strsplit(workload->fallback, ",", -1);
    gint64 now = self->now(self->now_data);
    gint64 since = waiting_since(self, workload);

    for (guint i = 0; classes[i] != NULL; i++) {
        EinsoraCatalogResolution resolved;
        g_autoptr(EinsoraWorkload) as_fallback = NULL;
        g_autoptr(EinsoraPlacementResult) result = NULL;
        g_autofree gchar *reason = NULL;
        EinsoraPlacement placement;
        const char *kind;

        einsora_catalog_resolve(self->catalog, classes[i], workload->image, &resolved);
        if (resolved.klass == NULL || resolved.runtime == NULL)
            continue;
        kind = resolved.klass->devices > 0
                   ? einsora_accelerator_to_string(resolved.klass->accelerator)
                   : "cpu";
        if (g_hash_table_contains(pass->held_for_aged, kind))
            continue;
        /* Placed as if it had asked for this class. */
        as_fallback = einsora_workload_copy(workload);
        g_free(as_fallback->gpu_class);
        as_fallback->gpu_class = g_strdup(classes[i]);
        result = einsora_placement_place(as_fallback, self->catalog, pass->capacity, pass->usage);
        if (result->outcome != EINSORA_PLACEMENT_PLACED)
            continue;
        reason = einsora_reason_admitted_fallback(
            workload->gpu_class, (now - since) / G_USEC_PER_SEC, resolved.klass->devices,
            result->placed_class, result->machine_name, result->driver, result->gpu_mask);
        placement = (EinsoraPlacement){result->placed_class, result->machine_id, result->driver,
                                       result->gpu_mask};
        if (!move(self, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, reason, &placement))
            return;
        einsora_usage_add(pass->usage, workload, resolved.klass);
        g_ptr_array_add(pass->admitted, workload);
        {
            double waited = since != 0 ? MAX(0, einsora_metrics_seconds(since, now)) : -1;
            g_array_append_val(pass->admitted_waits, waited);
        }
        return;
    }
    keep_waiting(self, workload, own_reason);
}

/* The waiters that may fall back, oldest first, each group a
 * transaction, after every waiter's own class had its turn: what frees
 * up goes to those who asked for it first. */
static void
admit_fallbacks(EinsoraController *self, Pass *pass)
{
    guint in_group = 0;

    for (guint i = 0; i < pass->fallback_candidates->len; i++) {
        if (!group_before(self, &in_group))
            return;
        admit_fallback(self, pass, g_ptr_array_index(pass->fallback_candidates, i),
                       g_ptr_array_index(pass->fallback_reasons, i));
        if (!group_after(self, pass, &in_group))
            return;
    }
    if (in_group > 0)
        close_group(self, pass);
}

/* A failure releases what the workload held on the runtime, keeping its
 * disk; then the row says failed. */
static void
fail(EinsoraController *self, EinsoraWorkload *workload, const char *reason)
{
    g_autoptr(EinsoraWorkloadSpec) spec = spec_for(self, workload);
    g_autoptr(GError) error = NULL;

    if (!einsora_backend_park(self->backend, spec, &error))
        einsora_log_workload(G_LOG_LEVEL_MESSAGE, workload->id, workload->tenant_id,
                             workload->machine_id, "workload %s: releasing it failed: %s",
                             workload->id, error->message);
    move(self, workload, EINSORA_WORKLOAD_STATE_FAILED, reason, NULL);
}

static gboolean
provisioning_timed_out(EinsoraController *self, const EinsoraWorkload *workload)
{
    gint64 since = 0;

    if (workload->state != EINSORA_WORKLOAD_STATE_PROVISIONING ||
        !einsora_timestamp_parse(workload->updated_at, &since, NULL))
        return FALSE;
    return self->now(self->now_data) - since > self->provisioning_timeout_us;
}

static gboolean
observe_now(EinsoraController *self, EinsoraWorkload *workload, EinsoraObservation *observation)
{
    g_autoptr(EinsoraWorkloadSpec) spec = spec_for(self, workload);
    g_autoptr(GError) error = NULL;

    if (!einsora_backend_observe(self->backend, spec, observation, &error)) {
        einsora_log_workload(G_LOG_LEVEL_MESSAGE, workload->id, workload->tenant_id,
                             workload->machine_id, "workload %s: observing failed: %s",
                             workload->id, error->message);
        note_once(self, workload, einsora_reason_observe_retrying());
        return FALSE;
    }
    /* A status about another attempt answers nothing yet. */
    if (observation->status != EINSORA_RUNTIME_UNKNOWN &&
        observation->status != EINSORA_RUNTIME_ABSENT && observation->attempt != workload->attempt)
        observation->status = EINSORA_RUNTIME_PROGRESSING;
    if (observation->status == EINSORA_RUNTIME_UNKNOWN) {
        /* Unknown decides nothing, not even the provisioning timeout. It
         * has a reason when the machine answers but its runtime doesn't. */
        note_once(self, workload,
                  observation->reason != NULL ? observation->reason
                                              : einsora_reason_machine_offline());
        return FALSE;
    }
    return TRUE;
}

/* Idle auto-stop (docs/adr/0044): a running workload with an idle limit
 * whose kernels are all idle, and which saw no activity (its server's
 * own, or through the access proxy) for that long since it began
 * running, is stopped, keeping its data. A busy kernel is never idle. */
static gboolean
stop_if_idle(EinsoraController *self, EinsoraWorkload *workload,
             const EinsoraObservation *observation)
{
    gint64 now = self->now(self->now_data);
    gint64 last = 0;
    g_autofree gchar *reason = NULL;

    if (workload->idle_timeout_s <= 0 || observation->busy_kernels > 0 ||
        !einsora_timestamp_parse(workload->updated_at, &last, NULL))
        return FALSE;
    last = MAX(last, observation->last_active_us);
    last = MAX(last, einsora_service_last_activity(self->service, workload->id));
    if (now - last < workload->idle_timeout_s * G_USEC_PER_SEC)
        return FALSE;
    reason = einsora_reason_idle_stopped(workload->idle_timeout_s, last, now);
    return move(self, workload, EINSORA_WORKLOAD_STATE_STOPPING, reason, NULL);
}

static void
observe(EinsoraController *self, EinsoraWorkload *workload)
{
    EinsoraObservation observation = {0};
    gboolean provisioning = workload->state == EINSORA_WORKLOAD_STATE_PROVISIONING;

    if (!observe_now(self, workload, &observation))
        return;
    switch (observation.status) {
    case EINSORA_RUNTIME_READY:
        if (provisioning)
            move(self, workload, EINSORA_WORKLOAD_STATE_RUNNING, einsora_reason_ready(), NULL);
        else
            stop_if_idle(self, workload, &observation);
        return;
    case EINSORA_RUNTIME_FAILED:
        fail(self, workload,
             observation.reason != NULL ? observation.reason
                                        : einsora_reason_machine_reported_problem());
        return;
    case EINSORA_RUNTIME_EXITED:
    case EINSORA_RUNTIME_PARKED:
    case EINSORA_RUNTIME_REMOVED:
        fail(self, workload, einsora_reason_stopped_by_itself());
        return;
    case EINSORA_RUNTIME_ABSENT:
        if (!provisioning) {
            fail(self, workload, einsora_reason_vanished());
            return;
        }
        {
            /* Run is idempotent: a lost or never-sent run is sent again. */
            g_autoptr(EinsoraWorkloadSpec) spec = spec_for(self, workload);
            g_autoptr(GError) error = NULL;
            if (!einsora_backend_run(self->backend, spec, &error)) {
                einsora_log_workload(G_LOG_LEVEL_MESSAGE, workload->id, workload->tenant_id,
                                     workload->machine_id, "workload %s: run failed: %s",
                                     workload->id, error->message);
                note_once(self, workload, einsora_reason_run_retrying());
            }
        }
        break;
    case EINSORA_RUNTIME_PROGRESSING:
        /* A first pull can take minutes: how far it is, as a note. */
        if (provisioning && observation.pull_layers > 0) {
            g_autofree gchar *reason = einsora_reason_pulling_image(
                observation.pull_layers_done, observation.pull_layers, observation.pull_bytes_done,
                observation.pull_bytes_total);
            note_once(self, workload, reason);
        }
        break;
    case EINSORA_RUNTIME_UNKNOWN:
    default:
        break;
    }
    /* A pull that goes on isn't a start that hangs: the Engine ends a
     * pull that can't go on. */
    if (observation.pull_layers > 0)
        return;
    if (provisioning_timed_out(self, workload)) {
        g_autofree gchar *reason =
            einsora_reason_provisioning_timeout(self->provisioning_timeout_us / G_USEC_PER_SEC);
        fail(self, workload, reason);
    }
}

static void
park(EinsoraController *self, EinsoraWorkload *workload)
{
    g_autoptr(EinsoraWorkloadSpec) spec = spec_for(self, workload);
    g_autoptr(GError) error = NULL;
    EinsoraObservation observation = {0};

    if (!einsora_backend_park(self->backend, spec, &error)) {
        einsora_log_workload(G_LOG_LEVEL_MESSAGE, workload->id, workload->tenant_id,
                             workload->machine_id, "workload %s: parking failed: %s", workload->id,
                             error->message);
        note_once(self, workload, einsora_reason_observe_retrying());
        return;
    }
    if (!observe_now(self, workload, &observation))
        return;
    if (observation.status == EINSORA_RUNTIME_PARKED ||
        observation.status == EINSORA_RUNTIME_ABSENT ||
        observation.status == EINSORA_RUNTIME_REMOVED ||
        observation.status == EINSORA_RUNTIME_EXITED ||
        observation.status == EINSORA_RUNTIME_FAILED)
        move(self, workload, EINSORA_WORKLOAD_STATE_STOPPED, einsora_reason_released(), NULL);
}

static void
remove_workload(EinsoraController *self, EinsoraWorkload *workload)
{
    g_autoptr(EinsoraWorkloadSpec) spec = spec_for(self, workload);
    g_autoptr(GError) error = NULL;
    EinsoraObservation observation = {0};

    /* Never admitted: nothing on any runtime to delete. */
    if (workload->placed_class == NULL) {
        move(self, workload, EINSORA_WORKLOAD_STATE_DELETED, einsora_reason_gone(), NULL);
        return;
    }
    if (!einsora_backend_remove(self->backend, spec, &error)) {
        einsora_log_workload(G_LOG_LEVEL_MESSAGE, workload->id, workload->tenant_id,
                             workload->machine_id, "workload %s: removing failed: %s", workload->id,
                             error->message);
        note_once(self, workload, einsora_reason_observe_retrying());
        return;
    }
    if (!observe_now(self, workload, &observation))
        return;
    if (observation.status == EINSORA_RUNTIME_REMOVED ||
        observation.status == EINSORA_RUNTIME_ABSENT)
        move(self, workload, EINSORA_WORKLOAD_STATE_DELETED, einsora_reason_gone(), NULL);
}

/* What the store says is held in the region, by placed class (or the
 * requested class for a workload holding capacity without a recorded
 * placement, so it is never under-counted). */
static EinsoraUsage *
usage_of(EinsoraController *self, GPtrArray *workloads)
{
    EinsoraUsage *usage = einsora_usage_new();

    for (guint i = 0; i < workloads->len; i++) {
        const EinsoraWorkload *workload = g_ptr_array_index(workloads, i);
        const EinsoraComputeClass *klass;

        if (!einsora_workload_state_holds_capacity(workload->state))
            continue;
        klass = einsora_catalog_lookup_class(self->catalog, einsora_workload_get_class(workload));
        if (klass != NULL)
            einsora_usage_add(usage, workload, klass);
    }
    return usage;
}

static gboolean
reconcile(EinsoraController *self, GError **error)
{
    g_autoptr(GPtrArray) workloads = NULL;
    g_autoptr(GError) capacity_error = NULL;
    Pass pass = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

    workloads = einsora_store_list_region_workloads(self->store, self->region, error);
    if (workloads == NULL)
        return FALSE;
    forget_waits(self, workloads);
    pass.usage = usage_of(self, workloads);
    pass.trusted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    pass.admitted = g_ptr_array_new();
    pass.admitted_waits = g_array_new(FALSE, FALSE, sizeof(double));
    pass.first_fit = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    pass.held_for_aged = g_hash_table_new(g_str_hash, g_str_equal);
    pass.fallback_candidates = g_ptr_array_new();
    pass.fallback_reasons = g_ptr_array_new_with_free_func(g_free);
    pass.capacity = einsora_backend_capacity(self->backend, self->region, &capacity_error);
    if (pass.capacity == NULL)
        g_message("region %s: capacity unknown: %s", self->region, capacity_error->message);

    /* What runs first, each step its own transaction (they act on the
     * runtime); admission then decides from the same usage as before. */
    for (guint i = 0; i < workloads->len; i++) {
        EinsoraWorkload *workload = g_ptr_array_index(workloads, i);

        switch (workload->state) {
        case EINSORA_WORKLOAD_STATE_PROVISIONING:
        case EINSORA_WORKLOAD_STATE_RUNNING:
            observe(self, workload);
            break;
        case EINSORA_WORKLOAD_STATE_STOPPING:
            park(self, workload);
            break;
        case EINSORA_WORKLOAD_STATE_DELETING:
            remove_workload(self, workload);
            break;
        default:
            break;
        }
    }
    admit_waiting(self, &pass, workloads);
    if (pass.fallback_candidates->len > 0)
        admit_fallbacks(self, &pass);
    einsora_capacity_free(pass.capacity);
    einsora_usage_free(pass.usage);
    g_hash_table_unref(pass.trusted);
    g_ptr_array_unref(pass.admitted);
    g_array_unref(pass.admitted_waits);
    g_hash_table_unref(pass.first_fit);
    g_hash_table_unref(pass.held_for_aged);
    g_ptr_array_unref(pass.fallback_candidates);
    g_ptr_array_unref(pass.fallback_reasons);
    return TRUE;
}

gboolean
einsora_controller_reconcile_once(EinsoraController *self, GError **error)
{
    gint64 began_us = g_get_monotonic_time();

    g_return_val_if_fail(EINSORA_IS_CONTROLLER(self), FALSE);
    if (!reconcile(self, error))
        return FALSE;
    einsora_metric_observe(self->pass_duration, NULL,
                           einsora_metrics_seconds(began_us, g_get_monotonic_time()));
    return TRUE;
}

static EinsoraLease *
lease_of(EinsoraController *self, gint64 interval_us)
{
    if (self->lease == NULL) {
        g_autofree gchar *name = g_strdup_printf("controller:%s", self->region);
        self->lease =
            einsora_lease_new(self->store, name, 3 * interval_us, self->now, self->now_data);
        if (self->lease_holder != NULL)
            einsora_lease_set_holder(self->lease, self->lease_holder);
    }
    return self->lease;
}

void
einsora_controller_set_lease_holder(EinsoraController *self, const char *holder)
{
    g_free(self->lease_holder);
    self->lease_holder = g_strdup(holder);
}

gboolean
einsora_controller_is_leading(EinsoraController *self)
{
    return self->lease != NULL && einsora_lease_is_held(self->lease);
}

static void
clear_wake(EinsoraController *self)
{
    if (self->wake_source == NULL)
        return;
    g_source_destroy(self->wake_source);
    g_clear_pointer(&self->wake_source, g_source_unref);
}

/* One pass, by tick or wake; any wake asked for before it is answered by
 * it, and the next one keeps its distance. */
static gboolean
reconcile_now(EinsoraController *self)
{
    g_autoptr(GError) error = NULL;
    gint64 began_us = g_get_monotonic_time();
    gboolean reconciled;

    clear_wake(self);
    self->passes++;
    reconciled = einsora_controller_reconcile_once(self, &error);
    if (!reconciled)
        g_message("region %s: reconcile paused: %s", self->region, error->message);
    self->next_wake_us = g_get_monotonic_time() + MAX(EINSORA_CONTROLLER_WAKE_GAP_MIN_US,
                                                      2 * (g_get_monotonic_time() - began_us));
    return reconciled;
}

gboolean
einsora_controller_tick(EinsoraController *self)
{
    g_autoptr(GError) error = NULL;
    EinsoraLease *lease = lease_of(self, EINSORA_LEASE_MIN_DURATION_US / 3);

    /* With the store down a pass would decide from stale or missing rows
     * and write nothing: wait, touching no workload, so the ones running
     * keep running. */
    if (!einsora_service_check_ready(self->service, &error)) {
        if (!self->paused)
            g_message("controller paused: %s", error->message);
        self->paused = TRUE;
        return FALSE;
    }
    if (self->paused) {
        g_message("controller resumed");
        self->paused = FALSE;
    }
    if (!einsora_lease_hold(lease, &error)) {
        if (error != NULL)
            g_message("region %s: lease not renewed: %s", self->region, error->message);
        /* Renewing failed for too long, or someone else leads: stand by. */
        if (!einsora_lease_is_held(lease))
            return FALSE;
    }
    return reconcile_now(self);
}

/* While it leads, the lease is renewed by its own timer, so a woken pass
 * writes no lease of its own; before it has led (right after start) it
 * ticks, taking the lease if it is free. */
static gboolean
on_wake(gpointer user_data)
{
    EinsoraController *self = user_data;
    g_autoptr(GError) error = NULL;

    g_clear_pointer(&self->wake_source, g_source_unref);
    if (!einsora_controller_is_leading(self)) {
        einsora_controller_tick(self);
        return G_SOURCE_REMOVE;
    }
    if (einsora_service_check_ready(self->service, &error))
        reconcile_now(self);
    return G_SOURCE_REMOVE;
}

void
einsora_controller_wake(EinsoraController *self)
{
    gint64 wait_us;

    g_return_if_fail(EINSORA_IS_CONTROLLER(self));
    if (self->timer_id == 0 || self->wake_source != NULL)
        return;
    wait_us = self->next_wake_us - g_get_monotonic_time();
    /* Idle: requests already waiting on the loop go first. */
    self->wake_source =
        wait_us > 0 ? g_timeout_source_new((guint)((wait_us + 999) / 1000)) : g_idle_source_new();
    g_source_set_priority(self->wake_source, G_PRIORITY_DEFAULT_IDLE);
    g_source_set_callback(self->wake_source, on_wake, self, NULL);
    g_source_attach(self->wake_source, NULL);
}

guint64
einsora_controller_count_passes(EinsoraController *self)
{
    g_return_val_if_fail(EINSORA_IS_CONTROLLER(self), 0);
    return self->passes;
}

static gboolean
on_tick(gpointer user_data)
{
    einsora_controller_tick(user_data);
    return G_SOURCE_CONTINUE;
}

/* Renews in the background, so a long pass never lets the lease lapse. */
static gboolean
on_renew(gpointer user_data)
{
    EinsoraController *self = user_data;
    g_autoptr(GError) error = NULL;

    if (!einsora_lease_hold(self->lease, &error) && error != NULL)
        g_message("region %s: lease not renewed: %s", self->region, error->message);
    return G_SOURCE_CONTINUE;
}

void
einsora_controller_start(EinsoraController *self, gint64 interval_us)
{
    EinsoraLease *lease;

    einsora_controller_stop(self);
    g_clear_object(&self->lease);
    lease = lease_of(self, interval_us);
    self->timer_id = g_timeout_add((guint)(interval_us / 1000), on_tick, self);
    self->renew_id =
        g_timeout_add((guint)(einsora_lease_get_duration(lease) / 3 / 1000), on_renew, self);
}

void
einsora_controller_stop(EinsoraController *self)
{
    clear_wake(self);
    if (self->timer_id != 0) {
        g_source_remove(self->timer_id);
        self->timer_id = 0;
    }
    if (self->renew_id != 0) {
        g_source_remove(self->renew_id);
        self->renew_id = 0;
    }
    if (self->lease != NULL)
        einsora_lease_release(self->lease);
}
