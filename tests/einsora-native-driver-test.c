/* The native driver with real bubblewrap: its argument builder, its
 * sandbox (seen from inside by a stand-in server script), the fixed codes
 * for each way a start can fail, readiness against Debian's real Jupyter,
 * stop/remove, and adoption by a new driver: the same process when the
 * sandbox is unchanged, sandbox-changed when it isn't. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <libsoup/soup.h>
#include <string.h>

#include "einsora-activity-probe.h"
#include "einsora-bwrap-args.h"
#include "einsora-native-driver.h"
#include "einsora-native-sandbox.h"
#include "einsora-safe-remove.h"
#include "einsora-test-dir.h"
#include "einsora-test-jupyter.h"
#include "einsora-test-llama.h"
#include "einsora-uuid.h"

#define WAIT_US (30 * G_USEC_PER_SEC)

typedef struct {
    gchar *dir;
    gchar *data_dir;
    gchar *run_dir;
    gchar *id;
    gchar *workload_dir;
    EinsoraNativeDriverConfig config;
    EinsoraNativeDriver *driver;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->data_dir = g_build_filename(f->dir, "notebooks", NULL);
    f->run_dir = g_build_filename(f->dir, "run", NULL);
    f->id = einsora_uuid_v7_new(g_get_real_time() / 1000);
    f->workload_dir = g_build_filename(f->data_dir, f->id, NULL);
    g_assert_cmpint(g_mkdir_with_parents(f->workload_dir, 0700), ==, 0);
    f->config.data_dir = f->data_dir;
    f->config.run_dir = f->run_dir;
    f->config.device_root = "/";
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->driver);
    einsora_test_kill_recorded(f->run_dir);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
    g_free(f->data_dir);
    g_free(f->run_dir);
    g_free(f->id);
    g_free(f->workload_dir);
}

/* A stand-in for jupyter-notebook, inside the workload's own data
 * directory (the only place of the test's that the sandbox sees). */
static gchar *
write_server_script(Fixture *f, const char *name, const char *body)
{
    g_autofree gchar *path = g_build_filename(f->workload_dir, name, NULL);
    g_autofree gchar *script = g_strdup_printf("#!/bin/sh\n%s\n", body);

    g_assert_true(g_file_set_contents(path, script, -1, NULL));
    g_assert_cmpint(g_chmod(path, 0700), ==, 0);
    return g_steal_pointer(&path);
}

static void
make_driver(Fixture *f)
{
    g_autoptr(GError) error = NULL;

    g_clear_object(&f->driver);
    f->driver = einsora_native_driver_new(&f->config, &error);
    g_assert_no_error(error);
    g_assert_nonnull(f->driver);
}

static EinsoraDesiredWorkload *
desired(Fixture *f, gint64 attempt)
{
    EinsoraDesiredWorkload *workload = einsora_desired_workload_new();

    workload->workload_id = g_strdup(f->id);
    workload->tenant_id = g_uuid_string_random();
    workload->mode = EINSORA_WORKLOAD_MODE_RUN;
    workload->attempt = attempt;
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    workload->driver = g_strdup(EINSORA_NATIVE_DRIVER_NAME);
    workload->placed_class = g_strdup("cpu-1c-2g");
    workload->image = g_strdup("jupyter-linux");
    workload->cpus = 1;
    workload->memory_mib = 2048;
    return workload;
}

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static GAsyncResult *
wait_result(GAsyncResult **slot)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    while (*slot == NULL) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    return *slot;
}

static gboolean
start(Fixture *f, gint64 attempt, GError **error)
{
    g_autoptr(EinsoraDesiredWorkload) workload = desired(f, attempt);
    g_autoptr(GAsyncResult) result = NULL;

    einsora_agent_driver_start_async(EINSORA_AGENT_DRIVER(f->driver), workload, NULL, on_done,
                                     &result);
    wait_result(&result);
    return einsora_agent_driver_start_finish(EINSORA_AGENT_DRIVER(f->driver), result, error);
}

static void
stop(Fixture *f, gboolean remove)
{
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    EinsoraAgentDriver *driver = EINSORA_AGENT_DRIVER(f->driver);

    if (remove)
        einsora_agent_driver_remove_async(driver, f->id, NULL, on_done, &result);
    else
        einsora_agent_driver_stop_async(driver, f->id, NULL, on_done, &result);
    wait_result(&result);
    if (remove)
        g_assert_true(einsora_agent_driver_remove_finish(driver, result, &error));
    else
        g_assert_true(einsora_agent_driver_stop_finish(driver, result, &error));
    g_assert_no_error(error);
}

static EinsoraStatusCode
status(Fixture *f, gint64 *attempt)
{
    return einsora_agent_driver_get_status(EINSORA_AGENT_DRIVER(f->driver), f->id, attempt);
}

static void
wait_for_status(Fixture *f, EinsoraStatusCode code)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    while (status(f, NULL) != code) {
        if (g_get_monotonic_time() > deadline)
            g_error("status is %s, not %s", einsora_status_code_to_string(status(f, NULL)),
                    einsora_status_code_to_string(code));
        g_main_context_iteration(NULL, FALSE);
        g_usleep(10 * 1000);
    }
}

static gboolean
alive(gint64 pid)
{
    g_autofree gchar *path = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/stat", pid);
    g_autofree gchar *contents = NULL;
    const char *after;

    if (pid <= 0 || !g_file_get_contents(path, &contents, NULL, NULL))
        return FALSE;
    after = strrchr(contents, ')');
    return after != NULL && after[2] != 'Z';
}

static void
wait_gone(gint64 pid)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    while (alive(pid)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, FALSE);
        g_usleep(10 * 1000);
    }
}

/* The argument builder */

static void
test_args_layout(void)
{
    g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new("/usr/bin/bwrap");
    const char *const command[] = {"/usr/bin/jupyter-notebook", "--no-browser", NULL};
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) error = NULL;
    const char *const expected[] = {
        "/usr/bin/bwrap", "--ro-bind", "/usr", "/usr",
        "--symlink",      "usr/bin",   "/bin", "--unshare-net",
        "--chdir",        "/data dir", "--",   "/usr/bin/jupyter-notebook",
        "--no-browser",   NULL};

    einsora_bwrap_args_bind(args, "/usr", FALSE);
    einsora_bwrap_args_add_pair(args, "--symlink", "usr/bin", "/bin");
    einsora_bwrap_args_add_flag(args, "--unshare-net");
    /* A space stays inside its argument. */
    einsora_bwrap_args_add_path(args, "--chdir", "/data dir");
    g_assert_true(einsora_bwrap_args_set_command(args, command));
    g_assert_true(einsora_bwrap_args_check(args, &error));
    g_assert_no_error(error);
    argv = einsora_bwrap_args_to_strv(args);
    g_assert_cmpstrv(argv, expected);
}

static void
test_args_refuse_mistakes(void)
{
    const struct {
        const char *option;
        const char *source;
        const char *dest;
        const char *message;
    } cases[] = {
        {"--bind", "relative", "/x", "needs an absolute path"},
        {"--bind", "/x", "relative", "needs an absolute path"},
        {"--ro-bind", "/x", "", "needs an absolute path"},
        {"--share-net", "/x", "/y", "is not a bubblewrap option"},
        {"--chdir", "/x", "/y", "is not a bubblewrap option taking 2"},
        {"--symlink", "target", "relative", "needs an absolute path"},
    };
    const char *const command[] = {"/bin/true", NULL};

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new("/usr/bin/bwrap");
        g_autoptr(GError) error = NULL;

        einsora_bwrap_args_set_command(args, command);
        einsora_bwrap_args_add_pair(args, cases[i].option, cases[i].source, cases[i].dest);
        g_assert_false(einsora_bwrap_args_check(args, &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        g_assert_nonnull(strstr(error->message, cases[i].message));
    }
    {
        g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new("/usr/bin/bwrap");
        g_autoptr(GError) error = NULL;
        const char *const relative[] = {"jupyter", NULL};

        g_assert_false(einsora_bwrap_args_check(args, &error)); /* no command */
        g_clear_error(&error);
        g_assert_false(einsora_bwrap_args_set_command(args, relative));
        g_assert_false(einsora_bwrap_args_check(args, &error));
    }
    {
        g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new("bwrap");
        g_autoptr(GError) error = NULL;

        einsora_bwrap_args_set_command(args, command);
        g_assert_false(einsora_bwrap_args_check(args, &error));
    }
}

static void
test_args_fingerprint(void)
{
    const char *const command[] = {"/usr/bin/jupyter-notebook", NULL};
    const char *const pasta[] = {"/usr/bin/pasta", "--config-net", "--", NULL};
    g_autoptr(EinsoraBwrapArgs) a = einsora_bwrap_args_new("/usr/bin/bwrap");
    g_autoptr(EinsoraBwrapArgs) b = einsora_bwrap_args_new("/usr/bin/bwrap");
    g_autoptr(EinsoraBwrapArgs) c = einsora_bwrap_args_new("/usr/bin/bwrap");
    g_autofree gchar *fa = NULL, *fb = NULL, *fc = NULL, *fd = NULL;
    g_auto(GStrv) argv = NULL;

    einsora_bwrap_args_bind(a, "/data/a b", TRUE);
    einsora_bwrap_args_set_command(a, command);
    einsora_bwrap_args_bind(b, "/data/a b", TRUE);
    einsora_bwrap_args_set_command(b, command);
    /* The same words split differently are another sandbox. */
    einsora_bwrap_args_bind(c, "/data/a", TRUE);
    einsora_bwrap_args_set_command(c, command);
    fa = einsora_bwrap_args_fingerprint(a);
    fb = einsora_bwrap_args_fingerprint(b);
    fc = einsora_bwrap_args_fingerprint(c);
    g_assert_cmpuint(strlen(fa), ==, 64);
    g_assert_cmpstr(fa, ==, fb);
    g_assert_cmpstr(fa, !=, fc);
    einsora_bwrap_args_set_prefix(b, pasta);
    fd = einsora_bwrap_args_fingerprint(b);
    g_assert_cmpstr(fa, !=, fd);
    argv = einsora_bwrap_args_to_strv(b);
    g_assert_cmpstr(argv[0], ==, "/usr/bin/pasta");
    g_assert_cmpstr(argv[3], ==, "/usr/bin/bwrap");
}

/* The tree removal */

/* A link in the tree to a directory outside it goes as a link: what it
 * points to survives, as does the target of a tree that is itself a
 * link; a tree that isn't there is already removed. */
static void
test_safe_remove_links_not_followed(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *outside = g_build_filename(dir, "outside", NULL);
    g_autofree gchar *kept = g_build_filename(outside, "kept.txt", NULL);
    g_autofree gchar *tree = g_build_filename(dir, "tree", NULL);
    g_autofree gchar *nested = g_build_filename(tree, "a", "b", NULL);
    g_autofree gchar *file = g_build_filename(nested, "file", NULL);
    g_autofree gchar *link = g_build_filename(nested, "link-to-outside", NULL);
    g_autofree gchar *top_link = g_build_filename(dir, "top-link", NULL);
    g_autoptr(GError) error = NULL;
    struct stat st;

    g_assert_cmpint(g_mkdir(outside, 0700), ==, 0);
    g_assert_true(g_file_set_contents(kept, "not the notebook's", -1, NULL));
    g_assert_cmpint(g_mkdir_with_parents(nested, 0700), ==, 0);
    g_assert_true(g_file_set_contents(file, "x", -1, NULL));
    g_assert_cmpint(symlink(outside, link), ==, 0);

    g_assert_true(einsora_safe_remove_tree(tree, &error));
    g_assert_no_error(error);
    g_assert_cmpint(lstat(tree, &st), !=, 0);
    g_assert_true(g_file_test(kept, G_FILE_TEST_IS_REGULAR));

    g_assert_cmpint(symlink(outside, top_link), ==, 0);
    g_assert_true(einsora_safe_remove_tree(top_link, &error));
    g_assert_no_error(error);
    g_assert_cmpint(lstat(top_link, &st), !=, 0);
    g_assert_true(g_file_test(kept, G_FILE_TEST_IS_REGULAR));

    g_assert_true(einsora_safe_remove_tree(tree, &error));
    g_assert_no_error(error);
    einsora_test_dir_remove(dir);
}

/* The driver */

static void
test_run_dir_too_long(Fixture *f, gconstpointer data)
{
    g_autofree gchar *filler = g_strnfill(80, 'r');
    g_autofree gchar *long_dir = g_build_filename(f->dir, filler, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraNativeDriver) driver = NULL;

    f->config.run_dir = long_dir;
    driver = einsora_native_driver_new(&f->config, &error);
    g_assert_null(driver);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FILENAME_TOO_LONG);
    g_assert_nonnull(strstr(error->message, "EINSORA_AGENT_RUN_DIR"));
    g_assert_false(g_file_test(long_dir, G_FILE_TEST_EXISTS));
}

static void
test_missing_binaries(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    f->config.bwrap_path = "/nonexistent/bwrap";
    make_driver(f);
    g_assert_false(start(f, 1, &error));
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_DRIVER_MISSING);
    g_assert_cmpint(attempt, ==, 1);
    g_clear_error(&error);

    f->config.bwrap_path = NULL;
    f->config.jupyter_path = "/nonexistent/jupyter-notebook";
    make_driver(f);
    g_assert_false(start(f, 2, &error));
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_IMAGE_MISSING);
    g_assert_cmpint(attempt, ==, 2);
}

/* What the server sees from inside: the allowlisted environment with its
 * token, its data writable, the system read-only, its own /tmp, and
 * nothing of the host's home or network. */
static void
test_sandbox_from_inside(Fixture *f, gconstpointer data)
{
    g_autofree gchar *host_tmp = g_strdup_printf("/tmp/einsora-host-only-%d", getpid());
    g_autofree gchar *script = write_server_script(
        f, "look",
        "env | sort > \"$HOME/env.txt\"\n"
        "touch /usr/einsora-write-test 2>/dev/null && echo usr-writable >> \"$HOME/seen.txt\"\n"
        "touch /etc/einsora-write-test 2>/dev/null && echo etc-writable >> \"$HOME/seen.txt\"\n"
        "ls /tmp/einsora-host-only-* 2>/dev/null && echo host-tmp >> \"$HOME/seen.txt\"\n"
        "[ -e /root/.bashrc ] || [ -e /home ] && echo home >> \"$HOME/seen.txt\"\n"
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' > \"$HOME/net.txt\"\n"
        "echo $$ > \"$HOME/pid.txt\"\n"
        "touch \"$HOME/written\" && echo done >> \"$HOME/seen.txt\"\n"
        "exec sleep 600");
    g_autofree gchar *env_path = g_build_filename(f->workload_dir, "env.txt", NULL);
    g_autofree gchar *seen_path = g_build_filename(f->workload_dir, "seen.txt", NULL);
    g_autofree gchar *net_path = g_build_filename(f->workload_dir, "net.txt", NULL);
    g_autofree gchar *pid_path = g_build_filename(f->workload_dir, "pid.txt", NULL);
    g_autofree gchar *env = NULL, *seen = NULL, *net = NULL, *pid = NULL;
    g_autoptr(GError) error = NULL;
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    g_auto(GStrv) lines = NULL;

    g_assert_true(g_file_set_contents(host_tmp, "", 0, NULL));
    g_setenv("EINSORA_TEST_DAEMON_SECRET", "must-not-pass", TRUE);
    f->config.jupyter_path = script;
    make_driver(f);
    g_assert_true(start(f, 1, &error));
    g_assert_no_error(error);
    while (!g_file_get_contents(seen_path, &seen, NULL, NULL) || strstr(seen, "done") == NULL) {
        g_clear_pointer(&seen, g_free);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(20 * 1000);
    }
    g_unlink(host_tmp);
    g_unsetenv("EINSORA_TEST_DAEMON_SECRET");
    g_assert_cmpstr(seen, ==, "done\n");
    g_assert_true(g_file_get_contents(env_path, &env, NULL, NULL));
    g_assert_null(strstr(env, "EINSORA_TEST_DAEMON_SECRET"));
    g_assert_nonnull(strstr(env, "JUPYTER_TOKEN="));
    g_assert_nonnull(strstr(env, "JUPYTER_RUNTIME_DIR=/tmp/"));
    lines = g_strsplit(env, "\n", -1);
    for (guint i = 0; lines[i] != NULL && *lines[i] != '\0'; i++) {
        static const char *const allowed[] = {"HOME=",
                                              "JUPYTER_RUNTIME_DIR=",
                                              "JUPYTER_TOKEN=",
                                              "LANG=",
                                              "LOGNAME=",
                                              "PATH=",
                                              "PWD=",
                                              "PYTHONUNBUFFERED=",
                                              "SHELL=",
                                              "SHLVL=",
                                              "TERM=",
                                              "TZ=",
                                              "USER=",
                                              "_=",
                                              NULL};
        gboolean ok = FALSE;
        for (guint j = 0; allowed[j] != NULL; j++)
            ok = ok || g_str_has_prefix(lines[i], allowed[j]);
        if (!ok)
            g_error("%s is in the sandbox's environment", lines[i]);
    }
    /* Its own network namespace: loopback only. */
    g_assert_true(g_file_get_contents(net_path, &net, NULL, NULL));
    g_assert_cmpstr(g_strstrip(net), ==, "lo");
    /* Its own PID namespace: the script is a low PID there. */
    g_assert_true(g_file_get_contents(pid_path, &pid, NULL, NULL));
    g_assert_cmpint(atoi(pid), <, 10);
}

static void
test_never_ready(Fixture *f, gconstpointer data)
{
    g_autofree gchar *script = write_server_script(f, "silent", "exec sleep 600");
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0, pid;

    f->config.jupyter_path = script;
    make_driver(f);
    einsora_native_driver_set_ready_timeout(f->driver, 1500);
    g_assert_true(start(f, 1, &error));
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_STARTING);
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    g_assert_true(alive(pid));
    wait_for_status(f, EINSORA_STATUS_CODE_FAILED_TO_START);
    wait_gone(pid);
    /* Its data is kept: only a removal deletes it. */
    g_assert_true(g_file_test(f->workload_dir, G_FILE_TEST_IS_DIR));
}

/* A notebook can write the directory its socket is in: a link there to
 * another socket is never followed, so no token goes anywhere else. */
static void
test_socket_link_not_followed(Fixture *f, gconstpointer data)
{
    g_autofree gchar *decoy_path = g_build_filename(f->dir, "decoy.sock", NULL);
    g_autofree gchar *socket_path =
        g_build_filename(f->run_dir, f->id, EINSORA_NATIVE_SOCKET_NAME, NULL);
    g_autofree gchar *body =
        g_strdup_printf("ln -s '%s' '%s'\nexec sleep 600", decoy_path, socket_path);
    g_autofree gchar *script = write_server_script(f, "link", body);
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(decoy_path);
    g_autoptr(GSocket) decoy =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, NULL);
    g_autoptr(GSocket) accepted = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_true(g_socket_bind(decoy, address, TRUE, NULL));
    g_assert_true(g_socket_listen(decoy, NULL));
    g_socket_set_blocking(decoy, FALSE);
    f->config.jupyter_path = script;
    make_driver(f);
    einsora_native_driver_set_ready_timeout(f->driver, 1500);
    g_assert_true(start(f, 1, &error));
    wait_for_status(f, EINSORA_STATUS_CODE_FAILED_TO_START);
    g_assert_true(g_file_test(socket_path, G_FILE_TEST_IS_SYMLINK));
    accepted = g_socket_accept(decoy, NULL, &error);
    g_assert_null(accepted);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
}

static void
test_ends_before_ready(Fixture *f, gconstpointer data)
{
    g_autofree gchar *script = write_server_script(f, "crash", "exit 3");
    g_autoptr(GError) error = NULL;

    f->config.jupyter_path = script;
    make_driver(f);
    g_assert_true(start(f, 1, &error));
    wait_for_status(f, EINSORA_STATUS_CODE_FAILED_TO_START);
}

/* Readiness is asked when the server binds its socket, not on a poll:
 * while the stand-in holds back (until the test lets it go), hardly any
 * check is made; once it listens, it is running. The hold of 1.5 s would
 * have cost six checks at the former 250 ms poll; the fallback check for
 * a socket that never appears comes every 2 s, so even a slow machine
 * stays within the bound of three. */
static void
test_ready_when_socket_appears(Fixture *f, gconstpointer data)
{
    g_autofree gchar *socket_path =
        g_build_filename(f->run_dir, f->id, EINSORA_NATIVE_SOCKET_NAME, NULL);
    g_autofree gchar *server = g_build_filename(f->workload_dir, "server.py", NULL);
    g_autofree gchar *go = g_build_filename(f->workload_dir, "go", NULL);
    g_autofree gchar *body = g_strdup_printf("while [ ! -e \"$HOME/go\" ]; do sleep 0.02; done\n"
                                             "exec /usr/bin/python3 \"$HOME/server.py\" '%s'",
                                             socket_path);
    g_autofree gchar *script = write_server_script(f, "held", body);
    g_autoptr(GError) error = NULL;
    gint64 until;

    g_assert_true(
        g_file_set_contents(server,
                            "import http.server, socketserver, sys\n"
                            "class Status(http.server.BaseHTTPRequestHandler):\n"
                            "    def do_GET(self):\n"
                            "        self.send_response(200)\n"
                            "        self.send_header('Content-Length', '2')\n"
                            "        self.end_headers()\n"
                            "        self.wfile.write(b'{}')\n"
                            "    def address_string(self):\n"
                            "        return 'sandbox'\n"
                            "socketserver.UnixStreamServer(sys.argv[1], Status).serve_forever()\n",
                            -1, NULL));
    f->config.jupyter_path = script;
    make_driver(f);
    g_assert_true(start(f, 1, &error));
    g_assert_no_error(error);
    until = g_get_monotonic_time() + 1500 * G_TIME_SPAN_MILLISECOND;
    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(10 * 1000);
    }
    g_assert_cmpint(status(f, NULL), ==, EINSORA_STATUS_CODE_STARTING);
    g_assert_cmpuint(einsora_native_driver_count_ready_checks(f->driver), <=, 1);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    wait_for_status(f, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpuint(einsora_native_driver_count_ready_checks(f->driver), <=, 3);
}

/* The notebook server itself inside the sandbox (python3 running
 * jupyter-notebook), not the bwrap processes around it. */
static int
jupyter_in(gint64 leader)
{
    g_autoptr(GArray) tree = einsora_test_process_tree((int)leader);

    for (guint i = 0; i < tree->len; i++) {
        int pid = g_array_index(tree, int, i);
        g_autofree gchar *path = g_strdup_printf("/proc/%d/cmdline", pid);
        g_autofree gchar *cmdline = NULL;
        gsize length = 0;

        if (g_file_get_contents(path, &cmdline, &length, NULL) && length > 0 &&
            g_str_has_suffix(cmdline, "python3") &&
            strstr(cmdline + strlen(cmdline) + 1, "jupyter"))
            return pid;
    }
    return 0;
}

static void
wait_tree_gone(GArray *tree)
{
    for (guint i = 0; i < tree->len; i++)
        wait_gone(g_array_index(tree, int, i));
}

/* Debian's real Jupyter: ready over its socket, the way in only while
 * it runs, and each way it can end. */
static void
test_real_server(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *expected_socket =
        g_build_filename(f->run_dir, f->id, EINSORA_NATIVE_SOCKET_NAME, NULL);
    g_autoptr(GArray) tree = NULL;
    EinsoraAgentDriver *driver;
    gint64 attempt = 0, pid;
    int server;

    make_driver(f);
    driver = EINSORA_AGENT_DRIVER(f->driver);
    g_assert_true(start(f, 1, &error));
    g_assert_false(einsora_agent_driver_get_access(driver, f->id, NULL, &socket_path, &token));
    wait_for_status(f, EINSORA_STATUS_CODE_RUNNING);
    g_assert_true(einsora_agent_driver_get_access(driver, f->id, &attempt, &socket_path, &token));
    g_assert_cmpstr(socket_path, ==, expected_socket);
    g_assert_cmpuint(strlen(token), ==, 64);
    g_assert_cmpint(attempt, ==, 1);
    /* Starting the attempt again starts nothing. */
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    g_assert_true(start(f, 1, &error));
    g_assert_cmpint(einsora_test_recorded_pid(f->run_dir, f->id, NULL), ==, pid);

    /* The server killed by SIGKILL from nobody here: the out-of-memory
     * killer. bwrap passes it on as exit code 137. */
    tree = einsora_test_process_tree((int)pid);
    server = jupyter_in(pid);
    g_assert_cmpint(server, >, 0);
    kill(server, SIGKILL);
    wait_for_status(f, EINSORA_STATUS_CODE_OUT_OF_MEMORY);
    wait_tree_gone(tree);
    g_clear_pointer(&socket_path, g_free);
    g_clear_pointer(&token, g_free);
    g_assert_false(einsora_agent_driver_get_access(driver, f->id, NULL, &socket_path, &token));

    /* A new attempt that shuts down by itself (SIGTERM to the server
     * inside): it stopped by itself. */
    g_assert_true(start(f, 2, &error));
    wait_for_status(f, EINSORA_STATUS_CODE_RUNNING);
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    g_clear_pointer(&tree, g_array_unref);
    tree = einsora_test_process_tree((int)pid);
    kill(jupyter_in(pid), SIGTERM);
    wait_for_status(f, EINSORA_STATUS_CODE_EXITED);
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_EXITED);
    g_assert_cmpint(attempt, ==, 2);
    wait_tree_gone(tree);

    /* Only the outer bwrap killed: nothing of the sandbox outlives it. */
    g_assert_true(start(f, 3, &error));
    wait_for_status(f, EINSORA_STATUS_CODE_RUNNING);
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    g_clear_pointer(&tree, g_array_unref);
    tree = einsora_test_process_tree((int)pid);
    g_assert_cmpuint(tree->len, >=, 3);
    kill((pid_t)pid, SIGTERM);
    wait_for_status(f, EINSORA_STATUS_CODE_EXITED);
    wait_tree_gone(tree);
}

static void
test_stop_and_remove(Fixture *f, gconstpointer data)
{
    g_autofree gchar *script = write_server_script(f, "server", "exec sleep 600");
    g_autofree gchar *outside = g_build_filename(f->dir, "outside.txt", NULL);
    g_autofree gchar *link = g_build_filename(f->workload_dir, "link-to-outside", NULL);
    g_autofree gchar *run = g_build_filename(f->run_dir, f->id, NULL);
    g_autofree gchar *state = g_strdup_printf("%s/%s.state", f->run_dir, f->id);
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) listed = NULL;
    gint64 attempt = 0, pid;

    f->config.jupyter_path = script;
    g_assert_true(g_file_set_contents(outside, "not the notebook's", -1, NULL));
    g_assert_cmpint(symlink(outside, link), ==, 0);
    /* What a notebook can leave behind: a tree deeper than any path can
     * name, an unreadable directory, a name like the ones removal uses. */
    {
        g_autofree gchar *locked = g_build_filename(f->workload_dir, "locked", NULL);
        g_autofree gchar *lookalike =
            g_build_filename(f->workload_dir, ".einsora-deleting-0", NULL);
        g_autofree gchar *inside = g_build_filename(locked, "file", NULL);
        int dir = open(f->workload_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        for (guint level = 0; level < 2100; level++) {
            int next;
            g_assert_cmpint(mkdirat(dir, "aa", 0700), ==, 0);
            next = openat(dir, "aa", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            g_assert_cmpint(next, >=, 0);
            close(dir);
            dir = next;
        }
        g_assert_cmpint(symlinkat(outside, dir, "deep-link"), ==, 0);
        close(dir);
        g_assert_cmpint(g_mkdir(locked, 0700), ==, 0);
        g_assert_true(g_file_set_contents(inside, "x", -1, NULL));
        g_assert_cmpint(g_chmod(locked, 0), ==, 0);
        g_assert_cmpint(g_mkdir(lookalike, 0700), ==, 0);
    }
    make_driver(f);
    g_assert_true(start(f, 1, &error));
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    stop(f, FALSE);
    g_assert_false(alive(pid));
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_cmpint(attempt, ==, 1);
    g_assert_true(g_file_test(script, G_FILE_TEST_EXISTS));
    listed = einsora_agent_driver_list_workloads(EINSORA_AGENT_DRIVER(f->driver));
    g_assert_true(g_strv_contains((const char *const *)listed, f->id));

    /* A new driver (a restarted daemon) sees its data: stopped. */
    make_driver(f);
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_STOPPED);

    stop(f, TRUE);
    g_assert_cmpint(status(f, NULL), ==, EINSORA_STATUS_CODE_REMOVED);
    g_assert_false(g_file_test(f->workload_dir, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(run, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(state, G_FILE_TEST_EXISTS));
    /* The link went, not what it pointed to. */
    g_assert_true(g_file_test(outside, G_FILE_TEST_IS_REGULAR));
    g_clear_pointer(&listed, g_strfreev);
    listed = einsora_agent_driver_list_workloads(EINSORA_AGENT_DRIVER(f->driver));
    g_assert_false(g_strv_contains((const char *const *)listed, f->id));
}

/* A new driver adopts the same process when the sandbox is the same, and
 * stops it with sandbox-changed when it isn't; one that ended meanwhile
 * stopped by itself. */
static void
test_adoption(Fixture *f, gconstpointer data)
{
    g_autofree gchar *script = write_server_script(f, "server", "exec sleep 600");
    g_autofree gchar *other = write_server_script(f, "server-2", "exec sleep 600");
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0, pid;

    f->config.jupyter_path = script;
    make_driver(f);
    g_assert_true(start(f, 3, &error));
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);

    make_driver(f);
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_STARTING);
    g_assert_cmpint(attempt, ==, 3);
    g_assert_cmpint(einsora_test_recorded_pid(f->run_dir, f->id, NULL), ==, pid);
    g_assert_true(alive(pid));

    /* Another server binary is another sandbox. */
    f->config.jupyter_path = other;
    make_driver(f);
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_SANDBOX_CHANGED);
    g_assert_cmpint(attempt, ==, 3);
    wait_gone(pid);

    /* Started again under the new sandbox, then gone while no driver
     * watched: it stopped by itself. */
    g_assert_true(start(f, 4, &error));
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    g_clear_object(&f->driver);
    kill(-(pid_t)pid, SIGKILL);
    wait_gone(pid);
    make_driver(f);
    g_assert_cmpint(status(f, &attempt), ==, EINSORA_STATUS_CODE_EXITED);
    g_assert_cmpint(attempt, ==, 4);
}

/* GPUs: with a choice, its GPUs' nodes and the driver's shared ones, never
 * another GPU's (which may be another workload's); without one, every
 * node, as before; a chosen node that isn't there fails the start. */
static void
test_gpu_sandbox(void)
{
    g_autofree gchar *root = einsora_test_dir_new();
    g_autofree gchar *dev = g_build_filename(root, "dev", NULL);
    const char *const files[] = {"nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm"};
    const char *const chosen[] = {"nvidia2", NULL};
    const char *const missing[] = {"nvidia7", NULL};
    EinsoraNativeSandbox sandbox = {
        .bwrap_path = "/usr/bin/bwrap",
        .jupyter_path = "/usr/bin/jupyter-notebook",
        .device_root = root,
        .data_dir = "/data/w1",
        .run_dir = "/run/n/w1",
        .socket_path = "/run/n/w1/notebook.sock",
        .devices = 1,
        .gpu_nodes = chosen,
    };

    g_assert_cmpint(g_mkdir(dev, 0700), ==, 0);
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree gchar *path = g_build_filename(dev, files[i], NULL);
        g_assert_true(g_file_set_contents(path, "", 0, NULL));
    }
    for (guint pass = 0; pass < 2; pass++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraBwrapArgs) args = einsora_native_sandbox_build(&sandbox, &error);
        g_auto(GStrv) argv = NULL;
        g_autofree gchar *joined = NULL;
        g_autofree gchar *bind_0 = g_strdup_printf("--dev-bind %s/nvidia0 /dev/nvidia0 ", dev);
        g_autofree gchar *bind_2 = g_strdup_printf("--dev-bind %s/nvidia2 /dev/nvidia2 ", dev);
        g_autofree gchar *bind_ctl =
            g_strdup_printf("--dev-bind %s/nvidiactl /dev/nvidiactl ", dev);
        g_autofree gchar *bind_uvm =
            g_strdup_printf("--dev-bind %s/nvidia-uvm /dev/nvidia-uvm ", dev);

        g_assert_no_error(error);
        argv = einsora_bwrap_args_to_strv(args);
        joined = g_strjoinv(" ", argv);
        g_assert_nonnull(strstr(joined, bind_2));
        g_assert_nonnull(strstr(joined, bind_ctl));
        g_assert_nonnull(strstr(joined, bind_uvm));
        if (pass == 0)
            g_assert_null(strstr(joined, bind_0));
        else
            g_assert_nonnull(strstr(joined, bind_0));
        sandbox.gpu_nodes = NULL;
    }
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraBwrapArgs) args = NULL;

        sandbox.gpu_nodes = missing;
        args = einsora_native_sandbox_build(&sandbox, &error);
        g_assert_null(args);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    }
    einsora_test_dir_remove(root);
}

/* Endpoints: llama.cpp's llama-server */

/* An endpoint's sandbox: its model read-only, its run directory, no
 * network at all, no home, and no secret in its arguments. */
static void
test_endpoint_sandbox(void)
{
    const EinsoraEndpointSandbox sandbox = {
        .bwrap_path = "/usr/bin/bwrap",
        .llama_server_path = "/opt/llama/bin/llama-server",
        .model_path = "/data/models/blobs/sha256-ab",
        .model_name = "tiny:1m",
        .run_dir = "/run/e/w1",
        .socket_path = "/run/e/w1/endpoint.sock",
        .cpus = 2,
        .memory_mib = 4096,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraBwrapArgs) args = einsora_native_sandbox_build_endpoint(&sandbox, &error);
    g_auto(GStrv) argv = NULL;
    g_autofree gchar *joined = NULL;
    g_auto(GStrv) env = einsora_native_sandbox_endpoint_environment("k3y");

    g_assert_no_error(error);
    argv = einsora_bwrap_args_to_strv(args);
    joined = g_strjoinv(" ", argv);
    g_assert_nonnull(strstr(
        joined, " --ro-bind /data/models/blobs/sha256-ab " EINSORA_NATIVE_MODEL_IN_SANDBOX " "));
    g_assert_nonnull(strstr(joined, " --bind /run/e/w1 /run/e/w1 "));
    g_assert_nonnull(strstr(joined, " --unshare-net "));
    g_assert_nonnull(strstr(
        joined, " -- /opt/llama/bin/llama-server --model " EINSORA_NATIVE_MODEL_IN_SANDBOX
                " --alias tiny:1m --host /run/e/w1/endpoint.sock --threads 2 --threads-batch 2 "));
    g_assert_nonnull(strstr(joined, " --cache-ram 1024 "));
    g_assert_nonnull(strstr(joined, " --offline"));
    /* The server's own directory, under /opt, comes with the system's. */
    g_assert_null(strstr(joined, "--ro-bind /opt/llama/bin"));
    g_assert_null(strstr(joined, g_get_home_dir()));
    g_assert_null(strstr(joined, "k3y"));
    g_assert_true(g_strv_contains((const char *const *)env, "LLAMA_API_KEY=k3y"));
    g_assert_cmpuint(g_strv_length(env), ==, 4);
}

typedef struct {
    guint status;
    gchar *body;
} Answer;

static void
answer_clear(Answer *answer)
{
    g_clear_pointer(&answer->body, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Answer, answer_clear)

/* One request to llama-server on its socket, a fresh session each time. */
static void
endpoint_request(const char *socket_path, const char *method, const char *path, const char *key,
                 const char *body, Answer *answer)
{
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(socket_path);
    g_autoptr(SoupSession) session =
        soup_session_new_with_options("remote-connectable", address, "timeout", 60, NULL);
    g_autofree gchar *uri = g_strconcat("http://localhost", path, NULL);
    g_autoptr(SoupMessage) message = soup_message_new(method, uri);
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(GError) error = NULL;

    if (key != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("Bearer %s", key);
        soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                     authorization);
    }
    if (body != NULL) {
        g_autoptr(GBytes) content = g_bytes_new(body, strlen(body));
        soup_message_set_request_body_from_bytes(message, "application/json", content);
    }
    bytes = soup_session_send_and_read(session, message, NULL, &error);
    g_assert_no_error(error);
    answer->status = soup_message_get_status(message);
    answer->body = g_strndup(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
}

static EinsoraDesiredWorkload *
desired_endpoint(Fixture *f, gint64 attempt, const char *digest)
{
    EinsoraDesiredWorkload *workload = desired(f, attempt);

    workload->kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
    g_free(workload->image);
    workload->image = g_strdup("llama-cpp");
    workload->runtime_reference = g_strdup("llama-server");
    workload->model = g_strdup("tiny:1m");
    workload->model_digest = g_strdup(digest);
    return workload;
}

static gboolean
start_endpoint(Fixture *f, gint64 attempt, const char *digest, GError **error)
{
    g_autoptr(EinsoraDesiredWorkload) workload = desired_endpoint(f, attempt, digest);
    g_autoptr(GAsyncResult) result = NULL;

    einsora_agent_driver_start_async(EINSORA_AGENT_DRIVER(f->driver), workload, NULL, on_done,
                                     &result);
    wait_result(&result);
    return einsora_agent_driver_start_finish(EINSORA_AGENT_DRIVER(f->driver), result, error);
}

/* The real llama-server with a model made here: ready once the model is
 * loaded, its own API key required, the routes answering over its
 * socket; adopted by a restarted daemon; removed on stop, its model
 * kept; and its key in no log. */
static void
test_endpoint_real_server(Fixture *f, gconstpointer data)
{
    g_autofree gchar *llama = einsora_test_llama_server();
    g_autofree gchar *models = g_build_filename(f->dir, "models", NULL);
    g_autofree gchar *made = g_build_filename(f->dir, "tiny.gguf", NULL);
    g_autofree gchar *digest = NULL;
    g_autofree gchar *blob = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *key = NULL;
    g_autofree gchar *expected_socket =
        g_build_filename(f->run_dir, f->id, EINSORA_NATIVE_ENDPOINT_SOCKET_NAME, NULL);
    g_autofree gchar *run = g_build_filename(f->run_dir, f->id, NULL);
    g_autofree gchar *log_path = g_strdup_printf("%s/%s.log", f->run_dir, f->id);
    g_autofree gchar *log = NULL;
    g_autofree gchar *ban = NULL;
    g_autofree gchar *chat = NULL;
    g_autoptr(GError) error = NULL;
    g_auto(Answer) models_answer = {0};
    g_auto(Answer) refused = {0};
    g_auto(Answer) chat_answer = {0};
    EinsoraAgentDriver *driver;
    gint64 attempt = 0, pid;

    if (llama == NULL)
        return;
    einsora_test_llama_make_model(made);
    digest = einsora_test_llama_store_model(made, models);
    blob = g_strdup_printf("%s/blobs/sha256-%s", models, digest + strlen("sha256:"));
    f->config.llama_server_path = llama;
    f->config.models_dir = models;
    /* Endpoints keep no data: the fixture's data directory isn't one. */
    einsora_safe_remove_tree(f->workload_dir, NULL);
    make_driver(f);
    driver = EINSORA_AGENT_DRIVER(f->driver);

    /* A model the store doesn't have: image-missing, nothing started. */
    g_assert_false(start_endpoint(
        f, 1, "sha256:0000000000000000000000000000000000000000000000000000000000000000", &error));
    g_assert_nonnull(strstr(error->message, "isn't in this machine's model store"));
    g_assert_cmpint(status(f, NULL), ==, EINSORA_STATUS_CODE_IMAGE_MISSING);
    g_clear_error(&error);

    g_assert_true(start_endpoint(f, 2, digest, &error));
    g_assert_no_error(error);
    wait_for_status(f, EINSORA_STATUS_CODE_RUNNING);
    g_assert_true(einsora_agent_driver_get_access(driver, f->id, &attempt, &socket_path, &key));
    g_assert_cmpstr(socket_path, ==, expected_socket);
    g_assert_cmpuint(strlen(key), ==, 64);
    g_assert_cmpint(attempt, ==, 2);
    g_assert_false(g_file_test(f->workload_dir, G_FILE_TEST_EXISTS));

    endpoint_request(socket_path, "GET", "/v1/models", NULL, NULL, &refused);
    g_assert_cmpuint(refused.status, ==, 401);
    endpoint_request(socket_path, "GET", "/v1/models", key, NULL, &models_answer);
    g_assert_cmpuint(models_answer.status, ==, 200);
    g_assert_nonnull(strstr(models_answer.body, "\"tiny:1m\""));
    ban = einsora_test_llama_ban_bytes();
    chat = g_strdup_printf("{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}],"
                           " \"max_tokens\": 8, \"logit_bias\": %s}",
                           ban);
    endpoint_request(socket_path, "POST", "/v1/chat/completions", key, chat, &chat_answer);
    g_assert_cmpuint(chat_answer.status, ==, 200);
    g_assert_nonnull(strstr(chat_answer.body, "\"completion_tokens\":8"));

    /* A restarted daemon adopts it, finding its key in its environment. */
    pid = einsora_test_recorded_pid(f->run_dir, f->id, NULL);
    make_driver(f);
    driver = EINSORA_AGENT_DRIVER(f->driver);
    wait_for_status(f, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(einsora_test_recorded_pid(f->run_dir, f->id, NULL), ==, pid);
    {
        g_autofree gchar *again_socket = NULL;
        g_autofree gchar *again_key = NULL;

        g_assert_true(
            einsora_agent_driver_get_access(driver, f->id, NULL, &again_socket, &again_key));
        g_assert_cmpstr(again_key, ==, key);
    }

    /* Its key is in no log of its own. */
    g_assert_true(g_file_get_contents(log_path, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "model loaded"));
    g_assert_null(strstr(log, key));
    g_assert_null(strstr(log, key + 60));

    /* Stopping an endpoint removes it: its run files go, its model stays. */
    stop(f, TRUE);
    wait_gone(pid);
    g_assert_cmpint(status(f, NULL), ==, EINSORA_STATUS_CODE_REMOVED);
    g_assert_false(g_file_test(run, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(blob, G_FILE_TEST_IS_REGULAR));
}

static void
on_probed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static gchar *
probe_endpoints(Fixture *f, GError **error)
{
    g_autoptr(GAsyncResult) result = NULL;

    einsora_native_driver_probe_endpoints_async(&f->config, 30000, NULL, on_probed, &result);
    wait_result(&result);
    return einsora_native_driver_probe_endpoints_finish(result, error);
}

/* Whether this machine can serve endpoints: llama-server's version from
 * inside an endpoint's kind of sandbox, or why not. */
static void
test_endpoint_probe(Fixture *f, gconstpointer data)
{
    g_autofree gchar *llama = einsora_test_llama_server();
    g_autofree gchar *missing = g_build_filename(f->dir, "no-llama-server", NULL);
    g_autofree gchar *version = NULL;
    g_autoptr(GError) error = NULL;

    if (llama == NULL)
        return;
    f->config.llama_server_path = llama;
    version = probe_endpoints(f, &error);
    g_assert_no_error(error);
    g_assert_nonnull(version);
    g_assert_true(g_ascii_isdigit(version[0]));
    g_assert_null(strchr(version, '\n'));

    f->config.llama_server_path = missing;
    g_clear_pointer(&version, g_free);
    version = probe_endpoints(f, &error);
    g_assert_null(version);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, "EINSORA_LLAMA_SERVER"));
    g_clear_error(&error);

    /* Something that runs but isn't llama-server. */
    f->config.llama_server_path = "/bin/true";
    version = probe_endpoints(f, &error);
    g_assert_null(version);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
}

static gboolean
parse_activity(const char *status, const char *kernels, EinsoraWorkloadActivity *activity)
{
    g_autoptr(GBytes) a = g_bytes_new(status, strlen(status));
    g_autoptr(GBytes) b = g_bytes_new(kernels, strlen(kernels));
    g_autoptr(GError) error = NULL;
    gboolean ok = einsora_activity_parse_jupyter(a, b, activity, &error);

    g_assert_true(ok == (error == NULL));
    return ok;
}

/* What Jupyter's /api/status and /api/kernels say, as idle auto-stop
 * reads it: kernels not idle are busy (starting too), and the latest of
 * every last_activity. */
static void
test_activity_parse(void)
{
    EinsoraWorkloadActivity activity = {0};

    g_assert_true(parse_activity(
        "{\"connections\": 0, \"kernels\": 2, \"last_activity\": \"2026-12-03T14:02:00.250000Z\", "
        "\"started\": \"2026-12-03T14:00:00.000000Z\"}",
        "[{\"id\": \"a\", \"execution_state\": \"idle\", "
        "\"last_activity\": \"2026-12-03T14:05:00.500000Z\"},"
        " {\"id\": \"b\", \"execution_state\": \"busy\", "
        "\"last_activity\": \"2026-12-03T14:01:00.000000Z\"},"
        " {\"id\": \"c\", \"execution_state\": \"starting\"}]",
        &activity));
    g_assert_cmpint(activity.busy_kernels, ==, 2);
    /* 2026-12-03T14:05:00.500Z */
    g_assert_cmpint(activity.last_active_ms, ==, G_GINT64_CONSTANT(1796306700500));

    g_assert_true(parse_activity("{\"last_activity\": \"2026-12-03T14:02:00Z\"}", "[]", &activity));
    g_assert_cmpint(activity.busy_kernels, ==, 0);
    g_assert_cmpint(activity.last_active_ms, ==, G_GINT64_CONSTANT(1796306520000));
    /* Not Jupyter's: refused, and nothing read. */
    activity = (EinsoraWorkloadActivity){7, 7};
    g_assert_false(parse_activity("[]", "[]", &activity));
    g_assert_false(parse_activity("{}", "{\"kernels\": []}", &activity));
    g_assert_false(parse_activity("not json", "[]", &activity));
    g_assert_cmpint(activity.busy_kernels, ==, 7);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/native/args/layout", test_args_layout);
    g_test_add_func("/native/args/refuse-mistakes", test_args_refuse_mistakes);
    g_test_add_func("/native/args/fingerprint", test_args_fingerprint);
    g_test_add_func("/native/safe-remove/links-not-followed", test_safe_remove_links_not_followed);
    g_test_add_func("/native/endpoint/sandbox", test_endpoint_sandbox);
    g_test_add_func("/native/gpu/only-its-own-nodes", test_gpu_sandbox);
    g_test_add_func("/native/activity/jupyter-answers", test_activity_parse);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/native/run-dir-too-long", test_run_dir_too_long);
    ADD("/native/missing-binaries", test_missing_binaries);
    ADD("/native/sandbox-from-inside", test_sandbox_from_inside);
    ADD("/native/never-ready", test_never_ready);
    ADD("/native/ends-before-ready", test_ends_before_ready);
    ADD("/native/socket-link-not-followed", test_socket_link_not_followed);
    ADD("/native/ready-when-socket-appears", test_ready_when_socket_appears);
    ADD("/native/real-server", test_real_server);
    ADD("/native/stop-and-remove", test_stop_and_remove);
    ADD("/native/adoption", test_adoption);
    ADD("/native/endpoint/real-server", test_endpoint_real_server);
    ADD("/native/endpoint/probe", test_endpoint_probe);
#undef ADD
    return g_test_run();
}
