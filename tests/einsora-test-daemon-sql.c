#include "einsora-test-daemon-sql.h"

#include <sqlite3.h>

#define PSQL "/usr/lib/postgresql/15/bin/psql"

const char *
einsora_test_daemon_database_url(EinsoraTestDaemon *daemon)
{
    return g_hash_table_lookup(daemon->env, "EINSORA_DATABASE_URL");
}

/* The SQL on standard input: a long INSERT is over the argument limit. */
static gchar *
run_psql(const char *database_url, const char *sql)
{
    g_autoptr(GSubprocess) psql = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GError) error = NULL;

    psql = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                G_SUBPROCESS_FLAGS_STDERR_PIPE,
                            &error, PSQL, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d",
                            database_url, "-f", "-", NULL);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(psql, sql, NULL, &out, &err, &error));
    g_assert_no_error(error);
    if (g_subprocess_get_exit_status(psql) != 0)
        g_error("%.200s: %s", sql, err);
    return g_steal_pointer(&out);
}

static sqlite3 *
open_sqlite(const char *data_dir)
{
    g_autofree gchar *db = g_build_filename(data_dir, "einsora.db", NULL);
    sqlite3 *handle = NULL;

    g_assert_cmpint(sqlite3_open(db, &handle), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    return handle;
}

void
einsora_test_store_exec_sql(const char *data_dir, const char *database_url, const char *sql)
{
    sqlite3 *handle;

    if (database_url != NULL) {
        g_free(run_psql(database_url, sql));
        return;
    }
    handle = open_sqlite(data_dir);
    if (sqlite3_exec(handle, sql, NULL, NULL, NULL) != SQLITE_OK)
        g_error("%s: %s", sql, sqlite3_errmsg(handle));
    sqlite3_close(handle);
}

void
einsora_test_daemon_exec_sql(EinsoraTestDaemon *daemon, const char *sql)
{
    einsora_test_store_exec_sql(daemon->data_dir, einsora_test_daemon_database_url(daemon), sql);
}

GStrv
einsora_test_daemon_query_sql(EinsoraTestDaemon *daemon, const char *sql)
{
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    sqlite3_stmt *stmt = NULL;
    sqlite3 *handle;

    if (einsora_test_daemon_database_url(daemon) != NULL) {
        g_autofree gchar *out = run_psql(einsora_test_daemon_database_url(daemon), sql);
        g_auto(GStrv) lines = g_strsplit(out, "\n", -1);

        for (guint i = 0; lines[i] != NULL; i++) {
            if (lines[i][0] != '\0')
                g_strv_builder_add(builder, lines[i]);
        }
        return g_strv_builder_end(builder);
    }
    handle = open_sqlite(daemon->data_dir);
    g_assert_cmpint(sqlite3_prepare_v2(handle, sql, -1, &stmt, NULL), ==, SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW)
        g_strv_builder_add(builder, (const char *)sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(handle);
    return g_strv_builder_end(builder);
}
