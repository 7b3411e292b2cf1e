/* The server's ends of the tunnels networked agents open to it
 * (docs/adr/0059): an agent behind NAT can't be dialled, so it dials in,
 * when its sync's answer asks (a request found no stream), and keeps one
 * ready while its workloads are being used.
 * Each of its streams is an mTLS connection to GET /agent/v1/tunnel,
 * switched (101) to plain bytes and held here idle until the access
 * proxy needs a way to a workload on that machine. Then one line goes
 * down it saying which workload (and how many more streams are wanted),
 * and from there it carries one proxied request or WebSocket: the
 * agent connects it to the workload's own Unix socket and adds the
 * workload's token, which never leaves its machine.
 *
 * The proxy gets its end at once, as the local end of a socket pair: a
 * request written before a stream is free waits in the pair, and one not
 * taken in time is closed unanswered (the proxy's 502). Bounded: a few
 * idle streams per machine (the newest kept: an old one is likelier to
 * have died with a link) and a cap on streams open or waiting. Internal
 * to the daemon; nothing here logs a workload's token (none passes). */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Idle streams kept per machine: past it the oldest is closed. */
#define EINSORA_TUNNELS_IDLE_MAX 4
/* Streams carrying or waiting for a request, per machine. */
#define EINSORA_TUNNELS_ACTIVE_MAX 64
/* How long a request waits for a free stream before it is closed. */
#define EINSORA_TUNNELS_WAIT_MS 10000
/* The line that opens a stream, at most, with its newline. */
#define EINSORA_TUNNELS_PREAMBLE_MAX 1024
/* What a stream asks for in its upgrade. */
#define EINSORA_TUNNELS_PROTOCOL "einsora-tunnel/1"

#define EINSORA_TYPE_TUNNELS (einsora_tunnels_get_type())
G_DECLARE_FINAL_TYPE(EinsoraTunnels, einsora_tunnels, EINSORA, TUNNELS, GObject)

EinsoraTunnels *einsora_tunnels_new(void);

/* @machine_id's agent made @stream (the connection taken at its 101,
 * with nothing of the agent's read past its request): it waits, idle,
 * for a request. The agent sends nothing until it is given one; a
 * stream that speaks or hangs up while idle is closed. */
void einsora_tunnels_add(EinsoraTunnels *self, const char *machine_id, GIOStream *stream);

/* A way to @workload_id (its @attempt) on @machine_id: a connected,
 * non-blocking socket, the caller's to close, on which it speaks HTTP/1.1
 * as to the workload's own socket (one request, then close). @scheme:
 * how the agent adds the token ("token" for a notebook's server,
 * "Bearer" for an endpoint's worker). -1 with @error when the machine
 * has too many streams open already. */
int einsora_tunnels_open(EinsoraTunnels *self, const char *machine_id, const char *workload_id,
                         gint64 attempt, const char *scheme, GError **error);

/* Asks @machine_id's agent for @count more streams (the hub answers its
 * held sync asking it to open them): called when a request finds no idle
 * stream. FALSE when that agent can't be asked. */
typedef gboolean (*EinsoraTunnelsWant)(const char *machine_id, guint count, gpointer user_data);
void einsora_tunnels_set_want(EinsoraTunnels *self, EinsoraTunnelsWant want, gpointer user_data);

/* The machine was revoked (or removed): every stream of it, idle,
 * waiting or carrying, is closed now. */
void einsora_tunnels_close_machine(EinsoraTunnels *self, const char *machine_id);

/* For tests and /metrics. */
guint einsora_tunnels_count_idle(EinsoraTunnels *self, const char *machine_id);
guint einsora_tunnels_count_active(EinsoraTunnels *self, const char *machine_id);
/* Streams ever given a request, all machines. */
guint64 einsora_tunnels_count_opened(EinsoraTunnels *self);

G_END_DECLS
