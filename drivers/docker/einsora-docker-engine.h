/* The Docker Engine API, over its Unix socket: the one way the docker
 * driver talks to Docker (never the docker CLI). Every path is versioned
 * (EINSORA_DOCKER_API_VERSION, which Debian 12's Engine 20.10 and every
 * later one serve); bodies are JSON through json-glib. An answer's
 * bodies are bounded, so a broken Engine can't make the daemon grow.
 * Errors carry the Engine's own message, for the log only. */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define EINSORA_DOCKER_API_VERSION "v1.41"
#define EINSORA_DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"

#define EINSORA_DOCKER_ERROR (einsora_docker_error_quark())
GQuark einsora_docker_error_quark(void);

typedef enum {
    /* 404: no such container or image. */
    EINSORA_DOCKER_ERROR_NOT_FOUND,
    /* 409: a name in use, a container in the wrong state. */
    EINSORA_DOCKER_ERROR_CONFLICT,
    /* 304 to start or stop: it already was. */
    EINSORA_DOCKER_ERROR_NOT_MODIFIED,
    /* Any other answer that isn't 2xx, or a body that isn't JSON. */
    EINSORA_DOCKER_ERROR_FAILED,
} EinsoraDockerError;

#define EINSORA_TYPE_DOCKER_ENGINE (einsora_docker_engine_get_type())
G_DECLARE_FINAL_TYPE(EinsoraDockerEngine, einsora_docker_engine, EINSORA, DOCKER_ENGINE, GObject)

/* @socket_path: NULL for EINSORA_DOCKER_DEFAULT_SOCKET. Nothing is asked
 * until a call. */
EinsoraDockerEngine *einsora_docker_engine_new(const char *socket_path);
const char *einsora_docker_engine_get_socket_path(EinsoraDockerEngine *self);

/* Where @host (EINSORA_DOCKER_HOST: "unix:///path") says the socket is;
 * NULL and why for anything else (tcp:// is refused: the Engine's API
 * without TLS is root for anyone who reaches it). */
gchar *einsora_docker_engine_socket_from_host(const char *host, GError **error);

/* @method on /EINSORA_DOCKER_API_VERSION@path (@path starts with '/' and
 * may carry a query, already escaped), with @body as JSON or no body.
 * Gives up after @timeout_ms (G_IO_ERROR_TIMED_OUT); 0 for no limit. */
void einsora_docker_engine_call_async(EinsoraDockerEngine *self, const char *method,
                                      const char *path, JsonNode *body, guint timeout_ms,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data);
/* The answer's JSON (a null node for an empty body), or NULL and why:
 * the connection's own error, or EINSORA_DOCKER_ERROR for an answer other
 * than 2xx. */
JsonNode *einsora_docker_engine_call_finish(EinsoraDockerEngine *self, GAsyncResult *result,
                                            GError **error);

/* How far a pull is: layers complete of those seen, and bytes downloaded
 * of the layers' sizes known so far. */
typedef struct {
    guint layers_done;
    guint layers;
    guint64 bytes_done;
    guint64 bytes_total;
} EinsoraDockerPullProgress;

typedef void (*EinsoraDockerPullFunc)(const EinsoraDockerPullProgress *progress,
                                      gpointer user_data);

/* Pulls @reference ("registry/name:tag" or "name@sha256:..."), calling
 * @progress (in the caller's context) as the Engine reports layers. */
void einsora_docker_engine_pull_async(EinsoraDockerEngine *self, const char *reference,
                                      EinsoraDockerPullFunc progress, gpointer progress_data,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data);
/* FALSE with the Engine's reason (EINSORA_DOCKER_ERROR_FAILED) when the
 * pull failed, even after a 200: the Engine reports a failed pull in its
 * stream. */
gboolean einsora_docker_engine_pull_finish(EinsoraDockerEngine *self, GAsyncResult *result,
                                           GError **error);

/* A container's output, as the Engine gives it: stdout and stderr
 * interleaved, a frame at a time. */
typedef void (*EinsoraDockerLogFunc)(const guint8 *data, gsize length, gpointer user_data);
/* Follows @container's output from @since_s (a Unix time; 0: from its
 * start), calling @chunk (in the caller's context) for each frame, until
 * the container ends (TRUE), the Engine goes away or the request is
 * refused (FALSE and why), or @cancellable. Each stream holds one
 * connection of its own, never one that calls need. */
void einsora_docker_engine_follow_logs_async(EinsoraDockerEngine *self, const char *container,
                                             gint64 since_s, EinsoraDockerLogFunc chunk,
                                             gpointer chunk_data, GCancellable *cancellable,
                                             GAsyncReadyCallback callback, gpointer user_data);
gboolean einsora_docker_engine_follow_logs_finish(EinsoraDockerEngine *self, GAsyncResult *result,
                                                  GError **error);
/* @reference as the Engine's image create query: fromImage and tag. */
gchar *einsora_docker_engine_pull_query(const char *reference);

G_END_DECLS
