/* Einsora's own GGUF validator: what a model file must be before the model
 * store accepts it and a runtime is asked to load it (docs/adr/0032).
 * Only the header is read (magic, version, metadata, tensor table); the
 * tensor data is checked for where it lies, never read, so a file of many
 * GiB costs the pages of its header. Every count, length and offset is
 * bounded before it is used; a file that fails gets an error naming what
 * is wrong and where. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Bounds a model a runtime can load stays well inside. */
#define EINSORA_GGUF_MAX_TENSORS (1u << 16)
#define EINSORA_GGUF_MAX_KEYS (1u << 16)
#define EINSORA_GGUF_MAX_KEY_LEN 65535u
#define EINSORA_GGUF_MAX_STRING_LEN (1u << 20)
#define EINSORA_GGUF_MAX_ARRAY_LEN (1u << 24)
#define EINSORA_GGUF_MAX_TENSOR_NAME_LEN 63u
#define EINSORA_GGUF_MAX_DIMS 4u

typedef struct _EinsoraGgufInfo EinsoraGgufInfo;

struct _EinsoraGgufInfo {
    guint32 version;
    guint64 tensor_count;
    guint64 key_count;
    /* general.architecture: one llama.cpp can load. */
    gchar *architecture;
    /* general.name, or NULL when the file has none. */
    gchar *name;
    guint32 alignment;
    /* Where the tensor data starts, and how many weights it holds. */
    guint64 data_offset;
    guint64 parameter_count;
};

/* Checks DATA (the whole file, SIZE bytes). */
EinsoraGgufInfo *einsora_gguf_check(const guint8 *data, gsize size, GError **error);
/* Maps PATH read-only and checks it. */
EinsoraGgufInfo *einsora_gguf_check_file(const char *path, GError **error);
void einsora_gguf_info_free(EinsoraGgufInfo *info);

/* Whether ARCHITECTURE is one the pinned llama.cpp loads. */
gboolean einsora_gguf_architecture_is_known(const char *architecture);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraGgufInfo, einsora_gguf_info_free)

G_END_DECLS
