/* GET /agent/v1/tunnel: a networked agent's stream for the access proxy
 * (docs/adr/0059). Authenticated as its sync is, by the client
 * certificate (a revoked one finds no machine); answered 101 with
 * Upgrade: einsora-tunnel/1, and from there the connection is the
 * tunnels' (EinsoraTunnels), idle until a request for a workload on that
 * machine comes. The switch takes nothing from the body: a stream sends
 * none. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#include "einsora-http-edge.h"
#include "einsora-tunnels.h"

typedef struct {
    EinsoraTunnels *tunnels;
    gchar *machine_id;
    gulong wrote_handler;
    gulong finished_handler;
} Switch;

static void
switch_free(Switch *pending)
{
    g_object_unref(pending->tunnels);
    g_free(pending->machine_id);
    g_free(pending);
}

/* The agent has its 101: the connection is a stream now. */
static void
on_switched(SoupServerMessage *message, gpointer user_data)
{
    Switch *pending = user_data;
    g_autoptr(GIOStream) stream = NULL;

    g_clear_signal_handler(&pending->wrote_handler, message);
    g_clear_signal_handler(&pending->finished_handler, message);
    stream = soup_server_message_steal_connection(message);
    if (stream != NULL)
        einsora_tunnels_add(pending->tunnels, pending->machine_id, stream);
    switch_free(pending);
}

/* The 101 couldn't be written (the agent left). */
static void
on_finished(SoupServerMessage *message, gpointer user_data)
{
    Switch *pending = user_data;

    g_clear_signal_handler(&pending->wrote_handler, message);
    g_clear_signal_handler(&pending->finished_handler, message);
    switch_free(pending);
}

void
einsora_api_agent_tunnel(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(message);
    EinsoraService *service = einsora_api_server_get_service(server);
    EinsoraTunnels *tunnels = einsora_api_server_get_tunnels(server);
    const char *problem = einsora_api_agent_certificate_problem(message);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    SoupMessageHeaders *answer;
    Switch *pending;

    if (problem != NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_UNAUTHORIZED, "unauthenticated",
                                            problem);
        return;
    }
    machine = einsora_service_find_agent_machine(
        service, einsora_http_message_get_client_certificate(message, NULL), &error);
    if (machine == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (!soup_message_headers_header_contains(headers, "Connection", "Upgrade") ||
        g_strcmp0(soup_message_headers_get_one(headers, "Upgrade"), EINSORA_TUNNELS_PROTOCOL) !=
            0) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                                            "a tunnel asks for Connection: Upgrade and "
                                            "Upgrade: " EINSORA_TUNNELS_PROTOCOL);
        return;
    }
    if (tunnels == NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_SERVICE_UNAVAILABLE, "unavailable",
                                            "this daemon opens no workloads through tunnels");
        return;
    }
    pending = g_new0(Switch, 1);
    pending->tunnels = g_object_ref(tunnels);
    pending->machine_id = g_strdup(machine->id);
    answer = soup_server_message_get_response_headers(message);
    soup_message_headers_replace(answer, "Upgrade", EINSORA_TUNNELS_PROTOCOL);
    soup_message_headers_replace(answer, "Connection", "Upgrade");
    soup_server_message_set_status(message, SOUP_STATUS_SWITCHING_PROTOCOLS, NULL);
    pending->wrote_handler =
        g_signal_connect(message, "wrote-informational", G_CALLBACK(on_switched), pending);
    pending->finished_handler =
        g_signal_connect(message, "finished", G_CALLBACK(on_finished), pending);
    einsora_api_request_log(request, G_LOG_LEVEL_DEBUG, "machine %s opened a tunnel", machine->id);
}
