/* The sandbox policy: what bubblewrap lends a notebook's server (the
 * system read-only, its own two directories writable, NVIDIA's nodes when
 * it has devices), which namespaces it gets, its network (outbound only
 * through pasta, or loopback alone), and the allowlisted environment it
 * runs with. The driver says where a workload's directories are; this
 * file says what the sandbox around them is. */
#pragma once

#include <glib.h>

#include "einsora-bwrap-args.h"

G_BEGIN_DECLS

/* What one notebook's sandbox is made from. */
typedef struct {
    const char *bwrap_path;
    const char *jupyter_path;
    /* NULL: no network but loopback. */
    const char *pasta_path;
    /* "/" normally: where /dev/nvidia* are looked for. */
    const char *device_root;
    /* The workload's data (its home) and run directories, writable at
     * the same paths inside, and its server's socket in the latter. */
    const char *data_dir;
    const char *run_dir;
    const char *socket_path;
    gint64 devices;
    /* The chosen GPUs' nodes by name ("nvidia2"): those and the driver's
     * shared nodes (nvidiactl, nvidia-uvm, ...) only. NULL: every
     * /dev/nvidia* node (placement chose none). */
    const char *const *gpu_nodes;
} EinsoraNativeSandbox;

/* What one endpoint's sandbox is made from: llama.cpp's llama-server
 * serving one model file, read-only, with no network at all. */
typedef struct {
    const char *bwrap_path;
    const char *llama_server_path;
    /* The model store's file, bound read-only at
     * EINSORA_NATIVE_MODEL_IN_SANDBOX; @model_name is what /v1/models
     * calls it. */
    const char *model_path;
    const char *model_name;
    /* Its run directory, writable, with its server's socket. */
    const char *run_dir;
    const char *socket_path;
    gint64 cpus;
    gint64 memory_mib;
} EinsoraEndpointSandbox;

#define EINSORA_NATIVE_MODEL_IN_SANDBOX "/run/einsora/model.gguf"
/* The context an endpoint serves, in tokens: Ollama's default too. */
#define EINSORA_NATIVE_ENDPOINT_CONTEXT 4096

/* The whole sandbox of one workload. Deterministic: the same workload
 * on the same configuration gives the same fingerprint, which is how a
 * restarted daemon knows the sandbox of a server it adopts. */
EinsoraBwrapArgs *einsora_native_sandbox_build(const EinsoraNativeSandbox *sandbox, GError **error);

/* llama-server's own command line for one endpoint (@llama_server_path
 * first; the bwrap fields unused): the docker driver runs the same one in
 * a container. */
gchar **einsora_native_sandbox_endpoint_command(const EinsoraEndpointSandbox *sandbox);

/* The whole sandbox of one endpoint, deterministic as a notebook's. */
EinsoraBwrapArgs *einsora_native_sandbox_build_endpoint(const EinsoraEndpointSandbox *sandbox,
                                                        GError **error);

/* The host probe's sandbox: the same system, /proc, /dev, /tmp and
 * network as a notebook's and its own PID namespace, running
 * `jupyter-notebook --version`. */
EinsoraBwrapArgs *einsora_native_sandbox_build_probe(const char *bwrap_path,
                                                     const char *jupyter_path,
                                                     const char *pasta_path, GError **error);

/* The server's environment, an allowlist: nothing of the daemon's
 * passes. It holds @token: wipe it (explicit_bzero) before freeing. */
gchar **einsora_native_sandbox_environment(const char *data_dir, const char *token);
/* An endpoint's: its API key (LLAMA_API_KEY) and nothing of the
 * daemon's; wipe it the same way. */
gchar **einsora_native_sandbox_endpoint_environment(const char *api_key);

/* `llama-server --version` in an endpoint's kind of sandbox. */
EinsoraBwrapArgs *einsora_native_sandbox_build_endpoint_probe(const char *bwrap_path,
                                                              const char *llama_server_path,
                                                              GError **error);

G_END_DECLS
