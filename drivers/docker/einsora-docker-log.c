#define G_LOG_DOMAIN "einsora-docker"

#include "einsora-docker-log.h"

#include "einsora-log-files.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

struct _EinsoraDockerLog {
    gchar *path;
    gchar *previous; /* <name>.log.1 */
    gsize limit;
    gsize size;
    int fd;
    gboolean failed; /* said once */
    EinsoraLogTimes *times;
};

static int
open_log(const char *path, gsize *size, GError **error)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
    struct stat st;

    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int saved = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't open %s: %s", path,
                    g_strerror(saved));
        return -1;
    }
    *size = (gsize)st.st_size;
    return fd;
}

EinsoraDockerLog *
einsora_docker_log_open(const char *dir, const char *name, gsize limit, GError **error)
{
    g_autofree gchar *file = g_strdup_printf("%s.log", name);
    g_autofree gchar *path = g_build_filename(dir, file, NULL);
    gsize size = 0;
    int fd = open_log(path, &size, error);
    EinsoraDockerLog *log;

    if (fd < 0)
        return NULL;
    log = g_new0(EinsoraDockerLog, 1);
    log->path = g_steal_pointer(&path);
    log->previous = g_strdup_printf("%s.1", log->path);
    log->limit = MAX(limit, 1);
    log->size = size;
    log->fd = fd;
    log->times = einsora_log_times_new(log->path);
    return log;
}

static void
say_failed(EinsoraDockerLog *log, const char *what, int saved)
{
    if (log->failed)
        return;
    log->failed = TRUE;
    g_message("%s: %s: %s; its output is dropped until it can be written", log->path, what,
              g_strerror(saved));
}

/* Past the limit: this file becomes the previous one and a new one
 * starts (the driver holds the only descriptor, so a rename is enough). */
static void
rotate(EinsoraDockerLog *log)
{
    g_autoptr(GError) error = NULL;
    int fd;

    if (g_rename(log->path, log->previous) != 0) {
        say_failed(log, "can't rotate", errno);
        return;
    }
    fd = open_log(log->path, &log->size, &error);
    if (fd < 0) {
        /* Written on where it was (now <name>.log.1) until one opens. */
        if (!log->failed)
            g_message("%s", error->message);
        log->failed = TRUE;
        return;
    }
    close(log->fd);
    log->fd = fd;
    einsora_log_times_rotated(log->times);
}

void
einsora_docker_log_write(EinsoraDockerLog *log, const guint8 *data, gsize length)
{
    while (length > 0) {
        ssize_t written = write(log->fd, data, length);

        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            say_failed(log, "can't write", written < 0 ? errno : ENOSPC);
            return;
        }
        log->failed = FALSE;
        log->size += (gsize)written;
        data += written;
        length -= (gsize)written;
    }
    einsora_log_times_note(log->times, (gint64)log->size, g_get_real_time() / 1000);
    if (log->size > log->limit)
        rotate(log);
}

void
einsora_docker_log_close(EinsoraDockerLog *log)
{
    if (log == NULL)
        return;
    if (log->fd >= 0)
        close(log->fd);
    einsora_log_times_free(log->times);
    g_free(log->path);
    g_free(log->previous);
    g_free(log);
}

gint64
einsora_docker_log_last_written(const char *dir, const char *name)
{
    g_autofree gchar *file = g_strdup_printf("%s.log", name);
    g_autofree gchar *path = g_build_filename(dir, file, NULL);
    struct stat st;

    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    return (gint64)st.st_mtime;
}

void
einsora_docker_log_remove(const char *dir, const char *name)
{
    einsora_log_files_remove(dir, name);
}
