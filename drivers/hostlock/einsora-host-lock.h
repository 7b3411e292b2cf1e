/* One agent per machine: an OS lock (flock) on the agent's state
 * directory, held for the life of the process, whatever the timing. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_HOST_LOCK (einsora_host_lock_get_type())
G_DECLARE_FINAL_TYPE(EinsoraHostLock, einsora_host_lock, EINSORA, HOST_LOCK, GObject)

/* Takes the lock on @state_dir (creating it 0700), or fails at once with
 * G_IO_ERROR_BUSY when another agent holds it. */
EinsoraHostLock *einsora_host_lock_acquire(const char *state_dir, GError **error);

G_END_DECLS
