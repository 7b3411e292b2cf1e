/* A relay on this machine's loopback to a remote daemon's access proxy
 * (docs/adr/0053): a browser here opens http://w-<id>.localhost:<port>/,
 * and each of its connections is carried, bytes as they are, over TLS to
 * the proxy, with the certificate checked as the client's API calls check
 * it (the pin, or the system's CAs). So the browser still sees one origin
 * per workload, its cookie stays host-only, the ticket one-time, and
 * nothing needs DNS or a wildcard certificate: every check stays on the
 * server. Endpoints' base URLs work through it the same way, at
 * http://127.0.0.1:<port>/. Used from one thread's main loop. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Connections carried at once; one more waits for the listener. */
#define EINSORA_ACCESS_RELAY_MAX_CONNECTIONS 64
/* For the TCP connection and the TLS handshake to the server together. */
#define EINSORA_ACCESS_RELAY_CONNECT_TIMEOUT_S 15

#define EINSORA_TYPE_ACCESS_RELAY (einsora_access_relay_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAccessRelay, einsora_access_relay, EINSORA, ACCESS_RELAY, GObject)

/* To @host (a name or an IP literal, as the API's URL has it) at @port
 * over TLS, trusting what @database trusts.
 *
 * Signals: "failed" (GError *error): a connection to the server couldn't
 * be made (an untrusted certificate, a refused port); the browser's
 * connection is closed, and the relay goes on. */
EinsoraAccessRelay *einsora_access_relay_new(const char *host, guint port, GTlsDatabase *database);
/* Listens on 127.0.0.1:@local_port (0: any free port). */
gboolean einsora_access_relay_listen(EinsoraAccessRelay *self, guint local_port, GError **error);
guint einsora_access_relay_get_port(EinsoraAccessRelay *self);
guint einsora_access_relay_count_connections(EinsoraAccessRelay *self);
/* @url (a link or base URL the server answered) as a browser or OpenAI
 * client here reaches it through the relay: http, this relay's port, the
 * w-<id>.localhost name kept and any other host made 127.0.0.1, path
 * and query as they are. NULL if @url isn't a URL. */
gchar *einsora_access_relay_local_url(EinsoraAccessRelay *self, const char *url);
/* Stops listening and closes every connection it carries. */
void einsora_access_relay_close(EinsoraAccessRelay *self);

G_END_DECLS
