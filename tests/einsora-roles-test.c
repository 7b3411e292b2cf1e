/* Roles sharing one Postgres (docs/adr/0062), with the real daemon (sim
 * driver): an api process and a controller process, each hearing the
 * other's events through LISTEN/NOTIFY, not polling; two controllers of
 * one region, one leading through the lease, the other taking over after
 * the leader is killed with -9, with no workload admitted twice; and the
 * settings a role needs. A controller places only on machines whose
 * syncs its own hub holds (docs/adr/0062). */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <string.h>

#include "einsora-test-daemon.h"

#define WAIT_SECONDS 30
/* The lease a controller holds (EINSORA_LEASE_MIN_DURATION_US) and a
 * margin for the standby's next pass. */
#define TAKEOVER_SECONDS 40

static const char *
database_url(EinsoraTestDaemon *daemon)
{
    return g_hash_table_lookup(daemon->env, "EINSORA_DATABASE_URL");
}

/* A second daemon on the first's database and owner. */
static EinsoraTestDaemon *
daemon_beside(EinsoraTestDaemon *first, const char *role)
{
    EinsoraTestDaemon *daemon = einsora_test_daemon_new();

    einsora_test_daemon_setenv(daemon, "EINSORA_DATABASE_URL", database_url(first));
    einsora_test_daemon_setenv(daemon, "EINSORA_ROLE", role);
    einsora_test_daemon_setenv(daemon, "EINSORA_SIM_CPUS", "64");
    daemon->owner_token = g_strdup(first->owner_token);
    return daemon;
}

static gchar *
create_notebook(EinsoraTestDaemon *daemon, const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\":\"notebook\",\"name\":\"%s\","
                                             "\"gpu_class\":\"cpu-1c-2g\",\"image\":"
                                             "\"jupyter-linux\"}",
                                             name);
    g_autoptr(EinsoraTestResponse) created = einsora_test_request(
        daemon, "POST", "/v1/workloads", daemon->owner_token, "application/json", body, NULL);

    g_assert_cmpuint(created->status, ==, 201);
    return g_strdup(einsora_test_response_string(created, "id"));
}

static const char *
state_of(EinsoraTestResponse *response)
{
    return einsora_test_response_string(response, "state");
}

static void
wait_for_state(EinsoraTestDaemon *daemon, const char *id, const char *state, guint seconds)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    gint64 deadline = g_get_monotonic_time() + seconds * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response =
            einsora_test_request(daemon, "GET", path, daemon->owner_token, NULL, NULL, NULL);
        if (g_strcmp0(state_of(response), state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s", id, state_of(response), state);
        g_usleep(50 * 1000);
    }
}

/* The change feed of @daemon, read as raw lines: GET /v1/events?follow. */
static GDataInputStream *
open_feed(EinsoraTestDaemon *daemon, GSocketConnection **connection)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GUri) uri = g_uri_parse(daemon->uri, G_URI_FLAGS_NONE, NULL);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *request = NULL;
    GDataInputStream *lines;

    g_socket_client_set_timeout(client, WAIT_SECONDS);
    *connection =
        g_socket_client_connect_to_host(client, "127.0.0.1", g_uri_get_port(uri), NULL, &error);
    g_assert_no_error(error);
    request = g_strdup_printf("GET /v1/events?follow=true HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n",
                              daemon->owner_token);
    g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(*connection)),
                                            request, strlen(request), NULL, NULL, &error));
    g_assert_no_error(error);
    lines = g_data_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(*connection)));
    g_data_input_stream_set_newline_type(lines, G_DATA_STREAM_NEWLINE_TYPE_ANY);
    return lines;
}

/* Reads the feed until an event of @id moves it to @state. */
static void
feed_wait_for(GDataInputStream *lines, const char *id, const char *state)
{
    g_autofree gchar *to = g_strdup_printf("\"to_state\":\"%s\"", state);

    for (;;) {
        g_autoptr(GError) error = NULL;
        g_autofree gchar *line = g_data_input_stream_read_line(lines, NULL, NULL, &error);

        g_assert_no_error(error);
        g_assert_nonnull(line);
        if (g_str_has_prefix(line, "data: ") && strstr(line, id) != NULL && strstr(line, to))
            return;
    }
}

/* A create through the api process wakes the controller process at once
 * (its pass interval is a minute), and the controller's moves reach the
 * api process's change feed: each heard the other through Postgres. */
static void
test_api_and_controller(void)
{
    g_autoptr(EinsoraTestDaemon) controller = einsora_test_daemon_new();
    g_autoptr(EinsoraTestDaemon) api = NULL;
    g_autoptr(GSocketConnection) connection = NULL;
    g_autoptr(GDataInputStream) feed = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *logs_path = NULL;
    gint64 started;

    einsora_test_daemon_setenv(controller, "EINSORA_ROLE", "controller");
    einsora_test_daemon_setenv(controller, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(controller, "EINSORA_CONTROLLER_INTERVAL", "60s");
    einsora_test_daemon_start(controller);
    api = daemon_beside(controller, "api");
    einsora_test_daemon_start(api);
    g_assert_true(einsora_test_daemon_log_has(api, "role api, data in"));
    g_assert_false(einsora_test_daemon_log_has(api, "leading"));

    feed = open_feed(api, &connection);
    started = g_get_monotonic_time();
    id = create_notebook(api, "across-processes");
    feed_wait_for(feed, id, "running");
    /* Well inside the controller's minute: woken, not polled. */
    g_assert_cmpint(g_get_monotonic_time() - started, <, 20 * G_USEC_PER_SEC);
    wait_for_state(api, id, "running", 5);

    /* A stop through the api process: the controller acts at once too. */
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/stop", id);
        g_autoptr(EinsoraTestResponse) stopped =
            einsora_test_request(api, "POST", path, api->owner_token, NULL, NULL, NULL);
        g_assert_cmpuint(stopped->status, ==, 202);
    }
    feed_wait_for(feed, id, "stopped");
    g_assert_cmpint(g_get_monotonic_time() - started, <, 40 * G_USEC_PER_SEC);

    g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
    einsora_test_daemon_stop(api);
    einsora_test_daemon_stop(controller);
}

/* Two controllers of one region: the first leads, the second stands by;
 * the leader killed with -9, the second leads within the lease, and every
 * workload was admitted once. */
static void
test_controller_failover(void)
{
    g_autoptr(EinsoraTestDaemon) first = einsora_test_daemon_new();
    g_autoptr(EinsoraTestDaemon) second = NULL;
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    gint64 killed;

    einsora_test_daemon_setenv(first, "EINSORA_ROLE", "controller");
    einsora_test_daemon_setenv(first, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(first, "EINSORA_SIM_CPUS", "64");
    einsora_test_daemon_setenv(first, "EINSORA_CONTROLLER_INTERVAL", "1s");
    einsora_test_daemon_start(first);
    einsora_test_daemon_wait_for_log(first, "controller:local: leading", WAIT_SECONDS);
    second = daemon_beside(first, "controller");
    einsora_test_daemon_setenv(second, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(second, "EINSORA_CONTROLLER_INTERVAL", "1s");
    einsora_test_daemon_start(second);
    einsora_test_daemon_wait_for_log(second, "controller:local: another controller holds it now",
                                     WAIT_SECONDS);

    for (guint i = 0; i < 4; i++) {
        g_autofree gchar *name = g_strdup_printf("failover-%u", i);
        g_ptr_array_add(ids, create_notebook(second, name));
    }
    for (guint i = 0; i < ids->len; i++)
        wait_for_state(second, g_ptr_array_index(ids, i), "running", WAIT_SECONDS);

    einsora_test_daemon_kill(first);
    killed = g_get_monotonic_time();
    einsora_test_daemon_wait_for_log(second, "controller:local: leading", TAKEOVER_SECONDS);
    g_test_message("took over after %.1f s",
                   (double)(g_get_monotonic_time() - killed) / G_USEC_PER_SEC);

    /* The new leader runs what is created now, on the machine whose sync
     * it holds. */
    {
        g_autofree gchar *after = create_notebook(second, "after-failover");
        wait_for_state(second, after, "running", WAIT_SECONDS);
    }

    /* Admitted once each: one move to provisioning in every timeline. */
    for (guint i = 0; i < ids->len; i++) {
        g_autofree gchar *path =
            g_strdup_printf("/v1/workloads/%s/events", (const char *)g_ptr_array_index(ids, i));
        g_autoptr(EinsoraTestResponse) events =
            einsora_test_request(second, "GET", path, second->owner_token, NULL, NULL, NULL);
        JsonArray *items;
        guint admitted = 0;

        g_assert_cmpuint(events->status, ==, 200);
        items = json_object_get_array_member(json_node_get_object(events->json), "events");
        for (guint j = 0; j < json_array_get_length(items); j++) {
            JsonObject *event = json_array_get_object_element(items, j);
            if (g_strcmp0(json_object_get_string_member(event, "to_state"), "provisioning") == 0)
                admitted++;
        }
        g_assert_cmpuint(admitted, ==, 1);
    }
    einsora_test_daemon_stop(second);
}

/* A role other than all shares the work through Postgres: without
 * EINSORA_DATABASE_URL it is refused at start, as is a role that isn't. */
static void
test_role_settings(void)
{
    const char *const cases[][3] = {
        {"api", NULL, "needs the store they share"},
        {"cook", "postgresql:///x", "is none of api, controller, metering and all"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
            G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr(GSubprocess) process = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;

        g_subprocess_launcher_setenv(launcher, "EINSORA_ROLE", cases[i][0], TRUE);
        if (cases[i][1] != NULL)
            g_subprocess_launcher_setenv(launcher, "EINSORA_DATABASE_URL", cases[i][1], TRUE);
        else
            g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATABASE_URL");
        process = g_subprocess_launcher_spawn(launcher, &error, einsora_test_daemon_path(),
                                              "migrate", NULL);
        g_assert_no_error(error);
        g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &out, &err, &error));
        g_assert_cmpint(g_subprocess_get_exit_status(process), !=, 0);
        g_assert_nonnull(strstr(err, cases[i][2]));
    }
}

/* `einsora-daemon migrate` on Postgres: the schema made, said without the
 * connection string (it may hold a password), and again a no-op. */
static void
test_migrate(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();

    for (guint i = 0; i < 2; i++) {
        g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
            G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
        g_autoptr(GSubprocess) process = NULL;
        g_autoptr(GError) error = NULL;
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;

        g_subprocess_launcher_setenv(launcher, "EINSORA_DATABASE_URL", database_url(daemon), TRUE);
        process = g_subprocess_launcher_spawn(launcher, &error, einsora_test_daemon_path(),
                                              "--data-dir", daemon->data_dir, "migrate", NULL);
        g_assert_no_error(error);
        g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &out, &err, &error));
        g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
        g_assert_nonnull(strstr(out, "the PostgreSQL database is up to date"));
        g_assert_null(strstr(out, database_url(daemon)));
        g_assert_null(strstr(err, database_url(daemon)));
    }
    /* The daemon starts on what migrate made. */
    einsora_test_daemon_start(daemon);
    einsora_test_daemon_stop(daemon);
}

/* The metering role runs no listener: it starts, says so, and stops. */
static void
test_metering_role(void)
{
    g_autoptr(EinsoraTestDaemon) first = einsora_test_daemon_new();
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GDataInputStream) lines = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *data_dir = g_build_filename(first->dir, "metering", NULL);

    einsora_test_daemon_start(first);
    g_subprocess_launcher_setenv(launcher, "EINSORA_ROLE", "metering", TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_DATABASE_URL", database_url(first), TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_DRIVERS", "", TRUE);
    process = g_subprocess_launcher_spawn(launcher, &error, einsora_test_daemon_path(),
                                          "--data-dir", data_dir, NULL);
    g_assert_no_error(error);
    lines = g_data_input_stream_new(g_subprocess_get_stdout_pipe(process));
    for (;;) {
        g_autofree gchar *line = g_data_input_stream_read_line(lines, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_nonnull(line);
        g_assert_null(strstr(line, "listening on"));
        if (strstr(line, "role metering, data in") != NULL)
            break;
    }
    g_subprocess_send_signal(process, SIGTERM);
    g_assert_true(g_subprocess_wait(process, NULL, &error));
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
    einsora_test_daemon_stop(first);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!einsora_test_daemon_on_postgres()) {
        g_print("1..0 # SKIP roles share a Postgres store: run with EINSORA_TEST_STORE=postgres\n");
        return 77;
    }
    g_test_add_func("/roles/settings", test_role_settings);
    g_test_add_func("/roles/migrate", test_migrate);
    g_test_add_func("/roles/api-and-controller", test_api_and_controller);
    g_test_add_func("/roles/metering", test_metering_role);
    g_test_add_func("/roles/controller-failover", test_controller_failover);
    return g_test_run();
}
