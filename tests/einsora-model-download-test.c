/* Importing a model from an http(s) URL: a loopback server hands out the
 * small valid GGUF (with its length, and chunked without), a file that
 * isn't one, a 404, one over the store's limit; the download is hashed
 * as it comes, validated once whole, and recorded without the user,
 * password and query of its URL; a failure leaves nothing behind. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-error.h"
#include "einsora-model-store.h"
#include "einsora-test-dir.h"
#include "einsora-test-models.h"
#include "einsora-test-server.h"

typedef struct {
    gchar *dir;
    SoupServer *server;
    gchar *base;
    GBytes *seed;
    EinsoraModelStore *store;
} Fixture;

static void
on_request(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
           gpointer user_data)
{
    Fixture *f = user_data;

    if (g_str_equal(path, "/tiny.gguf")) {
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "application/octet-stream", SOUP_MEMORY_COPY,
                                         g_bytes_get_data(f->seed, NULL),
                                         g_bytes_get_size(f->seed));
    } else if (g_str_equal(path, "/chunked.gguf")) {
        /* No Content-Length: only the download's own count can stop it. */
        SoupMessageBody *body = soup_server_message_get_response_body(msg);

        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_message_headers_set_encoding(soup_server_message_get_response_headers(msg),
                                          SOUP_ENCODING_CHUNKED);
        soup_message_body_append_bytes(body, f->seed);
        soup_message_body_complete(body);
    } else if (g_str_equal(path, "/not-a-model.gguf")) {
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "text/html", SOUP_MEMORY_STATIC,
                                         "<html>a login page</html>", 25);
    } else {
        soup_server_message_set_status(msg, SOUP_STATUS_NOT_FOUND, NULL);
    }
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autofree gchar *seed = einsora_test_model_seed_path();
    g_autofree gchar *models = NULL;
    g_autoptr(GError) error = NULL;
    gchar *contents = NULL;
    gsize length = 0;

    f->dir = einsora_test_dir_new();
    g_assert_true(g_file_get_contents(seed, &contents, &length, NULL));
    f->seed = g_bytes_new_take(contents, length);
    f->server = soup_server_new(NULL, NULL);
    soup_server_add_handler(f->server, NULL, on_request, f, NULL);
    f->base =
        g_strdup_printf("http://127.0.0.1:%u/", einsora_test_server_listen_loopback(f->server));
    models = g_build_filename(f->dir, "models", NULL);
    f->store = einsora_model_store_new(models, &error);
    g_assert_no_error(error);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->store);
    g_clear_object(&f->server);
    g_bytes_unref(f->seed);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
    g_free(f->base);
}

/* The server answers on this thread's main context: it turns while the
 * import's thread downloads. */
static EinsoraModelImport *
wait_import(Fixture *f, const char *id)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraModelImport) import = einsora_model_store_get_import(f->store, id, &error);

        g_assert_no_error(error);
        if (import->state != EINSORA_MODEL_IMPORT_IMPORTING)
            return g_steal_pointer(&import);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

static EinsoraModelImport *
import_url(Fixture *f, const char *name, const char *url)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelImport) started =
        einsora_model_store_import(f->store, name, url, 0, &error);

    g_assert_no_error(error);
    g_assert_nonnull(started);
    return wait_import(f, started->id);
}

static guint
count_files(Fixture *f, const char *sub)
{
    g_autofree gchar *path = g_build_filename(f->dir, "models", sub, NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    guint n = 0;

    while (dir != NULL && g_dir_read_name(dir) != NULL)
        n++;
    return n;
}

static void
test_downloaded(Fixture *f, gconstpointer data)
{
    /* A URL with a user, a password and a query, as a signed link has. */
    g_autofree gchar *url = g_strdup_printf("http://someone:s3cret@%stiny.gguf?token=sig-123",
                                            f->base + strlen("http://"));
    g_autoptr(EinsoraModelImport) done = import_url(f, "tiny", url);
    g_autoptr(EinsoraModelManifest) manifest = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *hex = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, f->seed);
    g_autofree gchar *blob = NULL;
    g_autofree gchar *stored = NULL;
    gsize length = 0;

    g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
    g_assert_cmpint(done->bytes_done, ==, g_bytes_get_size(f->seed));
    g_assert_cmpint(done->bytes_total, ==, g_bytes_get_size(f->seed));
    manifest = einsora_model_store_lookup(f->store, "tiny", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(manifest->digest + strlen("sha256:"), ==, hex);
    g_assert_cmpstr(manifest->architecture, ==, "llama");
    /* Recorded without what could be a credential. */
    g_assert_null(strstr(manifest->source, "s3cret"));
    g_assert_null(strstr(manifest->source, "someone"));
    g_assert_null(strstr(manifest->source, "sig-123"));
    g_assert_true(g_str_has_suffix(manifest->source, "/tiny.gguf"));
    g_assert_null(strstr(done->source, "s3cret"));
    blob = einsora_model_store_blob_path(f->store, manifest->digest);
    g_assert_true(g_file_get_contents(blob, &stored, &length, NULL));
    g_assert_cmpmem(stored, length, g_bytes_get_data(f->seed, NULL), g_bytes_get_size(f->seed));
}

static void
test_refused(Fixture *f, gconstpointer data)
{
    const struct {
        const char *path;
        const char *message;
    } table[] = {
        {"not-a-model.gguf", "not a usable GGUF model"},
        {"missing.gguf", "the server answered 404"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree gchar *url = g_strconcat(f->base, table[i].path, NULL);
        g_autoptr(EinsoraModelImport) failed = import_url(f, "tiny", url);
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraModelManifest) none = NULL;

        g_test_message("%s: %s", table[i].path, failed->error);
        g_assert_cmpint(failed->state, ==, EINSORA_MODEL_IMPORT_FAILED);
        g_assert_nonnull(strstr(failed->error, table[i].message));
        none = einsora_model_store_lookup(f->store, "tiny", &error);
        g_assert_null(none);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
    }
    /* Nothing left behind, not even a temporary file. */
    g_assert_cmpuint(count_files(f, "blobs"), ==, 0);
    g_assert_cmpuint(count_files(f, "manifests"), ==, 0);
    /* A scheme it doesn't download, and a URL without a host: refused at once. */
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraModelImport) none =
            einsora_model_store_import(f->store, "tiny", "ftp://example.com/x.gguf", 0, &error);
        g_assert_null(none);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_clear_error(&error);
        none = einsora_model_store_import(f->store, "tiny", "http://", 0, &error);
        g_assert_null(none);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
}

/* A download over the store's limit fails whether the server says its
 * length first or not, and leaves nothing; one just at the limit is
 * taken. */
static void
test_over_the_limit(Fixture *f, gconstpointer data)
{
    const gint64 size = (gint64)g_bytes_get_size(f->seed);
    g_autofree gchar *limit = g_strdup_printf("more than the %" G_GINT64_FORMAT, size - 1);
    const struct {
        const char *path;
        const char *message;
    } table[] = {
        {"tiny.gguf", "a download may be"},
        {"chunked.gguf", "bytes a download may be"},
    };

    einsora_model_store_set_max_download(f->store, size - 1);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree gchar *url = g_strconcat(f->base, table[i].path, NULL);
        g_autoptr(EinsoraModelImport) failed = import_url(f, "tiny", url);
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraModelManifest) none = NULL;

        g_test_message("%s: %s", table[i].path, failed->error);
        g_assert_cmpint(failed->state, ==, EINSORA_MODEL_IMPORT_FAILED);
        g_assert_cmpint(failed->error_code, ==, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_nonnull(strstr(failed->error, limit));
        g_assert_nonnull(strstr(failed->error, table[i].message));
        none = einsora_model_store_lookup(f->store, "tiny", &error);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        g_assert_cmpuint(count_files(f, "blobs"), ==, 0);
        g_assert_cmpuint(count_files(f, "manifests"), ==, 0);
    }
    einsora_model_store_set_max_download(f->store, size);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree gchar *url = g_strconcat(f->base, table[i].path, NULL);
        g_autoptr(EinsoraModelImport) done = import_url(f, "tiny", url);

        g_assert_cmpint(done->state, ==, EINSORA_MODEL_IMPORT_DONE);
        g_assert_cmpint(done->bytes_done, ==, size);
    }
    g_assert_cmpuint(count_files(f, "blobs"), ==, 1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/model-download/downloaded", Fixture, NULL, fixture_set_up, test_downloaded,
               fixture_tear_down);
    g_test_add("/model-download/refused", Fixture, NULL, fixture_set_up, test_refused,
               fixture_tear_down);
    g_test_add("/model-download/over-the-limit", Fixture, NULL, fixture_set_up, test_over_the_limit,
               fixture_tear_down);
    return g_test_run();
}
