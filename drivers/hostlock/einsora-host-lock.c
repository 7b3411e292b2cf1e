#define G_LOG_DOMAIN "einsora-hostlock"

#include "einsora-host-lock.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/file.h>
#include <unistd.h>

#define LOCK_NAME "agent.lock"

struct _EinsoraHostLock {
    GObject parent_instance;
    int fd;
};

G_DEFINE_FINAL_TYPE(EinsoraHostLock, einsora_host_lock, G_TYPE_OBJECT)

static void
einsora_host_lock_finalize(GObject *object)
{
    EinsoraHostLock *self = EINSORA_HOST_LOCK(object);

    /* Closing the descriptor releases the lock. */
    if (self->fd >= 0)
        close(self->fd);
    G_OBJECT_CLASS(einsora_host_lock_parent_class)->finalize(object);
}

static void
einsora_host_lock_class_init(EinsoraHostLockClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_host_lock_finalize;
}

static void
einsora_host_lock_init(EinsoraHostLock *self)
{
    self->fd = -1;
}

EinsoraHostLock *
einsora_host_lock_acquire(const char *state_dir, GError **error)
{
    g_autoptr(EinsoraHostLock) self = g_object_new(EINSORA_TYPE_HOST_LOCK, NULL);
    g_autofree gchar *path = g_build_filename(state_dir, LOCK_NAME, NULL);

    if (g_mkdir_with_parents(state_dir, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't create %s: %s",
                    state_dir, g_strerror(errno));
        return NULL;
    }
    self->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (self->fd < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't open %s: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    if (flock(self->fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        if (saved == EWOULDBLOCK) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY,
                        "another Einsora agent already runs on this machine (it holds %s)", path);
            return NULL;
        }
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't lock %s: %s", path,
                    g_strerror(saved));
        return NULL;
    }
    return g_steal_pointer(&self);
}
