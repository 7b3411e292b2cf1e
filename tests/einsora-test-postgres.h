/* A private PostgreSQL 15 for a test binary: initdb into a temporary
 * directory (as the postgres user when run as root: initdb refuses root),
 * a server on a Unix socket only, stopped and removed at the end; each
 * test makes databases of its own in it. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EinsoraTestPostgres EinsoraTestPostgres;

/* NULL (a test binary exits 77, skipped) when PostgreSQL isn't installed;
 * a failure to start it is fatal. */
EinsoraTestPostgres *einsora_test_postgres_start(void);
void einsora_test_postgres_stop(EinsoraTestPostgres *pg);
/* The server down (a fast shutdown: sessions ended) and up again, on the
 * same data. */
void einsora_test_postgres_pause(EinsoraTestPostgres *pg);
void einsora_test_postgres_resume(EinsoraTestPostgres *pg);
/* Restarts the server with fsync on (tests run without), for a bench to
 * compare durable commits with SQLite's. */
void einsora_test_postgres_set_durable(EinsoraTestPostgres *pg);

/* A connection string for @database ("postgres" for the server's own). */
gchar *einsora_test_postgres_conninfo(EinsoraTestPostgres *pg, const char *database);

/* Runs @sql as the server's superuser on its "postgres" database. */
void einsora_test_postgres_exec(EinsoraTestPostgres *pg, const char *sql);

/* A new database, its name returned: empty, or a copy of @template_name. */
gchar *einsora_test_postgres_create_database(EinsoraTestPostgres *pg, const char *template_name);
void einsora_test_postgres_drop_database(EinsoraTestPostgres *pg, const char *database);

/* Where the server's files and socket are; its postmaster's PID. */
const char *einsora_test_postgres_get_socket_dir(EinsoraTestPostgres *pg);
GPid einsora_test_postgres_get_pid(EinsoraTestPostgres *pg);

G_END_DECLS
