/* The real `einsora` against the real daemon over TLS (EINSORA_TLS=on on
 * loopback; its own certificate, which no system CA vouches for): refused
 * with the fingerprint and what to type until pinned; `einsora login`
 * with a wrong fingerprint pins nothing, with the right one pins it in a
 * private file; then every call works, the change feed too; a daemon
 * whose certificate changed is refused with both fingerprints named, and
 * the new one pinned by hand works. The pins file is trusted only when
 * it is the user's alone. `einsora open` relays a notebook's link and the
 * endpoints' routes from this machine's loopback to the access proxy over
 * TLS, and a relay whose pin doesn't match carries nothing. The interactive confirmation needs a
 * terminal and is not run here. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-access-relay.h"
#include "einsora-pinned-database.h"
#include "einsora-server-pins.h"
#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"

typedef struct {
    int status;
    gchar *out;
    gchar *err;
} CliRun;

static void
cli_run_free(CliRun *run)
{
    g_free(run->out);
    g_free(run->err);
    g_free(run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliRun, cli_run_free)

/* How long `einsora watch` runs before the test stops it: it connects in
 * well under a second, several under the sanitizers. */
#if defined(__SANITIZE_ADDRESS__)
#define WATCH_SECONDS 15
#else
#define WATCH_SECONDS 3
#endif

static EinsoraTestDaemon *daemon_;
static gchar *config_home;

static const char *
cli_path(void)
{
    const char *path = g_getenv("EINSORA_CLI");

    g_assert_nonnull(path);
    return path;
}

/* einsora @argv with the daemon's URL and token, and a config home of
 * the test's own; stdin is not a terminal. */
static CliRun *
run_cli_argv(const char *const *argv, gint timeout_s)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE |
                                  G_SUBPROCESS_FLAGS_STDIN_PIPE);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *seconds = g_strdup_printf("%d", timeout_s);
    CliRun *run = g_new0(CliRun, 1);

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", daemon_->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", daemon_->owner_token, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CONFIG_HOME", config_home, TRUE);
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    /* With a time limit, coreutils' timeout stops it with SIGINT, as
     * Ctrl-C would. */
    if (timeout_s > 0) {
        g_ptr_array_add(args, "timeout");
        g_ptr_array_add(args, "-s");
        g_ptr_array_add(args, "INT");
        g_ptr_array_add(args, seconds);
    }
    g_ptr_array_add(args, (gpointer)cli_path());
    for (guint i = 0; argv[i] != NULL; i++)
        g_ptr_array_add(args, (gpointer)argv[i]);
    g_ptr_array_add(args, NULL);
    process = g_subprocess_launcher_spawnv(launcher, (const char *const *)args->pdata, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, "", NULL, &run->out, &run->err, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    run->status = g_subprocess_get_exit_status(process);
    g_test_message("einsora %s -> %d\n%s%s", argv[0], run->status, run->out, run->err);
    g_assert_null(strstr(run->out, daemon_->owner_token));
    g_assert_null(strstr(run->err, daemon_->owner_token));
    return run;
}

#define run_cli(...) run_cli_argv((const char *const[]){__VA_ARGS__, NULL}, 0)

static gchar *
logged_fingerprint(void)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(daemon_);
    const char *at = g_strrstr(log, ", fingerprint SHA256:");

    g_assert_nonnull(at);
    return g_strndup(at + strlen(", fingerprint "), strlen("SHA256:") + 64);
}

static gchar *
pins_path(void)
{
    return g_build_filename(config_home, "einsora", "servers.json", NULL);
}

static void
test_pin_and_change(void)
{
    g_autofree gchar *fingerprint = logged_fingerprint();
    g_autofree gchar *upper = g_ascii_strup(fingerprint + strlen("SHA256:"), -1);
    g_autofree gchar *path = pins_path();
    g_autofree gchar *renewed = NULL;
    g_autofree gchar *tls_dir = g_build_filename(daemon_->data_dir, "tls", NULL);
    struct stat st;

    /* Not pinned: refused, nothing sent, the fingerprint and the command
     * to run named. */
    {
        g_autoptr(CliRun) run = run_cli("me");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "untrusted_certificate"));
        g_assert_nonnull(strstr(run->err, fingerprint));
        g_assert_nonnull(strstr(run->err, "einsora login"));
    }
    /* login without a fingerprint and with no terminal: nothing pinned. */
    {
        g_autoptr(CliRun) run = run_cli("login", daemon_->uri);
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, fingerprint));
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    }
    /* A wrong one: nothing pinned. A malformed one: a usage error. */
    {
        g_autoptr(CliRun) run =
            run_cli("login", daemon_->uri, "--fingerprint",
                    "SHA256:1111111111111111111111111111111111111111111111111111111111111111");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "not the fingerprint given"));
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    }
    {
        g_autoptr(CliRun) run = run_cli("login", daemon_->uri, "--fingerprint", "SHA256:abc");
        g_assert_cmpint(run->status, ==, 2);
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    }
    /* The right one, as a person may copy it (upper case, no prefix). */
    {
        g_autoptr(CliRun) run = run_cli("login", daemon_->uri, "--fingerprint", upper);
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(strstr(run->out, "pinned"));
    }
    g_assert_cmpint(g_stat(path, &st), ==, 0);
    g_assert_cmpuint(st.st_mode & 0777, ==, 0600);
    {
        g_autoptr(CliRun) run = run_cli("login", daemon_->uri);
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(strstr(run->out, "pinned already"));
    }
    /* Pinned: requests, and the change feed. */
    {
        g_autoptr(CliRun) run = run_cli("me");
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(strstr(run->out, "owner@localhost"));
    }
    {
        g_autoptr(CliRun) run = run_cli("workloads");
        g_assert_cmpint(run->status, ==, 0);
    }
    {
        g_autoptr(CliRun) run = run_cli_argv((const char *const[]){"watch", NULL}, WATCH_SECONDS);
        /* Stopped by the timeout's SIGINT, after it connected. */
        g_assert_nonnull(strstr(run->err, "Watching for events"));
        g_assert_null(strstr(run->err, "untrusted"));
    }

    /* A new certificate (its identity made again) at the same address:
     * refused, both named. */
    {
        g_autoptr(GUri) uri = g_uri_parse(daemon_->uri, G_URI_FLAGS_NONE, NULL);
        g_free(daemon_->listen);
        daemon_->listen = g_strdup_printf("127.0.0.1:%d", g_uri_get_port(uri));
    }
    einsora_test_daemon_stop(daemon_);
    einsora_test_dir_remove(tls_dir);
    g_assert_false(g_file_test(tls_dir, G_FILE_TEST_EXISTS));
    einsora_test_daemon_start(daemon_);
    renewed = logged_fingerprint();
    g_assert_cmpstr(renewed, !=, fingerprint);
    {
        g_autoptr(CliRun) run = run_cli("me");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "other than the one you pinned"));
        g_assert_nonnull(strstr(run->err, fingerprint));
        g_assert_nonnull(strstr(run->err, renewed));
    }
    {
        g_autoptr(CliRun) run = run_cli("login", daemon_->uri);
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "other than the one you pinned"));
    }
    {
        g_autoptr(CliRun) run = run_cli("login", daemon_->uri, "--fingerprint", renewed);
        g_assert_cmpint(run->status, ==, 0);
    }
    {
        g_autoptr(CliRun) run = run_cli("me");
        g_assert_cmpint(run->status, ==, 0);
    }

    /* A pins file others may write is not trusted: an error, not a pass. */
    g_assert_cmpint(g_chmod(path, 0666), ==, 0);
    {
        g_autoptr(CliRun) run = run_cli("me");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "chmod 600"));
    }
    g_assert_cmpint(g_chmod(path, 0600), ==, 0);
}

/* One HTTP/1.1 request, written whole, to 127.0.0.1:@port; the answer
 * until the server closes. In a thread of its own when the relay is in
 * this process. */
typedef struct {
    guint port;
    gchar *request;
    gchar *answer;
    gboolean done;
} Exchange;

static gpointer
exchange_run(gpointer data)
{
    Exchange *exchange = data;
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocketConnection) connection = NULL;
    g_autoptr(GString) answer = g_string_new(NULL);
    char buffer[4096];
    gssize got;

    g_socket_client_set_timeout(client, 30);
    connection =
        g_socket_client_connect_to_host(client, "127.0.0.1", (guint16)exchange->port, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(connection)),
                                            exchange->request, strlen(exchange->request), NULL,
                                            NULL, &error));
    g_assert_no_error(error);
    while ((got = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(connection)), buffer,
                                      sizeof buffer, NULL, NULL)) > 0)
        g_string_append_len(answer, buffer, got);
    exchange->answer = g_string_free(g_steal_pointer(&answer), FALSE);
    g_atomic_int_set(&exchange->done, TRUE);
    /* The test's loop may be waiting with nothing else to wake it. */
    g_main_context_wakeup(NULL);
    return NULL;
}

static gchar *
exchange(guint port, const char *request, gboolean iterate)
{
    Exchange exchange = {.port = port, .request = (gchar *)request};
    GThread *thread = g_thread_new("exchange", exchange_run, &exchange);

    while (iterate && !g_atomic_int_get(&exchange.done))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(thread);
    return exchange.answer;
}

/* `einsora open --browser @id` with BROWSER the script @script, written
 * into @dir; stderr piped when @stderr_pipe. */
static GSubprocess *
spawn_open_browser(const char *id, const char *dir, const char *script, gboolean stderr_pipe)
{
    g_autofree gchar *script_path = g_build_filename(dir, "browser", NULL);
    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
        stderr_pipe ? G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE
                    : G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    g_autoptr(GError) error = NULL;
    GSubprocess *opener;

    g_assert_true(g_file_set_contents(script_path, script, -1, &error));
    g_assert_no_error(error);
    g_assert_cmpint(g_chmod(script_path, 0700), ==, 0);
    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", daemon_->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", daemon_->owner_token, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CONFIG_HOME", config_home, TRUE);
    g_subprocess_launcher_setenv(launcher, "BROWSER", script_path, TRUE);
    opener =
        g_subprocess_launcher_spawn(launcher, &error, cli_path(), "open", "--browser", id, NULL);
    g_assert_no_error(error);
    return opener;
}

/* (transfer full) @path's contents, once it is there (30 s at most). */
static gchar *
wait_for_file(const char *path)
{
    gchar *contents = NULL;

    for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
         !g_file_get_contents(path, &contents, NULL, NULL);) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100 * 1000);
    }
    return contents;
}

/* The daemon's sim notebook, running, opened through `einsora open`'s
 * relay: the link names the workload's host at the relay's port, and a
 * request to it reaches the access proxy over TLS (a sim notebook has no
 * server, so the proxy answers that it isn't running); the endpoints'
 * routes answer API tokens through the same relay. Ctrl-C ends it. */
static void
test_open_relay(void)
{
    g_autofree gchar *id = NULL;
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GDataInputStream) lines = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *link = NULL;
    g_autofree gchar *prefix = NULL;
    g_autoptr(GUri) uri = NULL;
    guint port;

    {
        g_autoptr(CliRun) run = run_cli("--json", "launch", "--kind", "notebook", "--class",
                                        "cpu-2c-4g", "--image", "jupyter-linux");
        g_autoptr(JsonNode) node = json_from_string(run->out, NULL);
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(node);
        id = g_strdup(json_object_get_string_member(json_node_get_object(node), "id"));
    }
    for (gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;;) {
        g_autoptr(CliRun) run = run_cli("--json", "workloads");
        if (strstr(run->out, "\"running\"") != NULL)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100 * 1000);
    }
    /* The answer says the proxy is TLS, at its port. */
    {
        g_autoptr(CliRun) run = run_cli("--json", "open", id);
        g_autofree gchar *expected = g_strdup_printf("\"port\":%u", daemon_->access_port);
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(strstr(run->out, "\"tls\":true"));
        g_assert_nonnull(strstr(run->out, expected));
    }

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", daemon_->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", daemon_->owner_token, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CONFIG_HOME", config_home, TRUE);
    process = g_subprocess_launcher_spawn(launcher, &error, cli_path(), "open", id, NULL);
    g_assert_no_error(error);
    lines = g_data_input_stream_new(g_subprocess_get_stdout_pipe(process));
    link = g_data_input_stream_read_line_utf8(lines, NULL, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(link);
    prefix = g_strdup_printf("http://w-%s.localhost:", id);
    g_assert_true(g_str_has_prefix(link, prefix));
    g_assert_nonnull(strstr(link, "/_einsora/open?ticket=tkt_"));
    uri = g_uri_parse(link, G_URI_FLAGS_ENCODED, &error);
    g_assert_no_error(error);
    port = (guint)g_uri_get_port(uri);
    g_assert_cmpuint(port, !=, daemon_->access_port);
    {
        g_autofree gchar *request = g_strdup_printf(
            "GET %s?%s HTTP/1.1\r\nHost: w-%s.localhost:%u\r\nConnection: close\r\n\r\n",
            g_uri_get_path(uri), g_uri_get_query(uri), id, port);
        g_autofree gchar *answer = exchange(port, request, FALSE);
        g_test_message("through the relay: %s", answer);
        g_assert_true(g_str_has_prefix(answer, "HTTP/1.1 404"));
        g_assert_nonnull(strstr(answer, "Server: einsora-access"));
        g_assert_nonnull(strstr(answer, "isn&apos;t running"));
    }
    /* An endpoint route, at the relay's own loopback name. */
    {
        g_autofree gchar *request = g_strdup_printf(
            "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nAuthorization: Bearer %s\r\n"
            "Connection: close\r\n\r\n",
            port, daemon_->owner_token);
        g_autofree gchar *answer = exchange(port, request, FALSE);
        g_assert_true(g_str_has_prefix(answer, "HTTP/1.1 200"));
        g_assert_nonnull(strstr(answer, "\"object\":\"list\""));
    }
    {
        g_autofree gchar *request = g_strdup_printf(
            "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nConnection: close\r\n\r\n", port);
        g_autofree gchar *answer = exchange(port, request, FALSE);
        g_assert_true(g_str_has_prefix(answer, "HTTP/1.1 401"));
    }
    g_subprocess_send_signal(process, SIGINT);
    g_assert_true(g_subprocess_wait(process, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);

    /* --browser: a browser that loads the link before it exits (as a
     * terminal browser does) is answered through the relay meanwhile. */
    {
        g_autofree gchar *dir = einsora_test_dir_new();
        g_autofree gchar *status_path = g_build_filename(dir, "status", NULL);
        g_autofree gchar *script =
            g_strdup_printf("#!/usr/bin/env python3\n"
                            "import http.client, os, sys, urllib.parse\n"
                            "u = urllib.parse.urlsplit(sys.argv[1])\n"
                            "c = http.client.HTTPConnection('127.0.0.1', u.port, timeout=20)\n"
                            "c.request('GET', u.path + '?' + u.query, headers={'Host': u.netloc})\n"
                            "status = str(c.getresponse().status)\n"
                            "open('%s.new', 'w').write(status)\n"
                            "os.rename('%s.new', '%s')\n",
                            status_path, status_path, status_path);
        g_autoptr(GSubprocess) opener = spawn_open_browser(id, dir, script, TRUE);
        g_autoptr(GDataInputStream) said = NULL;
        g_autofree gchar *line = NULL;
        g_autofree gchar *status = wait_for_file(status_path);

        /* The sim notebook has no server: the proxy's own 404. */
        g_assert_cmpstr(status, ==, "404");
        /* Relaying on, once the browser has exited. */
        said = g_data_input_stream_new(g_subprocess_get_stderr_pipe(opener));
        do {
            g_free(line);
            line = g_data_input_stream_read_line_utf8(said, NULL, NULL, &error);
            g_assert_no_error(error);
            g_assert_nonnull(line);
        } while (!g_str_has_prefix(line, "Relaying"));
        g_subprocess_send_signal(opener, SIGINT);
        g_assert_true(g_subprocess_wait(opener, NULL, &error));
        g_assert_no_error(error);
        g_assert_true(g_subprocess_get_if_exited(opener));
        g_assert_cmpint(g_subprocess_get_exit_status(opener), ==, 0);
        einsora_test_dir_remove(dir);
    }
    /* A browser that runs on (a first Firefox exits when it is closed):
     * SIGTERM ends the command at once, and leaves the browser be. */
    {
        g_autofree gchar *dir = einsora_test_dir_new();
        g_autofree gchar *pid_path = g_build_filename(dir, "pid", NULL);
        g_autofree gchar *script = g_strdup_printf("#!/bin/sh\n"
                                                   "echo $$ > '%s.new'\n"
                                                   "mv '%s.new' '%s'\n"
                                                   "exec sleep 120\n",
                                                   pid_path, pid_path, pid_path);
        g_autoptr(GSubprocess) opener = spawn_open_browser(id, dir, script, FALSE);
        g_autofree gchar *pid = wait_for_file(pid_path);
        gint64 asked;

        asked = g_get_monotonic_time();
        g_subprocess_send_signal(opener, SIGTERM);
        g_assert_true(g_subprocess_wait(opener, NULL, &error));
        g_assert_no_error(error);
        g_test_message("ended %" G_GINT64_FORMAT " ms after SIGTERM",
                       (g_get_monotonic_time() - asked) / 1000);
        g_assert_cmpint(g_get_monotonic_time() - asked, <, 60 * G_USEC_PER_SEC);
        g_assert_true(g_subprocess_get_if_exited(opener));
        g_assert_cmpint(g_subprocess_get_exit_status(opener), ==, 0);
        /* The browser is still there: its own, not the command's. */
        g_assert_cmpint(kill((pid_t)g_ascii_strtoll(pid, NULL, 10), 0), ==, 0);
        kill((pid_t)g_ascii_strtoll(pid, NULL, 10), SIGKILL);
        einsora_test_dir_remove(dir);
    }
}

static void
on_relay_failed(EinsoraAccessRelay *relay, const GError *error, gpointer user_data)
{
    GError **failure = user_data;

    g_clear_error(failure);
    *failure = g_error_copy(error);
}

/* A relay trusting another certificate: the browser's connection is
 * closed with nothing carried, and the relay says why. */
static void
test_relay_refuses_changed_certificate(void)
{
    g_autoptr(EinsoraPinnedDatabase) database = einsora_pinned_database_new(
        "SHA256:1111111111111111111111111111111111111111111111111111111111111111");
    g_autoptr(EinsoraAccessRelay) relay =
        einsora_access_relay_new("127.0.0.1", daemon_->access_port, G_TLS_DATABASE(database));
    g_autoptr(GError) error = NULL;
    g_autoptr(GError) failure = NULL;
    g_autofree gchar *answer = NULL;

    g_assert_true(einsora_access_relay_listen(relay, 0, &error));
    g_assert_no_error(error);
    g_signal_connect(relay, "failed", G_CALLBACK(on_relay_failed), &failure);
    answer = exchange(einsora_access_relay_get_port(relay),
                      "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", TRUE);
    g_assert_cmpstr(answer, ==, "");
    while (failure == NULL)
        g_main_context_iteration(NULL, TRUE);
    g_assert_error(failure, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE);
    g_assert_nonnull(strstr(failure->message, "doesn't trust"));
    g_assert_cmpuint(einsora_access_relay_count_connections(relay), ==, 0);
}

/* Plain http:// to another machine: refused by login; loopback: nothing
 * to pin. */
static void
test_login_plain(void)
{
    {
        g_autoptr(CliRun) run = run_cli("login", "http://192.0.2.1:8080");
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "plain HTTP"));
    }
    {
        g_autoptr(CliRun) run = run_cli("login", "http://127.0.0.1:8080");
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(strstr(run->out, "no certificate to pin"));
    }
}

/* The pins file's own rules, in process: origins normalized, pins
 * written whole and read back, a bad file an error. */
static void
test_pins_file(void)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *path = g_build_filename(dir, "einsora", "servers.json", NULL);
    g_autoptr(EinsoraServerPins) pins = NULL;
    g_autoptr(EinsoraServerPins) again = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *origin = einsora_server_origin("HTTPS://Lab.Example/v1/");
    g_autofree gchar *v6 = einsora_server_origin("https://[::1]:8443");
    g_autofree gchar *normal = einsora_fingerprint_normalize(
        "sha256:AB:CD:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:"
        "ef:01:23:45:67:89");
    const char *pin = "SHA256:abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";

    g_assert_cmpstr(origin, ==, "https://lab.example:443");
    g_assert_cmpstr(v6, ==, "https://[::1]:8443");
    g_assert_null(einsora_server_origin("ftp://lab"));
    g_assert_cmpstr(normal, ==, pin);
    g_assert_null(einsora_fingerprint_normalize("SHA256:abcd"));
    g_assert_null(einsora_fingerprint_normalize(
        "SHA256:zzcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"));

    pins = einsora_server_pins_load(path, &error);
    g_assert_no_error(error);
    g_assert_null(einsora_server_pins_lookup(pins, "https://lab.example"));
    g_assert_true(einsora_server_pins_save(pins, "https://lab.example:443/", pin, &error));
    g_assert_false(einsora_server_pins_save(pins, "https://lab.example", "SHA256:12", &error));
    g_clear_error(&error);
    again = einsora_server_pins_load(path, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(einsora_server_pins_lookup(again, "https://LAB.example"), ==, pin);
    g_assert_null(einsora_server_pins_lookup(again, "https://lab.example:8443"));

    /* Two clients that loaded the file before either saved: both pins
     * stay, neither writes back an older copy. */
    {
        g_autoptr(EinsoraServerPins) first = einsora_server_pins_load(path, &error);
        g_autoptr(EinsoraServerPins) second = einsora_server_pins_load(path, &error);
        g_autoptr(EinsoraServerPins) both = NULL;
        g_assert_no_error(error);
        g_assert_true(einsora_server_pins_save(first, "https://one.example", pin, &error));
        g_assert_true(einsora_server_pins_save(second, "https://two.example", pin, &error));
        g_assert_no_error(error);
        both = einsora_server_pins_load(path, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(einsora_server_pins_lookup(both, "https://one.example"), ==, pin);
        g_assert_cmpstr(einsora_server_pins_lookup(both, "https://two.example"), ==, pin);
        g_assert_cmpstr(einsora_server_pins_lookup(both, "https://lab.example"), ==, pin);
    }
    /* A link is not followed, wherever it points. */
    {
        g_autofree gchar *link = g_build_filename(dir, "einsora", "linked.json", NULL);
        g_autoptr(EinsoraServerPins) linked = NULL;
        g_assert_cmpint(symlink(path, link), ==, 0);
        linked = einsora_server_pins_load(link, &error);
        g_assert_null(linked);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
        g_clear_error(&error);
    }
    g_assert_true(g_file_set_contents(path, "{\"servers\": {\"https://x\": {}}}", -1, NULL));
    g_assert_cmpint(g_chmod(path, 0600), ==, 0);
    g_clear_pointer(&again, einsora_server_pins_free);
    again = einsora_server_pins_load(path, &error);
    g_assert_null(again);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    einsora_test_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/tls/pins-file", test_pins_file);
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here: install glib-networking");
        return g_test_run();
    }
    config_home = einsora_test_dir_new();
    daemon_ = einsora_test_daemon_new();
    einsora_test_daemon_setenv(daemon_, "EINSORA_TLS", "on");
    einsora_test_daemon_setenv(daemon_, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_start(daemon_);
    g_test_add_func("/cli/tls/pin-and-change", test_pin_and_change);
    g_test_add_func("/cli/tls/open-relay", test_open_relay);
    g_test_add_func("/cli/tls/relay-refuses-changed-certificate",
                    test_relay_refuses_changed_certificate);
    g_test_add_func("/cli/tls/login-plain", test_login_plain);
    status = g_test_run();
    einsora_test_daemon_stop(daemon_);
    einsora_test_daemon_free(daemon_);
    einsora_test_dir_remove(config_home);
    g_free(config_home);
    return status;
}
