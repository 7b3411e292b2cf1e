/* /v1/workloads: thin handlers over the service. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-page.h"
#include "einsora-api-routes.h"
#include "einsora-workload-json.h"

static void
append_workload(GString *out, gconstpointer workload)
{
    einsora_workload_append_json(out, workload);
}

static void
append_event(GString *out, gconstpointer event)
{
    einsora_workload_event_append_json(out, event, FALSE);
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
    const char *tenant_id = einsora_api_request_get_actor(request)->tenant_id;
    g_autoptr(EinsoraApiPage) page = NULL;
    g_autoptr(GPtrArray) workloads = NULL;
    g_autofree gchar *next_cursor = NULL;
    gboolean include_deleted = FALSE;

    if (!einsora_api_request_query_flag(request, "include_deleted", &include_deleted, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    page = einsora_api_page_read(einsora_api_request_get_query(request), "workloads",
                                 EINSORA_API_PAGE_BY_CREATED, tenant_id,
                                 EINSORA_API_PAGE_DEFAULT_LIMIT, &error);
    if (page == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    /* One row more than the page says whether there is a next one. */
    workloads = einsora_service_list_workloads_page(einsora_api_server_get_service(server),
                                                    tenant_id, include_deleted, page->after_key,
                                                    page->after_id, page->limit + 1, &error);
    if (workloads == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (workloads->len > page->limit) {
        const EinsoraWorkload *last = g_ptr_array_index(workloads, page->limit - 1);
        next_cursor =
            einsora_api_page_cursor("workloads", tenant_id, last->created_at, last->id, 0);
    }
    einsora_api_request_respond_text(
        request, SOUP_STATUS_OK,
        einsora_api_page_write("workloads", workloads, page->limit, append_workload, next_cursor));
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
    const char *tenant_id = einsora_api_request_get_actor(request)->tenant_id;
    const char *workload_id = einsora_api_request_get_param(request, 0);
    g_autofree gchar *scope = g_strjoin("\n", tenant_id, workload_id, NULL);
    g_autoptr(EinsoraApiPage) page = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autofree gchar *next_cursor = NULL;

    page = einsora_api_page_read(einsora_api_request_get_query(request), "workload-events",
                                 EINSORA_API_PAGE_BY_SEQ, scope, EINSORA_API_PAGE_DEFAULT_LIMIT,
                                 &error);
    if (page == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    events =
        einsora_service_list_events_page(einsora_api_server_get_service(server), tenant_id,
                                         workload_id, page->after_seq, page->limit + 1, &error);
    if (events == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (events->len > page->limit) {
        const EinsoraWorkloadEvent *last = g_ptr_array_index(events, page->limit - 1);
        next_cursor = einsora_api_page_cursor("workload-events", scope, NULL, NULL, last->seq);
    }
    einsora_api_request_respond_text(
        request, SOUP_STATUS_OK,
        einsora_api_page_write("events", events, page->limit, append_event, next_cursor));
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
