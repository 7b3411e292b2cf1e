/* /v1/workloads: thin handlers over the service. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"
#include "einsora-workload-json.h"

static JsonNode *
workload_json(gconstpointer workload)
{
    return einsora_workload_to_json(workload);
}

static JsonNode *
event_json(gconstpointer event)
{
    return einsora_workload_event_to_json(event);
}

static void
respond_workload(EinsoraApiRequest *request, guint status, const EinsoraWorkload *workload)
{
    g_autoptr(JsonNode) node = einsora_workload_to_json(workload);
    einsora_api_request_respond_json(request, status, node);
}

const EinsoraApiField einsora_api_workloads_create_fields[] = {
    {"kind", G_TYPE_STRING, TRUE},      {"name", G_TYPE_STRING, FALSE},
    {"gpu_class", G_TYPE_STRING, TRUE}, {"image", G_TYPE_STRING, TRUE},
    {"region", G_TYPE_STRING, FALSE},   {NULL},
};

void
einsora_api_workloads_create(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_workloads_create_fields, &error);
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autofree gchar *location = NULL;
    EinsoraWorkloadRequest want;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    want = (EinsoraWorkloadRequest){
        json_object_get_string_member_with_default(body, "kind", NULL),
        json_object_get_string_member_with_default(body, "name", NULL),
        json_object_get_string_member_with_default(body, "gpu_class", NULL),
        json_object_get_string_member_with_default(body, "image", NULL),
        json_object_get_string_member_with_default(body, "region", NULL),
        einsora_api_request_get_idempotency_key(request),
        einsora_api_request_get_request_sha256(request),
    };
    workload =
        einsora_service_create_workload(einsora_api_server_get_service(server),
                                        einsora_api_request_get_actor(request), &want, &error);
    if (workload == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    location = g_strdup_printf("/v1/workloads/%s", workload->id);
    soup_message_headers_replace(
        soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
        "Location", location);
    respond_workload(request, SOUP_STATUS_CREATED, workload);
}

void
einsora_api_workloads_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) workloads = NULL;
    g_autoptr(JsonNode) node = NULL;
    gboolean include_deleted = FALSE;

    if (!einsora_api_request_query_flag(request, "include_deleted", &include_deleted, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    workloads = einsora_service_list_workloads(einsora_api_server_get_service(server),
                                               einsora_api_request_get_actor(request)->tenant_id,
                                               include_deleted, &error);
    if (workloads == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    node = einsora_api_list_to_json("workloads", workloads, workload_json);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

void
einsora_api_workloads_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    gboolean include_deleted = FALSE;

    if (!einsora_api_request_query_flag(request, "include_deleted", &include_deleted, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    workload = einsora_service_get_workload(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request)->tenant_id,
        einsora_api_request_get_param(request, 0), include_deleted, &error);
    if (workload == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    respond_workload(request, SOUP_STATUS_OK, workload);
}

typedef EinsoraWorkload *(*WorkloadAction)(EinsoraService *service, const EinsoraActor *actor,
                                           const char *workload_id, GError **error);

/* Actions are asynchronous: 202 and the state the workload is in now. */
static void
run_action(EinsoraApiServer *server, EinsoraApiRequest *request, WorkloadAction action)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;

    workload =
        action(einsora_api_server_get_service(server), einsora_api_request_get_actor(request),
               einsora_api_request_get_param(request, 0), &error);
    if (workload == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    respond_workload(request, SOUP_STATUS_ACCEPTED, workload);
}

void
einsora_api_workloads_start(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    run_action(server, request, einsora_service_start_workload);
}

void
einsora_api_workloads_stop(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    run_action(server, request, einsora_service_stop_workload);
}

void
einsora_api_workloads_delete(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    run_action(server, request, einsora_service_delete_workload);
}

void
einsora_api_workloads_events(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autoptr(JsonNode) node = NULL;

    events = einsora_service_list_events(einsora_api_server_get_service(server),
                                         einsora_api_request_get_actor(request)->tenant_id,
                                         einsora_api_request_get_param(request, 0), &error);
    if (events == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    node = einsora_api_list_to_json("events", events, event_json);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

void
einsora_api_workloads_export(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) node = NULL;

    node = einsora_service_export_workload(einsora_api_server_get_service(server),
                                           einsora_api_request_get_actor(request)->tenant_id,
                                           einsora_api_request_get_param(request, 0), &error);
    if (node == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
