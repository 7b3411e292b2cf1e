/* Other tools' models on this machine: a fake Ollama directory (its
 * manifests and blobs as `ollama pull` leaves them) and a fake LM Studio
 * one under a private HOME, found by name, refused when a name would
 * leave them, and imported into the model store: Ollama's blob linked
 * (its files are never rewritten), LM Studio's copied. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "einsora-error.h"
#include "einsora-model-finder.h"
#include "einsora-model-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-models.h"

static gchar *home;

static gchar *
seed_digest_hex(void)
{
    g_autofree gchar *seed = einsora_test_model_seed_path();
    g_autofree gchar *contents = NULL;
    gsize length = 0;

    g_assert_true(g_file_get_contents(seed, &contents, &length, NULL));
    return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)contents, length);
}

static void
write_file(const char *path, const char *contents, gssize length)
{
    g_autofree gchar *dir = g_path_get_dirname(path);

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_assert_true(g_file_set_contents(path, contents, length, NULL));
}

/* An Ollama model as `ollama pull` leaves it: a manifest whose model
 * layer names a blob by its SHA-256. */
static void
add_ollama_model(const char *root, const char *space, const char *model, const char *tag)
{
    g_autofree gchar *seed = einsora_test_model_seed_path();
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    g_autofree gchar *hex = seed_digest_hex();
    g_autofree gchar *blob_name = g_strdup_printf("sha256-%s", hex);
    g_autofree gchar *blob = g_build_filename(root, "blobs", blob_name, NULL);
    g_autofree gchar *manifest =
        g_build_filename(root, "manifests", "registry.ollama.ai", space, model, tag, NULL);
    g_autofree gchar *json = g_strdup_printf(
        "{\"schemaVersion\": 2, \"layers\": ["
        "{\"mediaType\": \"application/vnd.ollama.image.template\", \"digest\": "
        "\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"},"
        "{\"mediaType\": \"application/vnd.ollama.image.model\", \"digest\": \"sha256:%s\", "
        "\"size\": 548}]}",
        hex);

    g_assert_true(g_file_get_contents(seed, &contents, &length, NULL));
    write_file(blob, contents, (gssize)length);
    write_file(manifest, json, -1);
}

static void
add_lmstudio_model(const char *relative)
{
    g_autofree gchar *seed = einsora_test_model_seed_path();
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    g_autofree gchar *path = g_build_filename(home, ".lmstudio", "models", relative, NULL);

    g_assert_true(g_file_get_contents(seed, &contents, &length, NULL));
    write_file(path, contents, (gssize)length);
}

static const EinsoraFoundModel *
find(GPtrArray *found, const char *source)
{
    for (guint i = 0; i < found->len; i++) {
        const EinsoraFoundModel *model = found->pdata[i];
        if (g_str_equal(model->source, source))
            return model;
    }
    g_error("%s wasn't found", source);
    return NULL;
}

static void
test_found_and_refused(void)
{
    g_autofree gchar *ollama = g_build_filename(home, "ollama-models", NULL);
    g_autoptr(GPtrArray) found = NULL;
    const EinsoraFoundModel *model;
    static const char *const refused[] = {
        "ollama:../../etc:passwd",
        "ollama:tiny:..",
        "ollama:a/b/c:1",
        "ollama:tiny:missing",
        "ollama:",
        "lmstudio:../x/y.gguf",
        "lmstudio:pub/repo/x.bin",
        "lmstudio:/etc/passwd.gguf",
        "lmstudio:pub/repo/none.gguf",
        "lmstudio:pub//tiny.gguf",
    };

    g_setenv("OLLAMA_MODELS", ollama, TRUE);
    add_ollama_model(ollama, "library", "tiny", "1m");
    add_ollama_model(ollama, "someone", "theirs", "latest");
    add_lmstudio_model("pub/repo/tiny.gguf");

    found = einsora_model_finder_list();
    g_assert_cmpuint(found->len, ==, 3);
    model = find(found, "ollama:tiny:1m");
    g_assert_true(model->immutable);
    g_assert_cmpint(model->size, ==, 548);
    g_assert_true(g_str_has_prefix(model->path, ollama));
    find(found, "ollama:someone/theirs:latest");
    model = find(found, "lmstudio:pub/repo/tiny.gguf");
    g_assert_false(model->immutable);

    /* A tag defaults to latest, as in Ollama. */
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraFoundModel) latest =
            einsora_model_finder_resolve("ollama:someone/theirs", &error);
        g_assert_no_error(error);
        g_assert_nonnull(latest);
    }
    for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraFoundModel) none = einsora_model_finder_resolve(refused[i], &error);

        g_test_message("%s: %s", refused[i], error != NULL ? error->message : "(found)");
        g_assert_null(none);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
}

static void
test_imported(void)
{
    g_autofree gchar *ollama = g_build_filename(home, "ollama-models", NULL);
    g_autofree gchar *dir = g_build_filename(home, "store", NULL);
    g_autofree gchar *hex = seed_digest_hex();
    g_autofree gchar *blob_name = g_strdup_printf("sha256-%s", hex);
    g_autofree gchar *ollama_blob = g_build_filename(ollama, "blobs", blob_name, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelStore) store = NULL;
    g_autoptr(EinsoraModelImport) started = NULL;
    g_autoptr(EinsoraModelImport) done = NULL;
    g_autoptr(EinsoraModelManifest) manifest = NULL;
    g_autofree gchar *blob = NULL;
    struct stat theirs, ours;

    g_setenv("OLLAMA_MODELS", ollama, TRUE);
    add_ollama_model(ollama, "library", "tiny", "1m");
    store = einsora_model_store_new(dir, &error);
    g_assert_no_error(error);

    started = einsora_model_store_import(store, "tiny", "ollama:tiny:1m", 0, &error);
    g_assert_no_error(error);
    done = einsora_test_model_store_wait(store, started->id);
    g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
    manifest = einsora_model_store_lookup(store, "tiny", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(manifest->source, ==, "ollama:tiny:1m");
    g_assert_cmpstr(manifest->digest + strlen("sha256:"), ==, hex);
    /* Ollama's file, linked: one copy on the disk. */
    blob = einsora_model_store_blob_path(store, manifest->digest);
    g_assert_cmpint(stat(ollama_blob, &theirs), ==, 0);
    g_assert_cmpint(stat(blob, &ours), ==, 0);
    g_assert_cmpuint(theirs.st_ino, ==, ours.st_ino);

    /* LM Studio's, a user's download: copied (or cloned), never linked. */
    add_lmstudio_model("pub/repo/other.gguf");
    {
        g_autoptr(EinsoraModelImport) again = NULL;
        g_autoptr(EinsoraModelImport) finished = NULL;
        g_autofree gchar *source =
            g_build_filename(home, ".lmstudio", "models", "pub", "repo", "other.gguf", NULL);
        struct stat file;

        g_assert_true(einsora_model_store_remove(store, "tiny", &error));
        g_assert_no_error(error);
        /* Removing ours leaves Ollama's. */
        g_assert_false(g_file_test(blob, G_FILE_TEST_EXISTS));
        g_assert_true(g_file_test(ollama_blob, G_FILE_TEST_IS_REGULAR));
        again =
            einsora_model_store_import(store, "other", "lmstudio:pub/repo/other.gguf", 0, &error);
        g_assert_no_error(error);
        finished = einsora_test_model_store_wait(store, again->id);
        g_assert_cmpint(finished->state, ==, EINSORA_MODEL_IMPORT_DONE);
        g_assert_cmpint(stat(source, &file), ==, 0);
        g_assert_cmpint(stat(blob, &ours), ==, 0);
        g_assert_cmpuint(file.st_ino, !=, ours.st_ino);
        g_assert_cmpint(ours.st_mode & 0777, ==,
                        0644); /* readable by a container user, as the store writes it */
    }

    /* A name that finds nothing is refused at once: nothing started. */
    {
        g_autoptr(EinsoraModelImport) none =
            einsora_model_store_import(store, "gone", "ollama:gone:1", 0, &error);
        g_assert_null(none);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_nonnull(strstr(error->message, "no Ollama model gone:1"));
    }
}

int
main(int argc, char **argv)
{
    int status;

    /* Before anything asks: GLib keeps the first home it reads. */
    home = einsora_test_dir_new();
    g_setenv("HOME", home, TRUE);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/model-finder/found-and-refused", test_found_and_refused);
    g_test_add_func("/model-finder/imported", test_imported);
    status = g_test_run();
    einsora_test_dir_remove(home);
    g_free(home);
    return status;
}
