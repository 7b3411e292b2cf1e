/* The model store on its own (docs/adr/0033): what an import leaves on
 * disk, what it refuses and how, names sharing a file, and what a crash
 * leaves for the next open. The files are the GGUF fuzzer's seeds, which
 * the validator accepts, copied into the test's own directory so that
 * the source and the store share a file system. */
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "einsora-error.h"
#include "einsora-model-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-models.h"

#define NOW_US G_GINT64_CONSTANT(1764406000000000)

typedef struct {
    gchar *dir;
    gchar *store_dir;
    gchar *seed;  /* a copy of seed-00 in dir */
    gchar *other; /* a copy of seed-01: valid, other content */
    EinsoraModelStore *store;
} Fixture;

static gchar *
copy_seed(const char *dir, const char *seed)
{
    g_autofree gchar *from = NULL;
    g_autofree gchar *contents = NULL;
    gchar *to = g_build_filename(dir, seed, NULL);
    gsize length = 0;
    g_autoptr(GError) error = NULL;

    from = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "fuzz", "corpus", "gguf",
                            seed, NULL);
    g_assert_true(g_file_get_contents(from, &contents, &length, &error));
    g_assert_no_error(error);
    g_assert_true(g_file_set_contents(to, contents, (gssize)length, &error));
    g_assert_no_error(error);
    return to;
}

static EinsoraModelStore *
open_store(const char *dir)
{
    g_autoptr(GError) error = NULL;
    EinsoraModelStore *store = einsora_model_store_new(dir, &error);

    g_assert_no_error(error);
    g_assert_nonnull(store);
    return store;
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->store_dir = g_build_filename(f->dir, "models", NULL);
    f->seed = copy_seed(f->dir, "seed-00");
    f->other = copy_seed(f->dir, "seed-01");
    f->store = open_store(f->store_dir);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->store);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
    g_free(f->store_dir);
    g_free(f->seed);
    g_free(f->other);
}

static gchar *
file_digest(const char *path)
{
    g_autofree gchar *contents = NULL;
    g_autofree gchar *hex = NULL;
    gsize length = 0;

    g_assert_true(g_file_get_contents(path, &contents, &length, NULL));
    hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)contents, length);
    return g_strconcat("sha256:", hex, NULL);
}

/* The import of @source as @name, once it has finished. */
static EinsoraModelImport *
import_wait(Fixture *f, const char *name, const char *source)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelImport) started =
        einsora_model_store_import(f->store, name, source, NOW_US, &error);

    g_assert_no_error(error);
    g_assert_nonnull(started);
    g_assert_cmpint(started->state, ==, EINSORA_MODEL_IMPORT_IMPORTING);
    g_assert_cmpstr(started->name, ==, name);
    return einsora_test_model_store_wait(f->store, started->id);
}

static void
import_ok(Fixture *f, const char *name, const char *source)
{
    g_autoptr(EinsoraModelImport) done = import_wait(f, name, source);

    g_assert_cmpstr(done->error, ==, NULL);
    g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
}

/* The names in @sub (blobs or manifests), sorted, joined by spaces. */
static gchar *
listing(Fixture *f, const char *sub)
{
    g_autofree gchar *path = g_build_filename(f->store_dir, sub, NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name;

    g_assert_nonnull(dir);
    while ((name = g_dir_read_name(dir)) != NULL)
        g_ptr_array_add(names, g_strdup(name));
    g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
    g_ptr_array_add(names, NULL);
    return g_strjoinv(" ", (gchar **)names->pdata);
}

static guint
count_models(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) models = einsora_model_store_list(f->store, &error);

    g_assert_no_error(error);
    return models->len;
}

static void
assert_not_found(Fixture *f, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelManifest) manifest = einsora_model_store_lookup(f->store, name, &error);

    g_assert_null(manifest);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
assert_mode(const char *path, mode_t mode)
{
    struct stat st;

    g_assert_cmpint(g_stat(path, &st), ==, 0);
    g_assert_cmpuint(st.st_mode & 0777, ==, mode);
}

static void
test_import_good(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *digest = file_digest(f->seed);
    g_autoptr(EinsoraModelImport) started =
        einsora_model_store_import(f->store, "tiny:1b", f->seed, NOW_US, &error);
    g_autoptr(EinsoraModelImport) done = NULL;
    g_autoptr(EinsoraModelManifest) manifest = NULL;
    g_autoptr(GPtrArray) models = NULL;
    g_autofree gchar *blob = NULL;
    g_autofree gchar *blob_name = NULL;
    g_autofree gchar *blobs = g_build_filename(f->store_dir, "blobs", NULL);
    g_autofree gchar *manifests = g_build_filename(f->store_dir, "manifests", NULL);
    g_autofree gchar *files = NULL;
    struct stat st;

    g_assert_no_error(error);
    g_assert_cmpint(g_stat(f->seed, &st), ==, 0);
    g_assert_cmpint(started->state, ==, EINSORA_MODEL_IMPORT_IMPORTING);
    g_assert_cmpint(started->bytes_total, ==, st.st_size);
    g_assert_cmpstr(started->source, ==, f->seed);
    g_assert_nonnull(started->started_at);

    done = einsora_test_model_store_wait(f->store, started->id);
    g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
    g_assert_cmpstr(done->id, ==, started->id);
    g_assert_cmpint(done->bytes_done, ==, st.st_size);
    g_assert_cmpint(done->bytes_total, ==, st.st_size);
    g_assert_cmpstr(done->digest, ==, digest);
    g_assert_null(done->error);
    g_assert_nonnull(done->finished_at);

    manifest = einsora_model_store_lookup(f->store, "tiny:1b", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(manifest->name, ==, "tiny:1b");
    g_assert_cmpstr(manifest->digest, ==, digest);
    g_assert_cmpint(manifest->size, ==, st.st_size);
    g_assert_cmpstr(manifest->format, ==, "gguf");
    g_assert_cmpstr(manifest->architecture, ==, "llama");
    g_assert_cmpstr(manifest->source, ==, f->seed);
    g_assert_nonnull(manifest->added_at);

    models = einsora_model_store_list(f->store, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(models->len, ==, 1);
    g_assert_cmpstr(((EinsoraModelManifest *)models->pdata[0])->name, ==, "tiny:1b");
    g_assert_cmpstr(((EinsoraModelManifest *)models->pdata[0])->digest, ==, digest);

    blob = einsora_model_store_blob_path(f->store, digest);
    blob_name = g_strconcat("sha256-", digest + strlen("sha256:"), NULL);
    g_assert_cmpstr(blob, ==, (files = g_build_filename(blobs, blob_name, NULL)));
    g_clear_pointer(&files, g_free);
    g_assert_true(g_file_test(blob, G_FILE_TEST_IS_REGULAR));
    {
        g_autofree gchar *stored = file_digest(blob);
        g_assert_cmpstr(stored, ==, digest);
    }
    /* Nothing else: no temporary file is left. */
    files = listing(f, "blobs");
    g_assert_cmpstr(files, ==, blob_name);
    g_clear_pointer(&files, g_free);
    files = listing(f, "manifests");
    g_assert_cmpstr(files, ==, "tiny:1b.json");

    /* Only this user reads the store: its directories are its own, and a
     * model file is readable only through them (or a container's
     * read-only bind of that one file). */
    assert_mode(f->store_dir, 0700);
    assert_mode(blobs, 0700);
    assert_mode(manifests, 0700);
    assert_mode(blob, 0644);
    {
        g_autofree gchar *path = g_build_filename(manifests, "tiny:1b.json", NULL);
        assert_mode(path, 0600);
    }
}

/* The store's directories are made private even when they were there
 * before with looser modes. */
static void
test_open_makes_dirs_private(Fixture *f, gconstpointer data)
{
    g_autofree gchar *dir = g_build_filename(f->dir, "loose", NULL);
    g_autofree gchar *blobs = g_build_filename(dir, "blobs", NULL);
    g_autoptr(EinsoraModelStore) store = NULL;

    g_assert_cmpint(g_mkdir_with_parents(blobs, 0755), ==, 0);
    g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
    g_assert_cmpint(g_chmod(blobs, 0777), ==, 0);
    store = open_store(dir);
    assert_mode(dir, 0700);
    assert_mode(blobs, 0700);
    {
        g_autofree gchar *manifests = g_build_filename(dir, "manifests", NULL);
        assert_mode(manifests, 0700);
    }
}

/* The source and the store share a file system here, yet the blob is
 * never a hard link of the source (docs/adr/0033): ext4 has no reflink,
 * so it is a copy, its own inode with equal content, and rewriting the
 * source in place afterwards leaves the model as it was imported. */
static void
test_import_copies_never_links(Fixture *f, gconstpointer data)
{
    g_autofree gchar *digest = file_digest(f->seed);
    g_autofree gchar *blob = NULL;
    g_autofree gchar *stored = NULL;
    g_autofree gchar *rewritten = NULL;
    struct stat source_st, blob_st;

    import_ok(f, "tiny", f->seed);
    blob = einsora_model_store_blob_path(f->store, digest);
    g_assert_cmpint(g_stat(f->seed, &source_st), ==, 0);
    g_assert_cmpint(g_stat(blob, &blob_st), ==, 0);
    g_assert_cmpuint(source_st.st_dev, ==, blob_st.st_dev);
    g_assert_cmpuint(source_st.st_ino, !=, blob_st.st_ino);
    g_assert_cmpuint(source_st.st_nlink, ==, 1);
    g_assert_cmpint(blob_st.st_size, ==, source_st.st_size);

    /* Rewritten in place (same inode), as the file's owner could. */
    {
        FILE *file = fopen(f->seed, "r+");
        g_assert_nonnull(file);
        g_assert_cmpint(fseek(file, 0, SEEK_END), ==, 0);
        g_assert_cmpint(fputc('x', file), !=, EOF);
        g_assert_cmpint(fclose(file), ==, 0);
    }
    rewritten = file_digest(f->seed);
    g_assert_cmpstr(rewritten, !=, digest);
    stored = file_digest(blob);
    g_assert_cmpstr(stored, ==, digest);
}

/* The seed with its first bytes changed, or cut short. */
static gchar *
write_bad(Fixture *f, const char *what)
{
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    gchar *path = g_build_filename(f->dir, what, NULL);

    g_assert_true(g_file_get_contents(f->seed, &contents, &length, NULL));
    if (g_str_equal(what, "wrong-magic"))
        memcpy(contents, "GGUX", 4);
    else if (g_str_equal(what, "truncated"))
        length = 40;
    else if (g_str_equal(what, "empty"))
        length = 0;
    else
        g_assert_not_reached();
    g_assert_true(g_file_set_contents(path, contents, (gssize)length, NULL));
    return path;
}

static void
test_import_bad_gguf(Fixture *f, gconstpointer data)
{
    const char *cases[] = {"wrong-magic", "truncated", "empty"};

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *path = write_bad(f, cases[i]);
        g_autoptr(EinsoraModelImport) done = NULL;
        g_autofree gchar *blobs = NULL;
        g_autofree gchar *manifests = NULL;

        g_test_message("%s", cases[i]);
        done = import_wait(f, "bad", path);
        g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_FAILED);
        g_assert_cmpint(done->error_code, ==, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_true(g_str_has_prefix(done->error, "not a usable GGUF model"));
        g_assert_null(done->digest);
        g_assert_nonnull(done->finished_at);
        blobs = listing(f, "blobs");
        g_assert_cmpstr(blobs, ==, "");
        manifests = listing(f, "manifests");
        g_assert_cmpstr(manifests, ==, "");
        assert_not_found(f, "bad");
        g_assert_cmpuint(count_models(f), ==, 0);
    }
}

static void
test_import_refused_at_once(Fixture *f, gconstpointer data)
{
    g_autofree gchar *long_name = g_strnfill(EINSORA_MODEL_NAME_MAX + 1, 'a');
    g_autofree gchar *longest = g_strnfill(EINSORA_MODEL_NAME_MAX, 'a');
    g_autofree gchar *missing = g_build_filename(f->dir, "no-such-file", NULL);
    const struct {
        const char *name;
        const char *source;
    } cases[] = {
        {"Tiny", f->seed}, {"a/b", f->seed}, {"..", f->seed},      {".hidden", f->seed},
        {"", f->seed},     {NULL, f->seed},  {long_name, f->seed}, {"tiny", "seed-00"},
        {"tiny", NULL},    {"tiny", f->dir}, {"tiny", missing},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraModelImport) import = NULL;

        g_test_message("%s from %s", cases[i].name, cases[i].source);
        import =
            einsora_model_store_import(f->store, cases[i].name, cases[i].source, NOW_US, &error);
        g_assert_null(import);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
    {
        g_autofree gchar *blobs = listing(f, "blobs");
        g_autofree gchar *manifests = listing(f, "manifests");
        g_assert_cmpstr(blobs, ==, "");
        g_assert_cmpstr(manifests, ==, "");
    }
    /* The longest name is fine. */
    import_ok(f, longest, f->seed);
}

static void
test_same_name_same_content(Fixture *f, gconstpointer data)
{
    g_autofree gchar *digest = file_digest(f->seed);
    g_autoptr(EinsoraModelImport) again = NULL;
    g_autofree gchar *manifests = NULL;
    g_autofree gchar *blobs = NULL;

    import_ok(f, "tiny", f->seed);
    again = import_wait(f, "tiny", f->seed);
    g_assert_cmpint(again->state, ==, EINSORA_MODEL_IMPORT_DONE);
    g_assert_cmpstr(again->digest, ==, digest);
    g_assert_cmpuint(count_models(f), ==, 1);
    manifests = listing(f, "manifests");
    g_assert_cmpstr(manifests, ==, "tiny.json");
    blobs = listing(f, "blobs");
    g_assert_cmpuint(strlen(blobs), ==, strlen("sha256-") + 64);
}

static void
test_same_name_other_content(Fixture *f, gconstpointer data)
{
    g_autofree gchar *digest = file_digest(f->seed);
    g_autofree gchar *other_digest = file_digest(f->other);
    g_autoptr(EinsoraModelManifest) before = NULL;
    g_autoptr(EinsoraModelManifest) after = NULL;
    g_autoptr(EinsoraModelImport) clash = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *other_blob = NULL;
    g_autofree gchar *blobs = NULL;

    g_assert_cmpstr(digest, !=, other_digest);
    import_ok(f, "tiny", f->seed);
    before = einsora_model_store_lookup(f->store, "tiny", &error);
    g_assert_no_error(error);

    clash = import_wait(f, "tiny", f->other);
    g_assert_cmpint(clash->state, ==, EINSORA_MODEL_IMPORT_FAILED);
    g_assert_cmpint(clash->error_code, ==, EINSORA_ERROR_CONFLICT);
    g_assert_nonnull(clash->error);
    g_assert_null(clash->digest);

    after = einsora_model_store_lookup(f->store, "tiny", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(after->digest, ==, digest);
    g_assert_cmpstr(after->source, ==, before->source);
    g_assert_cmpstr(after->added_at, ==, before->added_at);
    other_blob = einsora_model_store_blob_path(f->store, other_digest);
    g_assert_false(g_file_test(other_blob, G_FILE_TEST_EXISTS));
    blobs = listing(f, "blobs");
    g_assert_cmpuint(strlen(blobs), ==, strlen("sha256-") + 64);
}

static void
test_names_share_a_blob(Fixture *f, gconstpointer data)
{
    g_autofree gchar *digest = file_digest(f->seed);
    g_autofree gchar *blob = NULL;
    g_autofree gchar *blobs = NULL;
    g_autoptr(GError) error = NULL;

    import_ok(f, "one", f->seed);
    import_ok(f, "two", f->seed);
    g_assert_cmpuint(count_models(f), ==, 2);
    blob = einsora_model_store_blob_path(f->store, digest);
    blobs = listing(f, "blobs");
    g_assert_cmpstr(blobs, ==, strrchr(blob, '/') + 1);

    g_assert_true(einsora_model_store_remove(f->store, "one", &error));
    g_assert_no_error(error);
    assert_not_found(f, "one");
    g_assert_cmpuint(count_models(f), ==, 1);
    g_assert_true(g_file_test(blob, G_FILE_TEST_EXISTS));

    g_assert_true(einsora_model_store_remove(f->store, "two", &error));
    g_assert_no_error(error);
    assert_not_found(f, "two");
    g_assert_cmpuint(count_models(f), ==, 0);
    g_assert_false(g_file_test(blob, G_FILE_TEST_EXISTS));

    g_assert_false(einsora_model_store_remove(f->store, "two", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

static void
put_file(Fixture *f, const char *sub, const char *name, const char *contents)
{
    g_autofree gchar *path = g_build_filename(f->store_dir, sub, name, NULL);
    g_autoptr(GError) error = NULL;

    g_assert_true(g_file_set_contents(path, contents, -1, &error));
    g_assert_no_error(error);
}

static void
test_open_removes_leftovers(Fixture *f, gconstpointer data)
{
    g_autofree gchar *blobs = NULL;
    g_autofree gchar *manifests = NULL;

    import_ok(f, "tiny", f->seed);
    g_clear_object(&f->store);
    put_file(f, "blobs", ".tmp-0190b5d2-7c4e-7abc-8def-000000000001", "half a model");
    put_file(f, "manifests", ".tmp-tiny.json", "{\"name\": \"ti");
    f->store = open_store(f->store_dir);
    blobs = listing(f, "blobs");
    g_assert_false(strstr(blobs, ".tmp-") != NULL);
    g_assert_cmpuint(strlen(blobs), ==, strlen("sha256-") + 64);
    manifests = listing(f, "manifests");
    g_assert_cmpstr(manifests, ==, "tiny.json");
    g_assert_cmpuint(count_models(f), ==, 1);
}

static void
test_damaged_manifest_left_out(Fixture *f, gconstpointer data)
{
    g_autofree gchar *digest = file_digest(f->seed);
    g_autofree gchar *bad_digest = NULL;
    g_autoptr(GPtrArray) models = NULL;
    g_autoptr(GError) error = NULL;
    const char *broken[] = {"not-json", "bad-digest", "upper-digest", "empty", "copy"};

    import_ok(f, "tiny", f->seed);
    put_file(f, "manifests", "not-json.json", "{\"name\": \"not-json\", ");
    bad_digest =
        g_strdup_printf("{\"name\": \"bad-digest\", \"digest\": \"sha256:abc\", \"size\": 1,"
                        " \"format\": \"gguf\", \"architecture\": \"llama\","
                        " \"parameter_count\": 1, \"source\": \"/x\","
                        " \"added_at\": \"2025-11-29T08:46:40.000000Z\"}");
    put_file(f, "manifests", "bad-digest.json", bad_digest);
    {
        g_autofree gchar *upper = g_ascii_strup(digest + strlen("sha256:"), -1);
        g_autofree gchar *text =
            g_strdup_printf("{\"name\": \"upper-digest\", \"digest\": \"sha256:%s\", \"size\": 1,"
                            " \"format\": \"gguf\", \"architecture\": \"llama\","
                            " \"parameter_count\": 1, \"source\": \"/x\","
                            " \"added_at\": \"2025-11-29T08:46:40.000000Z\"}",
                            upper);
        put_file(f, "manifests", "upper-digest.json", text);
    }
    put_file(f, "manifests", "empty.json", "");
    /* A good manifest under another name's file (copied by hand, say)
     * would make a second "tiny". */
    {
        g_autofree gchar *path = g_build_filename(f->store_dir, "manifests", "tiny.json", NULL);
        g_autofree gchar *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        put_file(f, "manifests", "copy.json", text);
    }

    for (gsize i = 0; i < G_N_ELEMENTS(broken); i++)
        g_test_expect_message("einsora-models", G_LOG_LEVEL_WARNING, "*can't be read*");
    models = einsora_model_store_list(f->store, &error);
    g_test_assert_expected_messages();
    g_assert_no_error(error);
    g_assert_cmpuint(models->len, ==, 1);
    g_assert_cmpstr(((EinsoraModelManifest *)models->pdata[0])->name, ==, "tiny");

    for (gsize i = 0; i < G_N_ELEMENTS(broken); i++) {
        g_autoptr(EinsoraModelManifest) manifest =
            einsora_model_store_lookup(f->store, broken[i], &error);
        g_assert_null(manifest);
        g_assert_nonnull(error);
        g_clear_error(&error);
    }
}

/* A damaged manifest is no model, so its name is free: importing again
 * repairs it, rather than failing as a conflict with content that no
 * one can see (or remove: removal needs a readable manifest). */
static void
test_import_replaces_damaged_manifest(Fixture *f, gconstpointer data)
{
    g_autofree gchar *digest = file_digest(f->seed);
    g_autoptr(EinsoraModelManifest) manifest = NULL;
    g_autoptr(GError) error = NULL;

    put_file(f, "manifests", "tiny.json", "{\"name\": \"ti");
    import_ok(f, "tiny", f->seed);
    manifest = einsora_model_store_lookup(f->store, "tiny", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(manifest->digest, ==, digest);
    g_assert_cmpuint(count_models(f), ==, 1);
}

static void
test_unknown_import(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelImport) import =
        einsora_model_store_get_import(f->store, "0190b5d2-7c4e-7abc-8def-000000000001", &error);

    g_assert_null(import);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    g_clear_error(&error);
    g_assert_null(einsora_model_store_get_import(f->store, NULL, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/model-store/import/good", test_import_good);
    ADD("/model-store/import/copies-never-links", test_import_copies_never_links);
    ADD("/model-store/import/bad-gguf-leaves-nothing", test_import_bad_gguf);
    ADD("/model-store/import/refused-at-once", test_import_refused_at_once);
    ADD("/model-store/import/same-name-same-content", test_same_name_same_content);
    ADD("/model-store/import/same-name-other-content-conflicts", test_same_name_other_content);
    ADD("/model-store/import/replaces-damaged-manifest", test_import_replaces_damaged_manifest);
    ADD("/model-store/import/unknown-id-not-found", test_unknown_import);
    ADD("/model-store/remove/names-share-a-blob", test_names_share_a_blob);
    ADD("/model-store/open/makes-dirs-private", test_open_makes_dirs_private);
    ADD("/model-store/open/removes-leftovers", test_open_removes_leftovers);
    ADD("/model-store/list/damaged-manifest-left-out", test_damaged_manifest_left_out);
#undef ADD
    return g_test_run();
}
