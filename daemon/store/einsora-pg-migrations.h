/* Schema migrations for EinsoraPgStore (migrations/postgres/), applied as
 * SQLite's are (einsora-migrations.h): in order, each in its own
 * transaction, recorded in schema_migrations with a SHA-256 of its text;
 * an edited migration or a newer database is refused. Daemons starting
 * together take turns: each migration holds the store's advisory lock. */
#pragma once

#include <gio/gio.h>
#include <libpq-fe.h>

G_BEGIN_DECLS

/* Applies the migrations of @migrations (EinsoraMigration) that @conn's
 * database has not applied yet. Must not be called inside a transaction. */
gboolean einsora_pg_migrations_apply(PGconn *conn, GPtrArray *migrations, gint64 now_us,
                                     GError **error);

/* The highest applied version; 0 for a database never migrated; -1 with
 * an error. */
gint64 einsora_pg_migrations_get_version(PGconn *conn, GError **error);

G_END_DECLS
