#include "einsora-test-daemon-sql.h"

#include <sqlite3.h>
#include <string.h>

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

/* psql's rows, tab between columns and a zero byte after each row, so
 * that a newline in a value stays in its row. */
static GStrv
psql_rows(const char *database_url, const char *sql)
{
    g_autoptr(GSubprocess) psql = NULL;
    g_autoptr(GBytes) in = g_bytes_new(sql, strlen(sql));
    g_autoptr(GBytes) out = NULL;
    g_autoptr(GBytes) err = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    const char *data;
    gsize size, at = 0;

    psql = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                G_SUBPROCESS_FLAGS_STDERR_PIPE,
                            &error, PSQL, "-X", "-q", "-A", "-t", "-F", "\t", "-0", "-v",
                            "ON_ERROR_STOP=1", "-d", database_url, "-f", "-", NULL);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate(psql, in, NULL, &out, &err, &error));
    g_assert_no_error(error);
    if (g_subprocess_get_exit_status(psql) != 0)
        g_error("%.200s: %.*s", sql, (int)g_bytes_get_size(err),
                (const char *)g_bytes_get_data(err, NULL));
    data = g_bytes_get_data(out, &size);
    while (at < size) {
        const char *end = memchr(data + at, '\0', size - at);

        g_assert_nonnull(end);
        g_autofree gchar *row = g_strndup(data + at, (gsize)(end - (data + at)));

        g_strv_builder_add(builder, row);
        at = (gsize)(end - data) + 1;
    }
    return g_strv_builder_end(builder);
}

GStrv
einsora_test_daemon_query_rows(EinsoraTestDaemon *daemon, const char *sql)
{
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_autofree gchar *db = NULL;
    sqlite3_stmt *stmt = NULL;
    sqlite3 *handle = NULL;
    int step;

    if (einsora_test_daemon_database_url(daemon) != NULL)
        return psql_rows(einsora_test_daemon_database_url(daemon), sql);
    db = g_build_filename(daemon->data_dir, "einsora.db", NULL);
    g_assert_cmpint(sqlite3_open_v2(db, &handle, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    if (sqlite3_prepare_v2(handle, sql, -1, &stmt, NULL) != SQLITE_OK)
        g_error("%.200s: %s", sql, sqlite3_errmsg(handle));
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
        g_autoptr(GString) row = g_string_new(NULL);

        for (int i = 0; i < sqlite3_column_count(stmt); i++) {
            const char *text = (const char *)sqlite3_column_text(stmt, i);

            if (i > 0)
                g_string_append_c(row, '\t');
            g_string_append(row, text != NULL ? text : "");
        }
        g_strv_builder_add(builder, row->str);
    }
    if (step != SQLITE_DONE)
        g_error("%.200s: %s", sql, sqlite3_errmsg(handle));
    sqlite3_finalize(stmt);
    sqlite3_close(handle);
    return g_strv_builder_end(builder);
}

GStrv
einsora_test_row_fields(const char *row, guint n_fields)
{
    GStrv fields = g_strsplit(row, "\t", -1);

    if (g_strv_length(fields) != n_fields)
        g_error("a row of %u columns, not %u: %s", g_strv_length(fields), n_fields, row);
    return fields;
}
