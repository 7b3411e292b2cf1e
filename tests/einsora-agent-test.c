#include "einsora-agent.h"
#include "einsora-sim-driver.h"
#include "einsora-test-dir.h"

#define MACHINE_ID "0190b5d2-7c4e-7abc-8def-0000000000ff"
#define OWNER_ID "0190b5d2-7c4e-7abc-8def-00000000000a"
#define OTHER_TENANT_ID "0190b5d2-7c4e-7abc-8def-00000000000b"
#define WORKLOAD_1 "0190b5d2-7c4e-7abc-8def-000000000001"
#define WORKLOAD_2 "0190b5d2-7c4e-7abc-8def-000000000002"
#define WORKLOAD_3 "0190b5d2-7c4e-7abc-8def-000000000003"
#define GPU_CLASS "nvidia-h100-80g"

/* Every wait is bounded: an agent that never answers fails the test. */
#define WAIT_LIMIT_MS 5000

static gboolean
on_flag(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

#define WAIT_FOR(cond)                                                                             \
    G_STMT_START                                                                                   \
    {                                                                                              \
        gboolean expired_ = FALSE;                                                                 \
        guint guard_ = g_timeout_add(WAIT_LIMIT_MS, on_flag, &expired_);                           \
        while (!(cond) && !expired_)                                                               \
            g_main_context_iteration(NULL, TRUE);                                                  \
        if (!expired_)                                                                             \
            g_source_remove(guard_);                                                               \
        g_assert_true(cond);                                                                       \
    }                                                                                              \
    G_STMT_END

/* Runs the main loop for @ms, whatever happens meanwhile. */
static void
iterate_for(guint ms)
{
    gboolean done = FALSE;

    g_timeout_add(ms, on_flag, &done);
    while (!done)
        g_main_context_iteration(NULL, TRUE);
}

/* A hub that holds each sync until the test answers it, and records every
 * report. */

#define TEST_TYPE_FAKE_TRANSPORT (fake_transport_get_type())
G_DECLARE_FINAL_TYPE(FakeTransport, fake_transport, TEST, FAKE_TRANSPORT, GObject)

struct _FakeTransport {
    GObject parent_instance;

    GPtrArray *reports; /* EinsoraSyncReport */
    GTask *pending;
    GSource *cancel_watch;
    guint n_cancelled;
    guint n_to_fail;
};

static void fake_transport_iface_init(EinsoraSyncTransportInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(FakeTransport, fake_transport, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_SYNC_TRANSPORT,
                                                    fake_transport_iface_init))

static void
fake_transport_finalize(GObject *object)
{
    FakeTransport *self = TEST_FAKE_TRANSPORT(object);

    g_assert_null(self->pending);
    g_ptr_array_unref(self->reports);
    G_OBJECT_CLASS(fake_transport_parent_class)->finalize(object);
}

static void
fake_transport_class_init(FakeTransportClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = fake_transport_finalize;
}

static void
fake_transport_init(FakeTransport *self)
{
    self->reports = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_sync_report_free);
}

static GTask *
fake_take_pending(FakeTransport *self)
{
    if (self->cancel_watch != NULL) {
        g_source_destroy(self->cancel_watch);
        g_clear_pointer(&self->cancel_watch, g_source_unref);
    }
    return g_steal_pointer(&self->pending);
}

static gboolean
on_fake_cancelled(GCancellable *cancellable, gpointer user_data)
{
    FakeTransport *self = user_data;
    g_autoptr(GTask) task = fake_take_pending(self);

    self->n_cancelled++;
    g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "sync cancelled");
    return G_SOURCE_REMOVE;
}

static void
fake_sync_async(EinsoraSyncTransport *transport, const EinsoraSyncReport *report,
                GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    FakeTransport *self = TEST_FAKE_TRANSPORT(transport);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);

    /* One sync loop: never two syncs at once. */
    g_assert_null(self->pending);
    g_ptr_array_add(self->reports, einsora_sync_report_copy(report));
    if (self->n_to_fail > 0) {
        self->n_to_fail--;
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED, "hub unreachable");
        return;
    }
    self->pending = g_steal_pointer(&task);
    if (cancellable != NULL) {
        self->cancel_watch = g_cancellable_source_new(cancellable);
        g_source_set_callback(self->cancel_watch, G_SOURCE_FUNC(on_fake_cancelled), self, NULL);
        g_source_attach(self->cancel_watch, NULL);
    }
}

static EinsoraDesiredState *
fake_sync_finish(EinsoraSyncTransport *transport, GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void
fake_transport_iface_init(EinsoraSyncTransportInterface *iface)
{
    iface->sync_async = fake_sync_async;
    iface->sync_finish = fake_sync_finish;
}

/* Answers the waiting sync with @state (which it takes). */
static void
fake_answer(FakeTransport *self, EinsoraDesiredState *state)
{
    g_autoptr(GTask) task = NULL;

    WAIT_FOR(self->pending != NULL);
    task = fake_take_pending(self);
    g_task_return_pointer(task, state, (GDestroyNotify)einsora_desired_state_free);
}

static const EinsoraSyncReport *
fake_last_report(FakeTransport *self)
{
    g_assert_cmpuint(self->reports->len, >, 0);
    return g_ptr_array_index(self->reports, self->reports->len - 1);
}

/* A driver around a sim that counts the calls it gets, under any name. */

#define TEST_TYPE_COUNTING_DRIVER (counting_driver_get_type())
G_DECLARE_FINAL_TYPE(CountingDriver, counting_driver, TEST, COUNTING_DRIVER, GObject)

struct _CountingDriver {
    GObject parent_instance;

    EinsoraSimDriver *sim;
    gchar *name;
    guint n_start;
    guint n_stop;
    guint n_remove;
};

static void counting_driver_iface_init(EinsoraAgentDriverInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(CountingDriver, counting_driver, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_AGENT_DRIVER,
                                                    counting_driver_iface_init))

static void
counting_driver_finalize(GObject *object)
{
    CountingDriver *self = TEST_COUNTING_DRIVER(object);

    g_object_unref(self->sim);
    g_free(self->name);
    G_OBJECT_CLASS(counting_driver_parent_class)->finalize(object);
}

static void
counting_driver_class_init(CountingDriverClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = counting_driver_finalize;
}

static void
counting_driver_init(CountingDriver *self)
{
}

static void
forward_status_changed(CountingDriver *self, const char *workload_id)
{
    g_signal_emit_by_name(self, "status-changed", workload_id);
}

static CountingDriver *
counting_driver_new(const char *name)
{
    CountingDriver *self = g_object_new(TEST_TYPE_COUNTING_DRIVER, NULL);

    self->sim = einsora_sim_driver_new();
    self->name = g_strdup(name);
    /* What the sim driver announces, this one announces. */
    g_signal_connect_swapped(self->sim, "status-changed", G_CALLBACK(forward_status_changed), self);
    return self;
}

static EinsoraAgentDriver *
inner(CountingDriver *self)
{
    return EINSORA_AGENT_DRIVER(self->sim);
}

static const char *
counting_get_name(EinsoraAgentDriver *driver)
{
    return TEST_COUNTING_DRIVER(driver)->name;
}

static void
return_inner(GTask *task, gboolean ok, GError *error)
{
    if (ok)
        g_task_return_boolean(task, TRUE);
    else
        g_task_return_error(task, error);
    g_object_unref(task);
}

static void
on_inner_started(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GError *error = NULL;
    gboolean ok = einsora_agent_driver_start_finish(EINSORA_AGENT_DRIVER(source), result, &error);

    return_inner(user_data, ok, error);
}

static void
on_inner_stopped(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GError *error = NULL;
    gboolean ok = einsora_agent_driver_stop_finish(EINSORA_AGENT_DRIVER(source), result, &error);

    return_inner(user_data, ok, error);
}

static void
on_inner_removed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GError *error = NULL;
    gboolean ok = einsora_agent_driver_remove_finish(EINSORA_AGENT_DRIVER(source), result, &error);

    return_inner(user_data, ok, error);
}

static void
counting_start_async(EinsoraAgentDriver *driver, const EinsoraDesiredWorkload *workload,
                     GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    CountingDriver *self = TEST_COUNTING_DRIVER(driver);
    GTask *task = g_task_new(self, cancellable, callback, user_data);

    self->n_start++;
    einsora_agent_driver_start_async(inner(self), workload, cancellable, on_inner_started, task);
}

static void
counting_stop_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
                    GAsyncReadyCallback callback, gpointer user_data)
{
    CountingDriver *self = TEST_COUNTING_DRIVER(driver);
    GTask *task = g_task_new(self, cancellable, callback, user_data);

    self->n_stop++;
    einsora_agent_driver_stop_async(inner(self), workload_id, cancellable, on_inner_stopped, task);
}

static void
counting_remove_async(EinsoraAgentDriver *driver, const char *workload_id,
                      GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    CountingDriver *self = TEST_COUNTING_DRIVER(driver);
    GTask *task = g_task_new(self, cancellable, callback, user_data);

    self->n_remove++;
    einsora_agent_driver_remove_async(inner(self), workload_id, cancellable, on_inner_removed,
                                      task);
}

static gboolean
counting_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    g_assert_true(g_task_is_valid(result, driver));
    return g_task_propagate_boolean(G_TASK(result), error);
}

static EinsoraStatusCode
counting_get_status(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt)
{
    return einsora_agent_driver_get_status(inner(TEST_COUNTING_DRIVER(driver)), workload_id,
                                           attempt);
}

static gchar **
counting_list_workloads(EinsoraAgentDriver *driver)
{
    return einsora_agent_driver_list_workloads(inner(TEST_COUNTING_DRIVER(driver)));
}

#define TEST_TOKEN "a-workload-token-never-reported"

/* A ready workload's way in, as a real driver would hand it over. */
static gboolean
counting_get_access(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt,
                    gchar **socket_path, gchar **token)
{
    EinsoraAgentDriver *sim = EINSORA_AGENT_DRIVER(TEST_COUNTING_DRIVER(driver)->sim);
    gint64 running_attempt = 0;

    if (einsora_agent_driver_get_status(sim, workload_id, &running_attempt) !=
        EINSORA_STATUS_CODE_RUNNING)
        return FALSE;
    if (attempt != NULL)
        *attempt = running_attempt;
    *socket_path = g_strdup("/run/test.sock");
    *token = g_strdup(TEST_TOKEN);
    return TRUE;
}

static void
counting_driver_iface_init(EinsoraAgentDriverInterface *iface)
{
    iface->get_name = counting_get_name;
    iface->start_async = counting_start_async;
    iface->start_finish = counting_finish;
    iface->stop_async = counting_stop_async;
    iface->stop_finish = counting_finish;
    iface->remove_async = counting_remove_async;
    iface->remove_finish = counting_finish;
    iface->get_status = counting_get_status;
    iface->list_workloads = counting_list_workloads;
    iface->get_access = counting_get_access;
}

static EinsoraStatusCode
sim_status(CountingDriver *driver, const char *workload_id)
{
    return einsora_agent_driver_get_status(inner(driver), workload_id, NULL);
}

static gboolean
sim_lists(CountingDriver *driver, const char *workload_id)
{
    g_auto(GStrv) ids = einsora_agent_driver_list_workloads(inner(driver));

    return g_strv_contains((const char *const *)ids, workload_id);
}

/* Desired state */

static EinsoraDesiredWorkload *
workload_new(const char *workload_id, EinsoraWorkloadMode mode, gint64 attempt)
{
    EinsoraDesiredWorkload *workload = einsora_desired_workload_new();

    workload->workload_id = g_strdup(workload_id);
    workload->tenant_id = g_strdup(OWNER_ID);
    workload->mode = mode;
    workload->attempt = attempt;
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    workload->driver = g_strdup("sim");
    workload->placed_class = g_strdup("cpu-4c-16g");
    workload->image = g_strdup("jupyter-scipy");
    workload->runtime_reference = g_strdup("sim:jupyter");
    workload->cpus = 4;
    workload->memory_mib = 16384;
    return workload;
}

static EinsoraDesiredWorkload *
gpu_workload_new(const char *workload_id, EinsoraWorkloadMode mode, gint64 attempt)
{
    EinsoraDesiredWorkload *workload = workload_new(workload_id, mode, attempt);

    g_free(workload->placed_class);
    workload->placed_class = g_strdup(GPU_CLASS);
    workload->devices = 1;
    return workload;
}

/* A desired state of @generation holding the workloads that follow
 * (taken), up to NULL. */
static EinsoraDesiredState *
state_new(gint64 generation, ...)
{
    EinsoraDesiredState *state = einsora_desired_state_new();
    EinsoraDesiredWorkload *workload;
    va_list args;

    state->machine_id = g_strdup(MACHINE_ID);
    state->generation = generation;
    va_start(args, generation);
    while ((workload = va_arg(args, EinsoraDesiredWorkload *)) != NULL)
        g_ptr_array_add(state->workloads, workload);
    va_end(args);
    return state;
}

/* Fixture */

typedef struct {
    FakeTransport *transport;
    CountingDriver *driver; /* named "sim" */
    GPtrArray *drivers;
    EinsoraAgent *agent;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
    f->transport = g_object_new(TEST_TYPE_FAKE_TRANSPORT, NULL);
    f->driver = counting_driver_new("sim");
    f->drivers = g_ptr_array_new_with_free_func(g_object_unref);
    g_ptr_array_add(f->drivers, g_object_ref(f->driver));
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
    if (f->agent != NULL) {
        einsora_agent_stop(f->agent);
        g_assert_finalize_object(f->agent);
    }
    /* What the agent cancelled lands on the main context. */
    WAIT_FOR(f->transport->pending == NULL);
    iterate_for(20);
    g_clear_pointer(&f->drivers, g_ptr_array_unref);
    g_assert_finalize_object(f->driver);
    g_assert_finalize_object(f->transport);
}

static void
agent_start(Fixture *f)
{
    g_autoptr(EinsoraInventory) inventory = einsora_inventory_new();

    inventory->os = g_strdup("linux");
    inventory->arch = g_strdup("x86_64");
    inventory->cpus = 16;
    inventory->memory_mib = 65536;
    f->agent = einsora_agent_new(EINSORA_SYNC_TRANSPORT(f->transport), MACHINE_ID, OWNER_ID,
                                 inventory, f->drivers);
    einsora_agent_set_check_interval(f->agent, 50 * 1000);
    einsora_agent_start(f->agent);
}

static const EinsoraWorkloadStatus *
find_status(const EinsoraSyncReport *report, const char *workload_id)
{
    for (guint i = 0; i < report->statuses->len; i++) {
        const EinsoraWorkloadStatus *status = g_ptr_array_index(report->statuses, i);

        if (g_strcmp0(status->workload_id, workload_id) == 0)
            return status;
    }
    return NULL;
}

/* Whether the latest report says @code about @attempt in @mode, applied
 * from @generation. */
static gboolean
reported(Fixture *f, const char *workload_id, EinsoraStatusCode code, gint64 attempt,
         EinsoraWorkloadMode mode, gint64 generation)
{
    const EinsoraWorkloadStatus *status;

    if (f->transport->reports->len == 0)
        return FALSE;
    status = find_status(fake_last_report(f->transport), workload_id);
    return status != NULL && status->code == code && status->attempt == attempt &&
           status->mode == mode && status->applied_generation == generation &&
           fake_last_report(f->transport)->applied_generation == generation;
}

/* Runs WORKLOAD_1's attempt 1 under generation 1, and waits until it is
 * reported running. */
static void
run_workload_1(Fixture *f)
{
    agent_start(f);
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
}

/* An agent with its own disk in @dir, not started. */
static EinsoraAgent *
networked_agent_new(Fixture *f, const char *dir)
{
    g_autoptr(EinsoraInventory) inventory = einsora_inventory_new();
    g_autoptr(GError) error = NULL;
    EinsoraAgentLocalStore *store = einsora_agent_local_store_open(dir, &error);
    EinsoraAgent *agent;

    g_assert_no_error(error);
    inventory->os = g_strdup("linux");
    inventory->arch = g_strdup("x86_64");
    inventory->cpus = 16;
    inventory->memory_mib = 65536;
    agent = einsora_agent_new(EINSORA_SYNC_TRANSPORT(f->transport), MACHINE_ID, OWNER_ID, inventory,
                              f->drivers);
    einsora_agent_set_check_interval(agent, 50 * 1000);
    einsora_agent_use_local_store(agent, store);
    return agent;
}

static gboolean
replays(const EinsoraSyncReport *report, const char *workload_id, EinsoraStatusCode code)
{
    for (guint i = 0; i < report->replay->len; i++) {
        const EinsoraReplayedStatus *replayed = g_ptr_array_index(report->replay, i);
        if (g_strcmp0(replayed->status->workload_id, workload_id) == 0 &&
            replayed->status->code == code)
            return TRUE;
    }
    return FALSE;
}

/* Every change goes to the outbox and rides in each report, numbered in
 * order, until an answer acknowledges it; then it is gone. */
static void
test_outbox_replayed_until_acknowledged(Fixture *f, gconstpointer data)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    const EinsoraSyncReport *report;
    gint64 last = 0;

    f->agent = networked_agent_new(f, dir);
    einsora_agent_start(f->agent);
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
    report = fake_last_report(f->transport);
    g_assert_true(replays(report, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING));
    for (guint i = 0; i < report->replay->len; i++) {
        const EinsoraReplayedStatus *replayed = g_ptr_array_index(report->replay, i);
        g_assert_cmpint(replayed->seq, >, last);
        last = replayed->seq;
    }
    /* The hub has them all: the next report replays none. */
    {
        EinsoraDesiredState *answer =
            state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL);
        guint before = f->transport->reports->len;

        answer->replayed_through = last;
        fake_answer(f->transport, answer);
        WAIT_FOR(f->transport->reports->len > before);
        g_assert_cmpuint(fake_last_report(f->transport)->replay->len, ==, 0);
    }
    /* A change after that is numbered after them. */
    {
        EinsoraDesiredState *park =
            state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 1), NULL);
        const EinsoraReplayedStatus *replayed;

        fake_answer(f->transport, park);
        WAIT_FOR(
            reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 1, EINSORA_WORKLOAD_MODE_PARK, 2));
        report = fake_last_report(f->transport);
        g_assert_cmpuint(report->replay->len, >, 0);
        replayed = g_ptr_array_index(report->replay, 0);
        g_assert_cmpint(replayed->seq, >, last);
        g_assert_false(replays(report, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING));
        g_assert_true(replays(report, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED));
    }
    einsora_test_dir_remove(dir);
}

/* Restarted while the hub can't be reached, it goes on from the desired
 * state it saved: its next report says it applied it. A hub's answer
 * first, and the saved one is never used. */
static void
test_outbox_goes_on_from_saved(Fixture *f, gconstpointer data)
{
    g_autofree gchar *dir = einsora_test_dir_new();

    f->agent = networked_agent_new(f, dir);
    einsora_agent_start(f->agent);
    fake_answer(f->transport,
                state_new(4, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 4));
    einsora_agent_stop(f->agent);
    g_assert_finalize_object(g_steal_pointer(&f->agent));
    WAIT_FOR(f->transport->pending == NULL);

    /* The hub is down: the first sync fails, the retry says generation 4. */
    f->transport->n_to_fail = 1;
    g_ptr_array_set_size(f->transport->reports, 0);
    f->agent = networked_agent_new(f, dir);
    einsora_agent_start(f->agent);
    g_assert_cmpint(fake_last_report(f->transport)->applied_generation, ==, 0);
    WAIT_FOR(f->transport->reports->len >= 2);
    g_assert_cmpint(fake_last_report(f->transport)->applied_generation, ==, 4);
    g_assert_true(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 4));
    einsora_test_dir_remove(dir);
}

/* Tests */

static void
test_run_starts_once(Fixture *f, gconstpointer data)
{
    const EinsoraSyncReport *first;

    einsora_sim_driver_set_start_delay(f->driver->sim, 100);
    agent_start(f);
    WAIT_FOR(f->transport->pending != NULL);
    first = fake_last_report(f->transport);
    g_assert_cmpstr(first->machine_id, ==, MACHINE_ID);
    g_assert_cmpint(first->applied_generation, ==, 0);
    g_assert_cmpuint(first->statuses->len, ==, 0);
    g_assert_nonnull(first->inventory);
    g_assert_cmpint(first->inventory->cpus, ==, 16);

    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    /* Applied: reported at once, while the start is still going. */
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STARTING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
    /* The start finishing cuts the waiting sync short: no answer needed. */
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
    g_assert_cmpuint(f->transport->n_cancelled, >=, 1);
    g_assert_cmpint(einsora_agent_get_applied_generation(f->agent), ==, 1);
    g_assert_cmpuint(f->driver->n_start, ==, 1);
    /* The inventory went out once the hub had it. */
    g_assert_null(fake_last_report(f->transport)->inventory);

    /* The same desired state again starts nothing. */
    for (guint i = 0; i < 3; i++)
        fake_answer(f->transport,
                    state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(f->transport->pending != NULL);
    iterate_for(100);
    g_assert_cmpuint(f->driver->n_start, ==, 1);
    g_assert_cmpuint(f->driver->n_stop, ==, 0);
    g_assert_true(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
}

static void
test_failed_attempt_not_restarted(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(
        einsora_sim_driver_script_failure(f->driver->sim, WORKLOAD_1, "out_of_memory", &error));
    agent_start(f);
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_OUT_OF_MEMORY, 1,
                      EINSORA_WORKLOAD_MODE_RUN, 1));

    einsora_sim_driver_clear_scripts(f->driver->sim);
    for (guint i = 0; i < 2; i++)
        fake_answer(f->transport,
                    state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(f->transport->pending != NULL);
    iterate_for(100);
    g_assert_cmpuint(f->driver->n_start, ==, 1);
    g_assert_true(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_OUT_OF_MEMORY, 1,
                           EINSORA_WORKLOAD_MODE_RUN, 2));

    /* A new attempt starts. */
    fake_answer(f->transport,
                state_new(3, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 2), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 2, EINSORA_WORKLOAD_MODE_RUN, 3));
    g_assert_cmpuint(f->driver->n_start, ==, 2);
}

static void
test_new_attempt_stops_old_first(Fixture *f, gconstpointer data)
{
    einsora_sim_driver_set_stop_delay(f->driver->sim, 50);
    run_workload_1(f);
    fake_answer(f->transport,
                state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 2), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 2, EINSORA_WORKLOAD_MODE_RUN, 2));
    g_assert_cmpuint(f->driver->n_stop, ==, 1);
    g_assert_cmpuint(f->driver->n_start, ==, 2);
    g_assert_cmpuint(f->driver->n_remove, ==, 0);
}

static void
test_park_keeps_data(Fixture *f, gconstpointer data)
{
    run_workload_1(f);
    fake_answer(f->transport,
                state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 1), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 1, EINSORA_WORKLOAD_MODE_PARK, 2));
    g_assert_true(sim_lists(f->driver, WORKLOAD_1));
    g_assert_cmpuint(f->driver->n_stop, ==, 1);
    g_assert_cmpuint(f->driver->n_remove, ==, 0);
}

static void
test_park_before_start(Fixture *f, gconstpointer data)
{
    agent_start(f);
    /* Parked before this machine ever ran it: nothing runs, which answers
     * the attempt being parked. */
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 3), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 3, EINSORA_WORKLOAD_MODE_PARK, 1));
    g_assert_cmpuint(f->driver->n_start + f->driver->n_stop + f->driver->n_remove, ==, 0);
}

static void
test_remove_deletes_data(Fixture *f, gconstpointer data)
{
    run_workload_1(f);
    fake_answer(f->transport,
                state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_REMOVE, 1), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_REMOVED, 1, EINSORA_WORKLOAD_MODE_REMOVE, 2));
    g_assert_false(sim_lists(f->driver, WORKLOAD_1));
    g_assert_cmpuint(f->driver->n_remove, ==, 1);
}

static void
test_unlisted_stopped_and_kept(Fixture *f, gconstpointer data)
{
    run_workload_1(f);
    fake_answer(f->transport, state_new(2, NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 1, EINSORA_WORKLOAD_MODE_PARK, 2));
    g_assert_true(sim_lists(f->driver, WORKLOAD_1));
    g_assert_cmpint(sim_status(f->driver, WORKLOAD_1), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_cmpuint(f->driver->n_remove, ==, 0);

    /* Still left out: nothing more happens to it. */
    fake_answer(f->transport, state_new(3, NULL));
    WAIT_FOR(f->transport->pending != NULL);
    iterate_for(100);
    g_assert_cmpuint(f->driver->n_stop, ==, 1);
    g_assert_cmpuint(f->driver->n_remove, ==, 0);
    g_assert_true(sim_lists(f->driver, WORKLOAD_1));
}

static void
test_driver_missing(Fixture *f, gconstpointer data)
{
    EinsoraDesiredWorkload *workload = workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1);

    g_free(workload->driver);
    workload->driver = g_strdup("docker");
    agent_start(f);
    fake_answer(f->transport, state_new(1, workload, NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_DRIVER_MISSING, 1,
                      EINSORA_WORKLOAD_MODE_RUN, 1));
    g_assert_cmpuint(f->driver->n_start, ==, 0);
}

static void
test_isolation_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(CountingDriver) libvirt = counting_driver_new("libvirt");
    g_autoptr(CountingDriver) native = counting_driver_new("linux-native");
    EinsoraDesiredWorkload *weak = workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1);
    EinsoraDesiredWorkload *strong = workload_new(WORKLOAD_2, EINSORA_WORKLOAD_MODE_RUN, 1);
    EinsoraDesiredWorkload *sandboxed = workload_new(WORKLOAD_3, EINSORA_WORKLOAD_MODE_RUN, 1);

    g_ptr_array_add(f->drivers, g_object_ref(libvirt));
    g_ptr_array_add(f->drivers, g_object_ref(native));
    /* bubblewrap's sandbox hosts a guest's notebook too. */
    g_free(sandboxed->tenant_id);
    sandboxed->tenant_id = g_strdup(OTHER_TENANT_ID);
    g_free(sandboxed->driver);
    sandboxed->driver = g_strdup("linux-native");
    g_free(weak->tenant_id);
    weak->tenant_id = g_strdup(OTHER_TENANT_ID);
    /* The driver table says libvirt isolates strongly: another tenant's
     * VM may run there. */
    g_free(strong->tenant_id);
    strong->tenant_id = g_strdup(OTHER_TENANT_ID);
    strong->kind = EINSORA_WORKLOAD_KIND_VM;
    g_free(strong->driver);
    strong->driver = g_strdup("libvirt");
    agent_start(f);
    fake_answer(f->transport, state_new(1, weak, strong, sandboxed, NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_ISOLATION_REFUSED, 1, EINSORA_WORKLOAD_MODE_RUN,
                 1) &&
        reported(f, WORKLOAD_2, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1) &&
        reported(f, WORKLOAD_3, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
    g_assert_cmpuint(f->driver->n_start, ==, 0);
    g_assert_cmpuint(libvirt->n_start, ==, 1);
    g_assert_cmpuint(native->n_start, ==, 1);
}

static void
test_move_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(CountingDriver) libvirt = counting_driver_new("libvirt");
    EinsoraDesiredWorkload *moved = workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 2);

    g_ptr_array_add(f->drivers, g_object_ref(libvirt));
    run_workload_1(f);
    fake_answer(f->transport,
                state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 1), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 1, EINSORA_WORKLOAD_MODE_PARK, 2));

    /* Its notebook data is held by sim: it isn't moved to libvirt. */
    g_free(moved->driver);
    moved->driver = g_strdup("libvirt");
    fake_answer(f->transport, state_new(3, moved, NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_MOVE_REFUSED, 2, EINSORA_WORKLOAD_MODE_RUN, 3));
    g_assert_cmpuint(libvirt->n_start, ==, 0);
    g_assert_true(sim_lists(f->driver, WORKLOAD_1));
}

static void
test_gpu_busy(Fixture *f, gconstpointer data)
{
    einsora_sim_driver_set_stop_delay(f->driver->sim, 50);
    agent_start(f);
    fake_answer(f->transport,
                state_new(1, gpu_workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));

    fake_answer(f->transport,
                state_new(2, gpu_workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1),
                          gpu_workload_new(WORKLOAD_2, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_2, EINSORA_STATUS_CODE_GPU_BUSY, 1, EINSORA_WORKLOAD_MODE_RUN, 2));
    g_assert_cmpuint(f->driver->n_start, ==, 1);

    /* Once the other one has stopped, the GPU is free and it starts. */
    fake_answer(f->transport,
                state_new(3, gpu_workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 1),
                          gpu_workload_new(WORKLOAD_2, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_2, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 3));
    g_assert_true(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 1, EINSORA_WORKLOAD_MODE_PARK, 3));
    g_assert_cmpuint(f->driver->n_start, ==, 2);
}

static EinsoraDesiredWorkload *
on_gpus(EinsoraDesiredWorkload *workload, guint64 gpu_mask)
{
    workload->gpu_mask = gpu_mask;
    return workload;
}

/* Where placement chose the GPUs, the rule holds per GPU: one on GPU 1
 * starts beside one on GPU 0; one on GPU 0 waits for it. */
static void
test_gpu_busy_per_device(Fixture *f, gconstpointer data)
{
    agent_start(f);
    fake_answer(f->transport,
                state_new(1,
                          on_gpus(gpu_workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), 0x1),
                          NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 1));

    fake_answer(
        f->transport,
        state_new(2, on_gpus(gpu_workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), 0x1),
                  on_gpus(gpu_workload_new(WORKLOAD_2, EINSORA_WORKLOAD_MODE_RUN, 1), 0x2),
                  on_gpus(gpu_workload_new(WORKLOAD_3, EINSORA_WORKLOAD_MODE_RUN, 1), 0x1), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_2, EINSORA_STATUS_CODE_RUNNING, 1, EINSORA_WORKLOAD_MODE_RUN, 2) &&
        reported(f, WORKLOAD_3, EINSORA_STATUS_CODE_GPU_BUSY, 1, EINSORA_WORKLOAD_MODE_RUN, 2));
    g_assert_cmpuint(f->driver->n_start, ==, 2);

    /* One whose GPUs weren't chosen may be on any of its class: it waits
     * while the class has one busy. */
    fake_answer(f->transport,
                state_new(3,
                          on_gpus(gpu_workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 1), 0x1),
                          on_gpus(gpu_workload_new(WORKLOAD_2, EINSORA_WORKLOAD_MODE_RUN, 1), 0x2),
                          gpu_workload_new(WORKLOAD_3, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(
        reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_STOPPED, 1, EINSORA_WORKLOAD_MODE_PARK, 3) &&
        reported(f, WORKLOAD_3, EINSORA_STATUS_CODE_GPU_BUSY, 1, EINSORA_WORKLOAD_MODE_RUN, 3));
    g_assert_cmpuint(f->driver->n_start, ==, 2);
}

static void
test_status_change_cuts_sync_short(Fixture *f, gconstpointer data)
{
    gint64 began;
    guint cancelled;

    einsora_sim_driver_script_exit_after(f->driver->sim, WORKLOAD_1, 300);
    run_workload_1(f);
    WAIT_FOR(f->transport->pending != NULL);
    began = g_get_monotonic_time();
    cancelled = f->transport->n_cancelled;
    /* The hub never answers: only the status check can report it. */
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_EXITED, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
    g_assert_cmpint(g_get_monotonic_time() - began, <, EINSORA_SYNC_LONG_POLL_US / 4);
    g_assert_cmpuint(f->transport->n_cancelled, ==, cancelled + 1);
    /* Stopped by itself: not restarted. */
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(f->transport->pending != NULL);
    iterate_for(100);
    g_assert_cmpuint(f->driver->n_start, ==, 1);
}

/* A change the driver announces is reported at once, without waiting
 * for the agent's next check. */
static void
test_announced_change_reported_at_once(Fixture *f, gconstpointer data)
{
    gint64 began;

    einsora_sim_driver_script_exit_after(f->driver->sim, WORKLOAD_1, 300);
    run_workload_1(f);
    einsora_agent_set_check_interval(f->agent, G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC);
    WAIT_FOR(f->transport->pending != NULL);
    began = g_get_monotonic_time();
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_EXITED, 1, EINSORA_WORKLOAD_MODE_RUN, 1));
    g_assert_cmpint(g_get_monotonic_time() - began, <, 2 * G_USEC_PER_SEC);
}

/* The way into a running workload goes to the hub through the agent in
 * this process only, for what it is told to run; never in a report. */
static void
test_access_in_process_only(Fixture *f, gconstpointer data)
{
    EinsoraAccessSource *source;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *token = NULL;
    gint64 attempt = 0;

    run_workload_1(f);
    source = EINSORA_ACCESS_SOURCE(f->agent);
    g_assert_true(einsora_access_source_lookup(source, WORKLOAD_1, &attempt, &socket_path, &token));
    g_assert_cmpstr(token, ==, TEST_TOKEN);
    g_assert_cmpint(attempt, ==, 1);
    g_clear_pointer(&socket_path, g_free);
    g_clear_pointer(&token, g_free);
    g_assert_false(
        einsora_access_source_lookup(source, WORKLOAD_2, &attempt, &socket_path, &token));
    for (guint i = 0; i < f->transport->reports->len; i++) {
        g_autoptr(JsonNode) node =
            einsora_sync_report_to_json(g_ptr_array_index(f->transport->reports, i));
        g_autofree gchar *json = json_to_string(node, FALSE);
        g_assert_null(strstr(json, TEST_TOKEN));
        g_assert_null(strstr(json, "/run/test.sock"));
    }
    /* Parked: no way in, even while the driver still says running. */
    fake_answer(f->transport,
                state_new(2, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_PARK, 1), NULL));
    WAIT_FOR(einsora_agent_get_applied_generation(f->agent) == 2);
    g_assert_false(
        einsora_access_source_lookup(source, WORKLOAD_1, &attempt, &socket_path, &token));
}

static void
test_start_timeout(Fixture *f, gconstpointer data)
{
    einsora_sim_driver_set_start_delay(f->driver->sim, 3000);
    agent_start(f);
    einsora_agent_set_driver_timeout(f->agent, 100 * 1000);
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_FAILED_TO_START, 1,
                      EINSORA_WORKLOAD_MODE_RUN, 1));
    g_assert_cmpint(sim_status(f->driver, WORKLOAD_1), !=, EINSORA_STATUS_CODE_STARTING);
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(f->transport->pending != NULL);
    iterate_for(100);
    g_assert_cmpuint(f->driver->n_start, ==, 1);
    g_assert_true(reported(f, WORKLOAD_1, EINSORA_STATUS_CODE_FAILED_TO_START, 1,
                           EINSORA_WORKLOAD_MODE_RUN, 1));
}

static void
test_transport_error_backs_off(Fixture *f, gconstpointer data)
{
    gint64 began = g_get_monotonic_time();

    f->transport->n_to_fail = 1;
    agent_start(f);
    WAIT_FOR(f->transport->reports->len == 2);
    g_assert_cmpint(g_get_monotonic_time() - began, >=, 900 * 1000);
    /* The first report never arrived: the inventory goes again. */
    g_assert_nonnull(fake_last_report(f->transport)->inventory);
    iterate_for(100);
    g_assert_cmpuint(f->transport->reports->len, ==, 2);
}

static void
test_inventory_change_reported(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraInventory) inventory = einsora_inventory_new();

    agent_start(f);
    fake_answer(f->transport, state_new(1, NULL));
    WAIT_FOR(f->transport->pending != NULL && f->transport->reports->len == 2);
    g_assert_null(fake_last_report(f->transport)->inventory);

    inventory->os = g_strdup("linux");
    inventory->arch = g_strdup("x86_64");
    inventory->cpus = 32;
    inventory->memory_mib = 65536;
    einsora_agent_set_inventory(f->agent, inventory);
    WAIT_FOR(f->transport->reports->len == 3);
    g_assert_nonnull(fake_last_report(f->transport)->inventory);
    g_assert_cmpint(fake_last_report(f->transport)->inventory->cpus, ==, 32);
}

static gint64
test_clock(gpointer user_data)
{
    return *(gint64 *)user_data;
}

/* Every report says which build the agent is (the daemon's own version)
 * and its clock when it went out, read afresh for each. */
static void
test_reports_version_and_clock(Fixture *f, gconstpointer data)
{
    gint64 now_us = G_GINT64_CONSTANT(1764406000123456);
    g_autofree gchar *later = NULL;

    agent_start(f);
    /* The first report went out at once, on the real clock. */
    WAIT_FOR(f->transport->pending != NULL);
    g_assert_cmpstr(fake_last_report(f->transport)->agent_version, ==, EINSORA_VERSION);
    g_assert_true(einsora_timestamp_parse(fake_last_report(f->transport)->sent_at, NULL, NULL));

    einsora_agent_set_clock(f->agent, test_clock, &now_us);
    fake_answer(f->transport, state_new(1, NULL));
    WAIT_FOR(f->transport->pending != NULL && f->transport->reports->len == 2);
    g_assert_cmpstr(fake_last_report(f->transport)->agent_version, ==, EINSORA_VERSION);
    g_assert_cmpstr(fake_last_report(f->transport)->sent_at, ==, "2025-11-29T08:46:40.123456Z");

    now_us += 90 * G_USEC_PER_SEC;
    later = einsora_timestamp_format(now_us);
    fake_answer(f->transport, state_new(1, NULL));
    WAIT_FOR(f->transport->pending != NULL && f->transport->reports->len == 3);
    g_assert_cmpstr(fake_last_report(f->transport)->sent_at, ==, later);
}

static void
test_stop_cancels(Fixture *f, gconstpointer data)
{
    einsora_sim_driver_set_start_delay(f->driver->sim, 3000);
    agent_start(f);
    fake_answer(f->transport,
                state_new(1, workload_new(WORKLOAD_1, EINSORA_WORKLOAD_MODE_RUN, 1), NULL));
    WAIT_FOR(f->transport->pending != NULL && f->driver->n_start == 1);
    g_assert_cmpint(sim_status(f->driver, WORKLOAD_1), ==, EINSORA_STATUS_CODE_STARTING);

    /* Both the sync and the start are in flight: dropping the agent at
     * once is safe, and what it cancelled lands without it. */
    einsora_agent_stop(f->agent);
    g_assert_finalize_object(g_steal_pointer(&f->agent));
    WAIT_FOR(f->transport->pending == NULL &&
             sim_status(f->driver, WORKLOAD_1) != EINSORA_STATUS_CODE_STARTING);
    g_assert_cmpuint(f->transport->n_cancelled, >=, 1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_setup, func, fixture_teardown)
    ADD("/agent/run/starts-once-and-reports-running", test_run_starts_once);
    ADD("/agent/run/failed-attempt-not-restarted", test_failed_attempt_not_restarted);
    ADD("/agent/run/new-attempt-stops-old-first", test_new_attempt_stops_old_first);
    ADD("/agent/park/keeps-data", test_park_keeps_data);
    ADD("/agent/park/before-start-answers-the-attempt", test_park_before_start);
    ADD("/agent/remove/deletes-data", test_remove_deletes_data);
    ADD("/agent/unlisted/stopped-and-kept", test_unlisted_stopped_and_kept);
    ADD("/agent/refuse/driver-missing", test_driver_missing);
    ADD("/agent/refuse/isolation", test_isolation_refused);
    ADD("/agent/refuse/move", test_move_refused);
    ADD("/agent/refuse/gpu-busy-until-free", test_gpu_busy);
    ADD("/agent/refuse/gpu-busy-per-device", test_gpu_busy_per_device);
    ADD("/agent/sync/status-change-cuts-sync-short", test_status_change_cuts_sync_short);
    ADD("/agent/sync/announced-change-reported-at-once", test_announced_change_reported_at_once);
    ADD("/agent/access/in-process-only", test_access_in_process_only);
    ADD("/agent/sync/transport-error-backs-off", test_transport_error_backs_off);
    ADD("/agent/sync/inventory-change-reported", test_inventory_change_reported);
    ADD("/agent/sync/reports-version-and-clock", test_reports_version_and_clock);
    ADD("/agent/driver/start-timeout-failed-to-start", test_start_timeout);
    ADD("/agent/stop/cancels-cleanly", test_stop_cancels);
    ADD("/agent/outbox/replayed-until-acknowledged", test_outbox_replayed_until_acknowledged);
    ADD("/agent/outbox/goes-on-from-saved-desired-state", test_outbox_goes_on_from_saved);
#undef ADD

    return g_test_run();
}
