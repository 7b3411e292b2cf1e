/* POST /v1/workloads/{id}/access: a one-time link that opens a running
 * notebook in a browser through the access proxy; for an endpoint, its
 * base URLs. The ticket's secret is
 * in this answer and nowhere else: only its SHA-256 is stored, the access
 * log has the path and status only, and the route takes no
 * Idempotency-Key (a replay would have to keep the answer). The API never
 * talks to the runtime: it only stores the ticket. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#include "einsora-credential.h"

/* Where a client reaches the access proxy: {"port", "tls"}. With TLS the
 * proxy is off this machine's loopback, and a client opens a notebook
 * through a relay on its own (docs/adr/0053). */
static void
set_proxy(EinsoraApiServer *server, JsonObject *root)
{
    JsonObject *proxy = json_object_new();

    json_object_set_int_member(proxy, "port", einsora_api_server_get_access_port(server));
    json_object_set_boolean_member(proxy, "tls", einsora_api_server_get_access_tls(server));
    json_object_set_object_member(root, "proxy", proxy);
}

/* https://<the name this request was sent to>:<proxy port><path>, for a
 * client that calls an endpoint over TLS straight, or NULL. */
static gchar *
tls_url(EinsoraApiServer *server, EinsoraApiRequest *request, const char *path)
{
    SoupMessageHeaders *headers =
        soup_server_message_get_request_headers(einsora_api_request_get_message(request));
    const char *host = soup_message_headers_get_one(headers, "Host");
    g_autofree gchar *text = NULL;
    g_autoptr(GUri) uri = NULL;

    if (host == NULL)
        return NULL;
    text = g_strdup_printf("https://%s/", host);
    uri = g_uri_parse(text, G_URI_FLAGS_NONE, NULL);
    if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0')
        return NULL;
    return g_uri_join(G_URI_FLAGS_NONE, "https", NULL, g_uri_get_host(uri),
                      (gint)einsora_api_server_get_access_port(server), path, NULL, NULL);
}

/* An endpoint: its base URLs, with no ticket and no expiry (docs/adr/0034):
 * API tokens are checked on every call, so there is nothing to hand out. */
static void
respond_endpoint(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = einsora_service_endpoint_access(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), &error);
    guint port = einsora_api_server_get_access_port(server);
    g_autofree gchar *base_url = NULL;
    g_autofree gchar *tenant_base_url = NULL;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *root;

    if (workload == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (einsora_api_server_get_access_tls(server)) {
        g_autofree gchar *path = g_strdup_printf("/endpoints/%s/v1", workload->id);
        base_url = tls_url(server, request, path);
        tenant_base_url = tls_url(server, request, "/v1");
    }
    if (base_url == NULL || tenant_base_url == NULL) {
        g_free(base_url);
        g_free(tenant_base_url);
        base_url = g_strdup_printf("http://127.0.0.1:%u/endpoints/%s/v1", port, workload->id);
        tenant_base_url = g_strdup_printf("http://127.0.0.1:%u/v1", port);
    }
    root = json_object_new();
    json_object_set_string_member(root, "base_url", base_url);
    json_object_set_string_member(root, "tenant_base_url", tenant_base_url);
    json_object_set_string_member(root, "model", workload->name);
    set_proxy(server, root);
    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

void
einsora_api_workloads_access(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *secret =
        einsora_credential_new_secret(EINSORA_CREDENTIAL_ACCESS_TICKET_PREFIX);
    g_autofree gchar *hash = NULL;
    g_autofree gchar *url = NULL;
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *root;
    g_autoptr(EinsoraWorkload) workload = einsora_service_get_workload(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request)->tenant_id,
        einsora_api_request_get_param(request, 0), FALSE, NULL);

    if (workload != NULL && workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT) {
        respond_endpoint(server, request);
        return;
    }
    if (secret == NULL) {
        g_set_error_literal(&error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "no random bytes for an access ticket");
        einsora_api_request_respond_error(request, error);
        return;
    }
    hash = einsora_credential_sha256_hex(secret);
    ticket = einsora_service_grant_access(einsora_api_server_get_service(server),
                                          einsora_api_request_get_actor(request),
                                          einsora_api_request_get_param(request, 0), hash, &error);
    if (ticket == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    /* Each workload is its own site, so its pages can't use the
     * dashboard's session or another workload's. The secret is base64url:
     * safe in a query as it is. */
    url = g_strdup_printf("http://w-%s.localhost:%u/_einsora/open?ticket=%s", ticket->workload_id,
                          einsora_api_server_get_access_port(server), secret);
    root = json_object_new();
    json_object_set_string_member(root, "url", url);
    json_object_set_string_member(root, "expires_at", ticket->expires_at);
    set_proxy(server, root);
    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_CREATED, node);
}
