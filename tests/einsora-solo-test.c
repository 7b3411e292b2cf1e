/* Solo end to end with the real einsora-daemon: the API, the controller,
 * the hub and the in-process agent with the sim driver (which runs
 * nothing). A workload goes to running, stops, starts and is deleted, and
 * its timeline says why at every step. */
#include "einsora-test-daemon.h"

#define JSON "application/json"

static EinsoraTestDaemon *server;

static EinsoraTestResponse *
call(const char *method, const char *path, const char *body)
{
    return einsora_test_request(server, method, path, server->owner_token, JSON, body, NULL);
}

/* Polls the workload until it is in @state (the controller runs every
 * 200 ms here); fails after 30 s. */
static void
wait_for_state(const char *id, const char *state)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response = call("GET", path, NULL);
        const char *now = einsora_test_response_string(response, "state");
        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s, after 30 s", id, now, state);
        g_usleep(50 * 1000);
    }
}

static GPtrArray *
reasons_of(const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/events", id);
    g_autoptr(EinsoraTestResponse) response = call("GET", path, NULL);
    JsonArray *events =
        json_object_get_array_member(json_node_get_object(response->json), "events");
    GPtrArray *reasons = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonObject *event = json_array_get_object_element(events, i);
        g_ptr_array_add(reasons,
                        g_strdup_printf("%s: %s", json_object_get_string_member(event, "to_state"),
                                        json_object_get_string_member(event, "reason")));
    }
    return reasons;
}

static gboolean
has_reason(GPtrArray *reasons, const char *prefix)
{
    for (guint i = 0; i < reasons->len; i++) {
        if (g_str_has_prefix(g_ptr_array_index(reasons, i), prefix))
            return TRUE;
    }
    return FALSE;
}

static void
test_notebook_lifecycle(void)
{
    g_autoptr(EinsoraTestResponse) created =
        call("POST", "/v1/workloads",
             "{\"kind\":\"notebook\",\"name\":\"solo\",\"gpu_class\":\"cpu-2c-4g\","
             "\"image\":\"jupyter-notebook\"}");
    g_autofree gchar *id = g_strdup(einsora_test_response_string(created, "id"));
    g_autofree gchar *stop = g_strdup_printf("/v1/workloads/%s/stop", id);
    g_autofree gchar *start = g_strdup_printf("/v1/workloads/%s/start", id);
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    g_autoptr(GPtrArray) reasons = NULL;

    g_assert_cmpuint(created->status, ==, 201);
    wait_for_state(id, "running");
    reasons = reasons_of(id);
    for (guint i = 0; i < reasons->len; i++)
        g_test_message("%s", (const char *)g_ptr_array_index(reasons, i));
    g_assert_true(has_reason(reasons, "pending: created by owner@localhost"));
    g_assert_true(has_reason(reasons, "provisioning: admitted: 1 × cpu-2c-4g on "));
    g_assert_nonnull(strstr(g_ptr_array_index(reasons, 1), " with sim"));
    g_assert_true(has_reason(reasons, "running: ready"));

    {
        g_autoptr(EinsoraTestResponse) stopped = call("POST", stop, NULL);
        g_assert_cmpuint(stopped->status, ==, 202);
    }
    wait_for_state(id, "stopped");
    {
        g_autoptr(EinsoraTestResponse) started = call("POST", start, NULL);
        g_assert_cmpuint(started->status, ==, 202);
    }
    wait_for_state(id, "running");
    {
        g_autoptr(EinsoraTestResponse) deleted = call("DELETE", path, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    wait_for_state(id, "deleted");
    g_clear_pointer(&reasons, g_ptr_array_unref);
    reasons = reasons_of(id);
    g_assert_true(has_reason(reasons, "stopped: resources released"));
    g_assert_true(has_reason(reasons, "deleted: gone"));
}

static gchar *
launch(const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\":\"notebook\",\"name\":\"%s\","
                                             "\"gpu_class\":\"cpu-2c-4g\","
                                             "\"image\":\"jupyter-notebook\"}",
                                             name);
    g_autoptr(EinsoraTestResponse) created = call("POST", "/v1/workloads", body);

    g_assert_cmpuint(created->status, ==, 201);
    return g_strdup(einsora_test_response_string(created, "id"));
}

/* With the controller's tick an hour away, a create still reaches
 * running, and a stop and a delete still finish: the create and the
 * agent's report wake the controller (docs/adr/0029). Each step has the
 * usual 30 s; without the wakes it would wait for the hour. */
static void
test_wakes_without_the_interval(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    EinsoraTestDaemon *shared = server;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *stop = NULL;

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_start(daemon);
    server = daemon;
    id = launch("woken");
    path = g_strdup_printf("/v1/workloads/%s", id);
    stop = g_strdup_printf("/v1/workloads/%s/stop", id);
    wait_for_state(id, "running");
    {
        g_autoptr(EinsoraTestResponse) stopped = call("POST", stop, NULL);
        g_assert_cmpuint(stopped->status, ==, 202);
    }
    wait_for_state(id, "stopped");
    {
        g_autoptr(EinsoraTestResponse) deleted = call("DELETE", path, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    wait_for_state(id, "deleted");
    server = shared;
    einsora_test_daemon_stop(daemon);
}

/* Every state change has exactly one event: the transitions chain from
 * creation to the row's state, each state entered once, and nothing was
 * stopped or deleted. Notes (from == to) may come in between. */
static void
assert_one_event_per_change(const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/events", id);
    g_autoptr(EinsoraTestResponse) response = call("GET", path, NULL);
    JsonArray *events =
        json_object_get_array_member(json_node_get_object(response->json), "events");
    g_autoptr(GString) chain = g_string_new(NULL);
    const char *state = NULL;

    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonObject *event = json_array_get_object_element(events, i);
        const char *to = json_object_get_string_member(event, "to_state");
        if (json_object_get_boolean_member(event, "note"))
            continue;
        if (i > 0)
            g_assert_cmpstr(json_object_get_string_member(event, "from_state"), ==, state);
        g_string_append_printf(chain, "%s%s", chain->len > 0 ? " " : "", to);
        state = to;
    }
    g_assert_cmpstr(chain->str, ==, "pending provisioning running");
}

/* The hub works out a machine's whole desired state for each workload it
 * observes, so a pass costs the square of the workloads; under the
 * sanitizers, which unwind the stack at every allocation (for
 * tests/lsan.supp), 60 take a pass longer than the tests' deadlines. */
#if defined(__SANITIZE_ADDRESS__)
#define STEADY_WORKLOADS 10
#define UNDERWAY_WORKLOADS 3
#else
#define STEADY_WORKLOADS 50
#define UNDERWAY_WORKLOADS 10
#endif

/* kill -9 while 50 workloads (10 under the sanitizers) run and more are on
 * their way: after the restart nothing was stopped or deleted that nobody
 * asked to be, the waiting ones go on to running, and each change is
 * recorded once. */
static void
test_restart_after_kill(void)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < STEADY_WORKLOADS; i++) {
        g_autofree gchar *name = g_strdup_printf("steady-%u", i);
        g_ptr_array_add(ids, launch(name));
    }
    for (guint i = 0; i < ids->len; i++)
        wait_for_state(g_ptr_array_index(ids, i), "running");
    for (guint i = 0; i < UNDERWAY_WORKLOADS; i++) {
        g_autofree gchar *name = g_strdup_printf("underway-%u", i);
        g_ptr_array_add(ids, launch(name));
    }
    einsora_test_daemon_kill(server);
    einsora_test_daemon_start(server);

    for (guint i = 0; i < ids->len; i++)
        wait_for_state(g_ptr_array_index(ids, i), "running");
    /* A few more passes, to see that nothing changes afterwards. */
    g_usleep(G_USEC_PER_SEC);
    for (guint i = 0; i < ids->len; i++) {
        g_test_message("%s", (const char *)g_ptr_array_index(ids, i));
        wait_for_state(g_ptr_array_index(ids, i), "running");
        assert_one_event_per_change(g_ptr_array_index(ids, i));
    }
    {
        /* All of them hold capacity on this machine, and the machine says so. */
        g_autoptr(EinsoraTestResponse) machines = call("GET", "/v1/machines", NULL);
        JsonArray *list =
            json_object_get_array_member(json_node_get_object(machines->json), "machines");
        g_assert_cmpint(
            json_object_get_int_member(json_array_get_object_element(list, 0), "workloads"), ==,
            ids->len);
    }
}

static void
test_machine_is_online(void)
{
    g_autoptr(EinsoraTestResponse) machines = call("GET", "/v1/machines", NULL);
    JsonArray *list =
        json_object_get_array_member(json_node_get_object(machines->json), "machines");

    g_assert_cmpuint(machines->status, ==, 200);
    g_assert_cmpuint(json_array_get_length(list), ==, 1);
    g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(list, 0), "status"),
                    ==, "online");
}

/* One agent per machine: a second daemon on the same state directory
 * refuses to start, saying why, and the first keeps serving. */
static void
test_second_daemon_refused(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) second = NULL;

    g_subprocess_launcher_setenv(launcher, "EINSORA_DRIVERS", "sim", TRUE);
    second = g_subprocess_launcher_spawn(launcher, &error, einsora_test_daemon_path(), "--data-dir",
                                         server->data_dir, "--listen", "127.0.0.1:0", NULL);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(second, NULL, NULL, &out, &err, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(second));
    g_assert_cmpint(g_subprocess_get_exit_status(second), ==, 1);
    g_assert_nonnull(strstr(err, "another Einsora agent already runs on this machine"));
    test_machine_is_online();
}

/* What this machine has reaches GET /v1/machines: GPUs from NVML (a
 * stand-in library, loaded the way the real one is), each with the class
 * the catalog maps its model to, and the drivers that work. */
static void
test_inventory_in_the_api(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autoptr(EinsoraTestResponse) response = NULL;
    JsonObject *machine;
    JsonArray *gpus, *drivers;

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_NVML_LIBRARY", g_getenv("EINSORA_FAKE_NVML"));
    einsora_test_daemon_setenv(daemon, "FAKE_NVML_GPUS", "NVIDIA H200:143771,NVIDIA Quadro X:8000");
    einsora_test_daemon_start(daemon);
    response =
        einsora_test_request(daemon, "GET", "/v1/machines", daemon->owner_token, NULL, NULL, NULL);
    g_assert_cmpuint(response->status, ==, 200);
    machine = json_array_get_object_element(
        json_object_get_array_member(json_node_get_object(response->json), "machines"), 0);
    gpus = json_object_get_array_member(machine, "gpus");
    g_assert_cmpuint(json_array_get_length(gpus), ==, 2);
    g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(gpus, 0), "model"),
                    ==, "NVIDIA H200");
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(gpus, 0), "gpu_class"), ==,
        "h200-141gb");
    g_assert_cmpint(
        json_object_get_int_member(json_array_get_object_element(gpus, 0), "memory_mib"), ==,
        143771);
    /* A model no class of this installation lists serves none. */
    g_assert_true(json_object_get_null_member(json_array_get_object_element(gpus, 1), "gpu_class"));
    drivers = json_object_get_array_member(machine, "drivers");
    g_assert_cmpuint(json_array_get_length(drivers), ==, 1);
    g_assert_cmpstr(json_array_get_string_element(drivers, 0), ==, "sim");
    einsora_test_daemon_stop(daemon);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    server = einsora_test_daemon_new();
    einsora_test_daemon_setenv(server, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(server, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    /* Slow enough starts that some workloads are on their way at a kill. */
    einsora_test_daemon_setenv(server, "EINSORA_SIM_START_DELAY_MS", "300");
    /* Room for 60 sim workloads on a 2-CPU machine. */
    einsora_test_daemon_setenv(server, "EINSORA_SIM_CPUS", "256");
    einsora_test_daemon_setenv(server, "EINSORA_SIM_MEMORY_MIB", "1048576");
    einsora_test_daemon_start(server);
    g_test_add_func("/solo/machine/online", test_machine_is_online);
    g_test_add_func("/solo/notebook/launch-stop-start-delete", test_notebook_lifecycle);
    g_test_add_func("/solo/restart/kill-9-changes-nothing", test_restart_after_kill);
    g_test_add_func("/solo/host-lock/second-daemon-refused", test_second_daemon_refused);
    g_test_add_func("/solo/machine/inventory-in-the-api", test_inventory_in_the_api);
    g_test_add_func("/solo/controller/wakes-without-the-interval", test_wakes_without_the_interval);
    status = g_test_run();
    einsora_test_daemon_stop(server);
    einsora_test_daemon_free(server);
    return status;
}
