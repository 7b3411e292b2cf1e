/* How long one reconcile_once() takes at Lab scale: 10,000 pending
 * workloads admitted over 1,000 machines (fake backend, real SQLite), and
 * a pass with nothing to do at that size. The peer, measured in the same
 * run on the same file system: 10,000 bare SQLite transactions doing the
 * same writes (a CAS UPDATE and an event INSERT each), the floor any
 * admission pass pays. Not a test: run bench/reconcile-bench.sh. */
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>

#include "einsora-controller.h"
#include "einsora-fake-backend.h"
#include "einsora-sqlite-store.h"
#include "einsora-uuid.h"

#define MACHINES 1000
#define WORKLOADS 10000
#define ROUNDS 5

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

/* Seeds a tenant, @MACHINES machines and @WORKLOADS pending workloads in
 * one transaction (seeding isn't what is measured). */
static void
seed(EinsoraSqliteStore *store, EinsoraFakeBackend *backend, gchar **tenant_id)
{
    g_autoptr(GError) error = NULL;
    gint64 now = g_get_real_time();
    g_autofree gchar *created = einsora_timestamp_format(now);
    g_autoptr(EinsoraTenant) tenant = NULL;

    *tenant_id = einsora_uuid_v7_new(now / 1000);
    tenant = einsora_tenant_new(*tenant_id, "bench", TRUE, created);
    g_assert_true(einsora_store_begin(EINSORA_STORE(store), &error));
    g_assert_true(einsora_store_insert_tenant(EINSORA_STORE(store), tenant, &error));
    for (guint i = 0; i < MACHINES; i++) {
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
        event->to_state = EINSORA_WORKLOAD_STATE_PENDING;
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

/* The peer: the same number of transactions, each a CAS-shaped UPDATE and
 * an event INSERT, straight through the SQLite C API on the same file. */
static double
bare_transactions(EinsoraSqliteStore *store)
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
    for (guint i = 0; i < all->len; i += 2) {
        g_autofree gchar *event_id = einsora_uuid_v7_new(now / 1000);
        g_autofree gchar *at = einsora_timestamp_format(now);
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
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    sqlite3_finalize(update);
    sqlite3_finalize(insert);
    return (g_get_monotonic_time() - start) / 1000.0;
}

int
main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : g_get_tmp_dir();
    double admit[ROUNDS], idle[ROUNDS], peer[ROUNDS], ratio[ROUNDS];

    for (guint round = 0; round < ROUNDS; round++) {
        g_autoptr(GError) error = NULL;
        g_autofree gchar *dir = g_build_filename(root, "einsora-reconcile-XXXXXX", NULL);
        g_autoptr(EinsoraCatalog) catalog = einsora_catalog_new_builtin(&error);
        g_autoptr(EinsoraSqliteStore) store = NULL;
        g_autoptr(EinsoraSqliteStore) peer_store = NULL;
        g_autoptr(EinsoraFakeBackend) backend = einsora_fake_backend_new();
        g_autoptr(EinsoraFakeBackend) peer_backend = einsora_fake_backend_new();
        g_autoptr(EinsoraService) service = NULL;
        g_autoptr(EinsoraController) controller = NULL;
        g_autofree gchar *tenant_id = NULL;
        g_autofree gchar *peer_tenant = NULL;

        g_assert_nonnull(g_mkdtemp_full(dir, 0700));
        store = fresh_store(dir, "einsora.db");
        peer_store = fresh_store(dir, "peer.db");
        seed(store, backend, &tenant_id);
        seed(peer_store, peer_backend, &peer_tenant);
        service = einsora_service_new(EINSORA_STORE(store), catalog, real_now, NULL);
        controller = einsora_controller_new(service, EINSORA_STORE(store), catalog,
                                            EINSORA_BACKEND(backend), "local", real_now, NULL);

        /* Alternate which goes first, so drift on a shared machine evens out. */
        if (round % 2 == 0) {
            admit[round] = timed_pass(controller);
            peer[round] = bare_transactions(peer_store);
        } else {
            peer[round] = bare_transactions(peer_store);
            admit[round] = timed_pass(controller);
        }
        timed_pass(controller); /* provisioning -> running */
        idle[round] = timed_pass(controller);
        ratio[round] = admit[round] / peer[round];
        fprintf(stderr, "round %u: admit %.0f ms, idle pass %.0f ms, bare transactions %.0f ms\n",
                round + 1, admit[round], idle[round], peer[round]);
        g_clear_object(&controller);
        g_clear_object(&service);
        g_clear_object(&store);
        g_clear_object(&peer_store);
        {
            g_autofree gchar *cmd = g_strdup_printf("rm -rf '%s'", dir);
            g_assert_cmpint(system(cmd), ==, 0);
        }
    }
    printf("| pass | median | per workload |\n| --- | ---: | ---: |\n");
    printf("| reconcile_once admitting %d pending over %d machines | %.0f ms | %.1f µs |\n",
           WORKLOADS, MACHINES, median(admit, ROUNDS), median(admit, ROUNDS) * 1000 / WORKLOADS);
    printf("| reconcile_once with nothing to do (%d running) | %.0f ms | %.1f µs |\n", WORKLOADS,
           median(idle, ROUNDS), median(idle, ROUNDS) * 1000 / WORKLOADS);
    printf("| peer: %d bare SQLite transactions (UPDATE + INSERT) | %.0f ms | %.1f µs |\n",
           WORKLOADS, median(peer, ROUNDS), median(peer, ROUNDS) * 1000 / WORKLOADS);
    printf("| ratio admit / peer (median of rounds) | %.2f | |\n", median(ratio, ROUNDS));
    return 0;
}
