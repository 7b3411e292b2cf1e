/* /v1/model-store: the installation's model store (docs/adr/0033). Not
 * /v1/models, which is the OpenAI listing on an endpoint's base URL. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

static void
respond_import(EinsoraApiRequest *request, guint status, const EinsoraModelImport *import)
{
    g_autoptr(JsonNode) node = einsora_model_import_to_json(import);

    einsora_api_request_respond_json(request, status, node);
}

void
einsora_api_models_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) models = einsora_service_list_models(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request), &error);
    g_autoptr(JsonNode) node = NULL;
    JsonArray *array;
    JsonObject *root;

    if (models == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    array = json_array_sized_new(models->len);
    for (guint i = 0; i < models->len; i++)
        json_array_add_element(array, einsora_model_manifest_to_json(models->pdata[i]));
    root = json_object_new();
    json_object_set_array_member(root, "models", array);
    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

void
einsora_api_models_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelManifest) model = einsora_service_get_model(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), &error);
    g_autoptr(JsonNode) node = NULL;

    if (model == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    node = einsora_model_manifest_to_json(model);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

/* GET /v1/local-models: what Ollama and LM Studio keep on the daemon's
 * machine, by the source POST /v1/model-store imports. */
void
einsora_api_models_found(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) found = einsora_service_find_local_models(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request), &error);
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) node = NULL;

    if (found == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "models");
    json_builder_begin_array(builder);
    for (guint i = 0; i < found->len; i++) {
        const EinsoraFoundModel *model = found->pdata[i];

        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "source");
        json_builder_add_string_value(builder, model->source);
        json_builder_set_member_name(builder, "path");
        json_builder_add_string_value(builder, model->path);
        json_builder_set_member_name(builder, "size");
        json_builder_add_int_value(builder, model->size);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    node = json_builder_get_root(builder);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

const EinsoraApiField einsora_api_models_import_fields[] = {
    {"name", G_TYPE_STRING, TRUE},
    {"source", G_TYPE_STRING, TRUE},
    {NULL},
};

/* 202: the import goes on in the background; its Location says where to
 * watch it. */
void
einsora_api_models_import(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_models_import_fields, &error);
    g_autoptr(EinsoraModelImport) import = NULL;
    g_autofree gchar *location = NULL;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    import = einsora_service_import_model(einsora_api_server_get_service(server),
                                          einsora_api_request_get_actor(request),
                                          json_object_get_string_member(body, "name"),
                                          json_object_get_string_member(body, "source"), &error);
    if (import == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    location = g_strdup_printf("/v1/model-store/imports/%s", import->id);
    soup_message_headers_replace(
        soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
        "Location", location);
    respond_import(request, SOUP_STATUS_ACCEPTED, import);
}

void
einsora_api_models_import_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraModelImport) import = einsora_service_get_model_import(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), &error);

    if (import == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    respond_import(request, SOUP_STATUS_OK, import);
}

void
einsora_api_models_remove(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;

    if (!einsora_service_remove_model(einsora_api_server_get_service(server),
                                      einsora_api_request_get_actor(request),
                                      einsora_api_request_get_param(request, 0), &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    einsora_api_request_respond_empty(request, SOUP_STATUS_NO_CONTENT);
}
