#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-json-read.h"

#include "einsora-uuid.h"

/* A member name is printed back to the hub's log: escape it and keep it
 * short, since a hostile agent chooses it. */
#define MEMBER_NAME_SHOWN_BYTES 64

gboolean
einsora_json_invalid(GError **error, const char *format, ...)
{
    g_autofree gchar *message = NULL;
    va_list args;

    va_start(args, format);
    message = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST, message);
    return FALSE;
}

void
einsora_json_add_string(JsonBuilder *builder, const char *member, const char *value)
{
    if (value == NULL)
        return;
    json_builder_set_member_name(builder, member);
    json_builder_add_string_value(builder, value);
}

void
einsora_json_add_int(JsonBuilder *builder, const char *member, gint64 value)
{
    json_builder_set_member_name(builder, member);
    json_builder_add_int_value(builder, value);
}

static gchar *
shown_member_name(const char *name)
{
    g_autofree gchar *escaped = g_strescape(name, NULL);

    if (strlen(escaped) > MEMBER_NAME_SHOWN_BYTES)
        return g_strdup_printf("%.*s…", MEMBER_NAME_SHOWN_BYTES, escaped);
    return g_steal_pointer(&escaped);
}

/* An object with no members outside @allowed: an unknown member is a
 * mistake or a newer peer, and either way nothing here would read it. */
gboolean
einsora_json_read_object(JsonNode *node, const char *what, const char *const *allowed,
                         JsonObject **out, GError **error)
{
    g_autoptr(GList) members = NULL;
    JsonObject *object;

    *out = NULL;
    if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
        return einsora_json_invalid(error, "%s must be a JSON object", what);
    object = json_node_get_object(node);
    members = json_object_get_members(object);
    for (GList *l = members; l != NULL; l = l->next) {
        if (!g_strv_contains(allowed, l->data)) {
            g_autofree gchar *shown = shown_member_name(l->data);
            return einsora_json_invalid(error, "unknown member \"%s\"", shown);
        }
    }
    *out = object;
    return TRUE;
}

/* Bounded, valid UTF-8, one clean line: reported text is never shown to
 * users, but it does reach logs and the store. */
gboolean
einsora_json_check_string(const char *value, const char *member, GError **error)
{
    if (*value == '\0')
        return einsora_json_invalid(error, "\"%s\" is empty", member);
    if (strlen(value) > EINSORA_JSON_MAX_STRING_BYTES)
        return einsora_json_invalid(error, "\"%s\" is longer than %d bytes", member,
                                    EINSORA_JSON_MAX_STRING_BYTES);
    if (!g_utf8_validate(value, -1, NULL))
        return einsora_json_invalid(error, "\"%s\" is not valid UTF-8", member);
    for (const char *p = value; *p != '\0'; p++) {
        if ((guchar)*p < 0x20 || *p == 0x7f)
            return einsora_json_invalid(error, "\"%s\" contains a control character", member);
    }
    return TRUE;
}

/* *out is a new copy, and NULL when an optional member is absent. */
gboolean
einsora_json_read_string(JsonObject *object, const char *member, gboolean required, gchar **out,
                         GError **error)
{
    JsonNode *node = json_object_get_member(object, member);
    const char *value;

    *out = NULL;
    if (node == NULL) {
        if (required)
            return einsora_json_invalid(error, "missing member \"%s\"", member);
        return TRUE;
    }
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
        return einsora_json_invalid(error, "\"%s\" must be a string", member);
    value = json_node_get_string(node);
    if (!einsora_json_check_string(value, member, error))
        return FALSE;
    *out = g_strdup(value);
    return TRUE;
}

gboolean
einsora_json_read_uuid(JsonObject *object, const char *member, gchar **out, GError **error)
{
    g_autofree gchar *value = NULL;

    *out = NULL;
    if (!einsora_json_read_string(object, member, TRUE, &value, error))
        return FALSE;
    if (!einsora_uuid_is_valid(value))
        return einsora_json_invalid(error, "\"%s\" is not a valid UUID", member);
    *out = g_steal_pointer(&value);
    return TRUE;
}

/* A required whole number between 0 and @max (G_MAXINT64: unbounded). */
gboolean
einsora_json_read_int(JsonObject *object, const char *member, gint64 max, gint64 *out,
                      GError **error)
{
    JsonNode *node = json_object_get_member(object, member);
    gint64 value;

    *out = 0;
    if (node == NULL)
        return einsora_json_invalid(error, "missing member \"%s\"", member);
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64)
        return einsora_json_invalid(error, "\"%s\" must be a whole number", member);
    value = json_node_get_int(node);
    if (value < 0 && max == G_MAXINT64)
        return einsora_json_invalid(error, "\"%s\" must not be negative", member);
    if (value < 0 || value > max)
        return einsora_json_invalid(error, "\"%s\" must be between 0 and %" G_GINT64_FORMAT, member,
                                    max);
    *out = value;
    return TRUE;
}

/* A required list of at most @max_length elements; *out is borrowed. */
gboolean
einsora_json_read_array(JsonObject *object, const char *member, guint max_length, JsonArray **out,
                        GError **error)
{
    JsonNode *node = json_object_get_member(object, member);

    *out = NULL;
    if (node == NULL)
        return einsora_json_invalid(error, "missing member \"%s\"", member);
    if (!JSON_NODE_HOLDS_ARRAY(node))
        return einsora_json_invalid(error, "\"%s\" must be a list", member);
    if (json_array_get_length(json_node_get_array(node)) > max_length)
        return einsora_json_invalid(error, "\"%s\" has more than %u entries", member, max_length);
    *out = json_node_get_array(node);
    return TRUE;
}
