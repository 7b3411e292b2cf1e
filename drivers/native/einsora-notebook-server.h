/* One running Jupyter server as the native driver sees it: its Unix
 * socket and its per-run token. The token lives only here, in memory
 * (wiped when freed), and in the server's own environment; it is never
 * written, logged or put in a URL. Readiness is asked over the socket
 * with the token: the server is ready once GET /api/status answers 200. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_NOTEBOOK_SERVER (einsora_notebook_server_get_type())
G_DECLARE_FINAL_TYPE(EinsoraNotebookServer, einsora_notebook_server, EINSORA, NOTEBOOK_SERVER,
                     GObject)

EinsoraNotebookServer *einsora_notebook_server_new(const char *socket_path, const char *token);

/* A new random token: 32 bytes from the kernel, as 64 hex digits. */
gchar *einsora_notebook_server_new_token(GError **error);

const char *einsora_notebook_server_get_socket_path(EinsoraNotebookServer *self);
const char *einsora_notebook_server_get_token(EinsoraNotebookServer *self);

/* The socket as an address to connect to, safely: the notebook can write
 * the directory its socket is in, so it could put a link to some other
 * socket there. The path is opened without following links, must be a
 * socket of this user, and the address names that very file through
 * /proc/self/fd; @fd (O_PATH) must stay open until connected, then be
 * closed by the caller. */
GSocketAddress *einsora_notebook_server_open_address(EinsoraNotebookServer *self, int *fd,
                                                     GError **error);

/* TRUE once it answers GET /api/status with 200 within @timeout_ms; a
 * fresh connection each time (never reused). */
void einsora_notebook_server_check_ready_async(EinsoraNotebookServer *self, guint timeout_ms,
                                               GCancellable *cancellable,
                                               GAsyncReadyCallback callback, gpointer user_data);
gboolean einsora_notebook_server_check_ready_finish(EinsoraNotebookServer *self,
                                                    GAsyncResult *result, GError **error);

G_END_DECLS
