#define G_LOG_DOMAIN "einsora-hub"

#include "einsora-hub.h"

#include "einsora-error.h"
#include "einsora-gpu-mask.h"
#include "einsora-log.h"
#include "einsora-protocol.h"
#include "einsora-reason.h"

/* A sync with nothing new, waiting for a wake that changes its machine's
 * desired state, the end of the long poll, or its cancellation. */
typedef struct {
    GTask *task;
    gint64 applied_generation;
    GSource *timeout;
    GSource *cancelled; /* NULL without a cancellable */
} HeldSync;

/* The generation at which a workload's mode and attempt last changed: a
 * status the agent saw before it applied that generation answers an older
 * request. */
typedef struct {
    EinsoraWorkloadMode mode;
    gint64 attempt;
    gint64 generation;
} WorkloadMark;

/* What the hub knows of one machine, from what its agent said since the
 * hub started. Desired state itself always comes from the store; only its
 * canonical form is kept, to tell when it changed. */
typedef struct {
    EinsoraHub *hub; /* borrowed: states live as long as the hub */
    gchar *machine_id;
    gchar *name;               /* for the operator's log */
    gint64 last_sync_us;       /* 0: not since the hub started */
    gboolean online;           /* as last logged */
    gboolean refused;          /* its last inventory didn't fit the machine */
    gint64 applied_generation; /* as its agent last reported */
    GHashTable *statuses;      /* workload ID -> EinsoraWorkloadStatus */
    /* Status changes its agent replayed from its outbox (a disconnect),
     * not yet observed: workload ID -> GQueue of EinsoraWorkloadStatus,
     * oldest first; a controller pass observes one of each before the
     * status now. At most EINSORA_PROTOCOL_MAX_REPLAY in all. */
    GHashTable *replays;
    guint replays_held;
    gint64 replayed_through;      /* the last change taken: a replay is taken once */
    EinsoraDesiredState *desired; /* as last computed; NULL until then */
    gint64 generation;            /* of @desired */
    GHashTable *marks;            /* workload ID -> WorkloadMark */
    HeldSync *held;
    /* The desired state as last computed, and its workloads by ID, kept
     * until the main loop turns: a controller pass observes each of the
     * machine's workloads in one go, and reads the store once for them
     * all instead of once each (which made a pass quadratic). */
    EinsoraDesiredState *recent;
    GHashTable *recent_index; /* workload ID -> EinsoraDesiredWorkload (in @recent) */
    /* Tunnel streams (docs/adr/0059): whether its agent opens them when
     * asked (its last report said so), and how many the next answer asks. */
    gboolean takes_tunnels;
    gint64 open_tunnels;
} MachineState;

struct _EinsoraHub {
    GObject parent_instance;
    EinsoraStore *store;
    EinsoraCatalog *catalog;
    gchar *region;
    EinsoraNowFunc now;
    gpointer now_data;
    gint64 created_us;
    gint64 long_poll_us;
    gint64 offline_after_us; /* EINSORA_HUB_OFFLINE_AFTER_US unless a test shortens it */
    gboolean shared;         /* other processes' hubs hold some syncs */
    gint64 away_too_long_us; /* EINSORA_HUB_AWAY_TOO_LONG_US, likewise */
    gchar *away_reason;
    GMainContext *context;
    GHashTable *machines;   /* machine ID -> MachineState */
    GHashTable *wakes;      /* machine IDs whose waiting sync wakes on idle */
    GSource *forget_source; /* drops the machines' recent desired states */
    guint64 computed;       /* desired states read from the store, for tests */
    GSource *wake_source;
    GSource *replay_wake;     /* another controller pass, for replays left */
    gchar *access_machine_id; /* the machine whose agent runs in this process */
    GWeakRef access_source;
    /* /metrics (docs/adr/0043-metrics.md); NULL families count nothing. */
    EinsoraMetrics *metrics;
    EinsoraMetric *syncs_held;
    EinsoraMetric *syncs_answered;
};

static void einsora_hub_backend_iface_init(EinsoraBackendInterface *iface);
static void einsora_hub_transport_iface_init(EinsoraSyncTransportInterface *iface);
static void einsora_hub_access_iface_init(EinsoraWorkloadAccessInterface *iface);
static void einsora_hub_logs_iface_init(EinsoraWorkloadLogsInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(
    EinsoraHub, einsora_hub, G_TYPE_OBJECT,
    G_IMPLEMENT_INTERFACE(EINSORA_TYPE_BACKEND, einsora_hub_backend_iface_init)
        G_IMPLEMENT_INTERFACE(EINSORA_TYPE_SYNC_TRANSPORT, einsora_hub_transport_iface_init)
            G_IMPLEMENT_INTERFACE(EINSORA_TYPE_WORKLOAD_ACCESS, einsora_hub_access_iface_init)
                G_IMPLEMENT_INTERFACE(EINSORA_TYPE_WORKLOAD_LOGS, einsora_hub_logs_iface_init))

/* How a sync was answered, for einsora_hub_syncs_answered_total. */
static void
count_answer(EinsoraHub *self, const char *answer)
{
    einsora_metric_add(self->syncs_answered, (const char *const[]){answer, NULL}, 1);
}

/* Detaches the waiting sync from its machine and returns its task, which
 * the caller completes. */
static GTask *
take_held(MachineState *state)
{
    HeldSync *held = g_steal_pointer(&state->held);
    GTask *task;

    if (held == NULL)
        return NULL;
    einsora_metric_add(state->hub->syncs_held, NULL, -1);
    g_source_destroy(held->timeout);
    g_source_unref(held->timeout);
    if (held->cancelled != NULL) {
        g_source_destroy(held->cancelled);
        g_source_unref(held->cancelled);
    }
    task = held->task;
    g_free(held);
    return task;
}

static void
machine_state_free(MachineState *state)
{
    g_autoptr(GTask) task = take_held(state);

    /* A held task holds a ref on the hub, so none is left by now. */
    g_warn_if_fail(task == NULL);
    g_free(state->machine_id);
    g_free(state->name);
    g_hash_table_unref(state->statuses);
    g_hash_table_unref(state->replays);
    g_clear_pointer(&state->desired, einsora_desired_state_free);
    g_hash_table_unref(state->marks);
    g_clear_pointer(&state->recent_index, g_hash_table_unref);
    g_clear_pointer(&state->recent, einsora_desired_state_free);
    g_free(state);
}

static GHashTable *
statuses_new(void)
{
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                 (GDestroyNotify)einsora_workload_status_free);
}

static void
replay_queue_free(gpointer queue)
{
    g_queue_free_full(queue, (GDestroyNotify)einsora_workload_status_free);
}

static GHashTable *
marks_new(void)
{
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static void
einsora_hub_finalize(GObject *object)
{
    EinsoraHub *self = EINSORA_HUB(object);

    if (self->wake_source != NULL) {
        g_source_destroy(self->wake_source);
        g_source_unref(self->wake_source);
    }
    if (self->forget_source != NULL) {
        g_source_destroy(self->forget_source);
        g_source_unref(self->forget_source);
    }
    if (self->replay_wake != NULL) {
        g_source_destroy(self->replay_wake);
        g_source_unref(self->replay_wake);
    }
    g_hash_table_unref(self->wakes);
    g_hash_table_unref(self->machines);
    g_clear_object(&self->metrics);
    g_weak_ref_clear(&self->access_source);
    g_free(self->access_machine_id);
    g_clear_object(&self->store);
    g_clear_object(&self->catalog);
    g_free(self->region);
    g_free(self->away_reason);
    g_main_context_unref(self->context);
    G_OBJECT_CLASS(einsora_hub_parent_class)->finalize(object);
}

enum {
    SIGNAL_RUNTIME_CHANGED,
    N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void
einsora_hub_class_init(EinsoraHubClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_hub_finalize;

    signals[SIGNAL_RUNTIME_CHANGED] =
        g_signal_new("runtime-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 0);
}

static void
einsora_hub_init(EinsoraHub *self)
{
    self->machines =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)machine_state_free);
    self->wakes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->long_poll_us = EINSORA_SYNC_LONG_POLL_US;
    self->offline_after_us = EINSORA_HUB_OFFLINE_AFTER_US;
    self->away_too_long_us = EINSORA_HUB_AWAY_TOO_LONG_US;
    g_weak_ref_init(&self->access_source, NULL);
    self->away_reason =
        einsora_reason_machine_away_too_long(EINSORA_HUB_AWAY_TOO_LONG_US / G_USEC_PER_SEC);
    self->context = g_main_context_ref_thread_default();
}

EinsoraHub *
einsora_hub_new(EinsoraStore *store, EinsoraCatalog *catalog, const char *region,
                EinsoraNowFunc now, gpointer now_data)
{
    EinsoraHub *self;

    g_return_val_if_fail(EINSORA_IS_STORE(store), NULL);
    g_return_val_if_fail(EINSORA_IS_CATALOG(catalog), NULL);
    g_return_val_if_fail(region != NULL && now != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_HUB, NULL);
    self->store = g_object_ref(store);
    self->catalog = g_object_ref(catalog);
    self->region = g_strdup(region);
    self->now = now;
    self->now_data = now_data;
    self->created_us = now(now_data);
    return self;
}

void
einsora_hub_set_metrics(EinsoraHub *self, EinsoraMetrics *metrics)
{
    static const char *const answers[] = {"changed", "long_poll", "superseded", "error"};

    g_return_if_fail(EINSORA_IS_HUB(self));
    g_return_if_fail(EINSORA_IS_METRICS(metrics));
    g_set_object(&self->metrics, metrics);
    self->syncs_held = einsora_metrics_gauge(
        metrics, "einsora_hub_syncs_held",
        "Agents' syncs held open now, waiting for a change (long poll).", NULL);
    self->syncs_answered = einsora_metrics_counter(
        metrics, "einsora_hub_syncs_answered_total",
        "Agents' syncs answered: changed (a new desired state, at once or on a wake), long_poll "
        "(the long poll ended), superseded (a newer sync from the machine), error.",
        (const char *const[]){"answer", NULL});
    for (guint i = 0; i < G_N_ELEMENTS(answers); i++)
        einsora_metric_touch(self->syncs_answered, (const char *const[]){answers[i], NULL});
    {
        /* Syncs held already end through take_held too. */
        GHashTableIter iter;
        gpointer value;
        guint held = 0;

        g_hash_table_iter_init(&iter, self->machines);
        while (g_hash_table_iter_next(&iter, NULL, &value))
            held += ((MachineState *)value)->held != NULL;
        einsora_metric_set(self->syncs_held, NULL, held);
    }
}

void
einsora_hub_set_offline_limits(EinsoraHub *self, gint64 offline_after_us, gint64 away_too_long_us)
{
    g_return_if_fail(EINSORA_IS_HUB(self));
    g_return_if_fail(offline_after_us > 0 && away_too_long_us >= offline_after_us);
    self->offline_after_us = offline_after_us;
    self->away_too_long_us = away_too_long_us;
    g_free(self->away_reason);
    self->away_reason = einsora_reason_machine_away_too_long(away_too_long_us / G_USEC_PER_SEC);
}

void
einsora_hub_set_long_poll(EinsoraHub *self, gint64 long_poll_us)
{
    g_return_if_fail(EINSORA_IS_HUB(self));
    g_return_if_fail(long_poll_us > 0);
    self->long_poll_us = long_poll_us;
}

void
einsora_hub_set_shared(EinsoraHub *self, gboolean shared)
{
    g_return_if_fail(EINSORA_IS_HUB(self));
    self->shared = shared;
}

/* Held by another process's hub: not synced here, seen there since this
 * hub started (a sync this process's last run took, before a restart,
 * doesn't count: that machine is reconnecting here). */
static gboolean
synced_elsewhere(EinsoraHub *self, const EinsoraMachine *machine, const MachineState *state,
                 gint64 now_us)
{
    gint64 window_us = MIN(self->offline_after_us, now_us - self->created_us);

    return self->shared && (state == NULL || state->last_sync_us == 0) && window_us > 0 &&
           einsora_machine_seen_within(machine, now_us, window_us);
}

static gint64
hub_now(EinsoraHub *self)
{
    return self->now(self->now_data);
}

static MachineState *
machine_state(EinsoraHub *self, const char *machine_id)
{
    MachineState *state = g_hash_table_lookup(self->machines, machine_id);

    if (state == NULL) {
        state = g_new0(MachineState, 1);
        state->hub = self;
        state->machine_id = g_strdup(machine_id);
        state->statuses = statuses_new();
        state->replays = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, replay_queue_free);
        state->marks = marks_new();
        g_hash_table_insert(self->machines, state->machine_id, state);
    }
    return state;
}

static gboolean
synced_recently(const MachineState *state, gint64 now_us)
{
    return state != NULL && state->last_sync_us != 0 &&
           now_us - state->last_sync_us < state->hub->offline_after_us;
}

/* Logged once when it happens to be noticed: the hub has no timer per
 * machine. */
static void
notice_offline(MachineState *state, gint64 now_us)
{
    if (state == NULL || !state->online || synced_recently(state, now_us))
        return;
    state->online = FALSE;
    einsora_log_machine(G_LOG_LEVEL_MESSAGE, state->machine_id,
                        "machine %s (%s) is offline: no sync for %" G_GINT64_FORMAT " s",
                        state->machine_id, state->name,
                        state->hub->offline_after_us / G_USEC_PER_SEC);
}

/* The machine, if it is registered in this hub's region. Its owner and
 * region come from this row, never from what its agent says. */
static EinsoraMachine *
find_region_machine(EinsoraHub *self, const char *machine_id, GError **error)
{
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GError) local_error = NULL;

    if (machine_id != NULL)
        machine = einsora_store_find_machine(self->store, machine_id, &local_error);
    /* A store that can't answer is its own error, not a missing machine. */
    if (local_error != NULL &&
        !g_error_matches(local_error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&local_error));
        return NULL;
    }
    if (machine == NULL || g_strcmp0(machine->region, self->region) != 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such machine in this region");
        return NULL;
    }
    return g_steal_pointer(&machine);
}

static EinsoraWorkloadMode
mode_for(const EinsoraWorkload *workload)
{
    switch (workload->state) {
    case EINSORA_WORKLOAD_STATE_PROVISIONING:
    case EINSORA_WORKLOAD_STATE_RUNNING:
        return EINSORA_WORKLOAD_MODE_RUN;
    case EINSORA_WORKLOAD_STATE_DELETING:
    case EINSORA_WORKLOAD_STATE_DELETED:
        return EINSORA_WORKLOAD_MODE_REMOVE;
    case EINSORA_WORKLOAD_STATE_STOPPED:
        /* A stopped endpoint keeps nothing worth its disk. */
        return workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT ? EINSORA_WORKLOAD_MODE_REMOVE
                                                                : EINSORA_WORKLOAD_MODE_PARK;
    case EINSORA_WORKLOAD_STATE_PENDING:
    case EINSORA_WORKLOAD_STATE_QUEUED:
    case EINSORA_WORKLOAD_STATE_STOPPING:
    case EINSORA_WORKLOAD_STATE_FAILED:
    default:
        return EINSORA_WORKLOAD_MODE_PARK;
    }
}

/* One workload of the machine's desired state, or NULL for a row that
 * can't be on a machine (no class or driver): left out, so its agent
 * stops and keeps it, never deletes it. */
static EinsoraDesiredWorkload *
desired_workload_for(EinsoraHub *self, const EinsoraWorkload *workload)
{
    EinsoraCatalogResolution resolved;
    const EinsoraComputeClass *klass;
    const EinsoraImageRuntime *runtime;
    EinsoraDesiredWorkload *desired;

    if (workload->placed_class == NULL || workload->driver == NULL) {
        einsora_log_workload(
            G_LOG_LEVEL_DEBUG, workload->id, workload->tenant_id, workload->machine_id,
            "workload %s: on machine %s without a class or driver; left out of its desired "
            "state",
            workload->id, workload->machine_id);
        return NULL;
    }
    einsora_catalog_resolve(self->catalog, workload->placed_class, workload->image, &resolved);
    klass = resolved.klass;
    runtime = resolved.runtime;

    desired = einsora_desired_workload_new();
    desired->workload_id = g_strdup(workload->id);
    desired->tenant_id = g_strdup(workload->tenant_id);
    desired->mode = mode_for(workload);
    desired->attempt = workload->attempt;
    desired->kind = workload->kind;
    desired->driver = g_strdup(workload->driver);
    desired->placed_class = g_strdup(workload->placed_class);
    desired->image = g_strdup(workload->image);
    desired->runtime_reference = runtime != NULL ? g_strdup(runtime->reference) : NULL;
    desired->server = runtime != NULL ? g_strdup(runtime->server) : NULL;
    desired->cpus = klass != NULL ? klass->cpus : 0;
    desired->memory_mib = klass != NULL ? klass->memory_mib : 0;
    desired->devices = klass != NULL ? klass->devices : 0;
    /* Placement's choice, unless a class changed its count since. */
    desired->gpu_mask =
        einsora_gpu_mask_count(workload->gpu_mask) == desired->devices ? workload->gpu_mask : 0;
    desired->model = g_strdup(workload->model);
    desired->model_digest = g_strdup(workload->model_digest);
    /* An endpoint without its model (a row from before models were
     * recorded) has nothing to serve: parked, never sent to run. */
    if (desired->mode == EINSORA_WORKLOAD_MODE_RUN &&
        workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT && workload->model_digest == NULL)
        desired->mode = EINSORA_WORKLOAD_MODE_PARK;
    /* Withdrawn from the catalog: nothing says what to run, so it stays
     * parked with its data until the operator restores the entry. */
    if (desired->mode == EINSORA_WORKLOAD_MODE_RUN && runtime == NULL)
        desired->mode = EINSORA_WORKLOAD_MODE_PARK;
    return desired;
}

static gint64
after(gint64 generation)
{
    return generation < G_MAXINT64 ? generation + 1 : G_MAXINT64;
}

/* The desired state changed: a new generation, above both the last one
 * this hub gave and the one the agent applied (from an earlier run of the
 * hub), and at least the clock in milliseconds, so a restarted hub, which
 * remembers neither, still moves forward (docs/adr/0011). */
static void
advance(EinsoraHub *self, MachineState *state, const EinsoraDesiredState *desired)
{
    gint64 generation = MAX(hub_now(self) / 1000, after(state->generation));
    g_autoptr(GHashTable) marks = marks_new();

    generation = MAX(generation, after(state->applied_generation));
    for (guint i = 0; i < desired->workloads->len; i++) {
        const EinsoraDesiredWorkload *workload = g_ptr_array_index(desired->workloads, i);
        const WorkloadMark *old = g_hash_table_lookup(state->marks, workload->workload_id);
        WorkloadMark *mark = g_new0(WorkloadMark, 1);

        if (old != NULL && old->mode == workload->mode && old->attempt == workload->attempt)
            *mark = *old;
        else
            *mark = (WorkloadMark){workload->mode, workload->attempt, generation};
        g_hash_table_insert(marks, g_strdup(workload->workload_id), mark);
    }
    g_hash_table_unref(state->marks);
    state->marks = g_steal_pointer(&marks);
    g_clear_pointer(&state->desired, einsora_desired_state_free);
    state->desired = einsora_desired_state_copy(desired);
    state->generation = generation;
}

/* The machine's complete desired state, from the store, every time. */
static EinsoraDesiredState *
compute_desired(EinsoraHub *self, MachineState *state, GError **error)
{
    g_autoptr(GPtrArray) workloads = NULL;
    g_autoptr(EinsoraDesiredState) desired = NULL;

    workloads = einsora_store_list_machine_workloads(self->store, state->machine_id, error);
    if (workloads == NULL)
        return NULL;
    self->computed++;
    desired = einsora_desired_state_new();
    desired->machine_id = g_strdup(state->machine_id);
    for (guint i = 0; i < workloads->len; i++) {
        EinsoraDesiredWorkload *workload =
            desired_workload_for(self, g_ptr_array_index(workloads, i));
        if (workload != NULL)
            g_ptr_array_add(desired->workloads, workload);
    }
    /* Generation 0 here: the content alone says whether it changed (field
     * by field: as JSON text it cost a controller pass more than reading
     * the store). */
    if (state->desired == NULL || !einsora_desired_state_same_content(state->desired, desired))
        advance(self, state, desired);
    desired->generation = state->generation;
    desired->replayed_through = state->replayed_through;
    desired->open_tunnels = state->open_tunnels;
    return g_steal_pointer(&desired);
}

static void
return_desired(GTask *task, EinsoraDesiredState *desired)
{
    g_task_return_pointer(task, desired, (GDestroyNotify)einsora_desired_state_free);
}

/* Answers the machine's waiting sync: always, or only when its desired
 * state is no longer the one the agent applied. */
static void
answer_held(EinsoraHub *self, MachineState *state, gboolean only_if_changed)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraDesiredState) desired = NULL;
    g_autoptr(GTask) task = NULL;

    if (state->held == NULL)
        return;
    desired = compute_desired(self, state, &error);
    if (desired == NULL) {
        einsora_log_machine(G_LOG_LEVEL_MESSAGE, state->machine_id,
                            "machine %s: desired state not read: %s", state->machine_id,
                            error->message);
        /* A wake can wait for the long poll; the long poll can't. */
        if (only_if_changed)
            return;
        task = take_held(state);
        count_answer(self, "error");
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    if (only_if_changed && desired->generation == state->held->applied_generation &&
        desired->open_tunnels == 0)
        return;
    task = take_held(state);
    state->open_tunnels = 0;
    count_answer(self, only_if_changed ? "changed" : "long_poll");
    return_desired(task, g_steal_pointer(&desired));
}

static gboolean
on_long_poll(gpointer user_data)
{
    MachineState *state = user_data;

    answer_held(state->hub, state, FALSE);
    return G_SOURCE_REMOVE;
}

static gboolean
on_held_cancelled(GCancellable *cancellable, gpointer user_data)
{
    MachineState *state = user_data;
    g_autoptr(GTask) task = take_held(state);

    if (task != NULL)
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the sync was cancelled");
    return G_SOURCE_REMOVE;
}

static void
hold(EinsoraHub *self, MachineState *state, GTask *task, gint64 applied_generation)
{
    HeldSync *held = g_new0(HeldSync, 1);
    GCancellable *cancellable = g_task_get_cancellable(task);
    GMainContext *context = g_task_get_context(task);

    held->task = g_object_ref(task);
    held->applied_generation = applied_generation;
    held->timeout = g_timeout_source_new((guint)MAX(self->long_poll_us / 1000, 1));
    g_source_set_callback(held->timeout, on_long_poll, state, NULL);
    g_source_attach(held->timeout, context);
    if (cancellable != NULL) {
        held->cancelled = g_cancellable_source_new(cancellable);
        g_source_set_callback(held->cancelled, G_SOURCE_FUNC(on_held_cancelled), state, NULL);
        g_source_attach(held->cancelled, context);
    }
    state->held = held;
    einsora_metric_add(self->syncs_held, NULL, 1);
}

/* How far the agent's clock is behind this server's, in ms, from the
 * time it says it sent the report and the time the hub got it: a one-way
 * estimate, which counts the time in transit too. FALSE when the agent
 * didn't say (one from before docs/adr/0057). */
static gboolean
clock_offset(const EinsoraSyncReport *report, gint64 received_us, gint64 *offset_ms)
{
    gint64 sent_us = 0;

    if (report->sent_at == NULL || !einsora_timestamp_parse(report->sent_at, &sent_us, NULL))
        return FALSE;
    *offset_ms = (received_us - sent_us) / 1000;
    return TRUE;
}

/* Logged when the agent's clock crosses the bound, either way, not on
 * every sync: what was last stored says which side it was on. */
static void
notice_clock(const EinsoraMachine *machine, const gint64 *offset_ms)
{
    gboolean was = einsora_machine_clock_skewed(machine);
    gboolean is = offset_ms != NULL && einsora_clock_offset_is_skewed(*offset_ms);

    if (is && !was)
        einsora_log_machine(
            G_LOG_LEVEL_WARNING, machine->id,
            "machine %s (%s): its agent's clock is %.1f s %s this server's, more than the "
            "%" G_GINT64_FORMAT " s it may be off by: check its time synchronisation (NTP)",
            machine->id, machine->name, ABS(*offset_ms) / 1000.0,
            *offset_ms > 0 ? "behind" : "ahead of", EINSORA_MACHINE_CLOCK_SKEW_BOUND_MS / 1000);
    else if (was && !is && offset_ms != NULL)
        einsora_log_machine(G_LOG_LEVEL_MESSAGE, machine->id,
                            "machine %s (%s): its agent's clock is within %" G_GINT64_FORMAT
                            " s of this server's again",
                            machine->id, machine->name, EINSORA_MACHINE_CLOCK_SKEW_BOUND_MS / 1000);
}

/* Records the sync: when (in the store and in memory), its inventory if
 * it fits the machine, the statuses it reports, and its agent's version
 * and clock offset. A refused inventory takes the machine out of
 * placement until a good one arrives; the sync still gets its desired
 * state. */
static gboolean
record_report(EinsoraHub *self, MachineState *state, const EinsoraMachine *machine,
              const EinsoraSyncReport *report, GError **error)
{
    gint64 now_us = hub_now(self);
    g_autofree gchar *seen_at = einsora_timestamp_format(now_us);
    g_autofree gchar *inventory = NULL;
    g_autoptr(GError) invalid = NULL;
    gboolean refused = state->refused;
    gint64 offset_ms = 0;
    gboolean has_offset = clock_offset(report, now_us, &offset_ms);

    if (report->inventory != NULL) {
        if (einsora_inventory_validate(report->inventory, machine->os, &invalid)) {
            g_autoptr(JsonNode) node = einsora_inventory_to_json(report->inventory);
            inventory = json_to_string(node, FALSE);
            refused = FALSE;
        } else {
            refused = TRUE;
        }
    }
    if (!einsora_store_record_machine_seen(self->store, machine->id, seen_at, inventory,
                                           report->agent_version, has_offset ? &offset_ms : NULL,
                                           error))
        return FALSE;
    notice_clock(machine, has_offset ? &offset_ms : NULL);

    g_free(state->name);
    state->name = g_strdup(machine->name);
    if (invalid != NULL)
        einsora_log_machine(
            G_LOG_LEVEL_MESSAGE, machine->id,
            "machine %s (%s): inventory refused, so it isn't offered for placement until "
            "a good one arrives: %s",
            machine->id, machine->name, invalid->message);
    else if (state->refused && !refused)
        einsora_log_machine(G_LOG_LEVEL_MESSAGE, machine->id,
                            "machine %s (%s): its inventory fits it again", machine->id,
                            machine->name);
    state->refused = refused;
    notice_offline(state, now_us);
    if (!state->online)
        einsora_log_machine(G_LOG_LEVEL_MESSAGE, machine->id, "machine %s (%s) is online",
                            machine->id, machine->name);
    state->online = TRUE;
    state->last_sync_us = now_us;
    state->applied_generation = report->applied_generation;
    g_hash_table_remove_all(state->statuses);
    for (guint i = 0; report->statuses != NULL && i < report->statuses->len; i++) {
        const EinsoraWorkloadStatus *status = g_ptr_array_index(report->statuses, i);
        if (status->workload_id != NULL)
            g_hash_table_insert(state->statuses, g_strdup(status->workload_id),
                                einsora_workload_status_copy(status));
    }
    return TRUE;
}

static gboolean
same_status(const EinsoraWorkloadStatus *a, const EinsoraWorkloadStatus *b)
{
    return a != NULL && b != NULL && a->code == b->code && a->attempt == b->attempt &&
           a->mode == b->mode;
}

/* The changes @report replays that this hub hasn't taken, for workloads
 * placed on the machine: queued, each once (by its number), so the
 * controller observes them in order before the status now. What repeats
 * the change before it, or the status now, says nothing new. Whether any
 * was queued. */
static gboolean
take_replay(EinsoraHub *self, MachineState *state, const EinsoraSyncReport *report)
{
    gboolean queued = FALSE;
    GHashTableIter iter;
    gpointer key, value;

    /* What is no longer placed here will never be observed here. */
    g_hash_table_iter_init(&iter, state->replays);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        if (!g_hash_table_contains(state->marks, key)) {
            state->replays_held -= g_queue_get_length(value);
            g_hash_table_iter_remove(&iter);
        }
    }
    for (guint i = 0; i < report->replay->len; i++) {
        const EinsoraReplayedStatus *replayed = g_ptr_array_index(report->replay, i);
        const EinsoraWorkloadStatus *status = replayed->status;
        GQueue *queue;

        if (replayed->seq <= state->replayed_through)
            continue; /* taken before: a replay of a replay */
        state->replayed_through = replayed->seq;
        if (!g_hash_table_contains(state->marks, status->workload_id))
            continue;
        queue = g_hash_table_lookup(state->replays, status->workload_id);
        if (queue != NULL
                ? same_status(g_queue_peek_tail(queue), status)
                : same_status(g_hash_table_lookup(state->statuses, status->workload_id), status))
            continue;
        if (state->replays_held >= EINSORA_PROTOCOL_MAX_REPLAY) {
            einsora_log_machine(G_LOG_LEVEL_MESSAGE, state->machine_id,
                                "machine %s: more replayed changes than %d held: the rest are "
                                "left out",
                                state->machine_id, EINSORA_PROTOCOL_MAX_REPLAY);
            break;
        }
        if (queue == NULL) {
            queue = g_queue_new();
            g_hash_table_insert(state->replays, g_strdup(status->workload_id), queue);
        }
        g_queue_push_tail(queue, einsora_workload_status_copy(status));
        state->replays_held++;
        queued = TRUE;
    }
    /* What ends where the machine is now was said by its status now. */
    if (queued) {
        g_hash_table_iter_init(&iter, state->replays);
        while (g_hash_table_iter_next(&iter, &key, &value)) {
            GQueue *queue = value;
            while (
                !g_queue_is_empty(queue) &&
                same_status(g_queue_peek_tail(queue), g_hash_table_lookup(state->statuses, key))) {
                einsora_workload_status_free(g_queue_pop_tail(queue));
                state->replays_held--;
            }
            if (g_queue_is_empty(queue))
                g_hash_table_iter_remove(&iter);
        }
    }
    return queued && g_hash_table_size(state->replays) > 0;
}

static gboolean
on_replay_wake(gpointer user_data)
{
    EinsoraHub *self = user_data;

    g_clear_pointer(&self->replay_wake, g_source_unref);
    g_signal_emit(self, signals[SIGNAL_RUNTIME_CHANGED], 0);
    return G_SOURCE_REMOVE;
}

/* The oldest replayed change of the workload not yet observed (owned),
 * or NULL; another pass is asked for while more are left. */
static EinsoraWorkloadStatus *
next_replayed(EinsoraHub *self, MachineState *state, const char *workload_id)
{
    GQueue *queue = g_hash_table_lookup(state->replays, workload_id);
    EinsoraWorkloadStatus *status;

    if (queue == NULL)
        return NULL;
    status = g_queue_pop_head(queue);
    state->replays_held--;
    if (g_queue_is_empty(queue))
        g_hash_table_remove(state->replays, workload_id);
    else if (self->replay_wake == NULL) {
        self->replay_wake = g_idle_source_new();
        g_source_set_priority(self->replay_wake, G_PRIORITY_DEFAULT); /* as a wake's */
        g_source_set_callback(self->replay_wake, on_replay_wake, self, NULL);
        g_source_attach(self->replay_wake, self->context);
    }
    return status;
}

/* Whether @report tells the controller something its last pass didn't
 * know: the machine is back (or new), what it has changed, or a
 * workload's status did. */
static gboolean
report_changes(const MachineState *state, const EinsoraSyncReport *report)
{
    guint known = 0;

    if (!state->online || state->last_sync_us == 0 || report->inventory != NULL)
        return TRUE;
    for (guint i = 0; report->statuses != NULL && i < report->statuses->len; i++) {
        const EinsoraWorkloadStatus *status = g_ptr_array_index(report->statuses, i);
        const EinsoraWorkloadStatus *before;

        if (status->workload_id == NULL)
            continue;
        before = g_hash_table_lookup(state->statuses, status->workload_id);
        if (before == NULL || before->code != status->code || before->attempt != status->attempt ||
            before->mode != status->mode)
            return TRUE;
        known++;
    }
    return known != g_hash_table_size(state->statuses);
}

static void
einsora_hub_sync_async(EinsoraSyncTransport *transport, const EinsoraSyncReport *report,
                       GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    EinsoraHub *self = EINSORA_HUB(transport);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GTask) superseded = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraDesiredState) desired = NULL;
    MachineState *state;
    gboolean changed;

    g_task_set_source_tag(task, einsora_hub_sync_async);
    if (g_task_return_error_if_cancelled(task))
        return;
    machine = find_region_machine(self, report->machine_id, &error);
    if (machine == NULL) {
        count_answer(self, "error");
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    state = machine_state(self, machine->id);
    state->takes_tunnels = report->tunnels;
    changed = report_changes(state, report);
    if (!record_report(self, state, machine, report, &error)) {
        count_answer(self, "error");
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    if (changed)
        g_signal_emit(self, signals[SIGNAL_RUNTIME_CHANGED], 0);
    desired = compute_desired(self, state, &error);
    if (desired == NULL) {
        count_answer(self, "error");
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    /* After the desired state: it says which workloads are placed here. */
    if (take_replay(self, state, report))
        g_signal_emit(self, signals[SIGNAL_RUNTIME_CHANGED], 0);
    desired->replayed_through = state->replayed_through;
    /* A newer sync from the machine supersedes one still waiting. */
    superseded = take_held(state);
    if (superseded != NULL) {
        count_answer(self, "superseded");
        return_desired(superseded, einsora_desired_state_copy(desired));
    }
    if (desired->generation != report->applied_generation || desired->open_tunnels > 0) {
        state->open_tunnels = 0;
        count_answer(self, "changed");
        return_desired(task, g_steal_pointer(&desired));
        return;
    }
    hold(self, state, task, report->applied_generation);
}

static EinsoraDesiredState *
einsora_hub_sync_finish(EinsoraSyncTransport *transport, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, transport), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void
einsora_hub_transport_iface_init(EinsoraSyncTransportInterface *iface)
{
    iface->sync_async = einsora_hub_sync_async;
    iface->sync_finish = einsora_hub_sync_finish;
}

/* The machine's last valid inventory, from the store, so a restarted hub
 * knows it before the agent sends it again. Read and checked again the
 * one way the API reads it too: only an inventory that fits the machine
 * decides anything. */
static EinsoraInventory *
stored_inventory(const EinsoraMachine *machine)
{
    EinsoraInventory *inventory = NULL;
    g_autoptr(GError) error = NULL;

    if (!einsora_inventory_read_stored(machine, &inventory, &error))
        einsora_log_machine(G_LOG_LEVEL_DEBUG, machine->id,
                            "machine %s: stored inventory not used: %s", machine->id,
                            error->message);
    return inventory;
}

static EinsoraMachineCapacity *
machine_capacity(EinsoraHub *self, const EinsoraMachine *machine, MachineState *state,
                 gint64 now_us)
{
    EinsoraMachineCapacity *capacity = einsora_machine_capacity_new(machine);
    g_autoptr(EinsoraInventory) inventory = stored_inventory(machine);

    capacity->cpus = 0;
    capacity->memory_mib = 0;
    if (inventory == NULL)
        return capacity;
    capacity->cpus = inventory->cpus;
    capacity->memory_mib = inventory->memory_mib;
    g_strfreev(capacity->drivers);
    capacity->drivers = g_strdupv(inventory->drivers);
    for (guint i = 0; i < inventory->gpus->len; i++) {
        const EinsoraInventoryGpu *gpu = g_ptr_array_index(inventory->gpus, i);
        EinsoraAccelerator vendor;
        const char *gpu_class = NULL;

        if (!einsora_accelerator_from_string(gpu->vendor, &vendor))
            continue;
        gpu_class = einsora_catalog_class_for_gpu(self->catalog, machine->region, vendor,
                                                  gpu->model, inventory->memory_mib);
        if (gpu_class != NULL)
            einsora_machine_capacity_add_gpu(capacity, gpu_class, i);
    }
    /* One held elsewhere is offline here: what runs on it, its agent
     * reports to the hub it syncs with, whose controller stands by. */
    capacity->online = synced_recently(state, now_us) && !state->refused;
    return capacity;
}

static EinsoraCapacity *
einsora_hub_capacity(EinsoraBackend *backend, const char *region, GError **error)
{
    EinsoraHub *self = EINSORA_HUB(backend);
    g_autoptr(GPtrArray) machines = einsora_store_list_region_machines(self->store, region, error);
    g_autoptr(EinsoraCapacity) capacity = NULL;
    gint64 now_us = hub_now(self);
    gboolean all_synced = TRUE;

    if (machines == NULL)
        return NULL;
    capacity = einsora_capacity_new_machines();
    for (guint i = 0; i < machines->len; i++) {
        const EinsoraMachine *machine = g_ptr_array_index(machines, i);
        MachineState *state = g_hash_table_lookup(self->machines, machine->id);

        /* ...and no reason to wait while settling. */
        if ((state == NULL || state->last_sync_us == 0) &&
            !synced_elsewhere(self, machine, state, now_us))
            all_synced = FALSE;
        notice_offline(state, now_us);
        g_ptr_array_add(capacity->machines, machine_capacity(self, machine, state, now_us));
    }
    /* Until its machines reconnect, what they hold isn't known. */
    capacity->settling = !all_synced && now_us - self->created_us < self->offline_after_us;
    return g_steal_pointer(&capacity);
}

static gboolean
on_wake(gpointer user_data)
{
    EinsoraHub *self = user_data;
    g_autoptr(GHashTable) wakes = g_steal_pointer(&self->wakes);
    GHashTableIter iter;
    gpointer machine_id;

    self->wakes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_clear_pointer(&self->wake_source, g_source_unref);
    g_hash_table_iter_init(&iter, wakes);
    while (g_hash_table_iter_next(&iter, &machine_id, NULL)) {
        MachineState *state = g_hash_table_lookup(self->machines, machine_id);
        if (state != NULL)
            answer_held(self, state, TRUE);
    }
    return G_SOURCE_REMOVE;
}

/* run, park and remove only wake the machine's waiting sync. The wake
 * runs on idle, after the controller's pass has written what it decided
 * (a failure parks before the move to failed). */
static gboolean
wake(EinsoraHub *self, const EinsoraWorkloadSpec *spec)
{
    if (spec->machine_id == NULL)
        return TRUE;
    g_hash_table_add(self->wakes, g_strdup(spec->machine_id));
    if (self->wake_source == NULL) {
        /* Once the caller's turn ends (a controller pass wakes every
         * machine it changed in one go), but at default priority: at idle
         * priority a loop busy with thousands of connections never got to
         * it, and woken agents learned at the end of their 20 s poll. */
        self->wake_source = g_idle_source_new();
        g_source_set_priority(self->wake_source, G_PRIORITY_DEFAULT);
        g_source_set_callback(self->wake_source, on_wake, self, NULL);
        g_source_attach(self->wake_source, self->context);
    }
    return TRUE;
}

void
einsora_hub_wake_machine(EinsoraHub *self, const char *machine_id)
{
    EinsoraWorkloadSpec spec = {.machine_id = (gchar *)machine_id};

    g_return_if_fail(EINSORA_IS_HUB(self));
    if (machine_id != NULL && g_hash_table_contains(self->machines, machine_id))
        wake(self, &spec);
}

static gboolean
einsora_hub_run(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec, GError **error)
{
    return wake(EINSORA_HUB(backend), spec);
}

static gboolean
einsora_hub_park(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec, GError **error)
{
    return wake(EINSORA_HUB(backend), spec);
}

static gboolean
einsora_hub_remove(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec, GError **error)
{
    return wake(EINSORA_HUB(backend), spec);
}

/* What a code means to the controller. Failures read the code's fixed
 * reason, never the agent's own words. */
static void
observe_code(EinsoraStatusCode code, EinsoraObservation *observation)
{
    observation->reason = NULL;
    switch (code) {
    case EINSORA_STATUS_CODE_RUNNING:
        observation->status = EINSORA_RUNTIME_READY;
        return;
    case EINSORA_STATUS_CODE_STARTING:
    case EINSORA_STATUS_CODE_STOPPING:
    case EINSORA_STATUS_CODE_REMOVING:
    case EINSORA_STATUS_CODE_GPU_BUSY:
        observation->status = EINSORA_RUNTIME_PROGRESSING;
        return;
    case EINSORA_STATUS_CODE_STOPPED:
        observation->status = EINSORA_RUNTIME_PARKED;
        return;
    case EINSORA_STATUS_CODE_REMOVED:
        observation->status = EINSORA_RUNTIME_REMOVED;
        return;
    case EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE:
        /* Decides nothing; the controller notes why it waits. */
        observation->status = EINSORA_RUNTIME_UNKNOWN;
        observation->reason = einsora_status_code_reason(code);
        return;
    case EINSORA_STATUS_CODE_EXITED:
        observation->status = EINSORA_RUNTIME_EXITED;
        return;
    case EINSORA_STATUS_CODE_FAILED_TO_START:
    case EINSORA_STATUS_CODE_OUT_OF_MEMORY:
    case EINSORA_STATUS_CODE_IMAGE_MISSING:
    case EINSORA_STATUS_CODE_DRIVER_MISSING:
    case EINSORA_STATUS_CODE_ISOLATION_REFUSED:
    case EINSORA_STATUS_CODE_MOVE_REFUSED:
    case EINSORA_STATUS_CODE_SANDBOX_CHANGED:
    case EINSORA_STATUS_CODE_PULL_FAILED:
    case EINSORA_STATUS_CODE_UNKNOWN:
    default:
        observation->status = EINSORA_RUNTIME_FAILED;
        observation->reason = einsora_status_code_reason(code);
        return;
    }
}

static gboolean
forget_recent(gpointer user_data)
{
    EinsoraHub *self = user_data;
    GHashTableIter iter;
    gpointer value;

    g_clear_pointer(&self->forget_source, g_source_unref);
    g_hash_table_iter_init(&iter, self->machines);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        MachineState *state = value;
        g_clear_pointer(&state->recent_index, g_hash_table_unref);
        g_clear_pointer(&state->recent, einsora_desired_state_free);
    }
    return G_SOURCE_REMOVE;
}

/* The machine's desired workload @workload_id, from the desired state
 * computed in this turn of the main loop if there is one. Within a turn
 * it may predate a change the same turn made; observing another workload
 * is not affected by that (each entry is its own workload's row), and
 * the next turn reads afresh. */
static const EinsoraDesiredWorkload *
recent_desired(EinsoraHub *self, MachineState *state, const char *workload_id, GError **error)
{
    if (state->recent == NULL) {
        state->recent = compute_desired(self, state, error);
        if (state->recent == NULL)
            return NULL;
        state->recent_index = g_hash_table_new(g_str_hash, g_str_equal);
        for (guint i = 0; i < state->recent->workloads->len; i++) {
            EinsoraDesiredWorkload *workload = g_ptr_array_index(state->recent->workloads, i);
            g_hash_table_insert(state->recent_index, workload->workload_id, workload);
        }
        if (self->forget_source == NULL) {
            self->forget_source = g_idle_source_new();
            g_source_set_priority(self->forget_source, G_PRIORITY_HIGH);
            g_source_set_callback(self->forget_source, forget_recent, self, NULL);
            g_source_attach(self->forget_source, self->context);
        }
    }
    return g_hash_table_lookup(state->recent_index, workload_id);
}

/* A status answers only the attempt and mode the store expects now, once
 * the agent has applied the desired state that last changed them; before
 * that, even no status at all is still in progress. */
static gboolean
einsora_hub_observe(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec,
                    EinsoraObservation *observation, GError **error)
{
    EinsoraHub *self = EINSORA_HUB(backend);
    gint64 now_us = hub_now(self);
    MachineState *state;
    g_autoptr(GError) local_error = NULL;
    const EinsoraDesiredWorkload *workload;
    const EinsoraWorkloadStatus *status;
    g_autoptr(EinsoraWorkloadStatus) replayed = NULL;
    const WorkloadMark *mark;

    *observation = (EinsoraObservation){EINSORA_RUNTIME_UNKNOWN, 0, NULL, 0, 0, 0, 0};
    if (spec->machine_id == NULL) {
        /* Never placed on a machine: nothing of it is anywhere. */
        observation->status = EINSORA_RUNTIME_ABSENT;
        observation->attempt = spec->attempt;
        return TRUE;
    }
    state = g_hash_table_lookup(self->machines, spec->machine_id);
    notice_offline(state, now_us);
    if (!synced_recently(state, now_us)) {
        gint64 since =
            state != NULL && state->last_sync_us != 0 ? state->last_sync_us : self->created_us;
        /* Away too long: nothing may stay accounted for a machine that's
         * gone. It stops them when it returns. */
        if (now_us - since >= self->away_too_long_us) {
            observation->status = EINSORA_RUNTIME_FAILED;
            observation->reason = self->away_reason;
            observation->attempt = spec->attempt;
        }
        return TRUE;
    }
    workload = recent_desired(self, state, spec->workload_id, &local_error);
    if (local_error != NULL) {
        g_propagate_error(error, g_steal_pointer(&local_error));
        return FALSE;
    }
    observation->status = EINSORA_RUNTIME_PROGRESSING;
    /* What happened while it was cut off comes first, in order. */
    replayed = next_replayed(self, state, spec->workload_id);
    status = replayed != NULL ? replayed : g_hash_table_lookup(state->statuses, spec->workload_id);
    mark = g_hash_table_lookup(state->marks, spec->workload_id);
    if (workload == NULL || status == NULL || mark == NULL || status->attempt != spec->attempt ||
        status->mode != workload->mode || status->applied_generation < mark->generation)
        return TRUE;
    observe_code(status->code, observation);
    observation->attempt = spec->attempt;
    if (observation->status == EINSORA_RUNTIME_PROGRESSING && status->pull.layers > 0) {
        observation->pull_layers_done = status->pull.layers_done;
        observation->pull_layers = status->pull.layers;
        observation->pull_bytes_done = status->pull.bytes_done;
        observation->pull_bytes_total = status->pull.bytes_total;
    }
    if (observation->status == EINSORA_RUNTIME_READY) {
        observation->busy_kernels = status->activity.busy_kernels;
        observation->last_active_us = status->activity.last_active_ms * 1000;
    }
    return TRUE;
}

static void
einsora_hub_backend_iface_init(EinsoraBackendInterface *iface)
{
    iface->capacity = einsora_hub_capacity;
    iface->run = einsora_hub_run;
    iface->park = einsora_hub_park;
    iface->observe = einsora_hub_observe;
    iface->remove = einsora_hub_remove;
}

gboolean
einsora_hub_want_tunnels(EinsoraHub *self, const char *machine_id, guint count)
{
    MachineState *state;

    g_return_val_if_fail(EINSORA_IS_HUB(self), FALSE);
    state = g_hash_table_lookup(self->machines, machine_id);
    if (state == NULL || !state->takes_tunnels || count == 0)
        return FALSE;
    state->open_tunnels =
        MIN(state->open_tunnels + (gint64)count, EINSORA_PROTOCOL_MAX_OPEN_TUNNELS);
    /* Its held sync answers now; else its next sync does, at once. */
    answer_held(self, state, TRUE);
    return TRUE;
}

void
einsora_hub_set_access_source(EinsoraHub *self, const char *machine_id, EinsoraAccessSource *source)
{
    g_return_if_fail(EINSORA_IS_HUB(self));
    g_return_if_fail(source == NULL || EINSORA_IS_ACCESS_SOURCE(source));
    g_free(self->access_machine_id);
    self->access_machine_id = g_strdup(machine_id);
    g_weak_ref_set(&self->access_source, source);
}

gboolean
einsora_hub_lookup_access(EinsoraHub *self, const char *tenant_id, const char *workload_id,
                          gint64 *attempt_out, gchar **socket_path, gchar **token, GError **error)
{
    g_autoptr(EinsoraAccessSource) source = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    gint64 attempt = -1;

    g_return_val_if_fail(EINSORA_IS_HUB(self), FALSE);
    g_return_val_if_fail(socket_path != NULL && token != NULL, FALSE);
    *socket_path = NULL;
    *token = NULL;
    workload = einsora_store_get_workload(self->store, tenant_id, workload_id, error);
    if (workload == NULL)
        return FALSE;
    source = g_weak_ref_get(&self->access_source);
    /* Running here, by the store's word and by the agent's, for the same
     * attempt: a stopped or restarted workload's old way in is gone. */
    if (source == NULL || workload->state != EINSORA_WORKLOAD_STATE_RUNNING ||
        g_strcmp0(workload->machine_id, self->access_machine_id) != 0 ||
        !einsora_access_source_lookup(source, workload_id, &attempt, socket_path, token) ||
        attempt != workload->attempt) {
        if (*token != NULL)
            explicit_bzero(*token, strlen(*token));
        g_clear_pointer(token, g_free);
        g_clear_pointer(socket_path, g_free);
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "workload %s isn't running on this machine", workload_id);
        return FALSE;
    }
    if (attempt_out != NULL)
        *attempt_out = attempt;
    return TRUE;
}

static gboolean
hub_lookup_access(EinsoraWorkloadAccess *access, const char *tenant_id, const char *workload_id,
                  gint64 *attempt, gchar **socket_path, gchar **token, GError **error)
{
    return einsora_hub_lookup_access(EINSORA_HUB(access), tenant_id, workload_id, attempt,
                                     socket_path, token, error);
}

/* Running on another machine, by the store's word: its agent (which
 * checks the attempt again on its side) is reached through its tunnel. */
static gchar *
hub_lookup_remote(EinsoraWorkloadAccess *access, const char *tenant_id, const char *workload_id,
                  gint64 *attempt, GError **error)
{
    EinsoraHub *self = EINSORA_HUB(access);
    g_autoptr(EinsoraWorkload) workload =
        einsora_store_get_workload(self->store, tenant_id, workload_id, error);

    if (workload == NULL)
        return NULL;
    if (workload->state != EINSORA_WORKLOAD_STATE_RUNNING || workload->machine_id == NULL ||
        g_strcmp0(workload->machine_id, self->access_machine_id) == 0) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "workload %s isn't running on another machine", workload_id);
        return NULL;
    }
    *attempt = workload->attempt;
    return g_strdup(workload->machine_id);
}

static void
einsora_hub_access_iface_init(EinsoraWorkloadAccessInterface *iface)
{
    iface->lookup = hub_lookup_access;
    iface->lookup_remote = hub_lookup_remote;
}

/* Output is read where it is written: only the machine whose agent
 * runs in this process (ADR-0016: never through Sync). */
static gchar *
hub_find_log(EinsoraWorkloadLogs *logs, const EinsoraWorkload *workload, gint64 attempt,
             gint64 *found_attempt, gchar **token, GError **error)
{
    EinsoraHub *self = EINSORA_HUB(logs);
    g_autoptr(EinsoraAccessSource) source = g_weak_ref_get(&self->access_source);
    g_autoptr(GError) local_error = NULL;
    g_autofree gchar *socket_path = NULL;
    gchar *path;
    gint64 running = -1;

    if (source == NULL || workload->machine_id == NULL ||
        g_strcmp0(workload->machine_id, self->access_machine_id) != 0) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "workload %s has no output on this machine%s", workload->id,
                    workload->machine_id == NULL ? " (it never ran)"
                                                 : " (its logs stay on the machine that ran it)");
        return NULL;
    }
    path =
        einsora_access_source_find_log(source, workload->id, attempt, found_attempt, &local_error);
    if (path == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "workload %s: %s", workload->id,
                    local_error->message);
        return NULL;
    }
    /* The running attempt's own token, to keep it out of what is read. */
    if (einsora_access_source_lookup(source, workload->id, &running, &socket_path, token) &&
        running != *found_attempt) {
        explicit_bzero(*token, strlen(*token));
        g_clear_pointer(token, g_free);
    }
    return path;
}

static void
einsora_hub_logs_iface_init(EinsoraWorkloadLogsInterface *iface)
{
    iface->find = hub_find_log;
}

guint64
einsora_hub_count_desired_reads(EinsoraHub *self)
{
    g_return_val_if_fail(EINSORA_IS_HUB(self), 0);
    return self->computed;
}
