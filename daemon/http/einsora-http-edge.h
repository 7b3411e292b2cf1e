/* The HTTP edge: the one place where every listener of the daemon meets
 * its peers (docs/adr/0025). It owns the listening socket and each
 * connection; it reads and checks every request head itself, then hands
 * libsoup one request at a time as a stream of its own, so libsoup never
 * sees a request that breaks the rules nor keeps a connection alive (its
 * kept-alive connections leak in 3.2: ADR 0023). Keep-alive, deadlines,
 * the connection cap and the framing of what goes out are decided here,
 * the same for every listener. */
#pragma once

#include <gio/gio.h>
#include <libsoup/soup.h>

#include "einsora-http-head.h"

G_BEGIN_DECLS

typedef struct {
    EinsoraHttpHeadLimits head;
    /* A request's head must arrive within this of its first byte (or of
     * the connection's start). */
    guint head_timeout_ms;
    /* Its body: within this of the head's start (0: no total bound)... */
    guint body_timeout_ms;
    /* ...and with no pause longer than this. */
    guint body_idle_timeout_ms;
    /* A kept-alive connection with no request in it is closed after this. */
    guint idle_timeout_ms;
    /* Requests on one connection before it is closed after an answer. */
    guint max_requests;
    /* Connections at once, every edge's together (0: three quarters of
     * the open-file limit, which the edges share). */
    guint max_connections;
    /* Refusals the edge answers itself: JSON problems ({"error": {"code",
     * "message"}}), as the /v1 API answers, or plain text. */
    gboolean json_refusals;
    /* The X-Request-ID of a refusal the edge answers (NULL: none). */
    gchar *(*new_request_id)(void);
} EinsoraHttpEdgeSettings;

/* The defaults: 30 s for a head and a body (EINSORA_TEST_REQUEST_TIMEOUT_MS
 * shortens both, for tests), 60 s idle, 10,000 requests a connection. */
void einsora_http_edge_settings_init(EinsoraHttpEdgeSettings *settings);

#define EINSORA_TYPE_HTTP_EDGE (einsora_http_edge_get_type())
G_DECLARE_FINAL_TYPE(EinsoraHttpEdge, einsora_http_edge, EINSORA, HTTP_EDGE, GObject)

/* @server gets no listener of its own: the edge gives it each request. */
EinsoraHttpEdge *einsora_http_edge_new(SoupServer *server, const EinsoraHttpEdgeSettings *settings);

/* "HOST:PORT" with an IP literal for a host ("[::1]:8080" for IPv6); port
 * 0 picks a free one. The one parser of listen addresses. */
GInetSocketAddress *einsora_http_address_parse(const char *address, GError **error);

/* A bound, listening, non-blocking socket on @address, as every edge
 * listens: a 4,096 backlog, SO_REUSEADDR, IPv6 only for an IPv6 address.
 * (The daemon also asks it before starting, to refuse a port in use.) */
GSocket *einsora_http_listen_socket_new(GInetSocketAddress *address, GError **error);

/* Listens on @address (einsora_http_address_parse()). */
gboolean einsora_http_edge_listen(EinsoraHttpEdge *self, const char *address, GError **error);
guint einsora_http_edge_get_port(EinsoraHttpEdge *self);
/* Connections accepted from now on speak TLS with @certificate (and its
 * private key), or plain HTTP with NULL; those open keep what they have.
 * So a certificate renewed on disk is put in with no restart. */
void einsora_http_edge_set_tls_certificate(EinsoraHttpEdge *self, GTlsCertificate *certificate);
/* TLS connections accepted from now on are asked for a client
 * certificate, checked against @authority (NULL: not asked). A client
 * that sends none, or one that doesn't check, is served all the same:
 * the handler that needs one refuses (einsora_http_message_get_client_certificate()). */
void einsora_http_edge_set_client_authority(EinsoraHttpEdge *self, GTlsDatabase *authority);
gboolean einsora_http_edge_is_tls(EinsoraHttpEdge *self);
/* "http://127.0.0.1:8080/", "https://[::1]:8443/" with TLS, or NULL before
 * listening. */
gchar *einsora_http_edge_get_uri(EinsoraHttpEdge *self);
guint einsora_http_edge_count_connections(EinsoraHttpEdge *self);
guint einsora_http_edge_get_max_connections(EinsoraHttpEdge *self);

/* Each connection is a descriptor, and an edge caps connections at three
 * quarters of the soft limit: systemd's soft 1,024 would make that 768,
 * so the soft limit goes up to the hard one. Call before making edges. */
void einsora_http_raise_open_file_limit(void);

/* For handlers. Cancelled when @message's client hangs up while its
 * answer is awaited (a paused message reads nothing, so libsoup would
 * not notice): the one watch of a peer's hang-up. NULL for a message no
 * edge gave. */
GCancellable *einsora_http_message_get_hangup(SoupServerMessage *message);
/* The same, as a source already attached to the thread's main context:
 * @callback runs once, from the main loop (never inside the cancel), and
 * destroying the source stops the watch. NULL for a message no edge gave. */
GSource *einsora_http_message_watch_hangup(SoupServerMessage *message,
                                           GCancellableSourceFunc callback, gpointer user_data);
/* The socket under @message's connection (the edge's own; a relay after
 * an upgrade may wait on it), or NULL for a message no edge gave. */
GSocket *einsora_http_message_get_socket(SoupServerMessage *message);
/* The fingerprint of the client certificate @message's TLS connection
 * presented, or NULL (none, plain HTTP, or no edge gave it); *@errors:
 * what was wrong with it against the edge's authority (0: it checks:
 * that authority issued it, and it is in its validity). */
const char *einsora_http_message_get_client_certificate(SoupServerMessage *message,
                                                        GTlsCertificateFlags *errors);
/* The connection closes after @message's answer, whatever keep-alive says. */
void einsora_http_message_close_after(SoupServerMessage *message);

G_END_DECLS
