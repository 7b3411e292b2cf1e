/* The docker driver's parts that need no Engine: the container recipe
 * (its policy, its fingerprint, what it refuses), the pull query a
 * reference becomes, and EINSORA_DOCKER_HOST. */
#include <gio/gio.h>

#include "einsora-docker-engine.h"
#include "einsora-docker-recipe.h"

static const EinsoraDockerRecipe base = {
    .kind = EINSORA_WORKLOAD_KIND_NOTEBOOK,
    .image = "quay.io/jupyter/minimal-notebook:python-3.12",
    .data_dir = "/var/lib/einsora/docker/w",
    .run_dir = "/run/einsora/docker/w",
    .cpus = 2,
    .memory_mib = 4096,
    .devices = 0,
    .uid = 1000,
    .gid = 100,
};

static JsonObject *
host_config(JsonNode *body)
{
    return json_object_get_object_member(json_node_get_object(body), "HostConfig");
}

static gboolean
array_has(JsonArray *array, const char *value)
{
    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        if (g_strcmp0(json_array_get_string_element(array, i), value) == 0)
            return TRUE;
    }
    return FALSE;
}

static void
test_policy(void)
{
    g_autofree gchar *fingerprint = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) body = einsora_docker_recipe_build(&base, &fingerprint, &error);
    JsonObject *object;
    JsonObject *host;
    JsonArray *mounts;
    JsonArray *entrypoint;

    g_assert_no_error(error);
    g_assert_nonnull(body);
    g_assert_cmpuint(strlen(fingerprint), ==, 64);
    object = json_node_get_object(body);
    host = host_config(body);
    g_assert_cmpstr(json_object_get_string_member(object, "Image"), ==, base.image);
    g_assert_cmpstr(json_object_get_string_member(object, "User"), ==, "1000:100");
    g_assert_true(json_object_get_boolean_member(object, "NetworkDisabled"));
    g_assert_cmpstr(json_object_get_string_member(host, "NetworkMode"), ==, "none");
    g_assert_true(json_object_get_boolean_member(host, "ReadonlyRootfs"));
    g_assert_cmpint(json_object_get_int_member(host, "Memory"), ==, G_GINT64_CONSTANT(4096) << 20);
    g_assert_cmpint(json_object_get_int_member(host, "MemorySwap"), ==,
                    G_GINT64_CONSTANT(4096) << 20);
    g_assert_cmpint(json_object_get_int_member(host, "NanoCpus"), ==, 2000000000);
    g_assert_cmpint(json_object_get_int_member(host, "PidsLimit"), ==, EINSORA_DOCKER_PIDS_LIMIT);
    g_assert_true(array_has(json_object_get_array_member(host, "CapDrop"), "ALL"));
    g_assert_true(
        array_has(json_object_get_array_member(host, "SecurityOpt"), "no-new-privileges"));
    g_assert_false(json_object_has_member(host, "PortBindings"));
    g_assert_false(json_object_has_member(host, "DeviceRequests"));
    g_assert_false(json_object_has_member(object, "ExposedPorts"));
    /* The data as its home, the run directory for its socket; nothing else. */
    mounts = json_object_get_array_member(host, "Mounts");
    g_assert_cmpuint(json_array_get_length(mounts), ==, 2);
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(mounts, 0), "Source"), ==,
        base.data_dir);
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(mounts, 0), "Target"), ==,
        EINSORA_DOCKER_HOME);
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(mounts, 1), "Target"), ==,
        EINSORA_DOCKER_RUN_DIR);
    /* The server on a socket, never a port. */
    entrypoint = json_object_get_array_member(object, "Entrypoint");
    g_assert_true(array_has(entrypoint, "--sock=/run/einsora/notebook.sock"));
    g_assert_true(array_has(entrypoint, "--sock-mode=0600"));
    /* No token until finish, and none in the fingerprinted body. */
    g_assert_false(json_object_has_member(object, "Labels"));
    for (guint i = 0; i < json_array_get_length(json_object_get_array_member(object, "Env")); i++)
        g_assert_false(g_str_has_prefix(
            json_array_get_string_element(json_object_get_array_member(object, "Env"), i),
            "JUPYTER_TOKEN="));
}

static void
test_gpus(void)
{
    EinsoraDockerRecipe recipe = base;
    g_autofree gchar *fingerprint = NULL;
    g_autoptr(JsonNode) body = NULL;
    JsonArray *requests;
    JsonObject *request;

    recipe.devices = 1;
    body = einsora_docker_recipe_build(&recipe, &fingerprint, NULL);
    requests = json_object_get_array_member(host_config(body), "DeviceRequests");
    g_assert_cmpuint(json_array_get_length(requests), ==, 1);
    request = json_array_get_object_element(requests, 0);
    g_assert_cmpstr(json_object_get_string_member(request, "Driver"), ==, "nvidia");
    g_assert_cmpint(json_object_get_int_member(request, "Count"), ==, 1);
    g_assert_false(json_object_has_member(request, "DeviceIDs"));

    /* The GPUs placement chose, and only those: IDs, no count. */
    {
        g_autofree gchar *chosen_fingerprint = NULL;
        g_autoptr(JsonNode) chosen = NULL;
        g_autoptr(JsonNode) labelled = NULL;
        g_autofree gchar *labelled_fingerprint = NULL;
        JsonArray *ids;

        recipe.devices = 2;
        recipe.gpu_mask = 0x9;
        chosen = einsora_docker_recipe_build(&recipe, &chosen_fingerprint, NULL);
        request = json_array_get_object_element(
            json_object_get_array_member(host_config(chosen), "DeviceRequests"), 0);
        ids = json_object_get_array_member(request, "DeviceIDs");
        g_assert_cmpuint(json_array_get_length(ids), ==, 2);
        g_assert_cmpstr(json_array_get_string_element(ids, 0), ==, "0");
        g_assert_cmpstr(json_array_get_string_element(ids, 1), ==, "3");
        g_assert_false(json_object_has_member(request, "Count"));
        g_assert_cmpstr(chosen_fingerprint, !=, fingerprint);
        /* The label a restarted daemon rebuilds the recipe from. */
        labelled = einsora_docker_recipe_build(&recipe, &labelled_fingerprint, NULL);
        einsora_docker_recipe_finish(labelled, &recipe, "m", "w", 1, labelled_fingerprint, "t");
        g_assert_cmpstr(json_object_get_string_member(
                            json_object_get_object_member(json_node_get_object(labelled), "Labels"),
                            EINSORA_DOCKER_LABEL_GPUS),
                        ==, "0,3");
    }
    /* As many as the class has, or the recipe is refused. */
    {
        g_autoptr(GError) error = NULL;
        g_autofree gchar *unused = NULL;
        g_autoptr(JsonNode) wrong = NULL;

        recipe.gpu_mask = 0x1;
        wrong = einsora_docker_recipe_build(&recipe, &unused, &error);
        g_assert_null(wrong);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    }
}

/* The same recipe is the same fingerprint whatever the attempt or token;
 * any change to what runs is another. */
static void
test_fingerprint(void)
{
    g_autofree gchar *first = NULL;
    g_autofree gchar *again = NULL;
    g_autoptr(JsonNode) a = einsora_docker_recipe_build(&base, &first, NULL);
    g_autoptr(JsonNode) b = einsora_docker_recipe_build(&base, &again, NULL);
    const struct {
        const char *what;
        EinsoraDockerRecipe recipe;
    } changes[] = {
        {"image", {.image = "quay.io/jupyter/minimal-notebook:python-3.13"}},
        {"memory", {.memory_mib = 8192}},
        {"cpus", {.cpus = 4}},
        {"gpus", {.devices = 1}},
        {"user", {.uid = 1001}},
        {"data", {.data_dir = "/elsewhere"}},
    };

    g_assert_cmpstr(first, ==, again);
    einsora_docker_recipe_finish(a, &base, "01a23ad5-ed57-70b8-823a-6c2fca57445d", "w", 1, first,
                                 "token-one");
    einsora_docker_recipe_finish(b, &base, "01a23ad5-ed57-70b8-823a-6c2fca57445d", "w", 2, again,
                                 "token-two");
    for (guint i = 0; i < G_N_ELEMENTS(changes); i++) {
        EinsoraDockerRecipe recipe = base;
        g_autofree gchar *changed = NULL;
        g_autoptr(JsonNode) body = NULL;

        g_test_message("a change of %s", changes[i].what);
        if (changes[i].recipe.image != NULL)
            recipe.image = changes[i].recipe.image;
        if (changes[i].recipe.memory_mib != 0)
            recipe.memory_mib = changes[i].recipe.memory_mib;
        if (changes[i].recipe.cpus != 0)
            recipe.cpus = changes[i].recipe.cpus;
        if (changes[i].recipe.devices != 0)
            recipe.devices = changes[i].recipe.devices;
        if (changes[i].recipe.uid != 0)
            recipe.uid = changes[i].recipe.uid;
        if (changes[i].recipe.data_dir != NULL)
            recipe.data_dir = changes[i].recipe.data_dir;
        body = einsora_docker_recipe_build(&recipe, &changed, NULL);
        g_assert_nonnull(body);
        g_assert_cmpstr(changed, !=, first);
    }
}

static void
test_finish(void)
{
    g_autofree gchar *fingerprint = NULL;
    g_autoptr(JsonNode) body = einsora_docker_recipe_build(&base, &fingerprint, NULL);
    JsonObject *labels;
    JsonArray *env;

    einsora_docker_recipe_finish(body, &base, "01a23ad5-ed57-70b8-823a-6c2fca57445d",
                                 "01a23ad6-03de-766f-8506-bfce7f0ee398", 3, fingerprint, "s3cret");
    labels = json_object_get_object_member(json_node_get_object(body), "Labels");
    g_assert_cmpstr(json_object_get_string_member(labels, EINSORA_DOCKER_LABEL_MACHINE), ==,
                    "01a23ad5-ed57-70b8-823a-6c2fca57445d");
    g_assert_cmpstr(json_object_get_string_member(labels, EINSORA_DOCKER_LABEL_WORKLOAD), ==,
                    "01a23ad6-03de-766f-8506-bfce7f0ee398");
    g_assert_cmpstr(json_object_get_string_member(labels, EINSORA_DOCKER_LABEL_ATTEMPT), ==, "3");
    g_assert_cmpstr(json_object_get_string_member(labels, EINSORA_DOCKER_LABEL_FINGERPRINT), ==,
                    fingerprint);
    g_assert_cmpstr(json_object_get_string_member(labels, EINSORA_DOCKER_LABEL_MEMORY), ==, "4096");
    env = json_object_get_array_member(json_node_get_object(body), "Env");
    g_assert_true(array_has(env, "JUPYTER_TOKEN=s3cret"));
    /* The token is in the environment only, never a label. */
    {
        g_autofree gchar *text =
            json_to_string(json_object_get_member(json_node_get_object(body), "Labels"), FALSE);
        g_assert_null(strstr(text, "s3cret"));
    }
    {
        g_autofree gchar *name =
            einsora_docker_recipe_container_name("01a23ad6-03de-766f-8506-bfce7f0ee398");
        g_assert_cmpstr(name, ==, "einsora-01a23ad6-03de-766f-8506-bfce7f0ee398");
    }
}

/* An endpoint: llama-server with the native driver's options, its model
 * read-only, no data directory, its key in LLAMA_API_KEY only. */
static void
test_endpoint(void)
{
    EinsoraDockerRecipe recipe = base;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *other = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) again = NULL;
    JsonObject *object;
    JsonArray *mounts;
    JsonArray *entrypoint;
    JsonObject *model;

    recipe.kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
    recipe.image = "ghcr.io/ggml-org/llama.cpp:server";
    recipe.data_dir = NULL;
    recipe.model_path = "/var/lib/einsora/models/blobs/sha256-00";
    recipe.model_name = "tiny";
    recipe.model_digest = "sha256:00";
    body = einsora_docker_recipe_build(&recipe, &fingerprint, &error);
    g_assert_no_error(error);
    object = json_node_get_object(body);
    entrypoint = json_object_get_array_member(object, "Entrypoint");
    g_assert_cmpstr(json_array_get_string_element(entrypoint, 0), ==, "llama-server");
    g_assert_true(array_has(entrypoint, "/run/einsora/endpoint.sock"));
    g_assert_true(array_has(entrypoint, "/run/einsora/model.gguf"));
    g_assert_true(array_has(entrypoint, "tiny"));
    g_assert_true(array_has(entrypoint, "--offline"));
    g_assert_cmpstr(json_object_get_string_member(host_config(body), "NetworkMode"), ==, "none");
    mounts = json_object_get_array_member(host_config(body), "Mounts");
    g_assert_cmpuint(json_array_get_length(mounts), ==, 2);
    model = json_array_get_object_element(mounts, 1);
    g_assert_cmpstr(json_object_get_string_member(model, "Source"), ==, recipe.model_path);
    g_assert_cmpstr(json_object_get_string_member(model, "Target"), ==, "/run/einsora/model.gguf");
    g_assert_true(json_object_get_boolean_member(model, "ReadOnly"));
    /* Another model is another recipe. */
    recipe.model_path = "/var/lib/einsora/models/blobs/sha256-11";
    again = einsora_docker_recipe_build(&recipe, &other, NULL);
    g_assert_cmpstr(other, !=, fingerprint);
    einsora_docker_recipe_finish(body, &recipe, "01a23ad5-ed57-70b8-823a-6c2fca57445d", "w", 1,
                                 fingerprint, "k3y");
    g_assert_true(array_has(json_object_get_array_member(object, "Env"), "LLAMA_API_KEY=k3y"));
    g_assert_cmpstr(json_object_get_string_member(json_object_get_object_member(object, "Labels"),
                                                  EINSORA_DOCKER_LABEL_MODEL_DIGEST),
                    ==, "sha256:00");
    g_assert_cmpstr(einsora_docker_recipe_socket_name(EINSORA_WORKLOAD_KIND_ENDPOINT), ==,
                    "endpoint.sock");
}

/* The catalog's vllm image: vLLM's own server on the same socket, offline,
 * with shared memory for its processes, its key in VLLM_API_KEY; what a
 * server can't serve is refused. Not run here (no NVIDIA machine, no
 * registry): only its recipe. */
static void
test_vllm(void)
{
    EinsoraDockerRecipe recipe = base;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *llama_fingerprint = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) llama = NULL;
    JsonObject *object;
    JsonObject *host;
    JsonArray *entrypoint;
    JsonArray *environment;

    recipe.kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
    recipe.image = "docker.io/vllm/vllm-openai:v0.11.0";
    recipe.data_dir = NULL;
    recipe.model_path = "/var/lib/einsora/models/blobs/sha256-00";
    recipe.model_name = "tiny";
    recipe.model_digest = "sha256:00";
    recipe.memory_mib = 65536;
    recipe.devices = 1;
    recipe.gpu_mask = 0x2;
    llama = einsora_docker_recipe_build(&recipe, &llama_fingerprint, &error);
    g_assert_no_error(error);
    recipe.server = "vllm";
    body = einsora_docker_recipe_build(&recipe, &fingerprint, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(fingerprint, !=, llama_fingerprint);
    object = json_node_get_object(body);
    host = host_config(body);
    entrypoint = json_object_get_array_member(object, "Entrypoint");
    g_assert_cmpstr(json_array_get_string_element(entrypoint, 0), ==, "vllm");
    g_assert_cmpstr(json_array_get_string_element(entrypoint, 1), ==, "serve");
    g_assert_cmpstr(json_array_get_string_element(entrypoint, 2), ==, "/run/einsora/model.gguf");
    g_assert_true(array_has(entrypoint, "--uds=/run/einsora/endpoint.sock"));
    g_assert_true(array_has(entrypoint, "--served-model-name=tiny"));
    /* The same context as llama-server's --ctx-size. */
    g_assert_true(array_has(entrypoint, "--max-model-len=4096"));
    /* No port: the socket replaces --host and --port. */
    for (guint i = 0; i < json_array_get_length(entrypoint); i++)
        g_assert_false(g_str_has_prefix(json_array_get_string_element(entrypoint, i), "--port"));
    environment = json_object_get_array_member(object, "Env");
    g_assert_true(array_has(environment, "HF_HUB_OFFLINE=1"));
    g_assert_true(array_has(environment, "VLLM_NO_USAGE_STATS=1"));
    g_assert_true(array_has(environment, "HOME=/tmp"));
    g_assert_true(array_has(environment, "USER=einsora"));
    /* A quarter of 64 GiB for shared memory and for /tmp's caches. */
    g_assert_cmpint(json_object_get_int_member(host, "ShmSize"), ==,
                    G_GINT64_CONSTANT(16384) << 20);
    g_assert_cmpstr(
        json_object_get_string_member(json_object_get_object_member(host, "Tmpfs"), "/tmp"), ==,
        "rw,nosuid,nodev,size=8192m");
    g_assert_false(json_object_has_member(host_config(llama), "ShmSize"));
    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(host_config(llama), "Tmpfs"), "/tmp"),
                    ==, "rw,nosuid,nodev,size=1024m");
    /* Its key where vLLM reads it, and the server in its labels for a
     * restarted daemon. */
    einsora_docker_recipe_finish(body, &recipe, "01a23ad5-ed57-70b8-823a-6c2fca57445d", "w", 1,
                                 fingerprint, "k3y");
    g_assert_true(array_has(json_object_get_array_member(object, "Env"), "VLLM_API_KEY=k3y"));
    g_assert_false(array_has(json_object_get_array_member(object, "Env"), "LLAMA_API_KEY=k3y"));
    g_assert_cmpstr(json_object_get_string_member(json_object_get_object_member(object, "Labels"),
                                                  EINSORA_DOCKER_LABEL_SERVER),
                    ==, "vllm");
    g_assert_cmpstr(einsora_docker_recipe_token_variable(EINSORA_WORKLOAD_KIND_ENDPOINT, NULL), ==,
                    "LLAMA_API_KEY");

    /* vLLM serves no notebook; Jupyter no endpoint; nothing unknown. */
    {
        const struct {
            EinsoraWorkloadKind kind;
            const char *server;
        } wrong[] = {
            {EINSORA_WORKLOAD_KIND_NOTEBOOK, "vllm"},
            {EINSORA_WORKLOAD_KIND_ENDPOINT, "jupyter"},
            {EINSORA_WORKLOAD_KIND_ENDPOINT, "tgi"},
        };

        for (guint i = 0; i < G_N_ELEMENTS(wrong); i++) {
            EinsoraDockerRecipe refused = recipe;
            g_autofree gchar *unused = NULL;
            g_autoptr(GError) refusal = NULL;
            g_autoptr(JsonNode) none = NULL;

            refused.kind = wrong[i].kind;
            refused.server = wrong[i].server;
            refused.data_dir = base.data_dir;
            none = einsora_docker_recipe_build(&refused, &unused, &refusal);
            g_assert_null(none);
            g_assert_error(refusal, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
        }
    }
}

static void
test_refusals(void)
{
    const struct {
        const char *what;
        EinsoraDockerRecipe recipe;
        gint code;
    } cases[] = {
        {"root", {.uid = 0}, G_IO_ERROR_PERMISSION_DENIED},
        {"an endpoint without its model",
         {.kind = EINSORA_WORKLOAD_KIND_ENDPOINT},
         G_IO_ERROR_INVALID_ARGUMENT},
        {"no image", {.image = ""}, G_IO_ERROR_INVALID_ARGUMENT},
        {"no CPU", {.cpus = -1}, G_IO_ERROR_INVALID_ARGUMENT},
        {"too little memory", {.memory_mib = 1}, G_IO_ERROR_INVALID_ARGUMENT},
        {"negative GPUs", {.devices = -1}, G_IO_ERROR_INVALID_ARGUMENT},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        EinsoraDockerRecipe recipe = base;
        g_autofree gchar *fingerprint = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonNode) body = NULL;

        g_test_message("%s", cases[i].what);
        if (i == 0)
            recipe.uid = 0;
        else if (i == 1)
            recipe.kind = cases[i].recipe.kind;
        else if (i == 2)
            recipe.image = cases[i].recipe.image;
        else if (i == 3)
            recipe.cpus = cases[i].recipe.cpus;
        else if (i == 4)
            recipe.memory_mib = cases[i].recipe.memory_mib;
        else
            recipe.devices = cases[i].recipe.devices;
        body = einsora_docker_recipe_build(&recipe, &fingerprint, &error);
        g_assert_null(body);
        g_assert_error(error, G_IO_ERROR, cases[i].code);
    }
}

static void
test_pull_query(void)
{
    const struct {
        const char *reference;
        const char *query;
    } cases[] = {
        {"quay.io/jupyter/minimal-notebook:python-3.12",
         "fromImage=quay.io%2Fjupyter%2Fminimal-notebook&tag=python-3.12"},
        {"localhost:5000/einsora/jupyter:1",
         "fromImage=localhost%3A5000%2Feinsora%2Fjupyter&tag=1"},
        {"localhost:5000/einsora/jupyter",
         "fromImage=localhost%3A5000%2Feinsora%2Fjupyter&tag=latest"},
        {"debian", "fromImage=debian&tag=latest"},
        {"debian@sha256:0123", "fromImage=debian%40sha256%3A0123"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *query = einsora_docker_engine_pull_query(cases[i].reference);
        g_assert_cmpstr(query, ==, cases[i].query);
    }
}

static void
test_host(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path =
        einsora_docker_engine_socket_from_host("unix:///run/docker.sock", NULL);
    const char *const refused[] = {"tcp://127.0.0.1:2375", "unix://relative", "", "/run/x.sock"};

    g_assert_cmpstr(path, ==, "/run/docker.sock");
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autofree gchar *none = einsora_docker_engine_socket_from_host(refused[i], &error);
        g_assert_null(none);
        g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
        g_clear_error(&error);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/docker-recipe/policy", test_policy);
    g_test_add_func("/docker-recipe/gpus", test_gpus);
    g_test_add_func("/docker-recipe/endpoint", test_endpoint);
    g_test_add_func("/docker-recipe/vllm", test_vllm);
    g_test_add_func("/docker-recipe/fingerprint", test_fingerprint);
    g_test_add_func("/docker-recipe/finish", test_finish);
    g_test_add_func("/docker-recipe/refusals", test_refusals);
    g_test_add_func("/docker-engine/pull-query", test_pull_query);
    g_test_add_func("/docker-engine/host", test_host);
    return g_test_run();
}
