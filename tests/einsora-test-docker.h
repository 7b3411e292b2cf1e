/* A private Docker Engine for tests: Debian's dockerd with its own data
 * root, exec root and socket under a test directory, no host network
 * changes (no iptables, no bridge), started in about a second and
 * stopped (with every container it ran) after. The notebook image is made
 * from this machine's own Jupyter (tests/docker/make-jupyter-image.sh,
 * cached by the script's checksum) and imported under the reference the
 * catalog's jupyter-notebook image names, since nothing can be pulled
 * here. Needs root (dockerd does). */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define EINSORA_TEST_DOCKER_JUPYTER_IMAGE "quay.io/jupyter/minimal-notebook:python-3.12"

typedef struct {
    gchar *dir;
    gchar *socket_path;
    gchar *host; /* unix://<socket_path> */
    gchar *log_path;
    GPid pid;
} EinsoraTestDocker;

/* Why the docker tests can't run here (no dockerd, not root), or NULL. */
gchar *einsora_test_docker_unavailable(void);

EinsoraTestDocker *einsora_test_docker_start(void);
void einsora_test_docker_stop(EinsoraTestDocker *docker);
/* SIGSTOP and SIGCONT: an Engine that stops answering, then answers. */
void einsora_test_docker_pause(EinsoraTestDocker *docker);
void einsora_test_docker_resume(EinsoraTestDocker *docker);
/* Makes (or takes from the cache) the notebook image's tar and imports
 * it as @reference. */
void einsora_test_docker_load_jupyter(EinsoraTestDocker *docker, const char *reference);
/* Makes the endpoint image from @llama_server (tests/docker/
 * make-llama-image.sh: a few MB, made each time) and imports it as
 * @reference. */
void einsora_test_docker_load_llama(EinsoraTestDocker *docker, const char *llama_server,
                                    const char *reference);
/* Runs the docker CLI against this Engine (test set-up only: the
 * driver itself speaks the API); its standard output. */
gchar *einsora_test_docker_cli(EinsoraTestDocker *docker, const char *const *args);

/* Debian's docker-registry (the distribution registry) on a free
 * loopback port, which the Engine trusts without TLS (127.0.0.0/8 is an
 * insecure registry by default): "127.0.0.1:PORT". */
typedef struct {
    gchar *dir;
    gchar *address;
    GPid pid;
} EinsoraTestRegistry;

/* NULL when docker-registry isn't installed. */
EinsoraTestRegistry *einsora_test_registry_start(void);
void einsora_test_registry_stop(EinsoraTestRegistry *registry);
/* Pushes @reference (an image the Engine has) to the registry as
 * @name:@tag, then removes every local tag of that image, so the
 * registry is the only place it can come from. */
void einsora_test_docker_push_only(EinsoraTestDocker *docker, EinsoraTestRegistry *registry,
                                   const char *reference, const char *name, const char *tag);

/* GET /v1.41@path on the Engine: its status, and its JSON in @json. */
guint einsora_test_docker_get(EinsoraTestDocker *docker, const char *path, JsonNode **json);

G_END_DECLS
