/* Small SQLite helpers shared by the SQLite store and the migration
 * runner; private to daemon/store. */
#pragma once

#include <gio/gio.h>
#include <sqlite3.h>

G_BEGIN_DECLS

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, sqlite3_finalize)

/* Sets an error from the connection's last error and returns FALSE: for a
 * failing disk (einsora_sqlite_is_storage_failure()) EINSORA_ERROR_UNAVAILABLE,
 * its detail logged; for anything else a G_IO_ERROR with SQLite's text. */
gboolean einsora_sqlite_set_error(sqlite3 *db, GError **error);
/* Full, I/O error, can't open, read-only: the storage, not the statement. */
gboolean einsora_sqlite_is_storage_failure(int code);
/* EINSORA_ERROR_UNAVAILABLE with the message the API shows. */
void einsora_sqlite_set_unavailable(gboolean full, GError **error);
gboolean einsora_sqlite_exec(sqlite3 *db, const char *sql, GError **error);
sqlite3_stmt *einsora_sqlite_prepare(sqlite3 *db, const char *sql, GError **error);
/* Rolls back the open transaction, if SQLite hasn't already. */
void einsora_sqlite_rollback(sqlite3 *db);

G_END_DECLS
