#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-private.h"

gboolean
einsora_sqlite_set_error(sqlite3 *db, GError **error)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "sqlite: %s", sqlite3_errmsg(db));
    return FALSE;
}

gboolean
einsora_sqlite_exec(sqlite3 *db, const char *sql, GError **error)
{
    char *message = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "sqlite: %s",
                    message != NULL ? message : sqlite3_errstr(sqlite3_extended_errcode(db)));
        sqlite3_free(message);
        return FALSE;
    }
    return TRUE;
}

sqlite3_stmt *
einsora_sqlite_prepare(sqlite3 *db, const char *sql, GError **error)
{
    sqlite3_stmt *stmt = NULL;

    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        sqlite3_finalize(stmt);
        einsora_sqlite_set_error(db, error);
        return NULL;
    }
    return stmt;
}

void
einsora_sqlite_rollback(sqlite3 *db)
{
    /* ROLLBACK fails harmlessly when SQLite already ended the transaction. */
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}
