/* One client connection of an HTTP edge: it reads and checks each
 * request's head, gives libsoup that request alone through a stream of
 * its own (an "exchange"), rewrites the answer's head for the connection,
 * and then waits for the next request or closes. Internal to daemon/http. */
#pragma once

#include <gio/gio.h>
#include <libsoup/soup.h>

#include "einsora-http-edge.h"

G_BEGIN_DECLS

typedef struct _EinsoraHttpConnection EinsoraHttpConnection;

/* What a connection needs of its edge. */
typedef struct {
    SoupServer *server;
    const EinsoraHttpEdgeSettings *settings;
    /* The connection is over: the edge drops its reference. */
    void (*closed)(EinsoraHttpConnection *connection, gpointer user_data);
    /* It waits for a request (first to go when the edge is full), or no
     * longer does. */
    void (*waiting)(EinsoraHttpConnection *connection, gboolean waiting, gpointer user_data);
    /* libsoup takes its request: the message, before any handler runs. */
    void (*accepting)(EinsoraHttpConnection *connection, gboolean accepting, gpointer user_data);
    gpointer user_data;
} EinsoraHttpConnectionHost;

EinsoraHttpConnection *einsora_http_connection_new(const EinsoraHttpConnectionHost *host,
                                                   GSocket *socket);
EinsoraHttpConnection *einsora_http_connection_ref(EinsoraHttpConnection *connection);
void einsora_http_connection_unref(EinsoraHttpConnection *connection);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraHttpConnection, einsora_http_connection_unref)

/* The addresses libsoup is told, when @socket isn't the peer's own (the
 * inner end of a TLS front's pair). */
void einsora_http_connection_set_peer(EinsoraHttpConnection *connection, GSocketAddress *local,
                                      GSocketAddress *remote);
/* The certificate its TLS peer sent (its fingerprint; NULL: none) and
 * what was wrong with it (0: it checked against the edge's authority). */
void einsora_http_connection_set_client_certificate(EinsoraHttpConnection *connection,
                                                    const char *fingerprint,
                                                    GTlsCertificateFlags errors);
const char *einsora_http_connection_get_client_certificate(EinsoraHttpConnection *connection,
                                                           GTlsCertificateFlags *errors);
void einsora_http_connection_start(EinsoraHttpConnection *connection);
/* Its deadline (monotonic µs; 0: none now). */
gint64 einsora_http_connection_get_deadline(EinsoraHttpConnection *connection);
/* Past its deadline, or making room: closed (a request being read is
 * cut off; libsoup sees its end of stream). */
void einsora_http_connection_expire(EinsoraHttpConnection *connection, const char *why);
/* The edge goes away: no more calls to the host. */
void einsora_http_connection_detach(EinsoraHttpConnection *connection);
/* Its link in the edge's queue of waiting connections. */
GList *einsora_http_connection_get_waiting_link(EinsoraHttpConnection *connection);

/* The message libsoup is answering on it now. */
void einsora_http_connection_set_message(EinsoraHttpConnection *connection,
                                         SoupServerMessage *message);
SoupServerMessage *einsora_http_connection_get_message(EinsoraHttpConnection *connection);
GCancellable *einsora_http_connection_get_hangup(EinsoraHttpConnection *connection);
GSocket *einsora_http_connection_get_socket(EinsoraHttpConnection *connection);
void einsora_http_connection_close_after(EinsoraHttpConnection *connection);

G_END_DECLS
