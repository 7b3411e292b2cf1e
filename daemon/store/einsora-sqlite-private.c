#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-private.h"

#include "einsora-error.h"

gboolean
einsora_sqlite_is_storage_failure(int code)
{
    switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
        return TRUE;
    default:
        return FALSE;
    }
}

void
einsora_sqlite_set_unavailable(gboolean full, GError **error)
{
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                        full ? "the server's storage is full; nothing was changed; try again later"
                             : "the server's storage is unavailable; nothing was changed; try "
                               "again later");
}

/* A failing disk isn't the caller's mistake: the API answers 503 with a
 * fixed message, and SQLite's words (and the file) go to the log. */
static gboolean
set_error_from(sqlite3 *db, int code, const char *text, GError **error)
{
    if (einsora_sqlite_is_storage_failure(code)) {
        const char *file = sqlite3_db_filename(db, "main");
        g_message("storage failed: %s: sqlite: %s", file != NULL && *file != '\0' ? file : "-",
                  text);
        einsora_sqlite_set_unavailable((code & 0xff) == SQLITE_FULL, error);
        return FALSE;
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "sqlite: %s", text);
    return FALSE;
}

gboolean
einsora_sqlite_set_error(sqlite3 *db, GError **error)
{
    return set_error_from(db, sqlite3_extended_errcode(db), sqlite3_errmsg(db), error);
}

gboolean
einsora_sqlite_exec(sqlite3 *db, const char *sql, GError **error)
{
    char *message = NULL;
    int code = sqlite3_exec(db, sql, NULL, NULL, &message);

    if (code != SQLITE_OK) {
        set_error_from(db, code, message != NULL ? message : sqlite3_errstr(code), error);
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
