/* The model store (docs/adr/0033): one per installation, at
 * <data dir>/models/. Each model file is kept once, named by its SHA-256
 * (blobs/sha256-<hex>, in a directory only this user can read), and each
 * name has a manifest (manifests/<name>.json) that says which file it is.
 * A model is accepted only once Einsora's GGUF validator has read it;
 * importing reads and hashes it in a worker thread, never on the caller's
 * main loop, and a file that fails leaves nothing behind. A manifest is
 * written only after its file is complete, each by a write to a
 * temporary name, fsync and rename, so a crash leaves either the model or
 * nothing (leftover temporary files are removed at open). */
#pragma once

#include <gio/gio.h>

#include "einsora-model-import.h"
#include "einsora-model-manifest.h"

G_BEGIN_DECLS

/* Finished imports are kept this long, for whoever watches one. */
#define EINSORA_MODEL_STORE_IMPORT_KEEP_US (G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC)
/* The largest download: larger than any GGUF model made so far (a 405B
 * model at 8 bits is about 400 GiB). */
#define EINSORA_MODEL_STORE_MAX_DOWNLOAD (G_GINT64_CONSTANT(512) * 1024 * 1024 * 1024)

#define EINSORA_TYPE_MODEL_STORE (einsora_model_store_get_type())
G_DECLARE_FINAL_TYPE(EinsoraModelStore, einsora_model_store, EINSORA, MODEL_STORE, GObject)

/* Creates @dir (0700) with its blobs/ and manifests/ when missing. */
EinsoraModelStore *einsora_model_store_new(const char *dir, GError **error);
const char *einsora_model_store_get_dir(EinsoraModelStore *self);
/* The largest download an import takes from now on (by default
 * EINSORA_MODEL_STORE_MAX_DOWNLOAD); a larger one fails, and nothing is
 * stored. */
void einsora_model_store_set_max_download(EinsoraModelStore *self, gint64 bytes);

/* Every model, by name; a manifest that can't be read is left out (and
 * logged), never guessed at. */
GPtrArray *einsora_model_store_list(EinsoraModelStore *self, GError **error);
/* EINSORA_ERROR_NOT_FOUND when there is no such model. */
EinsoraModelManifest *einsora_model_store_lookup(EinsoraModelStore *self, const char *name,
                                                 GError **error);
/* The file a digest names (whether or not it is there). */
gchar *einsora_model_store_blob_path(EinsoraModelStore *self, const char *digest);

/* Starts importing the file at @source (an absolute path) as @name: the
 * validator first, then a reflink where the file system allows (else a
 * copy; never a hard link, docs/adr/0033), hashed as it is read. Refuses
 * at once (nothing started) a bad name or a source that isn't a readable
 * regular file; the rest is the import's to report. The same name with the same content is
 * done again harmlessly; with other content it fails as a conflict.
 * @now_us: wall-clock time for its timestamps. */
EinsoraModelImport *einsora_model_store_import(EinsoraModelStore *self, const char *name,
                                               const char *source, gint64 now_us, GError **error);
/* A copy of where an import stands; EINSORA_ERROR_NOT_FOUND when there is
 * no such import (or it finished long ago). */
EinsoraModelImport *einsora_model_store_get_import(EinsoraModelStore *self, const char *id,
                                                   GError **error);

/* Removes @name's manifest, and its file when no other name uses it. */
gboolean einsora_model_store_remove(EinsoraModelStore *self, const char *name, GError **error);

G_END_DECLS
