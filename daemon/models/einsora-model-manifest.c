#define G_LOG_DOMAIN "einsora-models"

#include "einsora-model-manifest.h"

#include <string.h>

#include "einsora-digest.h"
#include "einsora-json-read.h"

G_DEFINE_BOXED_TYPE(EinsoraModelManifest, einsora_model_manifest, einsora_model_manifest_copy,
                    einsora_model_manifest_free)

EinsoraModelManifest *
einsora_model_manifest_new(void)
{
    return g_new0(EinsoraModelManifest, 1);
}

EinsoraModelManifest *
einsora_model_manifest_copy(const EinsoraModelManifest *manifest)
{
    EinsoraModelManifest *copy = g_new0(EinsoraModelManifest, 1);

    *copy = *manifest;
    copy->name = g_strdup(manifest->name);
    copy->digest = g_strdup(manifest->digest);
    copy->format = g_strdup(manifest->format);
    copy->architecture = g_strdup(manifest->architecture);
    copy->source = g_strdup(manifest->source);
    copy->added_at = g_strdup(manifest->added_at);
    return copy;
}

void
einsora_model_manifest_free(EinsoraModelManifest *manifest)
{
    if (manifest == NULL)
        return;
    g_free(manifest->name);
    g_free(manifest->digest);
    g_free(manifest->format);
    g_free(manifest->architecture);
    g_free(manifest->source);
    g_free(manifest->added_at);
    g_free(manifest);
}

gboolean
einsora_model_name_is_valid(const char *name)
{
    gsize length = name != NULL ? strlen(name) : 0;

    if (length == 0 || length > EINSORA_MODEL_NAME_MAX || !g_ascii_isalnum(name[0]) ||
        g_ascii_isupper(name[0]))
        return FALSE;
    for (gsize i = 0; i < length; i++) {
        char c = name[i];
        if (!(g_ascii_isdigit(c) || (c >= 'a' && c <= 'z') || c == '.' || c == '_' || c == ':' ||
              c == '-'))
            return FALSE;
    }
    return TRUE;
}

JsonNode *
einsora_model_manifest_to_json(const EinsoraModelManifest *manifest)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "name", manifest->name);
    einsora_json_add_string(builder, "digest", manifest->digest);
    einsora_json_add_int(builder, "size", manifest->size);
    einsora_json_add_string(builder, "format", manifest->format);
    einsora_json_add_string(builder, "architecture", manifest->architecture);
    einsora_json_add_int(builder, "parameter_count", manifest->parameter_count);
    einsora_json_add_string(builder, "source", manifest->source);
    einsora_json_add_string(builder, "added_at", manifest->added_at);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

EinsoraModelManifest *
einsora_model_manifest_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {
        "name",   "digest",   "size", "format", "architecture", "parameter_count",
        "source", "added_at", NULL,
    };
    g_autoptr(EinsoraModelManifest) manifest = einsora_model_manifest_new();
    JsonObject *object;
    JsonNode *source;

    if (!einsora_json_read_object(node, "a model manifest", members, &object, error) ||
        !einsora_json_read_string(object, "name", TRUE, &manifest->name, error) ||
        !einsora_json_read_string(object, "digest", TRUE, &manifest->digest, error) ||
        !einsora_json_read_int(object, "size", G_MAXINT64, &manifest->size, error) ||
        !einsora_json_read_string(object, "format", TRUE, &manifest->format, error) ||
        !einsora_json_read_string(object, "architecture", TRUE, &manifest->architecture, error) ||
        !einsora_json_read_int(object, "parameter_count", G_MAXINT64, &manifest->parameter_count,
                               error) ||
        !einsora_json_read_string(object, "added_at", TRUE, &manifest->added_at, error))
        return NULL;
    if (!einsora_model_name_is_valid(manifest->name)) {
        einsora_json_invalid(error, "\"name\" is not a model name");
        return NULL;
    }
    if (!einsora_digest_is_valid(manifest->digest)) {
        einsora_json_invalid(error, "\"digest\" must be sha256: and 64 hex digits");
        return NULL;
    }
    /* A path may be longer than the reader's usual bound. */
    source = json_object_get_member(object, "source");
    if (source == NULL || !JSON_NODE_HOLDS_VALUE(source) ||
        json_node_get_value_type(source) != G_TYPE_STRING ||
        strlen(json_node_get_string(source)) > EINSORA_MODEL_SOURCE_MAX ||
        !g_utf8_validate(json_node_get_string(source), -1, NULL)) {
        einsora_json_invalid(error, "\"source\" must be a string of at most %d bytes",
                             EINSORA_MODEL_SOURCE_MAX);
        return NULL;
    }
    manifest->source = g_strdup(json_node_get_string(source));
    return g_steal_pointer(&manifest);
}
