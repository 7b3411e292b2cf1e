/* The Postgres store: the conformance suite every store passes, on a real
 * PostgreSQL 15 this binary starts, and what only Postgres has (the
 * connection string, a database that isn't Einsora's, migrations, a
 * connection the server ends). */
#define G_LOG_DOMAIN "einsora-store"

#include <gio/gio.h>
#include <libpq-fe.h>
#include <signal.h>
#include <string.h>

#include "einsora-error.h"
#include "einsora-migrations.h"
#include "einsora-pg-store.h"
#include "einsora-pg-store-private.h"
#include "einsora-store-conformance.h"
#include "einsora-test-postgres.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

/* 2026-01-01T00:00:00Z */
#define BASE_US G_GINT64_CONSTANT(1767225600000000)
#define DATABASE_KEY "einsora-test-database"

#define TEMPLATE "einsora_template"

static EinsoraTestPostgres *postgres;

/* Migrated once; every store of the suite is a copy. */
static void
make_template(void)
{
    g_autofree gchar *conninfo = einsora_test_postgres_conninfo(postgres, TEMPLATE);
    g_autoptr(EinsoraPgStore) store = NULL;
    g_autoptr(GError) error = NULL;

    einsora_test_postgres_exec(postgres, "CREATE DATABASE " TEMPLATE);
    store = einsora_pg_store_open(conninfo, &error);
    g_assert_no_error(error);
    einsora_pg_store_migrate(store, BASE_US, &error);
    g_assert_no_error(error);
}

/* The harness: each store gets a copy of the migrated template, dropped
 * when the store is finalized (after it closed its connection). */

static void
database_free(gpointer name)
{
    einsora_test_postgres_drop_database(postgres, name);
    g_free(name);
}

static EinsoraStore *
pg_open_fresh(gpointer data, GError **error)
{
    g_autofree gchar *name = einsora_test_postgres_create_database(postgres, TEMPLATE);
    g_autofree gchar *conninfo = einsora_test_postgres_conninfo(postgres, name);
    g_autoptr(EinsoraPgStore) store = einsora_pg_store_open(conninfo, error);

    if (store == NULL) {
        einsora_test_postgres_drop_database(postgres, name);
        return NULL;
    }
    g_object_set_data_full(G_OBJECT(store), DATABASE_KEY, g_steal_pointer(&name), database_free);
    return EINSORA_STORE(g_steal_pointer(&store));
}

static gboolean
pg_raw_exec(EinsoraStore *store, const char *sql, GError **error)
{
    PGconn *conn = einsora_pg_store_get_connection(EINSORA_PG_STORE(store));
    g_autoptr(PGresult) res = PQexec(conn, sql);

    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "postgres: %s", PQerrorMessage(conn));
        return FALSE;
    }
    return TRUE;
}

static GStrv
query_strv(EinsoraStore *store, const char *sql, const char *param)
{
    PGconn *conn = einsora_pg_store_get_connection(EINSORA_PG_STORE(store));
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_autoptr(PGresult) res =
        PQexecParams(conn, sql, param != NULL ? 1 : 0, NULL, &param, NULL, NULL, 0);

    g_assert_cmpint(PQresultStatus(res), ==, PGRES_TUPLES_OK);
    for (int i = 0; i < PQntuples(res); i++)
        g_strv_builder_add(builder, PQgetvalue(res, i, 0));
    return g_strv_builder_end(builder);
}

static GStrv
pg_list_columns(EinsoraStore *store, const char *table)
{
    return query_strv(store,
                      "SELECT column_name FROM information_schema.columns "
                      "WHERE table_schema = current_schema() AND table_name = $1",
                      table);
}

/* As SQLite's: the indexes the schema names, not those a primary key or a
 * UNIQUE constraint makes by itself; schema_migrations is the runner's. */
static GStrv
pg_list_indexes(EinsoraStore *store)
{
    return query_strv(store,
                      "SELECT i.relname FROM pg_index x "
                      "JOIN pg_class i ON i.oid = x.indexrelid "
                      "JOIN pg_class t ON t.oid = x.indrelid "
                      "WHERE t.relnamespace = current_schema()::regnamespace "
                      "AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
                      "WHERE c.conindid = x.indexrelid AND c.contype IN ('p', 'u', 'x'))",
                      NULL);
}

static const EinsoraStoreHarness pg_harness = {
    .name = "postgres",
    .open_fresh = pg_open_fresh,
    .raw_exec = pg_raw_exec,
    .list_columns = pg_list_columns,
    .list_indexes = pg_list_indexes,
    .data = NULL,
};

/* Postgres-specific tests: each gets an empty database of its own. */

typedef struct {
    gchar *database;
    gchar *conninfo;
    EinsoraPgStore *store; /* opened, not migrated */
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    f->database = einsora_test_postgres_create_database(postgres, NULL);
    f->conninfo = einsora_test_postgres_conninfo(postgres, f->database);
    f->store = einsora_pg_store_open(f->conninfo, &error);
    g_assert_no_error(error);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    /* A test that failed while it had the postmaster stopped. */
    kill(einsora_test_postgres_get_pid(postgres), SIGCONT);
    g_clear_object(&f->store);
    einsora_test_postgres_drop_database(postgres, f->database);
    g_free(f->database);
    g_free(f->conninfo);
}

static void
migrate(Fixture *f)
{
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_pg_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
}

/* Runs @sql on its own connection to the fixture's database. */
static void
admin_exec(Fixture *f, const char *sql)
{
    PGconn *conn = PQconnectdb(f->conninfo);
    PGresult *res;

    g_assert_cmpint(PQstatus(conn), ==, CONNECTION_OK);
    res = PQexec(conn, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
        g_error("%s: %s", sql, PQerrorMessage(conn));
    PQclear(res);
    PQfinish(conn);
}

static gint64
admin_query_int(Fixture *f, const char *sql)
{
    PGconn *conn = PQconnectdb(f->conninfo);
    g_autoptr(PGresult) res = NULL;
    gint64 value;

    g_assert_cmpint(PQstatus(conn), ==, CONNECTION_OK);
    res = PQexec(conn, sql);
    g_assert_cmpint(PQresultStatus(res), ==, PGRES_TUPLES_OK);
    value = g_ascii_strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQfinish(conn);
    return value;
}

static void
test_open_refuses_empty(void)
{
    g_autoptr(GError) error = NULL;

    g_assert_null(einsora_pg_store_open("", &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

/* A server that isn't there is UNAVAILABLE, and the message, which names
 * where it looked, never carries the password. */
static void
test_open_unreachable_hides_password(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *missing = g_build_filename(g_get_tmp_dir(), "einsora-no-such-dir", NULL);
    g_autofree gchar *conninfo = g_strdup_printf(
        "postgresql://einsora:Sup3rSecretPassw0rd@localhost/einsora?host=%s", missing);

    g_assert_null(einsora_pg_store_open(conninfo, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_assert_null(strstr(error->message, "Sup3rSecretPassw0rd"));
    g_assert_nonnull(strstr(error->message, "can't connect to PostgreSQL"));
}

/* Tables without schema_migrations: another program's, left as found. */
static void
test_open_refuses_foreign_database(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraPgStore) store = NULL;

    admin_exec(f, "CREATE TABLE invoices (id BIGINT PRIMARY KEY)");
    store = einsora_pg_store_open(f->conninfo, &error);
    g_assert_null(store);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    g_assert_nonnull(strstr(error->message, "invoices"));
    g_assert_cmpint(admin_query_int(f, "SELECT count(*) FROM pg_tables WHERE schemaname = "
                                       "'public'"),
                    ==, 1);
}

static void
test_migrations_builtin(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) builtin = einsora_migrations_load_builtin_dialect("postgres", &error);
    g_autoptr(GPtrArray) sqlite = einsora_migrations_load_builtin_dialect("sqlite", &error);

    g_assert_no_error(error);
    /* The same versions, by the same names, in both dialects. */
    g_assert_cmpuint(builtin->len, ==, sqlite->len);
    for (guint i = 0; i < builtin->len; i++) {
        const EinsoraMigration *pg = g_ptr_array_index(builtin, i);
        const EinsoraMigration *lite = g_ptr_array_index(sqlite, i);
        g_assert_cmpstr(pg->name, ==, lite->name);
    }
    g_assert_false(einsora_store_check_ready(EINSORA_STORE(f->store), &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_clear_error(&error);
    migrate(f);
    g_assert_true(einsora_store_check_ready(EINSORA_STORE(f->store), &error));
    g_assert_no_error(error);
    g_assert_cmpint(admin_query_int(f, "SELECT max(version) FROM schema_migrations"), ==,
                    builtin->len);
    /* Again: nothing to do. */
    migrate(f);
    g_assert_cmpint(admin_query_int(f, "SELECT count(*) FROM schema_migrations"), ==, builtin->len);
}

static void
test_migrations_newer_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    migrate(f);
    admin_exec(f, "INSERT INTO schema_migrations (version, name, sha256, applied_at) VALUES "
                  "(999, '00999_future', 'x', '2027-01-01T00:00:00.000000Z')");
    g_assert_false(einsora_pg_store_migrate(f->store, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
    g_assert_nonnull(strstr(error->message, "newer"));
}

static void
test_migrations_edited_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    migrate(f);
    admin_exec(f, "UPDATE schema_migrations SET sha256 = 'edited' WHERE version = 2");
    g_assert_false(einsora_pg_store_migrate(f->store, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    g_assert_nonnull(strstr(error->message, "changed after it was applied"));
}

/* A migration that fails leaves nothing of itself, and the ones before it
 * stay applied. */
static void
test_migrations_failure_rolls_back(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_migration_free);

    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_one", "CREATE TABLE one (x INT)"));
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_two",
                                                      "CREATE TABLE two (x INT); "
                                                      "SELECT no_such_function()"));
    g_assert_false(einsora_pg_store_migrate_with(f->store, migrations, BASE_US, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "00002_two"));
    g_assert_cmpint(admin_query_int(f, "SELECT max(version) FROM schema_migrations"), ==, 1);
    g_assert_cmpint(admin_query_int(f, "SELECT count(*) FROM pg_tables WHERE tablename = 'two'"),
                    ==, 0);
}

/* The server ends the daemon's session (pg_terminate_backend, a restart,
 * a failover): the call that finds it gone is UNAVAILABLE, the next
 * reconnects by itself. Inside a transaction the transaction is lost. */
static void
test_connection_terminated(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) tenant = NULL;
    g_autoptr(EinsoraTenant) got = NULL;
    g_autofree gchar *id = einsora_uuid_v7_new(BASE_US / 1000);
    g_autofree gchar *at = einsora_timestamp_format(BASE_US);
    g_autofree gchar *kill = NULL;
    EinsoraStore *store = EINSORA_STORE(f->store);

    migrate(f);
    tenant = einsora_tenant_new(id, "acme", FALSE, at);
    kill = g_strdup_printf("SELECT pg_terminate_backend(%d)",
                           PQbackendPID(einsora_pg_store_get_connection(f->store)));

    /* Outside a transaction. */
    admin_exec(f, kill);
    got = einsora_store_get_tenant(store, id, &error);
    g_assert_null(got);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_clear_error(&error);
    g_assert_true(einsora_store_insert_tenant(store, tenant, &error));
    g_assert_no_error(error);

    /* Inside one: it fails, rolls back, and the next begins anew. */
    g_clear_pointer(&kill, g_free);
    kill = g_strdup_printf("SELECT pg_terminate_backend(%d)",
                           PQbackendPID(einsora_pg_store_get_connection(f->store)));
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    admin_exec(f, kill);
    g_assert_false(einsora_store_set_quota(store, id, "l40s-48gb", 2, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_clear_error(&error);
    g_assert_false(einsora_store_commit(store, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_clear_error(&error);
    einsora_store_rollback(store);
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_set_quota(store, id, "l40s-48gb", 3, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_commit(store, &error));
    g_assert_no_error(error);
    g_assert_cmpint(admin_query_int(f, "SELECT gpus FROM quotas"), ==, 3);
}

/* Two daemons' transactions take turns (the store's advisory lock): the
 * second begin waits until the first commits, then sees what it wrote. */
typedef struct {
    const char *conninfo;
    const char *tenant_id;
    gint64 gpus_seen;
    gint64 waited_us;
} SecondWriter;

static gpointer
second_writer(gpointer data)
{
    SecondWriter *writer = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraPgStore) store = einsora_pg_store_open(writer->conninfo, &error);
    gint64 started = g_get_monotonic_time();

    g_assert_no_error(error);
    g_assert_true(einsora_store_begin(EINSORA_STORE(store), &error));
    g_assert_no_error(error);
    writer->waited_us = g_get_monotonic_time() - started;
    g_assert_true(einsora_store_get_quota(EINSORA_STORE(store), writer->tenant_id, "l40s-48gb",
                                          &writer->gpus_seen, &error));
    g_assert_true(einsora_store_commit(EINSORA_STORE(store), &error));
    g_assert_no_error(error);
    return NULL;
}

static void
test_transactions_take_turns(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *id = einsora_uuid_v7_new(BASE_US / 1000);
    g_autofree gchar *at = einsora_timestamp_format(BASE_US);
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(id, "acme", FALSE, at);
    SecondWriter writer = {.conninfo = f->conninfo, .tenant_id = id};
    EinsoraStore *store = EINSORA_STORE(f->store);
    GThread *thread;

    migrate(f);
    g_assert_true(einsora_store_insert_tenant(store, tenant, &error));
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    thread = g_thread_new("second-writer", second_writer, &writer);
    g_usleep(300 * 1000);
    g_assert_true(einsora_store_set_quota(store, id, "l40s-48gb", 5, &error));
    g_assert_true(einsora_store_commit(store, &error));
    g_assert_no_error(error);
    g_thread_join(thread);
    g_assert_cmpint(writer.waited_us, >=, 250 * 1000);
    g_assert_cmpint(writer.gpus_seen, ==, 5);
}

/* LISTEN/NOTIFY: another process's appends reach the listener after its
 * commit (not before, not after a rollback); the listener's own don't;
 * after a lost listening connection it says NULL, "look again". */
typedef struct {
    GPtrArray *heard;    /* tenant IDs, "" for NULL */
    GPtrArray *machines; /* machine IDs */
} Heard;

static void
on_events_appended(EinsoraPgStore *store, const char *tenant_id, gpointer user_data)
{
    Heard *heard = user_data;

    g_ptr_array_add(heard->heard, g_strdup(tenant_id != NULL ? tenant_id : ""));
}

static void
on_machine_changed(EinsoraPgStore *store, const char *machine_id, gpointer user_data)
{
    Heard *heard = user_data;

    g_ptr_array_add(heard->machines, g_strdup(machine_id));
}

static void
wait_heard(Heard *heard, guint count)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (heard->heard->len < count) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

static void
settle(void)
{
    gint64 until = g_get_monotonic_time() + 300 * 1000;

    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

static EinsoraWorkload *
notebook_for(const char *tenant_id, const char *id, const char *at)
{
    EinsoraWorkload *workload = einsora_workload_new();

    workload->id = g_strdup(id);
    workload->tenant_id = g_strdup(tenant_id);
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    workload->name = g_strdup("nb");
    workload->state = EINSORA_WORKLOAD_STATE_PENDING;
    workload->region = g_strdup("local");
    workload->gpu_class = g_strdup("cpu-2c-4g");
    workload->image = g_strdup("jupyter-notebook");
    workload->created_by = g_strdup("test");
    workload->created_at = g_strdup(at);
    workload->updated_at = g_strdup(at);
    workload->version = 1;
    return workload;
}

static EinsoraWorkloadEvent *
created_event(const EinsoraWorkload *workload, guint n)
{
    EinsoraWorkloadEvent *event = einsora_workload_event_new();

    event->id = einsora_uuid_v7_new(BASE_US / 1000 + n);
    event->tenant_id = g_strdup(workload->tenant_id);
    event->workload_id = g_strdup(workload->id);
    event->to_state = EINSORA_WORKLOAD_STATE_PENDING;
    event->reason = g_strdup("created");
    event->created_at = g_strdup(workload->created_at);
    return event;
}

static void
test_listen(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *tenant_id = einsora_uuid_v7_new(BASE_US / 1000);
    g_autofree gchar *workload_id = einsora_uuid_v7_new(BASE_US / 1000 + 1);
    g_autofree gchar *at = einsora_timestamp_format(BASE_US);
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(tenant_id, "acme", FALSE, at);
    g_autoptr(EinsoraWorkload) workload = notebook_for(tenant_id, workload_id, at);
    g_autoptr(EinsoraPgStore) other = NULL;
    g_autoptr(EinsoraWorkloadEvent) first = created_event(workload, 2);
    g_autoptr(EinsoraWorkloadEvent) rolled_back = created_event(workload, 3);
    g_autoptr(EinsoraWorkloadEvent) in_transaction = created_event(workload, 4);
    g_autoptr(EinsoraWorkloadEvent) own = created_event(workload, 5);
    Heard heard = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new_with_free_func(g_free)};
    EinsoraStore *store = EINSORA_STORE(f->store);
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();
    g_autoptr(EinsoraWorkload) placed = NULL;
    gint64 deadline;

    migrate(f);
    other = einsora_pg_store_open(f->conninfo, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_store_insert_tenant(store, tenant, &error));
    g_assert_true(einsora_store_insert_workload(store, workload, &error));
    g_assert_no_error(error);
    machine->id = einsora_uuid_v7_new(BASE_US / 1000 + 9);
    machine->tenant_id = g_strdup(tenant_id);
    machine->name = g_strdup("ws");
    machine->region = g_strdup("local");
    machine->os = g_strdup("linux");
    machine->cpus = 16;
    machine->memory_mib = 65536;
    machine->created_at = g_strdup(at);
    g_assert_true(einsora_store_insert_machine(store, machine, &error));
    g_assert_no_error(error);
    g_signal_connect(f->store, "events-appended", G_CALLBACK(on_events_appended), &heard);
    g_signal_connect(f->store, "machine-changed", G_CALLBACK(on_machine_changed), &heard);
    g_assert_true(einsora_pg_store_listen(f->store, &error));
    g_assert_no_error(error);

    /* Another process's append, outside a transaction. */
    g_assert_true(einsora_store_append_event(EINSORA_STORE(other), first, &error));
    g_assert_no_error(error);
    wait_heard(&heard, 1);
    g_assert_cmpstr(g_ptr_array_index(heard.heard, 0), ==, tenant_id);

    /* Rolled back: never heard. Committed: heard once, after commit. */
    g_assert_true(einsora_store_begin(EINSORA_STORE(other), &error));
    g_assert_true(einsora_store_append_event(EINSORA_STORE(other), rolled_back, &error));
    g_assert_no_error(error);
    einsora_store_rollback(EINSORA_STORE(other));
    g_assert_true(einsora_store_begin(EINSORA_STORE(other), &error));
    g_assert_true(einsora_store_append_event(EINSORA_STORE(other), in_transaction, &error));
    g_assert_no_error(error);
    settle();
    g_assert_cmpuint(heard.heard->len, ==, 1);
    g_assert_true(einsora_store_commit(EINSORA_STORE(other), &error));
    g_assert_no_error(error);
    wait_heard(&heard, 2);
    g_assert_cmpstr(g_ptr_array_index(heard.heard, 1), ==, tenant_id);

    /* Its own append: not repeated. */
    g_assert_true(einsora_store_append_event(store, own, &error));
    g_assert_no_error(error);
    settle();
    g_assert_cmpuint(heard.heard->len, ==, 2);

    /* Another process places the workload on a machine: that machine's
     * hub, wherever it runs, hears of it. */
    placed = einsora_workload_copy(workload);
    placed->state = EINSORA_WORKLOAD_STATE_PROVISIONING;
    placed->machine_id = g_strdup(machine->id);
    placed->placed_class = g_strdup("cpu-2c-4g");
    placed->driver = g_strdup("sim");
    placed->attempt = 1;
    g_assert_true(einsora_store_update_workload_state(
        EINSORA_STORE(other), placed, EINSORA_WORKLOAD_STATE_PENDING, workload->version, &error));
    g_assert_no_error(error);
    deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (heard.machines->len == 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    g_assert_cmpstr(g_ptr_array_index(heard.machines, 0), ==, machine->id);

    /* The listening connection ended by the server: back within the
     * first retry, saying NULL. */
    admin_exec(f, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE datname = current_database() AND query LIKE 'LISTEN%'");
    wait_heard(&heard, 3);
    g_assert_cmpstr(g_ptr_array_index(heard.heard, 2), ==, "");
    g_ptr_array_unref(heard.heard);
    g_ptr_array_unref(heard.machines);
}

/* Reconnecting the listener never holds the main loop, even with a
 * server that accepts a connection and never answers (its postmaster
 * stopped): a blocking connect would hold it until the server woke or
 * connect_timeout (10 s) passed. */
static void
test_listen_reconnect_never_blocks(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    Heard heard = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new_with_free_func(g_free)};
    GPid postmaster = einsora_test_postgres_get_pid(postgres);
    gint64 longest = 0;
    gboolean connecting;
    gint64 last;
    gint64 until;

    migrate(f);
    g_signal_connect(f->store, "events-appended", G_CALLBACK(on_events_appended), &heard);
    g_assert_true(einsora_pg_store_listen(f->store, &error));
    g_assert_no_error(error);
    admin_exec(f, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE datname = current_database() AND query LIKE 'LISTEN%'");
    g_assert_cmpint(kill(postmaster, SIGSTOP), ==, 0);
    /* The retry starts within about two seconds (1 s, whole seconds). */
    last = g_get_monotonic_time();
    until = last + 4 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < until) {
        gint64 now;

        g_main_context_iteration(NULL, FALSE);
        now = g_get_monotonic_time();
        longest = MAX(longest, now - last);
        last = now;
        g_usleep(1000);
    }
    /* The retry is under way, waiting on the stopped server. */
    connecting = f->store->listener != NULL && f->store->listener_deadline_id != 0;
    g_assert_cmpint(kill(postmaster, SIGCONT), ==, 0);
    g_assert_true(connecting);
    /* Blocking, the loop would stop from the retry (1 to 2 s) to SIGCONT. */
    g_assert_cmpint(longest, <, G_USEC_PER_SEC);
    /* Once the server answers, the listener is back and says "look again". */
    wait_heard(&heard, 1);
    g_assert_cmpstr(g_ptr_array_index(heard.heard, 0), ==, "");
    g_ptr_array_unref(heard.heard);
    g_ptr_array_unref(heard.machines);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    postgres = einsora_test_postgres_start();
    if (postgres == NULL) {
        g_print("1..0 # SKIP PostgreSQL 15 isn't installed (packaging/dev/deps.sh test)\n");
        return 77;
    }
    make_template();
    einsora_store_conformance_add_tests(&pg_harness);
    g_test_add_func("/postgres/open/refuses-empty", test_open_refuses_empty);
    g_test_add_func("/postgres/open/unreachable-hides-password",
                    test_open_unreachable_hides_password);
    g_test_add("/postgres/open/refuses-foreign-database", Fixture, NULL, fixture_set_up,
               test_open_refuses_foreign_database, fixture_tear_down);
    g_test_add("/postgres/migrations/builtin", Fixture, NULL, fixture_set_up,
               test_migrations_builtin, fixture_tear_down);
    g_test_add("/postgres/migrations/newer-database-refused", Fixture, NULL, fixture_set_up,
               test_migrations_newer_refused, fixture_tear_down);
    g_test_add("/postgres/migrations/edited-refused", Fixture, NULL, fixture_set_up,
               test_migrations_edited_refused, fixture_tear_down);
    g_test_add("/postgres/migrations/failure-rolls-back", Fixture, NULL, fixture_set_up,
               test_migrations_failure_rolls_back, fixture_tear_down);
    g_test_add("/postgres/connection/terminated", Fixture, NULL, fixture_set_up,
               test_connection_terminated, fixture_tear_down);
    g_test_add("/postgres/listen", Fixture, NULL, fixture_set_up, test_listen, fixture_tear_down);
    g_test_add("/postgres/listen/reconnect-never-blocks", Fixture, NULL, fixture_set_up,
               test_listen_reconnect_never_blocks, fixture_tear_down);
    g_test_add("/postgres/transactions/take-turns", Fixture, NULL, fixture_set_up,
               test_transactions_take_turns, fixture_tear_down);
    status = g_test_run();
    einsora_test_postgres_stop(postgres);
    return status;
}
