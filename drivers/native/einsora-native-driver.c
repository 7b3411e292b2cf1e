#define G_LOG_DOMAIN "einsora-native"

#include "einsora-native-driver.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "einsora-activity-probe.h"
#include "einsora-bwrap-args.h"
#include "einsora-gpu-mask.h"
#include "einsora-linux-inventory.h"
#include "einsora-log-files.h"
#include "einsora-native-probe.h"
#include "einsora-native-sandbox.h"
#include "einsora-nvml.h"
#include "einsora-sandbox-server.h"
#include "einsora-process-supervisor.h"
#include "einsora-safe-remove.h"
#include "einsora-uuid.h"

/* Readiness is asked when the server's socket appears (a file monitor on
 * its run directory); then, while it exists but doesn't answer yet, again
 * after a back-off from a few milliseconds. Without a socket, a slow
 * check in case the monitor missed it (docs/adr/0029). */
#define READY_BACKOFF_FIRST_MS 5
#define READY_BACKOFF_MAX_MS 250
#define READY_NO_SOCKET_MS 2000
#define READY_CHECK_TIMEOUT_MS 2000
#define LABEL_ATTEMPT "attempt"
#define LABEL_DEVICES "devices"
#define LABEL_GPUS "gpus"
/* An endpoint's, so that a restarted daemon rebuilds the same sandbox. */
#define LABEL_KIND "kind"
#define LABEL_MODEL "model"
#define LABEL_MODEL_DIGEST "model_digest"
#define LABEL_CPUS "cpus"
#define LABEL_MEMORY "memory_mib"

typedef enum {
    OP_NONE,
    OP_STOP,
    OP_REMOVE,
} NativeOp;

typedef struct {
    EinsoraNativeDriver *driver; /* unowned: the driver owns its workloads */
    gchar *workload_id;
    EinsoraStatusCode code;
    gint64 attempt;
    EinsoraWorkloadKind kind;
    gint64 devices;
    guint64 gpu_mask; /* which GPUs, by NVML index; 0: none chosen */
    /* An endpoint's model and what it gets to run it. */
    gchar *model;
    gchar *model_digest;
    gint64 cpus;
    gint64 memory_mib;
    /* Set while a server runs: its socket and token, in memory only. */
    EinsoraSandboxServer *server;
    /* While a notebook runs: how it is used, for idle auto-stop. */
    EinsoraActivityProbe *activity;
    GCancellable *ready_cancellable;
    GSource *ready_timer;
    GFileMonitor *run_monitor; /* its run directory, while starting */
    guint ready_backoff_ms;
    gint64 ready_deadline_us;
    /* The one stop or remove in flight. */
    NativeOp op;
    GTask *task;
} NativeWorkload;

struct _EinsoraNativeDriver {
    GObject parent_instance;

    GMainContext *context;
    gchar *data_dir;
    gchar *run_dir;
    gchar *bwrap_path;
    gchar *jupyter_path;
    gchar *llama_server_path;
    gchar *models_dir;
    gchar *pasta_path; /* NULL unless outbound networking is on */
    gchar *device_root;
    gchar *nvml_library;
    guint ready_timeout_ms;
    EinsoraProcessSupervisor *supervisor;
    GHashTable *workloads; /* workload ID -> NativeWorkload */
    guint64 ready_checks;
};

static void einsora_native_driver_iface_init(EinsoraAgentDriverInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraNativeDriver, einsora_native_driver, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_AGENT_DRIVER,
                                                    einsora_native_driver_iface_init))

static void
clear_source(GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
}

static void
workload_stop_probing(NativeWorkload *workload)
{
    if (workload->run_monitor != NULL) {
        g_signal_handlers_disconnect_by_data(workload->run_monitor, workload);
        g_file_monitor_cancel(workload->run_monitor);
        g_clear_object(&workload->run_monitor);
    }
    clear_source(&workload->ready_timer);
    if (workload->ready_cancellable != NULL)
        g_cancellable_cancel(workload->ready_cancellable);
    g_clear_object(&workload->ready_cancellable);
}

static void
workload_free(NativeWorkload *workload)
{
    g_warn_if_fail(workload->task == NULL);
    workload_stop_probing(workload);
    g_clear_pointer(&workload->activity, einsora_activity_probe_free);
    g_clear_object(&workload->server);
    g_free(workload->workload_id);
    g_free(workload->model);
    g_free(workload->model_digest);
    g_free(workload);
}

static void
log_workload(const NativeWorkload *workload, GLogLevelFlags level, const char *message)
{
    g_autofree gchar *attempt = g_strdup_printf("%" G_GINT64_FORMAT, workload->attempt);

    g_log_structured(G_LOG_DOMAIN, level, "WORKLOAD_ID", workload->workload_id, "ATTEMPT", attempt,
                     "MESSAGE", "%s %s: %s", einsora_workload_kind_to_string(workload->kind),
                     workload->workload_id, message);
}

static NativeWorkload *
workload_ensure(EinsoraNativeDriver *self, const char *workload_id)
{
    NativeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload != NULL)
        return workload;
    workload = g_new0(NativeWorkload, 1);
    workload->driver = self;
    workload->workload_id = g_strdup(workload_id);
    workload->code = EINSORA_STATUS_CODE_UNKNOWN;
    workload->attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    g_hash_table_insert(self->workloads, workload->workload_id, workload);
    return workload;
}

/* Paths: data <data_dir>/<id>, run <run_dir>/<id>/notebook.sock (an
 * endpoint: endpoint.sock, and no data). */

static gchar *
workload_data_dir(EinsoraNativeDriver *self, const char *workload_id)
{
    return g_build_filename(self->data_dir, workload_id, NULL);
}

static gchar *
workload_run_dir(EinsoraNativeDriver *self, const char *workload_id)
{
    return g_build_filename(self->run_dir, workload_id, NULL);
}

static const char *
socket_name(EinsoraWorkloadKind kind)
{
    return kind == EINSORA_WORKLOAD_KIND_ENDPOINT ? EINSORA_NATIVE_ENDPOINT_SOCKET_NAME
                                                  : EINSORA_NATIVE_SOCKET_NAME;
}

static gchar *
workload_socket(EinsoraNativeDriver *self, const NativeWorkload *workload)
{
    return g_build_filename(self->run_dir, workload->workload_id, socket_name(workload->kind),
                            NULL);
}

/* The model store's file for a digest: blobs/sha256-<hex>. */
static gchar *
model_file(EinsoraNativeDriver *self, const char *digest)
{
    g_autofree gchar *name = NULL;

    if (!einsora_desired_workload_digest_is_valid(digest) || self->models_dir == NULL)
        return NULL;
    name = g_strdup_printf("sha256-%s", digest + strlen("sha256:"));
    return g_build_filename(self->models_dir, "blobs", name, NULL);
}

/* The sandbox: its policy is einsora-native-sandbox.c's, given here
 * one workload's paths. */

static EinsoraBwrapArgs *
build_endpoint_sandbox(EinsoraNativeDriver *self, const NativeWorkload *workload, GError **error)
{
    g_autofree gchar *run_dir = workload_run_dir(self, workload->workload_id);
    g_autofree gchar *socket_path = workload_socket(self, workload);
    g_autofree gchar *model_path = model_file(self, workload->model_digest);
    EinsoraEndpointSandbox sandbox = {
        .bwrap_path = self->bwrap_path,
        .llama_server_path = self->llama_server_path,
        .model_path = model_path,
        .model_name = workload->model,
        .run_dir = run_dir,
        .socket_path = socket_path,
        .cpus = workload->cpus,
        .memory_mib = workload->memory_mib,
    };

    if (model_path == NULL || workload->model == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "an endpoint needs its model's name and digest");
        return NULL;
    }
    return einsora_native_sandbox_build_endpoint(&sandbox, error);
}

/* The device nodes of the GPUs placement chose: only NVML knows which
 * /dev/nvidia<minor> is GPU i. A GPU it can't place isn't lent some
 * other node: the start fails. */
static gchar **
chosen_gpu_nodes(EinsoraNativeDriver *self, guint64 gpu_mask, GError **error)
{
    g_autoptr(GArray) minors = einsora_nvml_read_minors(self->nvml_library, error);
    g_autoptr(GStrvBuilder) nodes = g_strv_builder_new();

    if (minors == NULL) {
        g_prefix_error(error, "can't tell its GPUs' device nodes: ");
        return NULL;
    }
    for (guint i = 0; i < EINSORA_GPU_MASK_BITS; i++) {
        guint minor;

        if ((gpu_mask & (G_GUINT64_CONSTANT(1) << i)) == 0)
            continue;
        minor = i < minors->len ? g_array_index(minors, guint, i) : G_MAXUINT;
        if (minor == G_MAXUINT) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                        "NVML can't say which device node is GPU %u", i);
            return NULL;
        }
        {
            g_autofree gchar *node = g_strdup_printf("nvidia%u", minor);
            g_strv_builder_add(nodes, node);
        }
    }
    return g_strv_builder_end(nodes);
}

static EinsoraBwrapArgs *
build_sandbox(EinsoraNativeDriver *self, const NativeWorkload *workload, GError **error)
{
    const char *workload_id = workload->workload_id;
    gint64 devices = workload->devices;
    g_autofree gchar *data_dir = NULL;
    g_autofree gchar *run_dir = NULL;
    g_autofree gchar *socket_path = NULL;
    g_auto(GStrv) gpu_nodes = NULL;

    if (workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT)
        return build_endpoint_sandbox(self, workload, error);
    if (devices > 0 && workload->gpu_mask != 0) {
        gpu_nodes = chosen_gpu_nodes(self, workload->gpu_mask, error);
        if (gpu_nodes == NULL)
            return NULL;
    }
    data_dir = workload_data_dir(self, workload_id);
    run_dir = workload_run_dir(self, workload_id);
    socket_path = workload_socket(self, workload);
    const EinsoraNativeSandbox sandbox = {
        .bwrap_path = self->bwrap_path,
        .jupyter_path = self->jupyter_path,
        .pasta_path = self->pasta_path,
        .device_root = self->device_root,
        .data_dir = data_dir,
        .run_dir = run_dir,
        .socket_path = socket_path,
        .devices = devices,
        .gpu_nodes = (const char *const *)gpu_nodes,
    };

    return einsora_native_sandbox_build(&sandbox, error);
}

static void
wipe_strv(gchar **strv)
{
    for (guint i = 0; strv != NULL && strv[i] != NULL; i++)
        explicit_bzero(strv[i], strlen(strv[i]));
    g_strfreev(strv);
}

/* A server this daemon didn't start (it was adopted) keeps its token in
 * its own environment, which only this user can read: that is where a
 * restarted daemon finds it again, so the token is never written down. */
static gchar *
token_from_environment(GPid pid, EinsoraWorkloadKind kind)
{
    const char *variable =
        kind == EINSORA_WORKLOAD_KIND_ENDPOINT ? "LLAMA_API_KEY=" : "JUPYTER_TOKEN=";
    g_autofree gchar *path = g_strdup_printf("/proc/%d/environ", (int)pid);
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    gchar *token = NULL;

    if (!g_file_get_contents(path, &contents, &length, NULL))
        return NULL;
    for (gsize at = 0; at < length; at += strlen(contents + at) + 1) {
        if (g_str_has_prefix(contents + at, variable)) {
            token = g_strdup(contents + at + strlen(variable));
            break;
        }
    }
    explicit_bzero(contents, length);
    return token;
}

static void
announce(NativeWorkload *workload)
{
    g_signal_emit_by_name(workload->driver, "status-changed", workload->workload_id);
}

/* Readiness */

static void schedule_ready_check(NativeWorkload *workload, guint delay_ms);

/* A stop nobody waits for (a server that failed, or whose sandbox
 * changed): once it is done, its state file goes, so the failure stays
 * what it was rather than read as stopped by itself after a restart. */
static void
on_background_stop(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autofree gchar *workload_id = user_data;
    EinsoraProcessSupervisor *supervisor = EINSORA_PROCESS_SUPERVISOR(source);
    g_autoptr(GError) error = NULL;

    if (!einsora_process_supervisor_stop_finish(supervisor, result, &error) ||
        !einsora_process_supervisor_clear_state(supervisor, workload_id, &error))
        g_message("workload %s: %s", workload_id, error->message);
}

static void
stop_in_background(EinsoraNativeDriver *self, const char *workload_id)
{
    einsora_process_supervisor_stop_async(self->supervisor, workload_id, NULL, on_background_stop,
                                          g_strdup(workload_id));
}

/* Its server's token dies with it, and goes from its log too. */
static void
drop_server(NativeWorkload *workload)
{
    g_clear_pointer(&workload->activity, einsora_activity_probe_free);
    if (workload->server != NULL)
        einsora_log_files_scrub(workload->driver->run_dir, workload->workload_id,
                                einsora_sandbox_server_get_token(workload->server));
    g_clear_object(&workload->server);
}

static void
kill_unready(NativeWorkload *workload)
{
    EinsoraNativeDriver *self = workload->driver;

    /* It failed; what runs of it is stopped, its data kept. The agent
     * sees the code at once; the stop finishes on its own. */
    workload->code = EINSORA_STATUS_CODE_FAILED_TO_START;
    drop_server(workload);
    stop_in_background(self, workload->workload_id);
}

static void check_ready_now(NativeWorkload *workload);

static gboolean
socket_exists(NativeWorkload *workload)
{
    struct stat st;

    return workload->server != NULL &&
           lstat(einsora_sandbox_server_get_socket_path(workload->server), &st) == 0;
}

static void
on_ready_checked(GObject *source, GAsyncResult *result, gpointer user_data)
{
    NativeWorkload *workload = user_data;
    g_autoptr(GError) error = NULL;
    gboolean ready =
        einsora_sandbox_server_check_ready_finish(EINSORA_SANDBOX_SERVER(source), result, &error);

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* stopped, or the driver is going away: workload may be freed */
    g_clear_object(&workload->ready_cancellable);
    if (workload->code != EINSORA_STATUS_CODE_STARTING)
        return;
    if (ready) {
        workload->code = EINSORA_STATUS_CODE_RUNNING;
        workload_stop_probing(workload);
        log_workload(workload, G_LOG_LEVEL_MESSAGE, "its server answers on its socket: running");
        /* llama-server says nothing of its use: the proxy does. */
        if (workload->kind == EINSORA_WORKLOAD_KIND_NOTEBOOK && workload->activity == NULL)
            workload->activity = einsora_activity_probe_new(
                workload->server, (EinsoraActivityChanged)announce, workload);
        announce(workload);
        return;
    }
    if (g_get_monotonic_time() >= workload->ready_deadline_us) {
        g_autofree gchar *message = g_strdup_printf(
            "its server never answered on its socket (last: %s); stopping it. Its log is %s/%s.log",
            error->message, workload->driver->run_dir, workload->workload_id);
        log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
        workload_stop_probing(workload);
        kill_unready(workload);
        announce(workload);
        return;
    }
    if (!socket_exists(workload) && workload->run_monitor != NULL) {
        /* Not listening yet: the monitor says when it is (and the time
         * limit is kept). */
        gint64 left_ms =
            (workload->ready_deadline_us - g_get_monotonic_time()) / G_TIME_SPAN_MILLISECOND + 1;
        schedule_ready_check(workload, (guint)CLAMP(left_ms, 1, READY_NO_SOCKET_MS));
        return;
    }
    /* Bound but not answering yet (or no monitor): soon again, then less
     * often. */
    schedule_ready_check(workload, workload->ready_backoff_ms);
    workload->ready_backoff_ms = MIN(workload->ready_backoff_ms * 2, READY_BACKOFF_MAX_MS);
}

static void
check_ready_now(NativeWorkload *workload)
{
    clear_source(&workload->ready_timer);
    if (workload->server == NULL || workload->code != EINSORA_STATUS_CODE_STARTING ||
        workload->ready_cancellable != NULL)
        return;
    workload->driver->ready_checks++;
    workload->ready_cancellable = g_cancellable_new();
    einsora_sandbox_server_check_ready_async(workload->server, READY_CHECK_TIMEOUT_MS,
                                             workload->ready_cancellable, on_ready_checked,
                                             workload);
}

static gboolean
on_ready_timer(gpointer user_data)
{
    NativeWorkload *workload = user_data;

    g_clear_pointer(&workload->ready_timer, g_source_unref);
    check_ready_now(workload);
    return G_SOURCE_REMOVE;
}

static void
schedule_ready_check(NativeWorkload *workload, guint delay_ms)
{
    clear_source(&workload->ready_timer);
    workload->ready_timer = g_timeout_source_new(delay_ms);
    g_source_set_callback(workload->ready_timer, on_ready_timer, workload, NULL);
    g_source_attach(workload->ready_timer, workload->driver->context);
}

/* The server bound its socket: ask now rather than on a poll. */
static void
on_run_dir_changed(GFileMonitor *monitor, GFile *file, GFile *other, GFileMonitorEvent event,
                   gpointer user_data)
{
    NativeWorkload *workload = user_data;
    g_autofree gchar *name = g_file_get_basename(file);

    if ((event == G_FILE_MONITOR_EVENT_CREATED || event == G_FILE_MONITOR_EVENT_MOVED_IN) &&
        g_strcmp0(name, socket_name(workload->kind)) == 0)
        check_ready_now(workload);
}

static void
begin_probing(NativeWorkload *workload, const char *token)
{
    EinsoraNativeDriver *self = workload->driver;
    g_autofree gchar *socket_path = workload_socket(self, workload);
    g_autofree gchar *run_dir = workload_run_dir(self, workload->workload_id);
    g_autoptr(GFile) dir = g_file_new_for_path(run_dir);
    g_autoptr(GError) error = NULL;

    workload_stop_probing(workload);
    drop_server(workload);
    workload->server = einsora_sandbox_server_new(workload->kind, socket_path, token);
    workload->code = EINSORA_STATUS_CODE_STARTING;
    workload->ready_deadline_us =
        g_get_monotonic_time() + (gint64)self->ready_timeout_ms * G_TIME_SPAN_MILLISECOND;
    workload->ready_backoff_ms = READY_BACKOFF_FIRST_MS;
    /* Monitors dispatch in the context that is thread-default when they
     * are made: the driver's. */
    g_main_context_push_thread_default(self->context);
    workload->run_monitor = g_file_monitor_directory(dir, G_FILE_MONITOR_WATCH_MOVES, NULL, &error);
    g_main_context_pop_thread_default(self->context);
    if (workload->run_monitor != NULL)
        g_signal_connect(workload->run_monitor, "changed", G_CALLBACK(on_run_dir_changed),
                         workload);
    else
        log_workload(workload, G_LOG_LEVEL_INFO, "its run directory can't be watched: polling");
    /* An adopted server's socket is there already. */
    check_ready_now(workload);
}

/* The supervisor says a server ended by itself (a stop's end is the
 * stop's to handle). */
static void
on_process_changed(EinsoraProcessSupervisor *supervisor, const char *name, gpointer user_data)
{
    EinsoraNativeDriver *self = user_data;
    NativeWorkload *workload = g_hash_table_lookup(self->workloads, name);
    int exit_status = 0;
    EinsoraProcessState state;

    if (workload == NULL || workload->op != OP_NONE)
        return;
    state = einsora_process_supervisor_get_state(supervisor, name, &exit_status);
    /* A stop this driver asked for is its caller's to report. */
    if (state == EINSORA_PROCESS_RUNNING || state == EINSORA_PROCESS_STOPPED)
        return;
    workload_stop_probing(workload);
    drop_server(workload);
    /* bwrap passes on a signal death of its command as 128 + signal. */
    if (((state == EINSORA_PROCESS_KILLED && exit_status == SIGKILL) ||
         (state == EINSORA_PROCESS_EXITED && exit_status == 128 + SIGKILL)) &&
        (workload->code == EINSORA_STATUS_CODE_RUNNING ||
         workload->code == EINSORA_STATUS_CODE_STARTING)) {
        /* Nobody here sent it: the kernel's out-of-memory killer does. */
        workload->code = EINSORA_STATUS_CODE_OUT_OF_MEMORY;
        log_workload(workload, G_LOG_LEVEL_MESSAGE,
                     "its server was killed (SIGKILL): out of "
                     "memory");
    } else if (workload->code == EINSORA_STATUS_CODE_STARTING) {
        workload->code = EINSORA_STATUS_CODE_FAILED_TO_START;
        log_workload(workload, G_LOG_LEVEL_MESSAGE, "its server ended before it was ready");
    } else if (workload->code == EINSORA_STATUS_CODE_RUNNING) {
        workload->code = EINSORA_STATUS_CODE_EXITED;
        log_workload(workload, G_LOG_LEVEL_MESSAGE, "its server stopped by itself");
    }
    announce(workload);
}

/* Starting */

static gboolean
make_private_dir(const char *path, GError **error)
{
    if (g_mkdir_with_parents(path, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't create %s: %s", path,
                    g_strerror(errno));
        return FALSE;
    }
    if (g_chmod(path, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't make %s private: %s",
                    path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static EinsoraStatusCode
launch(NativeWorkload *workload, GError **error)
{
    EinsoraNativeDriver *self = workload->driver;
    const char *id = workload->workload_id;
    g_autofree gchar *data_dir = workload_data_dir(self, id);
    g_autofree gchar *run_dir = workload_run_dir(self, id);
    g_autofree gchar *socket_path = workload_socket(self, workload);
    g_autofree gchar *token = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *attempt_label = NULL;
    g_autofree gchar *devices_label = NULL;
    g_autofree gchar *gpus_label = NULL;
    g_autofree gchar *kind_label = NULL;
    g_autofree gchar *model_label = NULL;
    g_autofree gchar *digest_label = NULL;
    g_autofree gchar *cpus_label = NULL;
    g_autofree gchar *memory_label = NULL;
    g_autofree gchar *model_path = NULL;
    gboolean endpoint = workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT;
    g_autoptr(EinsoraBwrapArgs) args = NULL;
    g_auto(GStrv) argv = NULL;
    gchar **envp = NULL;
    gboolean started;

    if (self->bwrap_path == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "bwrap isn't installed");
        return EINSORA_STATUS_CODE_DRIVER_MISSING;
    }
    if (!endpoint && self->jupyter_path == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                            "jupyter-notebook isn't installed");
        return EINSORA_STATUS_CODE_IMAGE_MISSING;
    }
    if (endpoint && self->llama_server_path == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                            "llama-server isn't installed (put it on PATH or set "
                            "EINSORA_LLAMA_SERVER)");
        return EINSORA_STATUS_CODE_IMAGE_MISSING;
    }
    if (endpoint) {
        model_path = model_file(self, workload->model_digest);
        if (model_path == NULL || !g_file_test(model_path, G_FILE_TEST_IS_REGULAR)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                        "model %s (%s) isn't in this machine's model store",
                        workload->model != NULL ? workload->model : "(none)",
                        workload->model_digest != NULL ? workload->model_digest : "no digest");
            return EINSORA_STATUS_CODE_IMAGE_MISSING;
        }
    }
    args = build_sandbox(self, workload, error);
    if (args == NULL)
        return EINSORA_STATUS_CODE_DRIVER_MISSING;
    /* An endpoint keeps nothing: it has a run directory only. */
    if ((!endpoint && !make_private_dir(data_dir, error)) || !make_private_dir(run_dir, error))
        return EINSORA_STATUS_CODE_FAILED_TO_START;
    /* A socket left by an earlier run would answer for nobody. */
    if (g_unlink(socket_path) != 0 && errno != ENOENT) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't remove %s: %s",
                    socket_path, g_strerror(errno));
        return EINSORA_STATUS_CODE_FAILED_TO_START;
    }
    token = einsora_sandbox_server_new_token(error);
    if (token == NULL)
        return EINSORA_STATUS_CODE_FAILED_TO_START;
    /* Each attempt's output in its own files, the last few kept. */
    if (!einsora_log_files_begin_attempt(self->run_dir, id, workload->attempt, error))
        return EINSORA_STATUS_CODE_FAILED_TO_START;
    argv = einsora_bwrap_args_to_strv(args);
    fingerprint = einsora_bwrap_args_fingerprint(args);
    envp = endpoint ? einsora_native_sandbox_endpoint_environment(token)
                    : einsora_native_sandbox_environment(data_dir, token);
    attempt_label = g_strdup_printf(LABEL_ATTEMPT "=%" G_GINT64_FORMAT, workload->attempt);
    devices_label = g_strdup_printf(LABEL_DEVICES "=%" G_GINT64_FORMAT, workload->devices);
    {
        g_autofree gchar *gpus = einsora_gpu_mask_to_string(workload->gpu_mask);
        gpus_label = g_strdup_printf(LABEL_GPUS "=%s", gpus);
    }
    kind_label = g_strdup_printf(LABEL_KIND "=%s", einsora_workload_kind_to_string(workload->kind));
    if (endpoint) {
        model_label = g_strdup_printf(LABEL_MODEL "=%s", workload->model);
        digest_label = g_strdup_printf(LABEL_MODEL_DIGEST "=%s", workload->model_digest);
        cpus_label = g_strdup_printf(LABEL_CPUS "=%" G_GINT64_FORMAT, workload->cpus);
        memory_label = g_strdup_printf(LABEL_MEMORY "=%" G_GINT64_FORMAT, workload->memory_mib);
    }
    {
        /* Those after a NULL (a notebook has no model) are left out, so
         * the GPUs come first. */
        const char *const labels[] = {attempt_label, devices_label, gpus_label,
                                      kind_label,    model_label,   digest_label,
                                      cpus_label,    memory_label,  NULL};
        started = einsora_process_supervisor_start(
            self->supervisor, id, (const char *const *)argv, (const char *const *)envp,
            endpoint ? run_dir : data_dir, fingerprint, labels, error);
    }
    wipe_strv(envp);
    if (!started) {
        if (g_error_matches(*error, G_SPAWN_ERROR, G_SPAWN_ERROR_NOENT))
            return EINSORA_STATUS_CODE_DRIVER_MISSING;
        return EINSORA_STATUS_CODE_FAILED_TO_START;
    }
    begin_probing(workload, token);
    explicit_bzero(token, strlen(token));
    return EINSORA_STATUS_CODE_STARTING;
}

static void
launch_for_task(GTask *task, NativeWorkload *workload)
{
    g_autoptr(GError) error = NULL;
    EinsoraStatusCode code = launch(workload, &error);

    if (code != EINSORA_STATUS_CODE_STARTING) {
        g_autofree gchar *message = g_strdup_printf("can't start: %s", error->message);
        workload->code = code;
        log_workload(workload, G_LOG_LEVEL_MESSAGE, message);
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "started its server in its sandbox");
    g_task_return_boolean(task, TRUE);
}

/* What is left of an earlier server (one whose sandbox changed, or that
 * failed to get ready) is stopped before the new one starts. */
static void
on_leftover_stopped(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    NativeWorkload *workload = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;

    if (!einsora_process_supervisor_stop_finish(EINSORA_PROCESS_SUPERVISOR(source), result,
                                                &error)) {
        workload->code = EINSORA_STATUS_CODE_FAILED_TO_START;
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    launch_for_task(task, workload);
}

static void
native_start_async(EinsoraAgentDriver *driver, const EinsoraDesiredWorkload *desired,
                   GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(driver);
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    NativeWorkload *workload;

    g_task_set_source_tag(task, native_start_async);
    if (!einsora_uuid_is_valid(desired->workload_id) ||
        (desired->kind != EINSORA_WORKLOAD_KIND_NOTEBOOK &&
         desired->kind != EINSORA_WORKLOAD_KIND_ENDPOINT)) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                                "the native driver runs notebooks and endpoints only");
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
    workload->devices = desired->devices;
    workload->gpu_mask = desired->gpu_mask;
    workload->cpus = desired->cpus;
    workload->memory_mib = desired->memory_mib;
    g_free(workload->model);
    workload->model = g_strdup(desired->model);
    g_free(workload->model_digest);
    workload->model_digest = g_strdup(desired->model_digest);
    workload->code = EINSORA_STATUS_CODE_STARTING;
    g_task_set_task_data(task, workload, NULL);
    if (einsora_process_supervisor_get_pid(self->supervisor, workload->workload_id) != 0) {
        einsora_process_supervisor_stop_async(self->supervisor, workload->workload_id, NULL,
                                              on_leftover_stopped, g_steal_pointer(&task));
        return;
    }
    launch_for_task(task, workload);
}

static gboolean
native_start_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

/* Stopping and removing */

static void
finish_op(NativeWorkload *workload, GError *error)
{
    g_autoptr(GTask) task = g_steal_pointer(&workload->task);

    workload->op = OP_NONE;
    if (error != NULL)
        g_task_return_error(task, error);
    else
        g_task_return_boolean(task, TRUE);
}

static void
on_removed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    NativeWorkload *workload = user_data;
    EinsoraNativeDriver *self = workload->driver;
    g_autoptr(GError) error = NULL;

    if (!einsora_safe_remove_trees_finish(result, &error) ||
        !einsora_process_supervisor_forget(self->supervisor, workload->workload_id, &error)) {
        log_workload(workload, G_LOG_LEVEL_MESSAGE, error->message);
        workload->code = EINSORA_STATUS_CODE_STOPPED; /* data (partly) kept: try again */
        finish_op(workload, g_steal_pointer(&error));
        return;
    }
    einsora_log_files_remove(self->run_dir, workload->workload_id);
    workload->code = EINSORA_STATUS_CODE_REMOVED;
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "its data and run files are deleted");
    finish_op(workload, NULL);
}

static void
start_removal(NativeWorkload *workload)
{
    EinsoraNativeDriver *self = workload->driver;
    g_autofree gchar *data_dir = workload_data_dir(self, workload->workload_id);
    g_autofree gchar *run_dir = workload_run_dir(self, workload->workload_id);
    const char *const paths[] = {data_dir, run_dir, NULL};

    einsora_safe_remove_trees_async(G_OBJECT(self), paths, on_removed, workload);
}

static void
on_server_stopped(GObject *source, GAsyncResult *result, gpointer user_data)
{
    NativeWorkload *workload = user_data;
    EinsoraNativeDriver *self = workload->driver;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *socket_path = workload_socket(self, workload);

    if (!einsora_process_supervisor_stop_finish(EINSORA_PROCESS_SUPERVISOR(source), result,
                                                &error)) {
        /* Signals are sent; the supervisor's "changed" will tell the rest. */
        finish_op(workload, g_steal_pointer(&error));
        return;
    }
    g_unlink(socket_path);
    /* Stopped on purpose: nothing is left for a restarted daemon to
     * adopt, or to mistake for a server that stopped by itself. */
    if (!einsora_process_supervisor_clear_state(self->supervisor, workload->workload_id, &error))
        log_workload(workload, G_LOG_LEVEL_MESSAGE, error->message);
    g_clear_error(&error);
    if (workload->op == OP_REMOVE) {
        start_removal(workload);
        return;
    }
    if (workload->code == EINSORA_STATUS_CODE_STOPPING)
        workload->code = EINSORA_STATUS_CODE_STOPPED;
    log_workload(workload, G_LOG_LEVEL_MESSAGE, "stopped; its data is kept");
    finish_op(workload, NULL);
}

static void
begin_op(EinsoraNativeDriver *self, NativeOp op, const char *workload_id, GCancellable *cancellable,
         GAsyncReadyCallback callback, gpointer user_data, gpointer source_tag)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    NativeWorkload *workload;

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
    drop_server(workload);
    workload->op = op;
    workload->task = g_steal_pointer(&task);
    if (op == OP_REMOVE)
        workload->code = EINSORA_STATUS_CODE_REMOVING;
    else if (einsora_process_supervisor_get_pid(self->supervisor, workload_id) != 0)
        workload->code = EINSORA_STATUS_CODE_STOPPING;
    else if (einsora_status_code_is_active(workload->code) ||
             workload->code == EINSORA_STATUS_CODE_UNKNOWN)
        workload->code = EINSORA_STATUS_CODE_STOPPED;
    /* A failed or exited one keeps its code: that is what happened to it. */
    einsora_process_supervisor_stop_async(self->supervisor, workload_id, cancellable,
                                          on_server_stopped, workload);
}

static void
native_stop_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
                  GAsyncReadyCallback callback, gpointer user_data)
{
    begin_op(EINSORA_NATIVE_DRIVER(driver), OP_STOP, workload_id, cancellable, callback, user_data,
             native_stop_async);
}

static gboolean
native_stop_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

static void
native_remove_async(EinsoraAgentDriver *driver, const char *workload_id, GCancellable *cancellable,
                    GAsyncReadyCallback callback, gpointer user_data)
{
    begin_op(EINSORA_NATIVE_DRIVER(driver), OP_REMOVE, workload_id, cancellable, callback,
             user_data, native_remove_async);
}

static gboolean
native_remove_finish(EinsoraAgentDriver *driver, GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}

/* What it sees */

static EinsoraStatusCode
native_get_status(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(driver);
    NativeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);
    g_autofree gchar *data_dir = NULL;

    *attempt = EINSORA_AGENT_DRIVER_NO_ATTEMPT;
    if (workload != NULL && workload->code != EINSORA_STATUS_CODE_UNKNOWN) {
        *attempt = workload->attempt;
        return workload->code;
    }
    /* Data from a run before this daemon started: stopped, data kept. */
    if (!einsora_uuid_is_valid(workload_id))
        return EINSORA_STATUS_CODE_UNKNOWN;
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
native_list_workloads(EinsoraAgentDriver *driver)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(driver);
    g_autoptr(GHashTable) ids = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GDir) dir = g_dir_open(self->data_dir, 0, NULL);
    g_autoptr(GPtrArray) sorted = g_ptr_array_new();
    GHashTableIter iter;
    gpointer key, value;
    const char *name;

    g_hash_table_iter_init(&iter, self->workloads);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        const NativeWorkload *workload = value;
        if (workload->code != EINSORA_STATUS_CODE_UNKNOWN &&
            workload->code != EINSORA_STATUS_CODE_REMOVED)
            g_hash_table_add(ids, key);
    }
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        NativeWorkload *workload = g_hash_table_lookup(self->workloads, name);
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
native_get_access(EinsoraAgentDriver *driver, const char *workload_id, gint64 *attempt,
                  gchar **socket_path, gchar **token)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(driver);
    NativeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

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
native_get_activity(EinsoraAgentDriver *driver, const char *workload_id,
                    EinsoraWorkloadActivity *activity)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(driver);
    NativeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload == NULL || workload->activity == NULL ||
        workload->code != EINSORA_STATUS_CODE_RUNNING)
        return FALSE;
    *activity = einsora_activity_probe_get(workload->activity);
    return TRUE;
}

static gchar *
native_find_log(EinsoraAgentDriver *driver, const char *workload_id, gint64 attempt,
                gint64 *found_attempt, GError **error)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(driver);

    /* A name in its run directory: never a path of the caller's. */
    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return einsora_log_files_find(self->run_dir, workload_id, attempt, found_attempt, error);
}

static const char *
native_get_name(EinsoraAgentDriver *driver)
{
    return EINSORA_NATIVE_DRIVER_NAME;
}

static void
einsora_native_driver_iface_init(EinsoraAgentDriverInterface *iface)
{
    iface->get_name = native_get_name;
    iface->start_async = native_start_async;
    iface->start_finish = native_start_finish;
    iface->stop_async = native_stop_async;
    iface->stop_finish = native_stop_finish;
    iface->remove_async = native_remove_async;
    iface->remove_finish = native_remove_finish;
    iface->get_status = native_get_status;
    iface->list_workloads = native_list_workloads;
    iface->get_access = native_get_access;
    iface->find_log = native_find_log;
    iface->get_activity = native_get_activity;
}

/* Construction and adoption */

static void
einsora_native_driver_dispose(GObject *object)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(object);

    if (self->supervisor != NULL)
        g_signal_handlers_disconnect_by_data(self->supervisor, self);
    G_OBJECT_CLASS(einsora_native_driver_parent_class)->dispose(object);
}

static void
einsora_native_driver_finalize(GObject *object)
{
    EinsoraNativeDriver *self = EINSORA_NATIVE_DRIVER(object);

    g_clear_pointer(&self->workloads, g_hash_table_unref);
    g_clear_object(&self->supervisor);
    g_free(self->data_dir);
    g_free(self->run_dir);
    g_free(self->bwrap_path);
    g_free(self->jupyter_path);
    g_free(self->llama_server_path);
    g_free(self->models_dir);
    g_free(self->pasta_path);
    g_free(self->device_root);
    g_free(self->nvml_library);
    g_clear_pointer(&self->context, g_main_context_unref);
    G_OBJECT_CLASS(einsora_native_driver_parent_class)->finalize(object);
}

static void
einsora_native_driver_class_init(EinsoraNativeDriverClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->dispose = einsora_native_driver_dispose;
    object_class->finalize = einsora_native_driver_finalize;
}

static void
einsora_native_driver_init(EinsoraNativeDriver *self)
{
    self->context = g_main_context_ref_thread_default();
    self->ready_timeout_ms = EINSORA_NATIVE_READY_TIMEOUT_MS_DEFAULT;
    self->workloads =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)workload_free);
}

static gint64
label_number(EinsoraProcessSupervisor *supervisor, const char *name, const char *key)
{
    g_autofree gchar *text = einsora_process_supervisor_read_label(supervisor, name, key);
    gint64 value = -1;

    if (text == NULL || !g_ascii_string_to_signed(text, 10, 0, G_MAXINT64, &value, NULL))
        return -1;
    return value;
}

/* The servers a previous daemon started: adopted when their sandbox is
 * unchanged, stopped with sandbox-changed when it isn't, and reported
 * as stopped by themselves when they are gone. */
static void
adopt_recorded(EinsoraNativeDriver *self)
{
    g_auto(GStrv) names = einsora_process_supervisor_list_recorded(self->supervisor);

    for (guint i = 0; names[i] != NULL; i++) {
        const char *id = names[i];
        gint64 attempt = label_number(self->supervisor, id, LABEL_ATTEMPT);
        gint64 devices = label_number(self->supervisor, id, LABEL_DEVICES);
        g_autofree gchar *kind =
            einsora_process_supervisor_read_label(self->supervisor, id, LABEL_KIND);
        g_autoptr(EinsoraBwrapArgs) args = NULL;
        g_autofree gchar *fingerprint = NULL;
        NativeWorkload *workload;
        EinsoraProcessAdoption adoption;

        if (!einsora_uuid_is_valid(id) || attempt < 0)
            continue;
        workload = workload_ensure(self, id);
        workload->attempt = attempt;
        workload->devices = MAX(devices, 0);
        {
            g_autofree gchar *gpus =
                einsora_process_supervisor_read_label(self->supervisor, id, LABEL_GPUS);
            /* Recorded before GPUs were chosen, or unreadable: none. */
            if (gpus == NULL || !einsora_gpu_mask_from_string(gpus, &workload->gpu_mask))
                workload->gpu_mask = 0;
        }
        /* Recorded before endpoints ran here: a notebook. */
        if (kind == NULL || !einsora_workload_kind_from_string(kind, &workload->kind))
            workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
        if (workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT) {
            g_free(workload->model);
            workload->model =
                einsora_process_supervisor_read_label(self->supervisor, id, LABEL_MODEL);
            g_free(workload->model_digest);
            workload->model_digest =
                einsora_process_supervisor_read_label(self->supervisor, id, LABEL_MODEL_DIGEST);
            workload->cpus = MAX(label_number(self->supervisor, id, LABEL_CPUS), 0);
            workload->memory_mib = MAX(label_number(self->supervisor, id, LABEL_MEMORY), 0);
        }
        args = build_sandbox(self, workload, NULL);
        /* A sandbox that can't be built now has changed too. */
        fingerprint = args != NULL ? einsora_bwrap_args_fingerprint(args) : g_strdup("");
        adoption = einsora_process_supervisor_adopt(self->supervisor, id, fingerprint);
        switch (adoption) {
        case EINSORA_PROCESS_ADOPTED: {
            GPid pid = einsora_process_supervisor_get_pid(self->supervisor, id);
            g_autofree gchar *token = token_from_environment(pid, workload->kind);

            if (token == NULL) {
                log_workload(workload, G_LOG_LEVEL_MESSAGE,
                             "its server runs but its token can't be read back; stopping it");
                kill_unready(workload);
                break;
            }
            log_workload(workload, G_LOG_LEVEL_MESSAGE, "adopted its running server");
            begin_probing(workload, token);
            explicit_bzero(token, strlen(token));
            break;
        }
        case EINSORA_PROCESS_FINGERPRINT_CHANGED:
            log_workload(workload, G_LOG_LEVEL_MESSAGE,
                         "its sandbox changed since its server started; stopping that server");
            workload->code = EINSORA_STATUS_CODE_SANDBOX_CHANGED;
            stop_in_background(self, id);
            break;
        case EINSORA_PROCESS_GONE:
        default:
            log_workload(workload, G_LOG_LEVEL_MESSAGE,
                         "its server stopped by itself while the daemon was away");
            workload->code = EINSORA_STATUS_CODE_EXITED;
            break;
        }
    }
}

EinsoraNativeDriver *
einsora_native_driver_new(const EinsoraNativeDriverConfig *config, GError **error)
{
    g_autoptr(EinsoraNativeDriver) self = g_object_new(EINSORA_TYPE_NATIVE_DRIVER, NULL);
    g_autofree gchar *longest = NULL;
    struct sockaddr_un address;

    if (config->data_dir == NULL || !g_path_is_absolute(config->data_dir) ||
        config->run_dir == NULL || !g_path_is_absolute(config->run_dir)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "the native driver's data and run directories must be absolute");
        return NULL;
    }
    /* The longest socket path it will use must fit a socket address. */
    longest = g_build_filename(config->run_dir, "00000000-0000-0000-0000-000000000000",
                               EINSORA_NATIVE_SOCKET_NAME, NULL);
    if (strlen(longest) >= sizeof address.sun_path) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FILENAME_TOO_LONG,
                    "EINSORA_AGENT_RUN_DIR: \"%s\" is too long: a notebook's socket path there "
                    "takes %zu bytes, and this system allows %zu; choose a directory of at most "
                    "%zu bytes",
                    config->run_dir, strlen(longest), sizeof address.sun_path - 1,
                    sizeof address.sun_path - 1 - (strlen(longest) - strlen(config->run_dir)));
        return NULL;
    }
    self->data_dir = g_strdup(config->data_dir);
    self->run_dir = g_strdup(config->run_dir);
    self->device_root = g_strdup(config->device_root != NULL ? config->device_root : "/");
    self->nvml_library =
        g_strdup(config->nvml_library != NULL ? config->nvml_library : EINSORA_NVML_LIBRARY);
    self->bwrap_path = einsora_native_probe_find_program(config->bwrap_path, "bwrap");
    self->jupyter_path =
        einsora_native_probe_find_program(config->jupyter_path, "jupyter-notebook");
    self->llama_server_path =
        einsora_native_probe_find_program(config->llama_server_path, "llama-server");
    self->models_dir = g_strdup(config->models_dir);
    if (config->outbound_network) {
        self->pasta_path = einsora_native_probe_find_program(config->pasta_path, "pasta");
        if (self->pasta_path == NULL)
            g_message("outbound networking for notebooks needs pasta (Debian's passt), which "
                      "isn't installed: notebooks get no network");
    }
    if (!make_private_dir(self->data_dir, error) || !make_private_dir(self->run_dir, error))
        return NULL;
    self->supervisor = einsora_process_supervisor_new(self->run_dir, error);
    if (self->supervisor == NULL)
        return NULL;
    g_signal_connect(self->supervisor, "changed", G_CALLBACK(on_process_changed), self);
    adopt_recorded(self);
    return g_steal_pointer(&self);
}

guint64
einsora_native_driver_count_ready_checks(EinsoraNativeDriver *self)
{
    g_return_val_if_fail(EINSORA_IS_NATIVE_DRIVER(self), 0);
    return self->ready_checks;
}

void
einsora_native_driver_set_ready_timeout(EinsoraNativeDriver *self, guint timeout_ms)
{
    g_return_if_fail(EINSORA_IS_NATIVE_DRIVER(self));
    self->ready_timeout_ms = timeout_ms;
}

void
einsora_native_driver_set_stop_grace(EinsoraNativeDriver *self, guint grace_ms)
{
    g_return_if_fail(EINSORA_IS_NATIVE_DRIVER(self));
    einsora_process_supervisor_set_stop_grace(self->supervisor, grace_ms);
}
