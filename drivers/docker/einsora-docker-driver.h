/* The docker driver: notebooks (Jupyter) and endpoints (llama.cpp's
 * llama-server, one model each) in containers of a local rootful Docker
 * Engine, through its API on its Unix socket. Weak isolation (the
 * driver table says so, and the agent runs only the machine owner's
 * workloads on it). Each notebook is a container made from
 * einsora-docker-recipe.h's policy, named einsora-<workload ID> and
 * labelled with this machine, the workload, the attempt and the recipe's
 * fingerprint; its data directory is kept across stop and start (a stop
 * removes the container), and remove deletes both.
 *
 * What it sees comes from the Engine: a list of this machine's
 * containers every poll interval (the first one adopts what a previous
 * daemon started: same container and attempt when the fingerprint
 * matches, sandbox-changed when it doesn't), an exit read as out of
 * memory when the Engine says OOMKilled, and a readiness check on the
 * server's socket. An Engine that stops answering is reported as the
 * runtime unreachable and decides nothing; starts wait for it. Images are
 * pulled when missing, with progress as the status's pull progress. */
#pragma once

#include <gio/gio.h>

#include "einsora-agent-driver.h"

G_BEGIN_DECLS

#define EINSORA_DOCKER_DRIVER_NAME "docker"
#define EINSORA_DOCKER_POLL_INTERVAL_MS_DEFAULT 1000
#define EINSORA_DOCKER_READY_TIMEOUT_MS_DEFAULT 120000

typedef struct {
    /* The Engine's socket; NULL for /var/run/docker.sock. */
    const char *socket_path;
    /* Each notebook's data is <data_dir>/<id>/, its home in the container. */
    const char *data_dir;
    /* <run_dir>/<id>/notebook.sock: where its server listens. */
    const char *run_dir;
    /* The model store (<dir>/blobs/sha256-<hex>) endpoints load from,
     * bound read-only into their container; NULL: no endpoints. */
    const char *models_dir;
    /* Labels the containers as this machine's: another daemon's on the
     * same Engine are never touched. */
    const char *machine_id;
} EinsoraDockerDriverConfig;

#define EINSORA_TYPE_DOCKER_DRIVER (einsora_docker_driver_get_type())
G_DECLARE_FINAL_TYPE(EinsoraDockerDriver, einsora_docker_driver, EINSORA, DOCKER_DRIVER, GObject)

/* Checks the configuration and creates the directories; it asks the
 * Engine (and adopts) from its first poll, at once. */
EinsoraDockerDriver *einsora_docker_driver_new(const EinsoraDockerDriverConfig *config,
                                               GError **error);

void einsora_docker_driver_set_poll_interval(EinsoraDockerDriver *self, guint interval_ms);
void einsora_docker_driver_set_ready_timeout(EinsoraDockerDriver *self, guint timeout_ms);
/* Seconds the Engine waits after SIGTERM before SIGKILL on a stop. */
void einsora_docker_driver_set_stop_grace(EinsoraDockerDriver *self, guint seconds);
/* Whether the Engine answered its last poll. */
gboolean einsora_docker_driver_engine_answers(EinsoraDockerDriver *self);

G_END_DECLS
