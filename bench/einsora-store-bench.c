/* The SQLite store against the PostgreSQL store, in the same run on the
 * same file system: creates per second (one transaction each, the
 * service's create: quota, GPUs held, the workload, its "created" event),
 * one reconcile_once() admitting 10,000 pending workloads over 1,000
 * machines (fake backend, one group transaction), and a pass with nothing
 * to do at that size. PostgreSQL is a private server on a Unix socket
 * (tests/einsora-test-postgres.c), restarted with fsync on, as SQLite
 * runs synchronous=FULL. BENCH_ROUNDS rounds (3), which store goes first
 * alternating; medians. Not a test: run bench/store-bench.sh. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <unistd.h>

#include "einsora-controller.h"
#include "einsora-fake-backend.h"
#include "einsora-pg-store.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-postgres.h"
#include "einsora-uuid.h"

#define MACHINES 1000
#define WORKLOADS 10000
#define CREATES 2000
#define MAX_ROUNDS 15
#define GPU_CLASS "bench-gpu"

typedef enum { STORE_SQLITE, STORE_PG, STORE_KINDS } StoreKind;

static const char *const store_names[STORE_KINDS] = {"SQLite", "PostgreSQL"};

typedef struct {
    const char *dir;         /* the round's private directory (SQLite) */
    EinsoraTestPostgres *pg; /* the server (PostgreSQL) */
    GPtrArray *databases;    /* the round's databases, dropped at its end */
    guint files;
} Round;

typedef struct {
    double creates_per_s;
    double admit_ms;
    double idle_ms;
} Result;

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

/* A new, migrated, empty store of @kind: a file in the round's directory,
 * or a database of its own on the server. */
static EinsoraStore *
fresh_store(Round *round, StoreKind kind)
{
    g_autoptr(GError) error = NULL;

    if (kind == STORE_SQLITE) {
        g_autofree gchar *name = g_strdup_printf("einsora-%u.db", ++round->files);
        g_autofree gchar *path = g_build_filename(round->dir, name, NULL);
        g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, &error);

        g_assert_no_error(error);
        g_assert_true(einsora_sqlite_store_migrate(store, g_get_real_time(), &error));
        return EINSORA_STORE(g_steal_pointer(&store));
    } else {
        gchar *database = einsora_test_postgres_create_database(round->pg, NULL);
        g_autofree gchar *conninfo = einsora_test_postgres_conninfo(round->pg, database);
        g_autoptr(EinsoraPgStore) store = einsora_pg_store_open(conninfo, &error);

        g_ptr_array_add(round->databases, database);
        g_assert_no_error(error);
        g_assert_true(einsora_pg_store_migrate(store, g_get_real_time(), &error));
        return EINSORA_STORE(g_steal_pointer(&store));
    }
}

static gchar *
seed_tenant(EinsoraStore *store, gint64 now)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *created = einsora_timestamp_format(now);
    gchar *tenant_id = einsora_uuid_v7_new(now / 1000);
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(tenant_id, "bench", TRUE, created);

    g_assert_true(einsora_store_insert_tenant(store, tenant, &error));
    g_assert_no_error(error);
    return tenant_id;
}

/* Seeds a tenant, @MACHINES machines (added to @backend) and @WORKLOADS
 * pending workloads in one transaction (seeding isn't what is measured). */
static void
seed(EinsoraStore *store, EinsoraFakeBackend *backend)
{
    g_autoptr(GError) error = NULL;
    gint64 now = g_get_real_time();
    g_autofree gchar *created = einsora_timestamp_format(now);
    g_autofree gchar *tenant_id = NULL;
    g_autoptr(GPtrArray) machine_ids = g_ptr_array_new_with_free_func(g_free);

    g_assert_true(einsora_store_begin(store, &error));
    tenant_id = seed_tenant(store, now);
    for (guint i = 0; i < MACHINES; i++) {
        g_autoptr(EinsoraMachine) machine = einsora_machine_new();
        EinsoraMachineCapacity *capacity;
        machine->id = einsora_uuid_v7_new(now / 1000);
        machine->tenant_id = g_strdup(tenant_id);
        machine->name = g_strdup_printf("m%04u", i);
        machine->region = g_strdup("local");
        machine->os = g_strdup("linux");
        machine->cpus = 64;
        machine->memory_mib = 262144;
        machine->created_at = g_strdup(created);
        g_assert_true(einsora_store_insert_machine(store, machine, &error));
        g_ptr_array_add(machine_ids, g_strdup(machine->id));
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
        workload->tenant_id = g_strdup(tenant_id);
        workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
        workload->name = g_strdup_printf("w%05u", i);
        workload->state = EINSORA_WORKLOAD_STATE_PENDING;
        workload->region = g_strdup("local");
        workload->gpu_class = g_strdup("cpu-2c-4g");
        workload->image = g_strdup("jupyter-notebook");
        workload->created_by = g_strdup("bench");
        workload->created_at = einsora_timestamp_format(now + i);
        workload->updated_at = g_strdup(workload->created_at);
        g_assert_true(einsora_store_insert_workload(store, workload, &error));
        event->id = einsora_uuid_v7_new(now / 1000);
        event->tenant_id = g_strdup(tenant_id);
        event->workload_id = g_strdup(workload->id);
        event->to_state = workload->state;
        event->reason = g_strdup("created by bench");
        event->created_at = g_strdup(workload->created_at);
        g_assert_true(einsora_store_append_event(store, event, &error));
    }
    g_assert_true(einsora_store_commit(store, &error));
    g_assert_no_error(error);
}

/* @CREATES creates, one transaction each, as the service's create does
 * it: the tenant's quota of the class and the GPUs its workloads hold,
 * then the workload and its "created" event. Returns creates per second. */
static double
creates(EinsoraStore *store)
{
    g_autoptr(GError) error = NULL;
    gint64 now = g_get_real_time();
    g_autofree gchar *tenant_id = seed_tenant(store, now);
    gint64 start;

    g_assert_true(einsora_store_set_quota(store, tenant_id, GPU_CLASS, 1000000, &error));
    start = g_get_monotonic_time();
    for (guint i = 0; i < CREATES; i++) {
        g_autoptr(EinsoraWorkload) workload = einsora_workload_new();
        g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();
        gint64 sums[EINSORA_WORKLOAD_STATE_COUNT] = {0};
        gint64 quota = 0;
        gint64 held = 0;
        gint64 at = g_get_real_time();

        workload->id = einsora_uuid_v7_new(at / 1000);
        workload->tenant_id = g_strdup(tenant_id);
        workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
        workload->name = g_strdup_printf("c%05u", i);
        workload->state = EINSORA_WORKLOAD_STATE_INITIAL;
        workload->region = g_strdup("local");
        workload->gpu_class = g_strdup(GPU_CLASS);
        workload->gpus = 1;
        workload->image = g_strdup("jupyter-notebook");
        workload->created_by = g_strdup("bench");
        workload->created_at = einsora_timestamp_format(at);
        workload->updated_at = g_strdup(workload->created_at);
        event->id = einsora_uuid_v7_new(at / 1000);
        event->tenant_id = g_strdup(tenant_id);
        event->workload_id = g_strdup(workload->id);
        event->to_state = workload->state;
        event->reason = g_strdup("created");
        event->created_at = g_strdup(workload->created_at);

        g_assert_true(einsora_store_begin(store, &error));
        g_assert_true(einsora_store_get_quota(store, tenant_id, GPU_CLASS, &quota, &error));
        g_assert_true(einsora_store_gpus_by_state(store, tenant_id, GPU_CLASS, sums, &error));
        for (guint state = 0; state < EINSORA_WORKLOAD_STATE_COUNT; state++) {
            if (einsora_workload_state_holds_quota((EinsoraWorkloadState)state))
                held += sums[state];
        }
        g_assert_cmpint(held + workload->gpus, <=, quota);
        g_assert_true(einsora_store_insert_workload(store, workload, &error));
        g_assert_true(einsora_store_append_event(store, event, &error));
        g_assert_true(einsora_store_commit(store, &error));
    }
    g_assert_no_error(error);
    return CREATES / ((g_get_monotonic_time() - start) / (double)G_USEC_PER_SEC);
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

/* Every seeded workload admitted, and nothing left pending. */
static void
check_admitted(EinsoraStore *store)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) pending =
        einsora_store_list_workloads_in_state(store, EINSORA_WORKLOAD_STATE_PENDING, &error);

    g_assert_no_error(error);
    g_assert_cmpuint(pending->len, ==, 0);
}

static void
run_store(Round *round, StoreKind kind, EinsoraCatalog *catalog, Result *result)
{
    g_autoptr(EinsoraStore) create_store = fresh_store(round, kind);
    g_autoptr(EinsoraStore) store = fresh_store(round, kind);
    g_autoptr(EinsoraFakeBackend) backend = einsora_fake_backend_new();
    g_autoptr(EinsoraService) service = NULL;
    g_autoptr(EinsoraController) controller = NULL;

    result->creates_per_s = creates(create_store);
    seed(store, backend);
    /* What autovacuum does within its first minute on a table that grew
     * this much: without statistics, the foreign-key check each event
     * INSERT runs keeps a plan made on the empty table (by tenant, then
     * filtered), 24x SQLite instead of about 10x (docs/bench.md). */
    if (kind == STORE_PG) {
        g_autoptr(PGresult) analyzed =
            PQexec(einsora_pg_store_get_connection(EINSORA_PG_STORE(store)), "ANALYZE");
        g_assert_cmpint(PQresultStatus(analyzed), ==, PGRES_COMMAND_OK);
    }
    service = einsora_service_new(store, catalog, real_now, NULL);
    controller = einsora_controller_new(service, store, catalog, EINSORA_BACKEND(backend), "local",
                                        real_now, NULL);
    result->admit_ms = timed_pass(controller);
    check_admitted(store);
    timed_pass(controller); /* provisioning -> running */
    result->idle_ms = timed_pass(controller);
}

/* The hub's and controller's per-workload messages would bury the
 * figures. */
static GLogWriterOutput
quiet_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
        return g_log_writer_default(level, fields, n_fields, user_data);
    return G_LOG_WRITER_HANDLED;
}

/* One setting, SHOW, on a connection of its own. */
static gchar *
pg_show(EinsoraTestPostgres *pg, const char *setting)
{
    g_autofree gchar *conninfo = einsora_test_postgres_conninfo(pg, "postgres");
    g_autofree gchar *sql = g_strdup_printf("SHOW %s", setting);
    PGconn *conn = PQconnectdb(conninfo);
    PGresult *res;
    gchar *value;

    if (PQstatus(conn) != CONNECTION_OK)
        g_error("connecting to the bench's PostgreSQL: %s", PQerrorMessage(conn));
    res = PQexec(conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        g_error("%s: %s", sql, PQerrorMessage(conn));
    value = g_strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    PQfinish(conn);
    return value;
}

/* The tests' server runs without fsync; a Lab's runs with it, and so
 * does this one (synchronous_commit is on by default): every commit is
 * durable, as SQLite's with synchronous=FULL. */
static void
pg_durable(EinsoraTestPostgres *pg)
{
    g_autofree gchar *fsync = NULL;
    g_autofree gchar *synchronous_commit = NULL;

    einsora_test_postgres_set_durable(pg);
    fsync = pg_show(pg, "fsync");
    synchronous_commit = pg_show(pg, "synchronous_commit");
    if (!g_str_equal(fsync, "on") || !g_str_equal(synchronous_commit, "on"))
        g_error("PostgreSQL runs fsync=%s, synchronous_commit=%s", fsync, synchronous_commit);
    /* Every page the databases copy from template1 on disk first. */
    einsora_test_postgres_exec(pg, "CHECKPOINT");
}

static void
end_round(Round *round)
{
    for (guint i = 0; i < round->databases->len; i++)
        einsora_test_postgres_drop_database(round->pg, g_ptr_array_index(round->databases, i));
    g_ptr_array_set_size(round->databases, 0);
}

int
main(int argc, char **argv)
{
    const char *rounds_text = g_getenv("BENCH_ROUNDS");
    guint rounds = rounds_text != NULL ? (guint)g_ascii_strtoull(rounds_text, NULL, 10) : 3;
    double creates_per_s[STORE_KINDS][MAX_ROUNDS], admit[STORE_KINDS][MAX_ROUNDS];
    double idle[STORE_KINDS][MAX_ROUNDS];
    double create_ratio[MAX_ROUNDS], admit_ratio[MAX_ROUNDS], idle_ratio[MAX_ROUNDS];
    double med_creates[STORE_KINDS], med_admit[STORE_KINDS], med_idle[STORE_KINDS];
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = einsora_catalog_new_builtin(&error);
    g_autofree gchar *root = einsora_test_dir_new();
    g_autofree gchar *pg_version = NULL;
    g_autofree gchar *pg_fsync = NULL;
    g_autofree gchar *pg_sync_commit = NULL;
    g_autofree gchar *pg_sync_method = NULL;
    g_autofree gchar *pg_full_page_writes = NULL;
    g_autofree gchar *pg_shared_buffers = NULL;
    EinsoraTestPostgres *pg;
    gint64 start = g_get_monotonic_time();

    g_assert_no_error(error);
    rounds = CLAMP(rounds, 1, MAX_ROUNDS);
    g_log_set_writer_func(quiet_writer, NULL, NULL);
    pg = einsora_test_postgres_start();
    if (pg == NULL) {
        g_printerr("PostgreSQL 15 isn't installed (postgresql-15): nothing to compare\n");
        einsora_test_dir_remove(root);
        return 77;
    }
    pg_durable(pg);
    pg_version = pg_show(pg, "server_version");
    pg_fsync = pg_show(pg, "fsync");
    pg_sync_commit = pg_show(pg, "synchronous_commit");
    pg_sync_method = pg_show(pg, "wal_sync_method");
    pg_full_page_writes = pg_show(pg, "full_page_writes");
    pg_shared_buffers = pg_show(pg, "shared_buffers");

    for (guint r = 0; r < rounds; r++) {
        g_autofree gchar *dir = g_strdup_printf("%s/round-%u", root, r + 1);
        g_autoptr(GPtrArray) databases = g_ptr_array_new_with_free_func(g_free);
        Round round = {dir, pg, databases, 0};
        Result results[STORE_KINDS];
        /* Alternate which goes first, so drift on a shared machine evens out. */
        StoreKind order[2] = {r % 2 == 0 ? STORE_SQLITE : STORE_PG,
                              r % 2 == 0 ? STORE_PG : STORE_SQLITE};

        g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
        for (guint i = 0; i < 2; i++)
            run_store(&round, order[i], catalog, &results[order[i]]);
        for (guint k = 0; k < STORE_KINDS; k++) {
            creates_per_s[k][r] = results[k].creates_per_s;
            admit[k][r] = results[k].admit_ms;
            idle[k][r] = results[k].idle_ms;
            fprintf(stderr, "round %u %s%s: %.0f creates/s, admit %.0f ms, idle pass %.0f ms\n",
                    r + 1, store_names[k], order[0] == (StoreKind)k ? " (first)" : "",
                    results[k].creates_per_s, results[k].admit_ms, results[k].idle_ms);
        }
        create_ratio[r] = creates_per_s[STORE_PG][r] / creates_per_s[STORE_SQLITE][r];
        admit_ratio[r] = admit[STORE_PG][r] / admit[STORE_SQLITE][r];
        idle_ratio[r] = idle[STORE_PG][r] / idle[STORE_SQLITE][r];
        end_round(&round);
        einsora_test_dir_remove(dir);
    }
    einsora_test_postgres_stop(pg);
    einsora_test_dir_remove(root);

    for (guint k = 0; k < STORE_KINDS; k++) {
        med_creates[k] = median(creates_per_s[k], rounds);
        med_admit[k] = median(admit[k], rounds);
        med_idle[k] = median(idle[k], rounds);
    }
    printf("| measure (median of %u rounds) | SQLite | PostgreSQL | PG / SQLite (median of "
           "rounds) |\n| --- | ---: | ---: | ---: |\n",
           rounds);
    printf("| creates per second (%d, one transaction each) | %.0f | %.0f | %.2f |\n", CREATES,
           med_creates[STORE_SQLITE], med_creates[STORE_PG], median(create_ratio, rounds));
    printf("| reconcile_once admitting %d pending over %d machines | %.0f ms | %.0f ms | %.2f |\n",
           WORKLOADS, MACHINES, med_admit[STORE_SQLITE], med_admit[STORE_PG],
           median(admit_ratio, rounds));
    printf("| admission per workload | %.1f µs | %.1f µs | |\n",
           med_admit[STORE_SQLITE] * 1000 / WORKLOADS, med_admit[STORE_PG] * 1000 / WORKLOADS);
    printf("| reconcile_once with nothing to do (%d running) | %.0f ms | %.0f ms | %.2f |\n",
           WORKLOADS, med_idle[STORE_SQLITE], med_idle[STORE_PG], median(idle_ratio, rounds));
    printf("| idle pass per workload | %.1f µs | %.1f µs | |\n",
           med_idle[STORE_SQLITE] * 1000 / WORKLOADS, med_idle[STORE_PG] * 1000 / WORKLOADS);
    printf("\nSQLite: WAL, synchronous=FULL, a file in a private directory under %s.\n"
           "PostgreSQL %s: private server on a Unix socket (no TCP), same file system; "
           "fsync=%s, synchronous_commit=%s, wal_sync_method=%s, full_page_writes=%s, "
           "shared_buffers=%s.\nWhole run: %.0f s.\n",
           g_get_tmp_dir(), pg_version, pg_fsync, pg_sync_commit, pg_sync_method,
           pg_full_page_writes, pg_shared_buffers,
           (g_get_monotonic_time() - start) / (double)G_USEC_PER_SEC);
    return 0;
}
