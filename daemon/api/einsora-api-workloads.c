/* /v1/workloads: thin handlers over the service. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-page.h"
#include "einsora-api-routes.h"
#include "einsora-error.h"
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
    {"kind", G_TYPE_STRING, TRUE},           {"name", G_TYPE_STRING, FALSE},
    {"gpu_class", G_TYPE_STRING, TRUE},      {"image", G_TYPE_STRING, FALSE},
    {"region", G_TYPE_STRING, FALSE},        {"model", G_TYPE_STRING, FALSE},
    {"idle_timeout", G_TYPE_INT64, FALSE},   {"fallback", EINSORA_API_TYPE_STRINGS, FALSE},
    {"fallback_after", G_TYPE_INT64, FALSE}, {NULL},
};

void
einsora_api_workloads_create(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_workloads_create_fields, &error);
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autofree gchar *location = NULL;
    g_autoptr(GPtrArray) fallback = NULL;
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
        json_object_get_string_member_with_default(body, "model", NULL),
        0,
    };
    /* Absent: the daemon's default; 0: none; a negative one is refused. */
    if (json_object_has_member(body, "idle_timeout")) {
        gint64 seconds = json_object_get_int_member(body, "idle_timeout");
        want.idle_timeout_s = seconds == 0 ? -1 : seconds < 0 ? -2 : seconds;
    }
    if (json_object_has_member(body, "fallback")) {
        JsonArray *array = json_object_get_array_member(body, "fallback");
        fallback = g_ptr_array_new();
        for (guint i = 0; i < json_array_get_length(array); i++)
            g_ptr_array_add(fallback, (gpointer)json_array_get_string_element(array, i));
        g_ptr_array_add(fallback, NULL);
        want.fallback = (const char *const *)fallback->pdata;
        want.fallback_after_s = json_object_get_int_member_with_default(body, "fallback_after", 0);
    } else if (json_object_has_member(body, "fallback_after")) {
        g_set_error_literal(&error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "fallback_after goes with fallback");
        einsora_api_request_respond_error(request, error);
        return;
    }
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
    {
        EinsoraService *service = einsora_api_server_get_service(server);
        g_autofree gchar *nowhere = einsora_service_runs_nowhere_reason(service, workload);
        g_autoptr(JsonNode) node = einsora_workload_to_json(workload);

        /* Said in the answer too, not only on the timeline. */
        if (nowhere != NULL)
            json_object_set_string_member(json_node_get_object(node), "warning", nowhere);
        einsora_api_request_respond_json(request, SOUP_STATUS_CREATED, node);
    }
}

/* What a page of workloads is read from. */
typedef struct {
    EinsoraService *service;
    gchar *tenant_id;
    gchar *workload_id; /* a timeline's */
    gboolean include_deleted;
} ListData;

static void
list_data_free(gpointer data)
{
    ListData *list = data;

    g_object_unref(list->service);
    g_free(list->tenant_id);
    g_free(list->workload_id);
    g_free(list);
}

static ListData *
list_data_new(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    ListData *list = g_new0(ListData, 1);

    list->service = g_object_ref(einsora_api_server_get_service(server));
    list->tenant_id = g_strdup(einsora_api_request_get_actor(request)->tenant_id);
    return list;
}

static GPtrArray *
read_workloads(gpointer data, const EinsoraApiPage *page, guint limit, GError **error)
{
    ListData *list = data;

    return einsora_service_list_workloads_page(list->service, list->tenant_id,
                                               list->include_deleted, page->after_key,
                                               page->after_id, limit, error);
}

static void
advance_past_workload(EinsoraApiPage *page, gconstpointer item)
{
    const EinsoraWorkload *workload = item;

    g_free(page->after_key);
    g_free(page->after_id);
    page->after_key = g_strdup(workload->created_at);
    page->after_id = g_strdup(workload->id);
}

static GPtrArray *
read_events(gpointer data, const EinsoraApiPage *page, guint limit, GError **error)
{
    ListData *list = data;

    return einsora_service_list_events_page(list->service, list->tenant_id, list->workload_id,
                                            page->after_seq, limit, error);
}

static void
advance_past_event(EinsoraApiPage *page, gconstpointer item)
{
    page->after_seq = ((const EinsoraWorkloadEvent *)item)->seq;
}

void
einsora_api_workloads_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    const char *tenant_id = einsora_api_request_get_actor(request)->tenant_id;
    EinsoraApiPage *page = NULL;
    ListData *list;
    gboolean include_deleted = FALSE;
    EinsoraApiPageSource source = {
        "workloads", "workloads", tenant_id, read_workloads, advance_past_workload, append_workload,
    };

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
    list = list_data_new(server, request);
    list->include_deleted = include_deleted;
    einsora_api_page_respond(request, &source, page, list, list_data_free);
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
    EinsoraApiPage *page = NULL;
    ListData *list;
    EinsoraApiPageSource source = {
        "events", "workload-events", scope, read_events, advance_past_event, append_event,
    };

    page = einsora_api_page_read(einsora_api_request_get_query(request), "workload-events",
                                 EINSORA_API_PAGE_BY_SEQ, scope, EINSORA_API_PAGE_DEFAULT_LIMIT,
                                 &error);
    if (page == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    list = list_data_new(server, request);
    list->workload_id = g_strdup(workload_id);
    einsora_api_page_respond(request, &source, page, list, list_data_free);
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
