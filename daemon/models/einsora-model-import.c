#define G_LOG_DOMAIN "einsora-models"

#include "einsora-model-import.h"

G_DEFINE_BOXED_TYPE(EinsoraModelImport, einsora_model_import, einsora_model_import_copy,
                    einsora_model_import_free)

EinsoraModelImport *
einsora_model_import_new(void)
{
    return g_new0(EinsoraModelImport, 1);
}

EinsoraModelImport *
einsora_model_import_copy(const EinsoraModelImport *import)
{
    EinsoraModelImport *copy = g_new0(EinsoraModelImport, 1);

    *copy = *import;
    copy->id = g_strdup(import->id);
    copy->name = g_strdup(import->name);
    copy->source = g_strdup(import->source);
    copy->digest = g_strdup(import->digest);
    copy->error = g_strdup(import->error);
    copy->started_at = g_strdup(import->started_at);
    copy->finished_at = g_strdup(import->finished_at);
    return copy;
}

void
einsora_model_import_free(EinsoraModelImport *import)
{
    if (import == NULL)
        return;
    g_free(import->id);
    g_free(import->name);
    g_free(import->source);
    g_free(import->digest);
    g_free(import->error);
    g_free(import->started_at);
    g_free(import->finished_at);
    g_free(import);
}

const char *
einsora_model_import_state_to_string(EinsoraModelImportState state)
{
    switch (state) {
    case EINSORA_MODEL_IMPORT_DONE:
        return "done";
    case EINSORA_MODEL_IMPORT_FAILED:
        return "failed";
    case EINSORA_MODEL_IMPORT_IMPORTING:
    default:
        return "importing";
    }
}

static void
add_string_or_null(JsonBuilder *builder, const char *member, const char *value)
{
    json_builder_set_member_name(builder, member);
    if (value != NULL)
        json_builder_add_string_value(builder, value);
    else
        json_builder_add_null_value(builder);
}

JsonNode *
einsora_model_import_to_json(const EinsoraModelImport *import)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    add_string_or_null(builder, "id", import->id);
    add_string_or_null(builder, "name", import->name);
    add_string_or_null(builder, "source", import->source);
    add_string_or_null(builder, "state", einsora_model_import_state_to_string(import->state));
    json_builder_set_member_name(builder, "bytes_done");
    json_builder_add_int_value(builder, import->bytes_done);
    json_builder_set_member_name(builder, "bytes_total");
    json_builder_add_int_value(builder, import->bytes_total);
    add_string_or_null(builder, "digest", import->digest);
    add_string_or_null(builder, "error", import->error);
    add_string_or_null(builder, "started_at", import->started_at);
    add_string_or_null(builder, "finished_at", import->finished_at);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}
