#define G_LOG_DOMAIN "einsora-docker"

#include "einsora-docker-driver.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "einsora-activity-probe.h"
#include "einsora-docker-engine.h"
#include "einsora-docker-log.h"
#include "einsora-process-supervisor.h"
#include "einsora-docker-recipe.h"
#include "einsora-gpu-mask.h"
#include "einsora-log-files.h"
#include "einsora-safe-remove.h"
#include "einsora-sandbox-server.h"
#include "einsora-uuid.h"

/* Engine calls are quick (a create or an inspect: milliseconds); a stop
 * waits for the container's grace, and a pull for ever (its own time). */
#define CALL_TIMEOUT_MS 30000
#define READY_BACKOFF_FIRST_MS 5
#define READY_BACKOFF_MAX_MS 250
#define READY_CHECK_TIMEOUT_MS 2000
#define STOP_GRACE_S_DEFAULT 10
/* The Jupyter images' user, for a daemon that runs as root. */
#define CONTAINER_UID_AS_ROOT 1000
#define CONTAINER_GID_AS_ROOT 100
#define PULL_REPORT_US (3 * G_USEC_PER_SEC)
/* As the process supervisor's for native workloads. */
#define LOG_LIMIT_BYTES EINSORA_PROCESS_LOG_LIMIT_DEFAULT
#define VLLM_READY_TIMEOUT_MS (20 * 60 * 1000)

typedef enum {
    ENGINE_NOT_ASKED, /* before the first poll: nothing adopted yet */
    ENGINE_ANSWERS,
    ENGINE_DOWN,
} EngineState;

typedef enum {
    OP_NONE,
    OP_STOP,
    OP_REMOVE,
} DockerOp;

typedef struct {
    EinsoraDockerDriver *driver; /* unowned: the driver owns its workloads */
    gchar *workload_id;
    EinsoraStatusCode code;
    gint64 attempt;
    EinsoraWorkloadKind kind;
    gchar *image;
    gchar *serves_with; /* its image's server, as the catalog says; NULL: the kind's own */
    gint64 cpus;
    gint64 memory_mib;
    gint64 devices;
    guint64 gpu_mask; /* which GPUs; 0: the Engine's runtime picks */
    /* An endpoint's model: its name and its file's digest. */
    gchar *model;
    gchar *model_digest;
    /* Waiting for the Engine (not asked yet, or down) to launch. */
    gboolean deferred;
    /* The launch in flight (pull, create, start); cancelled by a stop. */
    GCancellable *launching;
    /* Set while a server runs: its socket and token, in memory only. */
    /* While a notebook runs: how it is used, for idle auto-stop. */
    EinsoraActivityProbe *activity;
    EinsoraSandboxServer *server;
    GCancellable *ready_cancellable;
    GSource *ready_timer;
    guint ready_backoff_ms;
    gint64 ready_deadline_us;
    /* An exit being looked into (inspect for OOMKilled). */
    gboolean inspecting;
    /* What it was when the Engine stopped answering. */
    EinsoraStatusCode code_before_down;
    /* Its image's pull, while one runs. */
    EinsoraPullProgress pull;
    /* The one stop or remove in flight. */
    DockerOp op;
    GTask *task;
    /* Its container's output being copied to its log, while it runs. */
    struct _LogFollow *follow;
} DockerWorkload;

/* One container's output, followed until the container ends. Its own,
 * so that a workload freed meanwhile (it is detached) is never touched. */
typedef struct _LogFollow {
    DockerWorkload *workload; /* NULL once detached */
    EinsoraDockerLog *log;
    GCancellable *cancellable;
} LogFollow;

struct _EinsoraDockerDriver {
    GObject parent_instance;

    GMainContext *context;
    EinsoraDockerEngine *engine;
    gchar *data_dir;
    gchar *run_dir;
    gchar *models_dir; /* NULL: no endpoints here */
    gchar *machine_id;
    gchar *list_path;
    guint uid;
    guint gid;
    guint poll_interval_ms;
    guint ready_timeout_ms;
    guint stop_grace_s;
    EngineState engine_state;
    GSource *poll_timer;
    GCancellable *cancellable; /* the driver's own calls, until disposed */
    gboolean polling;
    GHashTable *workloads; /* workload ID -> DockerWorkload */
};

static void einsora_docker_driver_iface_init(EinsoraAgentDriverInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraDockerDriver, einsora_docker_driver, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_AGENT_DRIVER,
                                                    einsora_docker_driver_iface_init))

static void
clear_source(GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
}

static void
cancel_and_clear(GCancellable **cancellable)
{
    if (*cancellable != NULL)
        g_cancellable_cancel(*cancellable);
    g_clear_object(cancellable);
}

static void
workload_stop_probing(DockerWorkload *workload)
{
    clear_source(&workload->ready_timer);
    cancel_and_clear(&workload->ready_cancellable);
}

static void
stop_following(DockerWorkload *workload)
{
    if (workload->follow == NULL)
        return;
    g_cancellable_cancel(workload->follow->cancellable);
    workload->follow->workload = NULL;
    workload->follow = NULL;
}

static void
workload_free(DockerWorkload *workload)
{
    g_warn_if_fail(workload->task == NULL);
    workload_stop_probing(workload);
    stop_following(workload);
    cancel_and_clear(&workload->launching);
    g_clear_pointer(&workload->activity, einsora_activity_probe_free);
    g_clear_object(&workload->server);
    g_free(workload->workload_id);
    g_free(workload->image);
    g_free(workload->serves_with);
    g_free(workload->model);
    g_free(workload->model_digest);
    g_free(workload);
}

static void
log_workload(const DockerWorkload *workload, GLogLevelFlags level, const char *message)
{
    g_autofree gchar *attempt = g_strdup_printf("%" G_GINT64_FORMAT, workload->attempt);

    g_log_structured(G_LOG_DOMAIN, level, "WORKLOAD_ID", workload->workload_id, "ATTEMPT", attempt,
                     "MESSAGE", "docker %s %s: %s", einsora_workload_kind_to_string(workload->kind),
                     workload->workload_id, message);
}

static DockerWorkload *
workload_ensure(EinsoraDockerDriver *self, const char *workload_id)
{
    DockerWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload != NULL)
        return workload;
    workload = g_new0(DockerWorkload, 1);
    workload->driver = self;
    workload->workload_id = g_strdup(workload_id);
    workload->code = EINSORA_STATUS_CODE_UNKNOWN;
    workload->attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    g_hash_table_insert(self->workloads, workload->workload_id, workload);
    return workload;
}

static void
announce(DockerWorkload *workload)
{
    g_signal_emit_by_name(workload->driver, "status-changed", workload->workload_id);
}

static void
set_code(DockerWorkload *workload, EinsoraStatusCode code)
{
    if (workload->code == code)
        return;
    workload->code = code;
    announce(workload);
}

static gchar *
workload_data_dir(EinsoraDockerDriver *self, const char *workload_id)
{
    return g_build_filename(self->data_dir, workload_id, NULL);
}

static gchar *
workload_run_dir(EinsoraDockerDriver *self, const char *workload_id)
{
    return g_build_filename(self->run_dir, workload_id, NULL);
}

static gchar *
workload_socket(EinsoraDockerDriver *self, const DockerWorkload *workload)
{
    return g_build_filename(self->run_dir, workload->workload_id,
                            einsora_docker_recipe_socket_name(workload->kind), NULL);
}

/* The model store's file for a digest: blobs/sha256-<hex>. */
static gchar *
model_file(EinsoraDockerDriver *self, const char *digest)
{
    g_autofree gchar *name = NULL;

    if (!einsora_desired_workload_digest_is_valid(digest) || self->models_dir == NULL)
        return NULL;
    name = g_strdup_printf("sha256-%s", digest + strlen("sha256:"));
    return g_build_filename(self->models_dir, "blobs", name, NULL);
}

static gchar *
container_path(const char *workload_id, const char *suffix)
{
    g_autofree gchar *name = einsora_docker_recipe_container_name(workload_id);

    return g_strdup_printf("/containers/%s%s", name, suffix);
}

static JsonNode *
build_recipe(EinsoraDockerDriver *self, const DockerWorkload *workload, EinsoraDockerRecipe *recipe,
             gchar **data_dir, gchar **run_dir, gchar **model_path, gchar **fingerprint,
             GError **error)
{
    gboolean endpoint = workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT;

    /* An endpoint keeps nothing: it has a run directory only. */
    *data_dir = endpoint ? NULL : workload_data_dir(self, workload->workload_id);
    *run_dir = workload_run_dir(self, workload->workload_id);
    *model_path = endpoint ? model_file(self, workload->model_digest) : NULL;
    *recipe = (EinsoraDockerRecipe){
        .kind = workload->kind,
        .image = workload->image,
        .server = workload->serves_with,
        .data_dir = *data_dir,
        .run_dir = *run_dir,
        .model_path = *model_path,
        .model_name = workload->model,
        .model_digest = workload->model_digest,
        .cpus = workload->cpus,
        .memory_mib = workload->memory_mib,
        .devices = workload->devices,
        .gpu_mask = workload->gpu_mask,
        .uid = self->uid,
        .gid = self->gid,
    };
    return einsora_docker_recipe_build(recipe, fingerprint, error);
}

/* Readiness: the server answers on its socket. */

static void schedule_ready_check(DockerWorkload *workload, guint delay_ms);
static void remove_container(EinsoraDockerDriver *self, const char *workload_id);

/* Its server's token dies with it, and goes from its log too. */
static void
drop_server(DockerWorkload *workload)
{
    g_clear_pointer(&workload->activity, einsora_activity_probe_free);
    if (workload->server != NULL)
        einsora_log_files_scrub(workload->driver->run_dir, workload->workload_id,
                                einsora_sandbox_server_get_token(workload->server));
    g_clear_object(&workload->server);
}

static void
fail_unready(DockerWorkload *workload, EinsoraStatusCode code, const char *message)
{
    log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
    workload_stop_probing(workload);
    drop_server(workload);
    /* What is left of it goes; its data is kept. */
    remove_container(workload->driver, workload->workload_id);
    set_code(workload, code);
}

static void
on_ready_checked(GObject *source, GAsyncResult *result, gpointer user_data)
{
    DockerWorkload *workload = user_data;
    g_autoptr(GError) error = NULL;
    gboolean ready =
        einsora_sandbox_server_check_ready_finish(EINSORA_SANDBOX_SERVER(source), result, &error);

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* stopped, or the driver is going away: workload may be freed */
    g_clear_object(&workload->ready_cancellable);
    if (workload->code != EINSORA_STATUS_CODE_STARTING)
        return;
    if (ready) {
        workload_stop_probing(workload);
        log_workload(workload, G_LOG_LEVEL_MESSAGE, "its server answers on its socket: running");
        if (workload->kind == EINSORA_WORKLOAD_KIND_NOTEBOOK && workload->activity == NULL)
            workload->activity = einsora_activity_probe_new(
                workload->server, (EinsoraActivityChanged)announce, workload);
        set_code(workload, EINSORA_STATUS_CODE_RUNNING);
        return;
    }
    if (g_get_monotonic_time() >= workload->ready_deadline_us) {
        g_autofree gchar *message =
            g_strdup_printf("its server never answered on its socket (last: %s); removing its "
                            "container",
                            error->message);
        fail_unready(workload, EINSORA_STATUS_CODE_FAILED_TO_START, message);
        return;
    }
    schedule_ready_check(workload, workload->ready_backoff_ms);
    workload->ready_backoff_ms = MIN(workload->ready_backoff_ms * 2, READY_BACKOFF_MAX_MS);
}

static gboolean
on_ready_timer(gpointer user_data)
{
    DockerWorkload *workload = user_data;

    g_clear_pointer(&workload->ready_timer, g_source_unref);
    if (workload->server == NULL || workload->code != EINSORA_STATUS_CODE_STARTING ||
        workload->ready_cancellable != NULL)
        return G_SOURCE_REMOVE;
    workload->ready_cancellable = g_cancellable_new();
    einsora_sandbox_server_check_ready_async(workload->server, READY_CHECK_TIMEOUT_MS,
                                             workload->ready_cancellable, on_ready_checked,
                                             workload);
    return G_SOURCE_REMOVE;
}

static void
schedule_ready_check(DockerWorkload *workload, guint delay_ms)
{
    clear_source(&workload->ready_timer);
    workload->ready_timer = g_timeout_source_new(delay_ms);
    g_source_set_callback(workload->ready_timer, on_ready_timer, workload, NULL);
    g_source_attach(workload->ready_timer, workload->driver->context);
}

static void
begin_probing(DockerWorkload *workload, const char *token)
{
    EinsoraDockerDriver *self = workload->driver;
    g_autofree gchar *socket_path = workload_socket(self, workload);
    guint timeout_ms;

    workload_stop_probing(workload);
    drop_server(workload);
    workload->server = einsora_sandbox_server_new(workload->kind, socket_path, token);
    workload->code = EINSORA_STATUS_CODE_STARTING;
    /* vLLM loads weights, compiles and captures CUDA graphs before it
     * answers: minutes for a large model, where Jupyter takes seconds. */
    timeout_ms = g_strcmp0(workload->serves_with, "vllm") == 0
                     ? MAX(self->ready_timeout_ms, VLLM_READY_TIMEOUT_MS)
                     : self->ready_timeout_ms;
    workload->ready_deadline_us =
        g_get_monotonic_time() + (gint64)timeout_ms * G_TIME_SPAN_MILLISECOND;
    workload->ready_backoff_ms = READY_BACKOFF_FIRST_MS;
    schedule_ready_check(workload, 0);
}

/* Containers that go in the background: a failed one, one whose recipe
 * changed, one left over. Removing it stops it (the Engine kills it). */

static void
on_background_removed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autofree gchar *workload_id = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);

    if (node == NULL &&
        !g_error_matches(error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_NOT_FOUND) &&
        !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_message("docker workload %s: its container can't be removed: %s", workload_id,
                  error->message);
}

static void
remove_container(EinsoraDockerDriver *self, const char *workload_id)
{
    g_autofree gchar *path = container_path(workload_id, "?force=true&v=true");

    einsora_docker_engine_call_async(self->engine, SOUP_METHOD_DELETE, path, NULL, CALL_TIMEOUT_MS,
                                     self->cancellable, on_background_removed,
                                     g_strdup(workload_id));
}

/* Launching: (old container removed) -> image there or pulled -> created
 * -> started -> probed. Each step's callback finds the workload by ID,
 * since a stop may have come meanwhile. */

typedef struct {
    EinsoraDockerDriver *driver;
    gchar *workload_id;
    gint64 attempt;
    GCancellable *cancellable;
    gchar *token;
} Launch;

static void
launch_free(Launch *launch)
{
    g_object_unref(launch->driver);
    g_free(launch->workload_id);
    g_clear_object(&launch->cancellable);
    if (launch->token != NULL)
        explicit_bzero(launch->token, strlen(launch->token));
    g_free(launch->token);
    g_free(launch);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Launch, launch_free)

/* The workload this launch is for, or NULL when it was stopped,
 * removed or started again meanwhile. */
static DockerWorkload *
launch_workload(Launch *launch, GError *error)
{
    DockerWorkload *workload;

    if (g_cancellable_is_cancelled(launch->cancellable) ||
        g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return NULL;
    workload = g_hash_table_lookup(launch->driver->workloads, launch->workload_id);
    if (workload == NULL || workload->attempt != launch->attempt ||
        workload->launching != launch->cancellable)
        return NULL;
    return workload;
}

static void
launch_failed(DockerWorkload *workload, EinsoraStatusCode code, const char *what,
              const GError *error)
{
    g_autofree gchar *message = g_strdup_printf("%s: %s", what, error->message);

    g_clear_object(&workload->launching);
    log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
    set_code(workload, code);
}

/* An Engine call of a launch failed: the Engine's refusal fails it; no
 * answer at all (the Engine down) makes it wait for the Engine. */
static void
launch_call_failed(DockerWorkload *workload, EinsoraStatusCode code, const char *what,
                   const GError *error)
{
    if (error->domain != EINSORA_DOCKER_ERROR) {
        g_autofree gchar *message =
            g_strdup_printf("%s: %s; it starts when the Engine answers", what, error->message);
        g_clear_object(&workload->launching);
        log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
        workload->deferred = TRUE;
        return;
    }
    launch_failed(workload, code, what, error);
}

static void
on_container_started(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Launch) launch = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    DockerWorkload *workload = launch_workload(launch, error);

    if (workload == NULL)
        return;
    if (node == NULL &&
        !g_error_matches(error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_NOT_MODIFIED)) {
        launch_call_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START,
                           "its container didn't start", error);
        remove_container(launch->driver, launch->workload_id);
        return;
    }
    g_clear_object(&workload->launching);
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "started its container");
    begin_probing(workload, launch->token);
}

static void
on_container_created(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Launch) launch = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    DockerWorkload *workload = launch_workload(launch, error);
    g_autofree gchar *path = NULL;
    GCancellable *cancellable;

    if (workload == NULL)
        return;
    if (node == NULL) {
        launch_call_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START,
                           "its container can't be created", error);
        return;
    }
    path = container_path(launch->workload_id, "/start");
    cancellable = launch->cancellable;
    einsora_docker_engine_call_async(EINSORA_DOCKER_ENGINE(source), SOUP_METHOD_POST, path, NULL,
                                     CALL_TIMEOUT_MS, cancellable, on_container_started,
                                     g_steal_pointer(&launch));
}

static gboolean
make_private_dir(const char *path, guint uid, guint gid, GError **error)
{
    if (g_mkdir_with_parents(path, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't create %s: %s", path,
                    g_strerror(errno));
        return FALSE;
    }
    /* The container's user owns its own directories (only they are
     * bound into it; their parent stays this user's, 0700). */
    if ((geteuid() == 0 && lchown(path, uid, gid) != 0) || g_chmod(path, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't make %s private: %s",
                    path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static void
create_container(Launch *launch, DockerWorkload *workload)
{
    EinsoraDockerDriver *self = launch->driver;
    EinsoraDockerRecipe recipe;
    g_autofree gchar *data_dir = NULL;
    g_autofree gchar *run_dir = NULL;
    g_autofree gchar *model_path = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *socket_path = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *path = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) body = build_recipe(self, workload, &recipe, &data_dir, &run_dir,
                                            &model_path, &fingerprint, &error);

    if (body == NULL) {
        launch_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START, "its recipe can't be run",
                      error);
        launch_free(launch);
        return;
    }
    if (recipe.kind == EINSORA_WORKLOAD_KIND_ENDPOINT &&
        !g_file_test(model_path, G_FILE_TEST_IS_REGULAR)) {
        g_set_error(&error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "model %s (%s) isn't in this machine's model store", workload->model,
                    workload->model_digest);
        launch_failed(workload, EINSORA_STATUS_CODE_IMAGE_MISSING, "its model", error);
        launch_free(launch);
        return;
    }
    socket_path = workload_socket(self, workload);
    if ((data_dir != NULL && !make_private_dir(data_dir, self->uid, self->gid, &error)) ||
        !make_private_dir(run_dir, self->uid, self->gid, &error)) {
        launch_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START, "its directories", error);
        launch_free(launch);
        return;
    }
    /* Each attempt's output in its own files, the last few kept. */
    if (!einsora_log_files_begin_attempt(self->run_dir, workload->workload_id, workload->attempt,
                                         &error)) {
        launch_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START, "its log", error);
        launch_free(launch);
        return;
    }
    /* A socket left by an earlier run would answer for nobody. */
    g_unlink(socket_path);
    einsora_docker_recipe_finish(body, &recipe, self->machine_id, workload->workload_id,
                                 workload->attempt, fingerprint, launch->token);
    name = einsora_docker_recipe_container_name(workload->workload_id);
    path = g_strdup_printf("/containers/create?name=%s", name);
    einsora_docker_engine_call_async(self->engine, SOUP_METHOD_POST, path, body, CALL_TIMEOUT_MS,
                                     launch->cancellable, on_container_created, launch);
}

typedef struct {
    EinsoraDockerDriver *driver;
    gchar *workload_id;
    gint64 last_report_us;
} PullWatch;

static void
on_pull_progress(const EinsoraDockerPullProgress *progress, gpointer user_data)
{
    PullWatch *watch = user_data;
    gint64 now = g_get_monotonic_time();
    DockerWorkload *workload = g_hash_table_lookup(watch->driver->workloads, watch->workload_id);
    g_autofree gchar *message = NULL;

    if (workload == NULL)
        return;
    workload->pull = (EinsoraPullProgress){
        .layers_done = progress->layers_done,
        .layers = MIN(progress->layers, EINSORA_PULL_MAX_LAYERS),
        .bytes_done = (gint64)MIN(progress->bytes_done, progress->bytes_total),
        .bytes_total = (gint64)MIN(progress->bytes_total, G_GUINT64_CONSTANT(1) << 50),
    };
    workload->pull.layers_done = MIN(workload->pull.layers_done, workload->pull.layers);
    workload->pull.bytes_done = MIN(workload->pull.bytes_done, workload->pull.bytes_total);
    /* Said every few seconds, not on every line the Engine writes. */
    if (watch->last_report_us != 0 && now - watch->last_report_us < PULL_REPORT_US)
        return;
    watch->last_report_us = now;
    message = g_strdup_printf("pulling its image: %u of %u layers, %" G_GUINT64_FORMAT
                              " of %" G_GUINT64_FORMAT " MB",
                              progress->layers_done, progress->layers,
                              progress->bytes_done / 1000000, progress->bytes_total / 1000000);
    log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
    announce(workload);
}

typedef struct {
    Launch *launch;
    PullWatch watch;
} Pull;

static void
on_image_pulled(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autofree Pull *pull = user_data;
    g_autoptr(Launch) launch = pull->launch;
    g_autoptr(GError) error = NULL;
    gboolean pulled =
        einsora_docker_engine_pull_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    DockerWorkload *workload = launch_workload(launch, error);

    g_free(pull->watch.workload_id);
    if (workload == NULL)
        return;
    workload->pull = (EinsoraPullProgress){0};
    if (!pulled) {
        launch_call_failed(workload, EINSORA_STATUS_CODE_PULL_FAILED,
                           "its image couldn't be pulled", error);
        return;
    }
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "pulled its image");
    create_container(g_steal_pointer(&launch), workload);
}

static void
on_image_inspected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Launch) launch = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    DockerWorkload *workload = launch_workload(launch, error);
    Pull *pull;

    if (workload == NULL)
        return;
    if (node != NULL) {
        create_container(g_steal_pointer(&launch), workload);
        return;
    }
    if (!g_error_matches(error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_NOT_FOUND)) {
        launch_call_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START,
                           "its image can't be looked up", error);
        return;
    }
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "its image isn't here: pulling it");
    pull = g_new0(Pull, 1);
    pull->watch.driver = launch->driver;
    pull->watch.workload_id = g_strdup(launch->workload_id);
    pull->watch.last_report_us = 0;
    pull->launch = g_steal_pointer(&launch);
    einsora_docker_engine_pull_async(EINSORA_DOCKER_ENGINE(source), workload->image,
                                     on_pull_progress, &pull->watch, pull->launch->cancellable,
                                     on_image_pulled, pull);
}

static void
on_old_container_removed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(Launch) launch = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    DockerWorkload *workload = launch_workload(launch, error);
    g_autofree gchar *escaped = NULL;
    g_autofree gchar *path = NULL;
    GCancellable *cancellable;

    if (workload == NULL)
        return;
    if (node == NULL &&
        !g_error_matches(error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_NOT_FOUND)) {
        launch_call_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START,
                           "its earlier container can't be removed", error);
        return;
    }
    /* The Engine routes the whole reference, slashes and all. */
    escaped = g_uri_escape_string(workload->image, "/:@", FALSE);
    path = g_strdup_printf("/images/%s/json", escaped);
    cancellable = launch->cancellable;
    einsora_docker_engine_call_async(EINSORA_DOCKER_ENGINE(source), SOUP_METHOD_GET, path, NULL,
                                     CALL_TIMEOUT_MS, cancellable, on_image_inspected,
                                     g_steal_pointer(&launch));
}

static void
begin_launch(DockerWorkload *workload)
{
    EinsoraDockerDriver *self = workload->driver;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path = container_path(workload->workload_id, "?force=true&v=true");
    Launch *launch;
    gchar *token = einsora_sandbox_server_new_token(&error);

    workload->deferred = FALSE;
    if (token == NULL) {
        launch_failed(workload, EINSORA_STATUS_CODE_FAILED_TO_START, "no token", error);
        return;
    }
    cancel_and_clear(&workload->launching);
    workload->launching = g_cancellable_new();
    launch = g_new0(Launch, 1);
    launch->driver = g_object_ref(self);
    launch->workload_id = g_strdup(workload->workload_id);
    launch->attempt = workload->attempt;
    launch->cancellable = g_object_ref(workload->launching);
    launch->token = token;
    /* An earlier attempt's container (exited, or failed) goes first. */
    einsora_docker_engine_call_async(self->engine, SOUP_METHOD_DELETE, path, NULL, CALL_TIMEOUT_MS,
                                     launch->cancellable, on_old_container_removed, launch);
}

static void
docker_start_async(EinsoraAgentDriver *driver, const EinsoraDesiredWorkload *desired,
                   GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    DockerWorkload *workload;

    g_task_set_source_tag(task, docker_start_async);
    if (!einsora_uuid_is_valid(desired->workload_id) ||
        (desired->kind != EINSORA_WORKLOAD_KIND_NOTEBOOK &&
         desired->kind != EINSORA_WORKLOAD_KIND_ENDPOINT)) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                                "the docker driver runs notebooks and endpoints only");
        return;
    }
    if (desired->runtime_reference == NULL || *desired->runtime_reference == '\0') {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                "a docker notebook needs its image's reference");
        return;
    }
    workload = workload_ensure(self, desired->workload_id);
    if (workload->attempt == desired->attempt && workload->code != EINSORA_STATUS_CODE_UNKNOWN) {
        g_task_return_boolean(task, TRUE); /* an attempt starts at most once */
        return;
    }
    if (einsora_status_code_is_active(workload->code) || workload->task != NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_BUSY,
                                "attempt %" G_GINT64_FORMAT " still runs; stop it first",
                                workload->attempt);
        return;
    }
    workload->attempt = desired->attempt;
    workload->kind = desired->kind;
    g_free(workload->image);
    workload->image = g_strdup(desired->runtime_reference);
    g_free(workload->serves_with);
    workload->serves_with = g_strdup(desired->server);
    workload->cpus = desired->cpus;
    workload->memory_mib = desired->memory_mib;
    workload->devices = desired->devices;
    workload->gpu_mask = desired->gpu_mask;
    g_free(workload->model);
    workload->model = g_strdup(desired->model);
    g_free(workload->model_digest);
    workload->model_digest = g_strdup(desired->model_digest);
    workload->code = EINSORA_STATUS_CODE_STARTING;
    /* The long part (a pull can take minutes) is reported through the
     * status, not by this call. */
    if (self->engine_state == ENGINE_ANSWERS) {
        begin_launch(workload);
    } else {
        workload->deferred = TRUE;
        log_workload(workload, G_LOG_LEVEL_MESSAGE,
                     "waiting for the Docker Engine to answer before starting");
    }
    g_task_return_boolean(task, TRUE);
}

static gboolean
docker_start_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

/* Stopping and removing: the container goes (stop, then remove), the
 * data stays; a removal then deletes the data and run files. */

static void
finish_op(DockerWorkload *workload, GError *error)
{
    g_autoptr(GTask) task = g_steal_pointer(&workload->task);

    workload->op = OP_NONE;
    if (error != NULL)
        g_task_return_error(task, error);
    else
        g_task_return_boolean(task, TRUE);
}

static void
on_data_removed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    DockerWorkload *workload = user_data;
    g_autoptr(GError) error = NULL;

    if (!einsora_safe_remove_trees_finish(result, &error)) {
        log_workload(workload, G_LOG_LEVEL_MESSAGE, error->message);
        workload->code = EINSORA_STATUS_CODE_STOPPED; /* data (partly) kept: try again */
        finish_op(workload, g_steal_pointer(&error));
        return;
    }
    workload->code = EINSORA_STATUS_CODE_REMOVED;
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "its container, data and run files are deleted");
    finish_op(workload, NULL);
}

static void
remove_data(DockerWorkload *workload)
{
    EinsoraDockerDriver *self = workload->driver;
    g_autofree gchar *data_dir = workload_data_dir(self, workload->workload_id);
    g_autofree gchar *run_dir = workload_run_dir(self, workload->workload_id);
    const char *const paths[] = {data_dir, run_dir, NULL};

    stop_following(workload);
    einsora_docker_log_remove(self->run_dir, workload->workload_id);
    einsora_safe_remove_trees_async(G_OBJECT(self), paths, on_data_removed, workload);
}

static void
on_container_deleted(GObject *source, GAsyncResult *result, gpointer user_data)
{
    DockerWorkload *workload = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    g_autofree gchar *socket_path = workload_socket(workload->driver, workload);

    if (node == NULL &&
        !g_error_matches(error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_NOT_FOUND)) {
        /* The Engine down, or refusing: tried again when asked again. */
        log_workload(workload, G_LOG_LEVEL_MESSAGE, error->message);
        finish_op(workload, g_steal_pointer(&error));
        return;
    }
    g_unlink(socket_path);
    if (workload->op == OP_REMOVE) {
        remove_data(workload);
        return;
    }
    if (workload->code == EINSORA_STATUS_CODE_STOPPING)
        workload->code = EINSORA_STATUS_CODE_STOPPED;
    log_workload(workload, G_LOG_LEVEL_MESSAGE,
                 "stopped (its container is removed); its data is "
                 "kept");
    finish_op(workload, NULL);
}

static void
on_container_stopped(GObject *source, GAsyncResult *result, gpointer user_data)
{
    DockerWorkload *workload = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    g_autofree gchar *path = container_path(workload->workload_id, "?force=true&v=true");

    /* Stopped, already stopped (304) or gone (404): remove what's left. */
    if (node == NULL && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        finish_op(workload, g_steal_pointer(&error));
        return;
    }
    einsora_docker_engine_call_async(workload->driver->engine, SOUP_METHOD_DELETE, path, NULL,
                                     CALL_TIMEOUT_MS, g_task_get_cancellable(workload->task),
                                     on_container_deleted, workload);
}

static void
begin_op(EinsoraDockerDriver *self, DockerOp op, const char *workload_id, GCancellable *cancellable,
         GAsyncReadyCallback callback, gpointer user_data, gpointer source_tag)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autofree gchar *path = NULL;
    DockerWorkload *workload;

    g_task_set_source_tag(task, source_tag);
    if (!einsora_uuid_is_valid(workload_id)) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                "\"%s\" is not a workload ID", workload_id);
        return;
    }
    workload = workload_ensure(self, workload_id);
    if (workload->task != NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_PENDING,
                                "another stop or removal is in progress");
        return;
    }
    workload_stop_probing(workload);
    cancel_and_clear(&workload->launching);
    workload->deferred = FALSE;
    drop_server(workload);
    workload->op = op;
    workload->task = g_steal_pointer(&task);
    if (op == OP_REMOVE)
        workload->code = EINSORA_STATUS_CODE_REMOVING;
    else if (einsora_status_code_is_active(workload->code))
        workload->code = EINSORA_STATUS_CODE_STOPPING;
    else if (workload->code == EINSORA_STATUS_CODE_UNKNOWN)
        workload->code = EINSORA_STATUS_CODE_STOPPED;
    /* A failed or exited one keeps its code: that is what happened to it. */
    path = container_path(workload_id, "/stop");
    {
        g_autofree gchar *with_grace = g_strdup_printf("%s?t=%u", path, self->stop_grace_s);
        einsora_docker_engine_call_async(self->engine, SOUP_METHOD_POST, with_grace, NULL,
                                         CALL_TIMEOUT_MS + self->stop_grace_s * 1000,
                                         g_task_get_cancellable(workload->task),
                                         on_container_stopped, workload);
    }
}

static void
docker_stop_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
                  GAsyncReadyCallback callback, gpointer user_data)
{
    begin_op(EINSORA_DOCKER_DRIVER(driver), OP_STOP, workload_id, cancellable, callback, user_data,
             docker_stop_async);
}

static gboolean
docker_stop_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

static void
docker_remove_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
                    GAsyncReadyCallback callback, gpointer user_data)
{
    begin_op(EINSORA_DOCKER_DRIVER(driver), OP_REMOVE, workload_id, cancellable, callback,
             user_data, docker_remove_async);
}

static gboolean
docker_remove_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

/* Watching the Engine: a list of this machine's containers each poll. */

static const char *
label_of(JsonObject *container, const char *key)
{
    JsonObject *labels = json_object_get_object_member(container, "Labels");

    if (labels == NULL || !json_object_has_member(labels, key) ||
        !JSON_NODE_HOLDS_VALUE(json_object_get_member(labels, key)))
        return NULL;
    return json_object_get_string_member_with_default(labels, key, NULL);
}

static gint64
label_number(JsonObject *container, const char *key)
{
    const char *text = label_of(container, key);
    gint64 value = -1;

    if (text == NULL || !g_ascii_string_to_signed(text, 10, 0, G_MAXINT64, &value, NULL))
        return -1;
    return value;
}

typedef struct {
    EinsoraDockerDriver *driver;
    gchar *workload_id;
    gint64 attempt;
    gboolean adopting; /* reading the token back, not an exit */
} Inspect;

static void
inspect_free(Inspect *inspect)
{
    g_object_unref(inspect->driver);
    g_free(inspect->workload_id);
    g_free(inspect);
}

/* The token a previous daemon gave the container, from its environment:
 * that is where it lives, so it is never written down. */
static gchar *
token_from_config(JsonObject *config, EinsoraWorkloadKind kind, const char *server)
{
    JsonArray *environment = config != NULL ? json_object_get_array_member(config, "Env") : NULL;
    g_autofree gchar *prefix =
        g_strdup_printf("%s=", einsora_docker_recipe_token_variable(kind, server));

    for (guint i = 0; environment != NULL && i < json_array_get_length(environment); i++) {
        const char *entry = json_array_get_string_element(environment, i);
        if (entry != NULL && g_str_has_prefix(entry, prefix))
            return g_strdup(entry + strlen(prefix));
    }
    return NULL;
}

static void
on_inspected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Inspect *inspect = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    DockerWorkload *workload =
        g_hash_table_lookup(inspect->driver->workloads, inspect->workload_id);
    JsonObject *object =
        node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    JsonObject *state = object != NULL ? json_object_get_object_member(object, "State") : NULL;

    if (workload == NULL || workload->attempt != inspect->attempt ||
        g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        inspect_free(inspect);
        return;
    }
    workload->inspecting = FALSE;
    if (inspect->adopting) {
        g_autofree gchar *token =
            object != NULL ? token_from_config(json_object_get_object_member(object, "Config"),
                                               workload->kind, workload->serves_with)
                           : NULL;
        if (workload->code != EINSORA_STATUS_CODE_STARTING) {
            /* stopped meanwhile */
        } else if (token == NULL) {
            fail_unready(workload, EINSORA_STATUS_CODE_FAILED_TO_START,
                         "its container runs but its token can't be read back; removing it");
        } else {
            log_workload(workload, G_LOG_LEVEL_MESSAGE, "adopted its running container");
            begin_probing(workload, token);
            explicit_bzero(token, strlen(token));
        }
        inspect_free(inspect);
        return;
    }
    if (workload->code == EINSORA_STATUS_CODE_STARTING ||
        workload->code == EINSORA_STATUS_CODE_RUNNING) {
        gboolean oom =
            state != NULL && json_object_get_boolean_member_with_default(state, "OOMKilled", FALSE);
        gint64 exit_code =
            state != NULL ? json_object_get_int_member_with_default(state, "ExitCode", -1) : -1;
        g_autofree gchar *message =
            g_strdup_printf("its container exited (code %" G_GINT64_FORMAT ")%s", exit_code,
                            oom ? ": the Engine says it was killed for memory" : "");

        workload_stop_probing(workload);
        drop_server(workload);
        log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
        set_code(workload, oom ? EINSORA_STATUS_CODE_OUT_OF_MEMORY
                           : workload->code == EINSORA_STATUS_CODE_STARTING
                               ? EINSORA_STATUS_CODE_FAILED_TO_START
                               : EINSORA_STATUS_CODE_EXITED);
    }
    inspect_free(inspect);
}

static void
inspect_container(EinsoraDockerDriver *self, DockerWorkload *workload, gboolean adopting)
{
    Inspect *inspect = g_new0(Inspect, 1);
    g_autofree gchar *path = container_path(workload->workload_id, "/json");

    workload->inspecting = TRUE;
    inspect->driver = g_object_ref(self);
    inspect->workload_id = g_strdup(workload->workload_id);
    inspect->attempt = workload->attempt;
    inspect->adopting = adopting;
    einsora_docker_engine_call_async(self->engine, SOUP_METHOD_GET, path, NULL, CALL_TIMEOUT_MS,
                                     self->cancellable, on_inspected, inspect);
}

/* A container a previous daemon started: adopted when its recipe is the
 * same, removed with sandbox-changed when it isn't. */
static void
adopt(EinsoraDockerDriver *self, JsonObject *container, const char *workload_id, gboolean running)
{
    DockerWorkload *workload = workload_ensure(self, workload_id);
    const char *recorded = label_of(container, EINSORA_DOCKER_LABEL_FINGERPRINT);
    const char *kind = label_of(container, EINSORA_DOCKER_LABEL_KIND);
    EinsoraDockerRecipe recipe;
    g_autofree gchar *data_dir = NULL;
    g_autofree gchar *run_dir = NULL;
    g_autofree gchar *model_path = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autoptr(JsonNode) body = NULL;

    workload->attempt = label_number(container, EINSORA_DOCKER_LABEL_ATTEMPT);
    if (kind == NULL || !einsora_workload_kind_from_string(kind, &workload->kind))
        workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    g_free(workload->image);
    workload->image = g_strdup(label_of(container, EINSORA_DOCKER_LABEL_IMAGE));
    g_free(workload->serves_with);
    workload->serves_with = g_strdup(label_of(container, EINSORA_DOCKER_LABEL_SERVER));
    workload->cpus = label_number(container, EINSORA_DOCKER_LABEL_CPUS);
    workload->memory_mib = label_number(container, EINSORA_DOCKER_LABEL_MEMORY);
    workload->devices = MAX(label_number(container, EINSORA_DOCKER_LABEL_DEVICES), 0);
    /* A label that doesn't read is a changed recipe: the fingerprint says so. */
    if (label_of(container, EINSORA_DOCKER_LABEL_GPUS) == NULL ||
        !einsora_gpu_mask_from_string(label_of(container, EINSORA_DOCKER_LABEL_GPUS),
                                      &workload->gpu_mask))
        workload->gpu_mask = 0;
    g_free(workload->model);
    workload->model = g_strdup(label_of(container, EINSORA_DOCKER_LABEL_MODEL));
    g_free(workload->model_digest);
    workload->model_digest = g_strdup(label_of(container, EINSORA_DOCKER_LABEL_MODEL_DIGEST));
    if (!running) {
        log_workload(workload, G_LOG_LEVEL_MESSAGE,
                     "its container stopped by itself while the daemon was away");
        workload->code = EINSORA_STATUS_CODE_EXITED;
        return;
    }
    /* A recipe that can't be built now has changed too. */
    body =
        build_recipe(self, workload, &recipe, &data_dir, &run_dir, &model_path, &fingerprint, NULL);
    if (body == NULL || g_strcmp0(fingerprint, recorded) != 0) {
        log_workload(workload, G_LOG_LEVEL_MESSAGE,
                     "its container's recipe changed since it started; removing that container");
        workload->code = EINSORA_STATUS_CODE_SANDBOX_CHANGED;
        remove_container(self, workload_id);
        return;
    }
    workload->code = EINSORA_STATUS_CODE_STARTING;
    inspect_container(self, workload, TRUE);
}

/* Logs: a running container's output goes to <run>/<id>.log, where the
 * supervisor keeps a native workload's. */

static void
on_log_chunk(const guint8 *data, gsize length, gpointer user_data)
{
    LogFollow *follow = user_data;

    einsora_docker_log_write(follow->log, data, length);
}

static void
on_log_followed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    LogFollow *follow = user_data;
    g_autoptr(GError) error = NULL;

    /* Ended with its container, or the Engine went away: the next
     * listing that finds it running follows it again. */
    if (!einsora_docker_engine_follow_logs_finish(EINSORA_DOCKER_ENGINE(source), result, &error) &&
        follow->workload != NULL &&
        !g_error_matches(error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_NOT_FOUND))
        log_workload(follow->workload, G_LOG_LEVEL_DEBUG, error->message);
    if (follow->workload != NULL)
        follow->workload->follow = NULL;
    einsora_docker_log_close(follow->log);
    g_object_unref(follow->cancellable);
    g_free(follow);
}

static void
follow_logs(EinsoraDockerDriver *self, DockerWorkload *workload)
{
    g_autofree gchar *name = einsora_docker_recipe_container_name(workload->workload_id);
    g_autoptr(GError) error = NULL;
    EinsoraDockerLog *log;
    LogFollow *follow;
    gint64 since;

    if (workload->follow != NULL)
        return;
    /* From when the file was last written: a follower that starts again
     * (after a restart, or the Engine coming back) repeats at most that
     * second's lines, and loses none. */
    since = einsora_docker_log_last_written(self->run_dir, workload->workload_id);
    log = einsora_docker_log_open(self->run_dir, workload->workload_id, LOG_LIMIT_BYTES, &error);
    if (log == NULL) {
        log_workload(workload, G_LOG_LEVEL_WARNING, error->message);
        return;
    }
    follow = g_new0(LogFollow, 1);
    follow->workload = workload;
    follow->log = log;
    follow->cancellable = g_cancellable_new();
    workload->follow = follow;
    einsora_docker_engine_follow_logs_async(self->engine, name, since, on_log_chunk, follow,
                                            follow->cancellable, on_log_followed, follow);
}

/* The Engine's view against ours: exits, containers gone, and
 * containers no workload here wants. */
static void
reconcile(EinsoraDockerDriver *self, JsonArray *containers, gboolean first)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTableIter iter;
    gpointer value;

    for (guint i = 0; i < json_array_get_length(containers); i++) {
        JsonObject *container = json_array_get_object_element(containers, i);
        const char *id =
            container != NULL ? label_of(container, EINSORA_DOCKER_LABEL_WORKLOAD) : NULL;
        const char *state = container != NULL
                                ? json_object_get_string_member_with_default(container, "State", "")
                                : "";
        gboolean running = g_str_equal(state, "running");
        gint64 attempt =
            container != NULL ? label_number(container, EINSORA_DOCKER_LABEL_ATTEMPT) : -1;
        DockerWorkload *workload;

        if (id == NULL || !einsora_uuid_is_valid(id) || attempt < 0)
            continue;
        g_hash_table_add(seen, (gpointer)id);
        workload = g_hash_table_lookup(self->workloads, id);
        if (first && (workload == NULL || workload->code == EINSORA_STATUS_CODE_UNKNOWN)) {
            adopt(self, container, id, running);
            continue;
        }
        /* A start asked for before the Engine first answered is that very
         * container's when it runs the same recipe; otherwise it launches
         * anew (removing this one first). */
        if (first && workload->deferred && workload->attempt == attempt && running) {
            workload->deferred = FALSE;
            adopt(self, container, id, running);
            if (workload->code != EINSORA_STATUS_CODE_STARTING) {
                workload->code = EINSORA_STATUS_CODE_STARTING;
                workload->deferred = TRUE;
            }
            continue;
        }
        if (workload == NULL || workload->task != NULL || workload->launching != NULL ||
            workload->deferred)
            continue;
        if (workload->attempt != attempt || !einsora_status_code_is_active(workload->code)) {
            /* Not the container of anything that runs here now. */
            if (running)
                remove_container(self, id);
            continue;
        }
        if (running)
            follow_logs(self, workload);
        if (!running && !workload->inspecting &&
            (workload->code == EINSORA_STATUS_CODE_RUNNING ||
             (workload->code == EINSORA_STATUS_CODE_STARTING && workload->server != NULL)))
            inspect_container(self, workload, FALSE);
    }
    g_hash_table_iter_init(&iter, self->workloads);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        DockerWorkload *workload = value;

        if (workload->code == EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE) {
            /* As it was; an exit meanwhile is seen by the next poll. */
            log_workload(workload, G_LOG_LEVEL_MESSAGE, "the Docker Engine answers again");
            if (!g_hash_table_contains(seen, workload->workload_id)) {
                drop_server(workload);
                set_code(workload, EINSORA_STATUS_CODE_EXITED);
            } else {
                set_code(workload, workload->code_before_down);
                if (workload->code == EINSORA_STATUS_CODE_STARTING)
                    schedule_ready_check(workload, 0);
            }
        }
        if (workload->deferred && workload->task == NULL) {
            begin_launch(workload);
            continue;
        }
        if (!g_hash_table_contains(seen, workload->workload_id) && workload->task == NULL &&
            workload->launching == NULL &&
            (workload->code == EINSORA_STATUS_CODE_RUNNING ||
             (workload->code == EINSORA_STATUS_CODE_STARTING && workload->server != NULL))) {
            log_workload(workload, G_LOG_LEVEL_MESSAGE,
                         "its container is gone (removed outside Einsora)");
            workload_stop_probing(workload);
            drop_server(workload);
            set_code(workload, EINSORA_STATUS_CODE_EXITED);
        }
    }
}

static void schedule_poll(EinsoraDockerDriver *self, guint delay_ms);

static void
engine_down(EinsoraDockerDriver *self, const GError *error)
{
    GHashTableIter iter;
    gpointer value;

    if (self->engine_state != ENGINE_DOWN)
        g_message("the Docker Engine on %s doesn't answer (%s): what runs there is unknown, and "
                  "nothing is decided, until it does",
                  einsora_docker_engine_get_socket_path(self->engine), error->message);
    self->engine_state = ENGINE_DOWN;
    g_hash_table_iter_init(&iter, self->workloads);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        DockerWorkload *workload = value;
        /* A start waits (deferred); what runs may still be running. */
        if (workload->code == EINSORA_STATUS_CODE_RUNNING ||
            (workload->code == EINSORA_STATUS_CODE_STARTING && workload->server != NULL)) {
            workload_stop_probing(workload);
            workload->code_before_down = workload->code;
            set_code(workload, EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE);
        }
    }
}

static void
on_listed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraDockerDriver *self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node =
        einsora_docker_engine_call_finish(EINSORA_DOCKER_ENGINE(source), result, &error);
    gboolean first;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_object_unref(self);
        return;
    }
    self->polling = FALSE;
    if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node)) {
        if (error == NULL)
            g_set_error_literal(&error, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_FAILED,
                                "its container list isn't a list");
        engine_down(self, error);
    } else {
        first = self->engine_state == ENGINE_NOT_ASKED;
        if (self->engine_state == ENGINE_DOWN)
            g_message("the Docker Engine on %s answers again",
                      einsora_docker_engine_get_socket_path(self->engine));
        self->engine_state = ENGINE_ANSWERS;
        reconcile(self, json_node_get_array(node), first);
    }
    schedule_poll(self, self->poll_interval_ms);
    g_object_unref(self);
}

static gboolean
on_poll_timer(gpointer user_data)
{
    EinsoraDockerDriver *self = user_data;

    g_clear_pointer(&self->poll_timer, g_source_unref);
    if (self->polling)
        return G_SOURCE_REMOVE;
    self->polling = TRUE;
    einsora_docker_engine_call_async(self->engine, SOUP_METHOD_GET, self->list_path, NULL,
                                     MIN(CALL_TIMEOUT_MS, MAX(self->poll_interval_ms * 5, 2000)),
                                     self->cancellable, on_listed, g_object_ref(self));
    return G_SOURCE_REMOVE;
}

static void
schedule_poll(EinsoraDockerDriver *self, guint delay_ms)
{
    clear_source(&self->poll_timer);
    self->poll_timer = g_timeout_source_new(delay_ms);
    g_source_set_callback(self->poll_timer, on_poll_timer, self, NULL);
    g_source_attach(self->poll_timer, self->context);
}

/* What it sees */

static EinsoraStatusCode
docker_get_status(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);
    DockerWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);
    g_autofree gchar *data_dir = NULL;

    if (attempt != NULL)
        *attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    if (workload != NULL && workload->code != EINSORA_STATUS_CODE_UNKNOWN) {
        if (attempt != NULL)
            *attempt = workload->attempt;
        return workload->code;
    }
    /* Before the Engine first answered nothing is known: a container from
     * before may still run. */
    if (self->engine_state == ENGINE_NOT_ASKED || !einsora_uuid_is_valid(workload_id))
        return EINSORA_STATUS_CODE_UNKNOWN;
    /* Data from a run before this daemon started: stopped, data kept. */
    data_dir = workload_data_dir(self, workload_id);
    if (g_file_test(data_dir, G_FILE_TEST_IS_DIR))
        return EINSORA_STATUS_CODE_STOPPED;
    return EINSORA_STATUS_CODE_UNKNOWN;
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

static gchar **
docker_list_workloads(EinsoraAgentDriver *driver)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);
    g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GDir) dir = g_dir_open(self->data_dir, 0, NULL);
    g_autoptr(GPtrArray) sorted = g_ptr_array_new();
    GHashTableIter iter;
    gpointer key, value;
    const char *name;

    g_hash_table_iter_init(&iter, self->workloads);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        const DockerWorkload *workload = value;
        if (workload->code != EINSORA_STATUS_CODE_UNKNOWN &&
            workload->code != EINSORA_STATUS_CODE_REMOVED)
            g_hash_table_add(ids, key);
    }
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        DockerWorkload *workload = g_hash_table_lookup(self->workloads, name);
        if (einsora_uuid_is_valid(name) &&
            (workload == NULL || workload->code != EINSORA_STATUS_CODE_REMOVED))
            g_hash_table_add(ids, (gpointer)name);
    }
    g_hash_table_iter_init(&iter, ids);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        g_ptr_array_add(sorted, g_strdup(key));
    g_ptr_array_sort(sorted, compare_strings);
    g_ptr_array_add(sorted, NULL);
    return (gchar **)g_ptr_array_steal(sorted, NULL);
}

static gboolean
docker_get_access(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt,
                  gchar **socket_path, gchar **token)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);
    DockerWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload == NULL || workload->code != EINSORA_STATUS_CODE_RUNNING ||
        workload->server == NULL)
        return FALSE;
    if (attempt != NULL)
        *attempt = workload->attempt;
    *socket_path = g_strdup(einsora_sandbox_server_get_socket_path(workload->server));
    *token = g_strdup(einsora_sandbox_server_get_token(workload->server));
    return TRUE;
}

static gboolean
docker_get_pull_progress(EinsoraAgentDriver *driver, const char *workload_id,
                         EinsoraPullProgress *progress)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);
    DockerWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload == NULL || workload->code != EINSORA_STATUS_CODE_STARTING ||
        workload->pull.layers == 0)
        return FALSE;
    *progress = workload->pull;
    return TRUE;
}

static gboolean
docker_get_activity(EinsoraAgentDriver *driver, const char *workload_id,
                    EinsoraWorkloadActivity *activity)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);
    DockerWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload == NULL || workload->activity == NULL ||
        workload->code != EINSORA_STATUS_CODE_RUNNING)
        return FALSE;
    *activity = einsora_activity_probe_get(workload->activity);
    return TRUE;
}

static gchar *
docker_find_log(EinsoraAgentDriver *driver, const char *workload_id, gint64 attempt,
                gint64 *found_attempt, GError **error)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(driver);

    /* A name in its run directory: never a path of the caller's. */
    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return einsora_log_files_find(self->run_dir, workload_id, attempt, found_attempt, error);
}

static const char *
docker_get_name(EinsoraAgentDriver *driver)
{
    return EINSORA_DOCKER_DRIVER_NAME;
}

static void
einsora_docker_driver_iface_init(EinsoraAgentDriverInterface *iface)
{
    iface->get_name = docker_get_name;
    iface->start_async = docker_start_async;
    iface->start_finish = docker_start_finish;
    iface->stop_async = docker_stop_async;
    iface->stop_finish = docker_stop_finish;
    iface->remove_async = docker_remove_async;
    iface->remove_finish = docker_remove_finish;
    iface->get_status = docker_get_status;
    iface->list_workloads = docker_list_workloads;
    iface->get_access = docker_get_access;
    iface->get_pull_progress = docker_get_pull_progress;
    iface->find_log = docker_find_log;
    iface->get_activity = docker_get_activity;
}

/* Construction */

static void
einsora_docker_driver_dispose(GObject *object)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(object);

    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    clear_source(&self->poll_timer);
    G_OBJECT_CLASS(einsora_docker_driver_parent_class)->dispose(object);
}

static void
einsora_docker_driver_finalize(GObject *object)
{
    EinsoraDockerDriver *self = EINSORA_DOCKER_DRIVER(object);

    g_clear_pointer(&self->workloads, g_hash_table_unref);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->engine);
    g_free(self->data_dir);
    g_free(self->run_dir);
    g_free(self->models_dir);
    g_free(self->machine_id);
    g_free(self->list_path);
    g_clear_pointer(&self->context, g_main_context_unref);
    G_OBJECT_CLASS(einsora_docker_driver_parent_class)->finalize(object);
}

static void
einsora_docker_driver_class_init(EinsoraDockerDriverClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->dispose = einsora_docker_driver_dispose;
    object_class->finalize = einsora_docker_driver_finalize;
}

static void
einsora_docker_driver_init(EinsoraDockerDriver *self)
{
    self->context = g_main_context_ref_thread_default();
    self->poll_interval_ms = EINSORA_DOCKER_POLL_INTERVAL_MS_DEFAULT;
    self->ready_timeout_ms = EINSORA_DOCKER_READY_TIMEOUT_MS_DEFAULT;
    self->stop_grace_s = STOP_GRACE_S_DEFAULT;
    self->cancellable = g_cancellable_new();
    self->workloads =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)workload_free);
}

static gboolean
make_own_dir(const char *path, GError **error)
{
    if (g_mkdir_with_parents(path, 0700) != 0 || g_chmod(path, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't create %s: %s", path,
                    g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

EinsoraDockerDriver *
einsora_docker_driver_new(const EinsoraDockerDriverConfig *config, GError **error)
{
    g_autoptr(EinsoraDockerDriver) self = g_object_new(EINSORA_TYPE_DOCKER_DRIVER, NULL);
    g_autofree gchar *longest = NULL;
    g_autofree gchar *filter = NULL;
    g_autofree gchar *escaped = NULL;
    struct sockaddr_un address;

    if (config->data_dir == NULL || !g_path_is_absolute(config->data_dir) ||
        config->run_dir == NULL || !g_path_is_absolute(config->run_dir) ||
        config->machine_id == NULL || !einsora_uuid_is_valid(config->machine_id)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "the docker driver needs absolute data and run directories and this "
                            "machine's ID");
        return NULL;
    }
    longest = g_build_filename(config->run_dir, "00000000-0000-0000-0000-000000000000",
                               EINSORA_DOCKER_SOCKET_NAME, NULL);
    if (strlen(longest) >= sizeof address.sun_path) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FILENAME_TOO_LONG,
                    "the docker driver's run directory \"%s\" is too long for a socket path",
                    config->run_dir);
        return NULL;
    }
    self->data_dir = g_strdup(config->data_dir);
    self->run_dir = g_strdup(config->run_dir);
    self->models_dir = g_strdup(config->models_dir);
    self->machine_id = g_strdup(config->machine_id);
    self->uid = geteuid() == 0 ? CONTAINER_UID_AS_ROOT : geteuid();
    self->gid = geteuid() == 0 ? CONTAINER_GID_AS_ROOT : getegid();
    if (!make_own_dir(self->data_dir, error) || !make_own_dir(self->run_dir, error))
        return NULL;
    self->engine = einsora_docker_engine_new(config->socket_path);
    filter =
        g_strdup_printf("{\"label\":[\"" EINSORA_DOCKER_LABEL_MACHINE "=%s\"]}", self->machine_id);
    escaped = g_uri_escape_string(filter, NULL, FALSE);
    self->list_path = g_strdup_printf("/containers/json?all=true&filters=%s", escaped);
    schedule_poll(self, 0);
    return g_steal_pointer(&self);
}

void
einsora_docker_driver_set_poll_interval(EinsoraDockerDriver *self, guint interval_ms)
{
    g_return_if_fail(EINSORA_IS_DOCKER_DRIVER(self));
    self->poll_interval_ms = MAX(interval_ms, 10);
}

void
einsora_docker_driver_set_ready_timeout(EinsoraDockerDriver *self, guint timeout_ms)
{
    g_return_if_fail(EINSORA_IS_DOCKER_DRIVER(self));
    self->ready_timeout_ms = timeout_ms;
}

void
einsora_docker_driver_set_stop_grace(EinsoraDockerDriver *self, guint seconds)
{
    g_return_if_fail(EINSORA_IS_DOCKER_DRIVER(self));
    self->stop_grace_s = seconds;
}

gboolean
einsora_docker_driver_engine_answers(EinsoraDockerDriver *self)
{
    g_return_val_if_fail(EINSORA_IS_DOCKER_DRIVER(self), FALSE);
    return self->engine_state == ENGINE_ANSWERS;
}
