/* Whether Docker answers on its Unix socket: GET /_ping, which a working
 * daemon answers "200 OK" with the body "OK". Asked with a time limit, so a
 * stuck daemon reads as no Docker rather than as a stuck agent. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_DOCKER_SOCKET "/var/run/docker.sock"

/* @socket_path: NULL for EINSORA_DOCKER_SOCKET. @timeout_ms: the whole
 * exchange, connecting included; past it the probe fails with
 * G_IO_ERROR_TIMED_OUT. */
void einsora_docker_probe_async(const char *socket_path, guint timeout_ms,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);
/* TRUE when Docker answered; otherwise FALSE with why: the connection's
 * own error (nothing listens), G_IO_ERROR_TIMED_OUT, G_IO_ERROR_FAILED (an
 * answer other than 200) or G_IO_ERROR_INVALID_DATA (200 without "OK"). */
gboolean einsora_docker_probe_finish(GAsyncResult *result, GError **error);

G_END_DECLS
