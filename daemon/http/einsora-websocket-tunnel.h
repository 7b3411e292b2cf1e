/* A WebSocket relayed as frames between two streams (the browser's and
 * the workload's), after both handshakes: bytes pass as they come, with
 * one bounded buffer each way, so a side that stops reading stops the
 * other side's reads instead of growing memory; each direction's frames
 * are followed so that a message over the bound (its fragments summed)
 * closes both sides with 1009 at a frame boundary (docs/adr/0025). */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Bytes buffered each way at most. */
#define EINSORA_WEBSOCKET_TUNNEL_BUFFER (64 * 1024)

typedef struct _EinsoraWebsocketTunnel EinsoraWebsocketTunnel;

/* Called once, when both sides are closed: @close_code is the code the
 * tunnel closed with itself (1009), or 0. */
typedef void (*EinsoraWebsocketTunnelDone)(guint close_code, gpointer user_data);

/* Starts relaying between @client (the browser's side: its frames come
 * masked) and @upstream (the workload's: we are its client, so what we
 * send it ourselves is masked). Both streams must be pollable; @pending
 * is what the workload sent after its handshake, already read (may be
 * NULL). @client_socket, the socket under @client (may be NULL), with an
 * @upstream that is a GSocketConnection: the tunnel waits on the two
 * sockets with one source for its life, instead of a source per wait.
 * The tunnel holds itself (and the streams) until it ends. */
EinsoraWebsocketTunnel *einsora_websocket_tunnel_start(GIOStream *client, GSocket *client_socket,
                                                       GIOStream *upstream, GBytes *pending,
                                                       guint64 max_message,
                                                       EinsoraWebsocketTunnelDone done,
                                                       gpointer user_data);

/* The frame bookkeeping, for tests: feeds @length bytes of one direction
 * and returns how many may be forwarded (up to a frame header that is
 * incomplete, or one whose message would pass @max_message: then
 * *@too_big). -1: not WebSocket framing. */
typedef struct {
    guint8 header[14];
    guint header_length;
    guint64 payload_left;
    guint64 message_bytes;
    gboolean in_message;
} EinsoraWebsocketFrames;

gssize einsora_websocket_frames_feed(EinsoraWebsocketFrames *frames, const guint8 *data,
                                     gsize length, guint64 max_message, gboolean *too_big);
/* Whether what was fed so far ends at a frame boundary. */
gboolean einsora_websocket_frames_at_boundary(const EinsoraWebsocketFrames *frames);

G_END_DECLS
