#include "einsora-unix-socket.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The user who owns @path's directory (not following a link there):
 * a workload that runs as another user (a container's) owns its run
 * directory and the socket it binds in it. */
static gboolean
directory_owner(const char *path, uid_t *uid)
{
    g_autofree gchar *dir = g_path_get_dirname(path);
    struct stat st;

    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return FALSE;
    *uid = st.st_uid;
    return TRUE;
}

gchar *
einsora_unix_socket_open_own(const char *path, int *fd, GError **error)
{
    struct stat st;
    uid_t dir_uid = 0;

    *fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) {
        int saved = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "can't open %s: %s", path,
                    g_strerror(saved));
        return NULL;
    }
    if (fstat(*fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
        (st.st_uid != geteuid() && !(directory_owner(path, &dir_uid) && dir_uid == st.st_uid))) {
        close(*fd);
        *fd = -1;
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s is not this user's socket", path);
        return NULL;
    }
    return g_strdup_printf("/proc/self/fd/%d", *fd);
}
