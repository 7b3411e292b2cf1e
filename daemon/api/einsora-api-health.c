/* /healthz answers while the loop runs; /readyz only while the store is
 * reachable and fully migrated. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

static void
respond_status(EinsoraApiRequest *request, guint code, const char *status)
{
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    JsonObject *root = json_object_new();

    json_object_set_string_member(root, "status", status);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, code, node);
}

void
einsora_api_health_live(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    respond_status(request, SOUP_STATUS_OK, "ok");
}

void
einsora_api_health_ready(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;

    if (!einsora_service_check_ready(einsora_api_server_get_service(server), &error)) {
        einsora_api_request_log(request, G_LOG_LEVEL_WARNING, "not ready: %s", error->message);
        soup_message_headers_replace(
            soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
            "Retry-After", "5");
        respond_status(request, SOUP_STATUS_SERVICE_UNAVAILABLE, "not ready");
        return;
    }
    respond_status(request, SOUP_STATUS_OK, "ready");
}
