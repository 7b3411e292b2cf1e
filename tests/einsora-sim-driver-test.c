#include "einsora-agent-driver.h"
#include "einsora-sim-driver.h"

#define WORKLOAD_1 "0190b5d2-7c4e-7abc-8def-000000000001"
#define WORKLOAD_2 "0190b5d2-7c4e-7abc-8def-000000000002"
#define TENANT_ID "0190b5d2-7c4e-7abc-8def-00000000000a"

/* Every wait is bounded: a driver that never answers fails the test. */
#define WAIT_LIMIT_MS 5000

static gboolean
on_flag(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static void
wait_result(GAsyncResult **slot)
{
    gboolean expired = FALSE;
    guint guard = g_timeout_add(WAIT_LIMIT_MS, on_flag, &expired);

    while (*slot == NULL && !expired)
        g_main_context_iteration(NULL, TRUE);
    if (!expired)
        g_source_remove(guard);
    g_assert_nonnull(*slot);
}

/* Runs the main loop for @ms, whatever happens meanwhile. */
static void
iterate_for(guint ms)
{
    gboolean done = FALSE;

    g_timeout_add(ms, on_flag, &done);
    while (!done)
        g_main_context_iteration(NULL, TRUE);
}

static EinsoraStatusCode
status_of(EinsoraSimDriver *driver, const char *workload_id, gint64 *attempt)
{
    return einsora_agent_driver_get_status(EINSORA_AGENT_DRIVER(driver), workload_id, attempt);
}

static void
wait_status(EinsoraSimDriver *driver, const char *workload_id, EinsoraStatusCode code)
{
    gboolean expired = FALSE;
    guint guard = g_timeout_add(WAIT_LIMIT_MS, on_flag, &expired);

    while (status_of(driver, workload_id, NULL) != code && !expired)
        g_main_context_iteration(NULL, TRUE);
    if (!expired)
        g_source_remove(guard);
    g_assert_cmpstr(einsora_status_code_to_string(status_of(driver, workload_id, NULL)), ==,
                    einsora_status_code_to_string(code));
}

static EinsoraDesiredWorkload *
desired_new(const char *workload_id, gint64 attempt)
{
    EinsoraDesiredWorkload *workload = einsora_desired_workload_new();

    workload->workload_id = g_strdup(workload_id);
    workload->tenant_id = g_strdup(TENANT_ID);
    workload->mode = EINSORA_WORKLOAD_MODE_RUN;
    workload->attempt = attempt;
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    workload->driver = g_strdup("sim");
    workload->placed_class = g_strdup("cpu-4c-16g");
    workload->image = g_strdup("jupyter-scipy");
    workload->runtime_reference = g_strdup("sim:jupyter");
    workload->cpus = 4;
    workload->memory_mib = 16384;
    return workload;
}

static void
start(EinsoraSimDriver *driver, const char *workload_id, gint64 attempt, GCancellable *cancellable,
      GAsyncResult **slot)
{
    g_autoptr(EinsoraDesiredWorkload) workload = desired_new(workload_id, attempt);

    einsora_agent_driver_start_async(EINSORA_AGENT_DRIVER(driver), workload, cancellable, on_done,
                                     slot);
}

static gboolean
start_sync(EinsoraSimDriver *driver, const char *workload_id, gint64 attempt,
           GCancellable *cancellable, GError **error)
{
    g_autoptr(GAsyncResult) result = NULL;

    start(driver, workload_id, attempt, cancellable, &result);
    wait_result(&result);
    return einsora_agent_driver_start_finish(EINSORA_AGENT_DRIVER(driver), result, error);
}

static gboolean
stop_sync(EinsoraSimDriver *driver, const char *workload_id, GCancellable *cancellable,
          GError **error)
{
    g_autoptr(GAsyncResult) result = NULL;

    einsora_agent_driver_stop_async(EINSORA_AGENT_DRIVER(driver), workload_id, cancellable, on_done,
                                    &result);
    wait_result(&result);
    return einsora_agent_driver_stop_finish(EINSORA_AGENT_DRIVER(driver), result, error);
}

static gboolean
remove_sync(EinsoraSimDriver *driver, const char *workload_id, GCancellable *cancellable,
            GError **error)
{
    g_autoptr(GAsyncResult) result = NULL;

    einsora_agent_driver_remove_async(EINSORA_AGENT_DRIVER(driver), workload_id, cancellable,
                                      on_done, &result);
    wait_result(&result);
    return einsora_agent_driver_remove_finish(EINSORA_AGENT_DRIVER(driver), result, error);
}

static gboolean
lists(EinsoraSimDriver *driver, const char *workload_id)
{
    g_auto(GStrv) ids = einsora_agent_driver_list_workloads(EINSORA_AGENT_DRIVER(driver));

    return g_strv_contains((const char *const *)ids, workload_id);
}

static void
test_start_running_after_delay(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;
    gint64 began = g_get_monotonic_time();

    einsora_sim_driver_set_start_delay(driver, 50);
    g_assert_cmpstr(einsora_agent_driver_get_name(EINSORA_AGENT_DRIVER(driver)), ==, "sim");
    start(driver, WORKLOAD_1, 1, NULL, &result);
    /* Long work reads as progressing, for the attempt being started. */
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_STARTING);
    g_assert_cmpint(attempt, ==, 1);
    wait_result(&result);
    g_assert_true(einsora_agent_driver_start_finish(EINSORA_AGENT_DRIVER(driver), result, &error));
    g_assert_no_error(error);
    g_assert_cmpint(g_get_monotonic_time() - began, >=, 50 * 1000);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(attempt, ==, 1);
    g_assert_true(lists(driver, WORKLOAD_1));
    g_clear_object(&result);
    g_assert_finalize_object(driver);
}

static void
test_stop_keeps_data(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    einsora_sim_driver_set_stop_delay(driver, 30);
    g_assert_true(start_sync(driver, WORKLOAD_1, 4, NULL, &error));
    einsora_agent_driver_stop_async(EINSORA_AGENT_DRIVER(driver), WORKLOAD_1, NULL, on_done,
                                    &result);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_STOPPING);
    wait_result(&result);
    g_assert_true(einsora_agent_driver_stop_finish(EINSORA_AGENT_DRIVER(driver), result, &error));
    g_assert_no_error(error);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_cmpint(attempt, ==, 4);
    /* Parked: its data is kept, so the driver still holds it. */
    g_assert_true(lists(driver, WORKLOAD_1));
    /* Stopping what never ran is done at once and creates nothing. */
    g_assert_true(stop_sync(driver, WORKLOAD_2, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_2, &attempt), ==, EINSORA_STATUS_CODE_UNKNOWN);
    g_assert_cmpint(attempt, ==, EINSORA_AGENT_DRIVER_NO_ATTEMPT);
    g_clear_object(&result);
    g_assert_finalize_object(driver);
}

static void
test_remove_deletes_data(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    einsora_sim_driver_set_stop_delay(driver, 30);
    g_assert_true(start_sync(driver, WORKLOAD_1, 2, NULL, &error));
    einsora_agent_driver_remove_async(EINSORA_AGENT_DRIVER(driver), WORKLOAD_1, NULL, on_done,
                                      &result);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_REMOVING);
    wait_result(&result);
    g_assert_true(einsora_agent_driver_remove_finish(EINSORA_AGENT_DRIVER(driver), result, &error));
    g_assert_no_error(error);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_REMOVED);
    g_assert_cmpint(attempt, ==, 2);
    g_assert_false(lists(driver, WORKLOAD_1));
    /* Removing is idempotent, and a workload never seen is removed too. */
    g_assert_true(remove_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_true(remove_sync(driver, WORKLOAD_2, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(status_of(driver, WORKLOAD_2, &attempt), ==, EINSORA_STATUS_CODE_REMOVED);
    g_assert_cmpint(attempt, ==, EINSORA_AGENT_DRIVER_NO_ATTEMPT);
    /* Stopping a removed workload leaves it removed. */
    g_assert_true(stop_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_REMOVED);
    g_clear_object(&result);
    g_assert_finalize_object(driver);
}

static void
test_scripted_failures(void)
{
    static const struct {
        const char *code;
        EinsoraStatusCode expected;
        const char *reason;
    } table[] = {
        {"failed_to_start", EINSORA_STATUS_CODE_FAILED_TO_START, NULL},
        {"out_of_memory", EINSORA_STATUS_CODE_OUT_OF_MEMORY, "it ran out of memory"},
        {"image_missing", EINSORA_STATUS_CODE_IMAGE_MISSING, NULL},
        {"driver_missing", EINSORA_STATUS_CODE_DRIVER_MISSING, "its machine has no driver for it"},
        {"gpu_busy", EINSORA_STATUS_CODE_GPU_BUSY, "waiting for its machine's GPU to be free"},
        {"weird_thing", EINSORA_STATUS_CODE_UNKNOWN, "its machine reported a problem"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        EinsoraSimDriver *driver = einsora_sim_driver_new();
        g_autoptr(GError) error = NULL;
        gint64 attempt = 0;
        EinsoraStatusCode code;

        g_test_message("case %u: %s", i, table[i].code);
        einsora_sim_driver_set_start_delay(driver, 10);
        g_assert_true(einsora_sim_driver_script_failure(driver, WORKLOAD_1, table[i].code, &error));
        g_assert_no_error(error);
        g_assert_false(start_sync(driver, WORKLOAD_1, 3, NULL, &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
        code = status_of(driver, WORKLOAD_1, &attempt);
        g_assert_cmpint(code, ==, table[i].expected);
        g_assert_cmpint(attempt, ==, 3);
        if (table[i].reason != NULL)
            g_assert_cmpstr(einsora_status_code_reason(code), ==, table[i].reason);
        /* A script keyed by workload ID touches no other workload. */
        g_clear_error(&error);
        g_assert_true(start_sync(driver, WORKLOAD_2, 1, NULL, &error));
        g_assert_no_error(error);
        g_assert_cmpint(status_of(driver, WORKLOAD_2, NULL), ==, EINSORA_STATUS_CODE_RUNNING);
        g_assert_finalize_object(driver);
    }
}

/* A script for all applies to every workload; a workload's own script
 * replaces it; clearing scripts makes starts work again. */
static void
test_script_for_all(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GError) error = NULL;

    g_assert_true(einsora_sim_driver_script_failure(driver, NULL, "out_of_memory", &error));
    einsora_sim_driver_script_exit_after(driver, WORKLOAD_2, 1000);
    g_assert_false(start_sync(driver, WORKLOAD_1, 1, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_OUT_OF_MEMORY);
    g_clear_error(&error);
    g_assert_true(start_sync(driver, WORKLOAD_2, 1, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_2, NULL), ==, EINSORA_STATUS_CODE_RUNNING);

    /* Parking a failed workload stops it at once and keeps its data. */
    g_assert_true(stop_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_true(lists(driver, WORKLOAD_1));

    einsora_sim_driver_clear_scripts(driver);
    g_assert_true(start_sync(driver, WORKLOAD_1, 2, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_finalize_object(driver);
}

static void
test_script_refuses_non_failures(void)
{
    static const char *const refused[] = {"running", "starting", "stopped", "removed",
                                          "exited",  "",         "stopping"};
    g_autoptr(EinsoraSimDriver) driver = einsora_sim_driver_new();

    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autoptr(GError) error = NULL;
        g_test_message("case %u: \"%s\"", i, refused[i]);
        g_assert_false(einsora_sim_driver_script_failure(driver, NULL, refused[i], &error));
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    }
}

static void
test_exit_after(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    einsora_sim_driver_script_exit_after(driver, WORKLOAD_1, 40);
    g_assert_true(start_sync(driver, WORKLOAD_1, 5, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_RUNNING);
    wait_status(driver, WORKLOAD_1, EINSORA_STATUS_CODE_EXITED);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_EXITED);
    g_assert_cmpint(attempt, ==, 5);
    g_assert_cmpstr(einsora_status_code_reason(EINSORA_STATUS_CODE_EXITED), ==,
                    "it stopped by itself");
    /* A stop before the exit cancels it: a parked workload doesn't exit. */
    einsora_sim_driver_script_exit_after(driver, WORKLOAD_2, 40);
    g_assert_true(start_sync(driver, WORKLOAD_2, 1, NULL, &error));
    g_assert_true(stop_sync(driver, WORKLOAD_2, NULL, &error));
    iterate_for(80);
    g_assert_cmpint(status_of(driver, WORKLOAD_2, NULL), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_finalize_object(driver);
}

static void
test_never_ready(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GError) error = NULL;

    einsora_sim_driver_script_never_ready(driver, WORKLOAD_1);
    /* The call returns; the workload reports it is still starting. */
    g_assert_true(start_sync(driver, WORKLOAD_1, 1, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_STARTING);
    iterate_for(60);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_STARTING);
    g_assert_true(stop_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_finalize_object(driver);
}

static gboolean
cancel_now(gpointer user_data)
{
    g_cancellable_cancel(G_CANCELLABLE(user_data));
    return G_SOURCE_REMOVE;
}

/* A caller's time limit: a cancellable cancelled by a timer. */
static GCancellable *
cancel_after(guint ms)
{
    GCancellable *cancellable = g_cancellable_new();

    g_timeout_add_full(G_PRIORITY_DEFAULT, ms, cancel_now, g_object_ref(cancellable),
                       g_object_unref);
    return cancellable;
}

static void
test_cancellation(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GCancellable) limit = NULL;
    g_autoptr(GCancellable) cancelled = g_cancellable_new();
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;
    gint64 began;

    /* A start that would take an hour gives up when its caller does. */
    einsora_sim_driver_set_start_delay(driver, EINSORA_SIM_MAX_DELAY_MS);
    einsora_sim_driver_set_stop_delay(driver, EINSORA_SIM_MAX_DELAY_MS);
    limit = cancel_after(30);
    began = g_get_monotonic_time();
    g_assert_false(start_sync(driver, WORKLOAD_1, 1, limit, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpint(g_get_monotonic_time() - began, <, 2 * G_USEC_PER_SEC);
    /* Nothing runs after a cancelled start; the attempt is remembered. */
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_cmpint(attempt, ==, 1);
    g_clear_error(&error);
    g_clear_object(&limit);

    /* A cancelled stop or removal leaves a running workload running. */
    einsora_sim_driver_set_start_delay(driver, 0);
    g_assert_true(start_sync(driver, WORKLOAD_1, 2, NULL, &error));
    limit = cancel_after(20);
    g_assert_false(stop_sync(driver, WORKLOAD_1, limit, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_RUNNING);
    g_clear_error(&error);
    g_clear_object(&limit);
    limit = cancel_after(20);
    g_assert_false(remove_sync(driver, WORKLOAD_1, limit, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_true(lists(driver, WORKLOAD_1));
    g_clear_error(&error);

    /* Already cancelled: nothing happens at all. */
    g_cancellable_cancel(cancelled);
    g_assert_false(start_sync(driver, WORKLOAD_2, 1, cancelled, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpint(status_of(driver, WORKLOAD_2, &attempt), ==, EINSORA_STATUS_CODE_UNKNOWN);
    g_assert_cmpint(attempt, ==, EINSORA_AGENT_DRIVER_NO_ATTEMPT);
    g_clear_error(&error);
    g_assert_false(stop_sync(driver, WORKLOAD_1, cancelled, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_finalize_object(driver);
}

/* A start is made at most once per attempt; another attempt must wait for
 * the one still running to be stopped. */
static void
test_attempts(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_UNKNOWN);
    g_assert_cmpint(attempt, ==, EINSORA_AGENT_DRIVER_NO_ATTEMPT);
    g_assert_true(start_sync(driver, WORKLOAD_1, 1, NULL, &error));
    einsora_sim_driver_set_start_delay(driver, EINSORA_SIM_MAX_DELAY_MS);
    /* The same attempt again: already started, at once. */
    g_assert_true(start_sync(driver, WORKLOAD_1, 1, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(attempt, ==, 1);
    /* Another attempt while this one runs: refused, nothing changes. */
    g_assert_false(start_sync(driver, WORKLOAD_1, 2, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(attempt, ==, 1);
    g_clear_error(&error);

    einsora_sim_driver_set_start_delay(driver, 0);
    g_assert_true(stop_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_true(start_sync(driver, WORKLOAD_1, 2, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(attempt, ==, 2);
    /* A restored database's lower attempt still runs: equality, not order. */
    g_assert_true(stop_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_true(start_sync(driver, WORKLOAD_1, 0, NULL, &error));
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(attempt, ==, 0);
    g_assert_finalize_object(driver);
}

/* A stop that arrives while a start is in flight wins: the start ends
 * cancelled, and the workload ends stopped. */
static void
test_stop_supersedes_start(void)
{
    EinsoraSimDriver *driver = einsora_sim_driver_new();
    g_autoptr(GAsyncResult) started = NULL;
    g_autoptr(GError) error = NULL;
    gint64 attempt = 0;

    einsora_sim_driver_set_start_delay(driver, EINSORA_SIM_MAX_DELAY_MS);
    einsora_sim_driver_set_stop_delay(driver, 10);
    start(driver, WORKLOAD_1, 7, NULL, &started);
    g_assert_true(stop_sync(driver, WORKLOAD_1, NULL, &error));
    g_assert_no_error(error);
    wait_result(&started);
    g_assert_false(
        einsora_agent_driver_start_finish(EINSORA_AGENT_DRIVER(driver), started, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, &attempt), ==, EINSORA_STATUS_CODE_STOPPED);
    g_assert_cmpint(attempt, ==, 7);
    g_clear_object(&started);
    g_assert_finalize_object(driver);
}

static void
test_from_env(void)
{
    static const struct {
        const char *variable;
        const char *value;
    } bad[] = {
        {"EINSORA_SIM_START_DELAY_MS", "soon"}, {"EINSORA_SIM_STOP_DELAY_MS", ""},
        {"EINSORA_SIM_STOP_DELAY_MS", "-5"},    {"EINSORA_SIM_EXIT_AFTER_MS", "3600001"},
        {"EINSORA_SIM_FAIL", "running"},        {"EINSORA_SIM_FAIL", ""},
    };
    static const char *const variables[] = {
        "EINSORA_SIM_START_DELAY_MS",
        "EINSORA_SIM_STOP_DELAY_MS",
        "EINSORA_SIM_FAIL",
        "EINSORA_SIM_EXIT_AFTER_MS",
    };
    EinsoraSimDriver *driver;
    g_autoptr(GError) error = NULL;
    gint64 began;

    for (guint i = 0; i < G_N_ELEMENTS(variables); i++)
        g_unsetenv(variables[i]);
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_test_message("case %u: %s=\"%s\"", i, bad[i].variable, bad[i].value);
        g_setenv(bad[i].variable, bad[i].value, TRUE);
        driver = einsora_sim_driver_new_from_env(&error);
        g_assert_null(driver);
        g_assert_nonnull(error);
        g_assert_nonnull(strstr(error->message, bad[i].variable));
        g_clear_error(&error);
        g_unsetenv(bad[i].variable);
    }

    g_setenv("EINSORA_SIM_START_DELAY_MS", "40", TRUE);
    g_setenv("EINSORA_SIM_EXIT_AFTER_MS", "20", TRUE);
    driver = einsora_sim_driver_new_from_env(&error);
    g_assert_no_error(error);
    began = g_get_monotonic_time();
    g_assert_true(start_sync(driver, WORKLOAD_1, 1, NULL, &error));
    g_assert_cmpint(g_get_monotonic_time() - began, >=, 40 * 1000);
    wait_status(driver, WORKLOAD_1, EINSORA_STATUS_CODE_EXITED);
    g_assert_finalize_object(driver);

    g_setenv("EINSORA_SIM_FAIL", "image_missing", TRUE);
    driver = einsora_sim_driver_new_from_env(&error);
    g_assert_no_error(error);
    g_assert_false(start_sync(driver, WORKLOAD_1, 1, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_cmpint(status_of(driver, WORKLOAD_1, NULL), ==, EINSORA_STATUS_CODE_IMAGE_MISSING);
    g_assert_finalize_object(driver);
    for (guint i = 0; i < G_N_ELEMENTS(variables); i++)
        g_unsetenv(variables[i]);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sim-driver/start/running-after-delay", test_start_running_after_delay);
    g_test_add_func("/sim-driver/stop/keeps-data", test_stop_keeps_data);
    g_test_add_func("/sim-driver/remove/deletes-data", test_remove_deletes_data);
    g_test_add_func("/sim-driver/script/failure-codes", test_scripted_failures);
    g_test_add_func("/sim-driver/script/for-all-and-per-workload", test_script_for_all);
    g_test_add_func("/sim-driver/script/refuses-non-failures", test_script_refuses_non_failures);
    g_test_add_func("/sim-driver/script/exit-after", test_exit_after);
    g_test_add_func("/sim-driver/script/never-ready", test_never_ready);
    g_test_add_func("/sim-driver/cancellation/honoured", test_cancellation);
    g_test_add_func("/sim-driver/attempts/remembered-and-started-once", test_attempts);
    g_test_add_func("/sim-driver/stop/supersedes-start", test_stop_supersedes_start);
    g_test_add_func("/sim-driver/env/settings", test_from_env);
    return g_test_run();
}
