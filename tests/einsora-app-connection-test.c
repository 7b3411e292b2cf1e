/* The desktop app finding its daemon: the real einsora-daemon started by
 * the app's connection when nothing answers, found when it runs, a clear
 * error with its last log lines when it can't start, and a remote daemon
 * never started, its token the one kept for it (in a config directory
 * of the test's own). */
#include <glib/gstdio.h>
#include <signal.h>

#include "einsora-connection.h"
#include "einsora-pinned-database.h"
#include "einsora-test-dir.h"
#include "einsora-test-port.h"
#include "einsora-token-store.h"

typedef struct {
    gchar *dir;
    gchar *server;
    GPtrArray *pids; /* daemons the tests started, killed at the end */
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    guint port = einsora_test_free_port();
    g_autofree gchar *addr = g_strdup_printf("127.0.0.1:%u", port);
    g_autofree gchar *data_dir = NULL, *run_dir = NULL, *state_dir = NULL;

    f->dir = einsora_test_dir_new();
    f->server = g_strdup_printf("http://%s", addr);
    f->pids = g_ptr_array_new_with_free_func(g_free);
    data_dir = g_build_filename(f->dir, "data", NULL);
    run_dir = g_build_filename(f->dir, "run", NULL);
    state_dir = g_build_filename(f->dir, "state", NULL);
    g_setenv("EINSORA_DATA_DIR", data_dir, TRUE);
    g_setenv("EINSORA_AGENT_RUN_DIR", run_dir, TRUE);
    g_setenv("EINSORA_AGENT_STATE_DIR", data_dir, TRUE);
    g_setenv("EINSORA_API_ADDR", addr, TRUE);
    g_setenv("EINSORA_ACCESS_ADDR", "127.0.0.1:0", TRUE);
    g_setenv("EINSORA_DRIVERS", "", TRUE);
    g_setenv("EINSORA_SERVER", f->server, TRUE);
    g_setenv("EINSORA_NO_SYSTEMD", "1", TRUE);
    g_setenv("XDG_STATE_HOME", state_dir, TRUE);
    g_unsetenv("EINSORA_CONTROLLER_INTERVAL");
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    for (guint i = 0; i < f->pids->len; i++) {
        GPid pid = (GPid)g_ascii_strtoll(g_ptr_array_index(f->pids, i), NULL, 10);
        /* Started in its own session, it outlives the connection: stop
         * it here (GSubprocess still reaps it). */
        if (pid > 0)
            kill(pid, SIGTERM);
    }
    for (guint i = 0; i < f->pids->len; i++) {
        GPid pid = (GPid)g_ascii_strtoll(g_ptr_array_index(f->pids, i), NULL, 10);
        for (int tries = 0; tries < 100 && pid > 0 && kill(pid, 0) == 0; tries++)
            g_usleep(50 * 1000);
    }
    g_ptr_array_unref(f->pids);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
    g_free(f->server);
}

typedef struct {
    GMainLoop *loop;
    EinsoraClient *client;
    GError *error;
    GPtrArray *progress;
} Wait;

static void
on_progress(EinsoraConnection *connection, const char *what, Wait *wait)
{
    if (wait->progress != NULL)
        g_ptr_array_add(wait->progress, g_strdup(what));
}

static void
on_ensured(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Wait *wait = user_data;

    wait->client =
        einsora_connection_ensure_finish(EINSORA_CONNECTION(source), result, &wait->error);
    g_main_loop_quit(wait->loop);
}

/* Runs ensure to its end; the main loop turns meanwhile. */
static EinsoraClient *
ensure(EinsoraConnection *connection, guint timeout_ms, GPtrArray *progress, GError **error)
{
    Wait wait = {g_main_loop_new(NULL, FALSE), NULL, NULL, progress};
    gulong handler = g_signal_connect(connection, "progress", G_CALLBACK(on_progress), &wait);

    einsora_connection_ensure_async(connection, timeout_ms, NULL, on_ensured, &wait);
    g_main_loop_run(wait.loop);
    g_signal_handler_disconnect(connection, handler);
    g_main_loop_unref(wait.loop);
    if (wait.error != NULL)
        g_propagate_error(error, wait.error);
    return wait.client;
}

static void
remember_daemon(Fixture *f, EinsoraConnection *connection)
{
    if (einsora_connection_get_daemon_pid(connection) != NULL)
        g_ptr_array_add(f->pids, g_strdup(einsora_connection_get_daemon_pid(connection)));
}

static void
test_starts_local_daemon(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraConnection) first = einsora_connection_new(NULL, NULL);
    g_autoptr(EinsoraConnection) second = einsora_connection_new(NULL, NULL);
    g_autoptr(GPtrArray) progress = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraClient) client = NULL;
    g_autoptr(EinsoraClient) again = NULL;
    g_autoptr(JsonNode) me = NULL;
    g_autofree gchar *log = NULL;

    g_assert_cmpstr(einsora_connection_get_server(first), ==, f->server);
    g_assert_true(einsora_connection_is_local(first));
    client = ensure(first, 60000, progress, &error);
    remember_daemon(f, first);
    g_assert_no_error(error);
    g_assert_nonnull(client);
    g_assert_true(einsora_connection_started_daemon(first));
    g_assert_nonnull(einsora_connection_get_daemon_pid(first));
    g_assert_true(
        g_ptr_array_find_with_equal_func(progress, "Starting the daemon…", g_str_equal, NULL));
    /* The first run's token, read from the file the daemon made. */
    me = einsora_client_get_me(client, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(me);
    g_assert_true(g_file_get_contents(einsora_connection_get_log_path(first), &log, NULL, NULL));
    g_assert_nonnull(strstr(log, "first run"));
    g_assert_null(strstr(log, einsora_connection_get_token(first)));

    /* It runs now: the next app finds it and starts nothing. */
    again = ensure(second, 10000, progress, &error);
    g_assert_no_error(error);
    g_assert_nonnull(again);
    g_assert_false(einsora_connection_started_daemon(second));
    g_assert_null(einsora_connection_get_daemon_pid(second));

    /* The daemon outlives the connection that started it. */
    g_clear_object(&first);
    g_clear_object(&client);
    g_clear_pointer(&me, json_node_unref);
    me = einsora_client_get_me(again, NULL, &error);
    g_assert_no_error(error);
}

static void
test_daemon_fails(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraConnection) connection = einsora_connection_new(NULL, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraClient) client = NULL;

    g_setenv("EINSORA_CONTROLLER_INTERVAL", "every now and then", TRUE);
    client = ensure(connection, 30000, NULL, &error);
    remember_daemon(f, connection);
    g_unsetenv("EINSORA_CONTROLLER_INTERVAL");
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_DAEMON_FAILED);
    /* What a person can act on: what happened, and the daemon's own words. */
    g_assert_nonnull(strstr(error->message, "stopped before it was ready"));
    g_assert_nonnull(strstr(error->message, "EINSORA_CONTROLLER_INTERVAL"));
    g_assert_nonnull(strstr(error->message, einsora_connection_get_log_path(connection)));
}

static void
test_no_daemon_program(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraConnection) connection = einsora_connection_new(NULL, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraClient) client = NULL;
    g_autofree gchar *saved = g_strdup(g_getenv("EINSORA_DAEMON"));

    g_setenv("EINSORA_DAEMON", "/nonexistent/einsora-daemon", TRUE);
    client = ensure(connection, 5000, NULL, &error);
    g_setenv("EINSORA_DAEMON", saved, TRUE);
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_DAEMON_FAILED);
    g_assert_nonnull(strstr(error->message, "Can't start einsora-daemon"));
}

static void
test_remote_not_started(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraClient) client = NULL;
    /* 192.0.2.0/24 is TEST-NET-1: nothing answers there. The connection
     * must neither start a daemon for it nor send it the local token. */
    g_autoptr(EinsoraConnection) remote = einsora_connection_new("http://192.0.2.1:9", "tok_x");

    g_assert_false(einsora_connection_is_local(remote));
    g_assert_cmpstr(einsora_connection_get_server(remote), ==, "http://192.0.2.1:9");
    client = ensure(remote, 5000, NULL, &error);
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNREACHABLE);
    g_assert_false(einsora_connection_started_daemon(remote));
}

static void
on_saved(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GError **error = user_data;

    einsora_token_store_save_finish(EINSORA_TOKEN_STORE(source), result, error);
    *(gboolean *)g_object_get_data(source, "done") = TRUE;
}

static void
save_token(const char *server, const char *token)
{
    g_autoptr(EinsoraTokenStore) store = einsora_token_store_new();
    g_autoptr(GError) error = NULL;
    gboolean done = FALSE;

    g_object_set_data(G_OBJECT(store), "done", &done);
    einsora_token_store_save_async(store, server, token, NULL, on_saved, &error);
    while (!done)
        g_main_context_iteration(NULL, TRUE);
    g_assert_no_error(error);
    g_assert_cmpstr(einsora_token_store_get_backend(store), ==, "file");
}

/* A remote daemon with no token given: the one kept for its URL, else
 * an error that says how to give one, before anything is sent. */
static void
test_remote_stored_token(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraClient) client = NULL;
    g_autoptr(EinsoraConnection) remote = NULL;

    g_setenv("EINSORA_TOKEN_STORE", "file", TRUE);
    remote = einsora_connection_new("http://192.0.2.1:9/", NULL);
    g_assert_cmpstr(einsora_connection_get_server(remote), ==, "http://192.0.2.1:9");
    client = ensure(remote, 5000, NULL, &error);
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_NO_TOKEN);
    g_assert_nonnull(strstr(error->message, "http://192.0.2.1:9"));
    g_assert_nonnull(strstr(error->message, "Connect to a Server"));
    g_assert_null(einsora_connection_get_token(remote));
    g_clear_error(&error);
    g_clear_object(&remote);

    /* Kept for that server (written as a person might): looked up, then
     * the daemon asked (TEST-NET-1: nothing answers). */
    save_token("http://192.0.2.1:9/", "tok_remote_kept");
    remote = einsora_connection_new("http://192.0.2.1:9", NULL);
    client = ensure(remote, 5000, NULL, &error);
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNREACHABLE);
    g_assert_cmpstr(einsora_connection_get_token(remote), ==, "tok_remote_kept");
    g_assert_false(einsora_connection_started_daemon(remote));
    g_unsetenv("EINSORA_TOKEN_STORE");
}

static gboolean
port_answers(guint port)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketConnection) connection =
        g_socket_client_connect_to_host(client, "127.0.0.1", (guint16)port, NULL, NULL);

    return connection != NULL;
}

/* A daemon speaking TLS with its own certificate (EINSORA_TLS=on): not
 * trusted, so an error naming its fingerprint and no daemon started;
 * trusted, connected; a pin of another certificate, refused again. */
static void
test_untrusted_certificate(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraConnection) connection = NULL;
    g_autoptr(EinsoraClient) client = NULL;
    g_autoptr(GSubprocess) daemon = NULL;
    g_autoptr(GUri) uri = g_uri_parse(f->server, G_URI_FLAGS_NONE, NULL);
    g_autofree gchar *https = g_strdup_printf("https://127.0.0.1:%d", g_uri_get_port(uri));
    g_autofree gchar *cert =
        g_build_filename(g_getenv("EINSORA_DATA_DIR"), "tls", "server.pem", NULL);
    g_autoptr(GTlsCertificate) certificate = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *refused = NULL;
    g_autoptr(JsonNode) me = NULL;
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    g_setenv("EINSORA_TLS", "on", TRUE);
    daemon = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                              &error, g_getenv("EINSORA_DAEMON"), NULL);
    g_unsetenv("EINSORA_TLS");
    g_assert_no_error(error);
    g_ptr_array_add(f->pids, g_strdup(g_subprocess_get_identifier(daemon)));
    while (!port_answers((guint)g_uri_get_port(uri))) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50 * 1000);
    }
    certificate = g_tls_certificate_new_from_file(cert, &error);
    g_assert_no_error(error);
    fingerprint = einsora_certificate_fingerprint(certificate);

    connection = einsora_connection_new(https, NULL);
    client = ensure(connection, 10000, NULL, &error);
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE);
    g_assert_nonnull(strstr(error->message, fingerprint));
    g_assert_false(einsora_connection_started_daemon(connection));
    refused = einsora_connection_dup_refused_fingerprint(connection);
    g_assert_cmpstr(refused, ==, fingerprint);
    g_clear_error(&error);

    g_assert_true(einsora_connection_trust_certificate(connection, refused, &error));
    g_assert_no_error(error);
    g_clear_object(&connection);
    connection = einsora_connection_new(https, NULL);
    client = ensure(connection, 10000, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(client);
    me = einsora_client_get_me(client, NULL, &error);
    g_assert_no_error(error);
    g_assert_nonnull(me);
    g_clear_object(&client);

    /* Another certificate pinned for it: refused, both named. */
    g_assert_true(einsora_connection_trust_certificate(
        connection, "SHA256:1111111111111111111111111111111111111111111111111111111111111111",
        &error));
    g_clear_object(&connection);
    connection = einsora_connection_new(https, NULL);
    client = ensure(connection, 10000, NULL, &error);
    g_assert_null(client);
    g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE);
    g_assert_nonnull(strstr(error->message, "other than the one you trusted"));
    g_assert_nonnull(strstr(error->message, fingerprint));
}

/* A daemon on this machine gets the local token file and may be started;
 * anything else is remote, whatever it is called. */
static void
test_is_local(void)
{
    const struct {
        const char *server;
        gboolean local;
    } cases[] = {
        {"http://127.0.0.1:8080", TRUE},
        {"http://127.1.2.3:8080/", TRUE},
        {"http://localhost:8080", TRUE},
        {"http://LOCALHOST", TRUE},
        {"http://[::1]:8080", TRUE},
        {"https://127.0.0.1", TRUE},
        {"http://192.0.2.1:8080", FALSE},
        {"http://10.0.0.5:8080", FALSE},
        {"http://[2001:db8::1]:8080", FALSE},
        {"https://lab.example.org:8443", FALSE},
        {"http://localhost.example.org", FALSE},
        {"http://127.0.0.1.example.org", FALSE},
        {"http://0.0.0.0:8080", FALSE},
        {"not a url", FALSE},
        {"", FALSE},
        {NULL, FALSE},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_message("%s", cases[i].server != NULL ? cases[i].server : "(null)");
        g_assert_cmpint(einsora_connection_server_is_local(cases[i].server), ==, cases[i].local);
    }
}

static void
test_check_server(void)
{
    const char *const good[] = {"http://127.0.0.1:8080", "https://lab.example.org:8443/",
                                "HTTPS://lab.example.org", "http://[2001:db8::1]:8080"};
    const char *const bad[] = {
        "", "lab.example.org:8080", "ftp://lab.example.org", "file:///tmp/x", "https://",
        "just words",
        /* credentials or more than an address: kept, shown and logged otherwise */
        "https://user:secret@lab.example.org", "https://lab.example.org/?token=tok_x",
        "https://lab.example.org/#tok_x"};

    for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
        g_autoptr(GError) error = NULL;
        g_test_message("%s", good[i]);
        g_assert_true(einsora_connection_check_server(good[i], &error));
        g_assert_no_error(error);
    }
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        g_test_message("%s", bad[i]);
        g_assert_false(einsora_connection_check_server(bad[i], &error));
        g_assert_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_BAD_SERVER);
    }
}

/* G_DEFINE_QUARK stringifies its tokens, so a formatter's spaces would be
 * in the name (they once were: "einsora - connection - error - quark"). */
static void
test_error_domain_name(void)
{
    const char *name = g_quark_to_string(EINSORA_CONNECTION_ERROR);

    g_assert_cmpstr(name, ==, "einsora-connection-error-quark");
    g_assert_null(strchr(name, ' '));
}

int
main(int argc, char **argv)
{
    /* Kept tokens go here, never in the user's own config: set before
     * anything asks GLib for it (it keeps the first answer). */
    g_autofree gchar *config = einsora_test_dir_new();
    int status;

    g_setenv("XDG_CONFIG_HOME", config, TRUE);
    g_test_init(&argc, &argv, NULL);
    /* Plain functions: they need no daemon. */
    g_test_add_func("/app/connection/error-domain-name-has-no-spaces", test_error_domain_name);
    g_test_add_func("/app/connection/is-local", test_is_local);
    g_test_add_func("/app/connection/check-server", test_check_server);
    if (g_getenv("EINSORA_DAEMON") != NULL) {
        g_test_add("/app/connection/starts-local-daemon", Fixture, NULL, fixture_set_up,
                   test_starts_local_daemon, fixture_tear_down);
        g_test_add("/app/connection/daemon-fails", Fixture, NULL, fixture_set_up, test_daemon_fails,
                   fixture_tear_down);
        g_test_add("/app/connection/no-daemon-program", Fixture, NULL, fixture_set_up,
                   test_no_daemon_program, fixture_tear_down);
        g_test_add("/app/connection/remote-not-started", Fixture, NULL, fixture_set_up,
                   test_remote_not_started, fixture_tear_down);
        g_test_add("/app/connection/remote-stored-token", Fixture, NULL, fixture_set_up,
                   test_remote_stored_token, fixture_tear_down);
        if (g_tls_backend_supports_tls(g_tls_backend_get_default()))
            g_test_add("/app/connection/untrusted-certificate", Fixture, NULL, fixture_set_up,
                       test_untrusted_certificate, fixture_tear_down);
    } else {
        g_test_message("EINSORA_DAEMON is not set: no daemon tests");
    }
    status = g_test_run();
    einsora_test_dir_remove(config);
    return status;
}
