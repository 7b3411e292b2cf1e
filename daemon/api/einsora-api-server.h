/* The /v1 API: one SoupServer on the main loop. Handlers are thin: they
 * read the request, call the service (or auth for credentials), and map
 * the answer. */
#pragma once

#include <gio/gio.h>

#include <libsoup/soup.h>

#include "einsora-auth.h"
#include "einsora-login-throttle.h"
#include "einsora-service.h"
#include "einsora-sync-transport.h"
#include "einsora-tunnels.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_API_SERVER (einsora_api_server_get_type())
G_DECLARE_FINAL_TYPE(EinsoraApiServer, einsora_api_server, EINSORA, API_SERVER, GObject)

EinsoraApiServer *einsora_api_server_new(EinsoraService *service, EinsoraAuth *auth,
                                         EinsoraNowFunc now, gpointer now_data);
/* Listens on "HOST:PORT" (an IP literal; port 0 picks a free one). */
gboolean einsora_api_server_listen(EinsoraApiServer *self, const char *address, GError **error);
/* Connections from now on speak TLS with @certificate (NULL: plain
 * HTTP); call before listening, and again with a renewed one. */
void einsora_api_server_set_tls_certificate(EinsoraApiServer *self, GTlsCertificate *certificate);
/* The fingerprint of the certificate it presents (NULL: plain HTTP): the
 * one an agent's join command pins. */
const char *einsora_api_server_get_tls_fingerprint(EinsoraApiServer *self);
/* The directory of the CA that signs agents' client certificates
 * (docs/adr/0055): the daemon's own TLS identity, made when missing.
 * NULL until set: then no machine can enrol. */
gboolean einsora_api_server_set_agent_ca_dir(EinsoraApiServer *self, const char *dir,
                                             GError **error);
const char *einsora_api_server_get_agent_ca_dir(EinsoraApiServer *self);
/* Where POST /agent/v1/sync hands an enrolled machine's report: the hub
 * (docs/adr/0056). NULL until set: then the route is 503. */
void einsora_api_server_set_agent_hub(EinsoraApiServer *self, EinsoraSyncTransport *hub);
EinsoraSyncTransport *einsora_api_server_get_agent_hub(EinsoraApiServer *self);
/* Where GET /agent/v1/tunnel hands an agent's streams (docs/adr/0059),
 * and what a revocation closes. NULL until set: then the route is 503. */
void einsora_api_server_set_tunnels(EinsoraApiServer *self, EinsoraTunnels *tunnels);
EinsoraTunnels *einsora_api_server_get_tunnels(EinsoraApiServer *self);
/* The URI it listens on, e.g. "http://127.0.0.1:8080/", "https://…" with TLS. */
gchar *einsora_api_server_get_uri(EinsoraApiServer *self);

/* The port of the access proxy (EINSORA_ACCESS_ADDR), for the links
 * POST /v1/workloads/{id}/access returns; 8090 until set. */
void einsora_api_server_set_access_port(EinsoraApiServer *self, guint port);
guint einsora_api_server_get_access_port(EinsoraApiServer *self);
/* Whether the access proxy speaks TLS (off loopback): then a browser
 * opens a notebook through a relay on its own machine (docs/adr/0053),
 * and the answers say so. */
void einsora_api_server_set_access_tls(EinsoraApiServer *self, gboolean tls);
gboolean einsora_api_server_get_access_tls(EinsoraApiServer *self);

/* EINSORA_METRICS_OPEN=loopback: GET /metrics without credentials from
 * this machine (docs/adr/0043-metrics.md); off until set. */
void einsora_api_server_set_metrics_open_to_loopback(EinsoraApiServer *self, gboolean open);
gboolean einsora_api_server_get_metrics_open_to_loopback(EinsoraApiServer *self);

EinsoraService *einsora_api_server_get_service(EinsoraApiServer *self);
EinsoraAuth *einsora_api_server_get_auth(EinsoraApiServer *self);
gint64 einsora_api_server_now(EinsoraApiServer *self);
/* Failed sign-ins per client address (docs/adr/0024). */
EinsoraLoginThrottle *einsora_api_server_get_login_throttle(EinsoraApiServer *self);
/* The throttle's key for @message's client: its IPv4 address, or its
 * IPv6 /64. */
gchar *einsora_api_server_client_key(SoupServerMessage *message);
struct _EinsoraApiRequest;
/* Who @request's credentials (bearer token or session cookie) belong to
 * now; a long answer (the event feed) asks again while it runs. (The
 * request's header includes this one: hence the struct.) */
EinsoraActor *einsora_api_server_authenticate(EinsoraApiServer *self,
                                              struct _EinsoraApiRequest *request, GError **error);

G_END_DECLS
