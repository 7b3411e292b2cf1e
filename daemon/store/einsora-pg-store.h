/* The PostgreSQL store (Labs that outgrow one SQLite file; docs/adr/0061):
 * one libpq connection per object, one transaction at a time. begin takes
 * a store-wide advisory lock, so transactions serialize across every
 * process sharing the database as SQLite's BEGIN IMMEDIATE serializes
 * them across processes sharing a file. A lost connection is
 * EINSORA_ERROR_UNAVAILABLE; the next call outside a transaction
 * reconnects. The connection string is never logged: it may hold a
 * password. */
#pragma once

#include <glib-object.h>
#include <libpq-fe.h>

#include "einsora-metrics.h"
#include "einsora-store.h"
#include "einsora-timestamp.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_PG_STORE (einsora_pg_store_get_type())
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PGresult, PQclear)

G_DECLARE_FINAL_TYPE(EinsoraPgStore, einsora_pg_store, EINSORA, PG_STORE, GObject)

/* Connects with @conninfo (a postgresql:// URI or key=value pairs).
 * Refuses, before writing anything, a database that holds tables but no
 * schema_migrations (another program's). Does not migrate. */
EinsoraPgStore *einsora_pg_store_open(const char *conninfo, GError **error);

/* Applies the migrations built into this binary (migrations/postgres/). */
gboolean einsora_pg_store_migrate(EinsoraPgStore *self, gint64 now_us, GError **error);
/* Applies @migrations (EinsoraMigration) instead: for tests. */
gboolean einsora_pg_store_migrate_with(EinsoraPgStore *self, GPtrArray *migrations, gint64 now_us,
                                       GError **error);

/* The clock that stamps rows the interface gives no time for
 * (quotas.updated_at). Defaults to the real clock. */
void einsora_pg_store_set_clock(EinsoraPgStore *self, EinsoraNowFunc now, gpointer now_data);

/* As einsora_sqlite_store_set_metrics(). */
void einsora_pg_store_set_metrics(EinsoraPgStore *self, EinsoraMetrics *metrics);

/* Listens, on a second connection watched from the thread-default main
 * context, for events other processes append (LISTEN/NOTIFY, not
 * polling), and emits EinsoraPgStore::events-appended with the tenant's
 * ID after each of their commits, and ::machine-changed with a machine's
 * ID when they moved a workload onto or off it; this store's own aren't
 * repeated. A lost connection is made again (1 s, doubling to 30 s), and
 * then the signal says NULL: anything may have been missed. */
gboolean einsora_pg_store_listen(EinsoraPgStore *self, GError **error);

/* The connection, for tests. */
PGconn *einsora_pg_store_get_connection(EinsoraPgStore *self);

G_END_DECLS
