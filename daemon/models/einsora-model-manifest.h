/* One model in the model store, as its manifest file says: its name, the
 * SHA-256 of its file (which names the file), its size and format, what
 * the GGUF validator read from it, where it came from and when. Read
 * strictly: a manifest is the daemon's own file, but a damaged one must
 * not become a model. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Model names, Ollama's shape: a letter or digit, then up to 127 of
 * a-z 0-9 . _ : - (no upper case, no slash: a name is also a file name). */
#define EINSORA_MODEL_NAME_MAX 128
#define EINSORA_MODEL_SOURCE_MAX 4096

typedef struct {
    gchar *name;
    gchar *digest; /* "sha256:<64 hex>" */
    gint64 size;
    gchar *format; /* "gguf" */
    gchar *architecture;
    gint64 parameter_count;
    gchar *source; /* the path it was imported from */
    gchar *added_at;
} EinsoraModelManifest;

#define EINSORA_TYPE_MODEL_MANIFEST (einsora_model_manifest_get_type())
GType einsora_model_manifest_get_type(void);

EinsoraModelManifest *einsora_model_manifest_new(void);
EinsoraModelManifest *einsora_model_manifest_copy(const EinsoraModelManifest *manifest);
void einsora_model_manifest_free(EinsoraModelManifest *manifest);

gboolean einsora_model_name_is_valid(const char *name);

JsonNode *einsora_model_manifest_to_json(const EinsoraModelManifest *manifest);
EinsoraModelManifest *einsora_model_manifest_from_json(JsonNode *node, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraModelManifest, einsora_model_manifest_free)

G_END_DECLS
