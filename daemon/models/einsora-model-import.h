/* Where one import into the model store stands: what is being imported,
 * how many of its bytes are read, and how it ended. A copy taken under
 * the store's lock, so it can be read while the import goes on. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef enum {
    EINSORA_MODEL_IMPORT_IMPORTING,
    EINSORA_MODEL_IMPORT_DONE,
    EINSORA_MODEL_IMPORT_FAILED,
} EinsoraModelImportState;

typedef struct {
    gchar *id; /* a UUIDv7 */
    gchar *name;
    gchar *source;
    EinsoraModelImportState state;
    gint64 bytes_done;
    gint64 bytes_total;
    gchar *digest; /* once done */
    gchar *error;  /* once failed: what was wrong, for the person who asked */
    /* Why it failed, as an EINSORA_ERROR code (invalid request, conflict). */
    gint error_code;
    gchar *started_at;
    gchar *finished_at;
} EinsoraModelImport;

#define EINSORA_TYPE_MODEL_IMPORT (einsora_model_import_get_type())
GType einsora_model_import_get_type(void);

EinsoraModelImport *einsora_model_import_new(void);
EinsoraModelImport *einsora_model_import_copy(const EinsoraModelImport *import);
void einsora_model_import_free(EinsoraModelImport *import);

const char *einsora_model_import_state_to_string(EinsoraModelImportState state);
JsonNode *einsora_model_import_to_json(const EinsoraModelImport *import);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraModelImport, einsora_model_import_free)

G_END_DECLS
