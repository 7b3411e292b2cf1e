/* The Postgres store: the conformance suite every store passes, on a real
 * PostgreSQL 15 this binary starts, and what only Postgres has (the
 * connection string, a database that isn't Einsora's, migrations, a
 * connection the server ends). */
#define G_LOG_DOMAIN "einsora-store"

#include <gio/gio.h>
#include <libpq-fe.h>

#include "einsora-error.h"
#include "einsora-migrations.h"
#include "einsora-pg-store.h"
#include "einsora-store-conformance.h"
#include "einsora-test-postgres.h"
#include "einsora-timestamp.h"

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
    status = g_test_run();
    einsora_test_postgres_stop(postgres);
    return status;
}
