/* How long one reconcile_once() takes at Lab scale: 10,000 pending
 * workloads admitted over 1,000 machines (fake backend, real SQLite), and
 * a pass with nothing to do at that size. The peers, measured in the same
 * run on the same file system: 10,000 bare SQLite transactions doing the
 * same writes (a CAS UPDATE and an event INSERT each), what admission paid
 * with one transaction per workload; and ONE bare transaction doing all
 * 10,000 of them, the floor of a group commit. Then a pass over 10,000
 * running workloads on 100 machines through the hub (the agent backend,
 * every machine synced and reporting them running), which observes each.
 * Not a test: run bench/reconcile-bench.sh. */
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>

#include "einsora-controller.h"
#include "einsora-fake-backend.h"
#include "einsora-hub.h"
#include "einsora-protocol.h"
#include "einsora-sqlite-store.h"
#include "einsora-uuid.h"

#define MACHINES 1000
#define WORKLOADS 10000
#define HUB_MACHINES 100
#define MAX_ROUNDS 15

static gint64
real_now(gpointer user_data)
{
    return g_get_real_time();
}

static int
compare_doubles(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
median(double *values, guint n)
{
    qsort(values, n, sizeof(double), (int (*)(const void *, const void *))compare_doubles);
    return values[n / 2];
}

static EinsoraSqliteStore *
fresh_store(const char *dir, const char *name)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, &error);

    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(store, g_get_real_time(), &error));
    return g_steal_pointer(&store);
}

/* Seeds a tenant, @machines machines (added to @backend unless it is
 * NULL, their IDs to @machine_ids) and @WORKLOADS workloads in one
 * transaction (seeding isn't what is measured): pending, or @running on
 * the machines in turn with the sim driver, attempt 1. */
static void
seed(EinsoraSqliteStore *store, EinsoraFakeBackend *backend, guint machines, gboolean running,
     gchar **tenant_id, GPtrArray *machine_ids)
{
    g_autoptr(GError) error = NULL;
    gint64 now = g_get_real_time();
    g_autofree gchar *created = einsora_timestamp_format(now);
    g_autoptr(EinsoraTenant) tenant = NULL;

    *tenant_id = einsora_uuid_v7_new(now / 1000);
    tenant = einsora_tenant_new(*tenant_id, "bench", TRUE, created);
    g_assert_true(einsora_store_begin(EINSORA_STORE(store), &error));
    g_assert_true(einsora_store_insert_tenant(EINSORA_STORE(store), tenant, &error));
    for (guint i = 0; i < machines; i++) {
        g_autoptr(EinsoraMachine) machine = einsora_machine_new();
        EinsoraMachineCapacity *capacity;
        machine->id = einsora_uuid_v7_new(now / 1000);
        machine->tenant_id = g_strdup(*tenant_id);
        machine->name = g_strdup_printf("m%04u", i);
        machine->region = g_strdup("local");
        machine->os = g_strdup("linux");
        machine->cpus = 64;
        machine->memory_mib = 262144;
        machine->created_at = g_strdup(created);
        g_assert_true(einsora_store_insert_machine(EINSORA_STORE(store), machine, &error));
        g_ptr_array_add(machine_ids, g_strdup(machine->id));
        if (backend == NULL)
            continue;
        capacity = einsora_machine_capacity_new(machine);
        capacity->online = TRUE;
        g_strfreev(capacity->drivers);
        capacity->drivers = g_strsplit("sim", ",", -1);
        einsora_fake_backend_add_machine(backend, capacity);
    }
    for (guint i = 0; i < WORKLOADS; i++) {
        g_autoptr(EinsoraWorkload) workload = einsora_workload_new();
        g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();
        workload->id = einsora_uuid_v7_new(now / 1000);
        workload->tenant_id = g_strdup(*tenant_id);
        workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
        workload->name = g_strdup_printf("w%05u", i);
        workload->state = EINSORA_WORKLOAD_STATE_PENDING;
        if (running) {
            workload->state = EINSORA_WORKLOAD_STATE_RUNNING;
            workload->placed_class = g_strdup("cpu-2c-4g");
            workload->machine_id = g_strdup(g_ptr_array_index(machine_ids, i % machines));
            workload->driver = g_strdup("sim");
            workload->attempt = 1;
        }
        workload->region = g_strdup("local");
        workload->gpu_class = g_strdup("cpu-2c-4g");
        workload->image = g_strdup("jupyter-notebook");
        workload->created_by = g_strdup("bench");
        workload->created_at = einsora_timestamp_format(now + i);
        workload->updated_at = g_strdup(workload->created_at);
        g_assert_true(einsora_store_insert_workload(EINSORA_STORE(store), workload, &error));
        event->id = einsora_uuid_v7_new(now / 1000);
        event->tenant_id = g_strdup(*tenant_id);
        event->workload_id = g_strdup(workload->id);
        event->to_state = workload->state;
        event->reason = g_strdup("created by bench");
        event->created_at = g_strdup(workload->created_at);
        g_assert_true(einsora_store_append_event(EINSORA_STORE(store), event, &error));
    }
    g_assert_true(einsora_store_commit(EINSORA_STORE(store), &error));
    g_assert_no_error(error);
}

static double
timed_pass(EinsoraController *controller)
{
    g_autoptr(GError) error = NULL;
    gint64 start = g_get_monotonic_time();

    g_assert_true(einsora_controller_reconcile_once(controller, &error));
    g_assert_no_error(error);
    return (g_get_monotonic_time() - start) / 1000.0;
}

/* The peers: the same writes, a CAS-shaped UPDATE and an event INSERT per
 * workload, straight through the SQLite C API on the same file: in one
 * transaction each, or all in @one. */
static double
bare_transactions(EinsoraSqliteStore *store, gboolean one)
{
    sqlite3 *db = einsora_sqlite_store_get_handle(store);
    sqlite3_stmt *ids = NULL;
    sqlite3_stmt *update = NULL;
    sqlite3_stmt *insert = NULL;
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
    gint64 start;
    gint64 now = g_get_real_time();

    sqlite3_prepare_v2(db, "SELECT id, tenant_id FROM workloads", -1, &ids, NULL);
    while (sqlite3_step(ids) == SQLITE_ROW) {
        g_ptr_array_add(all, g_strdup((const char *)sqlite3_column_text(ids, 0)));
        g_ptr_array_add(all, g_strdup((const char *)sqlite3_column_text(ids, 1)));
    }
    sqlite3_finalize(ids);
    sqlite3_prepare_v2(db,
                       "UPDATE workloads SET state = 'queued', version = version + 1 "
                       "WHERE id = ?1 AND state = 'pending' AND version = 0",
                       -1, &update, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO workload_events (id, tenant_id, workload_id, from_state, "
                       "to_state, reason, attempt, created_at) VALUES (?1, ?2, ?3, 'pending', "
                       "'queued', 'bench', 0, ?4)",
                       -1, &insert, NULL);
    start = g_get_monotonic_time();
    if (one)
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    for (guint i = 0; i < all->len; i += 2) {
        g_autofree gchar *event_id = einsora_uuid_v7_new(now / 1000);
        g_autofree gchar *at = einsora_timestamp_format(now);
        if (!one)
            sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        sqlite3_bind_text(update, 1, g_ptr_array_index(all, i), -1, SQLITE_STATIC);
        g_assert_cmpint(sqlite3_step(update), ==, SQLITE_DONE);
        sqlite3_reset(update);
        sqlite3_bind_text(insert, 1, event_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 2, g_ptr_array_index(all, i + 1), -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 3, g_ptr_array_index(all, i), -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 4, at, -1, SQLITE_STATIC);
        g_assert_cmpint(sqlite3_step(insert), ==, SQLITE_DONE);
        sqlite3_reset(insert);
        if (!one)
            sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    if (one)
        g_assert_cmpint(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_finalize(update);
    sqlite3_finalize(insert);
    return (g_get_monotonic_time() - start) / 1000.0;
}

static void
on_synced(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraDesiredState **out = user_data;
    g_autoptr(GError) error = NULL;

    *out = einsora_sync_transport_sync_finish(EINSORA_SYNC_TRANSPORT(source), result, &error);
    if (*out == NULL && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_error("sync failed: %s", error->message);
    if (*out == NULL)
        *out = einsora_desired_state_new(); /* cancelled: done */
}

/* One sync of @machine_id's agent: reporting what it runs at
 * @generation, or nothing yet (generation 0). Returns the desired state,
 * or NULL when the hub holds the sync (nothing new), to end at @cancel. */
static EinsoraDesiredState *
sync_machine(EinsoraHub *hub, const char *machine_id, const EinsoraDesiredState *applied,
             GCancellable *cancel)
{
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_new();
    EinsoraDesiredState *desired = NULL;

    report->machine_id = g_strdup(machine_id);
    if (applied == NULL) {
        EinsoraInventory *inventory = einsora_inventory_new();
        inventory->os = g_strdup("linux");
        inventory->arch = g_strdup("x86_64");
        inventory->cpus = 256;
        inventory->memory_mib = 1048576;
        g_strfreev(inventory->drivers);
        inventory->drivers = g_strsplit("sim", ",", -1);
        report->inventory = inventory;
    } else {
        report->applied_generation = applied->generation;
        for (guint i = 0; i < applied->workloads->len; i++) {
            const EinsoraDesiredWorkload *workload = g_ptr_array_index(applied->workloads, i);
            EinsoraWorkloadStatus *status = einsora_workload_status_new();
            status->workload_id = g_strdup(workload->workload_id);
            status->attempt = workload->attempt;
            status->mode = workload->mode;
            status->code = EINSORA_STATUS_CODE_RUNNING;
            status->applied_generation = applied->generation;
            g_ptr_array_add(report->statuses, status);
        }
    }
    einsora_sync_transport_sync_async(EINSORA_SYNC_TRANSPORT(hub), report, cancel, on_synced,
                                      &desired);
    /* The hub answers at once or holds it: one turn tells. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    if (desired == NULL)
        return NULL;
    return desired;
}

/* A pass over @WORKLOADS running workloads on @HUB_MACHINES machines
 * through the hub, once every agent has reported them running. */
static double
hub_pass(const char *dir, EinsoraCatalog *catalog)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = fresh_store(dir, "hub.db");
    g_autoptr(GPtrArray) machine_ids = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) cancels = g_ptr_array_new_with_free_func(g_object_unref);
    g_autoptr(EinsoraHub) hub = NULL;
    g_autoptr(EinsoraService) service = NULL;
    g_autoptr(EinsoraController) controller = NULL;
    g_autoptr(GPtrArray) after = NULL;
    g_autofree gchar *tenant_id = NULL;
    gint64 start;
    double ms;

    seed(store, NULL, HUB_MACHINES, TRUE, &tenant_id, machine_ids);
    hub = einsora_hub_new(EINSORA_STORE(store), catalog, "local", real_now, NULL);
    for (guint i = 0; i < machine_ids->len; i++) {
        GCancellable *cancel = g_cancellable_new();
        g_autoptr(EinsoraDesiredState) desired =
            sync_machine(hub, g_ptr_array_index(machine_ids, i), NULL, NULL);
        g_autoptr(EinsoraDesiredState) held = NULL;

        g_assert_nonnull(desired);
        g_assert_cmpuint(desired->workloads->len, ==, WORKLOADS / HUB_MACHINES);
        held = sync_machine(hub, g_ptr_array_index(machine_ids, i), desired, cancel);
        g_assert_null(held);
        g_ptr_array_add(cancels, cancel);
    }
    service = einsora_service_new(EINSORA_STORE(store), catalog, real_now, NULL);
    controller = einsora_controller_new(service, EINSORA_STORE(store), catalog,
                                        EINSORA_BACKEND(hub), "local", real_now, NULL);
    start = g_get_monotonic_time();
    g_assert_true(einsora_controller_reconcile_once(controller, &error));
    ms = (g_get_monotonic_time() - start) / 1000.0;
    g_assert_no_error(error);
    /* Observed and left alone: every one is still running. */
    after = einsora_store_list_region_workloads(EINSORA_STORE(store), "local", &error);
    g_assert_nonnull(after);
    for (guint i = 0; i < after->len; i++)
        g_assert_cmpint(((EinsoraWorkload *)g_ptr_array_index(after, i))->state, ==,
                        EINSORA_WORKLOAD_STATE_RUNNING);
    g_assert_cmpuint(after->len, ==, WORKLOADS);
    for (guint i = 0; i < cancels->len; i++)
        g_cancellable_cancel(g_ptr_array_index(cancels, i));
    while (g_main_context_iteration(NULL, FALSE))
        ;
    return ms;
}

/* The hub's "machine is online" and the like, once per machine, would
 * bury the figures. */
static GLogWriterOutput
quiet_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
        return g_log_writer_default(level, fields, n_fields, user_data);
    return G_LOG_WRITER_HANDLED;
}

int
main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : g_get_tmp_dir();
    const char *rounds_text = g_getenv("BENCH_ROUNDS");
    guint rounds = rounds_text != NULL ? (guint)g_ascii_strtoull(rounds_text, NULL, 10) : 5;
    double admit[MAX_ROUNDS], idle[MAX_ROUNDS], peer[MAX_ROUNDS], ratio[MAX_ROUNDS];
    double one[MAX_ROUNDS], one_ratio[MAX_ROUNDS], hub[MAX_ROUNDS];

    rounds = CLAMP(rounds, 1, MAX_ROUNDS);
    g_log_set_writer_func(quiet_writer, NULL, NULL);
    for (guint round = 0; round < rounds; round++) {
        g_autoptr(GError) error = NULL;
        g_autofree gchar *dir = g_build_filename(root, "einsora-reconcile-XXXXXX", NULL);
        g_autoptr(EinsoraCatalog) catalog = einsora_catalog_new_builtin(&error);
        g_autoptr(EinsoraSqliteStore) store = NULL;
        g_autoptr(EinsoraSqliteStore) peer_store = NULL;
        g_autoptr(EinsoraSqliteStore) one_store = NULL;
        g_autoptr(EinsoraFakeBackend) backend = einsora_fake_backend_new();
        g_autoptr(EinsoraFakeBackend) peer_backend = einsora_fake_backend_new();
        g_autoptr(EinsoraFakeBackend) one_backend = einsora_fake_backend_new();
        g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(EinsoraService) service = NULL;
        g_autoptr(EinsoraController) controller = NULL;
        g_autofree gchar *tenant_id = NULL;
        g_autofree gchar *peer_tenant = NULL;
        g_autofree gchar *one_tenant = NULL;

        g_assert_nonnull(g_mkdtemp_full(dir, 0700));
        store = fresh_store(dir, "einsora.db");
        peer_store = fresh_store(dir, "peer.db");
        one_store = fresh_store(dir, "one.db");
        seed(store, backend, MACHINES, FALSE, &tenant_id, ids);
        seed(peer_store, peer_backend, MACHINES, FALSE, &peer_tenant, ids);
        seed(one_store, one_backend, MACHINES, FALSE, &one_tenant, ids);
        service = einsora_service_new(EINSORA_STORE(store), catalog, real_now, NULL);
        controller = einsora_controller_new(service, EINSORA_STORE(store), catalog,
                                            EINSORA_BACKEND(backend), "local", real_now, NULL);

        /* Alternate which goes first, so drift on a shared machine evens out. */
        if (round % 2 == 0) {
            admit[round] = timed_pass(controller);
            peer[round] = bare_transactions(peer_store, FALSE);
            one[round] = bare_transactions(one_store, TRUE);
        } else {
            one[round] = bare_transactions(one_store, TRUE);
            peer[round] = bare_transactions(peer_store, FALSE);
            admit[round] = timed_pass(controller);
        }
        timed_pass(controller); /* provisioning -> running */
        idle[round] = timed_pass(controller);
        ratio[round] = admit[round] / peer[round];
        one_ratio[round] = admit[round] / one[round];
        hub[round] = hub_pass(dir, catalog);
        fprintf(stderr,
                "round %u: admit %.0f ms, idle pass %.0f ms, bare transactions %.0f ms, one "
                "bare transaction %.0f ms, hub pass %.0f ms\n",
                round + 1, admit[round], idle[round], peer[round], one[round], hub[round]);
        g_clear_object(&controller);
        g_clear_object(&service);
        g_clear_object(&store);
        g_clear_object(&peer_store);
        g_clear_object(&one_store);
        {
            g_autofree gchar *cmd = g_strdup_printf("rm -rf '%s'", dir);
            g_assert_cmpint(system(cmd), ==, 0);
        }
    }
    printf("| pass | median | per workload |\n| --- | ---: | ---: |\n");
    printf("| reconcile_once admitting %d pending over %d machines | %.0f ms | %.1f µs |\n",
           WORKLOADS, MACHINES, median(admit, rounds), median(admit, rounds) * 1000 / WORKLOADS);
    printf("| reconcile_once with nothing to do (%d running, fake backend) | %.0f ms | %.1f µs "
           "|\n",
           WORKLOADS, median(idle, rounds), median(idle, rounds) * 1000 / WORKLOADS);
    printf("| reconcile_once observing %d running on %d machines (hub) | %.0f ms | %.1f µs |\n",
           WORKLOADS, HUB_MACHINES, median(hub, rounds), median(hub, rounds) * 1000 / WORKLOADS);
    printf("| peer: %d bare SQLite transactions (UPDATE + INSERT) | %.0f ms | %.1f µs |\n",
           WORKLOADS, median(peer, rounds), median(peer, rounds) * 1000 / WORKLOADS);
    printf("| peer: one bare SQLite transaction of %d UPDATE + INSERT | %.0f ms | %.1f µs |\n",
           WORKLOADS, median(one, rounds), median(one, rounds) * 1000 / WORKLOADS);
    printf("| ratio admit / %d transactions (median of rounds) | %.2f | |\n", WORKLOADS,
           median(ratio, rounds));
    printf("| ratio admit / one transaction (median of rounds) | %.2f | |\n",
           median(one_ratio, rounds));
    printf("| placements per second (median pass) | %.0f | |\n",
           WORKLOADS / (median(admit, rounds) / 1000.0));
    return 0;
}
