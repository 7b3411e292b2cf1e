/* The native driver on Linux: Debian's Jupyter (notebooks) or llama.cpp's
 * llama-server (endpoints, one model each, no network) as this user inside
 * bubblewrap. Its own network namespace (nothing it listens on is
 * reachable; outbound networking only through pasta when asked), its own
 * PID namespace, a private /tmp, the system read-only, and only the
 * notebook's data directory and run directory writable. The server
 * listens on <run dir>/<id>/notebook.sock with a per-run token and runs
 * its kernels over IPC. Stop keeps the data, start runs a new attempt on
 * it, remove deletes data and run files. A restarted daemon adopts the
 * servers still running (the process supervisor) when their sandbox is
 * unchanged, and stops them with sandbox-changed when it isn't. */
#pragma once

#include <gio/gio.h>

#include "einsora-agent-driver.h"

G_BEGIN_DECLS

#define EINSORA_NATIVE_DRIVER_NAME "linux-native"
#define EINSORA_NATIVE_SOCKET_NAME "notebook.sock"
#define EINSORA_NATIVE_ENDPOINT_SOCKET_NAME "endpoint.sock"
#define EINSORA_NATIVE_READY_TIMEOUT_MS_DEFAULT 60000

typedef struct {
    /* Each notebook's data is <data_dir>/<id>/, its home in the sandbox. */
    const char *data_dir;
    /* EINSORA_AGENT_RUN_DIR: sockets, state files and logs. */
    const char *run_dir;
    /* NULL: found in PATH (bwrap, jupyter-notebook, llama-server, pasta). */
    const char *bwrap_path;
    const char *jupyter_path;
    const char *llama_server_path;
    const char *pasta_path;
    /* The model store (<dir>/blobs/sha256-<hex>) endpoints load from;
     * NULL: this machine serves no endpoints. */
    const char *models_dir;
    /* Outbound networking through pasta; FALSE: none at all. */
    gboolean outbound_network;
    /* "/" normally: where /dev/nvidia* are looked for. */
    const char *device_root;
    /* NVML, which says which node is which GPU; NULL: EINSORA_NVML_LIBRARY. */
    const char *nvml_library;
} EinsoraNativeDriverConfig;

#define EINSORA_TYPE_NATIVE_DRIVER (einsora_native_driver_get_type())
G_DECLARE_FINAL_TYPE(EinsoraNativeDriver, einsora_native_driver, EINSORA, NATIVE_DRIVER, GObject)

/* Checks the configuration (the run directory short enough for a socket
 * path), creates the directories, and adopts the servers still running. */
EinsoraNativeDriver *einsora_native_driver_new(const EinsoraNativeDriverConfig *config,
                                               GError **error);

void einsora_native_driver_set_ready_timeout(EinsoraNativeDriver *self, guint timeout_ms);
void einsora_native_driver_set_stop_grace(EinsoraNativeDriver *self, guint grace_ms);
/* How many times readiness was asked over a socket (tests: asked when the
 * socket appears, not on a poll). */
guint64 einsora_native_driver_count_ready_checks(EinsoraNativeDriver *self);

/* Whether bubblewrap and Jupyter are here and work: runs the notebook
 * server's --version inside the same kind of sandbox, within @timeout_ms. */
void einsora_native_driver_probe_async(const EinsoraNativeDriverConfig *config, guint timeout_ms,
                                       GCancellable *cancellable, GAsyncReadyCallback callback,
                                       gpointer user_data);
gboolean einsora_native_driver_probe_finish(GAsyncResult *result, GError **error);

/* Whether this machine can serve endpoints: llama-server's --version in
 * an endpoint's kind of sandbox. Its version, or NULL and why not. */
void einsora_native_driver_probe_endpoints_async(const EinsoraNativeDriverConfig *config,
                                                 guint timeout_ms, GCancellable *cancellable,
                                                 GAsyncReadyCallback callback, gpointer user_data);
gchar *einsora_native_driver_probe_endpoints_finish(GAsyncResult *result, GError **error);

G_END_DECLS
