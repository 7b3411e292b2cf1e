#include "einsora-test-llama.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <unistd.h>

gchar *
einsora_test_llama_server(void)
{
    const char *dir = g_getenv("EINSORA_LLAMA_DIR");
    gchar *path;

    if (dir == NULL) {
        g_test_skip("EINSORA_LLAMA_DIR is not set (packaging/dev/llama-server.sh prints it)");
        return NULL;
    }
    path = g_build_filename(dir, "bin", "llama-server", NULL);
    g_assert_true(g_file_test(path, G_FILE_TEST_IS_EXECUTABLE));
    return path;
}

void
einsora_test_llama_make_model(const char *path)
{
    const char *source = g_getenv("EINSORA_SOURCE_ROOT");
    g_autofree gchar *share = g_build_filename(g_getenv("EINSORA_LLAMA_DIR"), "share", NULL);
    g_autofree gchar *script = NULL;
    g_autofree gchar *err = NULL;
    g_autoptr(GError) error = NULL;
    gint status = 0;

    g_assert_nonnull(source);
    script = g_build_filename(source, "tests", "models", "make-tiny-model.py", NULL);
    {
        /* Debian's python3, which python3-numpy is for (not another one on PATH). */
        const char *argv[] = {"/usr/bin/python3", script, share, path, NULL};

        g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL,
                                   &err, &status, &error));
        g_assert_no_error(error);
        if (!g_spawn_check_wait_status(status, NULL))
            g_error("make-tiny-model.py failed: %s", err);
    }
}

gchar *
einsora_test_llama_store_model(const char *path, const char *models_dir)
{
    g_autoptr(GMappedFile) file = g_mapped_file_new(path, FALSE, NULL);
    g_autofree gchar *hex = NULL;
    g_autofree gchar *blobs = g_build_filename(models_dir, "blobs", NULL);
    g_autofree gchar *name = NULL;
    g_autofree gchar *blob = NULL;

    g_assert_nonnull(file);
    hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256,
                                      (const guchar *)g_mapped_file_get_contents(file),
                                      g_mapped_file_get_length(file));
    g_assert_cmpint(g_mkdir_with_parents(blobs, 0700), ==, 0);
    name = g_strdup_printf("sha256-%s", hex);
    blob = g_build_filename(blobs, name, NULL);
    g_assert_cmpint(link(path, blob), ==, 0);
    return g_strdup_printf("sha256:%s", hex);
}

gchar *
einsora_test_llama_ban_bytes(void)
{
    GString *bias = g_string_new("{");

    for (guint token = 0; token <= 258; token++)
        g_string_append_printf(bias, "%s\"%u\": -100", token == 0 ? "" : ", ", token);
    g_string_append_c(bias, '}');
    return g_string_free(bias, FALSE);
}
