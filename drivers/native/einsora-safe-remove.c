#define G_LOG_DOMAIN "einsora-native"

#include "einsora-safe-remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deleting a tree without following links: a notebook can make a link
 * to anything, and only what is inside its own directories goes. Every
 * step works relative to an open directory (openat, unlinkat), so a
 * name swapped for a link mid-way is never followed, and a path too
 * long to name never stops it: directories deeper than MAX_DEPTH are
 * moved up to the top and deleted from there. */
#define MAX_DEPTH 32

static gboolean
io_error(GError **error, const char *what, const char *name)
{
    int saved = errno;

    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't %s %s: %s", what, name,
                g_strerror(saved));
    return FALSE;
}

typedef struct {
    int top_fd;
    guint64 serial; /* names for what moves up, never reused */
    guint moved_up; /* this pass */
} Removal;

/* Empties the directory @dir_fd; what lies deeper than MAX_DEPTH moves
 * up to the top, to be emptied on another pass. */
static gboolean
empty_directory(Removal *removal, int dir_fd, guint depth, GError **error)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    /* A description of its own: a dup would share (and exhaust) the
     * directory's read position for the next pass. */
    int list_fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    struct dirent *entry;

    if (dir == NULL) {
        if (list_fd >= 0)
            close(list_fd);
        return io_error(error, "read", "a directory");
    }
    while ((entry = readdir(dir)) != NULL) {
        if (!g_str_equal(entry->d_name, ".") && !g_str_equal(entry->d_name, ".."))
            g_ptr_array_add(names, g_strdup(entry->d_name));
    }
    closedir(dir);
    for (guint i = 0; i < names->len; i++) {
        const char *name = g_ptr_array_index(names, i);
        struct stat st;
        int child;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            return io_error(error, "read", name);
        }
        if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT)
                return io_error(error, "delete", name);
            continue;
        }
        if (depth >= MAX_DEPTH) {
            int moved;
            do {
                g_autofree gchar *up =
                    g_strdup_printf(".einsora-deleting-%" G_GUINT64_FORMAT, removal->serial++);
                moved = renameat2(dir_fd, name, removal->top_fd, up, RENAME_NOREPLACE);
            } while (moved != 0 && errno == EEXIST);
            if (moved != 0)
                return io_error(error, "move", name);
            removal->moved_up++;
            continue;
        }
        /* A directory the notebook made unreadable is still ours. */
        if ((st.st_mode & 0700) != 0700)
            fchmodat(dir_fd, name, (st.st_mode & 07777) | 0700, 0);
        child = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0)
            return io_error(error, "open", name);
        if (!empty_directory(removal, child, depth + 1, error)) {
            close(child);
            return FALSE;
        }
        close(child);
        if (unlinkat(dir_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
            return io_error(error, "delete", name);
    }
    return TRUE;
}

gboolean
einsora_safe_remove_tree(const char *path, GError **error)
{
    struct stat st;
    int top;
    Removal removal = {-1, 0, 0};
    gboolean ok = TRUE;

    /* The notebook may have made its own directory unreadable. */
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0700) != 0700)
        g_chmod(path, (st.st_mode & 07777) | 0700);
    top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    removal.top_fd = top;

    if (top < 0) {
        if (errno == ENOENT)
            return TRUE;
        /* Not a directory (or a link): just that name goes. */
        if ((errno == ENOTDIR || errno == ELOOP) && (g_unlink(path) == 0 || errno == ENOENT))
            return TRUE;
        return io_error(error, "delete", path);
    }
    /* Each pass empties what is within reach and moves deeper parts up;
     * a tree n levels deep takes about n / MAX_DEPTH passes. */
    do {
        removal.moved_up = 0;
        ok = empty_directory(&removal, top, 0, error);
    } while (ok && removal.moved_up > 0);
    close(top);
    if (ok && g_rmdir(path) != 0 && errno != ENOENT)
        return io_error(error, "delete", path);
    return ok;
}

static void
remove_trees_in_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    const char *const *paths = task_data;
    GError *error = NULL;

    for (guint i = 0; paths[i] != NULL; i++) {
        if (!einsora_safe_remove_tree(paths[i], &error)) {
            g_task_return_error(task, error);
            return;
        }
    }
    g_task_return_boolean(task, TRUE);
}

void
einsora_safe_remove_trees_async(GObject *owner, const char *const *paths,
                                GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(owner, NULL, callback, user_data);

    g_task_set_source_tag(task, einsora_safe_remove_trees_async);
    g_task_set_task_data(task, g_strdupv((gchar **)paths), (GDestroyNotify)g_strfreev);
    g_task_run_in_thread(task, remove_trees_in_thread);
}

gboolean
einsora_safe_remove_trees_finish(GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == einsora_safe_remove_trees_async,
                         FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}
