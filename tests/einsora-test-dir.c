#include "einsora-test-dir.h"

#include <gio/gio.h>
#include <sys/stat.h>

gchar *
einsora_test_dir_new(void)
{
    g_autoptr(GError) error = NULL;
    gchar *path = g_dir_make_tmp("einsora-test-XXXXXX", &error);

    g_assert_no_error(error);
    /* g_dir_make_tmp() already uses 0700; say it, since the store depends
     * on it. */
    g_assert_cmpint(chmod(path, 0700), ==, 0);
    return path;
}

static void
remove_tree(GFile *file)
{
    g_autoptr(GFileEnumerator) children = g_file_enumerate_children(
        file, G_FILE_ATTRIBUTE_STANDARD_NAME, G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);
    if (children != NULL) {
        GFileInfo *info;
        GFile *child;
        while (g_file_enumerator_iterate(children, &info, &child, NULL, NULL) && info != NULL)
            remove_tree(child);
    }
    g_file_delete(file, NULL, NULL);
}

void
einsora_test_dir_remove(const char *path)
{
    g_autoptr(GFile) dir = NULL;

    if (path == NULL)
        return;
    /* Make sure a test that tightened modes cannot stop the cleanup. */
    chmod(path, 0700);
    dir = g_file_new_for_path(path);
    remove_tree(dir);
}
