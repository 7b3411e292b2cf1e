#define G_LOG_DOMAIN "einsora-models"

#include "einsora-model-store.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-error.h"
#include "einsora-gguf.h"
#include "einsora-model-finder.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

#define TEMP_PREFIX ".tmp-"
#define CHUNK (4 * 1024 * 1024)

struct _EinsoraModelStore {
    GObject parent_instance;

    gchar *dir;
    gchar *blobs;
    gchar *manifests;
    /* Guards the imports and every change to blobs/ and manifests/, so
     * two imports (or an import and a removal) never race on a name. */
    GMutex lock;
    GHashTable *imports; /* ID -> EinsoraModelImport */
    gint64 max_download;
};

G_DEFINE_FINAL_TYPE(EinsoraModelStore, einsora_model_store, G_TYPE_OBJECT)

static void
einsora_model_store_finalize(GObject *object)
{
    EinsoraModelStore *self = EINSORA_MODEL_STORE(object);

    g_clear_pointer(&self->imports, g_hash_table_unref);
    g_mutex_clear(&self->lock);
    g_free(self->dir);
    g_free(self->blobs);
    g_free(self->manifests);
    G_OBJECT_CLASS(einsora_model_store_parent_class)->finalize(object);
}

static void
einsora_model_store_class_init(EinsoraModelStoreClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_model_store_finalize;
}

static void
einsora_model_store_init(EinsoraModelStore *self)
{
    g_mutex_init(&self->lock);
    self->max_download = EINSORA_MODEL_STORE_MAX_DOWNLOAD;
    self->imports = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                          (GDestroyNotify)einsora_model_import_free);
}

static gboolean
set_errno_error(GError **error, int saved, const char *what, const char *path)
{
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), "can't %s %s: %s", what, path,
                g_strerror(saved));
    return FALSE;
}

static gboolean
make_private_dir(const char *path, GError **error)
{
    if (g_mkdir_with_parents(path, 0700) != 0)
        return set_errno_error(error, errno, "create", path);
    if (g_chmod(path, 0700) != 0)
        return set_errno_error(error, errno, "make private", path);
    return TRUE;
}

/* What a crash in the middle of an import or a write left. */
static void
remove_leftovers(const char *dir)
{
    g_autoptr(GDir) listing = g_dir_open(dir, 0, NULL);
    const char *name;

    while (listing != NULL && (name = g_dir_read_name(listing)) != NULL) {
        if (g_str_has_prefix(name, TEMP_PREFIX)) {
            g_autofree gchar *path = g_build_filename(dir, name, NULL);
            g_message("model store: removing %s, left by an import that didn't finish", path);
            g_unlink(path);
        }
    }
}

EinsoraModelStore *
einsora_model_store_new(const char *dir, GError **error)
{
    g_autoptr(EinsoraModelStore) self = g_object_new(EINSORA_TYPE_MODEL_STORE, NULL);

    g_return_val_if_fail(dir != NULL && g_path_is_absolute(dir), NULL);
    self->dir = g_strdup(dir);
    self->blobs = g_build_filename(dir, "blobs", NULL);
    self->manifests = g_build_filename(dir, "manifests", NULL);
    if (!make_private_dir(self->dir, error) || !make_private_dir(self->blobs, error) ||
        !make_private_dir(self->manifests, error))
        return NULL;
    remove_leftovers(self->blobs);
    remove_leftovers(self->manifests);
    return g_steal_pointer(&self);
}

const char *
einsora_model_store_get_dir(EinsoraModelStore *self)
{
    g_return_val_if_fail(EINSORA_IS_MODEL_STORE(self), NULL);
    return self->dir;
}

void
einsora_model_store_set_max_download(EinsoraModelStore *self, gint64 bytes)
{
    g_return_if_fail(EINSORA_IS_MODEL_STORE(self) && bytes > 0);
    self->max_download = bytes;
}

gchar *
einsora_model_store_blob_path(EinsoraModelStore *self, const char *digest)
{
    g_autofree gchar *name = NULL;

    g_return_val_if_fail(g_str_has_prefix(digest, "sha256:"), NULL);
    name = g_strdup_printf("sha256-%s", digest + strlen("sha256:"));
    return g_build_filename(self->blobs, name, NULL);
}

static gchar *
manifest_path(EinsoraModelStore *self, const char *name)
{
    g_autofree gchar *file = g_strconcat(name, ".json", NULL);

    return g_build_filename(self->manifests, file, NULL);
}

/* A manifest names its model twice, in its file name and inside; one
 * that disagrees (a copy under another name) is damaged, else a name
 * would be listed twice and removing one would take the other's file. */
static EinsoraModelManifest *
read_manifest(const char *path, const char *name, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(EinsoraModelManifest) manifest = NULL;

    if (!json_parser_load_from_mapped_file(parser, path, error))
        return NULL;
    manifest = einsora_model_manifest_from_json(json_parser_get_root(parser), error);
    if (manifest == NULL)
        return NULL;
    if (!g_str_equal(manifest->name, name)) {
        g_set_error(error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_INVALID_DATA,
                    "it names model %s, not %s", manifest->name, name);
        return NULL;
    }
    return g_steal_pointer(&manifest);
}

static gint
compare_names(gconstpointer a, gconstpointer b)
{
    const EinsoraModelManifest *x = *(const EinsoraModelManifest *const *)a;
    const EinsoraModelManifest *y = *(const EinsoraModelManifest *const *)b;

    return strcmp(x->name, y->name);
}

static GPtrArray *
list_locked(EinsoraModelStore *self, GError **error)
{
    g_autoptr(GPtrArray) models =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_model_manifest_free);
    g_autoptr(GDir) dir = g_dir_open(self->manifests, 0, error);
    const char *name;

    if (dir == NULL)
        return NULL;
    while ((name = g_dir_read_name(dir)) != NULL) {
        g_autofree gchar *path = NULL;
        g_autofree gchar *model = NULL;
        g_autoptr(GError) local_error = NULL;
        EinsoraModelManifest *manifest;

        if (g_str_has_prefix(name, TEMP_PREFIX) || !g_str_has_suffix(name, ".json"))
            continue;
        path = g_build_filename(self->manifests, name, NULL);
        model = g_strndup(name, strlen(name) - strlen(".json"));
        manifest = read_manifest(path, model, &local_error);
        if (manifest == NULL) {
            g_warning("model store: %s can't be read, so it is left out: %s", path,
                      local_error->message);
            continue;
        }
        g_ptr_array_add(models, manifest);
    }
    g_ptr_array_sort(models, compare_names);
    return g_steal_pointer(&models);
}

GPtrArray *
einsora_model_store_list(EinsoraModelStore *self, GError **error)
{
    g_autoptr(GMutexLocker) locker = NULL;

    g_return_val_if_fail(EINSORA_IS_MODEL_STORE(self), NULL);
    locker = g_mutex_locker_new(&self->lock);
    return list_locked(self, error);
}

static EinsoraModelManifest *
lookup_locked(EinsoraModelStore *self, const char *name, GError **error)
{
    g_autofree gchar *path = NULL;
    g_autoptr(GError) local_error = NULL;
    EinsoraModelManifest *manifest;

    if (!einsora_model_name_is_valid(name)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no model is named so");
        return NULL;
    }
    path = manifest_path(self, name);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "model %s isn't in this installation's model store", name);
        return NULL;
    }
    manifest = read_manifest(path, name, &local_error);
    if (manifest == NULL)
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                    "model %s's manifest can't be read: %s", name, local_error->message);
    return manifest;
}

EinsoraModelManifest *
einsora_model_store_lookup(EinsoraModelStore *self, const char *name, GError **error)
{
    g_autoptr(GMutexLocker) locker = NULL;

    g_return_val_if_fail(EINSORA_IS_MODEL_STORE(self), NULL);
    locker = g_mutex_locker_new(&self->lock);
    return lookup_locked(self, name, error);
}

/* Writing */

static gboolean
sync_dir(const char *path, GError **error)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return set_errno_error(error, errno, "open", path);
    if (fsync(fd) != 0) {
        int saved = errno;
        close(fd);
        return set_errno_error(error, saved, "sync", path);
    }
    close(fd);
    return TRUE;
}

/* A temporary file, fsync, rename: the manifest is there whole or not. */
static gboolean
write_manifest(EinsoraModelStore *self, const EinsoraModelManifest *manifest, GError **error)
{
    g_autoptr(JsonNode) node = einsora_model_manifest_to_json(manifest);
    g_autofree gchar *text = json_to_string(node, TRUE);
    g_autofree gchar *temp_name = g_strdup_printf(TEMP_PREFIX "%s.json", manifest->name);
    g_autofree gchar *temp = g_build_filename(self->manifests, temp_name, NULL);
    g_autofree gchar *path = manifest_path(self, manifest->name);
    gsize length = strlen(text);
    gsize written = 0;
    int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd < 0)
        return set_errno_error(error, errno, "create", temp);
    while (written < length) {
        ssize_t n = write(fd, text + written, length - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            g_unlink(temp);
            return set_errno_error(error, saved, "write", temp);
        }
        written += (gsize)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int saved = errno;
        g_unlink(temp);
        return set_errno_error(error, saved, "sync", temp);
    }
    if (g_rename(temp, path) != 0) {
        int saved = errno;
        g_unlink(temp);
        return set_errno_error(error, saved, "rename", temp);
    }
    return sync_dir(self->manifests, error);
}

static gboolean
digest_in_use_locked(EinsoraModelStore *self, const char *digest, const char *except)
{
    g_autoptr(GPtrArray) models = list_locked(self, NULL);

    /* Manifests that can't be read may name it: kept, never guessed. */
    if (models == NULL)
        return TRUE;
    for (guint i = 0; i < models->len; i++) {
        const EinsoraModelManifest *manifest = models->pdata[i];
        if (g_str_equal(manifest->digest, digest) && g_strcmp0(manifest->name, except) != 0)
            return TRUE;
    }
    return FALSE;
}

gboolean
einsora_model_store_remove(EinsoraModelStore *self, const char *name, GError **error)
{
    g_autoptr(GMutexLocker) locker = NULL;
    g_autoptr(EinsoraModelManifest) manifest = NULL;
    g_autofree gchar *path = NULL;

    g_return_val_if_fail(EINSORA_IS_MODEL_STORE(self), FALSE);
    locker = g_mutex_locker_new(&self->lock);
    manifest = lookup_locked(self, name, error);
    if (manifest == NULL)
        return FALSE;
    path = manifest_path(self, name);
    if (g_unlink(path) != 0)
        return set_errno_error(error, errno, "remove", path);
    if (!digest_in_use_locked(self, manifest->digest, name)) {
        g_autofree gchar *blob = einsora_model_store_blob_path(self, manifest->digest);
        if (g_unlink(blob) != 0 && errno != ENOENT)
            g_warning("model store: can't remove %s: %s", blob, g_strerror(errno));
    }
    g_message("model store: removed %s (%s)", name, manifest->digest);
    return sync_dir(self->manifests, error);
}

/* Importing */

typedef struct {
    EinsoraModelStore *store; /* owned */
    gchar *id;
    gchar *name;
    gchar *source; /* as asked for, and recorded */
    gchar *path;   /* the file it names; NULL for a download */
    gchar *url;    /* a download's, with any credentials in it */
    /* Another tool's file that it never rewrites (Ollama's blobs): linked
     * where the file system allows, not copied. */
    gboolean immutable;
    /* The store's limit when the import began: the thread reads no field
     * of the store that can change. */
    gint64 max_download;
} ImportJob;

static void
import_job_free(ImportJob *job)
{
    g_clear_object(&job->store);
    g_free(job->id);
    g_free(job->name);
    g_free(job->source);
    g_free(job->path);
    if (job->url != NULL)
        explicit_bzero(job->url, strlen(job->url));
    g_free(job->url);
    g_free(job);
}

static void
progress(EinsoraModelStore *self, const char *id, gint64 done, gint64 total)
{
    g_autoptr(GMutexLocker) locker G_GNUC_UNUSED = g_mutex_locker_new(&self->lock);
    EinsoraModelImport *import = g_hash_table_lookup(self->imports, id);

    if (import == NULL)
        return;
    import->bytes_done = done;
    import->bytes_total = total;
}

static void
finish(EinsoraModelStore *self, const char *id, const char *digest, const GError *error)
{
    g_autoptr(GMutexLocker) locker G_GNUC_UNUSED = g_mutex_locker_new(&self->lock);
    EinsoraModelImport *import = g_hash_table_lookup(self->imports, id);

    if (import == NULL)
        return;
    g_free(import->finished_at);
    import->finished_at = einsora_timestamp_format(g_get_real_time());
    if (error != NULL) {
        import->state = EINSORA_MODEL_IMPORT_FAILED;
        import->error = g_strdup(error->message);
        import->error_code =
            error->domain == EINSORA_ERROR ? error->code : EINSORA_ERROR_INVALID_REQUEST;
        g_message("model store: importing %s from %s failed: %s", import->name, import->source,
                  error->message);
        return;
    }
    import->state = EINSORA_MODEL_IMPORT_DONE;
    import->digest = g_strdup(digest);
    import->bytes_done = import->bytes_total;
    g_message("model store: imported %s (%s) from %s", import->name, digest, import->source);
}

/* The file's bytes into @checksum, and into @out unless it is -1 (the
 * file is already there: a link or a clone). */
static gboolean
read_hashing(EinsoraModelStore *self, const char *id, int in, int out, gint64 total,
             GChecksum *checksum, GError **error)
{
    g_autofree guchar *buffer = g_malloc(CHUNK);
    gint64 done = 0;

    for (;;) {
        ssize_t n = read(in, buffer, CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return set_errno_error(error, errno, "read", "the model file");
        if (n == 0)
            break;
        g_checksum_update(checksum, buffer, (gsize)n);
        for (ssize_t written = 0; out >= 0 && written < n;) {
            ssize_t w = write(out, buffer + written, (size_t)(n - written));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return set_errno_error(error, errno, "write", "the model store's copy");
            written += w;
        }
        done += n;
        progress(self, id, done, total);
    }
    if (done != total) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "the model file changed while it was read (%" G_GINT64_FORMAT
                    " bytes, not %" G_GINT64_FORMAT ")",
                    done, total);
        return FALSE;
    }
    return TRUE;
}

/* The file into @temp: a reflink (a copy-on-write clone, no bytes
 * copied) where the file system allows, else a copy; hashed in either
 * case. A hard link only for a file its tool never rewrites (Ollama's):
 * a user's own file could be rewritten in place, and then its digest
 * would no longer name it (docs/adr/0033). */
static gchar *
take_file(EinsoraModelStore *self, const ImportJob *job, const char *temp, gint64 total,
          GError **error)
{
    g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
    int in = open(job->path, O_RDONLY | O_CLOEXEC);
    int out;
    gboolean ok;

    if (in < 0) {
        set_errno_error(error, errno, "open", job->path);
        return NULL;
    }
    if (job->immutable && link(job->path, temp) == 0) {
        ok = read_hashing(self, job->id, in, -1, total, checksum, error);
        close(in);
        if (!ok) {
            g_unlink(temp);
            return NULL;
        }
        return g_strdup_printf("sha256:%s", g_checksum_get_string(checksum));
    }
    /* Readable by all: the store's directories (0700) keep it private,
     * and a container's user reads it through its read-only bind. */
    out = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0) {
        set_errno_error(error, errno, "create", temp);
        close(in);
        return NULL;
    }
    if (ioctl(out, FICLONE, in) == 0) {
        /* The clone is hashed, not the source, which could change after
         * it was cloned. */
        int clone = open(temp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ok = clone >= 0 ? read_hashing(self, job->id, clone, -1, total, checksum, error)
                        : set_errno_error(error, errno, "open", temp);
        if (clone >= 0)
            close(clone);
    } else
        ok = read_hashing(self, job->id, in, out, total, checksum, error);
    if (ok && fsync(out) != 0)
        ok = set_errno_error(error, errno, "sync", temp);
    close(out);
    close(in);
    if (!ok) {
        g_unlink(temp);
        return NULL;
    }
    return g_strdup_printf("sha256:%s", g_checksum_get_string(checksum));
}

/* Under the lock: the name is free (or already this very content), the
 * file goes to its content's name, then the manifest is written. */
static gboolean
publish(EinsoraModelStore *self, const ImportJob *job, const char *temp, const char *digest,
        const EinsoraGgufInfo *info, gint64 size, GError **error)
{
    g_autoptr(GMutexLocker) locker G_GNUC_UNUSED = g_mutex_locker_new(&self->lock);
    g_autofree gchar *blob = einsora_model_store_blob_path(self, digest);
    g_autofree gchar *existing_path = manifest_path(self, job->name);
    g_autoptr(EinsoraModelManifest) manifest = NULL;

    if (g_file_test(existing_path, G_FILE_TEST_EXISTS)) {
        g_autoptr(GError) local_error = NULL;
        g_autoptr(EinsoraModelManifest) existing =
            read_manifest(existing_path, job->name, &local_error);

        /* A manifest that can't be read is no model (list and lookup
         * leave it out), so its name is free and this import repairs it. */
        if (existing == NULL)
            g_message("model store: replacing %s, which can't be read: %s", existing_path,
                      local_error->message);
        else {
            g_unlink(temp);
            if (g_str_equal(existing->digest, digest))
                return TRUE; /* imported before: nothing changes */
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                        "a model named %s is already in the store, with other content; remove "
                        "it first or choose another name",
                        job->name);
            return FALSE;
        }
    }
    if (g_file_test(blob, G_FILE_TEST_EXISTS))
        g_unlink(temp); /* another name has this content: one file serves both */
    else if (g_rename(temp, blob) != 0) {
        int saved = errno;
        g_unlink(temp);
        return set_errno_error(error, saved, "rename", temp);
    }
    if (!sync_dir(self->blobs, error))
        return FALSE;
    manifest = einsora_model_manifest_new();
    manifest->name = g_strdup(job->name);
    manifest->digest = g_strdup(digest);
    manifest->size = size;
    manifest->format = g_strdup("gguf");
    manifest->architecture = g_strdup(info->architecture);
    manifest->parameter_count = (gint64)info->parameter_count;
    manifest->source = g_strdup(job->source);
    manifest->added_at = einsora_timestamp_format(g_get_real_time());
    return write_manifest(self, manifest, error);
}

/* A download into @temp, hashed as it comes, within the job's
 * max_download; its size in @size. The validator
 * reads it once it is whole. */
static gchar *
download(EinsoraModelStore *self, const ImportJob *job, const char *temp, gint64 *size,
         GError **error)
{
    g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 60, NULL);
    g_autoptr(SoupMessage) message = soup_message_new("GET", job->url);
    g_autoptr(GInputStream) body = NULL;
    g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
    g_autofree guchar *buffer = g_malloc(CHUNK);
    g_autoptr(GError) local_error = NULL;
    gint64 total, done = 0;
    gboolean ok = TRUE;
    int out;

    if (message == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the source isn't an http:// or https:// URL");
        return NULL;
    }
    body = soup_session_send(session, message, NULL, &local_error);
    if (body == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "couldn't download the model: %s", local_error->message);
        return NULL;
    }
    if (soup_message_get_status(message) != SOUP_STATUS_OK) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "couldn't download the model: the server answered %u %s",
                    soup_message_get_status(message),
                    soup_status_get_phrase(soup_message_get_status(message)));
        return NULL;
    }
    total = soup_message_headers_get_content_length(soup_message_get_response_headers(message));
    if (total > job->max_download) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "the model is %" G_GINT64_FORMAT " bytes, more than the %" G_GINT64_FORMAT
                    " a download may be",
                    total, job->max_download);
        return NULL;
    }
    /* Readable by all: the store's directories (0700) keep it private,
     * and a container's user reads it through its read-only bind. */
    out = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0) {
        set_errno_error(error, errno, "create", temp);
        return NULL;
    }
    progress(self, job->id, 0, total);
    while (ok) {
        gssize n = g_input_stream_read(body, buffer, CHUNK, NULL, &local_error);

        if (n < 0) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "the download broke off: %s", local_error->message);
            ok = FALSE;
            break;
        }
        if (n == 0)
            break;
        if (total > 0 && done + n > total) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                                "the download is longer than the server said");
            ok = FALSE;
            break;
        }
        /* A server that doesn't say how long (chunked) is cut off here. */
        if (done + n > job->max_download) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "the download is more than the %" G_GINT64_FORMAT
                        " bytes a download may be",
                        job->max_download);
            ok = FALSE;
            break;
        }
        g_checksum_update(checksum, buffer, (gsize)n);
        for (gssize written = 0; written < n;) {
            ssize_t w = write(out, buffer + written, (size_t)(n - written));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                ok = set_errno_error(error, errno, "write", temp);
                break;
            }
            written += w;
        }
        done += n;
        progress(self, job->id, done, total > 0 ? total : done);
    }
    if (ok && total > 0 && done != total) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "the download ended after %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " bytes",
                    done, total);
        ok = FALSE;
    }
    if (ok && fsync(out) != 0)
        ok = set_errno_error(error, errno, "sync", temp);
    close(out);
    if (!ok) {
        g_unlink(temp);
        return NULL;
    }
    *size = done;
    return g_strdup_printf("sha256:%s", g_checksum_get_string(checksum));
}

static void
import_download(ImportJob *job, const char *temp)
{
    EinsoraModelStore *self = job->store;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraGgufInfo) info = NULL;
    gint64 size = 0;
    g_autofree gchar *digest = download(self, job, temp, &size, &error);

    if (digest != NULL) {
        info = einsora_gguf_check_file(temp, &error);
        if (info == NULL) {
            g_unlink(temp);
            g_clear_pointer(&digest, g_free);
        }
    }
    if (digest != NULL)
        publish(self, job, temp, digest, info, size, &error);
    finish(self, job->id, digest, error);
}

static void
import_in_thread(GTask *task, gpointer source_object, gpointer task_data, GCancellable *cancellable)
{
    ImportJob *job = task_data;
    EinsoraModelStore *self = job->store;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraGgufInfo) info = NULL;
    g_autofree gchar *temp_name = g_strconcat(TEMP_PREFIX, job->id, NULL);
    g_autofree gchar *temp = g_build_filename(self->blobs, temp_name, NULL);
    g_autofree gchar *digest = NULL;
    struct stat st = {0};

    if (job->url != NULL) {
        import_download(job, temp);
        g_task_return_boolean(task, TRUE);
        return;
    }
    /* The validator reads only the header: a bad file is refused before
     * a byte of it is copied. */
    info = einsora_gguf_check_file(job->path, &error);
    if (info != NULL && stat(job->path, &st) != 0)
        set_errno_error(&error, errno, "read", job->path);
    if (error == NULL) {
        progress(self, job->id, 0, st.st_size);
        digest = take_file(self, job, temp, st.st_size, &error);
    }
    /* The check that counts is of the store's own copy: the source could
     * have changed between the first check and the copy. */
    if (digest != NULL) {
        g_clear_pointer(&info, einsora_gguf_info_free);
        info = einsora_gguf_check_file(temp, &error);
        if (info == NULL) {
            g_unlink(temp);
            g_clear_pointer(&digest, g_free);
        }
    }
    if (digest != NULL)
        publish(self, job, temp, digest, info, st.st_size, &error);
    finish(self, job->id, digest, error);
    g_task_return_boolean(task, TRUE);
}

/* Finished imports older than EINSORA_MODEL_STORE_IMPORT_KEEP_US go. */
static void
forget_old_imports_locked(EinsoraModelStore *self, gint64 now_us)
{
    GHashTableIter iter;
    gpointer value;

    g_hash_table_iter_init(&iter, self->imports);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        const EinsoraModelImport *import = value;
        gint64 finished_us = 0;

        if (import->state == EINSORA_MODEL_IMPORT_IMPORTING || import->finished_at == NULL ||
            !einsora_timestamp_parse(import->finished_at, &finished_us, NULL))
            continue;
        if (now_us - finished_us > EINSORA_MODEL_STORE_IMPORT_KEEP_US)
            g_hash_table_iter_remove(&iter);
    }
}

EinsoraModelImport *
einsora_model_store_import(EinsoraModelStore *self, const char *name, const char *source,
                           gint64 now_us, GError **error)
{
    g_autoptr(GTask) task = NULL;
    g_autoptr(EinsoraFoundModel) found = NULL;
    EinsoraModelImport *import;
    ImportJob *job;
    const char *path = source;
    g_autofree gchar *url = NULL;
    g_autofree gchar *shown = NULL;
    struct stat st = {0};

    g_return_val_if_fail(EINSORA_IS_MODEL_STORE(self), NULL);
    if (!einsora_model_name_is_valid(name)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "name must be 1 to %d of a-z 0-9 . _ : - starting with a letter or digit "
                    "(like llama3.2:1b)",
                    EINSORA_MODEL_NAME_MAX);
        return NULL;
    }
    if (source != NULL &&
        (g_str_has_prefix(source, "http://") || g_str_has_prefix(source, "https://"))) {
        g_autoptr(GUri) uri = g_uri_parse(source, G_URI_FLAGS_NONE, NULL);

        if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0' ||
            strlen(source) > EINSORA_MODEL_SOURCE_MAX) {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                                "source isn't a URL this daemon can download");
            return NULL;
        }
        url = g_strdup(source);
        /* What is recorded and shown: no user, password or query, which
         * may hold a credential. */
        shown = g_uri_to_string_partial(uri, G_URI_HIDE_USERINFO | G_URI_HIDE_QUERY |
                                                 G_URI_HIDE_FRAGMENT);
    } else if (einsora_model_finder_is_found_source(source) &&
               strlen(source) <= EINSORA_MODEL_SOURCE_MAX) {
        found = einsora_model_finder_resolve(source, error);
        if (found == NULL)
            return NULL;
        path = found->path;
    } else if (source == NULL || !g_path_is_absolute(source) ||
               strlen(source) > EINSORA_MODEL_SOURCE_MAX || !g_utf8_validate(source, -1, NULL)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "source must be the absolute path of a model file on the daemon's "
                            "machine, an http(s) URL, or another tool's model: "
                            "ollama:NAME[:TAG] or lmstudio:PUBLISHER/REPO/FILE.gguf");
        return NULL;
    }
    if (url == NULL && (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, R_OK) != 0)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "source %s isn't a file the daemon can read", source);
        return NULL;
    }
    job = g_new0(ImportJob, 1);
    job->max_download = self->max_download;
    job->store = g_object_ref(self);
    job->id = einsora_uuid_v7_new(now_us / 1000);
    job->name = g_strdup(name);
    job->source = g_strdup(shown != NULL ? shown : source);
    job->path = url == NULL ? g_strdup(path) : NULL;
    job->url = g_steal_pointer(&url);
    job->immutable = found != NULL && found->immutable;
    import = einsora_model_import_new();
    import->id = g_strdup(job->id);
    import->name = g_strdup(name);
    import->source = g_strdup(job->source);
    import->state = EINSORA_MODEL_IMPORT_IMPORTING;
    import->bytes_total = st.st_size;
    import->started_at = einsora_timestamp_format(now_us);
    {
        g_autoptr(GMutexLocker) locker G_GNUC_UNUSED = g_mutex_locker_new(&self->lock);
        forget_old_imports_locked(self, now_us);
        g_hash_table_insert(self->imports, import->id, import);
        import = einsora_model_import_copy(import);
    }
    task = g_task_new(NULL, NULL, NULL, NULL);
    g_task_set_task_data(task, job, (GDestroyNotify)import_job_free);
    g_task_run_in_thread(task, import_in_thread);
    return import;
}

EinsoraModelImport *
einsora_model_store_get_import(EinsoraModelStore *self, const char *id, GError **error)
{
    g_autoptr(GMutexLocker) locker = NULL;
    const EinsoraModelImport *import;

    g_return_val_if_fail(EINSORA_IS_MODEL_STORE(self), NULL);
    locker = g_mutex_locker_new(&self->lock);
    import = id != NULL ? g_hash_table_lookup(self->imports, id) : NULL;
    if (import == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such import");
        return NULL;
    }
    return einsora_model_import_copy(import);
}
