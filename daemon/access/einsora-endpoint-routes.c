#define G_LOG_DOMAIN "einsora-access"

#include "einsora-endpoint-routes.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "einsora-uuid.h"

/* The only routes that reach a worker (the seeds name them; embeddings
 * where the model has them). Everything else under a base URL is the
 * proxy's 404: llama-server's own pages, slots, props and metrics stay
 * behind it. */
static const struct {
    const char *method;
    const char *route;
} inference_routes[] = {
    {"GET", "/v1/models"},
    {"POST", "/v1/completions"},
    {"POST", "/v1/chat/completions"},
    {"POST", "/v1/embeddings"},
};

void
einsora_endpoint_route_free(EinsoraEndpointRoute *route)
{
    if (route == NULL)
        return;
    g_free(route->workload_id);
    g_free(route->route);
    g_free(route);
}

EinsoraEndpointRoute *
einsora_endpoint_route_parse(const char *method, const char *path)
{
    g_autoptr(EinsoraEndpointRoute) route = g_new0(EinsoraEndpointRoute, 1);
    const char *rest = path;

    if (method == NULL || path == NULL)
        return NULL;
    if (g_str_has_prefix(path, EINSORA_ENDPOINT_PATH_PREFIX)) {
        const char *id = path + strlen(EINSORA_ENDPOINT_PATH_PREFIX);
        const char *slash = strchr(id, '/');
        /* Case-insensitive, as hosts are for notebooks. */
        g_autofree gchar *text = slash != NULL ? g_ascii_strdown(id, (gssize)(slash - id)) : NULL;

        if (text == NULL || !einsora_uuid_is_valid(text))
            return NULL;
        route->workload_id = g_steal_pointer(&text);
        rest = slash;
    }
    /* "/v1", or "/v1/" and more; not "/v1x". */
    if (!g_str_has_prefix(rest, "/v1") || (rest[3] != '\0' && rest[3] != '/'))
        return NULL;
    route->route = g_strdup(rest);
    for (guint i = 0; i < G_N_ELEMENTS(inference_routes); i++) {
        if (g_str_equal(rest, inference_routes[i].route) &&
            g_str_equal(method, inference_routes[i].method)) {
            route->allowed = TRUE;
            route->has_body = g_str_equal(method, "POST");
        }
    }
    return g_steal_pointer(&route);
}

gboolean
einsora_endpoint_request_id_is_sane(const char *id)
{
    gsize length = id != NULL ? strlen(id) : 0;

    return length > 0 && length <= 64 &&
           strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") ==
               length;
}

gchar *
einsora_endpoint_error_json(const char *message, const char *type, const char *code)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonGenerator) generator = json_generator_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "error");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "message");
    json_builder_add_string_value(builder, message);
    json_builder_set_member_name(builder, "type");
    json_builder_add_string_value(builder, type);
    json_builder_set_member_name(builder, "code");
    if (code != NULL)
        json_builder_add_string_value(builder, code);
    else
        json_builder_add_null_value(builder);
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    json_generator_set_root(generator, root);
    return json_generator_to_data(generator, NULL);
}

gboolean
einsora_endpoint_body_check(const char *data, gsize length, gchar **model, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) local_error = NULL;
    JsonNode *root;
    JsonNode *member;

    if (model != NULL)
        *model = NULL;
    /* json-glib takes the length as gssize and stops at a NUL: a body
     * with one inside is not JSON anyway. */
    if (length == 0 || memchr(data, '\0', length) != NULL ||
        !json_parser_load_from_data(parser, data, (gssize)length, &local_error)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "the request body is not valid JSON");
        return FALSE;
    }
    root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "the request body must be a JSON object");
        return FALSE;
    }
    member = json_object_get_member(json_node_get_object(root), "model");
    if (model != NULL && member != NULL && JSON_NODE_HOLDS_VALUE(member) &&
        json_node_get_value_type(member) == G_TYPE_STRING && *json_node_get_string(member) != '\0')
        *model = g_strdup(json_node_get_string(member));
    return TRUE;
}

gchar *
einsora_endpoint_models_json(const char *const *names, const gint64 *created_unix, guint count)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonGenerator) generator = json_generator_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "object");
    json_builder_add_string_value(builder, "list");
    json_builder_set_member_name(builder, "data");
    json_builder_begin_array(builder);
    for (guint i = 0; i < count; i++) {
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "id");
        json_builder_add_string_value(builder, names[i]);
        json_builder_set_member_name(builder, "object");
        json_builder_add_string_value(builder, "model");
        json_builder_set_member_name(builder, "created");
        json_builder_add_int_value(builder, created_unix[i]);
        json_builder_set_member_name(builder, "owned_by");
        json_builder_add_string_value(builder, "einsora");
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    json_generator_set_root(generator, root);
    return json_generator_to_data(generator, NULL);
}
