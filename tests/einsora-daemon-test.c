/* einsora-daemon as an operator meets it: the real binary, started as a
 * subprocess on a private data directory. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "einsora-test-dir.h"

typedef struct {
    gchar *dir;
    gchar *data_dir;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->data_dir = g_build_filename(f->dir, "data", NULL);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    einsora_test_dir_remove(f->dir);
    g_free(f->data_dir);
    g_free(f->dir);
}

static const char *
daemon_path(void)
{
    const char *path = g_getenv("EINSORA_DAEMON");
    g_assert_nonnull(path);
    return path;
}

/* Runs the daemon to completion; returns its exit status. */
static int
run_daemon(const char *const *env_extra, gchar **out, gchar **err, ...)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GSubprocessLauncher) launcher = NULL;
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    va_list args;
    const char *arg;

    g_ptr_array_add(argv, (gpointer)daemon_path());
    va_start(args, err);
    while ((arg = va_arg(args, const char *)) != NULL)
        g_ptr_array_add(argv, (gpointer)arg);
    va_end(args);
    g_ptr_array_add(argv, NULL);

    launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_CATALOG");
    for (guint i = 0; env_extra != NULL && env_extra[i] != NULL; i += 2)
        g_subprocess_launcher_setenv(launcher, env_extra[i], env_extra[i + 1], TRUE);
    process = g_subprocess_launcher_spawnv(launcher, (const char *const *)argv->pdata, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, out, err, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    return g_subprocess_get_exit_status(process);
}

static void
assert_private_file(const char *path)
{
    struct stat st;

    g_assert_cmpint(lstat(path, &st), ==, 0);
    g_assert_true(S_ISREG(st.st_mode));
    g_assert_cmpint(st.st_mode & 0777, ==, 0600);
}

static void
test_migrate(Fixture *f, gconstpointer data)
{
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autofree gchar *db = g_build_filename(f->data_dir, "einsora.db", NULL);
    struct stat st;

    g_assert_cmpint(run_daemon(NULL, &out, &err, "--data-dir", f->data_dir, "migrate", NULL), ==,
                    0);
    g_assert_nonnull(strstr(out, "up to date"));
    assert_private_file(db);
    g_assert_cmpint(stat(f->data_dir, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 0777, ==, 0700);
    /* A second run finds nothing to do. */
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(run_daemon(NULL, &out, &err, "--data-dir", f->data_dir, "migrate", NULL), ==,
                    0);
}

/* A data directory others can read is made private before the token goes
 * in. */
static void
test_data_dir_made_private(Fixture *f, gconstpointer data)
{
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    struct stat st;

    g_assert_cmpint(g_mkdir(f->data_dir, 0755), ==, 0);
    g_assert_cmpint(chmod(f->data_dir, 0755), ==, 0);
    g_assert_cmpint(run_daemon(NULL, &out, &err, "--data-dir", f->data_dir, "migrate", NULL), ==,
                    0);
    g_assert_cmpint(stat(f->data_dir, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 0777, ==, 0700);
}

static void
test_refuses_newer_schema(Fixture *f, gconstpointer data)
{
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autofree gchar *db = g_build_filename(f->data_dir, "einsora.db", NULL);
    sqlite3 *handle = NULL;
    const char *env[] = {"EINSORA_DATA_DIR", f->data_dir, NULL};

    g_assert_cmpint(run_daemon(env, &out, &err, "migrate", NULL), ==, 0);
    g_assert_cmpint(sqlite3_open(db, &handle), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(handle,
                                 "INSERT INTO schema_migrations VALUES "
                                 "(99, '00099_future', '"
                                 "0000000000000000000000000000000000000000000000000000000000000000"
                                 "', '2030-01-01T00:00:00.000000Z')",
                                 NULL, NULL, NULL),
                    ==, SQLITE_OK);
    sqlite3_close(handle);

    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_assert_cmpint(run_daemon(env, &out, &err, "migrate", NULL), ==, 1);
    g_test_message("%s", err);
    g_assert_nonnull(strstr(err, "newer"));
}

static void
test_refuses_bad_settings(Fixture *f, gconstpointer data)
{
    g_autofree gchar *bad_catalog = g_build_filename(f->dir, "catalog.json", NULL);
    g_autofree gchar *open_dir = g_build_filename(f->dir, "open", NULL);
    g_autofree gchar *open_db = g_build_filename(open_dir, "einsora.db", NULL);

    g_assert_true(g_file_set_contents(bad_catalog, "{\"version\": 1, \"regions\": []}", -1, NULL));
    {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        const char *env[] = {"EINSORA_CATALOG", bad_catalog, NULL};
        g_assert_cmpint(run_daemon(env, &out, &err, "--data-dir", f->data_dir, NULL), ==, 1);
        g_test_message("%s", err);
        g_assert_nonnull(strstr(err, "EINSORA_CATALOG"));
        /* Nothing started half-configured: no database was made. */
        g_assert_false(g_file_test(f->data_dir, G_FILE_TEST_EXISTS));
    }
    {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        g_assert_cmpint(g_mkdir(open_dir, 0700), ==, 0);
        g_assert_cmpint(chmod(open_dir, 0777), ==, 0);
        g_assert_cmpint(run_daemon(NULL, &out, &err, "--data-dir", open_dir, NULL), ==, 1);
        g_test_message("%s", err);
        g_assert_nonnull(strstr(err, "EINSORA_DATA_DIR"));
        g_assert_false(g_file_test(open_db, G_FILE_TEST_EXISTS));
    }
    {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        const char *env[] = {"EINSORA_DATA_DIR", "", NULL};
        g_assert_cmpint(run_daemon(env, &out, &err, NULL), ==, 1);
        g_assert_nonnull(strstr(err, "EINSORA_DATA_DIR"));
    }
    {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        g_assert_cmpint(run_daemon(NULL, &out, &err, "--data-dir", f->data_dir, "serve", NULL), ==,
                        2);
        g_assert_nonnull(strstr(err, "serve"));
    }
}

/* Each bad setting stops the start with a message naming it, before
 * anything is created. */
static void
test_bad_setting_table(Fixture *f, gconstpointer data)
{
    static const struct {
        const char *variable;
        const char *value;
    } table[] = {
        {"EINSORA_API_ADDR", "localhost:8080"},
        {"EINSORA_API_ADDR", "127.0.0.1"},
        {"EINSORA_ACCESS_ADDR", "anywhere"},
        {"EINSORA_REGION", "mars"},
        {"EINSORA_CONTROLLER_INTERVAL", "5"},
        {"EINSORA_CONTROLLER_INTERVAL", "0s"},
        {"EINSORA_CONTROLLER_INTERVAL", "2h"},
        {"EINSORA_MACHINE_OWNER", "Not A Tenant"},
        {"EINSORA_AGING_AFTER", "soon"},
        {"EINSORA_AGING_AFTER", "2000h"},
        {"EINSORA_TLS", "maybe"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        const char *env[] = {table[i].variable, table[i].value, NULL};

        g_assert_cmpint(run_daemon(env, &out, &err, "--data-dir", f->data_dir, NULL), ==, 1);
        g_test_message("%s=%s: %s", table[i].variable, table[i].value, err);
        g_assert_nonnull(strstr(err, table[i].variable));
        g_assert_false(g_file_test(f->data_dir, G_FILE_TEST_EXISTS));
    }
    /* The access proxy off loopback without TLS of its own. */
    {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        const char *env[] = {"EINSORA_TLS", "plain-behind-tls-proxy", "EINSORA_ACCESS_ADDR",
                             "0.0.0.0:0", NULL};

        g_assert_cmpint(run_daemon(env, &out, &err, "--data-dir", f->data_dir, NULL), ==, 1);
        g_assert_nonnull(strstr(err, "EINSORA_ACCESS_ADDR"));
        g_assert_nonnull(strstr(err, "no TLS"));
        g_assert_false(g_file_test(f->data_dir, G_FILE_TEST_EXISTS));
    }
}

/* A port already in use is named as the API address's problem. */
static void
test_port_in_use(Fixture *f, gconstpointer data)
{
    g_autoptr(GSocket) socket =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
    g_autoptr(GSocketAddress) bound = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *address = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;

    g_assert_true(g_socket_bind(socket, any, FALSE, &error));
    g_assert_true(g_socket_listen(socket, &error));
    bound = g_socket_get_local_address(socket, &error);
    g_assert_no_error(error);
    address = g_strdup_printf("127.0.0.1:%u",
                              g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound)));
    g_assert_cmpint(
        run_daemon(NULL, &out, &err, "--data-dir", f->data_dir, "--listen", address, NULL), ==, 1);
    g_test_message("%s", err);
    g_assert_nonnull(strstr(err, "EINSORA_API_ADDR"));
}

static void
on_line(GObject *source, GAsyncResult *result, gpointer user_data)
{
    gchar **line = user_data;
    *line =
        g_data_input_stream_read_line_finish_utf8(G_DATA_INPUT_STREAM(source), result, NULL, NULL);
    if (*line == NULL)
        *line = g_strdup("");
}

/* Runs until told to stop, and stops cleanly on SIGTERM. */
static void
test_runs_until_sigterm(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GDataInputStream) lines = NULL;
    gboolean ready = FALSE;

    g_subprocess_launcher_setenv(launcher, "G_MESSAGES_DEBUG", "", TRUE);
    process = g_subprocess_launcher_spawn(launcher, &error, daemon_path(), "--data-dir",
                                          f->data_dir, "--listen", "127.0.0.1:0", NULL);
    g_assert_no_error(error);
    lines = g_data_input_stream_new(g_subprocess_get_stderr_pipe(process));
    while (!ready) {
        g_autofree gchar *line = NULL;
        g_data_input_stream_read_line_async(lines, G_PRIORITY_DEFAULT, NULL, on_line, &line);
        while (line == NULL)
            g_main_context_iteration(NULL, TRUE);
        g_assert_cmpstr(line, !=, ""); /* it must not exit before it is ready */
        ready = strstr(line, "ready") != NULL;
    }
    g_subprocess_send_signal(process, SIGTERM);
    g_assert_true(g_subprocess_wait(process, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/daemon/migrate/creates-private-database", test_migrate);
    ADD("/daemon/migrate/refuses-newer-schema", test_refuses_newer_schema);
    ADD("/daemon/data-dir/made-private", test_data_dir_made_private);
    ADD("/daemon/settings/bad-values-stop-start", test_refuses_bad_settings);
    ADD("/daemon/run/stops-on-sigterm", test_runs_until_sigterm);
    ADD("/daemon/settings/each-bad-value-named", test_bad_setting_table);
    ADD("/daemon/settings/port-in-use", test_port_in_use);
#undef ADD
    return g_test_run();
}
