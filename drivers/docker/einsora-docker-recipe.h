/* What a docker notebook's container is: the Engine's create body for one
 * workload, and its fingerprint. The policy lives here, in one place:
 * no network at all; a non-root user; the root file system read-only with
 * a private /tmp; every capability dropped and no new privileges; the
 * class's CPUs, memory (no swap) and a pids limit enforced by the Engine;
 * the workload's data directory as its home and its run directory at
 * /run/einsora, where the server listens on a Unix socket (never a
 * port); and for NVIDIA classes the class's count of GPUs. The
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

typedef struct {
    EinsoraWorkloadKind kind;
    const char *image;    /* the runtime's reference, e.g. quay.io/jupyter/...:tag */
    const char *data_dir; /* on the host; NULL for a kind that keeps nothing */
    const char *run_dir;
    gint64 cpus;
    gint64 memory_mib;
    gint64 devices;
    guint uid;
    guint gid;
} EinsoraDockerRecipe;

/* The container's name on the Engine: einsora-<workload ID>. */
gchar *einsora_docker_recipe_container_name(const char *workload_id);

/* The create body without token or labels, and its fingerprint; NULL and
 * why when the recipe can't be run (a kind this driver doesn't run, no
 * image, limits out of range). */
JsonNode *einsora_docker_recipe_build(const EinsoraDockerRecipe *recipe, gchar **fingerprint,
                                      GError **error);

/* Adds the labels (machine, workload, attempt, fingerprint and what
 * rebuilds the recipe) and the token to a body from _build. */
void einsora_docker_recipe_finish(JsonNode *body, const EinsoraDockerRecipe *recipe,
                                  const char *machine_id, const char *workload_id, gint64 attempt,
                                  const char *fingerprint, const char *token);

G_END_DECLS
