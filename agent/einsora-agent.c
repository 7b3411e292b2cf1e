#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-agent.h"

#include "einsora-driver.h"
#include "einsora-log.h"
#include "einsora-protocol.h"

/* A failed sync is retried after 1 s, doubling up to 5 s: never a busy
 * loop, and well inside the 45 s after which a machine reads as offline. */
#define RETRY_FIRST_US (G_USEC_PER_SEC)
#define RETRY_MAX_US (G_GINT64_CONSTANT(5) * G_USEC_PER_SEC)

typedef enum {
    CALL_START,
    CALL_STOP,
    CALL_REMOVE,
} CallKind;

/* One driver call in flight. The callback owns it; the agent only points
 * at it, and detaches it when it stops so the call lands and is dropped. */
typedef struct {
    EinsoraAgent *agent; /* NULL once the agent stopped */
    EinsoraAgentDriver *driver;
    CallKind kind;
    gchar *workload_id;
    gint64 attempt;
    GCancellable *cancellable;
    GSource *time_limit;
    gboolean timed_out;
} DriverCall;

/* The sync in flight, owned the same way. */
typedef struct {
    EinsoraAgent *agent; /* NULL once the agent stopped */
    GCancellable *cancellable;
    guint inventory_serial; /* the inventory it carried; 0: none */
    gboolean cut_short;
} SyncCall;

/* What the agent itself says about an attempt: a refusal, or a start
 * that ran out of time. It answers only that attempt and mode. */
typedef struct {
    gint64 attempt;
    EinsoraWorkloadMode mode;
    EinsoraStatusCode code;
} OwnStatus;

struct _EinsoraAgent {
    GObject parent_instance;

    GMainContext *context;
    EinsoraSyncTransport *transport;
    gchar *machine_id;
    gchar *owner_tenant_id;
    EinsoraAgentTunnelsWanted tunnels_wanted;
    gpointer tunnels_wanted_data;
    EinsoraInventory *inventory;
    guint inventory_serial;      /* grows with every change */
    guint inventory_sent_serial; /* the one a sync last delivered */
    GPtrArray *drivers;          /* EinsoraAgentDriver */
    gint64 driver_timeout_us;
    gint64 check_interval_us;
    EinsoraNowFunc now;
    gpointer now_data;

    gboolean running;
    SyncCall *sync; /* NULL: none in flight */
    GSource *retry;
    gint64 retry_us;
    GSource *check;
    gchar *last_sent; /* the last report, as report_fingerprint() writes it */

    EinsoraDesiredState *desired; /* the one applied last; NULL before the first */
    GHashTable *desired_index;    /* workload ID -> EinsoraDesiredWorkload in desired */
    gint64 applied_generation;
    GHashTable *calls;        /* workload ID -> DriverCall, at most one per workload */
    GHashTable *own_statuses; /* workload ID -> OwnStatus */
    GHashTable *started;      /* workload ID -> the attempt it last started (gint64) */
    /* Driver calls issued since the hub last answered: each is issued
     * once per answer, so a driver that says done but isn't (or refuses
     * a start) never makes the agent spin. */
    GHashTable *issued;
    GHashTable *needs; /* workload ID -> EinsoraDesiredWorkload, as last told */

    /* A networked agent's disk (NULL in-process). */
    EinsoraAgentLocalStore *local;
    GHashTable *kept; /* workload ID -> the EinsoraWorkloadStatus last put in the outbox */
    EinsoraDesiredState *saved; /* from the disk at start, until a sync answers or fails */
};

static void einsora_agent_access_iface_init(EinsoraAccessSourceInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraAgent, einsora_agent, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_ACCESS_SOURCE,
                                                    einsora_agent_access_iface_init))

static void send_report(EinsoraAgent *self);
static void on_change(EinsoraAgent *self);

static void
clear_source(GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
}

static GSource *
attach_timeout(EinsoraAgent *self, gint64 delay_us, GSourceFunc func, gpointer data)
{
    gint64 ms = MAX(delay_us / 1000, 1);
    GSource *source = g_timeout_source_new((guint)MIN(ms, (gint64)G_MAXUINT));

    g_source_set_callback(source, func, data, NULL);
    g_source_attach(source, self->context);
    return source;
}

/* Whether @driver holds anything for the workload: running, or data kept. */
static gboolean
holds(EinsoraAgentDriver *driver, const char *workload_id, EinsoraStatusCode *code, gint64 *attempt)
{
    gint64 ignored;

    if (attempt == NULL)
        attempt = &ignored;
    *code = einsora_agent_driver_get_status(driver, workload_id, attempt);
    if (*code == EINSORA_STATUS_CODE_UNKNOWN && *attempt == EINSORA_AGENT_DRIVER_NO_ATTEMPT)
        return FALSE;
    return *code != EINSORA_STATUS_CODE_REMOVED;
}

static EinsoraAgentDriver *
find_driver(EinsoraAgent *self, const char *name)
{
    for (guint i = 0; i < self->drivers->len; i++) {
        EinsoraAgentDriver *driver = g_ptr_array_index(self->drivers, i);

        if (g_strcmp0(einsora_agent_driver_get_name(driver), name) == 0)
            return driver;
    }
    return NULL;
}

static const EinsoraDesiredWorkload *
desired_lookup(EinsoraAgent *self, const char *workload_id)
{
    return g_hash_table_lookup(self->desired_index, workload_id);
}

/* Every workload any driver holds, as a set. */
static GHashTable *
held_workloads(EinsoraAgent *self)
{
    GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

    for (guint i = 0; i < self->drivers->len; i++) {
        g_auto(GStrv) ids =
            einsora_agent_driver_list_workloads(g_ptr_array_index(self->drivers, i));

        for (guint j = 0; ids[j] != NULL; j++)
            g_hash_table_add(set, g_steal_pointer(&ids[j]));
    }
    return set;
}

/* Reporting */

/* Which driver speaks for a workload: one where it is active (an old
 * attempt still stopping elsewhere counts), else the one desired state
 * names, else the first that has anything for it. */
static gboolean
status_from_drivers(EinsoraAgent *self, const char *workload_id, const char *named,
                    EinsoraStatusCode *code, gint64 *attempt)
{
    gint best = -1;

    for (guint i = 0; i < self->drivers->len; i++) {
        EinsoraAgentDriver *driver = g_ptr_array_index(self->drivers, i);
        gint64 this_attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
        EinsoraStatusCode this_code =
            einsora_agent_driver_get_status(driver, workload_id, &this_attempt);
        gint rank;

        if (this_code == EINSORA_STATUS_CODE_UNKNOWN &&
            this_attempt == EINSORA_AGENT_DRIVER_NO_ATTEMPT)
            continue;
        if (einsora_status_code_is_active(this_code))
            rank = 2;
        else if (g_strcmp0(einsora_agent_driver_get_name(driver), named) == 0)
            rank = 1;
        else
            rank = 0;
        if (rank > best) {
            best = rank;
            *code = this_code;
            *attempt = this_attempt;
        }
    }
    return best >= 0;
}

/* One workload's status, or NULL when there is nothing to say yet (which
 * the hub reads as still in progress). */
static EinsoraWorkloadStatus *
status_for(EinsoraAgent *self, const char *workload_id)
{
    const EinsoraDesiredWorkload *desired = desired_lookup(self, workload_id);
    const OwnStatus *own = g_hash_table_lookup(self->own_statuses, workload_id);
    g_autoptr(EinsoraWorkloadStatus) status = einsora_workload_status_new();
    EinsoraStatusCode code = EINSORA_STATUS_CODE_UNKNOWN;
    gint64 attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;

    status->workload_id = g_strdup(workload_id);
    /* One it wasn't told about was stopped and kept: parked. */
    status->mode = desired != NULL ? desired->mode : EINSORA_WORKLOAD_MODE_PARK;
    status->applied_generation = self->applied_generation;
    if (own != NULL && desired != NULL && own->attempt == desired->attempt &&
        own->mode == desired->mode) {
        status->attempt = own->attempt;
        status->code = own->code;
        return g_steal_pointer(&status);
    }
    if (!status_from_drivers(self, workload_id, desired != NULL ? desired->driver : NULL, &code,
                             &attempt)) {
        /* Nothing held here: that is what parking and removal ask for. */
        if (desired == NULL || desired->mode == EINSORA_WORKLOAD_MODE_RUN)
            return NULL;
        code = desired->mode == EINSORA_WORKLOAD_MODE_REMOVE ? EINSORA_STATUS_CODE_REMOVED
                                                             : EINSORA_STATUS_CODE_STOPPED;
        attempt = desired->attempt;
    }
    /* Parked or removed means nothing runs, whichever attempt last did:
     * that answers the attempt being parked, which may never have run. */
    if (desired != NULL && desired->mode != EINSORA_WORKLOAD_MODE_RUN &&
        !einsora_status_code_is_active(code))
        attempt = desired->attempt;
    status->code = code;
    status->attempt = MAX(attempt, 0);
    /* A pull's progress, while the image of a start is pulled. */
    for (guint i = 0; code == EINSORA_STATUS_CODE_STARTING && i < self->drivers->len; i++) {
        if (einsora_agent_driver_get_pull_progress(g_ptr_array_index(self->drivers, i), workload_id,
                                                   &status->pull))
            break;
    }
    /* How it is used, while it runs: idle auto-stop decides on it. */
    for (guint i = 0; code == EINSORA_STATUS_CODE_RUNNING && i < self->drivers->len; i++) {
        if (einsora_agent_driver_get_activity(g_ptr_array_index(self->drivers, i), workload_id,
                                              &status->activity))
            break;
    }
    return g_steal_pointer(&status);
}

static gint
compare_ids(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

static gboolean
inventory_pending(EinsoraAgent *self)
{
    return self->inventory_sent_serial != self->inventory_serial;
}

/* What the report says, in one string, to tell whether anything changed
 * since the last one was sent. */
static gchar *
report_fingerprint(EinsoraAgent *self, const EinsoraSyncReport *report)
{
    GString *out = g_string_new(NULL);

    g_string_append_printf(out, "%" G_GINT64_FORMAT " %u\n", report->applied_generation,
                           inventory_pending(self) ? self->inventory_serial : 0);
    for (guint i = 0; i < report->statuses->len; i++) {
        const EinsoraWorkloadStatus *status = g_ptr_array_index(report->statuses, i);

        g_string_append_printf(
            out,
            "%s %" G_GINT64_FORMAT " %d %d %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
            " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n",
            status->workload_id, status->attempt, status->mode, status->code, status->pull.layers,
            status->pull.layers_done, status->pull.bytes_done, status->activity.busy_kernels,
            status->activity.last_active_ms);
    }
    return g_string_free(out, FALSE);
}

/* Every workload it has: what drivers hold, what it was told about, and
 * what it refused. */
static EinsoraSyncReport *
build_report(EinsoraAgent *self, gchar **fingerprint)
{
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_new();
    g_autoptr(GHashTable) ids = held_workloads(self);
    g_autofree gpointer *keys = NULL;
    GHashTableIter iter;
    gpointer key;
    guint n_keys = 0;

    if (self->desired != NULL) {
        for (guint i = 0; i < self->desired->workloads->len; i++) {
            const EinsoraDesiredWorkload *workload = g_ptr_array_index(self->desired->workloads, i);
            g_hash_table_add(ids, g_strdup(workload->workload_id));
        }
    }
    g_hash_table_iter_init(&iter, self->own_statuses);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        g_hash_table_add(ids, g_strdup(key));

    keys = g_hash_table_get_keys_as_array(ids, &n_keys);
    qsort(keys, n_keys, sizeof(gpointer), compare_ids);
    report->machine_id = g_strdup(self->machine_id);
    report->applied_generation = self->applied_generation;
    /* Read as the report is made, which is just before it is sent: the
     * hub takes its own time on receiving it from this. Neither is in
     * the fingerprint, so they never make a report look new. */
    report->agent_version = g_strdup(EINSORA_VERSION);
    report->sent_at = einsora_timestamp_format(self->now(self->now_data));
    report->tunnels = self->tunnels_wanted != NULL;
    for (guint i = 0; i < n_keys; i++) {
        EinsoraWorkloadStatus *status = status_for(self, keys[i]);

        if (status != NULL)
            g_ptr_array_add(report->statuses, status);
    }
    if (inventory_pending(self))
        report->inventory = einsora_inventory_copy(self->inventory);
    if (fingerprint != NULL)
        *fingerprint = report_fingerprint(self, report);
    return g_steal_pointer(&report);
}

/* The sync loop */

static void
sync_call_free(SyncCall *call)
{
    g_clear_object(&call->cancellable);
    g_free(call);
}

static gboolean
on_retry(gpointer user_data)
{
    EinsoraAgent *self = user_data;

    g_clear_pointer(&self->retry, g_source_unref);
    send_report(self);
    return G_SOURCE_REMOVE;
}

static void
schedule_retry(EinsoraAgent *self)
{
    self->retry_us = self->retry_us == 0 ? RETRY_FIRST_US : MIN(self->retry_us * 2, RETRY_MAX_US);
    clear_source(&self->retry);
    self->retry = attach_timeout(self, self->retry_us, on_retry, self);
}

static void
index_desired(EinsoraAgent *self)
{
    g_hash_table_remove_all(self->desired_index);
    for (guint i = 0; i < self->desired->workloads->len; i++) {
        EinsoraDesiredWorkload *workload = g_ptr_array_index(self->desired->workloads, i);

        /* A workload listed twice: the first entry counts. */
        if (!g_hash_table_contains(self->desired_index, workload->workload_id))
            g_hash_table_insert(self->desired_index, workload->workload_id, workload);
        g_hash_table_insert(self->needs, g_strdup(workload->workload_id),
                            einsora_desired_workload_copy(workload));
    }
}

static void apply(EinsoraAgent *self, gboolean from_hub);

/* A change, for the outbox: what the hub's timeline is made of (the
 * generation it was applied from is carried, not compared). */
static gboolean
status_changed(const EinsoraWorkloadStatus *before, const EinsoraWorkloadStatus *now)
{
    return before == NULL || before->code != now->code || before->attempt != now->attempt ||
           before->mode != now->mode;
}

/* Puts what changed since the outbox last heard into it, on disk before
 * the report goes, then has the report replay what the hub hasn't
 * acknowledged, oldest first. A full outbox loses the change, not the
 * status: the report still says where each workload is now. */
static void
keep_and_replay(EinsoraAgent *self, EinsoraSyncReport *report)
{
    g_autoptr(GPtrArray) pending = NULL;

    for (guint i = 0; i < report->statuses->len; i++) {
        const EinsoraWorkloadStatus *status = g_ptr_array_index(report->statuses, i);
        g_autoptr(GError) error = NULL;

        if (!status_changed(g_hash_table_lookup(self->kept, status->workload_id), status))
            continue;
        if (!einsora_agent_local_store_append(self->local, status, NULL, &error)) {
            g_message("workload %s: its change to %s isn't kept for a replay: %s",
                      status->workload_id, einsora_status_code_to_string(status->code),
                      error->message);
            continue;
        }
        g_hash_table_insert(self->kept, g_strdup(status->workload_id),
                            einsora_workload_status_copy(status));
    }
    pending = einsora_agent_local_store_pending(self->local);
    for (guint i = 0; i < pending->len && i < EINSORA_PROTOCOL_MAX_REPLAY; i++) {
        const EinsoraOutboxRecord *record = g_ptr_array_index(pending, i);
        einsora_sync_report_add_replay(report, (gint64)record->seq, record->status);
    }
}

/* The hub answered: what it has leaves the outbox, and a new desired
 * state is saved before it is applied. */
static void
keep_answer(EinsoraAgent *self, const EinsoraDesiredState *desired)
{
    g_autoptr(GError) error = NULL;

    if (desired->replayed_through > 0 &&
        !einsora_agent_local_store_acknowledge(self->local, (guint64)desired->replayed_through,
                                               &error)) {
        g_message("the outbox can't let go of what the hub has: %s", error->message);
        g_clear_error(&error);
    }
    if ((self->desired == NULL || desired->generation != self->desired->generation) &&
        !einsora_agent_local_store_save_desired(self->local, desired, &error))
        g_message("the desired state of generation %" G_GINT64_FORMAT " isn't saved: %s",
                  desired->generation, error->message);
}

/* The first sync failed: the server can't be reached, so the desired
 * state saved before is what this machine should be doing. Never once a
 * hub has answered: its word is newer. */
static void
go_on_from_saved(EinsoraAgent *self)
{
    g_autoptr(EinsoraDesiredState) saved = g_steal_pointer(&self->saved);

    if (saved == NULL || self->desired != NULL)
        return;
    g_message("going on with the desired state of generation %" G_GINT64_FORMAT
              " (%u workload(s)) saved before, until the server answers",
              saved->generation, saved->workloads->len);
    self->desired = g_steal_pointer(&saved);
    index_desired(self);
    self->applied_generation = self->desired->generation;
    apply(self, FALSE);
}

static void
on_synced(GObject *source, GAsyncResult *result, gpointer user_data)
{
    SyncCall *call = user_data;
    EinsoraAgent *self = call->agent;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraDesiredState) desired =
        einsora_sync_transport_sync_finish(EINSORA_SYNC_TRANSPORT(source), result, &error);
    gboolean cut_short = call->cut_short;
    guint inventory_serial = call->inventory_serial;

    sync_call_free(call);
    if (self == NULL)
        return;
    self->sync = NULL;
    if (desired == NULL) {
        /* Cut short to report something new: report it at once. */
        if (cut_short && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
            send_report(self);
            return;
        }
        schedule_retry(self);
        g_message("sync failed: %s; retrying in %" G_GINT64_FORMAT " ms",
                  error != NULL ? error->message : "no desired state", self->retry_us / 1000);
        go_on_from_saved(self);
        return;
    }
    self->retry_us = 0;
    if (inventory_serial > self->inventory_sent_serial)
        self->inventory_sent_serial = inventory_serial;
    /* A desired state for another machine is a mistake somewhere (a
     * machine taken for another): applying it could stop everything. */
    if (desired->machine_id != NULL && g_strcmp0(desired->machine_id, self->machine_id) != 0) {
        schedule_retry(self);
        g_message("ignoring a desired state for machine %.64s; this is %s", desired->machine_id,
                  self->machine_id);
        return;
    }
    g_clear_pointer(&self->saved, einsora_desired_state_free);
    if (desired->open_tunnels > 0 && self->tunnels_wanted != NULL)
        self->tunnels_wanted((guint)desired->open_tunnels, self->tunnels_wanted_data);
    if (self->local != NULL)
        keep_answer(self, desired);
    g_clear_pointer(&self->desired, einsora_desired_state_free);
    self->desired = g_steal_pointer(&desired);
    index_desired(self);
    apply(self, TRUE);
    self->applied_generation = self->desired->generation;
    send_report(self);
}

static void
send_report(EinsoraAgent *self)
{
    g_autoptr(EinsoraSyncReport) report = NULL;
    SyncCall *call;

    g_return_if_fail(self->sync == NULL);
    clear_source(&self->retry);
    g_free(self->last_sent);
    report = build_report(self, &self->last_sent);
    if (self->local != NULL)
        keep_and_replay(self, report);
    call = g_new0(SyncCall, 1);
    call->agent = self;
    call->cancellable = g_cancellable_new();
    call->inventory_serial = report->inventory != NULL ? self->inventory_serial : 0;
    self->sync = call;
    einsora_sync_transport_sync_async(self->transport, report, call->cancellable, on_synced, call);
}

/* Cuts the waiting sync short when the report would say something new;
 * its callback sends the fresh report. */
static void
report_if_changed(EinsoraAgent *self)
{
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(GCancellable) cancellable = NULL;
    g_autofree gchar *fingerprint = NULL;

    if (self->sync == NULL || self->sync->cut_short)
        return;
    report = build_report(self, &fingerprint);
    if (g_strcmp0(fingerprint, self->last_sent) == 0)
        return;
    self->sync->cut_short = TRUE;
    /* Last: the transport may complete the call from inside cancel(). */
    cancellable = g_object_ref(self->sync->cancellable);
    g_cancellable_cancel(cancellable);
}

/* Driver calls */

static void
driver_call_free(DriverCall *call)
{
    clear_source(&call->time_limit);
    g_clear_object(&call->cancellable);
    g_clear_object(&call->driver);
    g_free(call->workload_id);
    g_free(call);
}

static const char *
call_kind_to_string(CallKind kind)
{
    switch (kind) {
    case CALL_START:
        return "start";
    case CALL_STOP:
        return "stop";
    case CALL_REMOVE:
        return "removal";
    default:
        return "call";
    }
}

static gboolean
on_time_limit(gpointer user_data)
{
    DriverCall *call = user_data;
    g_autoptr(GCancellable) cancellable = g_object_ref(call->cancellable);

    call->timed_out = TRUE;
    g_clear_pointer(&call->time_limit, g_source_unref);
    /* Last: the driver may complete the call, and free it, from here. */
    g_cancellable_cancel(cancellable);
    return G_SOURCE_REMOVE;
}

static void
own_status_set(EinsoraAgent *self, const char *workload_id, gint64 attempt,
               EinsoraWorkloadMode mode, EinsoraStatusCode code)
{
    OwnStatus *own = g_new0(OwnStatus, 1);

    own->attempt = attempt;
    own->mode = mode;
    own->code = code;
    g_hash_table_insert(self->own_statuses, g_strdup(workload_id), own);
}

static void
call_finished(EinsoraAgent *self, DriverCall *call, const GError *error)
{
    gint64 attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;

    if (error == NULL)
        return;
    einsora_log_workload(G_LOG_LEVEL_MESSAGE, call->workload_id, NULL, self->machine_id,
                         "workload %s: %s of attempt %" G_GINT64_FORMAT " with %s failed: %s",
                         call->workload_id, call_kind_to_string(call->kind), call->attempt,
                         einsora_agent_driver_get_name(call->driver),
                         call->timed_out ? "it ran out of time" : error->message);
    if (call->kind != CALL_START)
        return; /* Issued again when the hub next answers. */
    if (call->timed_out) {
        own_status_set(self, call->workload_id, call->attempt, EINSORA_WORKLOAD_MODE_RUN,
                       EINSORA_STATUS_CODE_FAILED_TO_START);
        return;
    }
    /* Refused before it began (another attempt still there): not started,
     * so the hub's next answer may start it (not sooner: issued holds it,
     * so a driver that keeps refusing never makes the agent spin). */
    einsora_agent_driver_get_status(call->driver, call->workload_id, &attempt);
    if (attempt != call->attempt)
        g_hash_table_remove(self->started, call->workload_id);
}

static void
on_call_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    DriverCall *call = user_data;
    EinsoraAgent *self = call->agent;
    g_autoptr(GError) error = NULL;

    switch (call->kind) {
    case CALL_START:
        einsora_agent_driver_start_finish(call->driver, result, &error);
        break;
    case CALL_STOP:
        einsora_agent_driver_stop_finish(call->driver, result, &error);
        break;
    case CALL_REMOVE:
        einsora_agent_driver_remove_finish(call->driver, result, &error);
        break;
    default:
        g_warn_if_reached();
    }
    if (self != NULL) {
        g_hash_table_remove(self->calls, call->workload_id);
        call_finished(self, call, error);
    }
    driver_call_free(call);
    if (self != NULL)
        on_change(self);
}

static void
call_driver(EinsoraAgent *self, CallKind kind, EinsoraAgentDriver *driver, const char *workload_id,
            const EinsoraDesiredWorkload *workload)
{
    DriverCall *call = g_new0(DriverCall, 1);

    call->agent = self;
    call->driver = g_object_ref(driver);
    call->kind = kind;
    call->workload_id = g_strdup(workload_id);
    call->attempt = workload != NULL ? workload->attempt : EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    call->cancellable = g_cancellable_new();
    call->time_limit = attach_timeout(self, self->driver_timeout_us, on_time_limit, call);
    g_hash_table_insert(self->calls, call->workload_id, call);
    einsora_log_workload(G_LOG_LEVEL_DEBUG, workload_id,
                         workload != NULL ? workload->tenant_id : NULL, self->machine_id,
                         "workload %s: %s with %s", workload_id, call_kind_to_string(kind),
                         einsora_agent_driver_get_name(driver));
    switch (kind) {
    case CALL_START:
        einsora_agent_driver_start_async(driver, workload, call->cancellable, on_call_done, call);
        break;
    case CALL_STOP:
        einsora_agent_driver_stop_async(driver, workload_id, call->cancellable, on_call_done, call);
        break;
    case CALL_REMOVE:
        einsora_agent_driver_remove_async(driver, workload_id, call->cancellable, on_call_done,
                                          call);
        break;
    default:
        g_warn_if_reached();
    }
}

/* Once per answer from the hub (see issued). */
static void
call_driver_once(EinsoraAgent *self, CallKind kind, EinsoraAgentDriver *driver,
                 const char *workload_id, const EinsoraDesiredWorkload *workload)
{
    g_autofree gchar *key =
        g_strdup_printf("%d\x1f%s\x1f%s", kind, einsora_agent_driver_get_name(driver), workload_id);

    if (g_hash_table_contains(self->issued, key))
        return;
    g_hash_table_add(self->issued, g_steal_pointer(&key));
    call_driver(self, kind, driver, workload_id, workload);
}

/* Applying desired state */

static void
refuse(EinsoraAgent *self, const EinsoraDesiredWorkload *workload, EinsoraStatusCode code)
{
    const OwnStatus *own = g_hash_table_lookup(self->own_statuses, workload->workload_id);

    if (own == NULL || own->code != code || own->attempt != workload->attempt)
        einsora_log_workload(
            G_LOG_LEVEL_DEBUG, workload->workload_id, workload->tenant_id, self->machine_id,
            "workload %s: attempt %" G_GINT64_FORMAT " refused: %s", workload->workload_id,
            workload->attempt, einsora_status_code_to_string(code));
    own_status_set(self, workload->workload_id, workload->attempt, EINSORA_WORKLOAD_MODE_RUN, code);
}

/* Whether @workload_id may hold a GPU @workload needs: one of the same
 * devices when placement chose both, else one of the same class. One the
 * agent was never told about might hold any. */
static gboolean
holds_gpu_of(EinsoraAgent *self, const char *workload_id, const EinsoraDesiredWorkload *workload)
{
    const EinsoraDesiredWorkload *needs = desired_lookup(self, workload_id);

    if (needs == NULL)
        needs = g_hash_table_lookup(self->needs, workload_id);
    if (needs == NULL)
        return TRUE;
    if (needs->devices <= 0)
        return FALSE;
    if (needs->gpu_mask != 0 && workload->gpu_mask != 0)
        return (needs->gpu_mask & workload->gpu_mask) != 0;
    return g_strcmp0(needs->placed_class, workload->placed_class) == 0;
}

/* Whether another workload is still active (starting, running, or not yet
 * stopped) on the GPU @workload needs. */
static gboolean
gpu_taken(EinsoraAgent *self, const EinsoraDesiredWorkload *workload)
{
    GHashTableIter iter;
    DriverCall *call;

    if (workload->devices <= 0)
        return FALSE;
    g_hash_table_iter_init(&iter, self->calls);
    while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&call)) {
        if (call->kind == CALL_START && g_strcmp0(call->workload_id, workload->workload_id) != 0 &&
            holds_gpu_of(self, call->workload_id, workload))
            return TRUE;
    }
    for (guint i = 0; i < self->drivers->len; i++) {
        EinsoraAgentDriver *driver = g_ptr_array_index(self->drivers, i);
        g_auto(GStrv) ids = einsora_agent_driver_list_workloads(driver);

        for (guint j = 0; ids[j] != NULL; j++) {
            EinsoraStatusCode code = einsora_agent_driver_get_status(driver, ids[j], NULL);

            if (g_strcmp0(ids[j], workload->workload_id) != 0 &&
                einsora_status_code_is_active(code) && holds_gpu_of(self, ids[j], workload))
                return TRUE;
        }
    }
    return FALSE;
}

static gboolean
already_started(EinsoraAgent *self, EinsoraAgentDriver *driver,
                const EinsoraDesiredWorkload *workload)
{
    const gint64 *started = g_hash_table_lookup(self->started, workload->workload_id);
    gint64 attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    EinsoraStatusCode code;

    if (started != NULL && *started == workload->attempt)
        return TRUE;
    /* After the agent restarts, the driver remembers what it started. */
    code = einsora_agent_driver_get_status(driver, workload->workload_id, &attempt);
    return attempt == workload->attempt && code != EINSORA_STATUS_CODE_UNKNOWN;
}

static void
apply_run(EinsoraAgent *self, const EinsoraDesiredWorkload *workload)
{
    const char *id = workload->workload_id;
    EinsoraAgentDriver *driver = find_driver(self, workload->driver);
    const EinsoraDriverInfo *info = einsora_driver_lookup(workload->driver);
    gboolean moves_data = workload->kind == EINSORA_WORKLOAD_KIND_NOTEBOOK ||
                          workload->kind == EINSORA_WORKLOAD_KIND_VM;
    gboolean waiting = FALSE;
    EinsoraStatusCode code;

    if (g_hash_table_contains(self->calls, id))
        return; /* one call at a time per workload: wait for it */
    if (driver == NULL) {
        refuse(self, workload, EINSORA_STATUS_CODE_DRIVER_MISSING);
        return;
    }
    /* Isolation comes from the table, never from the driver; a driver the
     * table doesn't know counts as weak. */
    if ((info == NULL || !einsora_isolation_hosts_guests(info->isolation)) &&
        (self->owner_tenant_id == NULL ||
         g_strcmp0(workload->tenant_id, self->owner_tenant_id) != 0)) {
        refuse(self, workload, EINSORA_STATUS_CODE_ISOLATION_REFUSED);
        return;
    }
    if (already_started(self, driver, workload))
        return;
    for (guint i = 0; i < self->drivers->len; i++) {
        EinsoraAgentDriver *other = g_ptr_array_index(self->drivers, i);

        if (other == driver || !holds(other, id, &code, NULL))
            continue;
        if (moves_data) {
            refuse(self, workload, EINSORA_STATUS_CODE_MOVE_REFUSED);
            return;
        }
        /* An endpoint keeps no data: stop it there, then start it here. */
        if (einsora_status_code_is_active(code)) {
            call_driver_once(self, CALL_STOP, other, id, workload);
            waiting = TRUE;
        }
    }
    if (waiting)
        return;
    /* Another attempt still active: stop it first, keeping its data. */
    code = einsora_agent_driver_get_status(driver, id, NULL);
    if (einsora_status_code_is_active(code)) {
        if (code != EINSORA_STATUS_CODE_REMOVING)
            call_driver_once(self, CALL_STOP, driver, id, workload);
        return;
    }
    if (gpu_taken(self, workload)) {
        refuse(self, workload, EINSORA_STATUS_CODE_GPU_BUSY);
        return;
    }
    g_hash_table_remove(self->own_statuses, id);
    g_hash_table_insert(self->started, g_strdup(id),
                        g_memdup2(&workload->attempt, sizeof(workload->attempt)));
    call_driver_once(self, CALL_START, driver, id, workload);
}

/* Parks (keeping data) wherever it is active. */
static void
stop_everywhere(EinsoraAgent *self, const char *workload_id, const EinsoraDesiredWorkload *workload)
{
    for (guint i = 0; i < self->drivers->len; i++) {
        EinsoraAgentDriver *driver = g_ptr_array_index(self->drivers, i);
        EinsoraStatusCode code;

        if (g_hash_table_contains(self->calls, workload_id))
            return;
        if (holds(driver, workload_id, &code, NULL) && einsora_status_code_is_active(code) &&
            code != EINSORA_STATUS_CODE_REMOVING)
            call_driver_once(self, CALL_STOP, driver, workload_id, workload);
    }
}

/* The only place data is deleted: a workload listed for removal. */
static void
remove_everywhere(EinsoraAgent *self, const EinsoraDesiredWorkload *workload)
{
    for (guint i = 0; i < self->drivers->len; i++) {
        EinsoraAgentDriver *driver = g_ptr_array_index(self->drivers, i);
        EinsoraStatusCode code;

        if (g_hash_table_contains(self->calls, workload->workload_id))
            return;
        if (holds(driver, workload->workload_id, &code, NULL))
            call_driver_once(self, CALL_REMOVE, driver, workload->workload_id, workload);
    }
}

/* Forgets what the agent said or knew about workloads it no longer
 * holds or hears about, and refusals of attempts or modes no longer asked
 * for. */
static void
forget(EinsoraAgent *self, GHashTable *held)
{
    GHashTableIter iter;
    gpointer key;
    OwnStatus *own;

    g_hash_table_iter_init(&iter, self->own_statuses);
    while (g_hash_table_iter_next(&iter, &key, (gpointer *)&own)) {
        const EinsoraDesiredWorkload *desired = desired_lookup(self, key);

        if (desired == NULL || desired->attempt != own->attempt || desired->mode != own->mode)
            g_hash_table_iter_remove(&iter);
    }
    g_hash_table_iter_init(&iter, self->needs);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (desired_lookup(self, key) == NULL && !g_hash_table_contains(held, key) &&
            !g_hash_table_contains(self->calls, key)) {
            g_hash_table_remove(self->started, key);
            g_hash_table_iter_remove(&iter);
        }
    }
}

/* Applies the last desired state: at once when the hub answers, and again
 * whenever something changed here (a driver call ended, a GPU freed).
 * Every step is idempotent: an attempt starts at most once. */
static void
apply(EinsoraAgent *self, gboolean from_hub)
{
    g_autoptr(GHashTable) held = NULL;
    GHashTableIter iter;
    gpointer key;

    if (self->desired == NULL)
        return; /* told nothing yet: stop nothing */
    if (from_hub)
        g_hash_table_remove_all(self->issued);
    held = held_workloads(self);
    forget(self, held);

    /* Stops and removals first, so a GPU they free can be used below. A
     * workload it wasn't told about is stopped and kept, never removed. */
    g_hash_table_iter_init(&iter, held);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (desired_lookup(self, key) == NULL)
            stop_everywhere(self, key, NULL);
    }
    for (guint i = 0; i < self->desired->workloads->len; i++) {
        const EinsoraDesiredWorkload *workload = g_ptr_array_index(self->desired->workloads, i);

        if (desired_lookup(self, workload->workload_id) != workload)
            continue; /* listed twice */
        if (workload->mode == EINSORA_WORKLOAD_MODE_PARK)
            stop_everywhere(self, workload->workload_id, workload);
        else if (workload->mode == EINSORA_WORKLOAD_MODE_REMOVE)
            remove_everywhere(self, workload);
    }
    for (guint i = 0; i < self->desired->workloads->len; i++) {
        const EinsoraDesiredWorkload *workload = g_ptr_array_index(self->desired->workloads, i);

        if (workload->mode == EINSORA_WORKLOAD_MODE_RUN &&
            desired_lookup(self, workload->workload_id) == workload)
            apply_run(self, workload);
    }
}

/* Something here may have changed: apply again, and report it at once. */
static void
on_change(EinsoraAgent *self)
{
    if (!self->running)
        return;
    apply(self, FALSE);
    report_if_changed(self);
}

static gboolean
on_check(gpointer user_data)
{
    on_change(user_data);
    return G_SOURCE_CONTINUE;
}

static void
restart_check(EinsoraAgent *self)
{
    clear_source(&self->check);
    if (self->running)
        self->check = attach_timeout(self, self->check_interval_us, on_check, self);
}

/* GObject */

static void
on_driver_status_changed(EinsoraAgentDriver *driver, const char *workload_id, gpointer user_data)
{
    on_change(EINSORA_AGENT(user_data));
}

static void
einsora_agent_dispose(GObject *object)
{
    EinsoraAgent *self = EINSORA_AGENT(object);

    for (guint i = 0; self->drivers != NULL && i < self->drivers->len; i++)
        g_signal_handlers_disconnect_by_func(g_ptr_array_index(self->drivers, i),
                                             on_driver_status_changed, self);
    einsora_agent_stop(self);
    G_OBJECT_CLASS(einsora_agent_parent_class)->dispose(object);
}

static void
einsora_agent_finalize(GObject *object)
{
    EinsoraAgent *self = EINSORA_AGENT(object);

    g_clear_pointer(&self->needs, g_hash_table_unref);
    g_clear_pointer(&self->kept, g_hash_table_unref);
    g_clear_pointer(&self->saved, einsora_desired_state_free);
    g_clear_pointer(&self->local, einsora_agent_local_store_free);
    g_clear_pointer(&self->issued, g_hash_table_unref);
    g_clear_pointer(&self->started, g_hash_table_unref);
    g_clear_pointer(&self->own_statuses, g_hash_table_unref);
    g_clear_pointer(&self->calls, g_hash_table_unref);
    g_clear_pointer(&self->desired_index, g_hash_table_unref);
    g_clear_pointer(&self->desired, einsora_desired_state_free);
    g_clear_pointer(&self->last_sent, g_free);
    g_clear_pointer(&self->drivers, g_ptr_array_unref);
    g_clear_pointer(&self->inventory, einsora_inventory_free);
    g_clear_pointer(&self->owner_tenant_id, g_free);
    g_clear_pointer(&self->machine_id, g_free);
    g_clear_object(&self->transport);
    g_clear_pointer(&self->context, g_main_context_unref);
    G_OBJECT_CLASS(einsora_agent_parent_class)->finalize(object);
}

static void
einsora_agent_class_init(EinsoraAgentClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->dispose = einsora_agent_dispose;
    object_class->finalize = einsora_agent_finalize;
}

static void
einsora_agent_init(EinsoraAgent *self)
{
    self->context = g_main_context_ref_thread_default();
    self->driver_timeout_us = EINSORA_AGENT_DRIVER_TIMEOUT_US;
    self->check_interval_us = EINSORA_AGENT_CHECK_INTERVAL_US;
    self->now = einsora_now_real;
    self->drivers = g_ptr_array_new_with_free_func(g_object_unref);
    self->desired_index = g_hash_table_new(g_str_hash, g_str_equal);
    self->calls = g_hash_table_new(g_str_hash, g_str_equal);
    self->own_statuses = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    self->started = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    self->issued = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->needs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)einsora_desired_workload_free);
}

/* @inventory is what this machine has; @drivers the EinsoraAgentDriver
 * instances it may use (the driver table says how each isolates). */
EinsoraAgent *
einsora_agent_new(EinsoraSyncTransport *transport, const char *machine_id,
                  const char *owner_tenant_id, const EinsoraInventory *inventory,
                  GPtrArray *drivers)
{
    EinsoraAgent *self;

    g_return_val_if_fail(EINSORA_IS_SYNC_TRANSPORT(transport), NULL);
    g_return_val_if_fail(machine_id != NULL, NULL);
    g_return_val_if_fail(inventory != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_AGENT, NULL);
    self->transport = g_object_ref(transport);
    self->machine_id = g_strdup(machine_id);
    self->owner_tenant_id = g_strdup(owner_tenant_id);
    self->inventory = einsora_inventory_copy(inventory);
    self->inventory_serial = 1;
    for (guint i = 0; drivers != NULL && i < drivers->len; i++) {
        g_return_val_if_fail(EINSORA_IS_AGENT_DRIVER(g_ptr_array_index(drivers, i)), self);
        g_ptr_array_add(self->drivers, g_object_ref(g_ptr_array_index(drivers, i)));
        g_signal_connect(g_ptr_array_index(drivers, i), "status-changed",
                         G_CALLBACK(on_driver_status_changed), self);
    }
    return self;
}

/* Starts the sync loop: the first report goes out at once. */
void
einsora_agent_start(EinsoraAgent *self)
{
    g_return_if_fail(EINSORA_IS_AGENT(self));

    if (self->running)
        return;
    self->running = TRUE;
    self->retry_us = 0;
    restart_check(self);
    send_report(self);
}

/* Cancels the sync and every driver call in flight. Their callbacks still
 * land on the main context, and find the agent gone: it is safe to drop
 * the agent at once. Workloads keep running: stopping the agent is not
 * stopping them. */
void
einsora_agent_stop(EinsoraAgent *self)
{
    g_autoptr(GPtrArray) cancellables = g_ptr_array_new_with_free_func(g_object_unref);
    GHashTableIter iter;
    DriverCall *call;

    g_return_if_fail(EINSORA_IS_AGENT(self));

    self->running = FALSE;
    clear_source(&self->check);
    clear_source(&self->retry);
    if (self->sync != NULL) {
        self->sync->agent = NULL;
        g_ptr_array_add(cancellables, g_object_ref(self->sync->cancellable));
        self->sync = NULL;
    }
    g_hash_table_iter_init(&iter, self->calls);
    while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&call)) {
        call->agent = NULL;
        clear_source(&call->time_limit);
        g_ptr_array_add(cancellables, g_object_ref(call->cancellable));
        g_hash_table_iter_remove(&iter);
    }
    /* Last: a callback may run from inside cancel(), and find nothing. */
    for (guint i = 0; i < cancellables->len; i++)
        g_cancellable_cancel(g_ptr_array_index(cancellables, i));
}

/* A changed inventory goes out with the next report, at once. */
void
einsora_agent_set_inventory(EinsoraAgent *self, const EinsoraInventory *inventory)
{
    g_autoptr(JsonNode) old_node = NULL;
    g_autoptr(JsonNode) new_node = NULL;

    g_return_if_fail(EINSORA_IS_AGENT(self));
    g_return_if_fail(inventory != NULL);

    old_node = einsora_inventory_to_json(self->inventory);
    new_node = einsora_inventory_to_json(inventory);
    if (json_node_equal(old_node, new_node))
        return;
    einsora_inventory_free(self->inventory);
    self->inventory = einsora_inventory_copy(inventory);
    self->inventory_serial++;
    if (self->running)
        report_if_changed(self);
}

void
einsora_agent_set_driver_timeout(EinsoraAgent *self, gint64 timeout_us)
{
    g_return_if_fail(EINSORA_IS_AGENT(self));
    g_return_if_fail(timeout_us > 0);
    self->driver_timeout_us = timeout_us;
}

void
einsora_agent_set_check_interval(EinsoraAgent *self, gint64 interval_us)
{
    g_return_if_fail(EINSORA_IS_AGENT(self));
    g_return_if_fail(interval_us > 0);
    self->check_interval_us = interval_us;
    restart_check(self);
}

void
einsora_agent_set_clock(EinsoraAgent *self, EinsoraNowFunc now, gpointer now_data)
{
    g_return_if_fail(EINSORA_IS_AGENT(self));
    g_return_if_fail(now != NULL);
    self->now = now;
    self->now_data = now_data;
}

/* The generation of the desired state it applied last; 0 before the first. */
void
einsora_agent_set_tunnels_wanted(EinsoraAgent *self, EinsoraAgentTunnelsWanted wanted,
                                 gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_AGENT(self));
    self->tunnels_wanted = wanted;
    self->tunnels_wanted_data = user_data;
}

void
einsora_agent_use_local_store(EinsoraAgent *self, EinsoraAgentLocalStore *store)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) pending = NULL;

    g_return_if_fail(EINSORA_IS_AGENT(self));
    g_return_if_fail(store != NULL && self->local == NULL && !self->running);

    self->local = store;
    self->kept = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify)einsora_workload_status_free);
    /* What is waiting in the outbox is the last change it knows of each. */
    pending = einsora_agent_local_store_pending(store);
    for (guint i = 0; i < pending->len; i++) {
        const EinsoraOutboxRecord *record = g_ptr_array_index(pending, i);
        g_hash_table_insert(self->kept, g_strdup(record->status->workload_id),
                            einsora_workload_status_copy(record->status));
    }
    self->saved = einsora_agent_local_store_load_desired(store, &error);
    if (error != NULL)
        g_message("the saved desired state can't be read, so none is used: %s", error->message);
}

gint64
einsora_agent_get_applied_generation(EinsoraAgent *self)
{
    g_return_val_if_fail(EINSORA_IS_AGENT(self), 0);
    return self->applied_generation;
}

gboolean
einsora_agent_get_access(EinsoraAgent *self, const char *workload_id, gint64 *attempt,
                         gchar **socket_path, gchar **token)
{
    const EinsoraDesiredWorkload *desired;
    EinsoraAgentDriver *driver;

    g_return_val_if_fail(EINSORA_IS_AGENT(self), FALSE);
    g_return_val_if_fail(socket_path != NULL && token != NULL, FALSE);
    *socket_path = NULL;
    *token = NULL;
    /* Only what it is told to run, on the driver it is told to use. */
    desired = self->desired_index != NULL ? desired_lookup(self, workload_id) : NULL;
    if (desired == NULL || desired->mode != EINSORA_WORKLOAD_MODE_RUN)
        return FALSE;
    driver = find_driver(self, desired->driver);
    if (driver == NULL)
        return FALSE;
    return einsora_agent_driver_get_access(driver, workload_id, attempt, socket_path, token);
}

static gboolean
agent_lookup_access(EinsoraAccessSource *source, const char *workload_id, gint64 *attempt,
                    gchar **socket_path, gchar **token)
{
    return einsora_agent_get_access(EINSORA_AGENT(source), workload_id, attempt, socket_path,
                                    token);
}

gchar *
einsora_agent_find_log(EinsoraAgent *self, const char *workload_id, gint64 attempt,
                       gint64 *found_attempt, GError **error)
{
    const EinsoraDesiredWorkload *desired;
    EinsoraAgentDriver *driver;

    g_return_val_if_fail(EINSORA_IS_AGENT(self), NULL);
    *found_attempt = 0;
    /* A workload it was told to run or park; one it removes has none. */
    desired = self->desired_index != NULL ? desired_lookup(self, workload_id) : NULL;
    if (desired == NULL || desired->mode == EINSORA_WORKLOAD_MODE_REMOVE) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                            "this machine keeps nothing of it");
        return NULL;
    }
    driver = find_driver(self, desired->driver);
    if (driver == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "this machine has no %s driver",
                    desired->driver);
        return NULL;
    }
    return einsora_agent_driver_find_log(driver, workload_id, attempt, found_attempt, error);
}

static gchar *
agent_find_log(EinsoraAccessSource *source, const char *workload_id, gint64 attempt,
               gint64 *found_attempt, GError **error)
{
    return einsora_agent_find_log(EINSORA_AGENT(source), workload_id, attempt, found_attempt,
                                  error);
}

static void
einsora_agent_access_iface_init(EinsoraAccessSourceInterface *iface)
{
    iface->lookup = agent_lookup_access;
    iface->find_log = agent_find_log;
}
