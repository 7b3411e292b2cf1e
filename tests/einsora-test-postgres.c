#include "einsora-test-postgres.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "einsora-test-dir.h"

#define PG_BIN "/usr/lib/postgresql/15/bin"

struct _EinsoraTestPostgres {
    gchar *root;
    gchar *data;
    gchar *socket_dir;
    GSubprocess *server;
    gboolean durable; /* fsync on: for benches, not tests */
    guint databases;
};

/* initdb and postgres refuse root: run them as the postgres user. */
static void
as_postgres_user(gpointer data)
{
    struct passwd *pw = data;

    if (pw != NULL && (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0))
        _exit(126);
    /* After setuid, which clears it: a test that aborts takes its server
     * down too (SIGINT: the fast shutdown). */
    prctl(PR_SET_PDEATHSIG, SIGINT);
}

static void
run_as_postgres(EinsoraTestPostgres *pg, const char *const *argv)
{
    struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GError) error = NULL;
    int status = 0;

    g_spawn_sync(pg->root, (gchar **)argv, NULL, G_SPAWN_DEFAULT, as_postgres_user, pw, &out, &err,
                 &status, &error);
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("%s failed: %s%s", argv[0], out, err);
}

static void
hand_to_postgres(const char *path)
{
    struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;

    if (pw != NULL)
        g_assert_cmpint(chown(path, pw->pw_uid, pw->pw_gid), ==, 0);
}

/* The server on its data directory, answering once it is ready. */
static void
spawn_server(EinsoraTestPostgres *pg)
{
    g_autofree gchar *postgres = g_build_filename(PG_BIN, "postgres", NULL);
    g_autofree gchar *pg_isready = g_build_filename(PG_BIN, "pg_isready", NULL);
    g_autoptr(GSubprocessLauncher) launcher = NULL;
    g_autoptr(GError) error = NULL;
    gint64 deadline;

    launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                         G_SUBPROCESS_FLAGS_STDERR_SILENCE);
    g_subprocess_launcher_set_child_setup(launcher, as_postgres_user,
                                          geteuid() == 0 ? getpwnam("postgres") : NULL, NULL);
    pg->server = g_subprocess_launcher_spawn(launcher, &error, postgres, "-D", pg->data, "-k",
                                             pg->socket_dir, "-c", "listen_addresses=", "-c",
                                             pg->durable ? "fsync=on" : "fsync=off", "-c",
                                             "max_connections=200", NULL);
    g_assert_no_error(error);

    deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    for (;;) {
        int status = 1;

        g_spawn_sync(NULL, (gchar *[]){pg_isready, "-q", "-h", pg->socket_dir, NULL}, NULL,
                     G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL,
                     NULL, &status, NULL);
        if (g_spawn_check_wait_status(status, NULL))
            break;
        if (g_get_monotonic_time() > deadline)
            g_error("PostgreSQL didn't start in %s", pg->root);
        g_usleep(20000);
    }
}

EinsoraTestPostgres *
einsora_test_postgres_start(void)
{
    EinsoraTestPostgres *pg;
    g_autofree gchar *initdb = g_build_filename(PG_BIN, "initdb", NULL);

    if (!g_file_test(initdb, G_FILE_TEST_IS_EXECUTABLE))
        return NULL;
    if (geteuid() == 0 && getpwnam("postgres") == NULL)
        return NULL;

    pg = g_new0(EinsoraTestPostgres, 1);
    pg->root = einsora_test_dir_new();
    pg->data = g_build_filename(pg->root, "data", NULL);
    pg->socket_dir = g_build_filename(pg->root, "run", NULL);
    g_assert_cmpint(g_mkdir(pg->socket_dir, 0700), ==, 0);
    hand_to_postgres(pg->root);
    hand_to_postgres(pg->socket_dir);
    run_as_postgres(pg, (const char *const[]){initdb, "-D", pg->data, "--no-sync", "-A", "trust",
                                              "-U", "einsora", "-E", "UTF8", "--locale=C", NULL});

    spawn_server(pg);
    return pg;
}

void
einsora_test_postgres_pause(EinsoraTestPostgres *pg)
{
    if (pg->server == NULL)
        return;
    /* SIGINT: the fast shutdown, which ends the sessions still open. */
    g_subprocess_send_signal(pg->server, SIGINT);
    g_subprocess_wait(pg->server, NULL, NULL);
    g_clear_object(&pg->server);
}

void
einsora_test_postgres_resume(EinsoraTestPostgres *pg)
{
    g_assert_null(pg->server);
    spawn_server(pg);
}

void
einsora_test_postgres_set_durable(EinsoraTestPostgres *pg)
{
    pg->durable = TRUE;
    einsora_test_postgres_pause(pg);
    einsora_test_postgres_resume(pg);
}

void
einsora_test_postgres_stop(EinsoraTestPostgres *pg)
{
    if (pg == NULL)
        return;
    einsora_test_postgres_pause(pg);
    einsora_test_dir_remove(pg->root);
    g_free(pg->root);
    g_free(pg->data);
    g_free(pg->socket_dir);
    g_free(pg);
}

gchar *
einsora_test_postgres_conninfo(EinsoraTestPostgres *pg, const char *database)
{
    return g_strdup_printf("host=%s user=einsora dbname=%s", pg->socket_dir, database);
}

/* psql, so that tests of the daemon need no libpq of their own. */
void
einsora_test_postgres_exec(EinsoraTestPostgres *pg, const char *sql)
{
    g_autofree gchar *psql = g_build_filename(PG_BIN, "psql", NULL);
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GError) error = NULL;
    int status = 0;

    g_spawn_sync(NULL,
                 (gchar *[]){psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg->socket_dir, "-U",
                             "einsora", "-d", "postgres", "-c", (gchar *)sql, NULL},
                 NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error);
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("%s: %s", sql, err);
}

gchar *
einsora_test_postgres_create_database(EinsoraTestPostgres *pg, const char *template_name)
{
    gchar *name = g_strdup_printf("einsora_test_%u", ++pg->databases);
    g_autofree gchar *sql =
        g_strdup_printf("CREATE DATABASE %s%s%s", name, template_name != NULL ? " TEMPLATE " : "",
                        template_name != NULL ? template_name : "");

    einsora_test_postgres_exec(pg, sql);
    return name;
}

void
einsora_test_postgres_drop_database(EinsoraTestPostgres *pg, const char *database)
{
    g_autofree gchar *sql = g_strdup_printf("DROP DATABASE %s WITH (FORCE)", database);

    einsora_test_postgres_exec(pg, sql);
}

const char *
einsora_test_postgres_get_socket_dir(EinsoraTestPostgres *pg)
{
    return pg->socket_dir;
}

GPid
einsora_test_postgres_get_pid(EinsoraTestPostgres *pg)
{
    const char *id = g_subprocess_get_identifier(pg->server);

    return id != NULL ? (GPid)g_ascii_strtoll(id, NULL, 10) : 0;
}
