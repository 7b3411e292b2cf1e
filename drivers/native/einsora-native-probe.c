#define G_LOG_DOMAIN "einsora-native"

#include "einsora-native-probe.h"

#include <gio/gio.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "einsora-native-driver.h"
#include "einsora-native-sandbox.h"

static void
clear_source(GSource **source)
{
    if (*source == NULL)
        return;
    g_source_destroy(*source);
    g_clear_pointer(source, g_source_unref);
}

gchar *
einsora_native_probe_find_program(const char *configured, const char *name)
{
    if (configured != NULL)
        return g_file_test(configured, G_FILE_TEST_IS_EXECUTABLE) ? g_strdup(configured) : NULL;
    return g_find_program_in_path(name);
}

typedef struct {
    GSubprocess *process;
    GSource *timeout;
    GCancellable *cancellable; /* the wait, cut short at the time limit */
    gboolean timed_out;
    gboolean through_pasta;
    gboolean endpoint; /* llama-server's, rather than Jupyter's */
} Probe;

static void
probe_free(Probe *probe)
{
    clear_source(&probe->timeout);
    g_clear_object(&probe->process);
    g_clear_object(&probe->cancellable);
    g_free(probe);
}

/* Its own group, so the time limit can end all of it. */
static void
probe_child_setup(gpointer user_data)
{
    setsid();
}

static gboolean
on_probe_timeout(gpointer user_data)
{
    Probe *probe = user_data;

    const char *pid = g_subprocess_get_identifier(probe->process);

    /* Everything it started goes (it has a group of its own), and the
     * wait ends now even if something still holds its pipe. */
    g_clear_pointer(&probe->timeout, g_source_unref);
    probe->timed_out = TRUE;
    if (pid != NULL)
        kill(-(pid_t)atoi(pid), SIGKILL);
    g_cancellable_cancel(probe->cancellable);
    return G_SOURCE_REMOVE;
}

static void
on_probe_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Probe *probe = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *output = NULL;

    clear_source(&probe->timeout);
    if (!g_subprocess_communicate_utf8_finish(G_SUBPROCESS(source), result, &output, NULL,
                                              &error) &&
        !probe->timed_out) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    if (probe->endpoint) {
        if (probe->timed_out)
            g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                    "llama-server in bubblewrap didn't answer in time");
        else if (!g_subprocess_get_successful(G_SUBPROCESS(source)) || output == NULL ||
                 strstr(output, "version: ") == NULL)
            g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED,
                                    "llama-server in bubblewrap didn't run (is it built for "
                                    "this machine, with its libraries where it finds them?)");
        else {
            const char *version = strstr(output, "version: ") + strlen("version: ");
            g_task_return_pointer(task, g_strstrip(g_strndup(version, strcspn(version, "\n"))),
                                  g_free);
        }
        return;
    }
    if (probe->timed_out) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                probe->through_pasta
                                    ? "Jupyter in bubblewrap through pasta didn't answer in time"
                                    : "Jupyter in bubblewrap didn't answer in time");
        return;
    }
    if (!g_subprocess_get_successful(G_SUBPROCESS(source)) || output == NULL ||
        !g_ascii_isdigit(*g_strstrip(output))) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED,
                                probe->through_pasta
                                    ? "Jupyter in bubblewrap didn't run through pasta (can "
                                      "pasta make its namespace here?)"
                                    : "Jupyter in bubblewrap didn't run (can this user make "
                                      "namespaces?)");
        return;
    }
    g_task_return_boolean(task, TRUE);
}

/* Runs @args with a time limit, as @task's probe. */
static void
run_probe(GTask *task, const EinsoraBwrapArgs *args, Probe *probe, guint timeout_ms,
          GCancellable *cancellable)
{
    g_autoptr(GSubprocessLauncher) launcher = NULL;
    g_auto(GStrv) argv = einsora_bwrap_args_to_strv(args);
    g_autoptr(GError) error = NULL;
    const char *env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", NULL};

    /* llama-server says its version on stderr. */
    launcher = g_subprocess_launcher_new(
        G_SUBPROCESS_FLAGS_STDOUT_PIPE |
        (probe->endpoint ? G_SUBPROCESS_FLAGS_STDERR_MERGE : G_SUBPROCESS_FLAGS_STDERR_SILENCE));
    g_subprocess_launcher_set_environ(launcher, (gchar **)env);
    g_subprocess_launcher_set_child_setup(launcher, probe_child_setup, NULL, NULL);
    probe->cancellable = g_cancellable_new();
    if (cancellable != NULL)
        g_signal_connect_object(cancellable, "cancelled", G_CALLBACK(g_cancellable_cancel),
                                probe->cancellable, G_CONNECT_SWAPPED);
    g_task_set_task_data(task, probe, (GDestroyNotify)probe_free);
    probe->process = g_subprocess_launcher_spawnv(launcher, (const gchar *const *)argv, &error);
    if (probe->process == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    probe->timeout = g_timeout_source_new(timeout_ms);
    g_source_set_callback(probe->timeout, on_probe_timeout, probe, NULL);
    g_source_attach(probe->timeout, g_main_context_get_thread_default());
    g_subprocess_communicate_utf8_async(probe->process, NULL, probe->cancellable, on_probe_done,
                                        g_object_ref(task));
}

void
einsora_native_driver_probe_endpoints_async(const EinsoraNativeDriverConfig *config,
                                            guint timeout_ms, GCancellable *cancellable,
                                            GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);
    g_autofree gchar *bwrap = einsora_native_probe_find_program(config->bwrap_path, "bwrap");
    g_autofree gchar *llama =
        einsora_native_probe_find_program(config->llama_server_path, "llama-server");
    g_autoptr(EinsoraBwrapArgs) args = NULL;
    g_autoptr(GError) error = NULL;
    Probe *probe;

    g_task_set_source_tag(task, einsora_native_driver_probe_endpoints_async);
    if (bwrap == NULL || llama == NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s isn't installed",
                                bwrap == NULL ? "bubblewrap (bwrap)"
                                              : "llama-server (on PATH, or EINSORA_LLAMA_SERVER)");
        return;
    }
    args = einsora_native_sandbox_build_endpoint_probe(bwrap, llama, &error);
    if (args == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    probe = g_new0(Probe, 1);
    probe->endpoint = TRUE;
    run_probe(task, args, probe, timeout_ms, cancellable);
}

gchar *
einsora_native_driver_probe_endpoints_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_pointer(G_TASK(result), error);
}

void
einsora_native_driver_probe_async(const EinsoraNativeDriverConfig *config, guint timeout_ms,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);
    g_autofree gchar *bwrap = einsora_native_probe_find_program(config->bwrap_path, "bwrap");
    g_autofree gchar *jupyter =
        einsora_native_probe_find_program(config->jupyter_path, "jupyter-notebook");
    g_autofree gchar *pasta = config->outbound_network
                                  ? einsora_native_probe_find_program(config->pasta_path, "pasta")
                                  : NULL;
    g_autoptr(EinsoraBwrapArgs) args = NULL;
    g_autoptr(GError) error = NULL;
    Probe *probe;

    g_task_set_source_tag(task, einsora_native_driver_probe_async);
    if (bwrap == NULL || jupyter == NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s isn't installed",
                                bwrap == NULL ? "bubblewrap (bwrap)" : "jupyter-notebook");
        return;
    }
    args = einsora_native_sandbox_build_probe(bwrap, jupyter, pasta, &error);
    if (args == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    probe = g_new0(Probe, 1);
    probe->through_pasta = pasta != NULL;
    run_probe(task, args, probe, timeout_ms, cancellable);
}

gboolean
einsora_native_driver_probe_finish(GAsyncResult *result, GError **error)
{
    return g_task_propagate_boolean(G_TASK(result), error);
}
