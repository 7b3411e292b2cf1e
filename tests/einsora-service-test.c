#include <gio/gio.h>
#include <sqlite3.h>

#include "einsora-error.h"
#include "einsora-reason.h"
#include "einsora-service.h"
#include "einsora-workload-json.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-models.h"
#include "einsora-uuid.h"

#define TENANT_A "0190b5d2-7c4e-7abc-8def-00000000000a"
#define TENANT_B "0190b5d2-7c4e-7abc-8def-00000000000b"
#define START_US G_GINT64_CONSTANT(1764406000000000)

/* A catalog of the test's own, so the tests don't depend on what the
 * built-in catalog happens to offer. */
static const char test_catalog[] =
    "{\"version\": 1,"
    " \"regions\": [{\"name\": \"local\", \"description\": \"this machine\"},"
    "               {\"name\": \"eu\", \"description\": \"elsewhere\"}],"
    " \"classes\": ["
    "  {\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096, \"devices\": 0,"
    "   \"accelerator\": \"cpu\"},"
    "  {\"name\": \"l40s-48gb\", \"cpus\": 8, \"memory_mib\": 65536, \"devices\": 1,"
    "   \"accelerator\": \"nvidia\"},"
    "  {\"name\": \"h100-80gb-x2\", \"cpus\": 16, \"memory_mib\": 131072, \"devices\": 2,"
    "   \"accelerator\": \"nvidia\"},"
    "  {\"name\": \"eu-only\", \"cpus\": 2, \"memory_mib\": 4096, \"devices\": 0,"
    "   \"accelerator\": \"cpu\", \"regions\": [\"eu\"]},"
    "  {\"name\": \"apple-32gb\", \"cpus\": 8, \"memory_mib\": 32768, \"devices\": 1,"
    "   \"accelerator\": \"apple\"}],"
    " \"images\": ["
    "  {\"name\": \"jupyter\", \"description\": \"notebooks\", \"kinds\": [\"notebook\"],"
    "   \"runtimes\": {\"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\"]},"
    "                  \"nvidia\": {\"reference\": \"jupyter-cuda\", \"driver_refs\": [\"sim\"]}}},"
    "  {\"name\": \"vllm\", \"description\": \"endpoints\", \"kinds\": [\"endpoint\"],"
    "   \"runtimes\": {\"nvidia\": {\"reference\": \"vllm\", \"driver_refs\": [\"sim\"]}}}],"
    " \"drivers\": [{\"name\": \"sim\", \"kinds\": [\"notebook\", \"endpoint\", \"vm\"],"
    "               \"accelerators\": [\"cpu\", \"apple\", \"nvidia\", \"amd\"]}],"
    " \"gpu_models\": []}";

typedef struct {
    gint64 now_us;
} ManualClock;

static gint64
manual_now(gpointer user_data)
{
    ManualClock *clock = user_data;
    return clock->now_us;
}

typedef struct {
    gchar *dir;
    gchar *db_path;
    ManualClock clock;
    EinsoraCatalog *catalog;
    EinsoraSqliteStore *store;
    EinsoraService *service;
    EinsoraActor *alice; /* tenant A */
    EinsoraActor *bob;   /* tenant B */
} Fixture;

static EinsoraSqliteStore *
open_migrated(const char *path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, &error);

    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(store, START_US, &error));
    g_assert_no_error(error);
    return g_steal_pointer(&store);
}

static void
add_tenant(EinsoraStore *store, const char *id, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) tenant =
        einsora_tenant_new(id, name, FALSE, "2025-11-29T08:46:40.000000Z");

    g_assert_true(einsora_store_insert_tenant(store, tenant, &error));
    g_assert_no_error(error);
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    f->dir = einsora_test_dir_new();
    f->db_path = g_build_filename(f->dir, "einsora.db", NULL);
    f->clock.now_us = START_US;
    f->catalog = einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_assert_no_error(error);
    f->store = open_migrated(f->db_path);
    einsora_sqlite_store_set_clock(f->store, manual_now, &f->clock);
    add_tenant(EINSORA_STORE(f->store), TENANT_A, "acme");
    add_tenant(EINSORA_STORE(f->store), TENANT_B, "globex");
    /* Room for the lifecycle tests; the quota tests use other classes. */
    g_assert_true(
        einsora_store_set_quota(EINSORA_STORE(f->store), TENANT_A, "l40s-48gb", 1000, &error));
    g_assert_no_error(error);
    f->service = einsora_service_new(EINSORA_STORE(f->store), f->catalog, manual_now, &f->clock);
    {
        g_autoptr(EinsoraModelStore) models = einsora_test_model_store_new(f->dir, "tiny");
        einsora_service_set_model_store(f->service, models, TENANT_A);
    }
    f->alice = einsora_actor_new(TENANT_A, "0190b5d2-7c4e-7abc-8def-0000000000a1",
                                 "alice@acme.example", "browser session");
    f->bob = einsora_actor_new(TENANT_B, "0190b5d2-7c4e-7abc-8def-0000000000b1",
                               "bob@globex.example", "API token \"laptop\" (tsk_Ab3x…)");
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->service);
    g_clear_object(&f->store);
    g_clear_object(&f->catalog);
    einsora_actor_free(f->alice);
    einsora_actor_free(f->bob);
    einsora_test_dir_remove(f->dir);
    g_free(f->db_path);
    g_free(f->dir);
}

/* A create with an Idempotency-Key saves the key's record (the 201 and
 * the workload's JSON) in its own transaction; a refused create saves
 * nothing. */
static EinsoraWorkload *create(Fixture *f, const EinsoraActor *actor, const char *gpu_class,
                               GError **error);

static void
test_create_keeps_idempotency_record(Fixture *f, gconstpointer data)
{
    const char *digest = "0000000000000000000000000000000000000000000000000000000000000abc";
    EinsoraWorkloadRequest request = {"notebook", "keyed", "cpu-2c-4g", "jupyter",
                                      NULL,       "key-1", digest};
    EinsoraWorkloadRequest refused = {"notebook", "keyed", "no-such-class", "jupyter",
                                      NULL,       "key-2", digest};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, f->alice, &request, &error);
    g_autoptr(EinsoraWorkload) none = NULL;
    g_autoptr(EinsoraIdempotencyRecord) record = NULL;
    g_autoptr(EinsoraIdempotencyRecord) missing = NULL;
    g_autoptr(JsonNode) node = NULL;
    g_autofree gchar *body = NULL;

    g_assert_no_error(error);
    record =
        einsora_service_get_idempotency_record(f->service, f->alice->tenant_id, "key-1", &error);
    g_assert_no_error(error);
    g_assert_nonnull(record);
    g_assert_cmpuint(record->response_status, ==, 201);
    g_assert_cmpstr(record->request_sha256, ==, digest);
    node = einsora_workload_to_json(workload);
    body = json_to_string(node, FALSE);
    g_assert_cmpstr(record->response_body, ==, body);

    none = einsora_service_create_workload(f->service, f->alice, &refused, &error);
    g_assert_null(none);
    g_clear_error(&error);
    missing =
        einsora_service_get_idempotency_record(f->service, f->alice->tenant_id, "key-2", &error);
    g_assert_null(missing);
    g_clear_error(&error);
}

static EinsoraWorkload *
create(Fixture *f, const EinsoraActor *actor, const char *gpu_class, GError **error)
{
    EinsoraWorkloadRequest request = {"notebook", "analysis", gpu_class, "jupyter", NULL};
    return einsora_service_create_workload(f->service, actor, &request, error);
}

static EinsoraWorkload *
create_ok(Fixture *f, const char *gpu_class)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkload *workload = create(f, f->alice, gpu_class, &error);

    g_assert_no_error(error);
    g_assert_nonnull(workload);
    return workload;
}

static guint
count_events(Fixture *f, const char *tenant_id, const char *workload_id)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events =
        einsora_service_list_events(f->service, tenant_id, workload_id, &error);

    g_assert_no_error(error);
    return events->len;
}

/* A cluster-style placement: the backend picks the node. */
static const EinsoraPlacement sim_placement = {"l40s-48gb", NULL, NULL};

static void
step(Fixture *f, EinsoraWorkload *workload, EinsoraWorkloadState to)
{
    g_autoptr(GError) error = NULL;
    const EinsoraPlacement *placement =
        to == EINSORA_WORKLOAD_STATE_PROVISIONING ? &sim_placement : NULL;

    g_assert_true(
        einsora_service_transition(f->service, workload, to, "test step", placement, &error));
    g_assert_no_error(error);
    g_assert_cmpint(workload->state, ==, to);
}

/* Drives a new workload along allowed steps to @state. */
static void
drive_to(Fixture *f, EinsoraWorkload *workload, EinsoraWorkloadState state)
{
    static const EinsoraWorkloadState paths[EINSORA_WORKLOAD_STATE_COUNT][5] = {
        [EINSORA_WORKLOAD_STATE_PENDING] = {EINSORA_WORKLOAD_STATE_PENDING},
        [EINSORA_WORKLOAD_STATE_QUEUED] = {EINSORA_WORKLOAD_STATE_QUEUED},
        [EINSORA_WORKLOAD_STATE_PROVISIONING] = {EINSORA_WORKLOAD_STATE_PROVISIONING},
        [EINSORA_WORKLOAD_STATE_RUNNING] = {EINSORA_WORKLOAD_STATE_PROVISIONING,
                                            EINSORA_WORKLOAD_STATE_RUNNING},
        [EINSORA_WORKLOAD_STATE_STOPPING] = {EINSORA_WORKLOAD_STATE_PROVISIONING,
                                             EINSORA_WORKLOAD_STATE_RUNNING,
                                             EINSORA_WORKLOAD_STATE_STOPPING},
        [EINSORA_WORKLOAD_STATE_STOPPED] = {EINSORA_WORKLOAD_STATE_PROVISIONING,
                                            EINSORA_WORKLOAD_STATE_RUNNING,
                                            EINSORA_WORKLOAD_STATE_STOPPING,
                                            EINSORA_WORKLOAD_STATE_STOPPED},
        [EINSORA_WORKLOAD_STATE_FAILED] = {EINSORA_WORKLOAD_STATE_PROVISIONING,
                                           EINSORA_WORKLOAD_STATE_FAILED},
        [EINSORA_WORKLOAD_STATE_DELETING] = {EINSORA_WORKLOAD_STATE_DELETING},
        [EINSORA_WORKLOAD_STATE_DELETED] = {EINSORA_WORKLOAD_STATE_DELETING,
                                            EINSORA_WORKLOAD_STATE_DELETED},
    };

    for (guint i = 0; i < G_N_ELEMENTS(paths[state]); i++) {
        EinsoraWorkloadState next = paths[state][i];
        if (next == EINSORA_WORKLOAD_STATE_PENDING)
            break; /* end of the path (a new workload is already pending) */
        step(f, workload, next);
    }
    g_assert_cmpint(workload->state, ==, state);
}

static void
test_create(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autoptr(EinsoraSqliteStore) other = NULL;
    EinsoraWorkloadEvent *created;
    guint8 bytes[16];

    g_assert_true(einsora_uuid_parse(workload->id, bytes, NULL));
    g_assert_cmpint(einsora_uuid_v7_unix_ms(bytes), ==, START_US / 1000);
    g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PENDING);
    g_assert_cmpstr(workload->tenant_id, ==, TENANT_A);
    g_assert_cmpstr(workload->region, ==, "local");
    g_assert_cmpstr(workload->gpu_class, ==, "l40s-48gb");
    g_assert_null(workload->placed_class);
    g_assert_cmpint(workload->gpus, ==, 1);
    g_assert_cmpint(workload->version, ==, 0);
    g_assert_cmpstr(workload->created_at, ==, "2025-11-29T08:46:40.000000Z");

    events = einsora_service_list_events(f->service, TENANT_A, workload->id, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(events->len, ==, 1);
    created = g_ptr_array_index(events, 0);
    g_assert_false(created->has_from_state);
    g_assert_cmpint(created->to_state, ==, EINSORA_WORKLOAD_STATE_PENDING);
    g_assert_cmpstr(created->reason, ==, "created by alice@acme.example (browser session)");

    /* What was returned is what another connection reads back. */
    other = open_migrated(f->db_path);
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_store_get_workload(EINSORA_STORE(other), TENANT_A, workload->id, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(stored->name, ==, "analysis");
        g_assert_cmpstr(stored->image, ==, "jupyter");
        g_assert_cmpint(stored->kind, ==, EINSORA_WORKLOAD_KIND_NOTEBOOK);
    }
}

static void
test_create_refuses_bad_input(Fixture *f, gconstpointer data)
{
    g_autofree gchar *long_name = g_strnfill(EINSORA_WORKLOAD_NAME_MAX_BYTES + 1, 'x');
    const struct {
        EinsoraWorkloadRequest request;
        const char *message;
    } table[] = {
        {{"container", "n", "cpu-2c-4g", "jupyter", NULL}, "kind"},
        {{NULL, "n", "cpu-2c-4g", "jupyter", NULL}, "kind"},
        {{"notebook", "", "cpu-2c-4g", "jupyter", NULL}, "name"},
        {{"notebook", "two\nlines", "cpu-2c-4g", "jupyter", NULL}, "control"},
        {{"notebook", "evil\u202Egnp.exe", "cpu-2c-4g", "jupyter", NULL}, "invisible"},
        {{"notebook", " padded", "cpu-2c-4g", "jupyter", NULL}, "space"},
        {{"notebook", long_name, "cpu-2c-4g", "jupyter", NULL}, "name"},
        {{"notebook", "bad \xff utf8", "cpu-2c-4g", "jupyter", NULL}, "UTF-8"},
        {{"notebook", "n", "cpu-2c-4g", "jupyter", "mars"}, "region"},
        {{"notebook", "n", "tpu-v5", "jupyter", NULL}, "gpu_class"},
        {{"notebook", "n", NULL, "jupyter", NULL}, "gpu_class"},
        {{"notebook", "n", "eu-only", "jupyter", NULL}, "not offered in this region"},
        {{"notebook", "n", "cpu-2c-4g", "ubuntu", NULL}, "image"},
        {{"notebook", "n", "cpu-2c-4g", NULL, NULL}, "image"},
        {{"notebook", "n", "l40s-48gb", "vllm", NULL}, "can't run as a notebook"},
        {{"notebook", "n", "apple-32gb", "jupyter", NULL}, "no runtime"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraWorkload) workload =
            einsora_service_create_workload(f->service, f->alice, &table[i].request, &error);
        g_test_message("case %u: %s", i, error != NULL ? error->message : "(accepted)");
        g_assert_null(workload);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_nonnull(strstr(error->message, table[i].message));
    }
    /* Bad input changes nothing. */
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) all =
            einsora_service_list_workloads(f->service, TENANT_A, TRUE, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(all->len, ==, 0);
    }
    /* The name is optional: the kind and the ID's tail stand in. */
    {
        EinsoraWorkloadRequest request = {"notebook", NULL, "cpu-2c-4g", "jupyter", NULL};
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraWorkload) workload =
            einsora_service_create_workload(f->service, f->alice, &request, &error);
        g_autofree gchar *expected = NULL;
        g_assert_no_error(error);
        expected = g_strdup_printf("notebook-%s", workload->id + 30);
        g_assert_cmpstr(workload->name, ==, expected);
        drive_to(f, workload, EINSORA_WORKLOAD_STATE_DELETED);
    }
    /* The same class is fine in the region that offers it. */
    {
        EinsoraWorkloadRequest request = {"notebook", "n", "eu-only", "jupyter", "eu"};
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraWorkload) workload =
            einsora_service_create_workload(f->service, f->alice, &request, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(workload->region, ==, "eu");
    }
}

static void
test_every_allowed_step(Fixture *f, gconstpointer data)
{
    guint steps = 0;

    for (guint from = 0; from < EINSORA_WORKLOAD_STATE_COUNT; from++) {
        for (guint to = 0; to < EINSORA_WORKLOAD_STATE_COUNT; to++) {
            g_autoptr(EinsoraWorkload) workload = NULL;
            g_autoptr(GPtrArray) events = NULL;
            g_autoptr(GError) error = NULL;
            EinsoraWorkloadEvent *last;
            gint64 version;
            guint before;

            if (!einsora_workload_state_can_transition(from, to))
                continue;
            g_test_message("%s -> %s", einsora_workload_state_to_string(from),
                           einsora_workload_state_to_string(to));
            workload = create_ok(f, "l40s-48gb");
            drive_to(f, workload, from);
            version = workload->version;
            before = count_events(f, TENANT_A, workload->id);
            f->clock.now_us += G_USEC_PER_SEC;

            g_assert_true(einsora_service_transition(
                f->service, workload, to, "step\nwith password=hunter2",
                to == EINSORA_WORKLOAD_STATE_PROVISIONING ? &sim_placement : NULL, &error));
            g_assert_no_error(error);
            g_assert_cmpint(workload->state, ==, to);
            g_assert_cmpint(workload->version, ==, version + 1);

            events = einsora_service_list_events(f->service, TENANT_A, workload->id, &error);
            g_assert_no_error(error);
            g_assert_cmpuint(events->len, ==, before + 1);
            last = g_ptr_array_index(events, events->len - 1);
            g_assert_true(last->has_from_state);
            g_assert_cmpint(last->from_state, ==, from);
            g_assert_cmpint(last->to_state, ==, to);
            /* The reason was cleaned before it was stored. */
            g_assert_cmpstr(last->reason, ==, "step with password=[redacted]");
            g_assert_cmpstr(workload->updated_at, ==, last->created_at);
            steps++;
        }
    }
    g_assert_cmpuint(steps, ==, 19);
}

static void
test_every_forbidden_step(Fixture *f, gconstpointer data)
{
    guint refused = 0;

    for (guint from = 0; from < EINSORA_WORKLOAD_STATE_COUNT; from++) {
        g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");

        drive_to(f, workload, from);
        for (guint to = 0; to < EINSORA_WORKLOAD_STATE_COUNT; to++) {
            g_autoptr(GError) error = NULL;
            g_autoptr(EinsoraWorkload) copy = NULL;
            g_autoptr(EinsoraWorkload) stored = NULL;
            guint before;

            if (einsora_workload_state_can_transition(from, to))
                continue;
            before = count_events(f, TENANT_A, workload->id);
            copy = einsora_workload_copy(workload);
            g_assert_false(einsora_service_transition(
                f->service, copy, to, "nope",
                to == EINSORA_WORKLOAD_STATE_PROVISIONING ? &sim_placement : NULL, &error));
            g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
            /* Nothing changed: not the caller's copy, the row, or the timeline. */
            g_assert_cmpint(copy->state, ==, from);
            g_assert_cmpint(copy->version, ==, workload->version);
            stored =
                einsora_store_get_workload(EINSORA_STORE(f->store), TENANT_A, workload->id, NULL);
            g_assert_cmpint(stored->state, ==, from);
            g_assert_cmpint(stored->version, ==, workload->version);
            g_assert_cmpuint(count_events(f, TENANT_A, workload->id), ==, before);
            refused++;
        }
    }
    g_assert_cmpuint(refused, ==, EINSORA_WORKLOAD_STATE_COUNT * EINSORA_WORKLOAD_STATE_COUNT - 19);
}

static void
test_placement(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(GError) error = NULL;
    const EinsoraPlacement on_machine = {"l40s-48gb", "0190b5d2-7c4e-7abc-8def-0000000000c1",
                                         "sim"};
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    machine->id = g_strdup(on_machine.machine_id);
    machine->tenant_id = g_strdup(TENANT_A);
    machine->name = g_strdup("workstation");
    machine->region = g_strdup("local");
    machine->os = g_strdup("linux");
    machine->cpus = 16;
    machine->memory_mib = 65536;
    machine->created_at = g_strdup("2025-11-29T08:46:40.000000Z");
    g_assert_true(einsora_store_insert_machine(EINSORA_STORE(f->store), machine, &error));
    g_assert_no_error(error);

    /* Provisioning without a placement, and a placement with another step,
     * are refused. */
    g_assert_false(einsora_service_transition(
        f->service, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, "x", NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
    g_clear_error(&error);
    g_assert_false(einsora_service_transition(f->service, workload, EINSORA_WORKLOAD_STATE_QUEUED,
                                              "x", &on_machine, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
    g_clear_error(&error);
    g_assert_cmpint(workload->attempt, ==, 0);

    g_assert_true(einsora_service_transition(f->service, workload,
                                             EINSORA_WORKLOAD_STATE_PROVISIONING, "admitted",
                                             &on_machine, &error));
    g_assert_no_error(error);
    g_assert_cmpint(workload->attempt, ==, 1);
    g_assert_cmpstr(workload->placed_class, ==, "l40s-48gb");
    g_assert_cmpstr(workload->machine_id, ==, on_machine.machine_id);
    g_assert_cmpstr(workload->driver, ==, "sim");
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_store_get_workload(EINSORA_STORE(f->store), TENANT_A, workload->id, &error);
        g_assert_no_error(error);
        g_assert_cmpint(stored->attempt, ==, 1);
        g_assert_cmpstr(stored->machine_id, ==, on_machine.machine_id);
        g_assert_cmpstr(stored->driver, ==, "sim");
    }
    /* Each admission is a new attempt. */
    step(f, workload, EINSORA_WORKLOAD_STATE_FAILED);
    step(f, workload, EINSORA_WORKLOAD_STATE_PENDING);
    step(f, workload, EINSORA_WORKLOAD_STATE_PROVISIONING);
    g_assert_cmpint(workload->attempt, ==, 2);
}

static void
add_machine(Fixture *f, const char *id, const char *owner, EinsoraSharing sharing)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    machine->id = g_strdup(id);
    machine->tenant_id = g_strdup(owner);
    machine->name = g_strdup("box");
    machine->region = g_strdup("local");
    machine->os = g_strdup("linux");
    machine->cpus = 8;
    machine->memory_mib = 16384;
    machine->sharing = sharing;
    machine->created_at = g_strdup("2025-11-29T08:46:40.000000Z");
    g_assert_true(einsora_store_insert_machine(EINSORA_STORE(f->store), machine, &error));
    g_assert_no_error(error);
}

/* What placement.c decides is re-checked where it is written: a caller
 * can't record a placement the rules forbid. */
static void
test_placement_rechecked(Fixture *f, gconstpointer data)
{
    const char *bobs_private = "0190b5d2-7c4e-7abc-8def-0000000000d1";
    const char *bobs_pool = "0190b5d2-7c4e-7abc-8def-0000000000d2";
    const char *alices = "0190b5d2-7c4e-7abc-8def-0000000000d3";
    const struct {
        EinsoraPlacement placement;
        const char *message;
    } refused[] = {
        {{"tpu-v9", NULL, NULL}, "class"},
        {{"eu-only", NULL, NULL}, "class"},
        {{"l40s-48gb", alices, NULL}, "go together"},
        {{"l40s-48gb", NULL, "sim"}, "go together"},
        {{"l40s-48gb", alices, "libvirt"}, "driver"},
        {{"l40s-48gb", alices, "no-such-driver"}, "driver"},
        {{"l40s-48gb", "0190b5d2-7c4e-7abc-8def-0000000000ff", "sim"}, "host"},
        {{"l40s-48gb", bobs_private, "sim"}, "host"},
        {{"l40s-48gb", bobs_pool, "sim"}, "isolation"},
    };
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");

    add_machine(f, bobs_private, TENANT_B, EINSORA_SHARING_PRIVATE);
    add_machine(f, bobs_pool, TENANT_B, EINSORA_SHARING_COMMUNITY);
    add_machine(f, alices, TENANT_A, EINSORA_SHARING_PRIVATE);
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autoptr(GError) error = NULL;
        g_test_message("case %u", i);
        g_assert_false(einsora_service_transition(f->service, workload,
                                                  EINSORA_WORKLOAD_STATE_PROVISIONING, "admitted",
                                                  &refused[i].placement, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
        g_assert_nonnull(strstr(error->message, refused[i].message));
        g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PENDING);
    }
    {
        const EinsoraPlacement fine = {"l40s-48gb", alices, "sim"};
        g_autoptr(GError) error = NULL;
        g_assert_true(einsora_service_transition(
            f->service, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, "admitted", &fine, &error));
        g_assert_no_error(error);
    }
}

static void
test_lost_cas_is_conflict(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(EinsoraWorkload) api_copy = einsora_workload_copy(workload);
    g_autoptr(EinsoraWorkload) controller_copy = einsora_workload_copy(workload);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) stored = NULL;

    /* The API and the controller both read the pending row and race. */
    g_assert_true(einsora_service_transition(f->service, api_copy, EINSORA_WORKLOAD_STATE_DELETING,
                                             "delete", NULL, &error));
    g_assert_no_error(error);
    g_assert_false(einsora_service_transition(
        f->service, controller_copy, EINSORA_WORKLOAD_STATE_QUEUED, "no room", NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_assert_cmpint(controller_copy->state, ==, EINSORA_WORKLOAD_STATE_PENDING);

    stored = einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, NULL);
    g_assert_cmpint(stored->state, ==, EINSORA_WORKLOAD_STATE_DELETING);
    g_assert_cmpint(stored->version, ==, 1);
    g_assert_cmpuint(count_events(f, TENANT_A, workload->id), ==, 2);

    /* Same state, stale version: a copy read in "failed" before the
     * workload went round (pending, provisioning, failed) again. */
    g_clear_error(&error);
    {
        g_autoptr(EinsoraWorkload) again = create_ok(f, "l40s-48gb");
        g_autoptr(EinsoraWorkload) stale = NULL;

        drive_to(f, again, EINSORA_WORKLOAD_STATE_FAILED);
        stale = einsora_workload_copy(again);
        step(f, again, EINSORA_WORKLOAD_STATE_PENDING);
        step(f, again, EINSORA_WORKLOAD_STATE_PROVISIONING);
        step(f, again, EINSORA_WORKLOAD_STATE_FAILED);
        g_assert_cmpint(stale->state, ==, again->state);
        g_assert_cmpint(stale->version, <, again->version);
        g_assert_false(einsora_service_transition(f->service, stale, EINSORA_WORKLOAD_STATE_PENDING,
                                                  "start", NULL, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    }
}

static void
exec_sql(Fixture *f, const char *sql)
{
    char *message = NULL;
    int rc = sqlite3_exec(einsora_sqlite_store_get_handle(f->store), sql, NULL, NULL, &message);

    if (rc != SQLITE_OK)
        g_error("%s: %s", sql, message);
}

/* The CAS, the placement and the timeline row are one transaction: when
 * the event can't be written, nothing is. */
static void
test_transition_is_atomic(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) all = NULL;

    exec_sql(f, "CREATE TEMP TRIGGER refuse_events BEFORE INSERT ON main.workload_events "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
    g_assert_false(einsora_service_transition(f->service, workload,
                                              EINSORA_WORKLOAD_STATE_PROVISIONING, "admitted",
                                              &sim_placement, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    g_assert_cmpint(workload->state, ==, EINSORA_WORKLOAD_STATE_PENDING);
    g_assert_cmpint(workload->attempt, ==, 0);
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, &error);
        g_assert_cmpint(stored->state, ==, EINSORA_WORKLOAD_STATE_PENDING);
        g_assert_cmpint(stored->version, ==, 0);
        g_assert_null(stored->placed_class);
    }
    /* A create whose creation row can't be written leaves no workload. */
    g_assert_null(create(f, f->alice, "cpu-2c-4g", &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    exec_sql(f, "DROP TRIGGER temp.refuse_events");

    all = einsora_service_list_workloads(f->service, TENANT_A, TRUE, &error);
    g_assert_cmpuint(all->len, ==, 1);
    g_assert_cmpuint(count_events(f, TENANT_A, workload->id), ==, 1);
}

static void
test_note(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(EinsoraWorkload) stale = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;
    EinsoraWorkloadEvent *note;

    drive_to(f, workload, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_true(
        einsora_service_note(f->service, workload, einsora_reason_run_retrying(), &error));
    g_assert_no_error(error);
    events = einsora_service_list_events(f->service, TENANT_A, workload->id, &error);
    note = g_ptr_array_index(events, events->len - 1);
    g_assert_true(einsora_workload_event_is_note(note));
    g_assert_cmpint(note->from_state, ==, EINSORA_WORKLOAD_STATE_QUEUED);
    g_assert_cmpstr(note->reason, ==, einsora_reason_run_retrying());
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, &error);
        g_assert_cmpint(stored->version, ==, workload->version);
        g_assert_cmpint(stored->state, ==, EINSORA_WORKLOAD_STATE_QUEUED);
    }

    /* A note about a state the workload has left is stale. */
    stale = einsora_workload_copy(workload);
    step(f, workload, EINSORA_WORKLOAD_STATE_DELETING);
    g_assert_false(einsora_service_note(f->service, stale, "late", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);

    /* A deleted workload's timeline is closed. */
    step(f, workload, EINSORA_WORKLOAD_STATE_DELETED);
    g_assert_false(einsora_service_note(f->service, workload, "after", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
}

static void
set_quota(Fixture *f, const char *tenant_id, const char *gpu_class, gint64 gpus)
{
    g_autoptr(GError) error = NULL;
    g_assert_true(
        einsora_store_set_quota(EINSORA_STORE(f->store), tenant_id, gpu_class, gpus, &error));
    g_assert_no_error(error);
}

static void
test_quota(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) first = NULL;
    g_autoptr(EinsoraWorkload) second = NULL;
    g_autoptr(EinsoraWorkload) third = NULL;
    g_autoptr(EinsoraWorkload) refused = NULL;
    EinsoraWorkloadRequest pair = {"notebook", "pair", "h100-80gb-x2", "jupyter", NULL};
    g_autoptr(GPtrArray) all = NULL;

    /* No quota row: no GPUs of that class. CPU classes need no quota. */
    refused = einsora_service_create_workload(f->service, f->alice, &pair, &error);
    g_assert_null(refused);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
    g_clear_error(&error);
    {
        g_autoptr(EinsoraWorkload) cpu = create_ok(f, "cpu-2c-4g");
        g_assert_cmpint(cpu->gpus, ==, 0);
    }

    /* Two GPUs each: a quota of 3 admits one, 4 admits two. */
    set_quota(f, TENANT_A, "h100-80gb-x2", 3);
    first = einsora_service_create_workload(f->service, f->alice, &pair, &error);
    g_assert_no_error(error);
    refused = einsora_service_create_workload(f->service, f->alice, &pair, &error);
    g_assert_null(refused);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
    g_assert_nonnull(strstr(error->message, "2 GPU(s) held, 2 requested, quota 3"));
    g_clear_error(&error);
    set_quota(f, TENANT_A, "h100-80gb-x2", 4);
    second = einsora_service_create_workload(f->service, f->alice, &pair, &error);
    g_assert_no_error(error);

    /* A quota is per tenant. */
    refused = einsora_service_create_workload(f->service, f->bob, &pair, &error);
    g_assert_null(refused);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
    g_clear_error(&error);

    /* Stopped and failed workloads hold no quota; starting one again takes
     * it again, and is refused when it no longer fits. */
    drive_to(f, first, EINSORA_WORKLOAD_STATE_STOPPED);
    third = einsora_service_create_workload(f->service, f->alice, &pair, &error);
    g_assert_no_error(error);
    refused = einsora_service_start_workload(f->service, f->alice, first->id, &error);
    g_assert_null(refused);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
    g_clear_error(&error);
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_service_get_workload(f->service, TENANT_A, first->id, FALSE, &error);
        g_assert_cmpint(stored->state, ==, EINSORA_WORKLOAD_STATE_STOPPED);
    }
    /* Deleting frees it. */
    drive_to(f, third, EINSORA_WORKLOAD_STATE_DELETING);
    {
        g_autoptr(EinsoraWorkload) started =
            einsora_service_start_workload(f->service, f->alice, first->id, &error);
        g_assert_no_error(error);
        g_assert_cmpint(started->state, ==, EINSORA_WORKLOAD_STATE_PENDING);
    }
    all = einsora_service_list_workloads(f->service, TENANT_A, FALSE, &error);
    g_assert_cmpuint(all->len, ==, 4);
}

typedef struct {
    const char *db_path;
    EinsoraCatalog *catalog;
    ManualClock *clock;
    const EinsoraActor *actor;
    gint *ready;
    GError *error;
    gboolean created;
} Racer;

static gpointer
race_create(gpointer user_data)
{
    Racer *racer = user_data;
    g_autoptr(EinsoraSqliteStore) store = open_migrated(racer->db_path);
    g_autoptr(EinsoraService) service =
        einsora_service_new(EINSORA_STORE(store), racer->catalog, manual_now, racer->clock);
    EinsoraWorkloadRequest request = {"notebook", "racer", "h100-80gb-x2", "jupyter", NULL};
    g_autoptr(EinsoraWorkload) workload = NULL;

    /* Both threads have their own connection; start together. */
    g_atomic_int_inc(racer->ready);
    while (g_atomic_int_get(racer->ready) < 2)
        g_thread_yield();
    workload = einsora_service_create_workload(service, racer->actor, &request, &racer->error);
    racer->created = workload != NULL;
    return NULL;
}

/* Two creates from two connections (as two daemons sharing the file would)
 * that together exceed the quota: exactly one wins, every round. */
static void
test_concurrent_creates(Fixture *f, gconstpointer data)
{
    for (guint round = 0; round < 20; round++) {
        g_autofree gchar *tenant_id = einsora_uuid_v7_new(START_US / 1000 + round);
        g_autoptr(EinsoraActor) actor = einsora_actor_new(tenant_id, "u", "racer@example", NULL);
        gint ready = 0;
        Racer racers[2] = {
            {f->db_path, f->catalog, &f->clock, actor, &ready, NULL, FALSE},
            {f->db_path, f->catalog, &f->clock, actor, &ready, NULL, FALSE},
        };
        GThread *threads[2];
        g_autoptr(GPtrArray) all = NULL;
        g_autoptr(GError) error = NULL;

        add_tenant(EINSORA_STORE(f->store), tenant_id, tenant_id);
        set_quota(f, tenant_id, "h100-80gb-x2", 2);
        for (guint i = 0; i < 2; i++)
            threads[i] = g_thread_new("racer", race_create, &racers[i]);
        for (guint i = 0; i < 2; i++)
            g_thread_join(threads[i]);

        g_assert_cmpint(racers[0].created + racers[1].created, ==, 1);
        for (guint i = 0; i < 2; i++) {
            if (!racers[i].created)
                g_assert_error(racers[i].error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
            g_clear_error(&racers[i].error);
        }
        all = einsora_service_list_workloads(f->service, tenant_id, TRUE, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(all->len, ==, 1);
    }
}

/* The quota check runs under the store's write lock: while another
 * connection holds it, a create can't even read the quota. Together with
 * the threaded race above, this is why concurrent creates serialize. */
static void
test_create_takes_write_lock(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraSqliteStore) other = open_migrated(f->db_path);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) refused = NULL;
    g_autoptr(EinsoraWorkload) created = NULL;
    g_autoptr(GPtrArray) all = NULL;

    set_quota(f, TENANT_A, "h100-80gb-x2", 2);
    g_assert_true(einsora_store_begin(EINSORA_STORE(other), &error));
    g_assert_no_error(error);
    /* Wait briefly instead of 15 s, to see it blocked. */
    sqlite3_busy_timeout(einsora_sqlite_store_get_handle(f->store), 50);
    refused = create(f, f->alice, "h100-80gb-x2", &error);
    g_assert_null(refused);
    g_assert_nonnull(error);
    g_assert_cmpint(sqlite3_extended_errcode(einsora_sqlite_store_get_handle(f->store)) & 0xff, ==,
                    SQLITE_BUSY);
    g_clear_error(&error);
    g_assert_true(einsora_store_commit(EINSORA_STORE(other), &error));

    sqlite3_busy_timeout(einsora_sqlite_store_get_handle(f->store), 15000);
    created = create(f, f->alice, "h100-80gb-x2", &error);
    g_assert_no_error(error);
    all = einsora_service_list_workloads(f->service, TENANT_A, TRUE, &error);
    g_assert_cmpuint(all->len, ==, 1);
}

static void
test_user_actions(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;

    /* A pending workload isn't running: stopping it is refused. */
    g_assert_null(einsora_service_stop_workload(f->service, f->alice, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
    g_clear_error(&error);

    drive_to(f, workload, EINSORA_WORKLOAD_STATE_RUNNING);
    {
        g_autoptr(EinsoraWorkload) again =
            einsora_service_start_workload(f->service, f->alice, workload->id, &error);
        g_assert_no_error(error);
        g_assert_cmpint(again->state, ==, EINSORA_WORKLOAD_STATE_RUNNING);
        g_assert_cmpint(again->version, ==, workload->version);
    }
    {
        g_autoptr(EinsoraWorkload) stopping =
            einsora_service_stop_workload(f->service, f->alice, workload->id, &error);
        g_autoptr(EinsoraWorkload) twice =
            einsora_service_stop_workload(f->service, f->alice, workload->id, &error);
        g_assert_no_error(error);
        g_assert_cmpint(stopping->state, ==, EINSORA_WORKLOAD_STATE_STOPPING);
        g_assert_cmpint(twice->version, ==, stopping->version);
    }
    events = einsora_service_list_events(f->service, TENANT_A, workload->id, &error);
    g_assert_cmpstr(((EinsoraWorkloadEvent *)g_ptr_array_index(events, events->len - 1))->reason,
                    ==, "stop requested by alice@acme.example (browser session)");

    {
        g_autoptr(EinsoraWorkload) deleting =
            einsora_service_delete_workload(f->service, f->alice, workload->id, &error);
        g_autoptr(EinsoraWorkload) twice =
            einsora_service_delete_workload(f->service, f->alice, workload->id, &error);
        g_assert_no_error(error);
        g_assert_cmpint(deleting->state, ==, EINSORA_WORKLOAD_STATE_DELETING);
        g_assert_cmpint(twice->version, ==, deleting->version);
        step(f, deleting, EINSORA_WORKLOAD_STATE_DELETED);
    }

    /* Deleted: gone for actions and plain reads, kept as history. */
    g_assert_null(einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    {
        g_autoptr(EinsoraWorkload) history =
            einsora_service_get_workload(f->service, TENANT_A, workload->id, TRUE, &error);
        g_autoptr(GPtrArray) live =
            einsora_service_list_workloads(f->service, TENANT_A, FALSE, &error);
        g_autoptr(GPtrArray) all =
            einsora_service_list_workloads(f->service, TENANT_A, TRUE, &error);
        g_assert_no_error(error);
        g_assert_cmpint(history->state, ==, EINSORA_WORKLOAD_STATE_DELETED);
        g_assert_cmpuint(live->len, ==, 0);
        g_assert_cmpuint(all->len, ==, 1);
    }
    g_assert_null(einsora_service_start_workload(f->service, f->alice, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    /* created, provisioning, running, stopping, deleting, deleted */
    g_assert_cmpuint(count_events(f, TENANT_A, workload->id), ==, 6);
}

static void
test_other_tenant_is_not_found(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) bobs = NULL;

    g_assert_null(einsora_service_get_workload(f->service, TENANT_B, workload->id, TRUE, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_null(einsora_service_start_workload(f->service, f->bob, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_null(einsora_service_stop_workload(f->service, f->bob, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_null(einsora_service_delete_workload(f->service, f->bob, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_null(einsora_service_list_events(f->service, TENANT_B, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_null(einsora_service_export_workload(f->service, TENANT_B, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    bobs = einsora_service_list_workloads(f->service, TENANT_B, TRUE, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(bobs->len, ==, 0);
    /* A malformed ID is just not found, never another error. */
    g_assert_null(einsora_service_get_workload(f->service, TENANT_A, "../etc", TRUE, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    {
        /* Bob's attempts changed nothing. */
        g_autoptr(EinsoraWorkload) stored =
            einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, &error);
        g_assert_cmpint(stored->version, ==, 0);
        g_assert_cmpuint(count_events(f, TENANT_A, workload->id), ==, 1);
    }
}

static void
test_export(Fixture *f, gconstpointer data)
{
    EinsoraWorkloadRequest request = {"notebook", "db password=hunter2", "l40s-48gb", "jupyter",
                                      NULL};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, f->alice, &request, &error);
    g_autoptr(JsonNode) node = NULL;
    g_autofree gchar *text = NULL;
    JsonObject *root;
    JsonArray *events;
    JsonArray *redactions;

    g_assert_no_error(error);
    drive_to(f, workload, EINSORA_WORKLOAD_STATE_RUNNING);
    f->clock.now_us += 60 * G_USEC_PER_SEC;
    node = einsora_service_export_workload(f->service, TENANT_A, workload->id, &error);
    g_assert_no_error(error);
    text = json_to_string(node, TRUE);
    g_test_message("%s", text);

    root = json_node_get_object(node);
    g_assert_cmpint(json_object_get_int_member(root, "export_version"), ==, 1);
    g_assert_cmpstr(json_object_get_string_member(root, "exported_at"), ==,
                    "2025-11-29T08:47:40.000000Z");
    g_assert_cmpstr(
        json_object_get_string_member(json_object_get_object_member(root, "workload"), "id"), ==,
        workload->id);
    g_assert_cmpstr(
        json_object_get_string_member(json_object_get_object_member(root, "workload"), "state"), ==,
        "running");
    events = json_object_get_array_member(root, "events");
    g_assert_cmpuint(json_array_get_length(events), ==, 3);
    g_assert_true(
        json_object_get_null_member(json_array_get_object_element(events, 0), "from_state"));
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(events, 2), "to_state"), ==,
        "running");

    /* The name could hold a secret: redacted, and said so. */
    g_assert_null(strstr(text, "hunter2"));
    redactions = json_object_get_array_member(root, "redactions");
    g_assert_cmpuint(json_array_get_length(redactions), ==, 1);
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(redactions, 0), "field"), ==,
        "workload.name");
    /* No data is lost: the record itself keeps what the user typed. */
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, &error);
        g_assert_cmpstr(stored->name, ==, "db password=hunter2");
    }
}

/* Opening a notebook in a browser */

#define ALICES_MACHINE "0190b5d2-7c4e-7abc-8def-0000000000e1"

/* A workload of Alice's, driven to running on her machine with the sim
 * driver. */
static EinsoraWorkload *
running_on_machine(Fixture *f, const char *kind, const char *gpu_class, const char *image)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkloadRequest request = {
        kind, "open me", gpu_class, image,
        NULL, NULL,      NULL,      g_str_equal(kind, "endpoint") ? "tiny" : NULL};
    const EinsoraPlacement placement = {gpu_class, ALICES_MACHINE, "sim"};
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_create_workload(f->service, f->alice, &request, &error);

    g_assert_no_error(error);
    {
        g_autoptr(EinsoraMachine) machine =
            einsora_store_find_machine(EINSORA_STORE(f->store), ALICES_MACHINE, NULL);
        if (machine == NULL)
            add_machine(f, ALICES_MACHINE, TENANT_A, EINSORA_SHARING_PRIVATE);
    }
    g_assert_true(einsora_service_transition(
        f->service, workload, EINSORA_WORKLOAD_STATE_PROVISIONING, "admitted", &placement, &error));
    g_assert_no_error(error);
    step(f, workload, EINSORA_WORKLOAD_STATE_RUNNING);
    return g_steal_pointer(&workload);
}

/* The model store through the service */

/* Only the tenant that owns the machine adds and removes models, and
 * another tenant can't see its imports. */
static void
test_models_owner_only(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *seed = einsora_test_model_seed_path();
    g_autoptr(EinsoraModelImport) refused = NULL;
    g_autoptr(EinsoraModelImport) started = NULL;
    g_autoptr(EinsoraModelImport) hidden = NULL;
    g_autoptr(EinsoraModelManifest) manifest = NULL;

    refused = einsora_service_import_model(f->service, f->bob, "other", seed, &error);
    g_assert_null(refused);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN);
    g_clear_error(&error);
    g_assert_false(einsora_service_remove_model(f->service, f->bob, "tiny", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN);
    g_clear_error(&error);
    manifest = einsora_service_get_model(f->service, f->alice, "tiny", &error);
    g_assert_no_error(error);
    g_assert_nonnull(manifest);

    started = einsora_service_import_model(f->service, f->alice, "other", seed, &error);
    g_assert_no_error(error);
    hidden = einsora_service_get_model_import(f->service, f->bob, started->id, &error);
    g_assert_null(hidden);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    {
        g_autoptr(EinsoraModelImport) mine =
            einsora_service_get_model_import(f->service, f->alice, started->id, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(mine->id, ==, started->id);
    }
    /* Let the import finish before the fixture removes its files. */
    {
        g_autoptr(EinsoraModelImport) done = NULL;
        while (TRUE) {
            g_autoptr(EinsoraModelImport) now =
                einsora_service_get_model_import(f->service, f->alice, started->id, &error);
            g_assert_no_error(error);
            if (now->state != EINSORA_MODEL_IMPORT_IMPORTING) {
                done = g_steal_pointer(&now);
                break;
            }
            g_usleep(2000);
        }
        g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
    }
}

/* A model an endpoint serves stays until the endpoint is gone. */
static void
test_remove_model_in_use(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) endpoint = running_on_machine(f, "endpoint", "l40s-48gb", "vllm");
    g_autoptr(EinsoraModelManifest) still = NULL;

    g_assert_cmpstr(endpoint->model, ==, "tiny");
    g_assert_false(einsora_service_remove_model(f->service, f->alice, "tiny", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    still = einsora_service_get_model(f->service, f->alice, "tiny", &error);
    g_assert_no_error(error);
    g_assert_nonnull(still);
}

static gchar *
ticket_hash(const char *secret)
{
    return g_compute_checksum_for_string(G_CHECKSUM_SHA256, secret, -1);
}

static EinsoraAccessTicket *
grant_ok(Fixture *f, const EinsoraWorkload *workload, const char *secret)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *hash = ticket_hash(secret);
    EinsoraAccessTicket *ticket =
        einsora_service_grant_access(f->service, f->alice, workload->id, hash, &error);

    g_assert_no_error(error);
    g_assert_nonnull(ticket);
    return ticket;
}

static void
assert_not_taken(Fixture *f, const char *secret)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *hash = ticket_hash(secret);
    g_autoptr(EinsoraAccessTicket) ticket =
        einsora_service_take_access_ticket(f->service, hash, &error);

    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_assert_null(ticket);
}

static void
test_access_grant(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = running_on_machine(f, "notebook", "cpu-2c-4g", "jupyter");
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autofree gchar *hash = ticket_hash("tkt_grant");
    g_autofree gchar *created_at = NULL;
    g_autofree gchar *expires_at = NULL;
    const EinsoraWorkloadEvent *note;

    f->clock.now_us += 5 * G_USEC_PER_SEC;
    created_at = einsora_timestamp_format(f->clock.now_us);
    expires_at = einsora_timestamp_format(f->clock.now_us + 60 * G_USEC_PER_SEC);
    ticket = grant_ok(f, workload, "tkt_grant");
    g_assert_cmpstr(ticket->hash, ==, hash);
    g_assert_cmpstr(ticket->tenant_id, ==, TENANT_A);
    g_assert_cmpstr(ticket->workload_id, ==, workload->id);
    g_assert_cmpint(ticket->attempt, ==, workload->attempt);
    g_assert_cmpint(ticket->attempt, ==, 1);
    g_assert_cmpstr(ticket->created_by, ==, "alice@acme.example");
    g_assert_cmpstr(ticket->created_at, ==, created_at);
    g_assert_cmpstr(ticket->expires_at, ==, expires_at);
    g_assert_cmpint(EINSORA_ACCESS_TICKET_TTL_US, ==, 60 * G_USEC_PER_SEC);

    /* The timeline says who asked; the state is unchanged. */
    events = einsora_service_list_events(f->service, TENANT_A, workload->id, &error);
    g_assert_no_error(error);
    note = g_ptr_array_index(events, events->len - 1);
    g_assert_true(einsora_workload_event_is_note(note));
    g_assert_cmpint(note->to_state, ==, EINSORA_WORKLOAD_STATE_RUNNING);
    g_assert_cmpstr(note->reason, ==,
                    "open in a browser requested by alice@acme.example (browser session)");
    g_assert_cmpstr(note->created_at, ==, created_at);
    {
        g_autoptr(EinsoraWorkload) stored =
            einsora_service_get_workload(f->service, TENANT_A, workload->id, FALSE, &error);
        g_assert_no_error(error);
        g_assert_cmpint(stored->version, ==, workload->version);
    }
}

/* Another tenant's workload, an unknown one and a malformed ID are all
 * the same 404, and leave no ticket and no note. */
static void
test_access_other_tenant(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = running_on_machine(f, "notebook", "cpu-2c-4g", "jupyter");
    g_autofree gchar *hash = ticket_hash("tkt_bob");
    const char *ids[] = {workload->id, "0190b5d2-7c4e-7abc-8def-0123456789ab", "not-a-uuid"};
    guint before = count_events(f, TENANT_A, workload->id);

    for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraAccessTicket) ticket =
            einsora_service_grant_access(f->service, f->bob, ids[i], hash, &error);
        g_test_message("case %u", i);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_assert_cmpstr(error->message, ==, "no such workload");
        g_assert_null(ticket);
    }
    g_assert_cmpuint(count_events(f, TENANT_A, workload->id), ==, before);
    assert_not_taken(f, "tkt_bob");
}

/* Only a running notebook on a machine has something to open; anything
 * else is 409 and writes nothing. */
static void
test_access_only_running_notebook(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) pending = create_ok(f, "l40s-48gb");
    g_autoptr(EinsoraWorkload) stopped = running_on_machine(f, "notebook", "cpu-2c-4g", "jupyter");
    g_autoptr(EinsoraWorkload) endpoint = running_on_machine(f, "endpoint", "l40s-48gb", "vllm");
    g_autoptr(EinsoraWorkload) cluster = create_ok(f, "l40s-48gb");
    g_autoptr(EinsoraWorkload) deleted = create_ok(f, "l40s-48gb");
    g_autofree gchar *hash = ticket_hash("tkt_refused");
    const struct {
        const EinsoraWorkload *workload;
        gint code;
        const char *message;
    } cases[] = {
        {pending, EINSORA_ERROR_CONFLICT, "is pending; only a running notebook can be opened"},
        {stopped, EINSORA_ERROR_CONFLICT, "is stopped; only a running notebook can be opened"},
        {endpoint, EINSORA_ERROR_CONFLICT, "is an endpoint; only a running notebook"},
        {cluster, EINSORA_ERROR_CONFLICT, "doesn't run on a machine"},
        {deleted, EINSORA_ERROR_NOT_FOUND, "no such workload"},
    };

    step(f, stopped, EINSORA_WORKLOAD_STATE_STOPPING);
    step(f, stopped, EINSORA_WORKLOAD_STATE_STOPPED);
    drive_to(f, cluster, EINSORA_WORKLOAD_STATE_RUNNING);
    drive_to(f, deleted, EINSORA_WORKLOAD_STATE_DELETED);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraAccessTicket) ticket = NULL;
        guint before = count_events(f, TENANT_A, cases[i].workload->id);

        ticket =
            einsora_service_grant_access(f->service, f->alice, cases[i].workload->id, hash, &error);
        g_test_message("case %u: %s", i, error != NULL ? error->message : "granted");
        g_assert_error(error, EINSORA_ERROR, cases[i].code);
        g_assert_nonnull(strstr(error->message, cases[i].message));
        g_assert_null(ticket);
        g_assert_cmpuint(count_events(f, TENANT_A, cases[i].workload->id), ==, before);
    }
    assert_not_taken(f, "tkt_refused");
}

/* A ticket is taken once, within its minute, and not at all by anything
 * but its hash. */
static void
test_access_take(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) workload = running_on_machine(f, "notebook", "cpu-2c-4g", "jupyter");
    g_autoptr(EinsoraAccessTicket) granted = grant_ok(f, workload, "tkt_once");
    g_autoptr(EinsoraAccessTicket) late = NULL;
    g_autoptr(EinsoraAccessTicket) last_moment = NULL;
    g_autoptr(GError) error = NULL;

    {
        g_autofree gchar *hash = ticket_hash("tkt_once");
        g_autoptr(EinsoraAccessTicket) taken =
            einsora_service_take_access_ticket(f->service, hash, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(taken->workload_id, ==, workload->id);
        g_assert_cmpstr(taken->tenant_id, ==, TENANT_A);
        g_assert_cmpint(taken->attempt, ==, granted->attempt);
        g_assert_cmpstr(taken->expires_at, ==, granted->expires_at);
    }
    assert_not_taken(f, "tkt_once");

    /* Exactly 60 s later it has expired; a microsecond before, not. */
    late = grant_ok(f, workload, "tkt_late");
    last_moment = grant_ok(f, workload, "tkt_last_moment");
    f->clock.now_us += EINSORA_ACCESS_TICKET_TTL_US - 1;
    {
        g_autofree gchar *hash = ticket_hash("tkt_last_moment");
        g_autoptr(EinsoraAccessTicket) taken =
            einsora_service_take_access_ticket(f->service, hash, &error);
        g_assert_no_error(error);
        g_assert_nonnull(taken);
    }
    f->clock.now_us += 1;
    assert_not_taken(f, "tkt_late");

    /* The secret itself, or anything not a SHA-256, is not a key. */
    {
        g_autoptr(EinsoraAccessTicket) fresh = grant_ok(f, workload, "tkt_fresh");
        g_autofree gchar *hash = ticket_hash("tkt_fresh");
        g_autofree gchar *upper = g_ascii_strup(hash, -1);
        const char *bad[] = {"tkt_fresh", upper, "", NULL};
        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
            g_autoptr(EinsoraAccessTicket) none =
                einsora_service_take_access_ticket(f->service, bad[i], &error);
            g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
            g_assert_null(none);
            g_clear_error(&error);
        }
        {
            g_autoptr(EinsoraAccessTicket) taken =
                einsora_service_take_access_ticket(f->service, hash, &error);
            g_assert_no_error(error);
            g_assert_nonnull(taken);
        }
    }
}

/* The change feed's signal: who saw what, and whether the transaction
 * was over when they were told. */
typedef struct {
    Fixture *f;
    GPtrArray *tenants; /* one per emission */
    gint64 seen;        /* the last seq read back, tenant A's */
    guint read;         /* tenant A's events read back in handlers */
} EventsAdded;

static void
on_events_added(EinsoraService *service, const char *tenant_id, gpointer user_data)
{
    EventsAdded *added = user_data;
    g_autoptr(GError) error = NULL;

    g_ptr_array_add(added->tenants, g_strdup(tenant_id));
    /* Never from inside the transaction: a new one can begin here... */
    g_assert_true(einsora_store_begin(EINSORA_STORE(added->f->store), &error));
    g_assert_no_error(error);
    einsora_store_rollback(EINSORA_STORE(added->f->store));
    /* ...and what was appended is there to read. */
    if (g_strcmp0(tenant_id, TENANT_A) == 0) {
        g_autoptr(GPtrArray) events =
            einsora_service_list_tenant_events(service, TENANT_A, added->seen, 100, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(events->len, >=, 1);
        added->seen = ((EinsoraWorkloadEvent *)g_ptr_array_index(events, events->len - 1))->seq;
        added->read += events->len;
    }
}

/* Each appending path emits once, after its commit, naming the tenant. */
static void
assert_emitted(EventsAdded *added, guint before, const char *tenant_id)
{
    g_assert_cmpuint(added->tenants->len, ==, before + 1);
    g_assert_cmpstr(g_ptr_array_index(added->tenants, before), ==, tenant_id);
}

/* The state another connection sees: only what is committed. */
static gchar *
committed_state(Fixture *f, const char *workload_id)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    gchar *state = NULL;

    g_assert_cmpint(sqlite3_open_v2(f->db_path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    g_assert_cmpint(
        sqlite3_prepare_v2(db, "SELECT state FROM workloads WHERE id = ?1", -1, &stmt, NULL), ==,
        SQLITE_OK);
    sqlite3_bind_text(stmt, 1, workload_id, -1, SQLITE_STATIC);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    state = g_strdup((const char *)sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return state;
}

/* A group writes its transitions and notes in one transaction: nobody
 * outside sees them, nor hears of them, until it commits; then the
 * tenant's readers are told once. A lost race in the group writes nothing
 * and keeps the rest; a rollback leaves every row and timeline as it was
 * and tells no one. */
static void
test_group_commits_then_tells(Fixture *f, gconstpointer data)
{
    EventsAdded added = {f, g_ptr_array_new_with_free_func(g_free), 0, 0};
    gulong handler =
        g_signal_connect(f->service, "events-added", G_CALLBACK(on_events_added), &added);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) queued = create_ok(f, "cpu-2c-4g");
    g_autoptr(EinsoraWorkload) raced = create_ok(f, "cpu-2c-4g");
    g_autoptr(EinsoraWorkload) noted = create_ok(f, "cpu-2c-4g");
    g_autoptr(EinsoraWorkload) stale = einsora_workload_copy(raced);
    g_autofree gchar *seen = NULL;
    guint told;

    /* The API deletes one while the controller still holds the row it read. */
    step(f, raced, EINSORA_WORKLOAD_STATE_DELETING);
    told = added.tenants->len;

    g_assert_true(einsora_service_group_begin(f->service, &error));
    g_assert_true(einsora_service_transition(f->service, queued, EINSORA_WORKLOAD_STATE_QUEUED,
                                             "no room", NULL, &error));
    g_assert_false(einsora_service_transition(f->service, stale, EINSORA_WORKLOAD_STATE_QUEUED,
                                              "no room", NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    g_assert_false(einsora_service_group_failed(f->service));
    g_assert_true(einsora_service_note(f->service, noted, einsora_reason_run_retrying(), &error));
    g_assert_no_error(error);
    /* Written, not committed: invisible outside, and nobody told. */
    g_assert_cmpint(queued->state, ==, EINSORA_WORKLOAD_STATE_QUEUED);
    seen = committed_state(f, queued->id);
    g_assert_cmpstr(seen, ==, "pending");
    g_assert_cmpuint(added.tenants->len, ==, told);

    g_assert_true(einsora_service_group_commit(f->service, &error));
    g_assert_no_error(error);
    assert_emitted(&added, told, TENANT_A);
    g_clear_pointer(&seen, g_free);
    seen = committed_state(f, queued->id);
    g_assert_cmpstr(seen, ==, "queued");
    g_assert_cmpuint(count_events(f, TENANT_A, queued->id), ==, 2);
    g_assert_cmpuint(count_events(f, TENANT_A, raced->id), ==, 2);
    g_assert_cmpuint(count_events(f, TENANT_A, noted->id), ==, 2);

    /* Rolled back: as if it never happened. */
    told = added.tenants->len;
    g_assert_true(einsora_service_group_begin(f->service, &error));
    g_assert_true(einsora_service_transition(f->service, queued, EINSORA_WORKLOAD_STATE_DELETING,
                                             "delete", NULL, &error));
    g_assert_true(einsora_service_note(f->service, noted, einsora_reason_run_retrying(), &error));
    einsora_service_group_rollback(f->service);
    g_assert_cmpuint(added.tenants->len, ==, told);
    g_clear_pointer(&seen, g_free);
    seen = committed_state(f, queued->id);
    g_assert_cmpstr(seen, ==, "queued");
    g_assert_cmpuint(count_events(f, TENANT_A, queued->id), ==, 2);
    g_assert_cmpuint(count_events(f, TENANT_A, noted->id), ==, 2);

    /* Without a group, a write commits and tells at once, as before. */
    g_clear_pointer(&queued, einsora_workload_free);
    queued = einsora_service_get_workload(f->service, TENANT_A, noted->id, FALSE, &error);
    step(f, queued, EINSORA_WORKLOAD_STATE_QUEUED);
    assert_emitted(&added, told, TENANT_A);

    g_signal_handler_disconnect(f->service, handler);
    g_ptr_array_unref(added.tenants);
}

static void
test_events_added_on_every_append(Fixture *f, gconstpointer data)
{
    EventsAdded added = {f, g_ptr_array_new_with_free_func(g_free), 0, 0};
    gulong handler =
        g_signal_connect(f->service, "events-added", G_CALLBACK(on_events_added), &added);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(EinsoraWorkload) acted = NULL;
    g_autoptr(EinsoraWorkload) theirs = NULL;
    g_autoptr(EinsoraWorkload) notebook = NULL;
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    guint n;

    n = added.tenants->len;
    workload = create_ok(f, "l40s-48gb");
    assert_emitted(&added, n, TENANT_A);

    n = added.tenants->len;
    step(f, workload, EINSORA_WORKLOAD_STATE_QUEUED);
    assert_emitted(&added, n, TENANT_A);

    n = added.tenants->len;
    g_assert_true(
        einsora_service_note(f->service, workload, einsora_reason_run_retrying(), &error));
    g_assert_no_error(error);
    assert_emitted(&added, n, TENANT_A);

    step(f, workload, EINSORA_WORKLOAD_STATE_PROVISIONING);
    step(f, workload, EINSORA_WORKLOAD_STATE_RUNNING);
    n = added.tenants->len;
    acted = einsora_service_stop_workload(f->service, f->alice, workload->id, &error);
    g_assert_no_error(error);
    assert_emitted(&added, n, TENANT_A);
    g_clear_pointer(&workload, einsora_workload_free);
    workload = g_steal_pointer(&acted);
    step(f, workload, EINSORA_WORKLOAD_STATE_STOPPED);

    n = added.tenants->len;
    acted = einsora_service_start_workload(f->service, f->alice, workload->id, &error);
    g_assert_no_error(error);
    assert_emitted(&added, n, TENANT_A);
    g_clear_pointer(&acted, einsora_workload_free);

    n = added.tenants->len;
    acted = einsora_service_delete_workload(f->service, f->alice, workload->id, &error);
    g_assert_no_error(error);
    assert_emitted(&added, n, TENANT_A);
    g_clear_pointer(&acted, einsora_workload_free);

    /* Granting access notes who asked. */
    notebook = running_on_machine(f, "notebook", "cpu-2c-4g", "jupyter");
    n = added.tenants->len;
    ticket = grant_ok(f, notebook, "tkt_signal");
    assert_emitted(&added, n, TENANT_A);

    /* Another tenant's append names that tenant only. */
    {
        EinsoraWorkloadRequest request = {"notebook", "theirs", "cpu-2c-4g", "jupyter", NULL};
        n = added.tenants->len;
        theirs = einsora_service_create_workload(f->service, f->bob, &request, &error);
        g_assert_no_error(error);
        assert_emitted(&added, n, TENANT_B);
    }

    /* Every event tenant A appended was read back by a handler, in order,
     * none twice. */
    {
        g_autoptr(GPtrArray) all =
            einsora_service_list_tenant_events(f->service, TENANT_A, 0, 1000, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(added.read, ==, all->len);
        g_assert_cmpint(added.seen, ==,
                        ((EinsoraWorkloadEvent *)g_ptr_array_index(all, all->len - 1))->seq);
    }

    g_signal_handler_disconnect(f->service, handler);
    g_ptr_array_unref(added.tenants);
}

/* What writes nothing, or whose transaction rolls back, says nothing. */
static void
test_events_added_not_on_failure(Fixture *f, gconstpointer data)
{
    EventsAdded added = {f, g_ptr_array_new_with_free_func(g_free), 0, 0};
    gulong handler;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = create_ok(f, "l40s-48gb");
    g_autoptr(EinsoraWorkload) stale = NULL;
    g_autoptr(EinsoraWorkload) acted = NULL;
    g_autoptr(EinsoraWorkload) refused = NULL;
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    g_autofree gchar *hash = ticket_hash("tkt_refused");

    drive_to(f, workload, EINSORA_WORKLOAD_STATE_RUNNING);
    stale = einsora_workload_copy(workload);
    step(f, workload, EINSORA_WORKLOAD_STATE_STOPPING);
    handler = g_signal_connect(f->service, "events-added", G_CALLBACK(on_events_added), &added);

    /* A step the lifecycle forbids. */
    g_assert_false(einsora_service_transition(f->service, workload, EINSORA_WORKLOAD_STATE_RUNNING,
                                              "no", NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
    g_clear_error(&error);
    /* A lost compare-and-swap, and a stale note. */
    g_assert_false(einsora_service_transition(f->service, stale, EINSORA_WORKLOAD_STATE_STOPPING,
                                              "late", NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    g_assert_false(einsora_service_note(f->service, stale, "late", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    /* A no-op action writes nothing; a refused one neither. */
    acted = einsora_service_stop_workload(f->service, f->alice, workload->id, &error);
    g_assert_no_error(error);
    refused = einsora_service_start_workload(f->service, f->alice, workload->id, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_TRANSITION);
    g_clear_error(&error);
    /* Over quota (tenant B has none for GPUs), and another tenant's
     * workload, and access to what isn't running. */
    g_assert_null(create(f, f->bob, "l40s-48gb", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED);
    g_clear_error(&error);
    g_assert_null(einsora_service_delete_workload(f->service, f->bob, workload->id, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    ticket = einsora_service_grant_access(f->service, f->alice, workload->id, hash, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT);
    g_clear_error(&error);
    /* The timeline row can't be written: the transaction rolls back. */
    exec_sql(f, "CREATE TEMP TRIGGER refuse_events BEFORE INSERT ON main.workload_events "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
    g_assert_false(einsora_service_transition(f->service, workload, EINSORA_WORKLOAD_STATE_STOPPED,
                                              "stopped", NULL, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    g_assert_null(create(f, f->alice, "cpu-2c-4g", &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    exec_sql(f, "DROP TRIGGER temp.refuse_events");

    g_assert_cmpuint(added.tenants->len, ==, 0);

    /* And the next write that does append is heard again. */
    step(f, workload, EINSORA_WORKLOAD_STATE_STOPPED);
    g_assert_cmpuint(added.tenants->len, ==, 1);

    g_signal_handler_disconnect(f->service, handler);
    g_ptr_array_unref(added.tenants);
}

/* The tenant's events of all its workloads, after a seq; an event ID
 * below 0 is refused. */
static void
test_list_tenant_events(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) first = create_ok(f, "l40s-48gb");
    g_autoptr(EinsoraWorkload) theirs = NULL;
    g_autoptr(EinsoraWorkload) second = create_ok(f, "l40s-48gb");
    g_autoptr(GPtrArray) all = NULL;
    g_autoptr(GPtrArray) after = NULL;
    g_autoptr(GPtrArray) refused = NULL;
    gint64 last = -1;

    {
        EinsoraWorkloadRequest request = {"notebook", "theirs", "cpu-2c-4g", "jupyter", NULL};
        theirs = einsora_service_create_workload(f->service, f->bob, &request, &error);
        g_assert_no_error(error);
    }
    step(f, first, EINSORA_WORKLOAD_STATE_QUEUED);
    drive_to(f, second, EINSORA_WORKLOAD_STATE_DELETED);

    all = einsora_service_list_tenant_events(f->service, TENANT_A, 0, 100, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(all->len, ==, 5);
    for (guint i = 0; i < all->len; i++)
        g_assert_cmpstr(((EinsoraWorkloadEvent *)g_ptr_array_index(all, i))->tenant_id, ==,
                        TENANT_A);
    g_assert_true(einsora_service_last_event_seq(f->service, TENANT_A, &last, &error));
    g_assert_cmpint(last, ==, ((EinsoraWorkloadEvent *)g_ptr_array_index(all, 4))->seq);

    after = einsora_service_list_tenant_events(
        f->service, TENANT_A, ((EinsoraWorkloadEvent *)g_ptr_array_index(all, 2))->seq, 1, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(after->len, ==, 1);
    g_assert_cmpstr(((EinsoraWorkloadEvent *)g_ptr_array_index(after, 0))->id, ==,
                    ((EinsoraWorkloadEvent *)g_ptr_array_index(all, 3))->id);

    refused = einsora_service_list_tenant_events(f->service, TENANT_A, -1, 100, &error);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_null(refused);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/service/create/records-pending-with-creation-event", test_create);
    ADD("/service/create/refuses-bad-input-and-changes-nothing", test_create_refuses_bad_input);
    ADD("/service/create/keeps-idempotency-record", test_create_keeps_idempotency_record);
    ADD("/service/transition/every-allowed-step", test_every_allowed_step);
    ADD("/service/transition/every-forbidden-step", test_every_forbidden_step);
    ADD("/service/transition/placement-and-attempts", test_placement);
    ADD("/service/transition/lost-cas-is-conflict", test_lost_cas_is_conflict);
    ADD("/service/transition/placement-rechecked", test_placement_rechecked);
    ADD("/service/transition/one-transaction", test_transition_is_atomic);
    ADD("/service/quota/create-waits-for-the-write-lock", test_create_takes_write_lock);
    ADD("/service/note/from-equals-to", test_note);
    ADD("/service/quota/held-plus-request", test_quota);
    ADD("/service/quota/concurrent-creates-exactly-one-wins", test_concurrent_creates);
    ADD("/service/actions/start-stop-delete", test_user_actions);
    ADD("/service/tenancy/other-tenant-is-not-found", test_other_tenant_is_not_found);
    ADD("/service/models/only-the-owner-changes-them", test_models_owner_only);
    ADD("/service/models/remove-refused-while-served", test_remove_model_in_use);
    ADD("/service/export/complete-with-redactions", test_export);
    ADD("/service/access/grant-stores-ticket-and-notes", test_access_grant);
    ADD("/service/access/other-tenant-is-not-found", test_access_other_tenant);
    ADD("/service/access/only-a-running-notebook-on-a-machine", test_access_only_running_notebook);
    ADD("/service/access/taken-once-within-a-minute", test_access_take);
    ADD("/service/events/added-after-every-committed-append", test_events_added_on_every_append);
    ADD("/service/events/not-added-when-nothing-committed", test_events_added_not_on_failure);
    ADD("/service/events/tenant-feed-after-seq", test_list_tenant_events);
    ADD("/service/group/commits-then-tells", test_group_commits_then_tells);
#undef ADD
    return g_test_run();
}
