#include "einsora-unix-socket.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

gchar *
einsora_unix_socket_open_own(const char *path, int *fd, GError **error)
{
    struct stat st;

    *fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) {
        int saved = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "can't open %s: %s", path,
                    g_strerror(saved));
        return NULL;
    }
    if (fstat(*fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
        close(*fd);
        *fd = -1;
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s is not this user's socket", path);
        return NULL;
    }
    return g_strdup_printf("/proc/self/fd/%d", *fd);
}
