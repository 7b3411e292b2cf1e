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

G_END_DECLS
