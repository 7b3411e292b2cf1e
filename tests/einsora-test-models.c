#include "einsora-test-models.h"

gchar *
einsora_test_model_seed_path(void)
{
    const char *source = g_getenv("EINSORA_SOURCE_ROOT");

    g_assert_nonnull(source);
    return g_build_filename(source, "tests", "fuzz", "corpus", "gguf", "seed-00", NULL);
}

EinsoraModelImport *
einsora_test_model_store_wait(EinsoraModelStore *store, const char *id)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraModelImport) import = einsora_model_store_get_import(store, id, &error);

        g_assert_no_error(error);
        if (import->state != EINSORA_MODEL_IMPORT_IMPORTING)
            return g_steal_pointer(&import);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(2000);
    }
}

EinsoraModelStore *
einsora_test_model_store_new(const char *dir, const char *name)
{
    g_autofree gchar *path = g_build_filename(dir, "models", NULL);
    g_autofree gchar *seed = einsora_test_model_seed_path();
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelStore) store = einsora_model_store_new(path, &error);
    g_autoptr(EinsoraModelImport) started = NULL;
    g_autoptr(EinsoraModelImport) done = NULL;

    g_assert_no_error(error);
    /* At the epoch: UUIDv7s are made in order, so an import ID of now
     * would push the IDs of a test's manual clock past it. */
    started = einsora_model_store_import(store, name, seed, 0, &error);
    g_assert_no_error(error);
    done = einsora_test_model_store_wait(store, started->id);
    g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
    return g_steal_pointer(&store);
}
