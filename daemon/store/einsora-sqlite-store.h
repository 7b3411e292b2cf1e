/* The SQLite store (Solo and Lab): one private file, one connection per
 * object, one transaction at a time (BEGIN IMMEDIATE), WAL, busy timeout
 * 15 s. The file and its -wal, -shm and -journal files must be 0600
 * regular files owned by this user, in a directory others cannot write. */
#pragma once

#include <glib-object.h>
#include <sqlite3.h>

#include "einsora-metrics.h"
#include "einsora-migrations.h"
#include "einsora-store.h"
#include "einsora-timestamp.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_SQLITE_STORE (einsora_sqlite_store_get_type())
G_DECLARE_FINAL_TYPE(EinsoraSqliteStore, einsora_sqlite_store, EINSORA, SQLITE_STORE, GObject)

/* Refuses (G_IO_ERROR, naming the path) a path it cannot keep private:
 * empty, ":memory:", "file:" URIs, a directory that others can write, and
 * files that are not 0600 regular files of this user. Refuses, before
 * writing anything to it, a file that is not a database, is corrupt
 * (quick_check), or is another program's (tables, no schema_migrations).
 * Creates a missing database file. Does not migrate. */
EinsoraSqliteStore *einsora_sqlite_store_open(const char *path, GError **error);

/* Applies the migrations built into this binary. */
gboolean einsora_sqlite_store_migrate(EinsoraSqliteStore *self, gint64 now_us, GError **error);
/* Applies @migrations (EinsoraMigration) instead: for tests. */
gboolean einsora_sqlite_store_migrate_with(EinsoraSqliteStore *self, GPtrArray *migrations,
                                           gint64 now_us, GError **error);

/* The clock that stamps rows the interface gives no time for
 * (quotas.updated_at). Defaults to the real clock. */
void einsora_sqlite_store_set_clock(EinsoraSqliteStore *self, EinsoraNowFunc now,
                                    gpointer now_data);

/* Counts each transaction's time in
 * einsora_store_transaction_duration_seconds, by outcome (commit or
 * rollback; docs/adr/0043-metrics.md). Writes outside a transaction
 * aren't counted. */
void einsora_sqlite_store_set_metrics(EinsoraSqliteStore *self, EinsoraMetrics *metrics);

/* The absolute path of the database file. */
const char *einsora_sqlite_store_get_path(EinsoraSqliteStore *self);

/* The connection, for tests. */
sqlite3 *einsora_sqlite_store_get_handle(EinsoraSqliteStore *self);

G_END_DECLS
