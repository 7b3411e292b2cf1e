/* Faults (issue 8), with the real daemon: what it refuses at start, a
 * database on a filesystem that fills up, and the store going away while
 * workloads run (docs/adr/0022-start-up-refusals.md). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-test-seccomp.h"

#define JSON "application/json"
/* A refusal comes before anything starts: well under this. */
#define REFUSAL_MAX_US (10 * G_USEC_PER_SEC)
#define STORAGE_FULL "the server's storage is full; nothing was changed; try again later"

/* Start-up refusals */

typedef struct {
    gchar *dir;
    gchar *data_dir;
    gchar *db;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->data_dir = g_build_filename(f->dir, "data", NULL);
    f->db = g_build_filename(f->data_dir, "einsora.db", NULL);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
    g_free(f->data_dir);
    g_free(f->db);
}

/* Runs einsora-daemon (no subcommand: the daemon itself) and expects it to
 * refuse: exit 1, promptly, with one line on stderr that says @expected
 * (each of them). @child_setup, when not NULL, runs in the daemon's
 * process before it executes. */
static void
assert_refused_with(Fixture *f, const char *const *env, const char *const *args,
                    const char *const *expected, GSpawnChildSetupFunc child_setup)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autofree gchar *run_dir = g_build_filename(f->dir, "run", NULL);
    gint64 started = g_get_monotonic_time();
    const char *newline;

    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    g_subprocess_launcher_unsetenv(launcher, "G_MESSAGES_DEBUG");
    /* strerror's words, in English. */
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_DRIVERS", "", TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_ACCESS_ADDR", "127.0.0.1:0", TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_AGENT_RUN_DIR", run_dir, TRUE);
    for (guint i = 0; env != NULL && env[i] != NULL; i += 2)
        g_subprocess_launcher_setenv(launcher, env[i], env[i + 1], TRUE);
    if (child_setup != NULL)
        g_subprocess_launcher_set_child_setup(launcher, child_setup, NULL, NULL);
    g_ptr_array_add(argv, g_strdup(einsora_test_daemon_path()));
    g_ptr_array_add(argv, g_strdup("--data-dir"));
    g_ptr_array_add(argv, g_strdup(f->data_dir));
    g_ptr_array_add(argv, g_strdup("--listen"));
    g_ptr_array_add(argv, g_strdup("127.0.0.1:0"));
    for (guint i = 0; args != NULL && args[i] != NULL; i++)
        g_ptr_array_add(argv, g_strdup(args[i]));
    g_ptr_array_add(argv, NULL);
    process = g_subprocess_launcher_spawnv(launcher, (const char *const *)argv->pdata, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &out, &err, &error));
    g_assert_no_error(error);
    g_test_message("stderr: %s", err);
    g_assert_cmpint(g_get_monotonic_time() - started, <, REFUSAL_MAX_US);
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 1);
    /* One line, and it names the problem. */
    g_assert_true(g_str_has_prefix(err, "einsora-daemon: "));
    newline = strchr(err, '\n');
    g_assert_nonnull(newline);
    g_assert_cmpstr(newline, ==, "\n");
    for (guint i = 0; expected[i] != NULL; i++) {
        if (strstr(err, expected[i]) == NULL)
            g_error("\"%s\" is not in: %s", expected[i], err);
    }
}

static void
assert_refused(Fixture *f, const char *const *env, const char *const *args,
               const char *const *expected)
{
    assert_refused_with(f, env, args, expected, NULL);
}

static gchar *
file_sha256(const char *path)
{
    g_autofree gchar *contents = NULL;
    gsize length = 0;

    g_assert_true(g_file_get_contents(path, &contents, &length, NULL));
    return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)contents, length);
}

static void
make_private_dir(const char *path)
{
    g_assert_cmpint(g_mkdir(path, 0700), ==, 0);
}

static void
write_private_file(const char *path, const char *contents, gssize length)
{
    g_assert_true(g_file_set_contents(path, contents, length, NULL));
    g_assert_cmpint(chmod(path, 0600), ==, 0);
}

static void
exec_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;

    g_assert_cmpint(sqlite3_open(path, &db), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
    /* The last connection checkpoints the WAL, so the file alone holds
     * everything and its bytes can be compared. */
    g_assert_cmpint(sqlite3_close(db), ==, SQLITE_OK);
    g_assert_cmpint(chmod(path, 0600), ==, 0);
}

/* Nothing beside the file, and the file as it was. */
static void
assert_untouched(Fixture *f, const char *sha256_before)
{
    g_autofree gchar *after = file_sha256(f->db);
    const char *const suffixes[] = {"-wal", "-shm", "-journal"};

    g_assert_cmpstr(after, ==, sha256_before);
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *companion = g_strconcat(f->db, suffixes[i], NULL);
        g_assert_false(g_file_test(companion, G_FILE_TEST_EXISTS));
    }
}

static void
migrate(Fixture *f)
{
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) process =
        g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error,
                         einsora_test_daemon_path(), "--data-dir", f->data_dir, "migrate", NULL);

    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &out, &err, &error));
    g_assert_no_error(error);
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
}

static void
test_refuses_not_a_database(Fixture *f, gconstpointer data)
{
    g_autofree gchar *garbage = g_malloc(16384);
    g_autofree gchar *before = NULL;

    for (guint i = 0; i < 16384; i++)
        garbage[i] = (gchar)g_test_rand_int_range(0, 256);
    make_private_dir(f->data_dir);
    write_private_file(f->db, garbage, 16384);
    before = file_sha256(f->db);
    assert_refused(f, NULL, NULL,
                   (const char *const[]){"EINSORA_DATA_DIR", f->db, "is not a database",
                                         "restore it from a backup", NULL});
    assert_untouched(f, before);
}

/* A real database whose pages were overwritten: found at start by
 * SQLite's quick_check, not by some later request. */
static void
test_refuses_corrupt_database(Fixture *f, gconstpointer data)
{
    g_autofree gchar *before = NULL;
    int fd;

    migrate(f);
    exec_sql(f->db, "PRAGMA wal_checkpoint(TRUNCATE)");
    fd = open(f->db, O_WRONLY);
    g_assert_cmpint(fd, >=, 0);
    {
        char junk[4096];
        memset(junk, 0xa5, sizeof junk);
        /* Page 4 on: the tables, past the schema on page 1. */
        g_assert_cmpint(pwrite(fd, junk, sizeof junk, 3 * 4096), ==, sizeof junk);
    }
    close(fd);
    before = file_sha256(f->db);
    assert_refused(f, NULL, NULL, (const char *const[]){f->db, "is corrupt", NULL});
    assert_untouched(f, before);
}

/* Another program's SQLite file gets none of our migrations. */
static void
test_refuses_foreign_database(Fixture *f, gconstpointer data)
{
    g_autofree gchar *before = NULL;

    make_private_dir(f->data_dir);
    exec_sql(f->db, "CREATE TABLE notes (x TEXT); CREATE TABLE photos (y BLOB);"
                    "INSERT INTO notes VALUES ('mine');");
    before = file_sha256(f->db);
    assert_refused(f, NULL, NULL,
                   (const char *const[]){f->db, "is not an Einsora database", "notes, photos",
                                         "no schema_migrations", NULL});
    assert_untouched(f, before);
}

/* A file as it is, or absent (NULL). */
static gchar *
file_sha256_or_null(const char *path)
{
    return g_file_test(path, G_FILE_TEST_EXISTS) ? file_sha256(path) : NULL;
}

/* The file and each one beside it as they were, byte for byte; but -shm,
 * the WAL's index, takes the read marks of whoever reads the WAL (even
 * read-only): it must still be there, no more. */
static void
assert_all_untouched(Fixture *f, const char *const *sha256_before)
{
    const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};

    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *file = g_strconcat(f->db, suffixes[i], NULL);
        g_autofree gchar *after = file_sha256_or_null(file);
        g_test_message("%s: %s", file, after != NULL ? after : "absent");
        if (g_strcmp0(suffixes[i], "-shm") == 0)
            g_assert_true((after != NULL) == (sha256_before[i] != NULL));
        else
            g_assert_cmpstr(after, ==, sha256_before[i]);
    }
}

static void
snapshot_all(Fixture *f, gchar *sha256[4])
{
    const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};

    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *file = g_strconcat(f->db, suffixes[i], NULL);
        sha256[i] = file_sha256_or_null(file);
    }
}

/* Another program's database in WAL mode, closed without a checkpoint:
 * its tables and rows are only in -wal. Closing a read-write connection
 * would checkpoint them into the file and remove -wal and -shm. */
static void
test_refuses_foreign_wal_database(Fixture *f, gconstpointer data)
{
    g_autofree gchar *wal = g_strconcat(f->db, "-wal", NULL);
    g_autofree gchar *shm = g_strconcat(f->db, "-shm", NULL);
    gchar *before[4] = {NULL};
    sqlite3 *db = NULL;

    make_private_dir(f->data_dir);
    /* SQLite gives -wal and -shm the file's mode. */
    write_private_file(f->db, "", 0);
    g_assert_cmpint(sqlite3_open(f->db, &db), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL), ==,
                    SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(db,
                                 "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
                                 "CREATE TABLE notes (x TEXT); CREATE TABLE photos (y BLOB);"
                                 "INSERT INTO notes VALUES ('mine'), ('yours');",
                                 NULL, NULL, NULL),
                    ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_close(db), ==, SQLITE_OK);
    g_assert_true(g_file_test(wal, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(shm, G_FILE_TEST_EXISTS));
    snapshot_all(f, before);

    assert_refused(f, NULL, NULL,
                   (const char *const[]){f->db, "is not an Einsora database", "notes, photos",
                                         "nothing was changed", NULL});
    assert_all_untouched(f, (const char *const *)before);
    for (guint i = 0; i < G_N_ELEMENTS(before); i++)
        g_free(before[i]);
}

/* A rollback journal another program left mid-transaction (a crash): the
 * first read would replay it into the file. Einsora's databases are WAL
 * and never have one. */
static void
test_refuses_hot_journal(Fixture *f, gconstpointer data)
{
    g_autofree gchar *scratch = g_build_filename(f->dir, "scratch.db", NULL);
    g_autofree gchar *scratch_journal = g_strconcat(scratch, "-journal", NULL);
    g_autofree gchar *journal = g_strconcat(f->db, "-journal", NULL);
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    gchar *before[4] = {NULL};
    sqlite3 *db = NULL;

    make_private_dir(f->data_dir);
    g_assert_cmpint(sqlite3_open(scratch, &db), ==, SQLITE_OK);
    /* A small cache spills the transaction's pages into the file before
     * COMMIT, as a crash would find them. */
    g_assert_cmpint(sqlite3_exec(db,
                                 "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 2;"
                                 "CREATE TABLE notes (x BLOB);"
                                 "INSERT INTO notes VALUES (zeroblob(4000)), (zeroblob(4000));"
                                 "BEGIN; UPDATE notes SET x = randomblob(4000);"
                                 "INSERT INTO notes SELECT randomblob(4000) FROM notes;"
                                 "INSERT INTO notes SELECT randomblob(4000) FROM notes;",
                                 NULL, NULL, NULL),
                    ==, SQLITE_OK);
    /* The pair as it is now, mid-transaction. */
    g_assert_true(g_file_get_contents(scratch, &contents, &length, NULL));
    write_private_file(f->db, contents, length);
    g_clear_pointer(&contents, g_free);
    g_assert_true(g_file_get_contents(scratch_journal, &contents, &length, NULL));
    g_assert_cmpuint(length, >, 0);
    write_private_file(journal, contents, length);
    g_assert_cmpint(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_close(db), ==, SQLITE_OK);
    snapshot_all(f, before);

    assert_refused(f, NULL, NULL,
                   (const char *const[]){journal, "is a rollback journal another program left",
                                         "move both away", NULL});
    assert_all_untouched(f, (const char *const *)before);
    for (guint i = 0; i < G_N_ELEMENTS(before); i++)
        g_free(before[i]);
}

static void
test_refuses_newer_schema(Fixture *f, gconstpointer data)
{
    g_autofree gchar *before = NULL;

    migrate(f);
    exec_sql(f->db, "INSERT INTO schema_migrations VALUES (99, '00099_future', 'x', "
                    "'2030-01-01T00:00:00.000000Z')");
    before = file_sha256(f->db);
    assert_refused(f, NULL, NULL, (const char *const[]){f->db, "schema version 99 is newer", NULL});
    assert_untouched(f, before);
}

static void
test_refuses_unreadable_catalog(Fixture *f, gconstpointer data)
{
    g_autofree gchar *missing = g_build_filename(f->dir, "missing.json", NULL);
    g_autofree gchar *broken = g_build_filename(f->dir, "broken.json", NULL);
    g_autofree gchar *locked = g_build_filename(f->dir, "locked.json", NULL);

    assert_refused(f, (const char *const[]){"EINSORA_CATALOG", missing, NULL}, NULL,
                   (const char *const[]){"EINSORA_CATALOG", missing, "No such file", NULL});
    /* A directory where the file should be: even root can't read it. */
    assert_refused(f, (const char *const[]){"EINSORA_CATALOG", f->dir, NULL}, NULL,
                   (const char *const[]){"EINSORA_CATALOG", f->dir, "directory", NULL});
    g_assert_true(g_file_set_contents(broken, "{\"version\": 1, \"regions\": [", -1, NULL));
    assert_refused(f, (const char *const[]){"EINSORA_CATALOG", broken, NULL}, NULL,
                   (const char *const[]){"EINSORA_CATALOG", broken, NULL});
    if (geteuid() != 0) {
        g_assert_true(g_file_set_contents(locked, "{}", -1, NULL));
        g_assert_cmpint(chmod(locked, 0), ==, 0);
        assert_refused(f, (const char *const[]){"EINSORA_CATALOG", locked, NULL}, NULL,
                       (const char *const[]){"EINSORA_CATALOG", locked, "Permission denied", NULL});
    }
    /* Refused before the data directory was made. */
    g_assert_false(g_file_test(f->data_dir, G_FILE_TEST_EXISTS));
}

static void
test_refuses_port_in_use(Fixture *f, gconstpointer data)
{
    g_autoptr(GSocket) socket =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any_port = g_inet_socket_address_new(loopback, 0);
    g_autoptr(GSocketAddress) bound = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *taken = NULL;

    g_assert_true(g_socket_bind(socket, any_port, TRUE, &error));
    g_assert_true(g_socket_listen(socket, &error));
    g_assert_no_error(error);
    bound = g_socket_get_local_address(socket, &error);
    taken = g_strdup_printf("127.0.0.1:%u",
                            g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound)));

    assert_refused(f, NULL, (const char *const[]){"--listen", taken, NULL},
                   (const char *const[]){"EINSORA_API_ADDR", taken, "is already in use", NULL});
    assert_refused(f, (const char *const[]){"EINSORA_ACCESS_ADDR", taken, NULL}, NULL,
                   (const char *const[]){"EINSORA_ACCESS_ADDR", taken, "is already in use", NULL});
    /* Refused before the store: no database, no account, no token. */
    g_assert_false(g_file_test(f->data_dir, G_FILE_TEST_EXISTS));
}

static void
test_refuses_open_data_directory(Fixture *f, gconstpointer data)
{
    make_private_dir(f->data_dir);
    g_assert_cmpint(chmod(f->data_dir, 0777), ==, 0);
    assert_refused(f, NULL, NULL,
                   (const char *const[]){"EINSORA_DATA_DIR", f->data_dir,
                                         "writable by group or others (mode 0777)", NULL});
    g_assert_false(g_file_test(f->db, G_FILE_TEST_EXISTS));
    g_assert_cmpint(chmod(f->data_dir, 0775), ==, 0);
    assert_refused(f, NULL, NULL, (const char *const[]){f->data_dir, "(mode 0775)", NULL});
    g_assert_false(g_file_test(f->db, G_FILE_TEST_EXISTS));
    /* Someone else's directory: they could swap the files in it. Only
     * root can give it away (and not in every user namespace). */
    g_assert_cmpint(chmod(f->data_dir, 0700), ==, 0);
    if (geteuid() == 0 && chown(f->data_dir, 65534, 65534) == 0) {
        assert_refused(f, NULL, NULL,
                       (const char *const[]){f->data_dir, "is owned by uid 65534", NULL});
        g_assert_false(g_file_test(f->db, G_FILE_TEST_EXISTS));
        g_assert_cmpint(chown(f->data_dir, 0, 0), ==, 0);
    }
}

static void
hide_getrandom(gpointer data)
{
    if (!einsora_test_hide_getrandom())
        _exit(99);
}

/* Whether a child can have getrandom(2) hidden here (seccomp). */
static gboolean
can_hide_getrandom(void)
{
    int status = 0;
    pid_t pid = fork();

    g_assert_cmpint(pid, >=, 0);
    if (pid == 0)
        _exit(einsora_test_hide_getrandom() ? 0 : 1);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Without the kernel's random generator no ID others can't guess can be
 * made, and nothing is made from GLib's predictable one instead: refused
 * with that said, before the data directory is touched (it used to abort
 * at the first ID, after the store was opened). */
static void
test_refuses_without_random_generator(Fixture *f, gconstpointer data)
{
    if (!can_hide_getrandom()) {
        g_test_skip("seccomp is not available here, so getrandom can't be hidden");
        return;
    }
    assert_refused_with(
        f, NULL, NULL,
        (const char *const[]){"random generator", "getrandom: Function not implemented", NULL},
        hide_getrandom);
    g_assert_false(g_file_test(f->data_dir, G_FILE_TEST_EXISTS));
}

/* With the real daemon */

static EinsoraTestResponse *
create_workload(EinsoraTestDaemon *daemon, const char *name)
{
    g_autofree gchar *body =
        g_strdup_printf("{\"kind\":\"notebook\",\"name\":\"%s\",\"gpu_class\":\"cpu-2c-4g\","
                        "\"image\":\"jupyter-notebook\"}",
                        name);

    return einsora_test_request(daemon, "POST", "/v1/workloads", daemon->owner_token, JSON, body,
                                NULL);
}

static gchar *
workload_state(EinsoraTestDaemon *daemon, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    g_autoptr(EinsoraTestResponse) response =
        einsora_test_request(daemon, "GET", path, daemon->owner_token, NULL, NULL, NULL);

    g_assert_cmpuint(response->status, ==, 200);
    return g_strdup(einsora_test_response_string(response, "state"));
}

static void
wait_for_state(EinsoraTestDaemon *daemon, const char *id, const char *state)
{
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *now = workload_state(daemon, id);
        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is still %s, not %s", id, now, state);
        g_usleep(50 * 1000);
    }
}

static guint
ready_status(EinsoraTestDaemon *daemon)
{
    g_autoptr(EinsoraTestResponse) response =
        einsora_test_request(daemon, "GET", "/readyz", NULL, NULL, NULL, NULL);

    if (response->status == 503)
        g_assert_nonnull(soup_message_headers_get_one(response->headers, "Retry-After"));
    return response->status;
}

static void
wait_for_ready_status(EinsoraTestDaemon *daemon, guint status)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (ready_status(daemon) != status) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50 * 1000);
    }
}

static guint
count_in(const char *text, const char *needle)
{
    guint count = 0;

    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

static void
wait_for_log(EinsoraTestDaemon *daemon, const char *needle)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *log = einsora_test_daemon_read_log(daemon);
        if (strstr(log, needle) != NULL)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("\"%s\" is not in the daemon's log", needle);
        g_usleep(50 * 1000);
    }
}

static EinsoraTestDaemon *
sim_daemon_new(void)
{
    EinsoraTestDaemon *daemon = einsora_test_daemon_new();

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "100ms");
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_CPUS", "1024");
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_MEMORY_MIB", "1048576");
    return daemon;
}

/* Read straight from the file: intact, and each workload where its
 * timeline ends. Returns the workloads' names. */
static GHashTable *
check_database(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    GHashTable *names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint workloads = 0;

    g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL), ==,
                    SQLITE_OK);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    g_assert_cmpstr((const char *)sqlite3_column_text(stmt, 0), ==, "ok");
    sqlite3_finalize(stmt);
    g_assert_cmpint(sqlite3_prepare_v2(db,
                                       "SELECT w.name, w.state, (SELECT e.to_state FROM "
                                       "workload_events e WHERE e.workload_id = w.id ORDER BY "
                                       "e.seq DESC LIMIT 1) FROM workloads w",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        workloads++;
        g_assert_cmpstr((const char *)sqlite3_column_text(stmt, 1), ==,
                        (const char *)sqlite3_column_text(stmt, 2));
        g_hash_table_add(names, g_strdup(name));
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    g_test_message("database intact; %u workloads, each where its timeline ends", workloads);
    return names;
}

/* Mounts in a mount namespace of this test's own, so that none outlives
 * it, whatever the test's end. */
static gboolean
private_mounts(void)
{
    static gint result = -1;

    if (result < 0)
        result =
            unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
    return result;
}

/* Disk full: 503 unavailable with nothing half-written, and the next
 * request after space returns succeeds, without a restart. */
static void
test_disk_full(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = NULL;
    g_autoptr(EinsoraTestResponse) first = NULL;
    g_autoptr(EinsoraTestResponse) refused = NULL;
    g_autoptr(EinsoraTestResponse) after = NULL;
    g_autoptr(GHashTable) acknowledged =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) in_database = NULL;
    g_autofree gchar *filler = NULL;
    g_autofree gchar *db = NULL;
    g_autofree gchar *id = NULL;
    const char *pid;
    guint attempts = 0;
    int fd;

    if (!private_mounts()) {
        g_test_skip("needs a mount namespace of its own (root, or CAP_SYS_ADMIN) for a small "
                    "filesystem");
        return;
    }
    daemon = sim_daemon_new();
    g_assert_cmpint(g_mkdir(daemon->data_dir, 0700), ==, 0);
    /* Room for the migrated database and its WAL, not much more. */
    if (mount("tmpfs", daemon->data_dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,mode=0700") != 0) {
        g_autofree gchar *why = g_strdup_printf("can't mount a tmpfs: %s", g_strerror(errno));
        g_test_skip(why);
        return;
    }
    einsora_test_daemon_start(daemon);

    first = create_workload(daemon, "before-full");
    g_assert_cmpuint(first->status, ==, 201);
    g_hash_table_add(acknowledged, g_strdup("before-full"));
    id = g_strdup(einsora_test_response_string(first, "id"));
    wait_for_state(daemon, id, "running");

    /* Fill the filesystem to the last block. */
    filler = g_build_filename(daemon->data_dir, "filler", NULL);
    fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    {
        char block[4096] = {0};
        while (write(fd, block, sizeof block) > 0)
            ;
        g_assert_cmpint(errno, ==, ENOSPC);
    }
    close(fd);

    /* What the WAL still has room for may go through; then 503. */
    while (refused == NULL) {
        g_autofree gchar *name = g_strdup_printf("while-full-%u", attempts);
        g_autoptr(EinsoraTestResponse) response = create_workload(daemon, name);

        g_assert_cmpuint(++attempts, <, 200);
        if (response->status == 201)
            g_hash_table_add(acknowledged, g_steal_pointer(&name));
        else
            refused = g_steal_pointer(&response);
    }
    g_test_message("%u creates before the first 503", attempts - 1);
    g_assert_cmpuint(refused->status, ==, 503);
    g_assert_cmpstr(einsora_test_response_error_code(refused), ==, "unavailable");
    g_assert_cmpstr(
        json_object_get_string_member(
            json_object_get_object_member(json_node_get_object(refused->json), "error"), "message"),
        ==, STORAGE_FULL);
    g_assert_nonnull(soup_message_headers_get_one(refused->headers, "Retry-After"));
    /* Still full: still 503. */
    for (guint i = 0; i < 3; i++) {
        g_autoptr(EinsoraTestResponse) again = create_workload(daemon, "still-full");
        g_assert_cmpuint(again->status, ==, 503);
    }
    /* Running workloads are read as before. */
    {
        g_autofree gchar *state = workload_state(daemon, id);
        g_assert_cmpstr(state, ==, "running");
    }

    /* Space returns: the very next request goes through, same process. */
    pid = g_subprocess_get_identifier(daemon->process);
    g_assert_nonnull(pid);
    g_assert_cmpint(unlink(filler), ==, 0);
    after = create_workload(daemon, "after-full");
    g_assert_cmpuint(after->status, ==, 201);
    g_hash_table_add(acknowledged, g_strdup("after-full"));
    g_assert_cmpstr(g_subprocess_get_identifier(daemon->process), ==, pid);
    wait_for_state(daemon, einsora_test_response_string(after, "id"), "running");
    {
        g_autofree gchar *log = einsora_test_daemon_read_log(daemon);
        g_assert_nonnull(strstr(log, "database or disk is full"));
    }
    einsora_test_daemon_stop(daemon);

    /* Exactly the acknowledged creates, none of the refused ones. */
    db = g_build_filename(daemon->data_dir, "einsora.db", NULL);
    in_database = check_database(db);
    g_assert_cmpuint(g_hash_table_size(in_database), ==, g_hash_table_size(acknowledged));
    {
        GHashTableIter iter;
        gpointer name;
        g_hash_table_iter_init(&iter, acknowledged);
        while (g_hash_table_iter_next(&iter, &name, NULL))
            g_assert_true(g_hash_table_contains(in_database, name));
    }
    g_assert_cmpint(umount2(daemon->data_dir, MNT_DETACH), ==, 0);
}

static guint
count_events(EinsoraTestDaemon *daemon, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/events", id);
    g_autoptr(EinsoraTestResponse) response =
        einsora_test_request(daemon, "GET", path, daemon->owner_token, NULL, NULL, NULL);

    g_assert_cmpuint(response->status, ==, 200);
    return json_array_get_length(
        json_object_get_array_member(json_node_get_object(response->json), "events"));
}

/* Store down mid-run: the database file moved away (an operator's
 * mistake, a backup script) and back. */
static void
test_store_down(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = sim_daemon_new();
    g_autoptr(EinsoraTestResponse) first = NULL;
    g_autoptr(EinsoraTestResponse) later = NULL;
    g_autofree gchar *db = NULL;
    g_autofree gchar *away = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *log = NULL;
    guint events;

    einsora_test_daemon_start(daemon);
    db = g_build_filename(daemon->data_dir, "einsora.db", NULL);
    away = g_build_filename(daemon->dir, "einsora.db.away", NULL);
    first = create_workload(daemon, "running-through");
    g_assert_cmpuint(first->status, ==, 201);
    id = g_strdup(einsora_test_response_string(first, "id"));
    wait_for_state(daemon, id, "running");
    g_assert_cmpuint(ready_status(daemon), ==, 200);
    events = count_events(daemon, id);

    g_assert_cmpint(rename(db, away), ==, 0);
    wait_for_ready_status(daemon, 503);
    wait_for_log(daemon, "controller paused: ");
    {
        /* Nothing is acknowledged that could be lost with the file. */
        g_autoptr(EinsoraTestResponse) refused = create_workload(daemon, "while-down");
        g_assert_cmpuint(refused->status, ==, 503);
        g_assert_cmpstr(einsora_test_response_error_code(refused), ==, "unavailable");
        g_assert_nonnull(soup_message_headers_get_one(refused->headers, "Retry-After"));
    }
    /* Many passes' worth: the workload runs on, and nobody decided
     * anything about it. */
    g_usleep(G_USEC_PER_SEC);
    {
        g_autofree gchar *state = workload_state(daemon, id);
        g_assert_cmpstr(state, ==, "running");
    }
    g_assert_cmpuint(count_events(daemon, id), ==, events);
    g_assert_cmpuint(ready_status(daemon), ==, 503);

    g_assert_cmpint(rename(away, db), ==, 0);
    wait_for_ready_status(daemon, 200);
    wait_for_log(daemon, "controller resumed");
    later = create_workload(daemon, "after-return");
    g_assert_cmpuint(later->status, ==, 201);
    wait_for_state(daemon, einsora_test_response_string(later, "id"), "running");
    {
        g_autofree gchar *state = workload_state(daemon, id);
        g_assert_cmpstr(state, ==, "running");
    }
    g_assert_cmpuint(count_events(daemon, id), ==, events);

    /* Said once each, not once a pass. */
    log = einsora_test_daemon_read_log(daemon);
    g_assert_cmpuint(count_in(log, "controller paused: "), ==, 1);
    g_assert_nonnull(strstr(log, "controller paused: the database file"));
    g_assert_cmpuint(count_in(log, "controller resumed"), ==, 1);
    einsora_test_daemon_stop(daemon);
    g_hash_table_unref(check_database(db));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/faults/start/refuses-not-a-database", Fixture, NULL, fixture_set_up,
               test_refuses_not_a_database, fixture_tear_down);
    g_test_add("/faults/start/refuses-corrupt-database", Fixture, NULL, fixture_set_up,
               test_refuses_corrupt_database, fixture_tear_down);
    g_test_add("/faults/start/refuses-foreign-database-untouched", Fixture, NULL, fixture_set_up,
               test_refuses_foreign_database, fixture_tear_down);
    g_test_add("/faults/start/refuses-foreign-wal-database-untouched", Fixture, NULL,
               fixture_set_up, test_refuses_foreign_wal_database, fixture_tear_down);
    g_test_add("/faults/start/refuses-hot-rollback-journal-untouched", Fixture, NULL,
               fixture_set_up, test_refuses_hot_journal, fixture_tear_down);
    g_test_add("/faults/start/refuses-newer-schema-untouched", Fixture, NULL, fixture_set_up,
               test_refuses_newer_schema, fixture_tear_down);
    g_test_add("/faults/start/refuses-unreadable-catalog", Fixture, NULL, fixture_set_up,
               test_refuses_unreadable_catalog, fixture_tear_down);
    g_test_add("/faults/start/refuses-port-in-use-before-the-store", Fixture, NULL, fixture_set_up,
               test_refuses_port_in_use, fixture_tear_down);
    g_test_add("/faults/start/refuses-data-directory-others-can-write", Fixture, NULL,
               fixture_set_up, test_refuses_open_data_directory, fixture_tear_down);
    g_test_add("/faults/start/refuses-without-random-generator", Fixture, NULL, fixture_set_up,
               test_refuses_without_random_generator, fixture_tear_down);
    g_test_add_func("/faults/disk-full/503-then-recovers-without-restart", test_disk_full);
    g_test_add_func("/faults/store-down/pauses-controller-workloads-keep-running", test_store_down);
    return g_test_run();
}
