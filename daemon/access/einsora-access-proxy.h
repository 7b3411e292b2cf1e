/* The access proxy (ADR-0017): opens a running notebook in a browser at
 * http://w-<id>.localhost:<port>/, its own site. Its own SoupServer, on
 * loopback only. It answers only w-<uuid>.localhost hosts (DNS
 * rebinding), refuses what a browser says came from another origin,
 * takes a one-time ticket at that workload's host only, and then keeps
 * a session in memory behind a host-only cookie (einsora_access,
 * HttpOnly, SameSite=Strict) for 12 hours or until the server it opened
 * stops. Requests and WebSocket upgrades are forwarded to the socket and
 * token the backend has for the running workload, with the token added,
 * Host and Origin rewritten and its own cookie removed both ways;
 * responses stream; nothing is reused between requests.
 *
 * On the same listener, by path at 127.0.0.1:<port>, running endpoints'
 * OpenAI-compatible routes (docs/adr/0034): /endpoints/<id>/v1 and the
 * tenant's /v1, to API tokens only, with the worker's own key added. */
#pragma once

#include <gio/gio.h>

#include "einsora-auth.h"
#include "einsora-metrics.h"
#include "einsora-service.h"
#include "einsora-timestamp.h"
#include "einsora-tunnels.h"
#include "einsora-workload-access.h"

G_BEGIN_DECLS

#define EINSORA_ACCESS_SESSION_US (G_GINT64_CONSTANT(12) * 3600 * G_USEC_PER_SEC)
#define EINSORA_ACCESS_OPEN_PATH "/_einsora/open"
/* The largest WebSocket message relayed either way, as Jupyter's own
 * server bounds it (tornado's websocket_max_message_size): past it, both
 * sides are closed with 1009. */
#define EINSORA_ACCESS_WEBSOCKET_MAX_MESSAGE (G_GUINT64_CONSTANT(10) * 1024 * 1024)

#define EINSORA_TYPE_ACCESS_PROXY (einsora_access_proxy_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAccessProxy, einsora_access_proxy, EINSORA, ACCESS_PROXY, GObject)

/* @auth checks the API tokens endpoints are called with. */
EinsoraAccessProxy *einsora_access_proxy_new(EinsoraService *service, EinsoraAuth *auth,
                                             EinsoraWorkloadAccess *targets, EinsoraNowFunc now,
                                             gpointer now_data);

/* "127.0.0.1:8090", ":0" for any free port; loopback addresses only,
 * unless a TLS certificate is set. */
gboolean einsora_access_proxy_listen(EinsoraAccessProxy *self, const char *address, GError **error);
guint einsora_access_proxy_get_port(EinsoraAccessProxy *self);
/* TLS with @certificate for connections accepted from now on (set it
 * before listening off loopback; again on a reload). With TLS, browsers
 * reach a notebook through a relay on their own machine's loopback
 * (`einsora open`, docs/adr/0053): w-<id>.localhost at any port, and
 * endpoints by any name, since they take API tokens only. */
void einsora_access_proxy_set_tls_certificate(EinsoraAccessProxy *self,
                                              GTlsCertificate *certificate);
gboolean einsora_access_proxy_is_tls(EinsoraAccessProxy *self);
/* "http://127.0.0.1:8090/", "https://10.0.0.5:8444/" with TLS. */
gchar *einsora_access_proxy_get_uri(EinsoraAccessProxy *self);
/* Counts into @metrics (docs/adr/0043-metrics.md): requests by kind and
 * status class (einsora_proxy_requests_total), their duration
 * (einsora_proxy_request_duration_seconds), and the WebSocket relays
 * open now (einsora_proxy_websocket_relays_open). Once; requests that
 * began before aren't counted. */
void einsora_access_proxy_set_metrics(EinsoraAccessProxy *self, EinsoraMetrics *metrics);
/* EINSORA_ACCESS_WEBSOCKET_MAX_MESSAGE unless set. */
void einsora_access_proxy_set_websocket_max_message(EinsoraAccessProxy *self, guint64 bytes);
/* Workloads on other machines are reached through their agents' tunnels
 * (docs/adr/0059); without, only this machine's are opened. */
void einsora_access_proxy_set_tunnels(EinsoraAccessProxy *self, EinsoraTunnels *tunnels);
guint einsora_access_proxy_count_sessions(EinsoraAccessProxy *self);
/* How many times a session's way in was looked up through the backend
 * (which reads the store): once when opened and once after each change
 * to its tenant's timeline, never per request. */
guint64 einsora_access_proxy_count_lookups(EinsoraAccessProxy *self);

G_END_DECLS
