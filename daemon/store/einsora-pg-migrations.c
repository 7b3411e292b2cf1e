#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-migrations.h"

#include "einsora-error.h"
#include "einsora-migrations.h"
#include "einsora-pg-store-private.h"
#include "einsora-timestamp.h"

static gboolean
set_error(PGconn *conn, const PGresult *res, GError **error)
{
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

    if (PQstatus(conn) != CONNECTION_OK) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                            "the connection to PostgreSQL was lost");
        return FALSE;
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "postgres: %s",
                primary != NULL ? primary : PQerrorMessage(conn));
    return FALSE;
}

/* A statement, or several without parameters (a migration's text). */
static gboolean
exec_sql(PGconn *conn, const char *sql, GError **error)
{
    g_autoptr(PGresult) res = PQexec(conn, sql);

    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
        return set_error(conn, res, error);
    return TRUE;
}

static void
rollback(PGconn *conn)
{
    if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
        g_autoptr(PGresult) res = PQexec(conn, "ROLLBACK");
        (void)res;
    }
}

gint64
einsora_pg_migrations_get_version(PGconn *conn, GError **error)
{
    g_autoptr(PGresult) exists = NULL;
    g_autoptr(PGresult) res = NULL;

    g_return_val_if_fail(conn != NULL, -1);

    exists = PQexec(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL");
    if (PQresultStatus(exists) != PGRES_TUPLES_OK) {
        set_error(conn, exists, error);
        return -1;
    }
    if (g_strcmp0(PQgetvalue(exists, 0, 0), "t") != 0)
        return 0;
    res = PQexec(conn, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        set_error(conn, res, error);
        return -1;
    }
    return g_ascii_strtoll(PQgetvalue(res, 0, 0), NULL, 10);
}

/* Inside the locked transaction: the applied rows must be 1..k with
 * k <= N, each with the text it has now. Returns k, or -1. */
static gint64
check_applied(PGconn *conn, GPtrArray *sorted, GError **error)
{
    g_autoptr(PGresult) res =
        PQexec(conn, "SELECT version, sha256 FROM schema_migrations ORDER BY version");
    int rows;

    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        set_error(conn, res, error);
        return -1;
    }
    rows = PQntuples(res);
    for (int i = 0; i < rows; i++) {
        gint64 version = pg_column_int64(res, i, 0);
        const EinsoraMigration *migration;

        if (version > (gint64)sorted->len) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                        "database schema version %" G_GINT64_FORMAT " is newer than this "
                        "einsora-daemon supports (%u): use a newer einsora-daemon",
                        pg_column_int64(res, rows - 1, 0), sorted->len);
            return -1;
        }
        if (version != i + 1) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "schema_migrations is inconsistent: version %d is missing", i + 1);
            return -1;
        }
        migration = g_ptr_array_index(sorted, i);
        if (g_strcmp0(pg_column_text(res, i, 1), migration->sha256) != 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "migration %s was changed after it was applied", migration->name);
            return -1;
        }
    }
    return rows;
}

/* One transaction: the lock, the check, and the next migration if one is
 * due. *applied_one says whether it applied one. */
static gboolean
apply_next(PGconn *conn, GPtrArray *sorted, const char *applied_at, gboolean *applied_one,
           GError **error)
{
    const EinsoraMigration *migration;
    gint64 applied;
    g_autofree gchar *version = NULL;
    const char *params[4];
    g_autoptr(PGresult) res = NULL;

    *applied_one = FALSE;
    if (!exec_sql(conn, "BEGIN", error))
        return FALSE;
    /* Created in the same transaction, so a refused database is left as it
     * was. */
    if (!exec_sql(conn,
                  "SELECT pg_advisory_xact_lock(" EINSORA_PG_STORE_LOCK "); "
                  "CREATE TABLE IF NOT EXISTS schema_migrations ("
                  "version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL, "
                  "sha256 TEXT NOT NULL, applied_at TEXT NOT NULL)",
                  error))
        goto failed;
    applied = check_applied(conn, sorted, error);
    if (applied < 0)
        goto failed;
    if (applied == (gint64)sorted->len)
        return exec_sql(conn, "COMMIT", error);

    migration = g_ptr_array_index(sorted, applied);
    if (!exec_sql(conn, migration->sql, error)) {
        g_prefix_error(error, "migration %s: ", migration->name);
        goto failed;
    }
    if (PQtransactionStatus(conn) != PQTRANS_INTRANS) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "migration %s: it ended the transaction itself; a migration must not "
                    "contain BEGIN, COMMIT or ROLLBACK",
                    migration->name);
        goto failed;
    }
    version = g_strdup_printf("%" G_GINT64_FORMAT, migration->version);
    params[0] = version;
    params[1] = migration->name;
    params[2] = migration->sha256;
    params[3] = applied_at;
    res = PQexecParams(conn,
                       "INSERT INTO schema_migrations (version, name, sha256, applied_at) "
                       "VALUES ($1, $2, $3, $4)",
                       4, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        set_error(conn, res, error);
        goto failed;
    }
    if (!exec_sql(conn, "COMMIT", error))
        goto failed;
    g_debug("applied migration %s", migration->name);
    *applied_one = TRUE;
    return TRUE;

failed:
    rollback(conn);
    return FALSE;
}

gboolean
einsora_pg_migrations_apply(PGconn *conn, GPtrArray *migrations, gint64 now_us, GError **error)
{
    g_autoptr(GPtrArray) sorted = NULL;
    g_autofree gchar *applied_at = einsora_timestamp_format(now_us);
    gboolean applied_one = TRUE;

    g_return_val_if_fail(conn != NULL, FALSE);
    g_return_val_if_fail(migrations != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (PQtransactionStatus(conn) != PQTRANS_IDLE) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "migrations cannot run inside a transaction");
        return FALSE;
    }
    sorted = einsora_migrations_sort(migrations);
    if (!einsora_migrations_check_sequence(sorted, error))
        return FALSE;
    while (applied_one) {
        if (!apply_next(conn, sorted, applied_at, &applied_one, error))
            return FALSE;
    }
    return TRUE;
}
