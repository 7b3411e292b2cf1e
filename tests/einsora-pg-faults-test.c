/* The real daemon on Postgres when the store fails under it (issue 21):
 * its connections ended by the server (pg_terminate_backend), and the
 * server down for a while. Requests get 503 with Retry-After, never a
 * wrong answer; the controller pauses; what runs keeps running; and the
 * daemon connects again by itself. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "einsora-test-daemon-sql.h"
#include "einsora-test-daemon.h"
#include "einsora-test-postgres.h"

#define WAIT_SECONDS 30

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

/* GET the workload: 200 with its state, or 503 with Retry-After. */
static gchar *
state_or_unavailable(EinsoraTestDaemon *daemon, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    g_autoptr(EinsoraTestResponse) response =
        einsora_test_request(daemon, "GET", path, daemon->owner_token, NULL, NULL, NULL);

    if (response->status == 503) {
        g_assert_nonnull(soup_message_headers_get_one(response->headers, "Retry-After"));
        g_assert_cmpstr(einsora_test_response_error_code(response), ==, "unavailable");
        g_assert_null(strstr(response->body, "postgres"));
        return NULL;
    }
    g_assert_cmpuint(response->status, ==, 200);
    return g_strdup(einsora_test_response_string(response, "state"));
}

static void
wait_for_state(EinsoraTestDaemon *daemon, const char *id, const char *state)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *now = state_or_unavailable(daemon, id);
        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s", id, now != NULL ? now : "(503)", state);
        g_usleep(50 * 1000);
    }
}

static EinsoraTestDaemon *
start_daemon(void)
{
    EinsoraTestDaemon *daemon = einsora_test_daemon_new();

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    einsora_test_daemon_start(daemon);
    return daemon;
}

/* The server ends every session of the daemon's: the request that finds
 * its connection gone is 503, the next ones are answered; the listening
 * connection comes back too; the workload ran on. */
static void
test_sessions_terminated(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = start_daemon();
    g_autofree gchar *id = create_notebook(daemon, "terminated");
    g_autofree gchar *after = NULL;
    guint unavailable = 0;

    wait_for_state(daemon, id, "running");
    einsora_test_daemon_exec_sql(daemon,
                                 "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                 "datname = current_database() AND pid <> pg_backend_pid()");
    for (guint i = 0; i < 5; i++) {
        g_autofree gchar *state = state_or_unavailable(daemon, id);
        if (state == NULL)
            unavailable++;
        else
            g_assert_cmpstr(state, ==, "running");
    }
    /* At most the request that found the connection gone, and the
     * controller's pass may have found it first. */
    g_assert_cmpuint(unavailable, <=, 1);
    einsora_test_daemon_wait_for_log(daemon, "listening for other processes' events again",
                                     WAIT_SECONDS);
    after = create_notebook(daemon, "after-terminate");
    wait_for_state(daemon, after, "running");
    wait_for_state(daemon, id, "running");
    einsora_test_daemon_stop(daemon);
}

/* The server down: requests are 503 with Retry-After and /readyz says
 * not ready; the controller pauses; when it is back everything answers
 * again and the workload is still running, never stopped or moved. */
static void
test_server_down(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = start_daemon();
    g_autofree gchar *id = create_notebook(daemon, "outage");
    EinsoraTestPostgres *postgres = einsora_test_daemon_get_postgres();
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/events", id);

    wait_for_state(daemon, id, "running");
    einsora_test_postgres_pause(postgres);
    for (guint i = 0; i < 3; i++) {
        g_autofree gchar *state = state_or_unavailable(daemon, id);
        g_autoptr(EinsoraTestResponse) ready =
            einsora_test_request(daemon, "GET", "/readyz", NULL, NULL, NULL, NULL);
        g_assert_null(state);
        g_assert_cmpuint(ready->status, ==, 503);
        g_assert_nonnull(soup_message_headers_get_one(ready->headers, "Retry-After"));
    }
    {
        /* A write refused as a whole: nothing half-made when it's back. */
        g_autoptr(EinsoraTestResponse) refused = einsora_test_request(
            daemon, "POST", "/v1/workloads", daemon->owner_token, "application/json",
            "{\"kind\":\"notebook\",\"name\":\"during\",\"gpu_class\":\"cpu-1c-2g\","
            "\"image\":\"jupyter-linux\"}",
            NULL);
        g_assert_cmpuint(refused->status, ==, 503);
        g_assert_nonnull(soup_message_headers_get_one(refused->headers, "Retry-After"));
    }
    einsora_test_daemon_wait_for_log(daemon, "controller paused", WAIT_SECONDS);
    einsora_test_postgres_resume(postgres);
    wait_for_state(daemon, id, "running");
    einsora_test_daemon_wait_for_log(daemon, "controller resumed", WAIT_SECONDS);
    {
        g_auto(GStrv) during =
            einsora_test_daemon_query_sql(daemon, "SELECT id FROM workloads WHERE name = 'during'");
        g_autoptr(EinsoraTestResponse) events =
            einsora_test_request(daemon, "GET", path, daemon->owner_token, NULL, NULL, NULL);
        JsonArray *items;

        g_assert_cmpuint(g_strv_length(during), ==, 0);
        /* Created, admitted, running: nothing else happened to it. */
        g_assert_cmpuint(events->status, ==, 200);
        items = json_object_get_array_member(json_node_get_object(events->json), "events");
        g_assert_cmpuint(json_array_get_length(items), ==, 3);
    }
    einsora_test_daemon_stop(daemon);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!einsora_test_daemon_on_postgres()) {
        g_print("1..0 # SKIP the Postgres store's faults: run with EINSORA_TEST_STORE=postgres\n");
        return 77;
    }
    g_test_add_func("/pg-faults/sessions-terminated", test_sessions_terminated);
    g_test_add_func("/pg-faults/server-down", test_server_down);
    return g_test_run();
}
