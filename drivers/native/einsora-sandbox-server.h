/* One running server in a sandbox as the native driver sees it (a
 * notebook's Jupyter, an endpoint's llama-server): its Unix socket and
 * its per-run token (an endpoint's API key). The token lives only here,
 * in memory (wiped when freed), and in the server's own environment; it
 * is never written, logged or put in a URL. Readiness is asked over the
 * socket with the token: Jupyter is ready once GET /api/status answers
 * 200, llama-server once GET /health does (503 while it loads). */
#pragma once

#include <gio/gio.h>

#include "einsora-workload-state.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_SANDBOX_SERVER (einsora_sandbox_server_get_type())
G_DECLARE_FINAL_TYPE(EinsoraSandboxServer, einsora_sandbox_server, EINSORA, SANDBOX_SERVER, GObject)

EinsoraSandboxServer *einsora_sandbox_server_new(EinsoraWorkloadKind kind, const char *socket_path,
                                                 const char *token);

/* A new random token (or API key): 32 bytes from the kernel, as 64 hex digits. */
gchar *einsora_sandbox_server_new_token(GError **error);

const char *einsora_sandbox_server_get_socket_path(EinsoraSandboxServer *self);
const char *einsora_sandbox_server_get_token(EinsoraSandboxServer *self);

/* The socket as an address to connect to, safely: the notebook can write
 * the directory its socket is in, so it could put a link to some other
 * socket there. The path is opened without following links, must be a
 * socket of this user, and the address names that very file through
 * /proc/self/fd; @fd (O_PATH) must stay open until connected, then be
 * closed by the caller. */
GSocketAddress *einsora_sandbox_server_open_address(EinsoraSandboxServer *self, int *fd,
                                                    GError **error);

/* TRUE once it answers GET /api/status with 200 within @timeout_ms; a
 * fresh connection each time (never reused). */
void einsora_sandbox_server_check_ready_async(EinsoraSandboxServer *self, guint timeout_ms,
                                              GCancellable *cancellable,
                                              GAsyncReadyCallback callback, gpointer user_data);
gboolean einsora_sandbox_server_check_ready_finish(EinsoraSandboxServer *self, GAsyncResult *result,
                                                   GError **error);

/* GET @path (as "/api/status") over the socket with the token, a fresh
 * connection each time; the body of a 200, at most @max_bytes (a bigger
 * one is an error), else an error. */
void einsora_sandbox_server_get_async(EinsoraSandboxServer *self, const char *path,
                                      guint timeout_ms, gsize max_bytes, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data);
GBytes *einsora_sandbox_server_get_finish(EinsoraSandboxServer *self, GAsyncResult *result,
                                          GError **error);

G_END_DECLS
