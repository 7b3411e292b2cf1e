#include "einsora-json-member.h"

const char *
einsora_json_member_string(JsonObject *object, const char *name)
{
    JsonNode *node = object != NULL ? json_object_get_member(object, name) : NULL;

    if (node == NULL || json_node_get_value_type(node) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(node);
}

gint64
einsora_json_member_int(JsonObject *object, const char *name, gint64 fallback)
{
    JsonNode *node = object != NULL ? json_object_get_member(object, name) : NULL;

    if (node == NULL || json_node_get_value_type(node) != G_TYPE_INT64)
        return fallback;
    return json_node_get_int(node);
}

gboolean
einsora_json_member_boolean(JsonObject *object, const char *name, gboolean fallback)
{
    JsonNode *node = object != NULL ? json_object_get_member(object, name) : NULL;

    if (node == NULL || json_node_get_value_type(node) != G_TYPE_BOOLEAN)
        return fallback;
    return json_node_get_boolean(node);
}

JsonObject *
einsora_json_member_object(JsonObject *object, const char *name)
{
    JsonNode *node = object != NULL ? json_object_get_member(object, name) : NULL;

    return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

JsonArray *
einsora_json_member_array(JsonObject *object, const char *name)
{
    JsonNode *node = object != NULL ? json_object_get_member(object, name) : NULL;

    return node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
}

JsonObject *
einsora_json_array_object(JsonArray *array, guint index)
{
    JsonNode *node;

    if (array == NULL || index >= json_array_get_length(array))
        return NULL;
    node = json_array_get_element(array, index);
    return JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}
