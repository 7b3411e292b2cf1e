/* Real notebooks end to end: the real einsora-daemon with the drivers it
 * finds working here (linux-native: Debian's Jupyter in bubblewrap), a
 * CPU notebook launched through /v1, then reached over its Unix socket
 * with its own token as the access proxy will: a kernel runs print(6*7)
 * over its WebSocket channel. Stop ends every process of it and keeps its
 * data; start runs a new server (new token) on the same data; delete
 * removes data and run files. A listener inside can't be reached from the
 * host, and a kill -9 of the daemon leaves the server running, adopted by
 * the next daemon with no new attempt. */
#include <errno.h>
#include <string.h>
#include <gio/gio.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "einsora-test-daemon.h"
#include "einsora-test-jupyter.h"

#define JSON "application/json"
#define CLASS "cpu-1c-2g"
#define IMAGE "jupyter-linux"

typedef struct {
    EinsoraTestDaemon *daemon;
    gchar *run_dir;
    gchar *notebooks_dir;
} Fixture;

static EinsoraTestResponse *
call(Fixture *f, const char *method, const char *path, const char *body)
{
    return einsora_test_request(f->daemon, method, path, f->daemon->owner_token, JSON, body, NULL);
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->daemon = einsora_test_daemon_new();
    /* No EINSORA_DRIVERS: the daemon uses the real drivers that work. */
    einsora_test_daemon_setenv(f->daemon, "EINSORA_DRIVERS", NULL);
    einsora_test_daemon_setenv(f->daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    /* Jupyter's activity read twice a second, not every 30 s. */
    einsora_test_daemon_setenv(f->daemon, "EINSORA_TEST_ACTIVITY_INTERVAL_MS", "500");
    f->run_dir = g_build_filename(f->daemon->dir, "run", NULL);
    f->notebooks_dir = g_build_filename(f->daemon->data_dir, "notebooks", NULL);
    einsora_test_daemon_start(f->daemon);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    einsora_test_daemon_stop(f->daemon);
    einsora_test_kill_recorded(f->run_dir);
    einsora_test_daemon_free(f->daemon);
    g_free(f->run_dir);
    g_free(f->notebooks_dir);
}

static JsonObject *
workload_of(EinsoraTestResponse *response)
{
    g_assert_nonnull(response->json);
    return json_node_get_object(response->json);
}

static gchar *
launch(Fixture *f, const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\": \"notebook\", \"gpu_class\": \"" CLASS
                                             "\", \"image\": \"" IMAGE "\", "
                                             "\"name\": \"%s\"}",
                                             name);
    g_autoptr(EinsoraTestResponse) response = call(f, "POST", "/v1/workloads", body);

    g_assert_cmpuint(response->status, ==, 201);
    return g_strdup(einsora_test_response_string(response, "id"));
}

static void
wait_for_state(Fixture *f, const char *id, const char *state)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);
        const char *now = einsora_test_response_string(response, "state");

        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline) {
            g_autofree gchar *log = einsora_test_daemon_read_log(f->daemon);
            g_error("workload %s is %s, not %s, after 60 s; daemon log:\n%s", id, now, state, log);
        }
        g_usleep(100 * 1000);
    }
}

static void
act(Fixture *f, const char *id, const char *action)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/%s", id, action);
    g_autoptr(EinsoraTestResponse) response = call(f, "POST", path, NULL);

    g_assert_cmpuint(response->status, ==, 202);
}

static guint
count_events(Fixture *f, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/events", id);
    g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);

    return json_array_get_length(
        json_object_get_array_member(json_node_get_object(response->json), "events"));
}

/* The server's process as its state file records it. */
static int
server_pid(Fixture *f, const char *id, guint64 *start_time)
{
    int pid = einsora_test_recorded_pid(f->run_dir, id, start_time);

    g_assert_cmpint(pid, >, 0);
    return pid;
}

static gchar *
socket_of(Fixture *f, const char *id)
{
    return g_build_filename(f->run_dir, id, "notebook.sock", NULL);
}

static void
test_lifecycle(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "e2e");
    g_autofree gchar *socket_path = socket_of(f, id);
    g_autofree gchar *data_dir = g_build_filename(f->notebooks_dir, id, NULL);
    g_autofree gchar *file = g_build_filename(data_dir, "hello.txt", NULL);
    g_autofree gchar *token = NULL;
    g_autofree gchar *second_token = NULL;
    g_autofree gchar *kernel = NULL;
    g_autofree gchar *printed = NULL;
    g_autofree gchar *contents = NULL;
    g_autofree gchar *log = NULL;
    g_autoptr(GArray) tree = NULL;
    struct stat st;
    int pid;

    wait_for_state(f, id, "running");
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
        g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);
        g_assert_cmpstr(json_object_get_string_member(workload_of(response), "driver"), ==,
                        "linux-native");
    }
    /* The socket is this user's only. */
    g_assert_cmpint(stat(socket_path, &st), ==, 0);
    g_assert_true(S_ISSOCK(st.st_mode));
    g_assert_cmpint(st.st_mode & 0777, ==, 0600);

    pid = server_pid(f, id, NULL);
    token = einsora_test_jupyter_token_of(pid);
    g_assert_nonnull(token);
    g_assert_cmpuint(strlen(token), ==, 64);
    g_assert_cmpuint(
        einsora_test_jupyter_request(socket_path, token, "GET", "/api/status", NULL, NULL), ==,
        200);
    g_assert_cmpuint(
        einsora_test_jupyter_request(socket_path, "wrong", "GET", "/api/status", NULL, NULL), ==,
        403);

    kernel = einsora_test_jupyter_start_kernel(socket_path, token);
    printed = einsora_test_jupyter_execute(socket_path, token, kernel, "print(6*7)");
    g_assert_cmpstr(printed, ==, "42\n");

    /* A file written through the notebook lands in its data directory. */
    g_assert_cmpuint(einsora_test_jupyter_request(
                         socket_path, token, "PUT", "/api/contents/hello.txt",
                         "{\"type\": \"file\", \"format\": \"text\", \"content\": \"kept\"}", NULL),
                     ==, 201);
    g_assert_true(g_file_get_contents(file, &contents, NULL, NULL));
    g_assert_cmpstr(contents, ==, "kept");

    /* Stop: every process of it is gone, the kernel included. */
    tree = einsora_test_process_tree(pid);
    g_assert_cmpuint(tree->len, >=, 4); /* bwrap, its init, the server, the kernel */
    act(f, id, "stop");
    wait_for_state(f, id, "stopped");
    for (guint i = 0; i < tree->len; i++) {
        gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
        while (einsora_test_process_alive(g_array_index(tree, int, i)))
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
    }
    g_assert_false(g_file_test(socket_path, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(file, G_FILE_TEST_IS_REGULAR));

    /* Start: a new server with a new token on the same data. */
    act(f, id, "start");
    wait_for_state(f, id, "running");
    g_assert_cmpint(server_pid(f, id, NULL), !=, pid);
    second_token = einsora_test_jupyter_token_of(server_pid(f, id, NULL));
    g_assert_nonnull(second_token);
    g_assert_cmpstr(second_token, !=, token);
    g_assert_cmpuint(
        einsora_test_jupyter_request(socket_path, token, "GET", "/api/status", NULL, NULL), ==,
        403);
    g_clear_pointer(&contents, g_free);
    g_assert_cmpuint(einsora_test_jupyter_request(socket_path, second_token, "GET",
                                                  "/api/contents/hello.txt", NULL, &contents),
                     ==, 200);
    g_assert_nonnull(strstr(contents, "\"kept\""));

    /* Delete: its data and its run files go. */
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
        g_autoptr(EinsoraTestResponse) response = call(f, "DELETE", path, NULL);
        g_assert_cmpuint(response->status, ==, 202);
    }
    wait_for_state(f, id, "deleted");
    {
        g_autofree gchar *run = g_build_filename(f->run_dir, id, NULL);
        g_autofree gchar *state = g_strdup_printf("%s/%s.state", f->run_dir, id);
        g_autofree gchar *server_log = g_strdup_printf("%s/%s.log", f->run_dir, id);
        g_assert_false(g_file_test(data_dir, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(run, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(state, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(server_log, G_FILE_TEST_EXISTS));
    }
    /* No token ever reached the daemon's log. */
    log = einsora_test_daemon_read_log(f->daemon);
    g_assert_null(strstr(log, token));
    g_assert_null(strstr(log, second_token));
}

static gchar *
logs_of(Fixture *f, const char *id, const char *query, const char *token, guint status,
        gint64 *attempt)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/logs%s%s", id,
                                             query != NULL ? "?" : "", query != NULL ? query : "");
    g_autoptr(EinsoraTestResponse) response = NULL;

    response = einsora_test_request(f->daemon, "GET", path, token, NULL, NULL, NULL);
    g_assert_cmpuint(response->status, ==, status);
    if (status == 200) {
        g_assert_cmpstr(soup_message_headers_get_content_type(response->headers, NULL), ==,
                        "text/plain");
        if (attempt != NULL)
            *attempt = g_ascii_strtoll(
                soup_message_headers_get_one(response->headers, "Einsora-Attempt"), NULL, 10);
    }
    return g_strdup(response->body);
}

static gchar *
read_file_or_empty(const char *path)
{
    gchar *text = NULL;
    return g_file_get_contents(path, &text, NULL, NULL) ? text : g_strdup("");
}

/* Waits until @path holds @needle (the CLI's output, the raw log). */
static void
wait_for_text(const char *path, const char *needle)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *text = read_file_or_empty(path);
        if (strstr(text, needle) != NULL)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("%s never held \"%s\"; it holds:\n%s", path, needle, text);
        g_usleep(100 * 1000);
    }
}

static guint
count_lines(const char *text)
{
    guint lines = 0;
    for (const char *c = text; *c != '\0'; c++)
        lines += *c == '\n';
    return lines;
}

/* The kernel's own stderr is its server's: what it writes there is in
 * the workload's output, as the server's start-up lines are. */
static void
kernel_prints(const char *socket_path, const char *token, const char *kernel, const char *text)
{
    g_autofree gchar *code =
        g_strdup_printf("import os\nos.write(2, b'%s\\n')\nprint('written')", text);
    g_autofree gchar *printed = einsora_test_jupyter_execute(socket_path, token, kernel, code);
    g_assert_cmpstr(printed, ==, "written\n");
}

/* GET /v1/workloads/{id}/logs and `einsora logs` with the real Jupyter:
 * its start-up output is there, its token never is, tail/since/attempt
 * choose, -f follows until the attempt ends, another tenant gets 404,
 * and a deleted workload's logs are gone. */
static void
test_logs(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "logs");
    g_autofree gchar *socket_path = socket_of(f, id);
    g_autofree gchar *raw_path = g_strdup_printf("%s/%s.log", f->run_dir, id);
    g_autofree gchar *cli_out = g_build_filename(f->daemon->dir, "cli-logs.txt", NULL);
    g_autofree gchar *token = NULL;
    g_autofree gchar *kernel = NULL;
    g_autofree gchar *leak = NULL;
    g_autofree gchar *logs = NULL;
    g_autofree gchar *other = NULL;
    g_autoptr(GSubprocessLauncher) launcher = NULL;
    g_autoptr(GSubprocess) cli = NULL;
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    wait_for_state(f, id, "running");
    token = einsora_test_jupyter_token_of(server_pid(f, id, NULL));
    g_assert_nonnull(token);
    kernel = einsora_test_jupyter_start_kernel(socket_path, token);
    /* As a notebook server prints its token at start, and bare. */
    leak = g_strdup_printf("open http://127.0.0.1:8888/lab?token=%s\\nbare %s end\\nmarker-one",
                           token, token);
    kernel_prints(socket_path, token, kernel, leak);
    wait_for_text(raw_path, "marker-one");
    {
        /* The file has it in clear: only what leaves the daemon is redacted. */
        g_autofree gchar *raw = read_file_or_empty(raw_path);
        g_assert_nonnull(strstr(raw, token));
    }

    logs = logs_of(f, id, NULL, f->daemon->owner_token, 200, &attempt);
    g_assert_cmpint(attempt, ==, 1);
    /* Jupyter's own start-up lines (Debian 12's is Notebook 6.4, which
     * names no token for a Unix socket: the kernel's line above is the
     * token a server prints). */
    g_assert_nonnull(strstr(logs, "NotebookApp] Jupyter Notebook"));
    g_assert_nonnull(strstr(logs, "is running at"));
    g_assert_nonnull(strstr(logs, "marker-one"));
    g_assert_nonnull(strstr(logs, "bare [redacted] end"));
    g_assert_nonnull(strstr(logs, "lab?token=[redacted]"));
    g_assert_null(strstr(logs, token));
    g_clear_pointer(&logs, g_free);

    logs = logs_of(f, id, "tail=2", f->daemon->owner_token, 200, NULL);
    g_assert_cmpuint(count_lines(logs), ==, 2);
    g_clear_pointer(&logs, g_free);
    logs = logs_of(f, id, "since=2m", f->daemon->owner_token, 200, NULL);
    g_assert_nonnull(strstr(logs, "marker-one"));
    g_clear_pointer(&logs, g_free);
    logs = logs_of(f, id, "since=2100-01-01T00:00:00Z", f->daemon->owner_token, 200, NULL);
    g_assert_cmpstr(logs, ==, "");
    g_clear_pointer(&logs, g_free);
    g_free(logs_of(f, id, "since=yesterday", f->daemon->owner_token, 400, NULL));
    g_free(logs_of(f, id, "attempt=2", f->daemon->owner_token, 400, NULL));
    g_free(logs_of(f, id, "tail=-1", f->daemon->owner_token, 400, NULL));

    /* einsora logs -f: what is there, then what comes, until the attempt ends. */
    launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", f->daemon->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", f->daemon->owner_token, TRUE);
    g_subprocess_launcher_set_stdout_file_path(launcher, cli_out);
    cli = g_subprocess_launcher_spawn(launcher, &error, g_getenv("EINSORA_CLI"), "logs", "-f",
                                      "--tail", "3", id, NULL);
    g_assert_no_error(error);
    wait_for_text(cli_out, "marker-one");
    kernel_prints(socket_path, token, kernel, "marker-two");
    wait_for_text(cli_out, "marker-two");
    act(f, id, "stop");
    wait_for_state(f, id, "stopped");
    g_assert_true(g_subprocess_wait(cli, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(cli));
    g_assert_cmpint(g_subprocess_get_exit_status(cli), ==, 0);
    {
        g_autofree gchar *printed = read_file_or_empty(cli_out);
        g_assert_null(strstr(printed, token));
        g_assert_nonnull(strstr(printed, "bare [redacted] end"));
    }

    /* A new attempt has its own output; the first one's is kept. */
    act(f, id, "start");
    wait_for_state(f, id, "running");
    logs = logs_of(f, id, NULL, f->daemon->owner_token, 200, &attempt);
    g_assert_cmpint(attempt, ==, 2);
    g_assert_null(strstr(logs, "marker-one"));
    g_clear_pointer(&logs, g_free);
    logs = logs_of(f, id, "attempt=1", f->daemon->owner_token, 200, &attempt);
    g_assert_cmpint(attempt, ==, 1);
    g_assert_nonnull(strstr(logs, "marker-two"));
    g_assert_null(strstr(logs, token));
    g_clear_pointer(&logs, g_free);

    /* Another tenant's workload is not there at all. */
    einsora_test_daemon_stop(f->daemon);
    other = einsora_test_daemon_create_account(f->daemon, "other", "other@example.com",
                                               "another long passphrase");
    einsora_test_daemon_start(f->daemon);
    wait_for_state(f, id, "running");
    g_free(logs_of(f, id, NULL, other, 404, NULL));
    g_free(logs_of(f, id, "follow=true", other, 404, NULL));
    /* After the daemon's restart the output is read as before. */
    logs = logs_of(f, id, "attempt=1", f->daemon->owner_token, 200, NULL);
    g_assert_nonnull(strstr(logs, "marker-two"));
    g_clear_pointer(&logs, g_free);

    /* Deleted: its logs went with its data, and the answer says so. */
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
        g_autoptr(EinsoraTestResponse) response = call(f, "DELETE", path, NULL);
        g_assert_cmpuint(response->status, ==, 202);
    }
    wait_for_state(f, id, "deleted");
    logs = logs_of(f, id, NULL, f->daemon->owner_token, 404, NULL);
    g_assert_nonnull(strstr(logs, "deleted, and its logs with its data"));
    g_assert_false(g_file_test(raw_path, G_FILE_TEST_EXISTS));
    {
        g_autofree gchar *archived = g_strdup_printf("%s/%s.attempt-1.log", f->run_dir, id);
        g_assert_false(g_file_test(archived, G_FILE_TEST_EXISTS));
    }
    {
        g_autofree gchar *log = einsora_test_daemon_read_log(f->daemon);
        g_assert_null(strstr(log, token));
    }
}

/* Idle auto-stop with the real Jupyter: a kernel kept busy past the
 * limit keeps its notebook running; once it is idle for the limit, the
 * notebook is stopped with a reason that says so, its data kept. */
static void
test_idle_stop(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTestResponse) created =
        call(f, "POST", "/v1/workloads",
             "{\"kind\": \"notebook\", \"gpu_class\": \"" CLASS "\", \"image\": \"" IMAGE "\", "
             "\"name\": \"idle\", \"idle_timeout\": 8}");
    const char *id = einsora_test_response_string(created, "id");
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *kernel = NULL;
    g_autofree gchar *events_path = NULL;
    g_autoptr(EinsoraTestResponse) events = NULL;
    gint64 busy_until;

    g_assert_cmpuint(created->status, ==, 201);
    g_assert_cmpint(json_object_get_int_member(workload_of(created), "idle_timeout"), ==, 8);
    socket_path = socket_of(f, id);
    wait_for_state(f, id, "running");
    token = einsora_test_jupyter_token_of(server_pid(f, id, NULL));
    kernel = einsora_test_jupyter_start_kernel(socket_path, token);
    /* Busy for 16 s: twice its limit. */
    einsora_test_jupyter_send_code(socket_path, token, kernel, "import time\ntime.sleep(16)");
    busy_until = g_get_monotonic_time() + 16 * G_USEC_PER_SEC;
    g_usleep(12 * G_USEC_PER_SEC);
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
        g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);
        g_assert_cmpstr(einsora_test_response_string(response, "state"), ==, "running");
    }
    /* Then idle: stopped, some 8 s after its kernel finished. */
    wait_for_state(f, id, "stopped");
    g_assert_cmpint(g_get_monotonic_time(), >=, busy_until);
    events_path = g_strdup_printf("/v1/workloads/%s/events", id);
    events = call(f, "GET", events_path, NULL);
    g_assert_nonnull(strstr(events->body, "stopped after 8s idle: no activity since "));
    {
        g_autofree gchar *data_dir = g_build_filename(f->notebooks_dir, id, NULL);
        g_assert_true(g_file_test(data_dir, G_FILE_TEST_IS_DIR));
    }
}

static gboolean
can_connect(int port)
{
    struct sockaddr_in address = {0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    gboolean connected;

    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected = connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    close(fd);
    return connected;
}

/* A listener a kernel opens, on any address, is reachable inside its
 * sandbox and nowhere else. */
static void
test_listener_unreachable(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "listener");
    g_autofree gchar *socket_path = socket_of(f, id);
    g_autofree gchar *token = NULL;
    g_autofree gchar *kernel = NULL;
    g_autofree gchar *printed = NULL;
    g_auto(GStrv) lines = NULL;
    int port;

    wait_for_state(f, id, "running");
    token = einsora_test_jupyter_token_of(server_pid(f, id, NULL));
    kernel = einsora_test_jupyter_start_kernel(socket_path, token);
    printed = einsora_test_jupyter_execute(
        socket_path, token, kernel,
        "import socket\n"
        "listener = socket.socket()\n"
        "listener.bind(('0.0.0.0', 0))\n"
        "listener.listen()\n"
        "port = listener.getsockname()[1]\n"
        "print(port)\n"
        "inside = socket.create_connection(('127.0.0.1', port), timeout=5)\n"
        "print('reachable inside')\n");
    lines = g_strsplit(printed, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), >=, 2);
    port = atoi(lines[0]);
    g_assert_cmpint(port, >, 0);
    g_assert_cmpstr(lines[1], ==, "reachable inside");
    g_assert_false(can_connect(port));
}

/* kill -9 of the daemon: the server keeps running, and the next daemon
 * adopts that same process (same PID, same start time) with no new
 * attempt; the workload stays running throughout. */
static void
test_adopted_after_kill(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "adopted");
    g_autofree gchar *path = NULL;
    g_autofree gchar *log = NULL;
    guint64 start_time = 0, after_start_time = 0;
    guint events;
    int pid;

    wait_for_state(f, id, "running");
    pid = server_pid(f, id, &start_time);
    events = count_events(f, id);

    einsora_test_daemon_kill(f->daemon);
    g_assert_true(einsora_test_process_alive(pid));
    einsora_test_daemon_start(f->daemon);

    /* The agent reports it running again once the server answers. */
    {
        gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
        for (;;) {
            g_clear_pointer(&log, g_free);
            log = einsora_test_daemon_read_log(f->daemon);
            if (strstr(log, "adopted its running server") != NULL)
                break;
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_usleep(100 * 1000);
        }
    }
    g_usleep(2 * G_USEC_PER_SEC); /* a few controller passes */
    g_assert_cmpint(server_pid(f, id, &after_start_time), ==, pid);
    g_assert_cmpuint(after_start_time, ==, start_time);
    g_assert_cmpuint(einsora_test_process_start_time(pid), ==, start_time);
    g_assert_true(einsora_test_process_alive(pid));
    path = g_strdup_printf("/v1/workloads/%s", id);
    {
        g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);
        g_assert_cmpstr(einsora_test_response_string(response, "state"), ==, "running");
        g_assert_cmpint(json_object_get_int_member(workload_of(response), "attempt"), ==, 1);
    }
    g_assert_cmpuint(count_events(f, id), ==, events);
    {
        g_autofree gchar *socket_path = socket_of(f, id);
        g_autofree gchar *token = einsora_test_jupyter_token_of(pid);
        g_assert_cmpuint(
            einsora_test_jupyter_request(socket_path, token, "GET", "/api/status", NULL, NULL), ==,
            200);
    }
    {
        g_autoptr(EinsoraTestResponse) response = call(f, "DELETE", path, NULL);
        g_assert_cmpuint(response->status, ==, 202);
    }
    wait_for_state(f, id, "deleted");
    g_assert_false(einsora_test_process_alive(pid));
}

/* The access link opens the real notebook through the proxy: its UI, its
 * API, and a kernel over the WebSocket; the browser never sees the
 * workload's token, and no ticket, cookie or token reaches the log. */
static void
test_open_through_proxy(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "opened");
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/access", id);
    g_autofree gchar *host = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *ticket = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *body = NULL;
    g_autofree gchar *kernel = NULL;
    g_autofree gchar *printed = NULL;
    g_autofree gchar *log = NULL;
    g_autoptr(GHashTable) headers = NULL;
    g_autoptr(EinsoraTestResponse) access = NULL;
    const char *url;
    EinsoraTestJupyterVia via = {NULL, NULL, 0, NULL, NULL};

    wait_for_state(f, id, "running");
    token = einsora_test_jupyter_token_of(server_pid(f, id, NULL));
    access = call(f, "POST", path, NULL);
    g_assert_cmpuint(access->status, ==, 201);
    url = einsora_test_response_string(access, "url");
    host = g_strdup_printf("w-%s.localhost:%u", id, f->daemon->access_port);
    g_assert_true(g_str_has_prefix(url, "http://"));
    g_assert_true(g_str_has_prefix(url + strlen("http://"), host));
    g_assert_null(strstr(access->body, token));
    ticket = g_strdup(strstr(url, "ticket=") + strlen("ticket="));

    via.proxy_port = f->daemon->access_port;
    via.host = host;
    {
        g_autofree gchar *open_path = g_strdup_printf("/_einsora/open?ticket=%s", ticket);
        g_auto(GStrv) parts = NULL;
        g_assert_cmpuint(
            einsora_test_jupyter_request_via(&via, "GET", open_path, NULL, &body, &headers), ==,
            200);
        parts = g_strsplit(g_hash_table_lookup(headers, "set-cookie"), ";", 2);
        cookie = g_strdup(parts[0]);
        g_clear_pointer(&body, g_free);
        g_clear_pointer(&headers, g_hash_table_unref);
    }
    via.cookie = cookie;
    /* The notebook's own UI, through the proxy. */
    g_assert_cmpuint(einsora_test_jupyter_request_via(&via, "GET", "/tree", NULL, &body, &headers),
                     ==, 200);
    g_assert_nonnull(strstr(body, "Jupyter"));
    g_assert_null(strstr(body, token));
    {
        GHashTableIter iter;
        gpointer value;
        g_hash_table_iter_init(&iter, headers);
        while (g_hash_table_iter_next(&iter, NULL, &value))
            g_assert_null(strstr(value, token));
    }
    g_clear_pointer(&body, g_free);
    g_assert_cmpuint(einsora_test_jupyter_request_via(&via, "POST", "/api/kernels",
                                                      "{\"name\": \"python3\"}", &body, NULL),
                     ==, 201);
    {
        g_autoptr(JsonNode) node = json_from_string(body, NULL);
        kernel = g_strdup(json_object_get_string_member(json_node_get_object(node), "id"));
    }
    printed = einsora_test_jupyter_execute_via(&via, kernel, "print(6*7)");
    g_assert_cmpstr(printed, ==, "42\n");

    log = einsora_test_daemon_read_log(f->daemon);
    g_assert_null(strstr(log, token));
    g_assert_null(strstr(log, ticket));
    g_assert_null(strstr(log, strchr(cookie, '=') + 1));
}

/* The browser's side of the proxy, with whatever a test wants to send. */
static guint
proxy_get(Fixture *f, const char *host, const char *path, const char *const *headers,
          gchar **set_cookie)
{
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) address =
        g_inet_socket_address_new(loopback, (guint16)f->daemon->access_port);
    g_autoptr(SoupSession) session =
        soup_session_new_with_options("remote-connectable", address, "timeout", 30, NULL);
    g_autofree gchar *uri = g_strdup_printf("http://%s%s", host, path);
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GBytes) body = NULL;

    g_assert_nonnull(message);
    soup_message_add_flags(message, SOUP_MESSAGE_NO_REDIRECT);
    for (guint i = 0; headers != NULL && headers[i] != NULL; i += 2)
        soup_message_headers_replace(soup_message_get_request_headers(message), headers[i],
                                     headers[i + 1]);
    body = soup_session_send_and_read(session, message, NULL, NULL);
    if (set_cookie != NULL) {
        const char *value =
            soup_message_headers_get_one(soup_message_get_response_headers(message), "Set-Cookie");
        g_auto(GStrv) parts = value != NULL ? g_strsplit(value, ";", 2) : NULL;
        *set_cookie = parts != NULL ? g_strdup(parts[0]) : NULL;
    }
    return soup_message_get_status(message);
}

static gchar *
ticket_for(Fixture *f, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/access", id);
    g_autoptr(EinsoraTestResponse) access = call(f, "POST", path, NULL);
    const char *url;

    g_assert_cmpuint(access->status, ==, 201);
    url = einsora_test_response_string(access, "url");
    return g_strdup(strstr(url, "ticket=") + strlen("ticket="));
}

static guint
open_ticket(Fixture *f, const char *host, const char *ticket, gchar **cookie)
{
    g_autofree gchar *path = g_strdup_printf("/_einsora/open?ticket=%s", ticket);
    const char *headers[] = {"Sec-Fetch-Site", "cross-site", NULL};

    return proxy_get(f, host, path, headers, cookie);
}

/* Every refusal the access proxy owes, against the real daemon and two
 * real notebooks. */
static void
test_proxy_refusals(Fixture *f, gconstpointer data)
{
    g_autofree gchar *a = launch(f, "a");
    g_autofree gchar *b = launch(f, "b");
    g_autofree gchar *host_a = NULL, *host_b = NULL;
    g_autofree gchar *cookie_a = NULL;
    g_autofree gchar *ticket = NULL;
    g_autofree gchar *none = NULL;

    wait_for_state(f, a, "running");
    wait_for_state(f, b, "running");
    host_a = g_strdup_printf("w-%s.localhost:%u", a, f->daemon->access_port);
    host_b = g_strdup_printf("w-%s.localhost:%u", b, f->daemon->access_port);

    /* A ticket opens once. */
    ticket = ticket_for(f, a);
    g_assert_cmpuint(open_ticket(f, host_a, ticket, &cookie_a), ==, 200);
    g_assert_nonnull(cookie_a);
    g_assert_cmpuint(open_ticket(f, host_a, ticket, &none), ==, 403);
    g_assert_null(none);
    g_clear_pointer(&ticket, g_free);

    /* A ticket at another workload's host: refused, and spent. */
    ticket = ticket_for(f, a);
    g_assert_cmpuint(open_ticket(f, host_b, ticket, NULL), ==, 403);
    g_assert_cmpuint(open_ticket(f, host_a, ticket, NULL), ==, 403);
    g_clear_pointer(&ticket, g_free);

    /* An expired ticket (aged in the database: a minute is long here). */
    ticket = ticket_for(f, a);
    {
        g_autofree gchar *db_path = g_build_filename(f->daemon->data_dir, "einsora.db", NULL);
        sqlite3 *db = NULL;
        g_assert_cmpint(sqlite3_open(db_path, &db), ==, SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        g_assert_cmpint(sqlite3_exec(db,
                                     "UPDATE access_tickets SET expires_at = "
                                     "'2000-01-01T00:00:00.000000Z'",
                                     NULL, NULL, NULL),
                        ==, SQLITE_OK);
        sqlite3_close(db);
    }
    g_assert_cmpuint(open_ticket(f, host_a, ticket, NULL), ==, 403);

    /* Hosts that aren't a workload's. */
    {
        const char *hosts[] = {"evil.example", "127.0.0.1", "localhost", NULL};
        for (guint i = 0; hosts[i] != NULL; i++) {
            const char *headers[] = {"Cookie", cookie_a, NULL};
            g_assert_cmpuint(proxy_get(f, hosts[i], "/api/status", headers, NULL), ==, 421);
        }
    }
    /* A foreign Origin, and a browser saying cross-site. */
    {
        const char *origin[] = {"Cookie", cookie_a, "Origin", "http://evil.example", NULL};
        const char *site[] = {"Cookie", cookie_a, "Sec-Fetch-Site", "cross-site", NULL};
        const char *fine[] = {"Cookie", cookie_a, NULL};
        g_assert_cmpuint(proxy_get(f, host_a, "/api/status", origin, NULL), ==, 403);
        g_assert_cmpuint(proxy_get(f, host_a, "/api/status", site, NULL), ==, 403);
        g_assert_cmpuint(proxy_get(f, host_a, "/api/status", fine, NULL), ==, 200);
    }
    /* A's cookie at B's host. */
    {
        const char *headers[] = {"Cookie", cookie_a, NULL};
        g_assert_cmpuint(proxy_get(f, host_b, "/api/status", headers, NULL), ==, 403);
    }
    /* Stopped, then started: the old session opens nothing. */
    act(f, a, "stop");
    wait_for_state(f, a, "stopped");
    act(f, a, "start");
    wait_for_state(f, a, "running");
    {
        const char *headers[] = {"Cookie", cookie_a, NULL};
        g_assert_cmpuint(proxy_get(f, host_a, "/api/status", headers, NULL), ==, 404);
        g_assert_cmpuint(proxy_get(f, host_a, "/api/status", headers, NULL), ==, 403);
    }
}

/* A second daemon (another data directory) pointed at the same run
 * directory leaves the first one's notebooks alone: it doesn't use the
 * linux-native driver, and says why. */
static void
test_run_dir_shared(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "kept");
    g_autoptr(EinsoraTestDaemon) other = einsora_test_daemon_new();
    g_autofree gchar *log = NULL;
    int pid;

    wait_for_state(f, id, "running");
    pid = server_pid(f, id, NULL);
    einsora_test_daemon_setenv(other, "EINSORA_DRIVERS", NULL);
    einsora_test_daemon_setenv(other, "EINSORA_AGENT_RUN_DIR", f->run_dir);
    einsora_test_daemon_start(other);
    g_usleep(G_USEC_PER_SEC);
    log = einsora_test_daemon_read_log(other);
    g_assert_nonnull(strstr(log, "the linux-native driver doesn't work here: "
                                 "EINSORA_AGENT_RUN_DIR (--agent-run-dir): another Einsora agent"));
    einsora_test_daemon_stop(other);
    g_assert_true(einsora_test_process_alive(pid));
    g_assert_cmpint(server_pid(f, id, NULL), ==, pid);
    wait_for_state(f, id, "running");
}

static EinsoraTestResponse *
call_as(Fixture *f, const char *token, const char *method, const char *path, const char *body)
{
    return einsora_test_request(f->daemon, method, path, token, body != NULL ? JSON : NULL, body,
                                NULL);
}

static const char *
state_as(Fixture *f, const char *token, const char *id, EinsoraTestResponse **response)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);

    *response = call_as(f, token, "GET", path, NULL);
    return einsora_test_response_string(*response, "state");
}

/* A Lab's guest on the owner's machine (docs/adr/0050): while the machine
 * is private the guest's notebook waits; shared, it runs there in
 * bubblewrap (its own mount namespace); the owner sees what guests hold
 * but not the guest's workload, and the guest never sees the machine. */
static void
test_guest_on_shared_machine(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTestResponse) made =
        call(f, "POST", "/v1/admin/accounts",
             "{\"email\":\"guest@lab.example\",\"new_tenant\":\"guests\"}");
    g_autoptr(EinsoraTestResponse) launched = NULL;
    g_autoptr(EinsoraTestResponse) machines = NULL;
    g_autoptr(EinsoraTestResponse) shared = NULL;
    g_autofree gchar *guest = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *machine_path = NULL;
    g_autofree gchar *sharing_path = NULL;
    g_autofree gchar *workload_path = NULL;
    gint64 deadline;

    g_assert_cmpuint(made->status, ==, 201);
    guest = g_strdup(einsora_test_response_string(made, "secret"));
    launched = call_as(f, guest, "POST", "/v1/workloads",
                       "{\"kind\": \"notebook\", \"gpu_class\": \"" CLASS "\", \"image\": \"" IMAGE
                       "\", \"name\": \"visitor\"}");
    g_assert_cmpuint(launched->status, ==, 201);
    id = g_strdup(einsora_test_response_string(launched, "id"));
    workload_path = g_strdup_printf("/v1/workloads/%s", id);

    /* Private: it waits (a few controller passes). */
    g_usleep(2 * G_USEC_PER_SEC);
    {
        g_autoptr(EinsoraTestResponse) now = NULL;
        const char *state = state_as(f, guest, id, &now);
        g_assert_true(g_strcmp0(state, "pending") == 0 || g_strcmp0(state, "queued") == 0);
    }

    machines = call(f, "GET", "/v1/machines", NULL);
    machine_id = g_strdup(json_object_get_string_member(
        json_array_get_object_element(
            json_object_get_array_member(json_node_get_object(machines->json), "machines"), 0),
        "id"));
    machine_path = g_strdup_printf("/v1/machines/%s", machine_id);
    sharing_path = g_strdup_printf("/v1/machines/%s/sharing", machine_id);
    {
        g_autoptr(EinsoraTestResponse) not_theirs =
            call_as(f, guest, "PUT", sharing_path, "{\"sharing\":\"community\"}");
        g_autoptr(EinsoraTestResponse) unseen = call_as(f, guest, "GET", machine_path, NULL);
        g_assert_cmpuint(not_theirs->status, ==, 404);
        g_assert_cmpuint(unseen->status, ==, 404);
    }
    shared = call(f, "PUT", sharing_path, "{\"sharing\":\"community\"}");
    g_assert_cmpuint(shared->status, ==, 200);
    g_assert_cmpstr(einsora_test_response_string(shared, "sharing"), ==, "community");

    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (;;) {
        g_autoptr(EinsoraTestResponse) now = NULL;
        if (g_strcmp0(state_as(f, guest, id, &now), "running") == 0)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100 * 1000);
    }
    /* In bubblewrap: the recorded process is bwrap, and what it runs is
     * in a mount namespace of its own. */
    {
        int pid = server_pid(f, id, NULL);
        g_autofree gchar *children_path = g_strdup_printf("/proc/%d/task/%d/children", pid, pid);
        g_autofree gchar *cmdline_path = g_strdup_printf("/proc/%d/cmdline", pid);
        g_autofree gchar *children = NULL;
        g_autofree gchar *cmdline = NULL;
        g_autofree gchar *ns = NULL;
        g_autofree gchar *theirs = NULL;
        g_autofree gchar *ours = g_file_read_link("/proc/self/ns/mnt", NULL);

        g_assert_true(g_file_get_contents(cmdline_path, &cmdline, NULL, NULL));
        g_assert_true(g_str_has_suffix(cmdline, "bwrap"));
        g_assert_true(g_file_get_contents(children_path, &children, NULL, NULL));
        g_assert_cmpint(atoi(children), >, 0);
        ns = g_strdup_printf("/proc/%d/ns/mnt", atoi(children));
        theirs = g_file_read_link(ns, NULL);
        g_assert_nonnull(theirs);
        g_assert_cmpstr(theirs, !=, ours);
    }
    {
        g_autoptr(EinsoraTestResponse) owner_view = call(f, "GET", machine_path, NULL);
        g_autoptr(EinsoraTestResponse) hidden = call(f, "GET", workload_path, NULL);
        JsonObject *guests =
            json_object_get_object_member(json_node_get_object(owner_view->json), "guests");
        g_assert_cmpint(json_object_get_int_member(guests, "workloads"), ==, 1);
        g_assert_cmpint(json_object_get_int_member(guests, "cpus"), >, 0);
        g_assert_cmpuint(hidden->status, ==, 404);
    }
    {
        g_autoptr(EinsoraTestResponse) deleted = call_as(f, guest, "DELETE", workload_path, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    for (;;) {
        g_autoptr(EinsoraTestResponse) now = NULL;
        if (g_strcmp0(state_as(f, guest, id, &now), "deleted") == 0)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100 * 1000);
    }
}

/* A machine whose drivers don't work (here: bubblewrap that can't be
 * found) says so in its log, offers no driver, and a notebook waits with
 * the seeds' reason. */
static void
test_no_working_driver(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    Fixture f = {daemon, NULL, NULL};
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *log = NULL;
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", NULL);
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    /* Nothing on PATH: no bwrap, no jupyter-notebook. */
    einsora_test_daemon_setenv(daemon, "PATH", "/nonexistent");
    einsora_test_daemon_start(daemon);
    id = launch(&f, "waits");
    path = g_strdup_printf("/v1/workloads/%s/events", id);
    for (;;) {
        g_autoptr(EinsoraTestResponse) response = call(&f, "GET", path, NULL);
        if (strstr(response->body,
                   "waiting for a machine with a driver that runs notebooks on " CLASS
                   ": none here has one yet") != NULL)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100 * 1000);
    }
    {
        g_autofree gchar *workload = g_strdup_printf("/v1/workloads/%s", id);
        g_autoptr(EinsoraTestResponse) response = call(&f, "GET", workload, NULL);
        g_assert_cmpstr(einsora_test_response_string(response, "state"), ==, "queued");
    }
    log = einsora_test_daemon_read_log(daemon);
    g_assert_nonnull(strstr(log, "the linux-native driver doesn't work here"));
    g_assert_nonnull(strstr(log, "this machine has no driver that works"));
}

/* The driver's probe runs after the daemon answers: with bubblewrap held
 * back until the test lets it go (a stand-in that waits for a file, then
 * runs the real one), /readyz answers, the machine offers no
 * linux-native, and a notebook waits, placed nowhere; once the probe
 * passes, the notebook is admitted on linux-native and runs. */
static void
test_probe_after_ready(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    Fixture f = {daemon, NULL, NULL};
    g_autofree gchar *bin = g_build_filename(daemon->dir, "bin", NULL);
    g_autofree gchar *gate = g_build_filename(daemon->dir, "probe-may-run", NULL);
    g_autofree gchar *stand_in = g_build_filename(bin, "bwrap", NULL);
    g_autofree gchar *real = g_find_program_in_path("bwrap");
    g_autofree gchar *script = g_strdup_printf(
        "#!/bin/sh\nwhile [ ! -e '%s' ]; do sleep 0.02; done\nexec '%s' \"$@\"\n", gate, real);
    g_autofree gchar *path = g_strdup_printf("%s:%s", bin, g_getenv("PATH"));
    g_autofree gchar *run_dir = g_build_filename(daemon->dir, "run", NULL);
    g_autofree gchar *id = NULL;
    g_autofree gchar *workload = NULL;

    g_assert_cmpint(g_mkdir_with_parents(bin, 0700), ==, 0);
    g_assert_true(g_file_set_contents(stand_in, script, -1, NULL));
    g_assert_cmpint(chmod(stand_in, 0700), ==, 0);
    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", NULL);
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_setenv(daemon, "EINSORA_AGENT_RUN_DIR", run_dir);
    einsora_test_daemon_setenv(daemon, "PATH", path);
    einsora_test_daemon_start(daemon);
    {
        g_autoptr(EinsoraTestResponse) ready = call(&f, "GET", "/readyz", NULL);
        g_autoptr(EinsoraTestResponse) machines = call(&f, "GET", "/v1/machines", NULL);
        g_assert_cmpuint(ready->status, ==, 200);
        g_assert_null(strstr(machines->body, "linux-native"));
    }
    id = launch(&f, "waits-for-the-probe");
    workload = g_strdup_printf("/v1/workloads/%s", id);
    wait_for_state(&f, id, "queued");
    {
        g_autofree gchar *events = g_strdup_printf("/v1/workloads/%s/events", id);
        g_autoptr(EinsoraTestResponse) timeline = call(&f, "GET", events, NULL);
        g_autoptr(EinsoraTestResponse) got = call(&f, "GET", workload, NULL);
        JsonObject *object = workload_of(got);
        g_assert_nonnull(strstr(timeline->body, "waiting for a machine with a driver that runs "
                                                "notebooks on " CLASS));
        g_assert_true(!json_object_has_member(object, "driver") ||
                      json_object_get_null_member(object, "driver"));
    }
    g_assert_true(g_file_set_contents(gate, "", 0, NULL));
    wait_for_state(&f, id, "running");
    {
        g_autoptr(EinsoraTestResponse) got = call(&f, "GET", workload, NULL);
        g_autoptr(EinsoraTestResponse) machines = call(&f, "GET", "/v1/machines", NULL);
        g_assert_cmpstr(einsora_test_response_string(got, "driver"), ==, "linux-native");
        g_assert_nonnull(strstr(machines->body, "linux-native"));
    }
    einsora_test_daemon_stop(daemon);
    einsora_test_kill_recorded(run_dir);
}

/* linux-native asked for by name, whose probe fails (bubblewrap that
 * exits at once): the daemon still stops with the setting's name, now
 * once the probe has answered rather than before it listens. */
static void
test_named_driver_probe_fails(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autofree gchar *bin = g_build_filename(daemon->dir, "bin", NULL);
    g_autofree gchar *stand_in = g_build_filename(bin, "bwrap", NULL);
    g_autofree gchar *path = g_strdup_printf("%s:%s", bin, g_getenv("PATH"));
    g_autofree gchar *run_dir = g_build_filename(daemon->dir, "run", NULL);
    g_autofree gchar *log = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(g_mkdir_with_parents(bin, 0700), ==, 0);
    g_assert_true(g_file_set_contents(stand_in, "#!/bin/sh\nexit 1\n", -1, NULL));
    g_assert_cmpint(chmod(stand_in, 0700), ==, 0);
    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "linux-native");
    einsora_test_daemon_setenv(daemon, "EINSORA_AGENT_RUN_DIR", run_dir);
    einsora_test_daemon_setenv(daemon, "PATH", path);
    einsora_test_daemon_start(daemon);
    g_assert_true(g_subprocess_wait(daemon->process, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(daemon->process));
    g_assert_cmpint(g_subprocess_get_exit_status(daemon->process), ==, 1);
    log = einsora_test_daemon_read_log(daemon);
    g_assert_nonnull(strstr(log, "EINSORA_DRIVERS (--drivers): linux-native doesn't work here: "
                                 "Jupyter in bubblewrap didn't run"));
    g_clear_object(&daemon->process);
}

int
main(int argc, char **argv)
{
    g_autofree gchar *bwrap = g_find_program_in_path("bwrap");
    g_autofree gchar *jupyter = g_find_program_in_path("jupyter-notebook");

    g_test_init(&argc, &argv, NULL);
    if (bwrap == NULL || jupyter == NULL) {
        /* packaging/dev/deps.sh installs both; CI always has them. */
        g_printerr("bwrap and jupyter-notebook are needed: bash packaging/dev/deps.sh test\n");
        return 1;
    }
    g_test_add("/native/lifecycle", Fixture, NULL, fixture_set_up, test_lifecycle,
               fixture_tear_down);
    g_test_add("/native/logs", Fixture, NULL, fixture_set_up, test_logs, fixture_tear_down);
    g_test_add("/native/idle-stop", Fixture, NULL, fixture_set_up, test_idle_stop,
               fixture_tear_down);
    g_test_add("/native/listener-unreachable", Fixture, NULL, fixture_set_up,
               test_listener_unreachable, fixture_tear_down);
    g_test_add_func("/native/no-working-driver", test_no_working_driver);
    g_test_add_func("/native/probe-after-ready", test_probe_after_ready);
    g_test_add_func("/native/named-driver-probe-fails", test_named_driver_probe_fails);
    g_test_add("/access/open-through-the-proxy", Fixture, NULL, fixture_set_up,
               test_open_through_proxy, fixture_tear_down);
    g_test_add("/access/refusals-with-the-real-daemon", Fixture, NULL, fixture_set_up,
               test_proxy_refusals, fixture_tear_down);
    g_test_add("/native/run-dir-shared", Fixture, NULL, fixture_set_up, test_run_dir_shared,
               fixture_tear_down);
    g_test_add("/native/adopted-after-kill", Fixture, NULL, fixture_set_up, test_adopted_after_kill,
               fixture_tear_down);
    g_test_add("/native/guest-on-shared-machine", Fixture, NULL, fixture_set_up,
               test_guest_on_shared_machine, fixture_tear_down);
    return g_test_run();
}
