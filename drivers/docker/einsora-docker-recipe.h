/* What a docker notebook's container is: the Engine's create body for one
 * workload, and its fingerprint. The policy lives here, in one place:
 * no network at all; a non-root user; the root file system read-only with
 * a private /tmp; every capability dropped and no new privileges; the
 * class's CPUs, memory (no swap) and a pids limit enforced by the Engine;
 * the workload's data directory as its home and its run directory at
 * /run/einsora, where the server listens on a Unix socket (never a
 * port); and for NVIDIA classes the GPUs placement chose (or the
 * class's count of GPUs when it chose none). The
 * fingerprint is the SHA-256 of the body without what changes from one
 * attempt to the next (the token, the attempt): a container with the
 * same fingerprint is the same recipe. The token goes only into the
 * container's environment. */
#pragma once

#include <json-glib/json-glib.h>

#include "einsora-workload-state.h"

G_BEGIN_DECLS

#define EINSORA_DOCKER_HOME "/home/jovyan"
#define EINSORA_DOCKER_RUN_DIR "/run/einsora"
#define EINSORA_DOCKER_SOCKET_NAME "notebook.sock"
#define EINSORA_DOCKER_ENDPOINT_SOCKET_NAME "endpoint.sock"
#define EINSORA_DOCKER_PIDS_LIMIT 1024

/* The labels every container of ours carries. */
#define EINSORA_DOCKER_LABEL_MACHINE "org.einsora.machine"
#define EINSORA_DOCKER_LABEL_WORKLOAD "org.einsora.workload"
#define EINSORA_DOCKER_LABEL_ATTEMPT "org.einsora.attempt"
#define EINSORA_DOCKER_LABEL_FINGERPRINT "org.einsora.fingerprint"
#define EINSORA_DOCKER_LABEL_KIND "org.einsora.kind"
#define EINSORA_DOCKER_LABEL_IMAGE "org.einsora.image"
#define EINSORA_DOCKER_LABEL_CPUS "org.einsora.cpus"
#define EINSORA_DOCKER_LABEL_MEMORY "org.einsora.memory_mib"
#define EINSORA_DOCKER_LABEL_DEVICES "org.einsora.devices"
#define EINSORA_DOCKER_LABEL_GPUS "org.einsora.gpus"
#define EINSORA_DOCKER_LABEL_SERVER "org.einsora.server"
#define EINSORA_DOCKER_LABEL_MODEL "org.einsora.model"
#define EINSORA_DOCKER_LABEL_MODEL_DIGEST "org.einsora.model_digest"

typedef struct {
    EinsoraWorkloadKind kind;
    const char *image;    /* the runtime's reference, e.g. quay.io/jupyter/...:tag */
    const char *data_dir; /* on the host; NULL for an endpoint, which keeps nothing */
    const char *run_dir;
    /* What the image serves with, as the catalog says: "jupyter" for a
     * notebook; "llama-server" (llama.cpp's, found on the image's PATH)
     * or "vllm" for an endpoint; NULL: the kind's own (Jupyter,
     * llama-server). */
    const char *server;
    /* An endpoint's: the model store's file, bound read-only, and the
     * name /v1/models gives it. */
    const char *model_path;
    const char *model_name;
    const char *model_digest;
    gint64 cpus;
    gint64 memory_mib;
    gint64 devices;
    /* Which GPUs, by index (einsora-gpu-mask.h): exactly these go in;
     * 0 leaves the choice of @devices to the Engine's NVIDIA runtime. */
    guint64 gpu_mask;
    guint uid;
    guint gid;
} EinsoraDockerRecipe;

/* The container's name on the Engine: einsora-<workload ID>. */
gchar *einsora_docker_recipe_container_name(const char *workload_id);

/* The create body without token or labels, and its fingerprint; NULL and
 * why when the recipe can't be run (a kind this driver doesn't run, a
 * server that doesn't serve it, no image, limits out of range). A
 * notebook's server is Jupyter; an endpoint's is llama-server with the
 * linux-native driver's options, or vLLM (`vllm serve --uds`, offline,
 * with shared memory for its processes), on /run/einsora/endpoint.sock
 * either way. */
JsonNode *einsora_docker_recipe_build(const EinsoraDockerRecipe *recipe, gchar **fingerprint,
                                      GError **error);

/* The variable its token is in: JUPYTER_TOKEN, or an endpoint's
 * LLAMA_API_KEY, or VLLM_API_KEY for vLLM (@server as in the recipe). */
const char *einsora_docker_recipe_token_variable(EinsoraWorkloadKind kind, const char *server);
/* Its server's socket in the run directory: notebook.sock or
 * endpoint.sock. */
const char *einsora_docker_recipe_socket_name(EinsoraWorkloadKind kind);

/* Adds the labels (machine, workload, attempt, fingerprint and what
 * rebuilds the recipe) and the token to a body from _build. */
void einsora_docker_recipe_finish(JsonNode *body, const EinsoraDockerRecipe *recipe,
                                  const char *machine_id, const char *workload_id, gint64 attempt,
                                  const char *fingerprint, const char *token);

G_END_DECLS
