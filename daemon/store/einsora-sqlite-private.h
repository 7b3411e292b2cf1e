/* Small SQLite helpers shared by the SQLite store and the migration
 * runner; private to daemon/store. */
#pragma once

#include <gio/gio.h>
#include <sqlite3.h>

G_BEGIN_DECLS

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, sqlite3_finalize)

/* Sets a G_IO_ERROR from the connection's last error; returns FALSE. */
gboolean einsora_sqlite_set_error(sqlite3 *db, GError **error);
gboolean einsora_sqlite_exec(sqlite3 *db, const char *sql, GError **error);
sqlite3_stmt *einsora_sqlite_prepare(sqlite3 *db, const char *sql, GError **error);
/* Rolls back the open transaction, if SQLite hasn't already. */
void einsora_sqlite_rollback(sqlite3 *db);

G_END_DECLS
