/* GET /metrics: the daemon's metrics in Prometheus' text format 0.0.4
 * (docs/adr/0043-metrics.md). Machine-wide, so only the tenant that owns
 * this machine reads them, with its token or session as any request;
 * another tenant is 403. With EINSORA_METRICS_OPEN=loopback a request
 * that carries no credentials is answered too, when it comes from this
 * machine and not through a proxy that says it forwarded it. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#include "einsora-metrics.h"

static gboolean
carries_credentials(SoupServerMessage *msg)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);

    return soup_message_headers_get_one(headers, "Authorization") != NULL ||
           soup_message_headers_get_one(headers, "Cookie") != NULL;
}

/* A reverse proxy on this machine makes every request look local: one
 * that says it forwarded the request is taken at its word. */
static gboolean
from_this_machine(SoupServerMessage *msg)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    GSocketAddress *address = soup_server_message_get_remote_address(msg);

    if (soup_message_headers_get_one(headers, "Forwarded") != NULL ||
        soup_message_headers_get_one(headers, "X-Forwarded-For") != NULL)
        return FALSE;
    return address != NULL && G_IS_INET_SOCKET_ADDRESS(address) &&
           g_inet_address_get_is_loopback(
               g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address)));
}

void
einsora_api_metrics_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    SoupServerMessage *msg = einsora_api_request_get_message(request);
    g_autoptr(GError) error = NULL;
    GString *text;

    if (!einsora_api_server_get_metrics_open_to_loopback(server) || carries_credentials(msg) ||
        !from_this_machine(msg)) {
        EinsoraActor *actor = einsora_api_server_authenticate(server, request, &error);
        if (actor == NULL) {
            einsora_api_request_respond_error(request, error);
            return;
        }
        /* Outside the routes' table, so the gate of a reset password is
         * applied here too. */
        if (actor->password_must_change) {
            einsora_actor_free(actor);
            einsora_api_request_respond_problem(
                request, SOUP_STATUS_FORBIDDEN, "password_change_required",
                "your password was reset: change it first (POST /v1/me/password)");
            return;
        }
        einsora_api_request_set_actor(request, actor);
    }
    text = einsora_service_render_metrics(einsora_api_server_get_service(server),
                                          einsora_api_request_get_actor(request), &error);
    if (text == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    einsora_api_request_respond_empty(request, SOUP_STATUS_OK);
    {
        gsize length = text->len;
        soup_server_message_set_response(msg, EINSORA_METRICS_CONTENT_TYPE, SOUP_MEMORY_TAKE,
                                         g_string_free(text, FALSE), length);
    }
}
