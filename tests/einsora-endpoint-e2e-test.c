/* Real endpoints end to end: the real einsora-daemon with the real
 * llama-server in its sandbox. A model made here is imported into the
 * model store, an endpoint launched on it reaches running, and an OpenAI
 * client (tests/endpoint-client.py, Python's http.client) calls every
 * route through the access proxy with an API token, streamed and not,
 * and is refused without one, with a cookie alone and with another
 * tenant's. Stopping removes the worker and keeps the model; starting
 * runs it again. The worker's own key reaches no client, no log and no
 * export. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "einsora-test-daemon.h"
#include "einsora-test-jupyter.h"
#include "einsora-test-llama.h"

#define JSON "application/json"
#define CLASS "cpu-2c-4g"
#define WAIT_US (120 * G_USEC_PER_SEC)
#define B_PASSWORD "correct horse battery staple 16"

typedef struct {
    EinsoraTestDaemon *daemon;
    gchar *llama;
    gchar *run_dir;
    gchar *other_token;
} Fixture;

static EinsoraTestResponse *
call(Fixture *f, const char *method, const char *path, const char *body)
{
    return einsora_test_request(f->daemon, method, path, f->daemon->owner_token, JSON, body, NULL);
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->llama = einsora_test_llama_server();
    if (f->llama == NULL)
        return;
    f->daemon = einsora_test_daemon_new();
    einsora_test_daemon_setenv(f->daemon, "EINSORA_DRIVERS", "linux-native");
    einsora_test_daemon_setenv(f->daemon, "EINSORA_LLAMA_SERVER", f->llama);
    einsora_test_daemon_setenv(f->daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    f->run_dir = g_build_filename(f->daemon->dir, "run", NULL);
    /* First run makes the owner; then another tenant is added while the
     * daemon is stopped, as an operator would. */
    einsora_test_daemon_start(f->daemon);
    einsora_test_daemon_stop(f->daemon);
    f->other_token =
        einsora_test_daemon_create_account(f->daemon, "globex", "bob@globex.example", B_PASSWORD);
    einsora_test_daemon_start(f->daemon);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    if (f->daemon != NULL) {
        einsora_test_daemon_stop(f->daemon);
        einsora_test_kill_recorded(f->run_dir);
        einsora_test_daemon_free(f->daemon);
    }
    g_free(f->llama);
    g_free(f->run_dir);
    g_free(f->other_token);
}

static const char *
member(EinsoraTestResponse *response, const char *name)
{
    return einsora_test_response_string(response, name);
}

static void
wait_state(Fixture *f, const char *id, const char *state)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);

        g_assert_cmpuint(response->status, ==, 200);
        if (g_strcmp0(member(response, "state"), state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s", id, member(response, "state"), state);
        g_usleep(50 * 1000);
    }
}

/* The model, made here and imported through the API; its import is
 * watched until done. */
static void
import_model(Fixture *f, const char *name)
{
    g_autofree gchar *path = g_build_filename(f->daemon->dir, "tiny.gguf", NULL);
    g_autofree gchar *body = NULL;
    g_autoptr(EinsoraTestResponse) started = NULL;
    g_autofree gchar *watch = NULL;
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    einsora_test_llama_make_model(path);
    body = g_strdup_printf("{\"name\": \"%s\", \"source\": \"%s\"}", name, path);
    started = call(f, "POST", "/v1/model-store", body);
    g_assert_cmpuint(started->status, ==, 202);
    watch = g_strdup_printf("/v1/model-store/imports/%s", member(started, "id"));
    for (;;) {
        g_autoptr(EinsoraTestResponse) import = call(f, "GET", watch, NULL);

        g_assert_cmpuint(import->status, ==, 200);
        if (g_strcmp0(member(import, "state"), "done") == 0)
            break;
        g_assert_cmpstr(member(import, "state"), ==, "importing");
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(20 * 1000);
    }
}

static gchar *
login_cookie(Fixture *f)
{
    g_autoptr(EinsoraTestResponse) login = einsora_test_request(
        f->daemon, "POST", "/v1/login", NULL, JSON,
        "{\"email\": \"bob@globex.example\", \"password\": \"" B_PASSWORD "\"}", NULL);
    const char *set_cookie;

    g_assert_cmpuint(login->status, ==, 200);
    set_cookie = soup_message_headers_get_one(login->headers, "Set-Cookie");
    g_assert_nonnull(set_cookie);
    return g_strndup(set_cookie, strcspn(set_cookie, ";"));
}

/* The worker's own key, from its environment (only this user can read it). */
static gchar *
worker_key(Fixture *f, const char *id)
{
    int pid = einsora_test_recorded_pid(f->run_dir, id, NULL);
    g_autofree gchar *path = g_strdup_printf("/proc/%d/environ", pid);
    g_autofree gchar *contents = NULL;
    gsize length = 0;

    g_assert_cmpint(pid, >, 0);
    g_assert_true(g_file_get_contents(path, &contents, &length, NULL));
    for (gsize at = 0; at < length; at += strlen(contents + at) + 1) {
        if (g_str_has_prefix(contents + at, "LLAMA_API_KEY="))
            return g_strdup(contents + at + strlen("LLAMA_API_KEY="));
    }
    g_error("no LLAMA_API_KEY in the worker's environment");
    return NULL;
}

static void
run_client(Fixture *f, const char *base_url, const char *name, const char *cookie,
           const char *transcript)
{
    g_autofree gchar *script =
        g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "endpoint-client.py", NULL);
    g_autofree gchar *tenant_url =
        g_strdup_printf("http://127.0.0.1:%u/v1", f->daemon->access_port);
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GError) error = NULL;
    gint status = 0;
    const char *argv[] = {
        "/usr/bin/python3",     script,         base_url, tenant_url, name, "tiny",
        f->daemon->owner_token, f->other_token, cookie,   transcript, NULL};

    g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &status, &error));
    g_assert_no_error(error);
    g_test_message("%s", out);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("the OpenAI client failed: %s%s", out, err);
}

static void
assert_absent(const char *what, const char *text, const char *secret)
{
    if (text != NULL && strstr(text, secret) != NULL)
        g_error("the worker's key is in %s", what);
}

static void
test_endpoint_end_to_end(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraTestResponse) created = NULL;
    g_autoptr(EinsoraTestResponse) grant = NULL;
    g_autoptr(EinsoraTestResponse) export = NULL;
    g_autoptr(EinsoraTestResponse) model = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *base_url = NULL;
    g_autofree gchar *expected_base = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *key = NULL;
    g_autofree gchar *transcript = NULL;
    g_autofree gchar *seen = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *socket_path = NULL;
    int pid;

    if (f->llama == NULL)
        return;
    import_model(f, "tiny");
    /* No image named: an endpoint on a CPU class gets llama.cpp's. */
    created = call(f, "POST", "/v1/workloads",
                   "{\"kind\": \"endpoint\", \"gpu_class\": \"" CLASS "\", \"model\": \"tiny\","
                   " \"name\": \"tiny-chat\"}");
    g_assert_cmpuint(created->status, ==, 201);
    g_assert_cmpstr(member(created, "image"), ==, "llama-cpp");
    g_assert_cmpstr(member(created, "model"), ==, "tiny");
    id = g_strdup(member(created, "id"));
    wait_state(f, id, "running");
    socket_path = g_build_filename(f->run_dir, id, "endpoint.sock", NULL);
    g_assert_true(g_file_test(socket_path, G_FILE_TEST_EXISTS));

    /* The access grant is the base URL: no ticket, no expiry. */
    path = g_strdup_printf("/v1/workloads/%s/access", id);
    grant = call(f, "POST", path, NULL);
    g_assert_cmpuint(grant->status, ==, 200);
    base_url = g_strdup(member(grant, "base_url"));
    expected_base =
        g_strdup_printf("http://127.0.0.1:%u/endpoints/%s/v1", f->daemon->access_port, id);
    g_assert_cmpstr(base_url, ==, expected_base);
    g_assert_null(member(grant, "url"));
    g_assert_null(member(grant, "expires_at"));

    /* `einsora open` prints an endpoint's base URL. */
    {
        g_autofree gchar *out = NULL;
        g_autoptr(GError) error = NULL;
        gint status = 0;
        const char *argv[] = {
            g_getenv("EINSORA_CLI"), "--server", f->daemon->uri, "open", id, NULL};
        g_auto(GStrv) env =
            g_environ_setenv(g_get_environ(), "EINSORA_TOKEN", f->daemon->owner_token, TRUE);
        g_autofree gchar *expected = g_strconcat(base_url, "\n", NULL);

        g_assert_true(g_spawn_sync(NULL, (gchar **)argv, env, G_SPAWN_DEFAULT, NULL, NULL, &out,
                                   NULL, &status, &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        g_assert_cmpstr(out, ==, expected);
    }

    /* `einsora chat` streams an answer to the terminal. */
    {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;
        g_autoptr(GError) error = NULL;
        gint status = 0;
        const char *argv[] = {
            g_getenv("EINSORA_CLI"), "--server", f->daemon->uri, "chat", "--usage", id,
            "Hello there",           NULL};
        g_auto(GStrv) env =
            g_environ_setenv(g_get_environ(), "EINSORA_TOKEN", f->daemon->owner_token, TRUE);

        g_assert_true(g_spawn_sync(NULL, (gchar **)argv, env, G_SPAWN_DEFAULT, NULL, NULL, &out,
                                   &err, &status, &error));
        g_assert_no_error(error);
        if (!g_spawn_check_wait_status(status, NULL))
            g_error("einsora chat failed: %s", err);
        g_assert_true(g_str_has_suffix(out, "\n"));
        g_assert_cmpuint(strlen(out), >, 1);
        g_assert_nonnull(strstr(err, " prompt tokens, "));
    }

    cookie = login_cookie(f);
    transcript = g_build_filename(f->daemon->dir, "transcript.txt", NULL);
    run_client(f, base_url, "tiny-chat", cookie, transcript);

    /* The worker's key reached no client, log or export. */
    key = worker_key(f, id);
    g_assert_cmpuint(strlen(key), ==, 64);
    g_assert_true(g_file_get_contents(transcript, &seen, NULL, NULL));
    g_assert_nonnull(strstr(seen, "X-Request-ID"));
    assert_absent("what a client was sent", seen, key);
    {
        g_autofree gchar *export_path = g_strdup_printf("/v1/workloads/%s/export", id);
        export = call(f, "GET", export_path, NULL);
    }
    g_assert_cmpuint(export->status, ==, 200);
    assert_absent("the export", export->body, key);

    /* Stopped: the worker is gone, the model stays. */
    pid = einsora_test_recorded_pid(f->run_dir, id, NULL);
    {
        g_autofree gchar *stop = g_strdup_printf("/v1/workloads/%s/stop", id);
        g_autoptr(EinsoraTestResponse) stopped = call(f, "POST", stop, NULL);
        g_assert_cmpuint(stopped->status, ==, 202);
    }
    wait_state(f, id, "stopped");
    {
        gint64 deadline = g_get_monotonic_time() + WAIT_US;
        while (einsora_test_process_alive(pid) || g_file_test(socket_path, G_FILE_TEST_EXISTS)) {
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_usleep(20 * 1000);
        }
    }
    model = call(f, "GET", "/v1/model-store/tiny", NULL);
    g_assert_cmpuint(model->status, ==, 200);
    {
        /* A stopped endpoint has no way in. */
        g_autoptr(EinsoraTestResponse) stopped_grant = call(f, "POST", path, NULL);
        g_assert_cmpuint(stopped_grant->status, !=, 200);
    }

    /* Started again: a new worker, a new key, and it answers. */
    {
        g_autofree gchar *start = g_strdup_printf("/v1/workloads/%s/start", id);
        g_autoptr(EinsoraTestResponse) started = call(f, "POST", start, NULL);
        g_autofree gchar *again = NULL;
        g_autoptr(EinsoraTestResponse) regrant = NULL;

        g_assert_cmpuint(started->status, ==, 202);
        wait_state(f, id, "running");
        again = worker_key(f, id);
        g_assert_cmpstr(again, !=, key);
        regrant = call(f, "POST", path, NULL);
        g_assert_cmpuint(regrant->status, ==, 200);
        g_assert_cmpstr(member(regrant, "base_url"), ==, base_url);
        run_client(f, base_url, "tiny-chat", cookie, transcript);
        g_free(seen);
        seen = NULL;
        g_assert_true(g_file_get_contents(transcript, &seen, NULL, NULL));
        assert_absent("what a client was sent", seen, again);
        g_free(key);
        key = g_steal_pointer(&again);
    }

    einsora_test_daemon_stop(f->daemon);
    log = einsora_test_daemon_read_log(f->daemon);
    assert_absent("the daemon's log", log, key);
    assert_absent("the daemon's log", log, f->daemon->owner_token);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/endpoint-e2e/import-launch-call-stop-start", Fixture, NULL, fixture_set_up,
               test_endpoint_end_to_end, fixture_tear_down);
    return g_test_run();
}
