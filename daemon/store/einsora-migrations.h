/* Schema migrations: numbered SQL files (migrations/sqlite/NNNNN_name.sql,
 * and migrations/postgres/ for EinsoraPgStore, see einsora-pg-migrations.h),
 * built into the daemon as a GResource, applied in order, each in its own
 * transaction, and recorded in schema_migrations with a SHA-256 of its text
 * so that an edited migration is refused. The daemon only ever applies the
 * built-in list; an explicit list is for tests. */
#pragma once

#include <gio/gio.h>
#include <sqlite3.h>

G_BEGIN_DECLS

typedef struct {
    gint64 version;
    gchar *name; /* the file name without ".sql", e.g. "00001_initial" */
    gchar *sql;
    gchar *sha256; /* hex SHA-256 of sql */
} EinsoraMigration;

EinsoraMigration *einsora_migration_new(gint64 version, const char *name, const char *sql);
void einsora_migration_free(EinsoraMigration *migration);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraMigration, einsora_migration_free)

/* The migrations built into this binary, sorted by version: SQLite's, or
 * those of @dialect ("sqlite" or "postgres", migrations/<dialect>/). */
GPtrArray *einsora_migrations_load_builtin(GError **error);
GPtrArray *einsora_migrations_load_builtin_dialect(const char *dialect, GError **error);

/* A copy of @migrations sorted by version that does not own them. */
GPtrArray *einsora_migrations_sort(GPtrArray *migrations);
/* Versions must be exactly 1..N, so that every database at version k has
 * run the same k migrations: refuses @sorted otherwise. */
gboolean einsora_migrations_check_sequence(GPtrArray *sorted, GError **error);

/* Applies the migrations of @migrations (EinsoraMigration) that @db has not
 * applied yet. Refuses a list that is not exactly versions 1..N, a database
 * newer than the list, and an applied migration whose text changed. Must
 * not be called inside a transaction. */
gboolean einsora_migrations_apply(sqlite3 *db, GPtrArray *migrations, gint64 now_us,
                                  GError **error);

/* The highest applied version; 0 for a database never migrated. */
gint64 einsora_migrations_get_version(sqlite3 *db, GError **error);

G_END_DECLS
