/* Docker notebooks end to end: the real einsora-daemon with the docker
 * driver on a private Docker Engine (einsora-test-docker.h), the
 * catalog's jupyter-notebook image (made here from Debian's Jupyter and
 * imported under the catalog's reference, since nothing can be pulled).
 * A notebook reaches running, opens through the access proxy and runs
 * print(6*7); from inside it has no network but lo, its class's memory
 * limit and a non-root uid. Stop removes the container and keeps the
 * data; start makes a new one with a new token; a kill -9 of the daemon
 * leaves the container running, adopted by the next daemon with no new
 * event; delete removes container and data. A container killed for
 * memory reads "it ran out of memory"; an Engine that stops answering is
 * noted and decides nothing; another tenant's notebook never runs on it.
 * Pulls run for real against Debian's registry on loopback. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-test-daemon.h"
#include "einsora-test-docker.h"
#include "einsora-test-jupyter.h"
#include "einsora-test-llama.h"

#define JSON "application/json"
#define CLASS "cpu-1c-2g"
#define IMAGE "jupyter-notebook"
/* The endpoint image the tests make from this machine's llama-server. */
#define LLAMA_IMAGE "llama-docker"
#define LLAMA_REFERENCE "einsora-test/llama-server:1"

static EinsoraTestDocker *docker;
static EinsoraTestRegistry *registry;

typedef struct {
    EinsoraTestDaemon *daemon;
    gchar *run_dir;  /* the docker driver's: <agent run dir>/docker */
    gchar *data_dir; /* <data dir>/docker */
} Fixture;

static EinsoraTestResponse *
call_as(Fixture *f, const char *token, const char *method, const char *path, const char *body)
{
    return einsora_test_request(f->daemon, method, path, token, JSON, body, NULL);
}

static EinsoraTestResponse *
call(Fixture *f, const char *method, const char *path, const char *body)
{
    return call_as(f, f->daemon->owner_token, method, path, body);
}

/* The catalog's notebook image, imported again if a pull test removed it
 * (the pull test runs first, while no copy of its layers is here). */
static void
ensure_jupyter(void)
{
    g_autoptr(JsonNode) node = NULL;

    if (einsora_test_docker_get(docker, "/images/" EINSORA_TEST_DOCKER_JUPYTER_IMAGE "/json",
                                &node) == 404)
        einsora_test_docker_load_jupyter(docker, EINSORA_TEST_DOCKER_JUPYTER_IMAGE);
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    if (data == NULL)
        ensure_jupyter();
    f->daemon = einsora_test_daemon_new();
    einsora_test_daemon_setenv(f->daemon, "EINSORA_DRIVERS", "docker");
    einsora_test_daemon_setenv(f->daemon, "EINSORA_DOCKER_HOST", docker->host);
    einsora_test_daemon_setenv(f->daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    f->run_dir = g_build_filename(f->daemon->dir, "run", "docker", NULL);
    f->data_dir = g_build_filename(f->daemon->data_dir, "docker", NULL);
    if (data != NULL)
        einsora_test_daemon_setenv(f->daemon, "EINSORA_CATALOG", data);
    einsora_test_daemon_start(f->daemon);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    einsora_test_daemon_stop(f->daemon);
    einsora_test_daemon_free(f->daemon);
    g_free(f->run_dir);
    g_free(f->data_dir);
}

static gchar *
launch_as(Fixture *f, const char *token, const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\": \"notebook\", \"gpu_class\": \"" CLASS
                                             "\", \"image\": \"" IMAGE "\", \"name\": \"%s\"}",
                                             name);
    g_autoptr(EinsoraTestResponse) response = call_as(f, token, "POST", "/v1/workloads", body);

    g_assert_cmpuint(response->status, ==, 201);
    return g_strdup(einsora_test_response_string(response, "id"));
}

static gchar *
launch(Fixture *f, const char *name)
{
    return launch_as(f, f->daemon->owner_token, name);
}

static JsonObject *
get_workload(Fixture *f, const char *id, EinsoraTestResponse **response)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);

    *response = call(f, "GET", path, NULL);
    g_assert_cmpuint((*response)->status, ==, 200);
    return json_node_get_object((*response)->json);
}

static void
wait_for_state(Fixture *f, const char *id, const char *state)
{
    gint64 deadline = g_get_monotonic_time() + 90 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response = NULL;
        const char *now = json_object_get_string_member(get_workload(f, id, &response), "state");

        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline) {
            g_autofree gchar *log = einsora_test_daemon_read_log(f->daemon);
            g_error("workload %s is %s, not %s, after 90 s; daemon log:\n%s", id, now, state, log);
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

static void
delete_workload(Fixture *f, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    g_autoptr(EinsoraTestResponse) response = call(f, "DELETE", path, NULL);

    g_assert_cmpuint(response->status, ==, 202);
}

/* The timeline's reasons, one string each. */
static GPtrArray *
reasons_of(Fixture *f, const char *id)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/events", id);
    g_autoptr(EinsoraTestResponse) response = call(f, "GET", path, NULL);
    JsonArray *events =
        json_object_get_array_member(json_node_get_object(response->json), "events");
    GPtrArray *reasons = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < json_array_get_length(events); i++)
        g_ptr_array_add(reasons, g_strdup(json_object_get_string_member_with_default(
                                     json_array_get_object_element(events, i), "reason", "")));
    return reasons;
}

static gboolean
has_reason(GPtrArray *reasons, const char *text)
{
    for (guint i = 0; i < reasons->len; i++) {
        if (strstr(g_ptr_array_index(reasons, i), text) != NULL)
            return TRUE;
    }
    return FALSE;
}

/* The Engine's inspect of the workload's container: NULL when there is
 * none (404). */
static JsonObject *
container_of(const char *id, JsonNode **node)
{
    g_autofree gchar *path = g_strdup_printf("/containers/einsora-%s/json", id);
    guint status = einsora_test_docker_get(docker, path, node);

    if (status == 404)
        return NULL;
    g_assert_cmpuint(status, ==, 200);
    return json_node_get_object(*node);
}

static gchar *
token_of(const char *id)
{
    g_autoptr(JsonNode) node = NULL;
    JsonObject *container = container_of(id, &node);
    JsonArray *env;

    g_assert_nonnull(container);
    env = json_object_get_array_member(json_object_get_object_member(container, "Config"), "Env");
    for (guint i = 0; i < json_array_get_length(env); i++) {
        const char *entry = json_array_get_string_element(env, i);
        if (g_str_has_prefix(entry, "JUPYTER_TOKEN="))
            return g_strdup(entry + strlen("JUPYTER_TOKEN="));
    }
    g_assert_not_reached();
}

static gchar *
socket_of(Fixture *f, const char *id)
{
    return g_build_filename(f->run_dir, id, "notebook.sock", NULL);
}

static gchar *
run_cell(Fixture *f, const char *id, const char *code)
{
    g_autofree gchar *socket_path = socket_of(f, id);
    g_autofree gchar *token = token_of(id);
    g_autofree gchar *kernel = einsora_test_jupyter_start_kernel(socket_path, token);

    return einsora_test_jupyter_execute(socket_path, token, kernel, code);
}

/* Opens the workload through the access proxy (a one-time ticket, then
 * its cookie) and runs @code on a new kernel there. */
static gchar *
run_through_proxy(Fixture *f, const char *id, const char *code, gchar **cookie_out)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/access", id);
    g_autofree gchar *host = g_strdup_printf("w-%s.localhost:%u", id, f->daemon->access_port);
    g_autoptr(EinsoraTestResponse) access = call(f, "POST", path, NULL);
    g_autofree gchar *ticket = NULL;
    g_autofree gchar *open_path = NULL;
    g_autofree gchar *body = NULL;
    g_autofree gchar *kernel = NULL;
    g_autoptr(GHashTable) headers = NULL;
    g_auto(GStrv) parts = NULL;
    EinsoraTestJupyterVia via = {NULL, NULL, f->daemon->access_port, host, NULL};
    const char *url;

    g_assert_cmpuint(access->status, ==, 201);
    url = einsora_test_response_string(access, "url");
    ticket = g_strdup(strstr(url, "ticket=") + strlen("ticket="));
    open_path = g_strdup_printf("/_einsora/open?ticket=%s", ticket);
    g_assert_cmpuint(
        einsora_test_jupyter_request_via(&via, "GET", open_path, NULL, &body, &headers), ==, 200);
    parts = g_strsplit(g_hash_table_lookup(headers, "set-cookie"), ";", 2);
    *cookie_out = g_strdup(parts[0]);
    via.cookie = *cookie_out;
    g_clear_pointer(&body, g_free);
    g_assert_cmpuint(einsora_test_jupyter_request_via(&via, "POST", "/api/kernels",
                                                      "{\"name\": \"python3\"}", &body, NULL),
                     ==, 201);
    {
        g_autoptr(JsonNode) node = json_from_string(body, NULL);
        kernel = g_strdup(json_object_get_string_member(json_node_get_object(node), "id"));
    }
    return einsora_test_jupyter_execute_via(&via, kernel, code);
}

/* Waits until @path holds @text: the driver copies a container's output
 * as the Engine streams it. */
static void
wait_for_log(const char *path, const char *text)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *contents = NULL;

        if (g_file_get_contents(path, &contents, NULL, NULL) && strstr(contents, text) != NULL)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("%s never held \"%s\"; it holds: %s", path, text,
                    contents != NULL ? contents : "(nothing)");
        g_usleep(100 * 1000);
    }
}

static void
test_lifecycle(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "docker-e2e");
    g_autofree gchar *socket_path = socket_of(f, id);
    g_autofree gchar *data_dir = g_build_filename(f->data_dir, id, NULL);
    g_autofree gchar *file = g_build_filename(data_dir, "hello.txt", NULL);
    g_autofree gchar *token = NULL;
    g_autofree gchar *second_token = NULL;
    g_autofree gchar *printed = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *contents = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *first_container = NULL;
    g_autofree gchar *output_log = NULL;
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(EinsoraTestResponse) response = NULL;
    JsonObject *container;
    JsonObject *host_config;
    struct stat st;
    gsize first_run_bytes;

    wait_for_state(f, id, "running");
    g_assert_cmpstr(json_object_get_string_member(get_workload(f, id, &response), "driver"), ==,
                    "docker");

    /* The container as the Engine has it: the recipe's limits, and the
     * labels that let a restarted daemon find it. */
    container = container_of(id, &node);
    g_assert_nonnull(container);
    first_container = g_strdup(json_object_get_string_member(container, "Id"));
    host_config = json_object_get_object_member(container, "HostConfig");
    g_assert_cmpstr(json_object_get_string_member(host_config, "NetworkMode"), ==, "none");
    g_assert_cmpint(json_object_get_int_member(host_config, "Memory"), ==,
                    G_GINT64_CONSTANT(2048) * 1024 * 1024);
    g_assert_cmpint(json_object_get_int_member(host_config, "NanoCpus"), ==, 1000000000);
    g_assert_true(json_object_get_boolean_member(host_config, "ReadonlyRootfs"));
    g_assert_cmpint(json_object_get_int_member(host_config, "PidsLimit"), ==, 1024);
    {
        JsonObject *labels = json_object_get_object_member(
            json_object_get_object_member(container, "Config"), "Labels");
        g_assert_cmpstr(json_object_get_string_member(labels, "org.einsora.workload"), ==, id);
        g_assert_cmpstr(json_object_get_string_member(labels, "org.einsora.attempt"), ==, "1");
        g_assert_cmpuint(strlen(json_object_get_string_member(labels, "org.einsora.fingerprint")),
                         ==, 64);
    }
    /* No port is published: the server listens on its socket only. */
    g_assert_cmpint(stat(socket_path, &st), ==, 0);
    g_assert_true(S_ISSOCK(st.st_mode));
    g_assert_cmpint(st.st_mode & 0777, ==, 0600);

    /* Through the proxy, as a browser opens it. */
    printed = run_through_proxy(f, id, "print(6*7)", &cookie);
    g_assert_cmpstr(printed, ==, "42\n");
    g_clear_pointer(&printed, g_free);

    /* Its output in <run>/<id>.log, as a native workload's is kept. */
    output_log = g_strdup_printf("%s/%s.log", f->run_dir, id);
    wait_for_log(output_log, "Kernel started");
    g_assert_cmpint(stat(output_log, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 0777, ==, 0600);

    /* From inside: no network but lo, the class's memory, not root. */
    printed = run_cell(
        f, id,
        "import os, socket\n"
        "print(sorted(name for _, name in socket.if_nameindex()))\n"
        "limit = None\n"
        "for p in ('/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes'):\n"
        "    if os.path.exists(p):\n"
        "        limit = open(p).read().strip()\n"
        "        break\n"
        "print(limit)\n"
        "print(os.getuid() != 0, os.getgid() != 0)\n"
        "open('/home/jovyan/hello.txt', 'w').write('kept')\n"
        "try:\n"
        "    open('/etc/written', 'w')\n"
        "    print('root fs writable')\n"
        "except OSError:\n"
        "    print('root fs read-only')\n");
    g_assert_cmpstr(printed, ==, "['lo']\n2147483648\nTrue True\nroot fs read-only\n");
    g_assert_true(g_file_get_contents(file, &contents, NULL, NULL));
    g_assert_cmpstr(contents, ==, "kept");

    /* Stop: the container goes, the data stays. */
    token = token_of(id);
    act(f, id, "stop");
    wait_for_state(f, id, "stopped");
    g_clear_pointer(&node, json_node_unref);
    g_assert_null(container_of(id, &node));
    g_assert_true(g_file_test(file, G_FILE_TEST_IS_REGULAR));
    g_assert_false(g_file_test(socket_path, G_FILE_TEST_EXISTS));
    /* Its log stays with its data. */
    g_assert_cmpint(stat(output_log, &st), ==, 0);
    first_run_bytes = (gsize)st.st_size;

    /* Start: a new container and token, on the same data. */
    act(f, id, "start");
    wait_for_state(f, id, "running");
    g_clear_pointer(&node, json_node_unref);
    container = container_of(id, &node);
    g_assert_nonnull(container);
    g_assert_cmpstr(json_object_get_string_member(container, "Id"), !=, first_container);
    second_token = token_of(id);
    g_assert_cmpstr(second_token, !=, token);
    g_assert_cmpuint(
        einsora_test_jupyter_request(socket_path, token, "GET", "/api/status", NULL, NULL), ==,
        403);
    g_clear_pointer(&contents, g_free);
    g_assert_cmpuint(einsora_test_jupyter_request(socket_path, second_token, "GET",
                                                  "/api/contents/hello.txt", NULL, &contents),
                     ==, 200);
    g_assert_nonnull(strstr(contents, "\"kept\""));
    /* The new container's output is the new attempt's own log; the first
     * attempt's is kept beside it, whole. Neither token is in either
     * (Jupyter prints a token it was given as "..."). */
    {
        g_autofree gchar *text = NULL;
        g_autofree gchar *first_text = NULL;
        g_autofree gchar *first_log = g_strdup_printf("%s/%s.attempt-1.log", f->run_dir, id);

        wait_for_log(output_log, "Jupyter");
        g_assert_true(g_file_get_contents(output_log, &text, NULL, NULL));
        g_assert_true(g_file_get_contents(first_log, &first_text, NULL, NULL));
        g_assert_cmpuint(strlen(first_text), >=, first_run_bytes);
        g_assert_null(strstr(text, token));
        g_assert_null(strstr(text, second_token));
        g_assert_null(strstr(first_text, token));
    }
    /* The API reads both, as it reads a native workload's. */
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/logs", id);
        g_autofree gchar *first_path = g_strdup_printf("/v1/workloads/%s/logs?attempt=1", id);
        g_autoptr(EinsoraTestResponse) latest =
            einsora_test_request(f->daemon, "GET", path, f->daemon->owner_token, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) first = einsora_test_request(
            f->daemon, "GET", first_path, f->daemon->owner_token, NULL, NULL, NULL);

        g_assert_cmpuint(latest->status, ==, 200);
        g_assert_cmpstr(soup_message_headers_get_one(latest->headers, "Einsora-Attempt"), ==, "2");
        g_assert_nonnull(strstr(latest->body, "Jupyter"));
        g_assert_cmpuint(first->status, ==, 200);
        g_assert_nonnull(strstr(first->body, "Kernel started"));
        g_assert_null(strstr(first->body, token));
    }

    /* Delete: container, data and run files go. */
    delete_workload(f, id);
    wait_for_state(f, id, "deleted");
    g_clear_pointer(&node, json_node_unref);
    g_assert_null(container_of(id, &node));
    {
        g_autofree gchar *run = g_build_filename(f->run_dir, id, NULL);
        g_assert_false(g_file_test(data_dir, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(run, G_FILE_TEST_EXISTS));
        g_assert_false(g_file_test(output_log, G_FILE_TEST_EXISTS));
    }
    /* No token or cookie ever reached the daemon's log. */
    log = einsora_test_daemon_read_log(f->daemon);
    g_assert_null(strstr(log, token));
    g_assert_null(strstr(log, second_token));
    g_assert_null(strstr(log, strchr(cookie, '=') + 1));
}

static void
test_adopted_after_kill(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "adopted");
    g_autofree gchar *container_id = NULL;
    g_autofree gchar *started_at = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *printed = NULL;
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(GPtrArray) before = NULL;
    g_autoptr(GPtrArray) after = NULL;
    JsonObject *container;

    wait_for_state(f, id, "running");
    container = container_of(id, &node);
    container_id = g_strdup(json_object_get_string_member(container, "Id"));
    started_at = g_strdup(json_object_get_string_member(
        json_object_get_object_member(container, "State"), "StartedAt"));
    before = reasons_of(f, id);

    einsora_test_daemon_kill(f->daemon);
    einsora_test_daemon_start(f->daemon);
    {
        gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
        for (;;) {
            g_clear_pointer(&log, g_free);
            log = einsora_test_daemon_read_log(f->daemon);
            const char *adopted = strstr(log, "adopted its running container");
            if (adopted != NULL && strstr(adopted, "answers on its socket: running") != NULL)
                break;
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_usleep(100 * 1000);
        }
    }
    g_usleep(2 * G_USEC_PER_SEC); /* a few controller passes */
    g_clear_pointer(&node, json_node_unref);
    container = container_of(id, &node);
    g_assert_cmpstr(json_object_get_string_member(container, "Id"), ==, container_id);
    g_assert_cmpstr(json_object_get_string_member(json_object_get_object_member(container, "State"),
                                                  "StartedAt"),
                    ==, started_at);
    {
        g_autoptr(EinsoraTestResponse) response = NULL;
        JsonObject *workload = get_workload(f, id, &response);
        g_assert_cmpstr(json_object_get_string_member(workload, "state"), ==, "running");
        g_assert_cmpint(json_object_get_int_member(workload, "attempt"), ==, 1);
    }
    after = reasons_of(f, id);
    g_assert_cmpuint(after->len, ==, before->len);
    printed = run_cell(f, id, "print(6*7)");
    g_assert_cmpstr(printed, ==, "42\n");
    delete_workload(f, id);
    wait_for_state(f, id, "deleted");
}

static void
test_out_of_memory(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "oom");
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *kernel = NULL;
    g_autoptr(GPtrArray) reasons = NULL;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *container;

    wait_for_state(f, id, "running");
    socket_path = socket_of(f, id);
    token = token_of(id);
    kernel = einsora_test_jupyter_start_kernel(socket_path, token);
    /* The server first in the OOM killer's line (its score then passes
     * the kernel's whatever the kernel holds), then more memory than the
     * class has: the server dies of it, and with it the container. The
     * cell never answers. */
    einsora_test_jupyter_send_code(
        socket_path, token, kernel,
        "import os\n"
        "open('/proc/%d/oom_score_adj' % os.getppid(), 'w').write('1000')\n"
        "blocks = []\n"
        "while True:\n"
        "    blocks.append(bytearray(64 * 1024 * 1024))\n");
    wait_for_state(f, id, "failed");
    reasons = reasons_of(f, id);
    g_assert_true(has_reason(reasons, "it ran out of memory"));
    container = container_of(id, &node);
    if (container != NULL)
        g_assert_true(json_object_get_boolean_member(
            json_object_get_object_member(container, "State"), "OOMKilled"));
    delete_workload(f, id);
    wait_for_state(f, id, "deleted");
}

static void
test_engine_down(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = launch(f, "engine-down");
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *printed = NULL;
    g_autofree gchar *log = NULL;
    g_autoptr(GPtrArray) reasons = NULL;
    gint64 deadline;

    wait_for_state(f, id, "running");
    einsora_test_docker_pause(docker);
    /* Noted on the timeline, and nothing decided: still running. */
    deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    for (;;) {
        g_clear_pointer(&reasons, g_ptr_array_unref);
        reasons = reasons_of(f, id);
        if (has_reason(reasons, "container engine doesn't answer"))
            break;
        if (g_get_monotonic_time() > deadline) {
            einsora_test_docker_resume(docker);
            g_error("no note that the Engine doesn't answer after 30 s");
        }
        g_usleep(200 * 1000);
    }
    g_usleep(2 * G_USEC_PER_SEC);
    {
        g_autoptr(EinsoraTestResponse) response = NULL;
        const char *state = json_object_get_string_member(get_workload(f, id, &response), "state");
        if (g_strcmp0(state, "running") != 0) {
            einsora_test_docker_resume(docker);
            g_error("the Engine down decided something: the workload is %s", state);
        }
    }
    einsora_test_docker_resume(docker);
    deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    for (;;) {
        g_clear_pointer(&log, g_free);
        log = einsora_test_daemon_read_log(f->daemon);
        if (strstr(log, "answers again") != NULL)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(100 * 1000);
    }
    g_usleep(1 * G_USEC_PER_SEC);
    {
        g_autoptr(EinsoraTestResponse) response = NULL;
        g_assert_cmpstr(json_object_get_string_member(get_workload(f, id, &response), "state"), ==,
                        "running");
    }
    printed = run_through_proxy(f, id, "print(6*7)", &cookie);
    g_assert_cmpstr(printed, ==, "42\n");
    delete_workload(f, id);
    wait_for_state(f, id, "deleted");
}

/* The catalog's own, with the tests' endpoint image and, with a
 * registry, two images from it: one pushed there, one that isn't. */
static gchar *
test_catalog(void)
{
    g_autofree gchar *builtin =
        g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "catalog", "catalog.json", NULL);
    g_autofree gchar *text = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GError) error = NULL;
    JsonArray *images;
    gchar *path;
    const char *const names[] = {"jupyter-pulled", "jupyter-missing"};
    const char *const repositories[] = {"einsora/jupyter:pull", "einsora/missing:1"};

    g_assert_true(g_file_get_contents(builtin, &text, NULL, NULL));
    root = json_from_string(text, &error);
    g_assert_no_error(error);
    images = json_object_get_array_member(json_node_get_object(root), "images");
    json_array_add_element(
        images,
        json_from_string("{\"name\": \"" LLAMA_IMAGE "\", \"description\": \"llama.cpp in a "
                         "container\", \"kinds\": [\"endpoint\"], \"runtimes\": {\"cpu\": "
                         "{\"reference\": \"" LLAMA_REFERENCE "\", \"driver_refs\": "
                         "[\"docker\"]}}}",
                         NULL));
    for (guint i = 0; registry != NULL && i < G_N_ELEMENTS(names); i++) {
        g_autofree gchar *image = g_strdup_printf(
            "{\"name\": \"%s\", \"description\": \"from the test registry\", "
            "\"kinds\": [\"notebook\"], \"runtimes\": {\"cpu\": {\"reference\": \"%s/%s\", "
            "\"driver_refs\": [\"docker\"]}}}",
            names[i], registry->address, repositories[i]);
        json_array_add_element(images, json_from_string(image, NULL));
    }
    g_clear_pointer(&text, g_free);
    text = json_to_string(root, TRUE);
    path = g_build_filename(g_get_tmp_dir(), "einsora-docker-test-catalog.json", NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static gchar *
launch_image(Fixture *f, const char *image, const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\": \"notebook\", \"gpu_class\": \"" CLASS
                                             "\", \"image\": \"%s\", \"name\": \"%s\"}",
                                             image, name);
    g_autoptr(EinsoraTestResponse) response = call(f, "POST", "/v1/workloads", body);

    g_assert_cmpuint(response->status, ==, 201);
    return g_strdup(einsora_test_response_string(response, "id"));
}

/* The real pull path: an image only the registry has is pulled, with its
 * progress on the timeline, and runs; one the registry hasn't fails with
 * the fixed reason, the Engine's words only in the log. */
static void
test_pull(Fixture *f, gconstpointer data)
{
    g_autofree gchar *pulled = launch_image(f, "jupyter-pulled", "pulled");
    g_autofree gchar *missing = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *printed = NULL;
    g_autoptr(GPtrArray) reasons = NULL;

    wait_for_state(f, pulled, "running");
    reasons = reasons_of(f, pulled);
    g_assert_true(has_reason(reasons, "pulling its image: "));
    log = einsora_test_daemon_read_log(f->daemon);
    g_assert_nonnull(strstr(log, "its image isn't here: pulling it"));
    g_assert_nonnull(strstr(log, "pulled its image"));
    printed = run_cell(f, pulled, "print(6*7)");
    g_assert_cmpstr(printed, ==, "42\n");

    missing = launch_image(f, "jupyter-missing", "missing");
    wait_for_state(f, missing, "failed");
    g_clear_pointer(&reasons, g_ptr_array_unref);
    reasons = reasons_of(f, missing);
    g_assert_true(has_reason(reasons, "couldn't pull its image: it doesn't exist or this machine "
                                      "can't reach the registry"));
    g_assert_false(has_reason(reasons, "manifest"));
    g_clear_pointer(&log, g_free);
    log = einsora_test_daemon_read_log(f->daemon);
    g_assert_nonnull(strstr(log, "its image couldn't be pulled: "));
    delete_workload(f, pulled);
    delete_workload(f, missing);
    wait_for_state(f, pulled, "deleted");
    wait_for_state(f, missing, "deleted");
}

/* An endpoint in a container: llama-server with the tiny model from the
 * model store, bound read-only, no network, reached through the proxy's
 * /endpoints/<id>/v1 with an API token only. */
static void
test_endpoint(Fixture *f, gconstpointer data)
{
    g_autofree gchar *model_path = g_build_filename(f->daemon->dir, "tiny.gguf", NULL);
    g_autofree gchar *import_body = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *url = NULL;
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(EinsoraTestResponse) started = NULL;
    JsonObject *container;
    JsonArray *mounts;
    gboolean model_read_only = FALSE;

    einsora_test_llama_make_model(model_path);
    import_body = g_strdup_printf("{\"name\": \"tiny\", \"source\": \"%s\"}", model_path);
    started = call(f, "POST", "/v1/model-store", import_body);
    g_assert_cmpuint(started->status, ==, 202);
    {
        g_autofree gchar *watch = g_strdup_printf("/v1/model-store/imports/%s",
                                                  einsora_test_response_string(started, "id"));
        gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
        for (;;) {
            g_autoptr(EinsoraTestResponse) state = call(f, "GET", watch, NULL);
            const char *now = einsora_test_response_string(state, "state");
            if (g_strcmp0(now, "importing") != 0) {
                g_assert_cmpstr(now, ==, "done");
                break;
            }
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_usleep(50 * 1000);
        }
    }
    {
        g_autoptr(EinsoraTestResponse) created =
            call(f, "POST", "/v1/workloads",
                 "{\"kind\": \"endpoint\", \"gpu_class\": \"" CLASS "\", \"image\": \"" LLAMA_IMAGE
                 "\", \"model\": \"tiny\", \"name\": \"tiny-docker\"}");
        g_assert_cmpuint(created->status, ==, 201);
        id = g_strdup(einsora_test_response_string(created, "id"));
    }
    wait_for_state(f, id, "running");
    {
        g_autoptr(EinsoraTestResponse) response = NULL;
        g_assert_cmpstr(json_object_get_string_member(get_workload(f, id, &response), "driver"), ==,
                        "docker");
    }
    container = container_of(id, &node);
    g_assert_nonnull(container);
    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(container, "HostConfig"), "NetworkMode"),
                    ==, "none");
    mounts = json_object_get_array_member(container, "Mounts");
    for (guint i = 0; i < json_array_get_length(mounts); i++) {
        JsonObject *mount = json_array_get_object_element(mounts, i);
        if (g_strcmp0(json_object_get_string_member(mount, "Destination"),
                      "/run/einsora/model.gguf") == 0)
            model_read_only = !json_object_get_boolean_member(mount, "RW");
    }
    g_assert_true(model_read_only);

    /* Through the proxy, with an API token; without one, refused. */
    url = g_strdup_printf("http://127.0.0.1:%u/endpoints/%s/v1/chat/completions",
                          f->daemon->access_port, id);
    for (guint with_token = 0; with_token < 2; with_token++) {
        g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 60, NULL);
        g_autoptr(SoupMessage) message = soup_message_new("POST", url);
        g_autoptr(GBytes) request = g_bytes_new_static(
            "{\"model\": \"tiny\", \"max_tokens\": 3, "
            "\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]}",
            strlen("{\"model\": \"tiny\", \"max_tokens\": 3, "
                   "\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}]}"));
        g_autoptr(GBytes) answer = NULL;

        soup_message_set_request_body_from_bytes(message, "application/json", request);
        if (with_token) {
            g_autofree gchar *bearer = g_strdup_printf("Bearer %s", f->daemon->owner_token);
            soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                         bearer);
        }
        answer = soup_session_send_and_read(session, message, NULL, NULL);
        g_assert_nonnull(answer);
        if (!with_token) {
            g_assert_cmpuint(soup_message_get_status(message), ==, 401);
            continue;
        }
        g_assert_cmpuint(soup_message_get_status(message), ==, 200);
        {
            g_autofree gchar *text =
                g_strndup(g_bytes_get_data(answer, NULL), g_bytes_get_size(answer));
            g_autoptr(JsonNode) reply = json_from_string(text, NULL);
            g_assert_nonnull(reply);
            g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                                 json_node_get_object(reply), "choices")),
                             ==, 1);
        }
    }
    delete_workload(f, id);
    wait_for_state(f, id, "deleted");
    g_clear_pointer(&node, json_node_unref);
    g_assert_null(container_of(id, &node));
}

/* Weak isolation: the machine owner's workloads only. */
static void
test_owner_only(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    Fixture fixture = {daemon, NULL, NULL};
    g_autofree gchar *other = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(JsonNode) node = NULL;

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "docker");
    einsora_test_daemon_setenv(daemon, "EINSORA_DOCKER_HOST", docker->host);
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    einsora_test_daemon_start(daemon);
    einsora_test_daemon_stop(daemon);
    other = einsora_test_daemon_create_account(daemon, "guests", "guest@example.org", NULL);
    einsora_test_daemon_start(daemon);
    id = launch_as(&fixture, other, "not-the-owners");
    g_usleep(3 * G_USEC_PER_SEC);
    path = g_strdup_printf("/v1/workloads/%s", id);
    {
        g_autoptr(EinsoraTestResponse) response = call_as(&fixture, other, "GET", path, NULL);
        const char *state = einsora_test_response_string(response, "state");
        g_assert_cmpuint(response->status, ==, 200);
        /* Waiting for a machine that may run it; never on this one. */
        g_test_message("another tenant's docker notebook: %s", state);
        g_assert_true(g_strcmp0(state, "pending") == 0 || g_strcmp0(state, "queued") == 0 ||
                      g_strcmp0(state, "failed") == 0);
    }
    g_assert_null(container_of(id, &node));
    einsora_test_daemon_stop(daemon);
}

int
main(int argc, char **argv)
{
    g_autofree gchar *unavailable = einsora_test_docker_unavailable();
    g_autofree gchar *catalog = NULL;
    g_autofree gchar *llama_server = NULL;
    int status;

    g_test_init(&argc, &argv, NULL);
    if (unavailable != NULL) {
        g_test_skip_printf("%s", unavailable);
        return g_test_run();
    }
    docker = einsora_test_docker_start();
    einsora_test_docker_load_jupyter(docker, EINSORA_TEST_DOCKER_JUPYTER_IMAGE);
    registry = einsora_test_registry_start();
    catalog = test_catalog();
    if (registry != NULL) {
        /* First, while the registry has the only copy of its layers. */
        einsora_test_docker_push_only(docker, registry, EINSORA_TEST_DOCKER_JUPYTER_IMAGE,
                                      "einsora/jupyter", "pull");
        g_test_add("/docker/pull", Fixture, catalog, fixture_set_up, test_pull, fixture_tear_down);
    }
    /* Endpoints need the llama-server the test command builds. */
    if (g_getenv("EINSORA_LLAMA_DIR") != NULL)
        llama_server = einsora_test_llama_server();
    if (llama_server != NULL) {
        einsora_test_docker_load_llama(docker, llama_server, LLAMA_REFERENCE);
        g_test_add("/docker/endpoint", Fixture, catalog, fixture_set_up, test_endpoint,
                   fixture_tear_down);
    }
    g_test_add("/docker/lifecycle", Fixture, NULL, fixture_set_up, test_lifecycle,
               fixture_tear_down);
    g_test_add("/docker/adopted-after-kill", Fixture, NULL, fixture_set_up, test_adopted_after_kill,
               fixture_tear_down);
    g_test_add("/docker/out-of-memory", Fixture, NULL, fixture_set_up, test_out_of_memory,
               fixture_tear_down);
    g_test_add("/docker/engine-down", Fixture, NULL, fixture_set_up, test_engine_down,
               fixture_tear_down);
    g_test_add_func("/docker/owner-only", test_owner_only);
    status = g_test_run();
    einsora_test_docker_stop(docker);
    einsora_test_registry_stop(registry);
    if (catalog != NULL)
        g_unlink(catalog);
    return status;
}
