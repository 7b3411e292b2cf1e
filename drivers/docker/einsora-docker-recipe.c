#define G_LOG_DOMAIN "einsora-docker"

#include "einsora-docker-recipe.h"

#include "einsora-gpu-mask.h"
#include "einsora-native-sandbox.h"

#include <gio/gio.h>
#include <string.h>

#define MIB G_GINT64_CONSTANT(1048576)
/* The private /tmp counts against the memory limit: a quarter of it, at
 * most 1 GiB. */
#define TMP_MAX_MIB 1024
/* vLLM keeps torch and triton caches under HOME (/tmp) and talks to its
 * engine process through shared memory, which Docker's default 64 MiB
 * starves: both a quarter of the memory, within these. */
#define VLLM_TMP_MAX_MIB 8192
#define VLLM_SHM_MAX_MIB 16384

static gboolean
is_vllm(const EinsoraDockerRecipe *recipe)
{
    return recipe->kind == EINSORA_WORKLOAD_KIND_ENDPOINT && g_strcmp0(recipe->server, "vllm") == 0;
}

gchar *
einsora_docker_recipe_container_name(const char *workload_id)
{
    return g_strdup_printf("einsora-%s", workload_id);
}

static void
add_strings(JsonBuilder *builder, const char *member, const char *const *values)
{
    json_builder_set_member_name(builder, member);
    json_builder_begin_array(builder);
    for (guint i = 0; values[i] != NULL; i++)
        json_builder_add_string_value(builder, values[i]);
    json_builder_end_array(builder);
}

static void
add_mount(JsonBuilder *builder, const char *source, const char *target, gboolean read_only)
{
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "Type");
    json_builder_add_string_value(builder, "bind");
    json_builder_set_member_name(builder, "Source");
    json_builder_add_string_value(builder, source);
    json_builder_set_member_name(builder, "Target");
    json_builder_add_string_value(builder, target);
    json_builder_set_member_name(builder, "ReadOnly");
    json_builder_add_boolean_value(builder, read_only);
    json_builder_set_member_name(builder, "BindOptions");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "Propagation");
    json_builder_add_string_value(builder, "rprivate");
    json_builder_end_object(builder);
    json_builder_end_object(builder);
}

static void
add_bind(JsonBuilder *builder, const char *source, const char *target)
{
    add_mount(builder, source, target, FALSE);
}

static void
add_bind_read_only(JsonBuilder *builder, const char *source, const char *target)
{
    add_mount(builder, source, target, TRUE);
}

static void
add_host_config(JsonBuilder *builder, const EinsoraDockerRecipe *recipe)
{
    gint64 tmp_mib =
        CLAMP(recipe->memory_mib / 4, 16, is_vllm(recipe) ? VLLM_TMP_MAX_MIB : TMP_MAX_MIB);
    g_autofree gchar *tmp_options =
        g_strdup_printf("rw,nosuid,nodev,size=%" G_GINT64_FORMAT "m", tmp_mib);
    const char *const cap_drop[] = {"ALL", NULL};
    const char *const security[] = {"no-new-privileges", NULL};

    json_builder_set_member_name(builder, "HostConfig");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "NetworkMode");
    json_builder_add_string_value(builder, "none");
    json_builder_set_member_name(builder, "Mounts");
    json_builder_begin_array(builder);
    if (recipe->kind == EINSORA_WORKLOAD_KIND_ENDPOINT) {
        add_bind(builder, recipe->run_dir, EINSORA_DOCKER_RUN_DIR);
        add_bind_read_only(builder, recipe->model_path, EINSORA_NATIVE_MODEL_IN_SANDBOX);
    } else {
        add_bind(builder, recipe->data_dir, EINSORA_DOCKER_HOME);
        add_bind(builder, recipe->run_dir, EINSORA_DOCKER_RUN_DIR);
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "Tmpfs");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "/tmp");
    json_builder_add_string_value(builder, tmp_options);
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "ReadonlyRootfs");
    json_builder_add_boolean_value(builder, TRUE);
    json_builder_set_member_name(builder, "Memory");
    json_builder_add_int_value(builder, recipe->memory_mib * MIB);
    /* Swap as large as memory: none at all. */
    json_builder_set_member_name(builder, "MemorySwap");
    json_builder_add_int_value(builder, recipe->memory_mib * MIB);
    json_builder_set_member_name(builder, "NanoCpus");
    json_builder_add_int_value(builder, recipe->cpus * G_GINT64_CONSTANT(1000000000));
    json_builder_set_member_name(builder, "PidsLimit");
    json_builder_add_int_value(builder, EINSORA_DOCKER_PIDS_LIMIT);
    add_strings(builder, "CapDrop", cap_drop);
    add_strings(builder, "SecurityOpt", security);
    /* docker-init as PID 1 reaps the kernels the server starts. */
    json_builder_set_member_name(builder, "Init");
    json_builder_add_boolean_value(builder, TRUE);
    json_builder_set_member_name(builder, "IpcMode");
    json_builder_add_string_value(builder, "private");
    if (is_vllm(recipe)) {
        json_builder_set_member_name(builder, "ShmSize");
        json_builder_add_int_value(builder,
                                   CLAMP(recipe->memory_mib / 4, 64, VLLM_SHM_MAX_MIB) * MIB);
    }
    json_builder_set_member_name(builder, "RestartPolicy");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "Name");
    json_builder_add_string_value(builder, "no");
    json_builder_end_object(builder);
    /* Its output, bounded: the logs read it from here. */
    json_builder_set_member_name(builder, "LogConfig");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "Type");
    json_builder_add_string_value(builder, "json-file");
    json_builder_set_member_name(builder, "Config");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "max-size");
    json_builder_add_string_value(builder, "10m");
    json_builder_set_member_name(builder, "max-file");
    json_builder_add_string_value(builder, "2");
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    if (recipe->devices > 0) {
        const char *const capabilities[] = {"gpu", NULL};
        json_builder_set_member_name(builder, "DeviceRequests");
        json_builder_begin_array(builder);
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "Driver");
        json_builder_add_string_value(builder, "nvidia");
        if (recipe->gpu_mask != 0) {
            /* Only these: not whichever the runtime would pick, nor all. */
            json_builder_set_member_name(builder, "DeviceIDs");
            json_builder_begin_array(builder);
            for (guint i = 0; i < EINSORA_GPU_MASK_BITS; i++) {
                g_autofree gchar *index = NULL;

                if ((recipe->gpu_mask & (G_GUINT64_CONSTANT(1) << i)) == 0)
                    continue;
                index = g_strdup_printf("%u", i);
                json_builder_add_string_value(builder, index);
            }
            json_builder_end_array(builder);
        } else {
            json_builder_set_member_name(builder, "Count");
            json_builder_add_int_value(builder, recipe->devices);
        }
        json_builder_set_member_name(builder, "Capabilities");
        json_builder_begin_array(builder);
        json_builder_begin_array(builder);
        for (guint i = 0; capabilities[i] != NULL; i++)
            json_builder_add_string_value(builder, capabilities[i]);
        json_builder_end_array(builder);
        json_builder_end_array(builder);
        json_builder_end_object(builder);
        json_builder_end_array(builder);
    }
    json_builder_end_object(builder);
}

JsonNode *
einsora_docker_recipe_build(const EinsoraDockerRecipe *recipe, gchar **fingerprint, GError **error)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autofree gchar *user = NULL;
    g_autoptr(JsonNode) body = NULL;
    g_autofree gchar *text = NULL;
    const char *const command[] = {
        "jupyter-notebook",
        "--no-browser",
        "--sock=" EINSORA_DOCKER_RUN_DIR "/" EINSORA_DOCKER_SOCKET_NAME,
        "--sock-mode=0600",
        "--KernelManager.transport=ipc",
        "--notebook-dir=" EINSORA_DOCKER_HOME,
        NULL,
    };
    const char *const environment[] = {
        "HOME=" EINSORA_DOCKER_HOME,
        "JUPYTER_RUNTIME_DIR=/tmp/jupyter-runtime",
        "PYTHONUNBUFFERED=1",
        "LANG=C.UTF-8",
        NULL,
    };
    gboolean endpoint = recipe->kind == EINSORA_WORKLOAD_KIND_ENDPOINT;
    const char *const endpoint_environment[] = {"HOME=/tmp", "LANG=C.UTF-8", NULL};
    /* Nothing to fetch and nowhere to send: no network, so say so before
     * it tries (a tokenizer download, usage statistics). */
    const char *const vllm_environment[] = {
        "HOME=/tmp",
        "LANG=C.UTF-8",
        /* Its user may have no passwd entry: torch names caches after
         * getpass.getuser(), which reads these first. */
        "USER=einsora",
        "LOGNAME=einsora",
        "HF_HUB_OFFLINE=1",
        "TRANSFORMERS_OFFLINE=1",
        "VLLM_NO_USAGE_STATS=1",
        "DO_NOT_TRACK=1",
        "XDG_CACHE_HOME=/tmp/.cache",
        "VLLM_CACHE_ROOT=/tmp/.cache/vllm",
        NULL,
    };
    g_auto(GStrv) endpoint_command = NULL;

    if (recipe->kind != EINSORA_WORKLOAD_KIND_NOTEBOOK && !endpoint) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                    "the docker driver runs notebooks and endpoints only, not %s",
                    einsora_workload_kind_to_string(recipe->kind));
        return NULL;
    }
    if (recipe->image == NULL || *recipe->image == '\0' || recipe->run_dir == NULL ||
        (!endpoint && recipe->data_dir == NULL) ||
        (endpoint && (recipe->model_path == NULL || recipe->model_name == NULL ||
                      recipe->model_digest == NULL))) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            endpoint ? "a docker endpoint needs its image, its run directory and "
                                       "its model"
                                     : "a docker notebook needs its image and its directories");
        return NULL;
    }
    if (endpoint ? recipe->server != NULL && !g_str_equal(recipe->server, "llama-server") &&
                       !g_str_equal(recipe->server, "vllm")
                 : recipe->server != NULL && !g_str_equal(recipe->server, "jupyter")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                    "the docker driver doesn't run %ss with %s",
                    einsora_workload_kind_to_string(recipe->kind), recipe->server);
        return NULL;
    }
    if (is_vllm(recipe)) {
        g_autofree gchar *served = g_strdup_printf("--served-model-name=%s", recipe->model_name);
        /* The context llama-server serves, so an endpoint's prompts fit
         * whichever server runs it. */
        g_autofree gchar *length =
            g_strdup_printf("--max-model-len=%d", EINSORA_NATIVE_ENDPOINT_CONTEXT);
        /* The model from the store's GGUF, its tokenizer read from the
         * file; the socket replaces --host and --port; the key comes
         * from VLLM_API_KEY. */
        const char *const argv[] = {
            "vllm",
            "serve",
            EINSORA_NATIVE_MODEL_IN_SANDBOX,
            served,
            "--uds=" EINSORA_DOCKER_RUN_DIR "/" EINSORA_DOCKER_ENDPOINT_SOCKET_NAME,
            length,
            "--disable-fastapi-docs",
            NULL,
        };
        endpoint_command = g_strdupv((gchar **)argv);
    } else if (endpoint) {
        const EinsoraEndpointSandbox sandbox = {
            .llama_server_path = "llama-server",
            .model_path = recipe->model_path,
            .model_name = recipe->model_name,
            .run_dir = EINSORA_DOCKER_RUN_DIR,
            .socket_path = EINSORA_DOCKER_RUN_DIR "/" EINSORA_DOCKER_ENDPOINT_SOCKET_NAME,
            .cpus = recipe->cpus,
            .memory_mib = recipe->memory_mib,
        };
        endpoint_command = einsora_native_sandbox_endpoint_command(&sandbox);
    }
    if (recipe->cpus < 1 || recipe->cpus > 4096 || recipe->memory_mib < 64 ||
        recipe->memory_mib > G_GINT64_CONSTANT(1) << 30 || recipe->devices < 0 ||
        recipe->devices > 64 ||
        (recipe->gpu_mask != 0 && einsora_gpu_mask_count(recipe->gpu_mask) != recipe->devices)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "%" G_GINT64_FORMAT " CPUs, %" G_GINT64_FORMAT " MiB and %" G_GINT64_FORMAT
                    " GPUs can't be a container's limits",
                    recipe->cpus, recipe->memory_mib, recipe->devices);
        return NULL;
    }
    /* Never root: the daemon's own user when it isn't root (so the data
     * it owns stays its own), else the Jupyter images' jovyan (1000:100). */
    user = g_strdup_printf("%u:%u", recipe->uid, recipe->gid);
    if (recipe->uid == 0) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                            "a docker notebook never runs as root");
        return NULL;
    }

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "Image");
    json_builder_add_string_value(builder, recipe->image);
    /* The image's own entrypoint (start-up scripts that may need root or
     * a network) is replaced by the server itself. */
    add_strings(builder, "Entrypoint", endpoint ? (const char *const *)endpoint_command : command);
    json_builder_set_member_name(builder, "Cmd");
    json_builder_begin_array(builder);
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "User");
    json_builder_add_string_value(builder, user);
    json_builder_set_member_name(builder, "WorkingDir");
    json_builder_add_string_value(builder, endpoint ? "/tmp" : EINSORA_DOCKER_HOME);
    add_strings(builder, "Env",
                is_vllm(recipe) ? vllm_environment
                : endpoint      ? endpoint_environment
                                : environment);
    json_builder_set_member_name(builder, "NetworkDisabled");
    json_builder_add_boolean_value(builder, TRUE);
    json_builder_set_member_name(builder, "StopSignal");
    json_builder_add_string_value(builder, "SIGTERM");
    add_host_config(builder, recipe);
    json_builder_end_object(builder);

    body = json_builder_get_root(builder);
    text = json_to_string(body, FALSE);
    *fingerprint = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
    return g_steal_pointer(&body);
}

static void
set_label(JsonObject *labels, const char *key, const char *value)
{
    json_object_set_string_member(labels, key, value);
}

static void
set_number_label(JsonObject *labels, const char *key, gint64 value)
{
    g_autofree gchar *text = g_strdup_printf("%" G_GINT64_FORMAT, value);

    json_object_set_string_member(labels, key, text);
}

void
einsora_docker_recipe_finish(JsonNode *body, const EinsoraDockerRecipe *recipe,
                             const char *machine_id, const char *workload_id, gint64 attempt,
                             const char *fingerprint, const char *token)
{
    JsonObject *object = json_node_get_object(body);
    JsonObject *labels = json_object_new();
    JsonArray *environment = json_object_get_array_member(object, "Env");

    set_label(labels, EINSORA_DOCKER_LABEL_MACHINE, machine_id);
    set_label(labels, EINSORA_DOCKER_LABEL_WORKLOAD, workload_id);
    set_number_label(labels, EINSORA_DOCKER_LABEL_ATTEMPT, attempt);
    set_label(labels, EINSORA_DOCKER_LABEL_FINGERPRINT, fingerprint);
    set_label(labels, EINSORA_DOCKER_LABEL_KIND, einsora_workload_kind_to_string(recipe->kind));
    set_label(labels, EINSORA_DOCKER_LABEL_IMAGE, recipe->image);
    set_number_label(labels, EINSORA_DOCKER_LABEL_CPUS, recipe->cpus);
    set_number_label(labels, EINSORA_DOCKER_LABEL_MEMORY, recipe->memory_mib);
    set_number_label(labels, EINSORA_DOCKER_LABEL_DEVICES, recipe->devices);
    {
        g_autofree gchar *gpus = einsora_gpu_mask_to_string(recipe->gpu_mask);
        set_label(labels, EINSORA_DOCKER_LABEL_GPUS, gpus);
    }
    if (recipe->server != NULL)
        set_label(labels, EINSORA_DOCKER_LABEL_SERVER, recipe->server);
    if (recipe->kind == EINSORA_WORKLOAD_KIND_ENDPOINT) {
        set_label(labels, EINSORA_DOCKER_LABEL_MODEL, recipe->model_name);
        set_label(labels, EINSORA_DOCKER_LABEL_MODEL_DIGEST, recipe->model_digest);
    }
    json_object_set_object_member(object, "Labels", labels);
    g_autofree gchar *variable = g_strdup_printf(
        "%s=%s", einsora_docker_recipe_token_variable(recipe->kind, recipe->server), token);

    json_array_add_string_element(environment, variable);
    explicit_bzero(variable, strlen(variable));
}

const char *
einsora_docker_recipe_token_variable(EinsoraWorkloadKind kind, const char *server)
{
    if (kind != EINSORA_WORKLOAD_KIND_ENDPOINT)
        return "JUPYTER_TOKEN";
    return g_strcmp0(server, "vllm") == 0 ? "VLLM_API_KEY" : "LLAMA_API_KEY";
}

const char *
einsora_docker_recipe_socket_name(EinsoraWorkloadKind kind)
{
    return kind == EINSORA_WORKLOAD_KIND_ENDPOINT ? EINSORA_DOCKER_ENDPOINT_SOCKET_NAME
                                                  : EINSORA_DOCKER_SOCKET_NAME;
}
