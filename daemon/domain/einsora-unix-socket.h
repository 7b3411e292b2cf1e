/* Connecting to a workload's Unix socket in a directory the workload can
 * write: the one way both the access proxy and the native driver do it. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Opens @path without following a link (O_PATH | O_NOFOLLOW), checks it
 * is a socket of this user or of the user who owns its directory (a
 * container's user, in the run directory made for it), and returns "/proc/self/fd/N" to connect to
 * through that very file (so a link swapped in afterwards changes
 * nothing). *@fd stays open until the connection is made; the caller
 * closes it. NULL with G_FILE_ERROR on failure, *@fd then -1. */
gchar *einsora_unix_socket_open_own(const char *path, int *fd, GError **error);

G_END_DECLS
