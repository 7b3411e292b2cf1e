/* One HTTP/1.1 exchange with a workload's Unix socket, below libsoup's
 * client (docs/adr/0030): a non-blocking connection of its own (never
 * reused), the request head written with one send, the body written as
 * the browser's arrives, the answer's head parsed with libsoup's parser
 * and its body read as the caller asks for it, decoded from its framing.
 * One main-loop source for all of it, on the socket. A plain struct, not
 * a GObject: one is made for every proxied request, and nothing else
 * holds it. */
#pragma once

#include <libsoup/soup.h>

#include "einsora-http-head.h"

G_BEGIN_DECLS

typedef struct _EinsoraUpstream EinsoraUpstream;

/* Each runs from the main loop, never from inside a call of the caller's;
 * the exchange may be freed from any of them. */
typedef struct {
    /* The answer's head (1xx ones are skipped): the body follows on
     * einsora_upstream_read_body(). */
    void (*answered)(EinsoraUpstream *upstream, guint status, const char *reason,
                     SoupMessageHeaders *headers, gpointer user_data);
    /* A piece of the answer's body (NULL: none); @end when it is over,
     * with @error set when the workload broke off or sent what can't be
     * read. */
    void (*body)(EinsoraUpstream *upstream, GBytes *chunk, gboolean end, const GError *error,
                 gpointer user_data);
    /* No answer: the connection failed or closed before a head came. */
    void (*failed)(EinsoraUpstream *upstream, const GError *error, gpointer user_data);
    /* The request body may take more after a write said to wait. */
    void (*drained)(EinsoraUpstream *upstream, gpointer user_data);
} EinsoraUpstreamCallbacks;

/* A request body waiting to go out past this asks the writer to wait. */
#define EINSORA_UPSTREAM_HIGH_MARK (256 * 1024)

/* Connects to the Unix socket at @address (the caller's safe name for
 * it: /proc/self/fd/N of the socket opened without following links) and
 * sends @head, which is wiped (it holds the workload's token). @body: how the request body that
 * follows is framed (NONE, LENGTH or CHUNKED; with CHUNKED, writes are framed here).
 * @head_request: the answer has no body. NULL with @error when the
 * socket can't be opened or connected to. */
EinsoraUpstream *einsora_upstream_new(const char *address, GString *head, EinsoraHttpBody body,
                                      gboolean head_request,
                                      const EinsoraUpstreamCallbacks *callbacks, gpointer user_data,
                                      GError **error);
/* The same on @fd, a connected non-blocking stream socket it takes (a
 * tunnel's end, docs/adr/0059). */
EinsoraUpstream *einsora_upstream_new_for_fd(int fd, GString *head, EinsoraHttpBody body,
                                             gboolean head_request,
                                             const EinsoraUpstreamCallbacks *callbacks,
                                             gpointer user_data);
void einsora_upstream_free(EinsoraUpstream *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraUpstream, einsora_upstream_free)

/* Part of the request body. FALSE: past the high mark; wait for drained.
 * Once the workload stops taking it (it answered early and closed), the
 * rest is dropped. */
gboolean einsora_upstream_write_body(EinsoraUpstream *self, const guint8 *data, gsize length);
/* The request body is over (the last chunk, when chunked). */
void einsora_upstream_finish_body(EinsoraUpstream *self);
/* Asks for the next piece of the answer's body, at most @max bytes (the
 * body callback brings it). One at a time: after it came, ask again. */
void einsora_upstream_read_body(EinsoraUpstream *self, gsize max);

G_END_DECLS
