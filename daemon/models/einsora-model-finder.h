/* Models other tools already keep on this machine, which the model store
 * imports by name without downloading them again: Ollama's (its
 * manifests name each model's GGUF layer, a file under blobs/ named by
 * its own SHA-256 and never rewritten) and LM Studio's (.gguf files under
 * its models directory). Sources read "ollama:NAME[:TAG]" (library models,
 * or "ollama:USER/NAME:TAG") and "lmstudio:PUBLISHER/REPO/FILE.gguf".
 * Looked for where those tools keep them for this user: $OLLAMA_MODELS,
 * ~/.ollama/models and /usr/share/ollama/.ollama/models (the Linux
 * service's); ~/.lmstudio/models and ~/.cache/lm-studio/models. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    gchar *source; /* "ollama:llama3.2:1b" */
    gchar *path;   /* the file */
    gint64 size;
    /* Its tool never rewrites it (Ollama's blobs): a hard link is safe. */
    gboolean immutable;
} EinsoraFoundModel;

void einsora_found_model_free(EinsoraFoundModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraFoundModel, einsora_found_model_free)

/* Whether @source names another tool's model (rather than a path). */
gboolean einsora_model_finder_is_found_source(const char *source);

/* Every model found, by source. */
GPtrArray *einsora_model_finder_list(void);

/* The file @source names; EINSORA_ERROR_INVALID_REQUEST saying why when
 * there is none (a malformed name, no such model here). */
EinsoraFoundModel *einsora_model_finder_resolve(const char *source, GError **error);

G_END_DECLS
