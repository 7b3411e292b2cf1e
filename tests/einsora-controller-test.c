/* reconcile_once() driven with the fake backend and an injected clock,
 * through the lifecycle and the reasons of the design. */
#include <sqlite3.h>
#include <string.h>

#include "einsora-controller.h"
#include "einsora-error.h"
#include "einsora-fake-backend.h"
#include "einsora-reason.h"
#include "einsora-pg-store.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-postgres.h"

#define TENANT_A "0190b5d2-7c4e-7abc-8def-00000000000a" /* untrusted */
#define TENANT_T "0190b5d2-7c4e-7abc-8def-00000000000c" /* trusted */
#define START_US G_GINT64_CONSTANT(1764406000000000)

static const char test_catalog[] =
    "{\"version\": 1,"
    " \"regions\": [{\"name\": \"local\"}],"
    " \"drivers\": [{\"name\": \"sim\", \"kinds\": [\"notebook\", \"endpoint\", \"vm\"],"
    "               \"accelerators\": [\"cpu\", \"nvidia\"]}],"
    " \"classes\": ["
    "  {\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096, \"accelerator\": \"cpu\"},"
    "  {\"name\": \"l40s-48gb\", \"cpus\": 4, \"memory_mib\": 16384, \"devices\": 1,"
    "   \"accelerator\": \"nvidia\"},"
    "  {\"name\": \"l40s-x2\", \"cpus\": 8, \"memory_mib\": 32768, \"devices\": 2,"
    "   \"accelerator\": \"nvidia\"}],"
    " \"images\": [{\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\"]},"
    "   \"nvidia\": {\"reference\": \"jupyter-cuda\", \"driver_refs\": [\"sim\"]}}}]}";

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
    EinsoraStore *store; /* SQLite, or Postgres with EINSORA_TEST_STORE=postgres */
    gchar *database;     /* Postgres: the fixture's own database */
    EinsoraService *service;
    EinsoraFakeBackend *backend;
    EinsoraController *controller;
    EinsoraActor *alice;
    EinsoraActor *trent;
} Fixture;

static void
add_tenant(Fixture *f, const char *id, const char *name, gboolean trusted)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) tenant =
        einsora_tenant_new(id, name, trusted, "2025-11-29T08:46:40.000000Z");

    g_assert_true(einsora_store_insert_tenant(f->store, tenant, &error));
    g_assert_true(einsora_store_set_quota(f->store, id, "l40s-48gb", 100, &error));
    g_assert_true(einsora_store_set_quota(f->store, id, "l40s-x2", 100, &error));
    g_assert_no_error(error);
}

static EinsoraController *
controller_new(Fixture *f, EinsoraCatalog *catalog)
{
    return einsora_controller_new(f->service, f->store, catalog, EINSORA_BACKEND(f->backend),
                                  "local", manual_now, &f->clock);
}

/* EINSORA_TEST_STORE=postgres: one private server for the binary. */
static EinsoraTestPostgres *postgres;

/* The fixture's store (another connection to it when one is open),
 * migrated, on the fixture's clock. */
static EinsoraStore *
open_store(Fixture *f, GError **error)
{
    if (postgres != NULL) {
        g_autofree gchar *conninfo = NULL;
        g_autoptr(EinsoraPgStore) store = NULL;

        if (f->database == NULL)
            f->database = einsora_test_postgres_create_database(postgres, NULL);
        conninfo = einsora_test_postgres_conninfo(postgres, f->database);
        store = einsora_pg_store_open(conninfo, error);
        if (store == NULL || !einsora_pg_store_migrate(store, START_US, error))
            return NULL;
        einsora_pg_store_set_clock(store, manual_now, &f->clock);
        return EINSORA_STORE(g_steal_pointer(&store));
    } else {
        g_autofree gchar *path = g_build_filename(f->dir, "einsora.db", NULL);
        g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, error);

        if (store == NULL || !einsora_sqlite_store_migrate(store, START_US, error))
            return NULL;
        einsora_sqlite_store_set_clock(store, manual_now, &f->clock);
        return EINSORA_STORE(g_steal_pointer(&store));
    }
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    f->dir = einsora_test_dir_new();
    f->clock.now_us = START_US;
    f->catalog = einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_assert_no_error(error);
    f->store = open_store(f, &error);
    g_assert_no_error(error);
    add_tenant(f, TENANT_A, "acme", FALSE);
    add_tenant(f, TENANT_T, "internal", TRUE);
    f->service = einsora_service_new(f->store, f->catalog, manual_now, &f->clock);
    f->backend = einsora_fake_backend_new();
    einsora_fake_backend_set_units(f->backend, "cpu-2c-4g", 100);
    einsora_fake_backend_set_units(f->backend, "l40s-48gb", 2);
    f->controller = controller_new(f, f->catalog);
    f->alice = einsora_actor_new(TENANT_A, "u-a", "alice@acme.example", "browser session");
    f->trent = einsora_actor_new(TENANT_T, "u-t", "trent@internal.example", "browser session");
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->controller);
    g_clear_object(&f->backend);
    g_clear_object(&f->service);
    g_clear_object(&f->store);
    if (f->database != NULL)
        einsora_test_postgres_drop_database(postgres, f->database);
    g_free(f->database);
    g_clear_object(&f->catalog);
    einsora_actor_free(f->alice);
    einsora_actor_free(f->trent);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
}

static gchar *
launch(Fixture *f, const EinsoraActor *actor, const char *gpu_class)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest request = {"notebook", "nb", gpu_class, "jupyter", NULL};
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, actor, &request, &error);

    g_assert_no_error(error);
    return g_strdup(workload->id);
}

static void
pass(Fixture *f)
{
    g_autoptr(GError) error = NULL;

    f->clock.now_us += G_USEC_PER_SEC;
    g_assert_true(einsora_controller_reconcile_once(f->controller, &error));
    g_assert_no_error(error);
}

static EinsoraWorkload *
get(Fixture *f, const char *tenant_id, const char *id)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkload *workload =
        einsora_service_get_workload(f->service, tenant_id, id, TRUE, &error);
    g_assert_no_error(error);
    return workload;
}

static EinsoraWorkloadState
state_of(Fixture *f, const char *tenant_id, const char *id)
{
    g_autoptr(EinsoraWorkload) workload = get(f, tenant_id, id);
    return workload->state;
}

static GPtrArray *
events_of(Fixture *f, const char *tenant_id, const char *id)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *events = einsora_service_list_events(f->service, tenant_id, id, &error);
    g_assert_no_error(error);
    return events;
}

static const char *
last_reason(GPtrArray *events)
{
    return ((EinsoraWorkloadEvent *)g_ptr_array_index(events, events->len - 1))->reason;
}

/* Every event's to-state chains to the next event's from-state, and the
 * last one's is the row's state: one event per change, no gaps. */
static void
assert_timeline_consistent(Fixture *f, const char *tenant_id, const char *id)
{
    g_autoptr(GPtrArray) events = events_of(f, tenant_id, id);
    g_autoptr(EinsoraWorkload) workload = get(f, tenant_id, id);

    for (guint i = 1; i < events->len; i++) {
        const EinsoraWorkloadEvent *before = g_ptr_array_index(events, i - 1);
        const EinsoraWorkloadEvent *event = g_ptr_array_index(events, i);
        g_assert_true(event->has_from_state);
        g_assert_cmpint(event->from_state, ==, before->to_state);
    }
    g_assert_cmpint(((EinsoraWorkloadEvent *)g_ptr_array_index(events, events->len - 1))->to_state,
                    ==, workload->state);
}

static void
test_admit_and_run(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, f->alice, "l40s-48gb");
    g_autoptr(GPtrArray) events = NULL;
    const EinsoraWorkloadSpec *spec;

    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    spec = einsora_fake_backend_get_spec(f->backend, id);
    g_assert_nonnull(spec);
    g_assert_cmpstr(spec->placed_class, ==, "l40s-48gb");
    g_assert_cmpstr(spec->runtime_reference, ==, "jupyter-cuda");
    g_assert_cmpint(spec->attempt, ==, 1);
    events = events_of(f, TENANT_A, id);
    g_assert_cmpstr(last_reason(events), ==, "admitted: 1 × l40s-48gb");

    /* Still starting: nothing changes, nothing is written. */
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    einsora_fake_backend_set_status(f->backend, id, EINSORA_RUNTIME_READY, NULL);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, id);
    g_assert_cmpuint(events->len, ==, 3);
    g_assert_cmpstr(last_reason(events), ==, "ready");
    pass(f);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, id);
    g_assert_cmpuint(events->len, ==, 3);
    assert_timeline_consistent(f, TENANT_A, id);
}

static void
test_capacity_queues_with_reasons(Fixture *f, gconstpointer data)
{
    g_autofree gchar *first = launch(f, f->alice, "l40s-48gb");
    g_autofree gchar *second = launch(f, f->alice, "l40s-48gb");
    g_autofree gchar *untrusted = launch(f, f->alice, "l40s-48gb");
    g_autofree gchar *trusted = launch(f, f->trent, "l40s-48gb");
    g_autoptr(GPtrArray) events = NULL;
    guint before;

    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, first), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(state_of(f, TENANT_A, second), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(state_of(f, TENANT_A, untrusted), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpint(state_of(f, TENANT_T, trusted), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    events = events_of(f, TENANT_A, untrusted);
    g_assert_cmpstr(last_reason(events), ==,
                    "waiting for l40s-48gb capacity: not enough free right now");
    before = events->len;
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_T, trusted);
    g_assert_cmpstr(last_reason(events), ==, "waiting for l40s-48gb capacity: needs 1 GPU, 0 free");

    /* Waiting the same way is noted once, not every pass. */
    pass(f);
    pass(f);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, untrusted);
    g_assert_cmpuint(events->len, ==, before);

    /* A restarted controller doesn't repeat it either. */
    g_clear_object(&f->controller);
    f->controller = controller_new(f, f->catalog);
    pass(f);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, untrusted);
    g_assert_cmpuint(events->len, ==, before);

    /* Freed GPUs go to the oldest waiter first. */
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraWorkload) stopped =
            einsora_service_stop_workload(f->service, f->alice, first, &error);
        g_assert_no_error(error);
    }
    pass(f); /* stopping -> stopped frees a GPU, taken in the same pass */
    g_assert_cmpint(state_of(f, TENANT_A, first), ==, EINSORA_WORKLOAD_STATE_STOPPED);
    g_assert_cmpint(state_of(f, TENANT_A, untrusted), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, untrusted), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(state_of(f, TENANT_T, trusted), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    assert_timeline_consistent(f, TENANT_A, untrusted);
}

typedef struct {
    const char *klass;
    gint64 cpus, memory_mib, gpus; /* each tenant's own machine */
    const char *trusted, *untrusted;
} ShortCase;

static const ShortCase short_cases[] = {
    {"cpu-2c-4g", 1, 65536, 0, "waiting for cpu-2c-4g capacity: needs 2 CPU cores, 1 free",
     "waiting for cpu-2c-4g capacity: not enough free right now"},
    {"cpu-2c-4g", 8, 1536, 0, "waiting for cpu-2c-4g capacity: needs 4 GiB of memory, 1.5 GiB free",
     "waiting for cpu-2c-4g capacity: not enough free right now"},
    {"l40s-x2", 16, 65536, 1, "waiting for l40s-x2 capacity: needs 2 GPUs, 1 free",
     "waiting for l40s-x2 capacity: not enough free right now"},
};

static void
add_own_machine(Fixture *f, const char *id, const char *tenant_id, const ShortCase *c)
{
    g_autoptr(EinsoraMachine) record = einsora_machine_new();
    EinsoraMachineCapacity *capacity;

    record->id = g_strdup(id);
    record->tenant_id = g_strdup(tenant_id);
    record->name = g_strdup("box");
    record->region = g_strdup("local");
    record->cpus = c->cpus;
    record->memory_mib = c->memory_mib;
    record->sharing = EINSORA_SHARING_PRIVATE;
    capacity = einsora_machine_capacity_new(record);
    capacity->online = TRUE;
    if (c->gpus > 0)
        g_hash_table_insert(capacity->devices, g_strdup(c->klass), GINT_TO_POINTER((gint)c->gpus));
    g_strfreev(capacity->drivers);
    capacity->drivers = g_strsplit("sim", ",", -1);
    einsora_fake_backend_add_machine(f->backend, capacity);
}

/* On machines, the queued reason names what the machine lacks (CPUs,
 * memory or GPUs) and, to a trusted tenant only, how much. */
static void
test_queued_reason_names_what_is_short(Fixture *f, gconstpointer data)
{
    const ShortCase *c = data;
    g_autofree gchar *untrusted = NULL;
    g_autofree gchar *trusted = NULL;
    g_autoptr(GPtrArray) events = NULL;

    add_own_machine(f, "0190b5d2-7c4e-7abc-8def-0000000000d1", TENANT_A, c);
    add_own_machine(f, "0190b5d2-7c4e-7abc-8def-0000000000d2", TENANT_T, c);
    untrusted = launch(f, f->alice, c->klass);
    trusted = launch(f, f->trent, c->klass);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, untrusted), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpint(state_of(f, TENANT_T, trusted), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    events = events_of(f, TENANT_A, untrusted);
    g_assert_cmpstr(last_reason(events), ==, c->untrusted);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_T, trusted);
    g_assert_cmpstr(last_reason(events), ==, c->trusted);
}

/* FIFO with backfill: a large request that doesn't fit leaves the room to
 * a later one that does. */
static void
test_backfill(Fixture *f, gconstpointer data)
{
    g_autofree gchar *big = NULL;
    g_autofree gchar *small = NULL;

    einsora_fake_backend_set_units(f->backend, "l40s-x2", 0);
    big = launch(f, f->alice, "l40s-x2");
    small = launch(f, f->alice, "l40s-48gb");
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, big), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpint(state_of(f, TENANT_A, small), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
}

/* Aging (docs/adr/0051): before the bound a small request backfills past
 * a big one that doesn't fit; once the big one has waited past it, what
 * frees up of its kind is its, and younger requests of that kind wait
 * behind it, saying so; another kind (CPU) still goes. */
static void
test_aging_stops_backfill(Fixture *f, gconstpointer data)
{
    g_autofree gchar *big = NULL;
    g_autofree gchar *early = NULL;
    g_autofree gchar *late = NULL;
    g_autofree gchar *other = NULL;
    g_autofree gchar *cpu = NULL;
    g_autoptr(GPtrArray) events = NULL;

    einsora_controller_set_aging(f->controller, 600 * G_USEC_PER_SEC);
    einsora_fake_backend_set_units(f->backend, "l40s-x2", 0);
    einsora_fake_backend_set_units(f->backend, "l40s-48gb", 2);
    big = launch(f, f->alice, "l40s-x2");
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, big), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    early = launch(f, f->alice, "l40s-48gb");
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, early), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);

    f->clock.now_us += 601 * G_USEC_PER_SEC;
    late = launch(f, f->trent, "l40s-48gb");
    other = launch(f, f->alice, "l40s-48gb");
    cpu = launch(f, f->trent, "cpu-2c-4g");
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, big), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpint(state_of(f, TENANT_T, late), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpint(state_of(f, TENANT_A, other), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpint(state_of(f, TENANT_T, cpu), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    /* The trusted tenant learns why; the other, only that it waits. */
    events = events_of(f, TENANT_T, late);
    g_assert_true(g_str_has_prefix(last_reason(events),
                                   "waiting behind an older request for l40s-x2, waiting since "));
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, other);
    g_assert_cmpstr(last_reason(events), ==,
                    "waiting for l40s-48gb capacity: not enough free right now");
    g_clear_pointer(&events, g_ptr_array_unref);

    /* Off: backfill again (one GPU was left: the older of the two). */
    einsora_controller_set_aging(f->controller, 0);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_T, late), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(state_of(f, TENANT_A, other), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    assert_timeline_consistent(f, TENANT_T, late);
}

static gchar *
launch_with_fallback(Fixture *f, const EinsoraActor *actor, const char *gpu_class,
                     const char *const *fallback, gint64 after_s)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest request = {"notebook", "nb", gpu_class, "jupyter", NULL};
    g_autoptr(EinsoraWorkload) workload = NULL;

    request.fallback = fallback;
    request.fallback_after_s = after_s;
    workload = einsora_service_create_workload(f->service, actor, &request, &error);
    g_assert_no_error(error);
    return g_strdup(workload->id);
}

/* Fallbacks (docs/adr/0052): a workload waits fallback_after for its own
 * class, then runs on the first fallback that fits, saying so; what
 * frees up goes first to those who asked for that class. */
static void
test_fallback(Fixture *f, gconstpointer data)
{
    const char *const to_cpu[] = {"cpu-2c-4g", NULL};
    const char *const to_l40s[] = {"l40s-48gb", NULL};
    g_autofree gchar *patient = NULL;
    g_autofree gchar *eager = NULL;
    g_autofree gchar *asked = NULL;
    g_autoptr(EinsoraWorkload) ran = NULL;
    g_autoptr(GPtrArray) events = NULL;

    einsora_controller_set_aging(f->controller, 0);
    einsora_fake_backend_set_units(f->backend, "l40s-48gb", 0);
    einsora_fake_backend_set_units(f->backend, "l40s-x2", 0);
    patient = launch_with_fallback(f, f->alice, "l40s-48gb", to_cpu, 60);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, patient), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    f->clock.now_us += 60 * G_USEC_PER_SEC;
    pass(f);
    ran = get(f, TENANT_A, patient);
    g_assert_cmpint(ran->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpstr(ran->gpu_class, ==, "l40s-48gb");
    g_assert_cmpstr(ran->placed_class, ==, "cpu-2c-4g");
    events = events_of(f, TENANT_A, patient);
    g_assert_true(g_str_has_prefix(last_reason(events),
                                   "admitted on a fallback after 1m1s waiting for l40s-48gb: "));
    g_clear_pointer(&events, g_ptr_array_unref);
    assert_timeline_consistent(f, TENANT_A, patient);

    /* One L40S frees up: the one who asked for it gets it, though the
     * one falling back to it came first. */
    eager = launch_with_fallback(f, f->alice, "l40s-x2", to_l40s, 0);
    asked = launch(f, f->trent, "l40s-48gb");
    einsora_fake_backend_set_units(f->backend, "l40s-48gb", 1);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_T, asked), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(state_of(f, TENANT_A, eager), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    /* Another frees up: now the fallback takes it. */
    einsora_fake_backend_set_units(f->backend, "l40s-48gb", 2);
    pass(f);
    g_clear_pointer(&ran, einsora_workload_free);
    ran = get(f, TENANT_A, eager);
    g_assert_cmpint(ran->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpstr(ran->placed_class, ==, "l40s-48gb");
}

/* What a pass's commits saw: counted by SQLite's commit hook, with the
 * backend's runs and the feed's emissions at each, so the test can tell
 * what happened before the commit and what after. */
typedef struct {
    Fixture *f;
    guint commits;
    guint refuse; /* commits to turn into rollbacks, as a crash would */
    guint runs_at_commit;
    guint emitted;
    guint commits_at_emit;
} Commits;

static int
on_commit(void *user_data)
{
    Commits *commits = user_data;

    commits->runs_at_commit =
        einsora_fake_backend_count_calls(commits->f->backend, EINSORA_FAKE_CALL_RUN);
    if (commits->refuse > 0) {
        commits->refuse--;
        return 1; /* SQLite rolls back instead */
    }
    commits->commits++;
    return 0;
}

static void
on_events_added(EinsoraService *service, const char *tenant_id, gpointer user_data)
{
    Commits *commits = user_data;

    commits->emitted++;
    commits->commits_at_emit = commits->commits;
}

/* A pass admits its workloads in one transaction, not one each; the
 * feed hears of them once, after the commit, and the backend is told to
 * run them only then. */
static void
test_admission_group_commit(Fixture *f, gconstpointer data)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    Commits commits = {f, 0, 0, 0, 0, 0};
    gulong handler =
        g_signal_connect(f->service, "events-added", G_CALLBACK(on_events_added), &commits);

    for (guint i = 0; i < 40; i++)
        g_ptr_array_add(ids, launch(f, f->alice, "cpu-2c-4g"));
    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    sqlite3_commit_hook(einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(f->store)), on_commit,
                        &commits);
    commits.emitted = 0;
    pass(f);
    g_assert_cmpuint(commits.commits, ==, 1);
    g_assert_cmpuint(commits.runs_at_commit, ==, 0);
    g_assert_cmpuint(einsora_fake_backend_count_calls(f->backend, EINSORA_FAKE_CALL_RUN), ==, 40);
    g_assert_cmpuint(commits.emitted, ==, 1);
    g_assert_cmpuint(commits.commits_at_emit, ==, 1);
    for (guint i = 0; i < ids->len; i++) {
        g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, i)), ==,
                        EINSORA_WORKLOAD_STATE_PROVISIONING);
        assert_timeline_consistent(f, TENANT_A, g_ptr_array_index(ids, i));
    }
    sqlite3_commit_hook(einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(f->store)), NULL,
                        NULL);
    g_signal_handler_disconnect(f->service, handler);
}

static int
on_statement(unsigned type, void *user_data, void *statement, void *sql)
{
    guint *machine_reads = user_data;

    if (strstr(sqlite3_sql(statement), "FROM machines WHERE id") != NULL)
        (*machine_reads)++;
    return 0;
}

/* A pass that admits many workloads onto one machine reads that machine
 * once (each read is a round trip on Postgres); the next pass reads it
 * again, so a change between passes counts. */
static void
test_admission_reads_machine_once(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(EinsoraMachine) record = einsora_machine_new();
    EinsoraMachineCapacity *capacity;
    sqlite3 *db = einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(f->store));
    guint machine_reads = 0;

    record->id = g_strdup("0190b5d2-7c4e-7abc-8def-0000000000e1");
    record->tenant_id = g_strdup(TENANT_A);
    record->name = g_strdup("box");
    record->region = g_strdup("local");
    record->os = g_strdup("linux");
    record->cpus = 64;
    record->memory_mib = 262144;
    record->sharing = EINSORA_SHARING_PRIVATE;
    record->created_at = g_strdup("2026-01-01T00:00:00.000000Z");
    g_assert_true(einsora_store_insert_machine(f->store, record, &error));
    g_assert_no_error(error);
    capacity = einsora_machine_capacity_new(record);
    capacity->online = TRUE;
    g_strfreev(capacity->drivers);
    capacity->drivers = g_strsplit("sim", ",", -1);
    einsora_fake_backend_add_machine(f->backend, capacity);
    for (guint i = 0; i < 10; i++)
        g_ptr_array_add(ids, launch(f, f->alice, "cpu-2c-4g"));
    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    sqlite3_trace_v2(db, SQLITE_TRACE_STMT, on_statement, &machine_reads);
    pass(f);
    for (guint i = 0; i < ids->len; i++)
        g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, i)), ==,
                        EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpuint(machine_reads, ==, 1);
    g_ptr_array_add(ids, launch(f, f->alice, "cpu-2c-4g"));
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, ids->len - 1)), ==,
                    EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpuint(machine_reads, ==, 2);
    sqlite3_trace_v2(db, 0, NULL, NULL);
}

/* A group that doesn't commit (as after a crash mid-pass) leaves every
 * workload pending, tells nobody and runs nothing; the next pass admits
 * each once, as if the first had never been. */
static void
test_admission_group_lost(Fixture *f, gconstpointer data)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    Commits commits = {f, 0, 1, 0, 0, 0};
    gulong handler =
        g_signal_connect(f->service, "events-added", G_CALLBACK(on_events_added), &commits);
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    const char *const notebook[] = {"notebook", NULL};
    EinsoraMetric *admissions;

    einsora_controller_set_metrics(f->controller, metrics);
    admissions = einsora_metrics_counter(metrics, "einsora_admissions_total", "",
                                         (const char *const[]){"kind", NULL});

    for (guint i = 0; i < 10; i++)
        g_ptr_array_add(ids, launch(f, f->alice, "cpu-2c-4g"));
    /* Queued first, so that the lost group's notes matter too. */
    einsora_fake_backend_set_units(f->backend, "cpu-2c-4g", 0);
    pass(f);
    einsora_fake_backend_set_units(f->backend, "cpu-2c-4g", 100);
    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    sqlite3_commit_hook(einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(f->store)), on_commit,
                        &commits);
    commits.emitted = 0;
    pass(f);
    g_assert_cmpuint(commits.commits, ==, 0);
    g_assert_cmpuint(commits.emitted, ==, 0);
    g_assert_cmpuint(einsora_fake_backend_count_calls(f->backend, EINSORA_FAKE_CALL_RUN), ==, 0);
    /* A group that didn't commit admitted nothing. */
    g_assert_cmpfloat(einsora_metric_get(admissions, notebook), ==, 0);
    for (guint i = 0; i < ids->len; i++) {
        g_autoptr(GPtrArray) events = events_of(f, TENANT_A, g_ptr_array_index(ids, i));
        g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, i)), ==,
                        EINSORA_WORKLOAD_STATE_QUEUED);
        g_assert_cmpuint(events->len, ==, 2);
    }

    pass(f);
    g_assert_cmpuint(commits.commits, ==, 1);
    g_assert_cmpuint(einsora_fake_backend_count_calls(f->backend, EINSORA_FAKE_CALL_RUN), ==, 10);
    g_assert_cmpfloat(einsora_metric_get(admissions, notebook), ==, 10);
    for (guint i = 0; i < ids->len; i++) {
        g_autoptr(GPtrArray) events = events_of(f, TENANT_A, g_ptr_array_index(ids, i));
        g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, i)), ==,
                        EINSORA_WORKLOAD_STATE_PROVISIONING);
        g_assert_cmpuint(events->len, ==, 3);
        assert_timeline_consistent(f, TENANT_A, g_ptr_array_index(ids, i));
    }
    sqlite3_commit_hook(einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(f->store)), NULL,
                        NULL);
    g_signal_handler_disconnect(f->service, handler);
}

static void
test_settling_admits_nothing(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, f->alice, "cpu-2c-4g");

    einsora_fake_backend_set_settling(f->backend, TRUE);
    pass(f);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PENDING);
    einsora_fake_backend_set_settling(f->backend, FALSE);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);
}

static void
test_runtime_unreachable_is_noted_once(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, f->alice, "cpu-2c-4g");
    g_autoptr(GPtrArray) events = NULL;

    einsora_fake_backend_fail_next(f->backend, EINSORA_FAKE_CALL_CAPACITY);
    pass(f);
    events = events_of(f, TENANT_A, id);
    g_assert_cmpuint(events->len, ==, 2);
    g_assert_cmpstr(last_reason(events), ==, einsora_reason_capacity_retrying());
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PENDING);
    pass(f);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);
    assert_timeline_consistent(f, TENANT_A, id);

    /* A run the runtime refused is noted and retried: provisioning but
     * absent is run again. */
    {
        g_autofree gchar *again = launch(f, f->alice, "cpu-2c-4g");
        g_autoptr(GPtrArray) timeline = NULL;
        einsora_fake_backend_fail_next(f->backend, EINSORA_FAKE_CALL_RUN);
        pass(f);
        g_assert_cmpint(state_of(f, TENANT_A, again), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
        timeline = events_of(f, TENANT_A, again);
        g_assert_cmpstr(last_reason(timeline), ==, einsora_reason_run_retrying());
        g_assert_true(
            einsora_workload_event_is_note(g_ptr_array_index(timeline, timeline->len - 1)));
        pass(f);
        pass(f);
        g_assert_cmpint(state_of(f, TENANT_A, again), ==, EINSORA_WORKLOAD_STATE_RUNNING);
    }
}

static void
test_failures(Fixture *f, gconstpointer data)
{
    g_autofree gchar *crashed = launch(f, f->alice, "cpu-2c-4g");
    g_autofree gchar *exited = launch(f, f->alice, "cpu-2c-4g");
    g_autofree gchar *vanished = launch(f, f->alice, "cpu-2c-4g");
    const char *oom = "it ran out of memory";

    pass(f);
    pass(f);
    einsora_fake_backend_set_status(f->backend, crashed, EINSORA_RUNTIME_FAILED, oom);
    einsora_fake_backend_set_status(f->backend, exited, EINSORA_RUNTIME_EXITED, NULL);
    einsora_fake_backend_set_status(f->backend, vanished, EINSORA_RUNTIME_ABSENT, NULL);
    pass(f);
    {
        g_autoptr(GPtrArray) a = events_of(f, TENANT_A, crashed);
        g_autoptr(GPtrArray) b = events_of(f, TENANT_A, exited);
        g_autoptr(GPtrArray) c = events_of(f, TENANT_A, vanished);
        g_assert_cmpint(state_of(f, TENANT_A, crashed), ==, EINSORA_WORKLOAD_STATE_FAILED);
        g_assert_cmpstr(last_reason(a), ==, oom);
        g_assert_cmpstr(last_reason(b), ==, "it stopped by itself");
        g_assert_cmpstr(last_reason(c), ==, "it disappeared from its runtime");
    }
    /* A failure releases what it held on the runtime. */
    g_assert_cmpint(einsora_fake_backend_get_status(f->backend, exited), ==,
                    EINSORA_RUNTIME_PARKED);
}

static void
test_provisioning_timeout(Fixture *f, gconstpointer data)
{
    g_autofree gchar *slow = launch(f, f->alice, "cpu-2c-4g");
    g_autofree gchar *offline = launch(f, f->alice, "cpu-2c-4g");
    g_autoptr(GPtrArray) events = NULL;
    guint notes;

    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    einsora_controller_set_provisioning_timeout(f->controller, 60 * G_USEC_PER_SEC);
    pass(f);
    einsora_fake_backend_set_status(f->backend, offline, EINSORA_RUNTIME_UNKNOWN, NULL);
    f->clock.now_us += 30 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, slow), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    events = events_of(f, TENANT_A, offline);
    g_assert_cmpstr(last_reason(events), ==, einsora_reason_machine_offline());
    notes = events->len;

    f->clock.now_us += 60 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, slow), ==, EINSORA_WORKLOAD_STATE_FAILED);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, slow);
    g_assert_cmpstr(last_reason(events), ==, "it didn't become ready within 60s");
    /* Unknown decides nothing, not even the timeout; noted once. */
    g_assert_cmpint(state_of(f, TENANT_A, offline), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, offline);
    g_assert_cmpuint(events->len, ==, notes);
}

/* A status about an older attempt answers nothing. */
static void
test_stale_attempt(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, f->alice, "cpu-2c-4g");
    g_autoptr(GError) error = NULL;

    pass(f);
    pass(f);
    einsora_fake_backend_set_status(f->backend, id, EINSORA_RUNTIME_FAILED, "boom");
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_FAILED);
    {
        g_autoptr(EinsoraWorkload) started =
            einsora_service_start_workload(f->service, f->alice, id, &error);
        g_assert_no_error(error);
    }
    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    /* The new attempt is admitted; the runtime still shows attempt 1's
     * failure until it has applied attempt 2. */
    einsora_fake_backend_fail_next(f->backend, EINSORA_FAKE_CALL_RUN);
    pass(f);
    {
        g_autoptr(EinsoraWorkload) workload = get(f, TENANT_A, id);
        g_assert_cmpint(workload->attempt, ==, 2);
        g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    }
    einsora_fake_backend_set_status(f->backend, id, EINSORA_RUNTIME_FAILED, "boom");
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
}

static void
test_stop_and_delete(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, f->alice, "cpu-2c-4g");
    g_autofree gchar *never = launch(f, f->alice, "cpu-2c-4g");
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;

    {
        /* Deleted before it was ever admitted: nothing on a runtime. */
        g_autoptr(EinsoraWorkload) deleting =
            einsora_service_delete_workload(f->service, f->alice, never, &error);
        g_assert_no_error(error);
    }
    pass(f);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, never), ==, EINSORA_WORKLOAD_STATE_DELETED);
    g_assert_cmpuint(einsora_fake_backend_count_calls(f->backend, EINSORA_FAKE_CALL_REMOVE), ==, 0);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);

    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    {
        g_autoptr(EinsoraWorkload) stopping =
            einsora_service_stop_workload(f->service, f->alice, id, &error);
        g_assert_no_error(error);
    }
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_STOPPING);
    einsora_fake_backend_set_status(f->backend, id, EINSORA_RUNTIME_PARKED, NULL);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_STOPPED);
    events = events_of(f, TENANT_A, id);
    g_assert_cmpstr(last_reason(events), ==, "resources released");

    {
        g_autoptr(EinsoraWorkload) deleting =
            einsora_service_delete_workload(f->service, f->alice, id, &error);
        g_assert_no_error(error);
    }
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_DELETING);
    einsora_fake_backend_set_status(f->backend, id, EINSORA_RUNTIME_REMOVED, NULL);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_DELETED);
    g_clear_pointer(&events, g_ptr_array_unref);
    events = events_of(f, TENANT_A, id);
    g_assert_cmpstr(last_reason(events), ==, einsora_reason_gone());
    assert_timeline_consistent(f, TENANT_A, id);
    assert_timeline_consistent(f, TENANT_A, never);
}

/* The lifecycle has no step from waiting to failed: a withdrawn class or
 * image keeps the workload waiting, saying why. */
static void
test_withdrawn_class(Fixture *f, gconstpointer data)
{
    g_autofree gchar *pending = launch(f, f->alice, "l40s-x2");
    g_autoptr(GError) error = NULL;
    g_autoptr(GString) smaller = g_string_new(test_catalog);
    g_autoptr(EinsoraCatalog) without = NULL;
    g_autoptr(GPtrArray) events = NULL;
    const char *entry = ",  {\"name\": \"l40s-x2\", \"cpus\": 8, \"memory_mib\": 32768, "
                        "\"devices\": 2,   \"accelerator\": \"nvidia\"}";

    g_assert_cmpint(g_string_replace(smaller, entry, "", 1), ==, 1);
    without = einsora_catalog_new_from_data(smaller->str, -1, "smaller", &error);
    g_assert_no_error(error);
    g_clear_object(&f->controller);
    f->controller = controller_new(f, without);
    pass(f);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, pending), ==, EINSORA_WORKLOAD_STATE_QUEUED);
    events = events_of(f, TENANT_A, pending);
    g_assert_cmpuint(events->len, ==, 2);
    g_assert_cmpstr(last_reason(events), ==,
                    "can't start: GPU class \"l40s-x2\" is no longer offered by this "
                    "installation");
}

/* One controller reconciles a region; another on the same store stands
 * by until the lease is released or lapses. */
static void
test_region_lease(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraStore) other_store = open_store(f, &error);
    g_autoptr(EinsoraService) other_service = NULL;
    g_autoptr(EinsoraController) standby = NULL;
    g_autofree gchar *first = launch(f, f->alice, "cpu-2c-4g");

    g_assert_no_error(error);
    other_service = einsora_service_new(other_store, f->catalog, manual_now, &f->clock);
    standby = einsora_controller_new(other_service, other_store, f->catalog,
                                     EINSORA_BACKEND(f->backend), "local", manual_now, &f->clock);

    g_assert_true(einsora_controller_tick(f->controller));
    g_assert_false(einsora_controller_tick(standby));
    g_assert_true(einsora_controller_is_leading(f->controller));
    g_assert_false(einsora_controller_is_leading(standby));
    g_assert_cmpint(state_of(f, TENANT_A, first), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);

    /* A clean stop releases the lease: the standby takes over at once. */
    einsora_controller_stop(f->controller);
    g_assert_false(einsora_controller_is_leading(f->controller));
    g_assert_true(einsora_controller_tick(standby));
    g_assert_cmpint(state_of(f, TENANT_A, first), ==, EINSORA_WORKLOAD_STATE_RUNNING);

    /* A leader that stops renewing loses it once it lapses (30 s), and
     * stops acting after two thirds of it without renewal. */
    f->clock.now_us += 21 * G_USEC_PER_SEC;
    g_assert_false(einsora_controller_is_leading(standby));
    g_assert_false(einsora_controller_tick(f->controller));
    f->clock.now_us += 10 * G_USEC_PER_SEC;
    g_assert_true(einsora_controller_tick(f->controller));
    g_assert_false(einsora_controller_tick(standby));

    /* A holder that outlives the process (the machine's ID) takes its own
     * lease back at once after a crash, without waiting for it to lapse. */
    {
        g_autoptr(EinsoraController) before = controller_new(f, f->catalog);
        g_autoptr(EinsoraController) after = controller_new(f, f->catalog);
        f->clock.now_us += 31 * G_USEC_PER_SEC;
        einsora_controller_set_lease_holder(before, "0190b5d2-7c4e-7abc-8def-0000000000c1");
        einsora_controller_set_lease_holder(after, "0190b5d2-7c4e-7abc-8def-0000000000c1");
        g_assert_true(einsora_controller_tick(before));
        g_assert_false(einsora_controller_tick(f->controller));
        /* "before" crashed without releasing; its successor leads now. */
        g_assert_true(einsora_controller_tick(after));
    }
}

/* Log lines as the test's writer saw them: each line's fields, while a
 * test captures. */
static GPtrArray *captured_lines;

static GLogWriterOutput
capture_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    if (captured_lines != NULL) {
        GHashTable *line = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        for (gsize i = 0; i < n_fields; i++) {
            if (fields[i].length < 0)
                g_hash_table_insert(line, g_strdup(fields[i].key), g_strdup(fields[i].value));
        }
        g_ptr_array_add(captured_lines, line);
    }
    return g_log_writer_default(level, fields, n_fields, user_data);
}

/* The controller's line about a workload carries its IDs as fields
 * (einsora-log.h), so journalctl EINSORA_WORKLOAD_ID=... finds it. */
static void
test_log_fields(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, f->alice, "cpu-2c-4g");
    gboolean found = FALSE;

    captured_lines = g_ptr_array_new_with_free_func((GDestroyNotify)g_hash_table_unref);
    einsora_fake_backend_fail_next(f->backend, EINSORA_FAKE_CALL_RUN);
    pass(f);
    for (guint i = 0; i < captured_lines->len; i++) {
        GHashTable *line = g_ptr_array_index(captured_lines, i);
        const char *message = g_hash_table_lookup(line, "MESSAGE");
        if (message == NULL || strstr(message, "run failed") == NULL)
            continue;
        found = TRUE;
        g_assert_cmpstr(g_hash_table_lookup(line, "EINSORA_WORKLOAD_ID"), ==, id);
        g_assert_cmpstr(g_hash_table_lookup(line, "EINSORA_TENANT_ID"), ==, TENANT_A);
        g_assert_nonnull(g_hash_table_lookup(line, "EINSORA_MACHINE_ID"));
        g_assert_cmpstr(g_hash_table_lookup(line, "GLIB_DOMAIN"), ==, "einsora-controller");
    }
    g_clear_pointer(&captured_lines, g_ptr_array_unref);
    g_assert_true(found);
}

/* Waking */

/* Runs what the main loop has ready now, without waiting for timers
 * (the controller's own tick is a minute away in these tests). */
static void
drain(void)
{
    while (g_main_context_iteration(NULL, FALSE))
        ;
}

static void
on_intent_changed(EinsoraService *service, const char *workload_id, gpointer user_data)
{
    einsora_controller_wake(user_data);
}

/* Wired as the daemon wires it. */
static void
wake_on_intent(Fixture *f)
{
    g_signal_connect_object(f->service, "intent-changed", G_CALLBACK(on_intent_changed),
                            f->controller, 0);
}

/* A create wakes a started controller: it is admitted although the next
 * tick is a minute away; one that isn't started isn't woken. */
static void
test_wake_create_admits_at_once(Fixture *f, gconstpointer data)
{
    g_autofree gchar *early = NULL;
    g_autofree gchar *id = NULL;

    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    wake_on_intent(f);
    early = launch(f, f->alice, "cpu-2c-4g");
    drain();
    g_assert_cmpuint(einsora_controller_count_passes(f->controller), ==, 0);
    g_assert_cmpint(state_of(f, TENANT_A, early), ==, EINSORA_WORKLOAD_STATE_PENDING);

    einsora_controller_start(f->controller, 60 * G_USEC_PER_SEC);
    id = launch(f, f->alice, "cpu-2c-4g");
    drain();
    g_assert_cmpuint(einsora_controller_count_passes(f->controller), ==, 1);
    g_assert_cmpint(state_of(f, TENANT_A, early), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_nonnull(einsora_fake_backend_get_spec(f->backend, id));

    /* A stop wakes it too: parked at once. */
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraWorkload) stopped =
            einsora_service_stop_workload(f->service, f->alice, id, &error);
        g_assert_no_error(error);
    }
    einsora_fake_backend_set_status(f->backend, id, EINSORA_RUNTIME_PARKED, NULL);
    while (state_of(f, TENANT_A, id) != EINSORA_WORKLOAD_STATE_STOPPED)
        g_main_context_iteration(NULL, TRUE); /* the woken pass keeps its gap */
    g_assert_cmpuint(einsora_controller_count_passes(f->controller), ==, 2);

    einsora_controller_stop(f->controller);
    g_clear_pointer(&early, g_free);
    early = launch(f, f->alice, "cpu-2c-4g");
    drain();
    g_assert_cmpuint(einsora_controller_count_passes(f->controller), ==, 2);
    g_assert_cmpint(state_of(f, TENANT_A, early), ==, EINSORA_WORKLOAD_STATE_PENDING);
}

/* Many creates before the loop turns share one pass, and a wake asked
 * for while a pass is pending adds none: passes are counted, not timed. */
static void
test_wake_coalesces(Fixture *f, gconstpointer data)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);

    einsora_fake_backend_set_auto_complete(f->backend, FALSE);
    wake_on_intent(f);
    einsora_controller_start(f->controller, 60 * G_USEC_PER_SEC);
    for (guint i = 0; i < 50; i++)
        g_ptr_array_add(ids, launch(f, f->alice, "cpu-2c-4g"));
    for (guint i = 0; i < 10; i++)
        einsora_controller_wake(f->controller);
    drain();
    g_assert_cmpuint(einsora_controller_count_passes(f->controller), ==, 1);
    for (guint i = 0; i < ids->len; i++)
        g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, i)), ==,
                        EINSORA_WORKLOAD_STATE_PROVISIONING);

    /* The next burst gets a pass of its own, and only one. */
    for (guint i = 0; i < 20; i++)
        g_ptr_array_add(ids, launch(f, f->alice, "cpu-2c-4g"));
    while (state_of(f, TENANT_A, g_ptr_array_index(ids, ids->len - 1)) ==
           EINSORA_WORKLOAD_STATE_PENDING)
        g_main_context_iteration(NULL, TRUE);
    drain();
    g_assert_cmpuint(einsora_controller_count_passes(f->controller), ==, 2);
    for (guint i = 0; i < ids->len; i++)
        g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, i)), ==,
                        EINSORA_WORKLOAD_STATE_PROVISIONING);
}

/* Admissions are counted by kind, and each one's wait runs from when it
 * became pending: a workload queued for capacity waited from its
 * create, not from the pass that queued it. Every pass is timed. */
static void
test_metrics_admission_wait(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    const char *const notebook[] = {"notebook", NULL};
    const char *const endpoint[] = {"endpoint", NULL};
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    EinsoraMetric *admissions, *waits, *passes;
    g_autoptr(GString) text = NULL;

    einsora_controller_set_metrics(f->controller, metrics);
    admissions = einsora_metrics_counter(metrics, "einsora_admissions_total", "",
                                         (const char *const[]){"kind", NULL});
    waits = einsora_metrics_histogram(metrics, "einsora_admission_wait_seconds", "", NULL, NULL, 0);
    passes = einsora_metrics_histogram(metrics, "einsora_controller_pass_duration_seconds", "",
                                       NULL, NULL, 0);
    for (guint i = 0; i < 3; i++)
        g_ptr_array_add(ids, launch(f, f->alice, "l40s-48gb"));

    /* Two GPUs: two admitted a second after their create, one queued. */
    pass(f);
    g_assert_cmpfloat(einsora_metric_get(admissions, notebook), ==, 2);
    g_assert_cmpfloat(einsora_metric_get(waits, NULL), ==, 2);
    g_assert_cmpfloat(einsora_metric_get_sum(waits, NULL), ==, 2);
    g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, 2)), ==,
                    EINSORA_WORKLOAD_STATE_QUEUED);

    f->clock.now_us += 90 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpfloat(einsora_metric_get(admissions, notebook), ==, 2);
    einsora_fake_backend_set_units(f->backend, "l40s-48gb", 3);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, g_ptr_array_index(ids, 2)), ==,
                    EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpfloat(einsora_metric_get(admissions, notebook), ==, 3);
    g_assert_cmpfloat(einsora_metric_get(admissions, endpoint), ==, 0);
    g_assert_cmpfloat(einsora_metric_get(waits, NULL), ==, 3);
    /* 1 + 1 + (1 + 90 + 1 + 1). */
    g_assert_cmpfloat(einsora_metric_get_sum(waits, NULL), ==, 95);
    g_assert_cmpfloat(einsora_metric_get(passes, NULL), ==, 3);

    text = einsora_metrics_render(metrics);
    g_assert_nonnull(strstr(text->str, "einsora_admissions_total{kind=\"endpoint\"} 0\n"
                                       "einsora_admissions_total{kind=\"notebook\"} 3\n"));
    g_assert_nonnull(strstr(text->str, "einsora_admission_wait_seconds_bucket{le=\"60\"} 2\n"));
    g_assert_nonnull(strstr(text->str, "einsora_admission_wait_seconds_bucket{le=\"300\"} 3\n"));
}

static gchar *
launch_idle(Fixture *f, gint64 idle_timeout_s)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest request = {"notebook", "idle", "cpu-2c-4g", "jupyter",     NULL,
                                      NULL,       NULL,   NULL,        idle_timeout_s};
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, f->alice, &request, &error);

    g_assert_no_error(error);
    return g_strdup(workload->id);
}

static void
pass_until_running(Fixture *f, const char *id)
{
    for (guint i = 0; i < 5 && state_of(f, TENANT_A, id) != EINSORA_WORKLOAD_STATE_RUNNING; i++)
        pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);
}

/* Idle auto-stop: a busy kernel is never idle; activity the server says
 * or the proxy saw counts; past the limit, stopped with a reason that
 * says since when, its data kept (stopping, then stopped). */
static void
test_idle_stop(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch_idle(f, 600);
    g_autofree gchar *proxied = launch_idle(f, 600);
    g_autofree gchar *unlimited = launch_idle(f, -1);
    g_autoptr(GPtrArray) events = NULL;
    g_autoptr(GDateTime) since = NULL;
    g_autofree gchar *expected = NULL;
    gint64 last_active;

    pass_until_running(f, id);
    pass_until_running(f, proxied);
    pass_until_running(f, unlimited);
    {
        g_autoptr(EinsoraWorkload) workload = get(f, TENANT_A, id);
        g_autoptr(EinsoraWorkload) none = get(f, TENANT_A, unlimited);
        g_assert_cmpint(workload->idle_timeout_s, ==, 600);
        g_assert_cmpint(none->idle_timeout_s, ==, 0);
    }

    /* A kernel busy for two hours: not idle. */
    einsora_fake_backend_set_activity(f->backend, id, 1, f->clock.now_us);
    einsora_fake_backend_set_activity(f->backend, proxied, 1, f->clock.now_us);
    f->clock.now_us += G_GINT64_CONSTANT(2) * 3600 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);
    /* Its kernel finished five minutes ago: idle, but not for long enough. */
    last_active = f->clock.now_us - 5 * 60 * G_USEC_PER_SEC;
    einsora_fake_backend_set_activity(f->backend, id, 0, last_active);
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_RUNNING);
    /* Its server says nothing of use (as llama-server), but the proxy
     * saw a request: not idle either. */
    einsora_fake_backend_set_activity(f->backend, proxied, 0, 0);
    einsora_service_note_activity(f->service, proxied);
    f->clock.now_us += 5 * 60 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_STOPPING);
    g_assert_cmpint(state_of(f, TENANT_A, proxied), ==, EINSORA_WORKLOAD_STATE_RUNNING);
    events = events_of(f, TENANT_A, id);
    since = g_date_time_new_from_unix_utc(last_active / G_USEC_PER_SEC);
    expected = g_date_time_format(since, "stopped after 10m idle: no activity since %H:%M UTC");
    g_assert_cmpstr(last_reason(events), ==, expected);
    /* Stopped as any stop: parked, its data kept. */
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, id), ==, EINSORA_WORKLOAD_STATE_STOPPED);
    g_assert_cmpint(einsora_fake_backend_get_status(f->backend, id), ==, EINSORA_RUNTIME_PARKED);
    assert_timeline_consistent(f, TENANT_A, id);

    /* Ten minutes after the proxy last saw it: stopped too. */
    f->clock.now_us += 5 * 60 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, proxied), ==, EINSORA_WORKLOAD_STATE_STOPPING);
    /* No limit: never, however long. */
    f->clock.now_us += G_GINT64_CONSTANT(30) * 24 * 3600 * G_USEC_PER_SEC;
    pass(f);
    g_assert_cmpint(state_of(f, TENANT_A, unlimited), ==, EINSORA_WORKLOAD_STATE_RUNNING);
}

/* The daemon's default applies when a create names no limit; one that
 * says none (0 in the API, -1 here) gets none; a limit past a year is
 * refused. */
static void
test_idle_default(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest too_long = {"notebook", "idle", "cpu-2c-4g",
                                       "jupyter",  NULL,   NULL,
                                       NULL,       NULL,   EINSORA_IDLE_TIMEOUT_MAX_S + 1};
    g_autoptr(EinsoraWorkload) refused = NULL;

    einsora_service_set_default_idle_timeout(f->service, 3600);
    {
        g_autofree gchar *id = launch_idle(f, 0);
        g_autofree gchar *none = launch_idle(f, -1);
        g_autofree gchar *own = launch_idle(f, 60);
        g_autoptr(EinsoraWorkload) a = get(f, TENANT_A, id);
        g_autoptr(EinsoraWorkload) b = get(f, TENANT_A, none);
        g_autoptr(EinsoraWorkload) c = get(f, TENANT_A, own);
        g_assert_cmpint(a->idle_timeout_s, ==, 3600);
        g_assert_cmpint(b->idle_timeout_s, ==, 0);
        g_assert_cmpint(c->idle_timeout_s, ==, 60);
    }
    refused = einsora_service_create_workload(f->service, f->alice, &too_long, &error);
    g_assert_null(refused);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
}

int
main(int argc, char **argv)
{
    int status;

    g_log_set_writer_func(capture_writer, NULL, NULL);
    g_test_init(&argc, &argv, NULL);
    if (g_strcmp0(g_getenv("EINSORA_TEST_STORE"), "postgres") == 0) {
        postgres = einsora_test_postgres_start();
        if (postgres == NULL) {
            g_print("1..0 # SKIP PostgreSQL 15 isn't installed (packaging/dev/deps.sh test)\n");
            return 77;
        }
    }
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/controller/admit/provisioning-then-running", test_admit_and_run);
    ADD("/controller/admit/capacity-queues-trusted-and-untrusted",
        test_capacity_queues_with_reasons);
    ADD("/controller/admit/fifo-with-backfill", test_backfill);
    ADD("/controller/admit/aging-stops-backfill", test_aging_stops_backfill);
    ADD("/controller/admit/fallback", test_fallback);
    {
        static const char *const names[] = {"cpu-short-of-cpus", "cpu-short-of-memory",
                                            "gpu-short-of-gpus"};
        G_STATIC_ASSERT(G_N_ELEMENTS(names) == G_N_ELEMENTS(short_cases));
        for (guint i = 0; i < G_N_ELEMENTS(short_cases); i++) {
            g_autofree gchar *path =
                g_strdup_printf("/controller/admit/queued-reason-names-what-is-short/%s", names[i]);
            g_test_add(path, Fixture, &short_cases[i], fixture_set_up,
                       test_queued_reason_names_what_is_short, fixture_tear_down);
        }
    }
    ADD("/controller/admit/settling-admits-nothing", test_settling_admits_nothing);
    /* These count and fail commits with SQLite's commit hook, or count
     * statements with its trace; the group logic they check is the
     * controller's, whichever store. */
    if (postgres == NULL) {
        ADD("/controller/admit/one-transaction-per-group", test_admission_group_commit);
        ADD("/controller/admit/lost-group-is-decided-again", test_admission_group_lost);
        ADD("/controller/admit/reads-each-machine-once", test_admission_reads_machine_once);
    }
    ADD("/controller/runtime/unreachable-noted-once", test_runtime_unreachable_is_noted_once);
    ADD("/controller/observe/failures-with-fixed-reasons", test_failures);
    ADD("/controller/observe/provisioning-timeout-and-unknown", test_provisioning_timeout);
    ADD("/controller/observe/stale-attempt-answers-nothing", test_stale_attempt);
    ADD("/controller/log/workload-fields", test_log_fields);
    ADD("/controller/park-and-remove", test_stop_and_delete);
    ADD("/controller/catalog/withdrawn-class-keeps-waiting", test_withdrawn_class);
    ADD("/controller/lease/one-leader-per-region", test_region_lease);
    ADD("/controller/wake/create-admits-at-once", test_wake_create_admits_at_once);
    ADD("/controller/wake/coalesces", test_wake_coalesces);
    ADD("/controller/metrics/admissions-and-their-wait", test_metrics_admission_wait);
    ADD("/controller/idle/stopped-past-its-limit", test_idle_stop);
    ADD("/controller/idle/default-and-none", test_idle_default);
#undef ADD
    status = g_test_run();
    einsora_test_postgres_stop(postgres);
    return status;
}
