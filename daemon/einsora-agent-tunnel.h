/* A networked agent's side of its tunnels (docs/adr/0059): the server
 * can't dial a machine behind NAT, so the agent opens streams to it
 * (GET /agent/v1/tunnel over mutual TLS, switched to plain bytes) when its
 * sync's answer asks, and keeps one ready while they are used, for the
 * access proxy to send a request down. The stream's first line
 * names the workload; the agent connects it to that workload's own Unix
 * socket, if it runs here in that attempt, adds the workload's token to
 * the request's head (the server never has it) and masks the token in
 * what comes back, then relays both ways until either side closes. Each
 * stream carries one request or WebSocket; one taken is replaced at
 * once, with as many more as the server says are waiting. */
#pragma once

#include <gio/gio.h>

#include "einsora-access-source.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_AGENT_TUNNEL (einsora_agent_tunnel_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAgentTunnel, einsora_agent_tunnel, EINSORA, AGENT_TUNNEL, GObject)

/* To @server ("https://HOST:PORT", whose certificate is @fingerprint's),
 * presenting @certificate; ways in from @source (the agent). */
EinsoraAgentTunnel *einsora_agent_tunnel_new(const char *server, const char *fingerprint,
                                             GTlsCertificate *certificate,
                                             EinsoraAccessSource *source);
/* Opens nothing yet: streams open when the server asks. */
void einsora_agent_tunnel_start(EinsoraAgentTunnel *self);
/* The server asked for @count streams (a desired state's open_tunnels):
 * they open now, and one is kept ready for a while after. */
void einsora_agent_tunnel_open(EinsoraAgentTunnel *self, guint count);
/* Closes every stream. */
void einsora_agent_tunnel_stop(EinsoraAgentTunnel *self);
/* Idle streams open to the server now, and requests carried so far: for
 * tests. */
guint einsora_agent_tunnel_count_idle(EinsoraAgentTunnel *self);
guint64 einsora_agent_tunnel_count_carried(EinsoraAgentTunnel *self);

G_END_DECLS
