/* SQL straight into a test daemon's store, whichever it is: the data
 * directory's SQLite file, or its Postgres database (EINSORA_TEST_STORE=
 * postgres). For what the API can't do: a schema from the future, a table
 * gone, a row only the store shows. The SQL must read the same in both
 * dialects. */
#pragma once

#include "einsora-test-daemon.h"

G_BEGIN_DECLS

/* The store of a daemon whose data directory is @data_dir: its SQLite
 * file, or @database_url's database when that isn't NULL. */
void einsora_test_store_exec_sql(const char *data_dir, const char *database_url, const char *sql);
/* The test daemon's EINSORA_DATABASE_URL; NULL on SQLite. */
const char *einsora_test_daemon_database_url(EinsoraTestDaemon *daemon);
void einsora_test_daemon_exec_sql(EinsoraTestDaemon *daemon, const char *sql);
/* The first column of every row. */
GStrv einsora_test_daemon_query_sql(EinsoraTestDaemon *daemon, const char *sql);
/* Every row, its columns joined by tabs (split it with
 * einsora_test_row_fields); NULL reads as "", as psql prints it. SQLite's
 * file is opened read-only: a -wal file a kill left is the daemon's to
 * recover at its next start, not the test's. */
GStrv einsora_test_daemon_query_rows(EinsoraTestDaemon *daemon, const char *sql);
/* @row's @n_fields columns; fatal when it has another number of them (a
 * value with a tab in it, say). */
GStrv einsora_test_row_fields(const char *row, guint n_fields);

G_END_DECLS
