/* The hub (the agent backend) over a real SQLite store, with an injected
 * clock: Sync's long poll, desired state from the store, generations
 * across restarts, offline and settling rules, and what statuses mean to
 * the controller. Held syncs end on real main-loop timers that the tests
 * shorten. */
#include "einsora-controller.h"
#include "einsora-error.h"
#include "einsora-hub.h"
#include "einsora-protocol.h"
#include "einsora-reason.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-models.h"
#include "einsora-test-dir.h"
#include "einsora-uuid.h"

#define TENANT_A "0190b5d2-7c4e-7abc-8def-00000000000a"
#define START_US G_GINT64_CONSTANT(1764406000000000)
#define SECONDS(s) (G_GINT64_CONSTANT(s) * G_USEC_PER_SEC)
/* Long enough that a sync answered within a test's wait wasn't the long
 * poll. */
#define HELD_LONG_POLL_US SECONDS(30)
#define WAIT_MS 2000
#define HOLD_CHECK_MS 100

static const char test_catalog[] =
    "{\"version\": 1,"
    " \"regions\": [{\"name\": \"local\"}, {\"name\": \"far\"}],"
    " \"drivers\": ["
    "  {\"name\": \"sim\", \"kinds\": [\"notebook\", \"endpoint\", \"vm\"],"
    "   \"accelerators\": [\"cpu\", \"apple\", \"nvidia\"]},"
    "  {\"name\": \"docker\", \"kinds\": [\"notebook\", \"endpoint\"],"
    "   \"accelerators\": [\"cpu\", \"nvidia\"]},"
    "  {\"name\": \"macos-native\", \"kinds\": [\"notebook\", \"endpoint\"],"
    "   \"accelerators\": [\"cpu\", \"apple\"]}],"
    " \"classes\": ["
    "  {\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096, \"accelerator\": \"cpu\"},"
    "  {\"name\": \"l40s-48gb\", \"cpus\": 4, \"memory_mib\": 16384, \"devices\": 1,"
    "   \"accelerator\": \"nvidia\"},"
    "  {\"name\": \"apple-silicon-16gb\", \"cpus\": 4, \"memory_mib\": 16384, \"devices\": 1,"
    "   \"accelerator\": \"apple\"},"
    "  {\"name\": \"apple-silicon-32gb\", \"cpus\": 8, \"memory_mib\": 32768, \"devices\": 1,"
    "   \"accelerator\": \"apple\"},"
    "  {\"name\": \"apple-silicon-64gb\", \"cpus\": 8, \"memory_mib\": 65536, \"devices\": 1,"
    "   \"accelerator\": \"apple\"}],"
    " \"images\": ["
    "  {\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\", \"docker\"]},"
    "   \"nvidia\": {\"reference\": \"jupyter-cuda\", \"driver_refs\": [\"sim\", \"docker\"]},"
    "   \"apple\": {\"reference\": \"jupyter-metal\", \"driver_refs\": [\"macos-native\"]}}},"
    "  {\"name\": \"vllm\", \"kinds\": [\"endpoint\"], \"runtimes\": {"
    "   \"nvidia\": {\"reference\": \"vllm-cuda\", \"driver_refs\": [\"docker\", \"sim\"],"
    "    \"server\": \"vllm\"}}}],"
    " \"gpu_models\": ["
    "  {\"vendor\": \"nvidia\", \"model\": \"NVIDIA L40S\", \"memory_mib\": 46068,"
    "   \"class\": \"l40s-48gb\"}]}";

typedef struct {
    gint64 now_us;
} ManualClock;

static gint64
manual_now(gpointer user_data)
{
    return ((ManualClock *)user_data)->now_us;
}

typedef struct {
    gchar *dir;
    ManualClock clock;
    EinsoraCatalog *catalog;
    EinsoraSqliteStore *store;
    EinsoraService *service;
    EinsoraHub *hub;
    EinsoraActor *alice;
    gchar *box_id;    /* linux, region local */
    gchar *studio_id; /* darwin, region local */
    gchar *far_id;    /* linux, region far */
} Fixture;

/* A sync in flight, and how it ended. */
typedef struct {
    gboolean done;
    EinsoraDesiredState *state;
    GError *error;
} SyncResult;

static void
sync_result_clear(SyncResult *result)
{
    g_clear_pointer(&result->state, einsora_desired_state_free);
    g_clear_error(&result->error);
    result->done = FALSE;
}

static gchar *
add_machine(Fixture *f, const char *name, const char *region, const char *os)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    machine->id = einsora_uuid_v7_new(f->clock.now_us / 1000);
    machine->tenant_id = g_strdup(TENANT_A);
    machine->name = g_strdup(name);
    machine->region = g_strdup(region);
    machine->os = g_strdup(os);
    machine->cpus = 16;
    machine->memory_mib = 65536;
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = einsora_timestamp_format(f->clock.now_us);
    g_assert_true(einsora_store_insert_machine(EINSORA_STORE(f->store), machine, &error));
    g_assert_no_error(error);
    f->clock.now_us += 1000;
    return g_strdup(machine->id);
}

static EinsoraHub *
hub_new(Fixture *f)
{
    EinsoraHub *hub =
        einsora_hub_new(EINSORA_STORE(f->store), f->catalog, "local", manual_now, &f->clock);
    einsora_hub_set_long_poll(hub, HELD_LONG_POLL_US);
    return hub;
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(EinsoraTenant) tenant =
        einsora_tenant_new(TENANT_A, "acme", FALSE, "2025-11-29T08:46:40.000000Z");

    f->dir = einsora_test_dir_new();
    path = g_build_filename(f->dir, "einsora.db", NULL);
    f->clock.now_us = START_US;
    f->catalog = einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_assert_no_error(error);
    f->store = einsora_sqlite_store_open(path, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(f->store, START_US, &error));
    einsora_sqlite_store_set_clock(f->store, manual_now, &f->clock);
    g_assert_true(einsora_store_insert_tenant(EINSORA_STORE(f->store), tenant, &error));
    g_assert_true(
        einsora_store_set_quota(EINSORA_STORE(f->store), TENANT_A, "l40s-48gb", 100, &error));
    g_assert_true(einsora_store_set_quota(EINSORA_STORE(f->store), TENANT_A, "apple-silicon-32gb",
                                          100, &error));
    g_assert_no_error(error);
    f->service = einsora_service_new(EINSORA_STORE(f->store), f->catalog, manual_now, &f->clock);
    {
        g_autoptr(EinsoraModelStore) models = einsora_test_model_store_new(f->dir, "tiny");
        einsora_service_set_model_store(f->service, models, TENANT_A);
    }
    f->alice = einsora_actor_new(TENANT_A, "u-a", "alice@acme.example", "browser session");
    f->box_id = add_machine(f, "box", "local", "linux");
    f->studio_id = add_machine(f, "studio", "local", "darwin");
    f->far_id = add_machine(f, "faraway", "far", "linux");
    f->hub = hub_new(f);
}

/* Drains what the hub scheduled (a wake), so nothing outlives the test. */
static void
drain(void)
{
    while (g_main_context_iteration(NULL, FALSE))
        ;
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    drain();
    /* A held sync holds the hub: every test ends the syncs it started. */
    g_assert_finalize_object(f->hub);
    g_clear_object(&f->service);
    g_clear_object(&f->store);
    g_clear_object(&f->catalog);
    einsora_actor_free(f->alice);
    g_free(f->box_id);
    g_free(f->studio_id);
    g_free(f->far_id);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
}

/* Reports and inventories. */

static EinsoraInventory *
linux_inventory(void)
{
    EinsoraInventory *inventory = einsora_inventory_new();
    const char *drivers[] = {"sim", "docker", NULL};

    inventory->os = g_strdup("linux");
    inventory->arch = g_strdup("x86_64");
    inventory->cpus = 32;
    inventory->memory_mib = 131072;
    for (guint i = 0; i < 2; i++) {
        EinsoraInventoryGpu *gpu = einsora_inventory_gpu_new();
        gpu->vendor = g_strdup("nvidia");
        gpu->model = g_strdup("NVIDIA L40S");
        gpu->memory_mib = 46068;
        g_ptr_array_add(inventory->gpus, gpu);
    }
    {
        /* Not in the catalog: offered as nothing. */
        EinsoraInventoryGpu *gpu = einsora_inventory_gpu_new();
        gpu->vendor = g_strdup("nvidia");
        gpu->model = g_strdup("NVIDIA GeForce GT 710");
        gpu->memory_mib = 2048;
        g_ptr_array_add(inventory->gpus, gpu);
    }
    g_strfreev(inventory->drivers);
    inventory->drivers = g_strdupv((gchar **)drivers);
    return inventory;
}

static EinsoraInventory *
mac_inventory(gint64 memory_mib)
{
    EinsoraInventory *inventory = einsora_inventory_new();
    EinsoraInventoryGpu *gpu = einsora_inventory_gpu_new();
    const char *drivers[] = {"macos-native", "sim", NULL};

    inventory->os = g_strdup("darwin");
    inventory->arch = g_strdup("arm64");
    inventory->cpus = 12;
    inventory->memory_mib = memory_mib;
    gpu->vendor = g_strdup("apple");
    gpu->model = g_strdup("Apple M2 Max");
    gpu->memory_mib = memory_mib;
    g_ptr_array_add(inventory->gpus, gpu);
    g_strfreev(inventory->drivers);
    inventory->drivers = g_strdupv((gchar **)drivers);
    return inventory;
}

/* Takes @inventory. */
static EinsoraSyncReport *
report_new(const char *machine_id, gint64 applied_generation, EinsoraInventory *inventory)
{
    EinsoraSyncReport *report = einsora_sync_report_new();

    report->machine_id = g_strdup(machine_id);
    report->applied_generation = applied_generation;
    report->inventory = inventory;
    return report;
}

static void
report_add_status(EinsoraSyncReport *report, const char *workload_id, gint64 attempt,
                  EinsoraWorkloadMode mode, EinsoraStatusCode code, gint64 applied_generation)
{
    EinsoraWorkloadStatus *status = einsora_workload_status_new();

    status->workload_id = g_strdup(workload_id);
    status->attempt = attempt;
    status->mode = mode;
    status->code = code;
    status->applied_generation = applied_generation;
    g_ptr_array_add(report->statuses, status);
}

/* Syncing. */

static void
on_synced(GObject *source, GAsyncResult *res, gpointer user_data)
{
    SyncResult *result = user_data;

    result->state =
        einsora_sync_transport_sync_finish(EINSORA_SYNC_TRANSPORT(source), res, &result->error);
    result->done = TRUE;
}

static void
sync_start(Fixture *f, EinsoraHub *hub, const EinsoraSyncReport *report, GCancellable *cancellable,
           SyncResult *result)
{
    sync_result_clear(result);
    einsora_sync_transport_sync_async(EINSORA_SYNC_TRANSPORT(hub), report, cancellable, on_synced,
                                      result);
}

static gboolean
on_deadline(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

/* Runs the main loop until the sync ends or @ms of real time pass;
 * returns whether it ended. */
static gboolean
wait_for(SyncResult *result, guint ms)
{
    gboolean deadline = FALSE;
    guint id = g_timeout_add(ms, on_deadline, &deadline);

    while (!result->done && !deadline)
        g_main_context_iteration(NULL, TRUE);
    if (!deadline)
        g_source_remove(id);
    return result->done;
}

/* Syncs and expects an answer at once (well before the long poll). */
static EinsoraDesiredState *
sync_now(Fixture *f, EinsoraHub *hub, const EinsoraSyncReport *report)
{
    SyncResult result = {0};

    sync_start(f, hub, report, NULL, &result);
    g_assert_true(wait_for(&result, WAIT_MS));
    g_assert_no_error(result.error);
    g_assert_nonnull(result.state);
    return g_steal_pointer(&result.state);
}

/* The machine's first sync: its inventory, nothing applied yet. */
static EinsoraDesiredState *
connect_machine(Fixture *f, const char *machine_id, EinsoraInventory *inventory)
{
    g_autoptr(EinsoraSyncReport) report = report_new(machine_id, 0, inventory);
    return sync_now(f, f->hub, report);
}

static void
assert_held(SyncResult *result)
{
    g_assert_false(wait_for(result, HOLD_CHECK_MS));
}

static void
cancel_and_wait(GCancellable *cancellable, SyncResult *result)
{
    g_cancellable_cancel(cancellable);
    g_assert_true(wait_for(result, WAIT_MS));
    g_assert_error(result->error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_null(result->state);
}

/* Workloads, driven through the service. */

static EinsoraWorkload *
get(Fixture *f, const char *id)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkload *workload =
        einsora_service_get_workload(f->service, TENANT_A, id, TRUE, &error);
    g_assert_no_error(error);
    return workload;
}

static gchar *
launch(Fixture *f, const char *kind, const char *gpu_class, const char *image)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest request = {
        kind, "w",  gpu_class, image,
        NULL, NULL, NULL,      g_str_equal(kind, "endpoint") ? "tiny" : NULL};
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, f->alice, &request, &error);

    g_assert_no_error(error);
    return g_strdup(workload->id);
}

static void
move_to(Fixture *f, const char *id, EinsoraWorkloadState to)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = get(f, id);

    f->clock.now_us += 1000;
    g_assert_true(
        einsora_service_transition(f->service, workload, to, "moved by a test", NULL, &error));
    g_assert_no_error(error);
}

/* Admits a pending or queued workload onto @machine_id, on its GPUs
 * @gpu_mask (0: none chosen). */
static void
place_on_gpus(Fixture *f, const char *id, const char *machine_id, const char *driver,
              guint64 gpu_mask)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = get(f, id);
    EinsoraPlacement placement = {workload->gpu_class, machine_id, driver, gpu_mask};

    f->clock.now_us += 1000;
    g_assert_true(einsora_service_transition(
        f->service, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, "placed", &placement, &error));
    g_assert_no_error(error);
}

static void
place(Fixture *f, const char *id, const char *machine_id, const char *driver)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = get(f, id);
    EinsoraPlacement placement = {workload->gpu_class, machine_id, driver};

    f->clock.now_us += 1000;
    g_assert_true(einsora_service_transition(
        f->service, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, "placed", &placement, &error));
    g_assert_no_error(error);
}

static EinsoraWorkloadSpec *
spec_of(Fixture *f, const char *id)
{
    g_autoptr(EinsoraWorkload) workload = get(f, id);
    EinsoraWorkloadSpec *spec = einsora_workload_spec_new();

    spec->workload_id = g_strdup(workload->id);
    spec->tenant_id = g_strdup(workload->tenant_id);
    spec->region = g_strdup(workload->region);
    spec->kind = workload->kind;
    spec->placed_class = g_strdup(workload->placed_class);
    spec->image = g_strdup(workload->image);
    spec->machine_id = g_strdup(workload->machine_id);
    spec->driver = g_strdup(workload->driver);
    spec->attempt = workload->attempt;
    return spec;
}

/* An agent's side of the handover: what a driver says about the way
 * into a workload, for one attempt. */
#define TEST_TYPE_ACCESS (test_access_get_type())
G_DECLARE_FINAL_TYPE(TestAccess, test_access, TEST, ACCESS, GObject)

struct _TestAccess {
    GObject parent_instance;
    gchar *workload_id;
    gint64 attempt;
};

static void test_access_iface_init(EinsoraAccessSourceInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(TestAccess, test_access, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_ACCESS_SOURCE,
                                                    test_access_iface_init))

static void
test_access_finalize(GObject *object)
{
    g_free(TEST_ACCESS(object)->workload_id);
    G_OBJECT_CLASS(test_access_parent_class)->finalize(object);
}

static void
test_access_class_init(TestAccessClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = test_access_finalize;
}

static void
test_access_init(TestAccess *self)
{
}

static gboolean
test_access_lookup(EinsoraAccessSource *source, const char *workload_id, gint64 *attempt,
                   gchar **socket_path, gchar **token)
{
    TestAccess *self = TEST_ACCESS(source);

    if (g_strcmp0(workload_id, self->workload_id) != 0)
        return FALSE;
    *attempt = self->attempt;
    *socket_path = g_strdup("/run/test/notebook.sock");
    *token = g_strdup("the-workload-token");
    return TRUE;
}

static void
test_access_iface_init(EinsoraAccessSourceInterface *iface)
{
    iface->lookup = test_access_lookup;
}

/* Through the interface the access proxy uses. */
static gboolean
einsora_access_lookup_checked(Fixture *f, const char *id, gchar **socket_path, gchar **token,
                              GError **error)
{
    gint64 attempt = 0;
    gboolean found = einsora_workload_access_lookup(EINSORA_WORKLOAD_ACCESS(f->hub), TENANT_A, id,
                                                    &attempt, socket_path, token, error);

    if (found)
        g_assert_cmpint(attempt, ==, 1);
    return found;
}

static void
assert_no_access(Fixture *f, const char *tenant_id, const char *id)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *token = NULL;

    g_assert_false(
        einsora_hub_lookup_access(f->hub, tenant_id, id, NULL, &socket_path, &token, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(socket_path);
    g_assert_null(token);
}

/* The way into a workload comes from the agent in this process, and only
 * while the store has it running there, for the agent's attempt, for its
 * own tenant. */
static void
test_access_handover(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(TestAccess) agent = g_object_new(TEST_TYPE_ACCESS, NULL);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *token = NULL;

    agent->workload_id = g_strdup(id);
    agent->attempt = 1;
    assert_no_access(f, TENANT_A, id); /* no agent here yet */
    einsora_hub_set_access_source(f->hub, f->box_id, EINSORA_ACCESS_SOURCE(agent));
    assert_no_access(f, TENANT_A, id); /* pending */
    place(f, id, f->box_id, "sim");
    assert_no_access(f, TENANT_A, id); /* provisioning */
    move_to(f, id, EINSORA_WORKLOAD_STATE_RUNNING);
    g_assert_true(einsora_access_lookup_checked(f, id, &socket_path, &token, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(socket_path, ==, "/run/test/notebook.sock");
    g_assert_cmpstr(token, ==, "the-workload-token");
    /* Another tenant's is a 404. */
    assert_no_access(f, "0190b5d2-7c4e-7abc-8def-00000000000b", id);
    /* The agent still runs an older attempt: nothing. */
    agent->attempt = 0;
    assert_no_access(f, TENANT_A, id);
    agent->attempt = 1;
    /* Another machine's agent can't speak for it. */
    einsora_hub_set_access_source(f->hub, f->studio_id, EINSORA_ACCESS_SOURCE(agent));
    assert_no_access(f, TENANT_A, id);
    einsora_hub_set_access_source(f->hub, f->box_id, EINSORA_ACCESS_SOURCE(agent));
    move_to(f, id, EINSORA_WORKLOAD_STATE_STOPPING);
    assert_no_access(f, TENANT_A, id);
    move_to(f, id, EINSORA_WORKLOAD_STATE_STOPPED);
    assert_no_access(f, TENANT_A, id);
    /* Held weakly: a gone agent hands over nothing. */
    g_clear_object(&agent);
    assert_no_access(f, TENANT_A, id);
}

static EinsoraObservation
observe(Fixture *f, EinsoraHub *hub, const char *id)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkloadSpec) spec = spec_of(f, id);
    EinsoraObservation observation = {0};

    g_assert_true(einsora_backend_observe(EINSORA_BACKEND(hub), spec, &observation, &error));
    g_assert_no_error(error);
    return observation;
}

static gboolean
is_listed(const EinsoraDesiredState *state, const char *id)
{
    for (guint i = 0; i < state->workloads->len; i++) {
        const EinsoraDesiredWorkload *workload = g_ptr_array_index(state->workloads, i);
        if (g_strcmp0(workload->workload_id, id) == 0)
            return TRUE;
    }
    return FALSE;
}

static const EinsoraDesiredWorkload *
find_desired(const EinsoraDesiredState *state, const char *id)
{
    for (guint i = 0; i < state->workloads->len; i++) {
        const EinsoraDesiredWorkload *workload = g_ptr_array_index(state->workloads, i);
        if (g_strcmp0(workload->workload_id, id) == 0)
            return workload;
    }
    g_error("workload %s isn't in the desired state", id);
}

static EinsoraWorkloadMode
mode_in(const EinsoraDesiredState *state, const char *id)
{
    return find_desired(state, id)->mode;
}

static EinsoraCapacity *
capacity_of(EinsoraHub *hub)
{
    g_autoptr(GError) error = NULL;
    EinsoraCapacity *capacity = einsora_backend_capacity(EINSORA_BACKEND(hub), "local", &error);

    g_assert_no_error(error);
    g_assert_nonnull(capacity);
    g_assert_nonnull(capacity->machines);
    return capacity;
}

static const EinsoraMachineCapacity *
machine_in(const EinsoraCapacity *capacity, const char *machine_id)
{
    for (guint i = 0; i < capacity->machines->len; i++) {
        const EinsoraMachineCapacity *machine = g_ptr_array_index(capacity->machines, i);
        if (g_strcmp0(machine->machine->id, machine_id) == 0)
            return machine;
    }
    g_error("machine %s isn't offered", machine_id);
}

static gboolean
online(EinsoraHub *hub, const char *machine_id)
{
    g_autoptr(EinsoraCapacity) capacity = capacity_of(hub);
    return machine_in(capacity, machine_id)->online;
}

/* Tests. */

static void
test_sync_unknown_machine(Fixture *f, gconstpointer data)
{
    g_autofree gchar *stranger = einsora_uuid_v7_new(START_US / 1000);
    g_autoptr(EinsoraSyncReport) report = report_new(stranger, 0, linux_inventory());
    SyncResult result = {0};

    sync_start(f, f->hub, report, NULL, &result);
    g_assert_true(wait_for(&result, WAIT_MS));
    g_assert_error(result.error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(result.state);
    sync_result_clear(&result);
}

/* A machine registered in another region is another hub's: refused, and
 * nothing about it is recorded. */
static void
test_sync_other_region(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSyncReport) report = report_new(f->far_id, 0, linux_inventory());
    g_autoptr(EinsoraMachine) machine = NULL;
    SyncResult result = {0};

    sync_start(f, f->hub, report, NULL, &result);
    g_assert_true(wait_for(&result, WAIT_MS));
    g_assert_error(result.error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    sync_result_clear(&result);

    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->far_id, &error);
    g_assert_no_error(error);
    g_assert_null(machine->last_seen_at);
    g_assert_null(machine->inventory);
}

static void
test_sync_records_seen(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraSyncReport) later = NULL;
    g_autofree gchar *seen_at = einsora_timestamp_format(START_US + SECONDS(5));
    g_autofree gchar *later_at = einsora_timestamp_format(START_US + SECONDS(7));

    f->clock.now_us = START_US + SECONDS(5);
    state = connect_machine(f, f->box_id, linux_inventory());
    g_assert_cmpstr(state->machine_id, ==, f->box_id);
    g_assert_cmpint(state->workloads->len, ==, 0);
    g_assert_cmpint(state->generation, >=, (START_US + SECONDS(5)) / 1000);

    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->box_id, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(machine->last_seen_at, ==, seen_at);
    g_assert_nonnull(machine->inventory);
    g_assert_nonnull(strstr(machine->inventory, "NVIDIA L40S"));
    g_clear_pointer(&machine, einsora_machine_free);

    /* Without an inventory: seen again, the inventory kept. */
    f->clock.now_us = START_US + SECONDS(7);
    later = report_new(f->box_id, 0, NULL);
    g_clear_pointer(&state, einsora_desired_state_free);
    state = sync_now(f, f->hub, later);
    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->box_id, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(machine->last_seen_at, ==, later_at);
    g_assert_nonnull(strstr(machine->inventory, "NVIDIA L40S"));
}

/* The hub's warnings about agents' clocks, kept instead of printed
 * (g_test_init makes a warning fatal); every other line goes on to the
 * default writer. */
static GPtrArray *clock_warnings;

static GLogWriterOutput
keep_clock_warnings(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                    gpointer user_data)
{
    const char *domain = NULL;
    const char *message = NULL;

    for (gsize i = 0; i < n_fields; i++) {
        if (g_str_equal(fields[i].key, "GLIB_DOMAIN"))
            domain = fields[i].value;
        else if (g_str_equal(fields[i].key, "MESSAGE"))
            message = fields[i].value;
    }
    if ((level & G_LOG_LEVEL_WARNING) && g_strcmp0(domain, "einsora-hub") == 0 && message != NULL &&
        strstr(message, "clock") != NULL) {
        g_ptr_array_add(clock_warnings, g_strdup(message));
        return G_LOG_WRITER_HANDLED;
    }
    return g_log_writer_default(level, fields, n_fields, user_data);
}

/* A report from an agent of @version whose clock reads @offset_us off
 * the hub's (negative: behind it); NULL @version sends neither, as an
 * agent from before docs/adr/0057. */
static EinsoraMachine *
sync_with_clock(Fixture *f, EinsoraHub *hub, const char *version, gint64 offset_us)
{
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, 0, NULL);
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autoptr(GError) error = NULL;
    EinsoraMachine *machine;

    if (version != NULL) {
        report->agent_version = g_strdup(version);
        report->sent_at = einsora_timestamp_format(f->clock.now_us + offset_us);
    }
    state = sync_now(f, hub, report);
    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->box_id, &error);
    g_assert_no_error(error);
    f->clock.now_us += SECONDS(5);
    return machine;
}

/* What an agent says of itself is stored with the machine: its version,
 * and its clock's offset (the hub's time on receiving minus the agent's
 * on sending). Past ±30 s the hub warns once, when it crosses, not on
 * every sync, nor again after a restart; an agent too old to say leaves
 * neither. */
static void
test_sync_records_agent_health(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraDesiredState) state = NULL;

    g_ptr_array_set_size(clock_warnings, 0);
    state = connect_machine(f, f->box_id, linux_inventory());
    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->box_id, NULL);
    g_assert_null(machine->agent_version);
    g_assert_false(machine->has_clock_offset);
    g_clear_pointer(&machine, einsora_machine_free);

    /* 1.5 s behind, in transit or on its clock: within the bound. */
    machine = sync_with_clock(f, f->hub, "0.1.0", -1500 * 1000);
    g_assert_cmpstr(machine->agent_version, ==, "0.1.0");
    g_assert_true(machine->has_clock_offset);
    g_assert_cmpint(machine->clock_offset_ms, ==, 1500);
    g_assert_false(einsora_machine_clock_skewed(machine));
    g_assert_cmpuint(clock_warnings->len, ==, 0);
    g_clear_pointer(&machine, einsora_machine_free);

    /* Two minutes behind: skewed, and said once. */
    machine = sync_with_clock(f, f->hub, "0.1.1", -SECONDS(120));
    g_assert_cmpstr(machine->agent_version, ==, "0.1.1");
    g_assert_cmpint(machine->clock_offset_ms, ==, 120000);
    g_assert_true(einsora_machine_clock_skewed(machine));
    g_assert_cmpuint(clock_warnings->len, ==, 1);
    g_assert_nonnull(strstr(g_ptr_array_index(clock_warnings, 0), "120.0 s behind"));
    g_assert_nonnull(strstr(g_ptr_array_index(clock_warnings, 0), f->box_id));
    g_clear_pointer(&machine, einsora_machine_free);
    machine = sync_with_clock(f, f->hub, "0.1.1", -SECONDS(119));
    g_assert_true(einsora_machine_clock_skewed(machine));
    g_clear_pointer(&machine, einsora_machine_free);
    /* Ahead instead, still past the bound: no crossing, no warning. */
    machine = sync_with_clock(f, f->hub, "0.1.1", SECONDS(45));
    g_assert_cmpint(machine->clock_offset_ms, ==, -45000);
    g_assert_true(einsora_machine_clock_skewed(machine));
    g_assert_cmpuint(clock_warnings->len, ==, 1);
    g_clear_pointer(&machine, einsora_machine_free);
    /* A restarted hub knows from the store that it was said. */
    {
        g_autoptr(EinsoraHub) restarted = hub_new(f);
        g_autoptr(EinsoraMachine) again = sync_with_clock(f, restarted, "0.1.1", SECONDS(45));
        g_assert_true(einsora_machine_clock_skewed(again));
        g_assert_cmpuint(clock_warnings->len, ==, 1);
        drain();
        g_assert_finalize_object(g_steal_pointer(&restarted));
    }

    /* Back within 30 s (the bound itself included), then past it again:
     * a second warning, ahead this time. */
    machine = sync_with_clock(f, f->hub, "0.1.1", SECONDS(30));
    g_assert_cmpint(machine->clock_offset_ms, ==, -30000);
    g_assert_false(einsora_machine_clock_skewed(machine));
    g_clear_pointer(&machine, einsora_machine_free);
    machine = sync_with_clock(f, f->hub, "0.1.1", SECONDS(31));
    g_assert_true(einsora_machine_clock_skewed(machine));
    g_assert_cmpuint(clock_warnings->len, ==, 2);
    g_assert_nonnull(strstr(g_ptr_array_index(clock_warnings, 1), "31.0 s ahead of"));
    g_clear_pointer(&machine, einsora_machine_free);

    /* An older agent says neither: nothing of the last one is kept. */
    machine = sync_with_clock(f, f->hub, NULL, 0);
    g_assert_null(machine->agent_version);
    g_assert_false(machine->has_clock_offset);
    g_assert_false(einsora_machine_clock_skewed(machine));
    g_assert_cmpuint(clock_warnings->len, ==, 2);
}

/* Every state maps to run, park or remove, with what running needs. */
static void
test_desired_modes(Fixture *f, gconstpointer data)
{
    static const struct {
        const char *kind;
        guint n;
        EinsoraWorkloadState path[6]; /* after provisioning */
        EinsoraWorkloadMode mode;
    } cases[] = {
#define S(x) EINSORA_WORKLOAD_STATE_##x
        {"notebook", 0, {0}, EINSORA_WORKLOAD_MODE_RUN},
        {"notebook", 1, {S(RUNNING)}, EINSORA_WORKLOAD_MODE_RUN},
        {"notebook", 2, {S(RUNNING), S(STOPPING)}, EINSORA_WORKLOAD_MODE_PARK},
        {"notebook", 3, {S(RUNNING), S(STOPPING), S(STOPPED)}, EINSORA_WORKLOAD_MODE_PARK},
        {"notebook",
         4,
         {S(RUNNING), S(STOPPING), S(STOPPED), S(PENDING)},
         EINSORA_WORKLOAD_MODE_PARK},
        {"notebook",
         5,
         {S(RUNNING), S(STOPPING), S(STOPPED), S(PENDING), S(QUEUED)},
         EINSORA_WORKLOAD_MODE_PARK},
        {"notebook", 1, {S(FAILED)}, EINSORA_WORKLOAD_MODE_PARK},
        {"notebook", 2, {S(RUNNING), S(DELETING)}, EINSORA_WORKLOAD_MODE_REMOVE},
        {"endpoint", 1, {S(RUNNING)}, EINSORA_WORKLOAD_MODE_RUN},
        {"endpoint", 2, {S(RUNNING), S(STOPPING)}, EINSORA_WORKLOAD_MODE_PARK},
        {"endpoint", 3, {S(RUNNING), S(STOPPING), S(STOPPED)}, EINSORA_WORKLOAD_MODE_REMOVE},
        {"endpoint", 1, {S(FAILED)}, EINSORA_WORKLOAD_MODE_PARK},
#undef S
    };
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autofree gchar *gone = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *elsewhere = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *unplaced = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *on_gpu_1 = launch(f, "notebook", "l40s-48gb", "jupyter");
    const EinsoraDesiredWorkload *workload;

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *image = g_str_equal(cases[i].kind, "endpoint") ? "vllm" : "jupyter";
        gchar *id = launch(f, cases[i].kind, "l40s-48gb", image);

        place(f, id, f->box_id, "docker");
        for (guint j = 0; j < cases[i].n; j++)
            move_to(f, id, cases[i].path[j]);
        g_ptr_array_add(ids, id);
    }
    /* Deleted, on another machine, or never placed: not listed. */
    place(f, gone, f->box_id, "docker");
    move_to(f, gone, EINSORA_WORKLOAD_STATE_DELETING);
    move_to(f, gone, EINSORA_WORKLOAD_STATE_DELETED);
    place(f, elsewhere, f->studio_id, "sim");
    place_on_gpus(f, on_gpu_1, f->box_id, "docker", 0x2);
    /* Two GPUs for a one-GPU class: refused where it is written. */
    {
        g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
        g_autoptr(EinsoraWorkload) wrong = get(f, id);
        EinsoraPlacement placement = {wrong->gpu_class, f->box_id, "docker", 0x3};
        g_autoptr(GError) error = NULL;

        g_assert_false(einsora_service_transition(
            f->service, wrong, EINSORA_WORKLOAD_STATE_PROVISIONING, "placed", &placement, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
    }

    state = connect_machine(f, f->box_id, linux_inventory());
    g_assert_cmpint(state->workloads->len, ==, G_N_ELEMENTS(cases) + 1);
    /* The GPUs placement chose go with it. */
    g_assert_cmphex(find_desired(state, on_gpu_1)->gpu_mask, ==, 0x2);
    g_assert_cmphex(find_desired(state, ids->pdata[1])->gpu_mask, ==, 0);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_message("case %u: %s", i, cases[i].kind);
        g_assert_cmpint(mode_in(state, ids->pdata[i]), ==, cases[i].mode);
    }
    g_assert_false(is_listed(state, gone));
    g_assert_false(is_listed(state, elsewhere));
    g_assert_false(is_listed(state, unplaced));

    workload = find_desired(state, ids->pdata[1]);
    g_assert_cmpstr(workload->tenant_id, ==, TENANT_A);
    g_assert_cmpint(workload->attempt, ==, 1);
    g_assert_cmpint(workload->kind, ==, EINSORA_WORKLOAD_KIND_NOTEBOOK);
    g_assert_cmpstr(workload->driver, ==, "docker");
    g_assert_cmpstr(workload->placed_class, ==, "l40s-48gb");
    g_assert_cmpstr(workload->image, ==, "jupyter");
    g_assert_cmpstr(workload->runtime_reference, ==, "jupyter-cuda");
    g_assert_cmpint(workload->cpus, ==, 4);
    g_assert_cmpint(workload->memory_mib, ==, 16384);
    g_assert_cmpint(workload->devices, ==, 1);
    workload = find_desired(state, ids->pdata[8]);
    g_assert_cmpint(workload->kind, ==, EINSORA_WORKLOAD_KIND_ENDPOINT);
    g_assert_cmpstr(workload->runtime_reference, ==, "vllm-cuda");
    g_assert_cmpstr(workload->server, ==, "vllm");
    /* An endpoint's model goes with it: by name and by its file's digest. */
    g_assert_cmpstr(workload->model, ==, "tiny");
    g_assert_true(einsora_desired_workload_digest_is_valid(workload->model_digest));

    /* What the agent receives parses back as the protocol says. */
    {
        g_autoptr(JsonNode) node = einsora_desired_state_to_json(state);
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraDesiredState) parsed = einsora_desired_state_from_json(node, &error);
        g_assert_no_error(error);
        g_assert_cmpint(parsed->workloads->len, ==, state->workloads->len);
    }
}

static void
test_long_poll_held_when_unchanged(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraDesiredState) first = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, first->generation, NULL);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autoptr(EinsoraSyncReport) stale = report_new(f->box_id, first->generation - 1, NULL);
    g_autoptr(EinsoraDesiredState) again = NULL;
    SyncResult result = {0};

    /* An agent behind the desired state is answered at once. */
    again = sync_now(f, f->hub, stale);
    g_assert_cmpint(again->generation, ==, first->generation);

    sync_start(f, f->hub, report, cancellable, &result);
    assert_held(&result);
    /* Cancelling (to report something new) ends it at once. */
    cancel_and_wait(cancellable, &result);
    sync_result_clear(&result);
}

/* run, park and remove each wake the machine's held sync, which then
 * answers with the new desired state; a store change without a wake
 * waits, and a wake without a change keeps holding. */
static void
test_long_poll_wakes(Fixture *f, gconstpointer data)
{
    static const struct {
        const char *name;
        gboolean (*call)(EinsoraBackend *, const EinsoraWorkloadSpec *, GError **);
        guint n;
        EinsoraWorkloadState to[2];
        EinsoraWorkloadMode mode;
    } steps[] = {
        {"run",
         einsora_backend_run,
         1,
         {EINSORA_WORKLOAD_STATE_PROVISIONING},
         EINSORA_WORKLOAD_MODE_RUN},
        {"park",
         einsora_backend_park,
         2,
         {EINSORA_WORKLOAD_STATE_RUNNING, EINSORA_WORKLOAD_STATE_STOPPING},
         EINSORA_WORKLOAD_MODE_PARK},
        {"remove",
         einsora_backend_remove,
         1,
         {EINSORA_WORKLOAD_STATE_DELETING},
         EINSORA_WORKLOAD_MODE_REMOVE},
    };
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) state = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    SyncResult result = {0};

    g_assert_cmpint(state->workloads->len, ==, 0);
    for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, state->generation, NULL);
        g_autoptr(EinsoraWorkloadSpec) spec = NULL;
        g_autoptr(GError) error = NULL;
        gint64 before = state->generation;

        g_test_message("wake by %s", steps[i].name);
        sync_start(f, f->hub, report, cancellable, &result);
        assert_held(&result);

        for (guint j = 0; j < steps[i].n; j++) {
            if (steps[i].to[j] == EINSORA_WORKLOAD_STATE_PROVISIONING)
                place(f, id, f->box_id, "docker");
            else
                move_to(f, id, steps[i].to[j]);
        }
        /* Changed in the store, but nobody woke it. */
        assert_held(&result);
        spec = spec_of(f, id);
        g_assert_true(steps[i].call(EINSORA_BACKEND(f->hub), spec, &error));
        g_assert_no_error(error);
        g_assert_true(wait_for(&result, WAIT_MS));
        g_assert_no_error(result.error);
        g_assert_cmpint(result.state->generation, >, before);
        g_assert_cmpint(mode_in(result.state, id), ==, steps[i].mode);
        g_clear_pointer(&state, einsora_desired_state_free);
        state = g_steal_pointer(&result.state);
        sync_result_clear(&result);
    }

    /* A wake that changes nothing keeps the sync held. */
    {
        g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, state->generation, NULL);
        g_autoptr(EinsoraWorkloadSpec) spec = spec_of(f, id);

        sync_start(f, f->hub, report, cancellable, &result);
        g_assert_true(einsora_backend_run(EINSORA_BACKEND(f->hub), spec, NULL));
        assert_held(&result);
        cancel_and_wait(cancellable, &result);
        sync_result_clear(&result);
    }
}

static gboolean
stay_busy(gpointer user_data)
{
    (*(guint *)user_data)++;
    return G_SOURCE_CONTINUE;
}

/* A loop that always has something ready at default priority (a daemon
 * holding thousands of connections) still gets to the wake at once. */
static void
test_long_poll_wakes_when_busy(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) state = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, state->generation, NULL);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autoptr(EinsoraWorkloadSpec) spec = NULL;
    g_autoptr(GSource) busy = g_idle_source_new();
    SyncResult result = {0};
    guint spins = 0;

    sync_start(f, f->hub, report, cancellable, &result);
    assert_held(&result);
    g_source_set_priority(busy, G_PRIORITY_DEFAULT);
    g_source_set_callback(busy, stay_busy, &spins, NULL);
    g_source_attach(busy, NULL);
    place(f, id, f->box_id, "docker");
    spec = spec_of(f, id);
    g_assert_true(einsora_backend_run(EINSORA_BACKEND(f->hub), spec, NULL));
    g_assert_true(wait_for(&result, WAIT_MS));
    g_source_destroy(busy);
    g_assert_cmpuint(spins, >, 0);
    g_assert_no_error(result.error);
    g_assert_cmpint(mode_in(result.state, id), ==, EINSORA_WORKLOAD_MODE_RUN);
    sync_result_clear(&result);
}

/* The access proxy waits for a tunnel stream (docs/adr/0059): a machine
 * whose agent opens them when asked has its held sync answered at once,
 * same generation, asking for them; the next answer asks for none. One
 * whose reports don't say so isn't asked: its sync stays held. */
static void
test_long_poll_wants_tunnels(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraDesiredState) first = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, first->generation, NULL);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    SyncResult result = {0};
    SyncResult next = {0};

    sync_start(f, f->hub, report, NULL, &result);
    assert_held(&result);
    /* Its reports so far didn't say it opens streams. */
    g_assert_false(einsora_hub_want_tunnels(f->hub, f->box_id, 1));
    g_assert_false(einsora_hub_want_tunnels(f->hub, "no-such-machine", 1));
    g_assert_false(wait_for(&result, 50));

    report->tunnels = TRUE;
    sync_start(f, f->hub, report, NULL, &next); /* supersedes the first */
    g_assert_true(wait_for(&result, WAIT_MS));
    sync_result_clear(&result);
    assert_held(&next);
    g_assert_true(einsora_hub_want_tunnels(f->hub, f->box_id, 2));
    g_assert_true(wait_for(&next, WAIT_MS));
    g_assert_no_error(next.error);
    g_assert_cmpint(next.state->generation, ==, first->generation);
    g_assert_cmpint(next.state->open_tunnels, ==, 2);
    sync_result_clear(&next);

    /* Asked once: the sync after that is held again. */
    sync_start(f, f->hub, report, NULL, &next);
    assert_held(&next);
    g_assert_true(einsora_hub_want_tunnels(f->hub, f->box_id, 1));
    g_assert_true(wait_for(&next, WAIT_MS));
    g_assert_cmpint(next.state->open_tunnels, ==, 1);
    sync_result_clear(&next);
    sync_start(f, f->hub, report, cancellable, &next);
    assert_held(&next);
    cancel_and_wait(cancellable, &next);
    sync_result_clear(&next);
}

/* The long poll ends with the same desired state: the agent learns the
 * hub is there. */
static void
test_long_poll_timeout(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraDesiredState) first = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, first->generation, NULL);
    SyncResult result = {0};

    einsora_hub_set_long_poll(f->hub, 300 * 1000);
    sync_start(f, f->hub, report, NULL, &result);
    assert_held(&result);
    g_assert_true(wait_for(&result, WAIT_MS));
    g_assert_no_error(result.error);
    g_assert_cmpint(result.state->generation, ==, first->generation);
    g_assert_cmpstr(result.state->machine_id, ==, f->box_id);
    sync_result_clear(&result);
}

/* A second sync from the machine answers the one still waiting. */
static void
test_long_poll_superseded(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraDesiredState) first = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, first->generation, NULL);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    SyncResult old = {0};
    SyncResult next = {0};

    sync_start(f, f->hub, report, NULL, &old);
    assert_held(&old);
    sync_start(f, f->hub, report, cancellable, &next);
    g_assert_true(wait_for(&old, WAIT_MS));
    g_assert_no_error(old.error);
    g_assert_cmpint(old.state->generation, ==, first->generation);
    assert_held(&next);
    cancel_and_wait(cancellable, &next);
    sync_result_clear(&old);
    sync_result_clear(&next);
}

static double
answered(EinsoraMetric *metric, const char *answer)
{
    return einsora_metric_get(metric, (const char *const[]){answer, NULL});
}

/* The syncs held now, and every answer by how it came: a new desired
 * state, the long poll's end, a newer sync, a refusal. A cancelled sync
 * (the agent left) was answered to no one. */
static void
test_metrics_syncs(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    g_autoptr(EinsoraDesiredState) first = NULL;
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autofree gchar *stranger = einsora_uuid_v7_new(START_US / 1000);
    g_autoptr(EinsoraSyncReport) unknown = report_new(stranger, 0, linux_inventory());
    SyncResult old = {0};
    SyncResult next = {0};
    EinsoraMetric *held, *answers;

    einsora_hub_set_metrics(f->hub, metrics);
    held = einsora_metrics_gauge(metrics, "einsora_hub_syncs_held", "", NULL);
    answers = einsora_metrics_counter(metrics, "einsora_hub_syncs_answered_total", "",
                                      (const char *const[]){"answer", NULL});
    first = connect_machine(f, f->box_id, linux_inventory());
    report = report_new(f->box_id, first->generation, NULL);
    g_assert_cmpfloat(answered(answers, "changed"), ==, 1);
    g_assert_cmpfloat(einsora_metric_get(held, NULL), ==, 0);

    sync_start(f, f->hub, report, NULL, &old);
    assert_held(&old);
    g_assert_cmpfloat(einsora_metric_get(held, NULL), ==, 1);
    sync_start(f, f->hub, report, cancellable, &next);
    g_assert_true(wait_for(&old, WAIT_MS));
    assert_held(&next);
    g_assert_cmpfloat(answered(answers, "superseded"), ==, 1);
    g_assert_cmpfloat(einsora_metric_get(held, NULL), ==, 1);
    cancel_and_wait(cancellable, &next);
    g_assert_cmpfloat(einsora_metric_get(held, NULL), ==, 0);
    sync_result_clear(&old);
    sync_result_clear(&next);

    einsora_hub_set_long_poll(f->hub, 100 * 1000);
    sync_start(f, f->hub, report, NULL, &old);
    g_assert_true(wait_for(&old, WAIT_MS));
    g_assert_no_error(old.error);
    g_assert_cmpfloat(answered(answers, "long_poll"), ==, 1);
    g_assert_cmpfloat(einsora_metric_get(held, NULL), ==, 0);
    sync_result_clear(&old);

    sync_start(f, f->hub, unknown, NULL, &old);
    g_assert_true(wait_for(&old, WAIT_MS));
    g_assert_nonnull(old.error);
    g_assert_cmpfloat(answered(answers, "error"), ==, 1);
    g_assert_cmpfloat(answered(answers, "changed"), ==, 1);
    sync_result_clear(&old);
}

static void
test_offline_after_45s(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) state = NULL;
    EinsoraObservation observation;

    place(f, id, f->box_id, "docker");
    state = connect_machine(f, f->box_id, linux_inventory());
    g_assert_true(online(f->hub, f->box_id));
    observation = observe(f, f->hub, id);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);

    f->clock.now_us += SECONDS(44);
    g_assert_true(online(f->hub, f->box_id));
    g_assert_cmpint(observe(f, f->hub, id).status, ==, EINSORA_RUNTIME_PROGRESSING);

    f->clock.now_us += SECONDS(1);
    g_assert_false(online(f->hub, f->box_id));
    observation = observe(f, f->hub, id);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_UNKNOWN);
    g_assert_null(observation.reason);

    /* Back: online again. */
    g_clear_pointer(&state, einsora_desired_state_free);
    {
        g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, 0, NULL);
        state = sync_now(f, f->hub, report);
    }
    g_assert_true(online(f->hub, f->box_id));
    g_assert_cmpint(observe(f, f->hub, id).status, ==, EINSORA_RUNTIME_PROGRESSING);
}

/* A controller pass observes every workload of a machine in one turn of
 * the main loop: the machine's desired state is read from the store once
 * for them all (it was read once each: a pass was quadratic), and afresh
 * in the next turn. */
static void
test_observe_reads_once_per_pass(Fixture *f, gconstpointer data)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(EinsoraDesiredState) state = NULL;
    guint64 before;

    for (guint i = 0; i < 20; i++) {
        gchar *id = launch(f, "notebook", "cpu-2c-4g", "jupyter");
        place(f, id, f->box_id, "docker");
        g_ptr_array_add(ids, id);
    }
    state = connect_machine(f, f->box_id, linux_inventory());
    while (g_main_context_iteration(NULL, FALSE))
        ;
    before = einsora_hub_count_desired_reads(f->hub);
    for (guint i = 0; i < ids->len; i++)
        g_assert_cmpint(observe(f, f->hub, g_ptr_array_index(ids, i)).status, ==,
                        EINSORA_RUNTIME_PROGRESSING);
    g_assert_cmpuint(einsora_hub_count_desired_reads(f->hub), ==, before + 1);
    while (g_main_context_iteration(NULL, FALSE))
        ;
    observe(f, f->hub, g_ptr_array_index(ids, 0));
    g_assert_cmpuint(einsora_hub_count_desired_reads(f->hub), ==, before + 2);
}

/* The same through a controller pass, which is what runs every interval:
 * the pass reads each machine's desired state once, however many of its
 * workloads it observes (once per workload made a pass quadratic in a
 * machine's workloads: 500 on one machine held a core). Counts reads, not
 * time, so it says the same on a loaded machine. */
static void
test_controller_pass_reads_each_machine_once(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraController) controller =
        einsora_controller_new(f->service, EINSORA_STORE(f->store), f->catalog,
                               EINSORA_BACKEND(f->hub), "local", manual_now, &f->clock);
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autoptr(GError) error = NULL;
    guint64 before;

    for (guint i = 0; i < 60; i++) {
        gchar *id = launch(f, "notebook", "cpu-2c-4g", "jupyter");
        place(f, id, f->box_id, "docker");
        g_ptr_array_add(ids, id);
    }
    state = connect_machine(f, f->box_id, linux_inventory());
    drain();
    before = einsora_hub_count_desired_reads(f->hub);
    g_assert_true(einsora_controller_reconcile_once(controller, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(einsora_hub_count_desired_reads(f->hub), ==, before + 1);
    /* Observed, and still starting: nothing was decided without a read. */
    for (guint i = 0; i < ids->len; i++) {
        g_autoptr(EinsoraWorkload) workload = get(f, g_ptr_array_index(ids, i));
        g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    }
    drain();
    g_assert_true(einsora_controller_reconcile_once(controller, &error));
    g_assert_cmpuint(einsora_hub_count_desired_reads(f->hub), ==, before + 2);
}

static void
test_away_fails_after_10m(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *on_studio = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    EinsoraObservation observation;

    place(f, id, f->box_id, "docker");
    place(f, on_studio, f->studio_id, "sim");
    state = connect_machine(f, f->box_id, linux_inventory());

    f->clock.now_us += SECONDS(599);
    g_assert_cmpint(observe(f, f->hub, id).status, ==, EINSORA_RUNTIME_UNKNOWN);
    f->clock.now_us += SECONDS(1);
    workload = get(f, id);
    observation = observe(f, f->hub, id);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_FAILED);
    g_assert_cmpstr(observation.reason, ==, "its machine has been offline for over 10m0s");
    g_assert_cmpint(observation.attempt, ==, workload->attempt);

    /* Never seen since the hub started: away since then. */
    f->clock.now_us = START_US + SECONDS(599);
    g_assert_cmpint(observe(f, f->hub, on_studio).status, ==, EINSORA_RUNTIME_UNKNOWN);
    f->clock.now_us = START_US + SECONDS(601);
    observation = observe(f, f->hub, on_studio);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_FAILED);
    g_assert_cmpstr(observation.reason, ==, "its machine has been offline for over 10m0s");
}

static void
test_settling(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraCapacity) capacity = capacity_of(f->hub);
    g_autoptr(EinsoraDesiredState) box = NULL;
    g_autoptr(EinsoraDesiredState) studio = NULL;
    g_autoptr(EinsoraHub) later = NULL;

    g_assert_true(capacity->settling);
    g_assert_cmpint(capacity->machines->len, ==, 2);
    g_clear_pointer(&capacity, einsora_capacity_free);

    f->clock.now_us += SECONDS(10);
    box = connect_machine(f, f->box_id, linux_inventory());
    capacity = capacity_of(f->hub);
    g_assert_true(capacity->settling);
    g_clear_pointer(&capacity, einsora_capacity_free);

    studio = connect_machine(f, f->studio_id, mac_inventory(32768));
    capacity = capacity_of(f->hub);
    g_assert_false(capacity->settling);
    g_clear_pointer(&capacity, einsora_capacity_free);

    /* At most 45 s, even if a machine never comes back. */
    later = hub_new(f);
    capacity = capacity_of(later);
    g_assert_true(capacity->settling);
    g_clear_pointer(&capacity, einsora_capacity_free);
    f->clock.now_us += SECONDS(44);
    capacity = capacity_of(later);
    g_assert_true(capacity->settling);
    g_clear_pointer(&capacity, einsora_capacity_free);
    f->clock.now_us += SECONDS(1);
    capacity = capacity_of(later);
    g_assert_false(capacity->settling);
}

/* Several controller processes on one Postgres (docs/adr/0062): a hub
 * sharing its region doesn't wait for machines another hub syncs with
 * since it started, and counts them offline (their reports go there); one
 * seen only before it started is its own, reconnecting: it waits. */
static void
test_settling_shared(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraHub) shared = NULL;
    g_autoptr(EinsoraHub) alone = NULL;
    g_autoptr(EinsoraCapacity) capacity = NULL;
    g_autoptr(EinsoraDesiredState) box = NULL;
    g_autoptr(EinsoraDesiredState) studio = NULL;
    g_autoptr(EinsoraDesiredState) box_again = NULL;
    g_autoptr(EinsoraDesiredState) studio_again = NULL;

    box = connect_machine(f, f->box_id, linux_inventory());
    studio = connect_machine(f, f->studio_id, mac_inventory(32768));
    f->clock.now_us += SECONDS(5);
    shared = hub_new(f);
    einsora_hub_set_shared(shared, TRUE);
    alone = hub_new(f);

    /* Seen before it started: as after a restart, it waits. */
    capacity = capacity_of(shared);
    g_assert_true(capacity->settling);
    g_clear_pointer(&capacity, einsora_capacity_free);

    /* Both sync with the other hub since: nothing to wait for, and
     * neither is offered here. */
    f->clock.now_us += SECONDS(5);
    box_again = connect_machine(f, f->box_id, linux_inventory());
    studio_again = connect_machine(f, f->studio_id, mac_inventory(32768));
    capacity = capacity_of(shared);
    g_assert_false(capacity->settling);
    g_assert_false(machine_in(capacity, f->box_id)->online);
    g_assert_false(machine_in(capacity, f->studio_id)->online);
    g_clear_pointer(&capacity, einsora_capacity_free);

    /* A hub that holds every sync of its region still waits. */
    capacity = capacity_of(alone);
    g_assert_true(capacity->settling);
}

static void
test_capacity_from_inventory(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraDesiredState) box = NULL;
    g_autoptr(EinsoraDesiredState) studio = NULL;
    g_autoptr(EinsoraCapacity) capacity = capacity_of(f->hub);
    const EinsoraMachineCapacity *machine;

    /* No inventory yet: not offered. */
    g_assert_false(machine_in(capacity, f->box_id)->online);
    g_clear_pointer(&capacity, einsora_capacity_free);

    box = connect_machine(f, f->box_id, linux_inventory());
    studio = connect_machine(f, f->studio_id, mac_inventory(49152));
    capacity = capacity_of(f->hub);
    machine = machine_in(capacity, f->box_id);
    g_assert_true(machine->online);
    g_assert_cmpint(machine->cpus, ==, 32);
    g_assert_cmpint(machine->memory_mib, ==, 131072);
    g_assert_cmpint(einsora_machine_capacity_devices(machine, "l40s-48gb"), ==, 2);
    /* Which ones: the inventory's first two (the third is no class's). */
    g_assert_cmphex(einsora_machine_capacity_gpu_mask(machine, "l40s-48gb"), ==, 0x3);
    g_assert_cmpint(g_hash_table_size(machine->devices), ==, 1);
    g_assert_true(einsora_machine_capacity_has_driver(machine, "docker"));
    g_assert_true(einsora_machine_capacity_has_driver(machine, "sim"));
    g_assert_false(einsora_machine_capacity_has_driver(machine, "macos-native"));
    /* Owner and region from the registration. */
    g_assert_cmpstr(machine->machine->tenant_id, ==, TENANT_A);
    g_assert_cmpstr(machine->machine->region, ==, "local");

    /* 48 GiB of unified memory holds the 32 GB class, not the 64. */
    machine = machine_in(capacity, f->studio_id);
    g_assert_true(machine->online);
    g_assert_cmpint(einsora_machine_capacity_devices(machine, "apple-silicon-32gb"), ==, 1);
    g_assert_cmpint(einsora_machine_capacity_devices(machine, "apple-silicon-64gb"), ==, 0);
    g_assert_cmpint(einsora_machine_capacity_devices(machine, "apple-silicon-16gb"), ==, 0);
    g_clear_pointer(&capacity, einsora_capacity_free);

    /* A bigger Mac (a new inventory) matches the largest class. */
    {
        g_autoptr(EinsoraSyncReport) report = report_new(f->studio_id, 0, mac_inventory(65536));
        g_clear_pointer(&studio, einsora_desired_state_free);
        studio = sync_now(f, f->hub, report);
    }
    capacity = capacity_of(f->hub);
    machine = machine_in(capacity, f->studio_id);
    g_assert_cmpint(einsora_machine_capacity_devices(machine, "apple-silicon-64gb"), ==, 1);
    g_assert_cmpint(einsora_machine_capacity_devices(machine, "apple-silicon-32gb"), ==, 0);
}

/* A docker driver on a Mac: the inventory is refused, the machine isn't
 * offered, and it still gets its desired state. */
static void
test_refused_inventory(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "apple-silicon-32gb", "jupyter");
    g_autoptr(EinsoraInventory) bad = mac_inventory(32768);
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(EinsoraSyncReport) good = NULL;
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GError) error = NULL;
    const char *drivers[] = {"macos-native", "docker", NULL};

    place(f, id, f->studio_id, "macos-native");
    g_strfreev(bad->drivers);
    bad->drivers = g_strdupv((gchar **)drivers);
    report = report_new(f->studio_id, 0, g_steal_pointer(&bad));

    state = sync_now(f, f->hub, report);
    g_assert_cmpint(state->workloads->len, ==, 1);
    g_assert_cmpint(mode_in(state, id), ==, EINSORA_WORKLOAD_MODE_RUN);
    g_assert_false(online(f->hub, f->studio_id));
    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->studio_id, &error);
    g_assert_no_error(error);
    g_assert_nonnull(machine->last_seen_at);
    g_assert_null(machine->inventory);

    /* A report without an inventory doesn't lift the refusal. */
    g_clear_pointer(&report, einsora_sync_report_free);
    g_clear_pointer(&state, einsora_desired_state_free);
    report = report_new(f->studio_id, 0, NULL);
    state = sync_now(f, f->hub, report);
    g_assert_false(online(f->hub, f->studio_id));

    /* A good one does. */
    good = report_new(f->studio_id, 0, mac_inventory(32768));
    g_clear_pointer(&state, einsora_desired_state_free);
    state = sync_now(f, f->hub, good);
    g_assert_true(online(f->hub, f->studio_id));
}

/* The stored inventory has one reader: what the hub offers for placement
 * is what the API shows (GPUs with their classes, drivers), and a stored
 * one that doesn't fit the machine is neither offered nor shown. */
static void
test_stored_inventory_one_reader(Fixture *f, gconstpointer data)
{
    static const char *const misfits[] = {
        /* A Mac's inventory on a Linux machine. */
        "{\"os\":\"darwin\",\"arch\":\"arm64\",\"cpus\":12,\"memory_mib\":32768,"
        "\"gpus\":[],\"drivers\":[\"sim\"]}",
        /* A GPU that isn't a GPU record. */
        "{\"os\":\"linux\",\"arch\":\"x86_64\",\"cpus\":4,\"memory_mib\":1024,"
        "\"gpus\":[\"NVIDIA L40S\"],\"drivers\":[\"sim\"]}",
        /* A member no version writes. */
        "{\"os\":\"linux\",\"arch\":\"x86_64\",\"cpus\":4,\"memory_mib\":1024,"
        "\"gpus\":[],\"drivers\":[\"sim\"],\"trusted\":true}",
    };
    g_autoptr(EinsoraDesiredState) state = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraCapacity) capacity = capacity_of(f->hub);
    const EinsoraMachineCapacity *offered = machine_in(capacity, f->box_id);
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GPtrArray) gpus = NULL;
    g_auto(GStrv) drivers = NULL;
    g_autoptr(GError) error = NULL;

    machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->box_id, &error);
    g_assert_no_error(error);
    gpus = einsora_service_machine_gpus(f->service, machine);
    drivers = einsora_service_machine_drivers(f->service, machine);
    g_assert_cmpuint(gpus->len, ==, 3);
    for (guint i = 0; i < 2; i++) {
        const EinsoraMachineGpu *gpu = g_ptr_array_index(gpus, i);
        g_assert_cmpstr(gpu->vendor, ==, "nvidia");
        g_assert_cmpstr(gpu->model, ==, "NVIDIA L40S");
        g_assert_cmpint(gpu->memory_mib, ==, 46068);
        g_assert_cmpstr(gpu->gpu_class, ==, "l40s-48gb");
    }
    g_assert_null(((const EinsoraMachineGpu *)g_ptr_array_index(gpus, 2))->gpu_class);
    g_assert_cmpint(einsora_machine_capacity_devices(offered, "l40s-48gb"), ==, 2);
    g_assert_cmpstrv(drivers, offered->drivers);
    g_assert_cmpint(g_strv_length(drivers), ==, 2);

    for (guint i = 0; i < G_N_ELEMENTS(misfits); i++) {
        g_autofree gchar *seen_at = einsora_timestamp_format(f->clock.now_us);
        EinsoraInventory *read = NULL;

        g_test_message("stored: %s", misfits[i]);
        g_assert_true(einsora_store_record_machine_seen(EINSORA_STORE(f->store), f->box_id, seen_at,
                                                        misfits[i], NULL, NULL, &error));
        g_assert_no_error(error);
        g_clear_pointer(&machine, einsora_machine_free);
        g_clear_pointer(&gpus, g_ptr_array_unref);
        g_clear_pointer(&drivers, g_strfreev);
        g_clear_pointer(&capacity, einsora_capacity_free);
        machine = einsora_store_get_machine(EINSORA_STORE(f->store), TENANT_A, f->box_id, &error);
        g_assert_no_error(error);

        g_assert_false(einsora_inventory_read_stored(machine, &read, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_null(read);
        g_clear_error(&error);
        gpus = einsora_service_machine_gpus(f->service, machine);
        drivers = einsora_service_machine_drivers(f->service, machine);
        g_assert_cmpuint(gpus->len, ==, 0);
        g_assert_cmpstrv(drivers, (const char *const[]){NULL});
        capacity = capacity_of(f->hub);
        offered = machine_in(capacity, f->box_id);
        g_assert_cmpint(offered->cpus, ==, 0);
        g_assert_cmpint(einsora_machine_capacity_devices(offered, "l40s-48gb"), ==, 0);
        g_assert_false(offered->online);
    }
}

/* Every code maps to a fixed meaning; failures read fixed reasons. */
static void
test_observe_codes(Fixture *f, gconstpointer data)
{
    static const struct {
        EinsoraStatusCode code;
        EinsoraRuntimeStatus status;
        const char *reason;
    } cases[] = {
        {EINSORA_STATUS_CODE_RUNNING, EINSORA_RUNTIME_READY, NULL},
        {EINSORA_STATUS_CODE_STARTING, EINSORA_RUNTIME_PROGRESSING, NULL},
        {EINSORA_STATUS_CODE_STOPPING, EINSORA_RUNTIME_PROGRESSING, NULL},
        {EINSORA_STATUS_CODE_REMOVING, EINSORA_RUNTIME_PROGRESSING, NULL},
        {EINSORA_STATUS_CODE_GPU_BUSY, EINSORA_RUNTIME_PROGRESSING, NULL},
        {EINSORA_STATUS_CODE_STOPPED, EINSORA_RUNTIME_PARKED, NULL},
        {EINSORA_STATUS_CODE_REMOVED, EINSORA_RUNTIME_REMOVED, NULL},
        {EINSORA_STATUS_CODE_EXITED, EINSORA_RUNTIME_EXITED, NULL},
        {EINSORA_STATUS_CODE_FAILED_TO_START, EINSORA_RUNTIME_FAILED,
         "it couldn't start on its machine"},
        {EINSORA_STATUS_CODE_OUT_OF_MEMORY, EINSORA_RUNTIME_FAILED, "it ran out of memory"},
        {EINSORA_STATUS_CODE_IMAGE_MISSING, EINSORA_RUNTIME_FAILED,
         "its image isn't available on its machine"},
        {EINSORA_STATUS_CODE_DRIVER_MISSING, EINSORA_RUNTIME_FAILED,
         "its machine has no driver for it"},
        {EINSORA_STATUS_CODE_ISOLATION_REFUSED, EINSORA_RUNTIME_FAILED, NULL},
        {EINSORA_STATUS_CODE_MOVE_REFUSED, EINSORA_RUNTIME_FAILED, NULL},
        {EINSORA_STATUS_CODE_SANDBOX_CHANGED, EINSORA_RUNTIME_FAILED, NULL},
        {EINSORA_STATUS_CODE_PULL_FAILED, EINSORA_RUNTIME_FAILED,
         "couldn't pull its image: it doesn't exist or this machine can't reach the registry"},
        /* The Engine down: nothing decided, and the reason why. */
        {EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE, EINSORA_RUNTIME_UNKNOWN,
         "its machine's container engine doesn't answer; waiting for it"},
        {EINSORA_STATUS_CODE_UNKNOWN, EINSORA_RUNTIME_FAILED, "its machine reported a problem"},
        /* A code from a newer or hostile agent. */
        {(EinsoraStatusCode)999, EINSORA_RUNTIME_FAILED, "its machine reported a problem"},
    };
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) state = NULL;

    place(f, id, f->box_id, "docker");
    state = connect_machine(f, f->box_id, linux_inventory());
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, state->generation, NULL);
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        SyncResult result = {0};
        EinsoraObservation observation;

        g_test_message("code %d", cases[i].code);
        report_add_status(report, id, 1, EINSORA_WORKLOAD_MODE_RUN, cases[i].code,
                          state->generation);
        sync_start(f, f->hub, report, cancellable, &result);
        assert_held(&result);
        observation = observe(f, f->hub, id);
        g_assert_cmpint(observation.status, ==, cases[i].status);
        g_assert_cmpint(observation.attempt, ==, 1);
        if (cases[i].status == EINSORA_RUNTIME_FAILED ||
            cases[i].code == EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE) {
            g_assert_nonnull(observation.reason);
            g_assert_cmpstr(observation.reason, ==, einsora_status_code_reason(cases[i].code));
            if (cases[i].reason != NULL)
                g_assert_cmpstr(observation.reason, ==, cases[i].reason);
        }
        cancel_and_wait(cancellable, &result);
        sync_result_clear(&result);
    }
}

static EinsoraObservation
report_and_observe(Fixture *f, const char *id, gint64 applied, gint64 attempt,
                   EinsoraWorkloadMode mode, EinsoraStatusCode code, gint64 status_applied)
{
    g_autoptr(EinsoraSyncReport) report = report_new(f->box_id, applied, NULL);
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    SyncResult result = {0};
    EinsoraObservation observation;

    report_add_status(report, id, attempt, mode, code, status_applied);
    sync_start(f, f->hub, report, cancellable, &result);
    observation = observe(f, f->hub, id);
    if (!wait_for(&result, HOLD_CHECK_MS))
        cancel_and_wait(cancellable, &result);
    sync_result_clear(&result);
    return observation;
}

/* What its outbox replays, the controller observes in order before the
 * status now, each change once however often it is replayed, and the
 * answer says how far the hub has them (the agent's outbox drops those). */
static void
test_observe_replay(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *elsewhere = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) first = NULL;
    g_autoptr(EinsoraDesiredState) answer = NULL;
    g_autoptr(EinsoraDesiredState) again = NULL;
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(EinsoraWorkloadStatus) change = einsora_workload_status_new();
    EinsoraObservation observation;
    gint64 g1;

    place(f, id, f->box_id, "docker");
    first = connect_machine(f, f->box_id, linux_inventory());
    g1 = first->generation;
    g_assert_cmpint(first->replayed_through, ==, 0);

    /* Cut off, it started and ran, then ended; back, it says it ended,
     * and replays how it got there. */
    report = report_new(f->box_id, g1, NULL);
    report_add_status(report, id, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_EXITED, g1);
    change->workload_id = g_strdup(id);
    change->attempt = 1;
    change->mode = EINSORA_WORKLOAD_MODE_RUN;
    change->applied_generation = g1;
    change->code = EINSORA_STATUS_CODE_STARTING;
    einsora_sync_report_add_replay(report, 3, change);
    change->code = EINSORA_STATUS_CODE_RUNNING;
    einsora_sync_report_add_replay(report, 4, change);
    change->code = EINSORA_STATUS_CODE_EXITED;
    einsora_sync_report_add_replay(report, 5, change);
    /* Not placed here: left out. */
    g_free(change->workload_id);
    change->workload_id = g_strdup(elsewhere);
    change->code = EINSORA_STATUS_CODE_RUNNING;
    einsora_sync_report_add_replay(report, 6, change);
    {
        SyncResult result = {0};
        g_autoptr(GCancellable) cancellable = g_cancellable_new();

        sync_start(f, f->hub, report, cancellable, &result);
        observation = observe(f, f->hub, id);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
        observation = observe(f, f->hub, id);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_READY);
        /* The last change is the status now: said once, by it. */
        observation = observe(f, f->hub, id);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_EXITED);
        observation = observe(f, f->hub, id);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_EXITED);
        observation = observe(f, f->hub, elsewhere);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_ABSENT);
        /* Held (nothing new to apply); its answer acknowledges all six. */
        if (!wait_for(&result, HOLD_CHECK_MS))
            cancel_and_wait(cancellable, &result);
        sync_result_clear(&result);
    }
    {
        g_autoptr(EinsoraSyncReport) behind = report_new(f->box_id, 0, NULL);
        answer = sync_now(f, f->hub, behind);
        g_assert_cmpint(answer->replayed_through, ==, 6);
    }
    /* Replayed again (the answer was lost): taken already, nothing new. */
    {
        SyncResult result = {0};
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        g_autoptr(EinsoraSyncReport) replayed = report_new(f->box_id, g1, NULL);

        report_add_status(replayed, id, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_EXITED,
                          g1);
        for (guint i = 0; i < report->replay->len; i++) {
            const EinsoraReplayedStatus *old = g_ptr_array_index(report->replay, i);
            einsora_sync_report_add_replay(replayed, old->seq, old->status);
        }
        sync_start(f, f->hub, replayed, cancellable, &result);
        observation = observe(f, f->hub, id);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_EXITED);
        if (!wait_for(&result, HOLD_CHECK_MS))
            cancel_and_wait(cancellable, &result);
        sync_result_clear(&result);
    }
    {
        g_autoptr(EinsoraSyncReport) behind = report_new(f->box_id, 0, NULL);
        again = sync_now(f, f->hub, behind);
        g_assert_cmpint(again->replayed_through, ==, 6);
    }
}

/* A status answers only the attempt and mode the store expects, once the
 * agent applied the desired state that last changed them. */
static void
test_observe_stale(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) first = NULL;
    g_autoptr(EinsoraDesiredState) second = NULL;
    g_autoptr(EinsoraSyncReport) report = NULL;
    EinsoraObservation observation;
    gint64 g1;
    gint64 g2;

    /* Attempt 1 runs, and fails. */
    place(f, id, f->box_id, "docker");
    first = connect_machine(f, f->box_id, linux_inventory());
    g1 = first->generation;
    observation = report_and_observe(f, id, g1, 1, EINSORA_WORKLOAD_MODE_RUN,
                                     EINSORA_STATUS_CODE_FAILED_TO_START, g1);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_FAILED);

    /* Restarted: attempt 2. Its old failure answers nothing. */
    move_to(f, id, EINSORA_WORKLOAD_STATE_FAILED);
    move_to(f, id, EINSORA_WORKLOAD_STATE_PENDING);
    f->clock.now_us += SECONDS(1);
    place(f, id, f->box_id, "docker");
    report = report_new(f->box_id, g1, NULL);
    second = sync_now(f, f->hub, report);
    g2 = second->generation;
    g_assert_cmpint(g2, >, g1);
    g_assert_cmpint(find_desired(second, id)->attempt, ==, 2);

    /* No status at all: still in progress. */
    observation =
        report_and_observe(f, id, g2, 0, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_RUNNING, 0);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
    /* The old attempt's status. */
    observation = report_and_observe(f, id, g2, 1, EINSORA_WORKLOAD_MODE_RUN,
                                     EINSORA_STATUS_CODE_FAILED_TO_START, g2);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
    /* The right attempt, seen before the agent applied it. */
    observation = report_and_observe(f, id, g2, 2, EINSORA_WORKLOAD_MODE_RUN,
                                     EINSORA_STATUS_CODE_FAILED_TO_START, g1);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
    /* Another mode's status. */
    observation = report_and_observe(f, id, g2, 2, EINSORA_WORKLOAD_MODE_PARK,
                                     EINSORA_STATUS_CODE_STOPPED, g2);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
    /* The one it waits for. */
    observation = report_and_observe(f, id, g2, 2, EINSORA_WORKLOAD_MODE_RUN,
                                     EINSORA_STATUS_CODE_RUNNING, g2);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_READY);
    g_assert_cmpint(observation.attempt, ==, 2);

    /* Parking it: the running status no longer answers, the stopped one
     * does once the park is applied. */
    move_to(f, id, EINSORA_WORKLOAD_STATE_RUNNING);
    move_to(f, id, EINSORA_WORKLOAD_STATE_STOPPING);
    observation = report_and_observe(f, id, g2, 2, EINSORA_WORKLOAD_MODE_RUN,
                                     EINSORA_STATUS_CODE_RUNNING, g2);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
    observation = report_and_observe(f, id, g2, 2, EINSORA_WORKLOAD_MODE_PARK,
                                     EINSORA_STATUS_CODE_STOPPED, g2);
    g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PROGRESSING);
    {
        g_autoptr(EinsoraSyncReport) behind = report_new(f->box_id, g2, NULL);
        g_autoptr(EinsoraDesiredState) third = sync_now(f, f->hub, behind);
        g_assert_cmpint(third->generation, >, g2);
        observation = report_and_observe(f, id, third->generation, 2, EINSORA_WORKLOAD_MODE_PARK,
                                         EINSORA_STATUS_CODE_STOPPED, third->generation);
        g_assert_cmpint(observation.status, ==, EINSORA_RUNTIME_PARKED);
    }
}

/* A restarted hub computes the same workloads and modes from the store,
 * under a higher generation, even if its clock reads earlier. */
static void
test_restart_changes_nothing(Fixture *f, gconstpointer data)
{
    g_autofree gchar *running = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *stopped = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autofree gchar *deleting = launch(f, "endpoint", "l40s-48gb", "vllm");
    g_autoptr(EinsoraDesiredState) before = NULL;
    g_autoptr(EinsoraDesiredState) after = NULL;
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(EinsoraHub) restarted = NULL;

    place(f, running, f->box_id, "docker");
    move_to(f, running, EINSORA_WORKLOAD_STATE_RUNNING);
    place(f, stopped, f->box_id, "docker");
    move_to(f, stopped, EINSORA_WORKLOAD_STATE_STOPPING);
    move_to(f, stopped, EINSORA_WORKLOAD_STATE_STOPPED);
    place(f, deleting, f->box_id, "docker");
    move_to(f, deleting, EINSORA_WORKLOAD_STATE_DELETING);
    before = connect_machine(f, f->box_id, linux_inventory());

    /* The new hub's clock reads a second earlier than the old one's. */
    f->clock.now_us -= SECONDS(1);
    restarted = hub_new(f);
    report = report_new(f->box_id, before->generation, NULL);
    report_add_status(report, running, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_RUNNING,
                      before->generation);
    after = sync_now(f, restarted, report);
    g_assert_cmpint(after->generation, >, before->generation);
    g_assert_cmpint(after->workloads->len, ==, before->workloads->len);
    for (guint i = 0; i < before->workloads->len; i++) {
        const EinsoraDesiredWorkload *old = g_ptr_array_index(before->workloads, i);
        const EinsoraDesiredWorkload *now = g_ptr_array_index(after->workloads, i);
        g_assert_cmpstr(old->workload_id, ==, now->workload_id);
        g_assert_cmpint(old->mode, ==, now->mode);
        g_assert_cmpint(old->attempt, ==, now->attempt);
    }
    g_assert_cmpint(mode_in(after, running), ==, EINSORA_WORKLOAD_MODE_RUN);
    g_assert_cmpint(mode_in(after, stopped), ==, EINSORA_WORKLOAD_MODE_PARK);
    g_assert_cmpint(mode_in(after, deleting), ==, EINSORA_WORKLOAD_MODE_REMOVE);
    /* Until the agent applies the new generation, its old status answers
     * nothing. */
    g_assert_cmpint(observe(f, restarted, running).status, ==, EINSORA_RUNTIME_PROGRESSING);
    g_assert_finalize_object(g_steal_pointer(&restarted));
}

static void
pass(EinsoraController *controller, Fixture *f)
{
    g_autoptr(GError) error = NULL;

    f->clock.now_us += G_USEC_PER_SEC;
    g_assert_true(einsora_controller_reconcile_once(controller, &error));
    g_assert_no_error(error);
}

/* The controller over the hub, with an agent written by hand: admitted,
 * run, reported running, and running with the reason "ready". */
static void
test_end_to_end(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraController) controller =
        einsora_controller_new(f->service, EINSORA_STORE(f->store), f->catalog,
                               EINSORA_BACKEND(f->hub), "local", manual_now, &f->clock);
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    g_autoptr(EinsoraDesiredState) box = connect_machine(f, f->box_id, linux_inventory());
    g_autoptr(EinsoraDesiredState) studio = connect_machine(f, f->studio_id, mac_inventory(32768));
    g_autoptr(EinsoraDesiredState) desired = NULL;
    g_autoptr(EinsoraSyncReport) waiting = report_new(f->box_id, box->generation, NULL);
    g_autoptr(EinsoraSyncReport) running = NULL;
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(GPtrArray) events = NULL;
    const EinsoraDesiredWorkload *desired_workload;
    const EinsoraWorkloadEvent *last;
    SyncResult result = {0};

    sync_start(f, f->hub, waiting, NULL, &result);
    assert_held(&result);

    /* Admitted onto the box, and its agent woken with the workload. */
    pass(controller, f);
    workload = get(f, id);
    g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpstr(workload->machine_id, ==, f->box_id);
    g_assert_cmpstr(workload->driver, ==, "sim");
    g_assert_true(wait_for(&result, WAIT_MS));
    g_assert_no_error(result.error);
    desired = g_steal_pointer(&result.state);
    sync_result_clear(&result);
    desired_workload = find_desired(desired, id);
    g_assert_cmpint(desired_workload->mode, ==, EINSORA_WORKLOAD_MODE_RUN);
    g_assert_cmpint(desired_workload->attempt, ==, 1);
    g_assert_cmpstr(desired_workload->runtime_reference, ==, "jupyter-cuda");

    /* Not reported yet: still provisioning. */
    pass(controller, f);
    g_clear_pointer(&workload, einsora_workload_free);
    workload = get(f, id);
    g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);

    running = report_new(f->box_id, desired->generation, NULL);
    report_add_status(running, id, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_RUNNING,
                      desired->generation);
    sync_start(f, f->hub, running, cancellable, &result);
    assert_held(&result);
    pass(controller, f);
    g_clear_pointer(&workload, einsora_workload_free);
    workload = get(f, id);
    g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_RUNNING);
    events = einsora_service_list_events(f->service, TENANT_A, id, NULL);
    last = g_ptr_array_index(events, events->len - 1);
    g_assert_cmpstr(last->reason, ==, "ready");

    cancel_and_wait(cancellable, &result);
    sync_result_clear(&result);
    g_clear_object(&controller);
}

static void
on_runtime_changed(EinsoraHub *hub, gpointer user_data)
{
    (*(guint *)user_data)++;
}

/* Syncs @report (which it frees) and returns how often runtime-changed
 * was emitted meanwhile. */
static guint
changes_from(Fixture *f, EinsoraSyncReport *report, guint *count)
{
    g_autoptr(EinsoraSyncReport) owned = report;
    g_autoptr(EinsoraDesiredState) desired = NULL;
    guint before = *count;

    desired = sync_now(f, f->hub, owned);
    return *count - before;
}

/* The hub says when a sync brings news a controller pass would act on
 * (the daemon wakes its controller on it), and only then. */
static void
test_runtime_changed_on_news_only(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "notebook", "l40s-48gb", "jupyter");
    guint count = 0;
    EinsoraSyncReport *report;

    g_signal_connect(f->hub, "runtime-changed", G_CALLBACK(on_runtime_changed), &count);
    /* Online for the first time, with its inventory. */
    g_assert_cmpuint(changes_from(f, report_new(f->box_id, 0, linux_inventory()), &count), ==, 1);
    g_assert_cmpuint(changes_from(f, report_new(f->box_id, 0, NULL), &count), ==, 0);

    report = report_new(f->box_id, 0, NULL);
    report_add_status(report, id, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_STARTING, 1);
    g_assert_cmpuint(changes_from(f, report, &count), ==, 1);
    report = report_new(f->box_id, 0, NULL);
    report_add_status(report, id, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_STARTING, 1);
    g_assert_cmpuint(changes_from(f, report, &count), ==, 0);
    report = report_new(f->box_id, 0, NULL);
    report_add_status(report, id, 1, EINSORA_WORKLOAD_MODE_RUN, EINSORA_STATUS_CODE_RUNNING, 1);
    g_assert_cmpuint(changes_from(f, report, &count), ==, 1);
    /* Gone from the report is news too. */
    g_assert_cmpuint(changes_from(f, report_new(f->box_id, 0, NULL), &count), ==, 1);
    /* So is what the machine has: a driver that passed its probe. */
    g_assert_cmpuint(changes_from(f, report_new(f->box_id, 0, linux_inventory()), &count), ==, 1);
    g_assert_cmpuint(changes_from(f, report_new(f->box_id, 0, NULL), &count), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    clock_warnings = g_ptr_array_new_with_free_func(g_free);
    g_log_set_writer_func(keep_clock_warnings, NULL, NULL);

#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/hub/sync/unknown-machine-refused", test_sync_unknown_machine);
    ADD("/hub/sync/other-region-refused", test_sync_other_region);
    ADD("/hub/sync/records-seen-and-inventory", test_sync_records_seen);
    ADD("/hub/sync/records-agent-version-and-clock", test_sync_records_agent_health);
    ADD("/hub/desired/every-state", test_desired_modes);
    ADD("/hub/long-poll/held-when-unchanged", test_long_poll_held_when_unchanged);
    ADD("/hub/long-poll/wakes-on-run-park-remove", test_long_poll_wakes);
    ADD("/hub/long-poll/wakes-when-the-loop-is-busy", test_long_poll_wakes_when_busy);
    ADD("/hub/long-poll/timeout-answers", test_long_poll_timeout);
    ADD("/hub/long-poll/superseded", test_long_poll_superseded);
    ADD("/hub/long-poll/wants-tunnels", test_long_poll_wants_tunnels);
    ADD("/hub/metrics/syncs-held-and-answered", test_metrics_syncs);
    ADD("/hub/offline/after-45s", test_offline_after_45s);
    ADD("/hub/observe/reads-once-per-pass", test_observe_reads_once_per_pass);
    ADD("/hub/observe/controller-pass-reads-each-machine-once",
        test_controller_pass_reads_each_machine_once);
    ADD("/hub/offline/fails-after-10m", test_away_fails_after_10m);
    ADD("/hub/capacity/settling", test_settling);
    ADD("/hub/capacity/settling-shared", test_settling_shared);
    ADD("/hub/capacity/from-inventory", test_capacity_from_inventory);
    ADD("/hub/capacity/refused-inventory", test_refused_inventory);
    ADD("/hub/capacity/stored-inventory-read-as-the-api-shows-it",
        test_stored_inventory_one_reader);
    ADD("/hub/observe/codes", test_observe_codes);
    ADD("/hub/observe/stale-attempts-and-generations", test_observe_stale);
    ADD("/hub/observe/replayed-changes-in-order-once", test_observe_replay);
    ADD("/hub/restart/changes-no-desired-state", test_restart_changes_nothing);
    ADD("/hub/end-to-end/provisioning-to-running", test_end_to_end);
    ADD("/hub/access/handover", test_access_handover);
    ADD("/hub/runtime-changed/on-news-only", test_runtime_changed_on_news_only);
#undef ADD

    return g_test_run();
}
