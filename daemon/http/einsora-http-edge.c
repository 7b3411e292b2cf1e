#define G_LOG_DOMAIN "einsora-http"

#include "einsora-http-edge.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/resource.h>

#include "einsora-http-connection.h"
#include "einsora-tls-front.h"

#define DEFAULT_TIMEOUT_MS (30 * 1000)
#define DEFAULT_IDLE_TIMEOUT_MS (60 * 1000)
#define DEFAULT_MAX_REQUESTS 10000
/* Tests only: a shorter head, body and idle timeout, in milliseconds. */
#define TIMEOUT_TEST_VARIABLE "EINSORA_TEST_REQUEST_TIMEOUT_MS"
/* Connections held at once: at most this many, and at most three
 * quarters of the open-file limit, so the store, the agents and the
 * other listener keep the rest. */
#define MAX_CONNECTIONS_CEILING 32768
#define MIN_CONNECTIONS 64
/* Connections the kernel completes before we accept them (capped by
 * net.core.somaxconn); GLib's default of 10 makes a burst wait for SYN
 * retries, a second each. */
#define LISTEN_BACKLOG 4096
/* Connections accepted per main-loop iteration, and the pause when
 * accepting fails (out of descriptors). */
#define ACCEPT_BATCH 256
#define ACCEPT_PAUSE_MS 100
/* How often deadlines are checked: one timer, not one per connection. */
#define SWEEP_INTERVAL_MS 1000

/* Descriptors a connection holds: its socket, and with TLS the pair its
 * front relays through. The cap counts descriptors, as the limit does. */
#define PLAIN_WEIGHT 1
#define TLS_WEIGHT 3

#define CONNECTION_KEY "einsora-http-connection"
#define HANGUP_KEY "einsora-http-hangup"

struct _EinsoraHttpEdge {
    GObject parent_instance;
    SoupServer *server;
    EinsoraHttpEdgeSettings settings;
    EinsoraHttpConnectionHost host;
    GSocket *listener;
    GSource *incoming;
    guint accept_pause_id;
    GSource *sweep;
    /* NULL: plain HTTP. */
    GTlsCertificate *certificate;
    GTlsDatabase *client_authority;
    /* Every open connection (a reference each), to its weight. */
    GHashTable *connections;
    /* The TLS front of each TLS connection. */
    GHashTable *fronts;
    /* Those waiting for a request, longest first: they make room. */
    GQueue waiting;
    /* The connection whose request libsoup is taking right now. */
    EinsoraHttpConnection *accepting;
    gulong request_started_id;
};

G_DEFINE_FINAL_TYPE(EinsoraHttpEdge, einsora_http_edge, G_TYPE_OBJECT)

/* Every edge's connections together, by weight: the cap is the
 * process's, since the edges share its open-file limit. */
static gint all_connections;

static gboolean resume_accepting(gpointer user_data);

static guint
positive_test_variable(const char *name, guint fallback)
{
    const char *text = g_getenv(name);
    guint64 value = 0;

    if (text == NULL || !g_ascii_string_to_unsigned(text, 10, 1, G_MAXUINT32, &value, NULL))
        return fallback;
    return (guint)value;
}

void
einsora_http_edge_settings_init(EinsoraHttpEdgeSettings *settings)
{
    guint timeout_ms = positive_test_variable(TIMEOUT_TEST_VARIABLE, DEFAULT_TIMEOUT_MS);

    *settings = (EinsoraHttpEdgeSettings){
        .head = *einsora_http_head_limits_default(),
        .head_timeout_ms = timeout_ms,
        .body_timeout_ms = timeout_ms,
        .body_idle_timeout_ms = timeout_ms,
        .idle_timeout_ms = positive_test_variable(TIMEOUT_TEST_VARIABLE, DEFAULT_IDLE_TIMEOUT_MS),
        .max_requests = DEFAULT_MAX_REQUESTS,
        .max_connections = 0,
        .json_refusals = FALSE,
    };
}

static guint
max_connections_for_limit(void)
{
    struct rlimit limit;

    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return MAX_CONNECTIONS_CEILING;
    return (guint)CLAMP(limit.rlim_cur / 4 * 3, MIN_CONNECTIONS, MAX_CONNECTIONS_CEILING);
}

void
einsora_http_raise_open_file_limit(void)
{
    struct rlimit limit;

    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max)
        return;
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
        g_message("couldn't raise the open-file limit: %s", g_strerror(errno));
}

static void
einsora_http_edge_dispose(GObject *object)
{
    EinsoraHttpEdge *self = EINSORA_HTTP_EDGE(object);

    if (self->incoming != NULL) {
        g_source_destroy(self->incoming);
        self->incoming = NULL;
    }
    g_clear_handle_id(&self->accept_pause_id, g_source_remove);
    if (self->listener != NULL)
        g_socket_close(self->listener, NULL);
    g_clear_object(&self->listener);
    if (self->sweep != NULL) {
        g_source_destroy(self->sweep);
        g_clear_pointer(&self->sweep, g_source_unref);
    }
    if (self->connections != NULL) {
        GHashTableIter iter;
        gpointer key;
        gpointer weight;
        g_hash_table_iter_init(&iter, self->connections);
        while (g_hash_table_iter_next(&iter, &key, &weight)) {
            einsora_http_connection_detach(key);
            g_atomic_int_add(&all_connections, -(gint)GPOINTER_TO_UINT(weight));
        }
        g_clear_pointer(&self->connections, g_hash_table_unref);
    }
    /* A connection still in libsoup's hands sees its end of stream. */
    g_clear_pointer(&self->fronts, g_hash_table_unref);
    g_clear_object(&self->certificate);
    g_clear_object(&self->client_authority);
    /* Its links are the connections' own. */
    g_queue_init(&self->waiting);
    if (self->server != NULL)
        g_clear_signal_handler(&self->request_started_id, self->server);
    g_clear_object(&self->server);
    G_OBJECT_CLASS(einsora_http_edge_parent_class)->dispose(object);
}

static void
einsora_http_edge_class_init(EinsoraHttpEdgeClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = einsora_http_edge_dispose;
}

static void
einsora_http_edge_init(EinsoraHttpEdge *self)
{
    self->connections = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                              (GDestroyNotify)einsora_http_connection_unref, NULL);
    self->fronts = g_hash_table_new_full(g_direct_hash, g_direct_equal,
                                         (GDestroyNotify)einsora_tls_front_close, NULL);
    g_queue_init(&self->waiting);
}

static gboolean
release_later(gpointer data)
{
    return G_SOURCE_REMOVE;
}

static void
on_connection_closed(EinsoraHttpConnection *connection, gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;
    gpointer weight;

    /* The table's reference may be the last: not while it is working. */
    einsora_http_connection_ref(connection);
    if (g_hash_table_lookup_extended(self->connections, connection, NULL, &weight)) {
        g_atomic_int_add(&all_connections, -(gint)GPOINTER_TO_UINT(weight));
        g_hash_table_remove(self->connections, connection);
    }
    g_idle_add_full(G_PRIORITY_DEFAULT, release_later, connection,
                    (GDestroyNotify)einsora_http_connection_unref);
}

static void
on_connection_waiting(EinsoraHttpConnection *connection, gboolean waiting, gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;
    GList *link = einsora_http_connection_get_waiting_link(connection);

    if (waiting)
        g_queue_push_tail_link(&self->waiting, link);
    else if (link->prev != NULL || link->next != NULL || self->waiting.head == link)
        g_queue_unlink(&self->waiting, link);
}

static void
on_connection_accepting(EinsoraHttpConnection *connection, gboolean accepting, gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;

    self->accepting = accepting ? connection : NULL;
}

/* libsoup starts the message of the request the edge is giving it (it
 * does so inside soup_server_accept_iostream()): tie them together. */
static void
on_request_started(SoupServer *server, SoupServerMessage *message, gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;

    if (self->accepting == NULL)
        return;
    einsora_http_connection_set_message(self->accepting, message);
    g_object_set_data_full(G_OBJECT(message), CONNECTION_KEY,
                           einsora_http_connection_ref(self->accepting),
                           (GDestroyNotify)einsora_http_connection_unref);
    g_object_set_data_full(G_OBJECT(message), HANGUP_KEY,
                           g_object_ref(einsora_http_connection_get_hangup(self->accepting)),
                           g_object_unref);
}

static gboolean
on_sweep(gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;
    gint64 now = g_get_monotonic_time();
    g_autoptr(GPtrArray) expired =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_http_connection_unref);
    GHashTableIter iter;
    gpointer key;

    g_hash_table_iter_init(&iter, self->connections);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        gint64 deadline = einsora_http_connection_get_deadline(key);
        if (deadline != 0 && deadline <= now)
            g_ptr_array_add(expired, einsora_http_connection_ref(key));
    }
    for (guint i = 0; i < expired->len; i++)
        einsora_http_connection_expire(g_ptr_array_index(expired, i), "past its deadline");
    return G_SOURCE_CONTINUE;
}

EinsoraHttpEdge *
einsora_http_edge_new(SoupServer *server, const EinsoraHttpEdgeSettings *settings)
{
    EinsoraHttpEdge *self = g_object_new(EINSORA_TYPE_HTTP_EDGE, NULL);
    guint sweep_ms;

    self->server = g_object_ref(server);
    self->settings = *settings;
    if (self->settings.max_connections == 0)
        self->settings.max_connections = max_connections_for_limit();
    self->host = (EinsoraHttpConnectionHost){
        .server = server,
        .settings = &self->settings,
        .closed = on_connection_closed,
        .waiting = on_connection_waiting,
        .accepting = on_connection_accepting,
        .user_data = self,
    };
    self->request_started_id =
        g_signal_connect(server, "request-started", G_CALLBACK(on_request_started), self);
    sweep_ms =
        MIN(SWEEP_INTERVAL_MS,
            MIN(self->settings.head_timeout_ms, self->settings.body_idle_timeout_ms) / 4 + 1);
    self->sweep = g_timeout_source_new(sweep_ms);
    g_source_set_callback(self->sweep, on_sweep, self, NULL);
    g_source_attach(self->sweep, g_main_context_get_thread_default());
    return self;
}

/* Over the cap, the connection that has waited longest for a request
 * makes room; with none waiting, the newcomer is turned away. */
static void
make_room(EinsoraHttpEdge *self, EinsoraHttpConnection *newcomer)
{
    EinsoraHttpConnection *oldest;

    if ((guint)g_atomic_int_get(&all_connections) <= self->settings.max_connections)
        return;
    g_message("%u connections open, the most allowed: closing the one waiting longest",
              self->settings.max_connections);
    oldest = g_queue_is_empty(&self->waiting) ? newcomer : g_queue_peek_head(&self->waiting);
    einsora_http_connection_expire(oldest, "making room");
}

static void
on_client_certificate(const char *fingerprint, GTlsCertificateFlags errors, gpointer user_data)
{
    einsora_http_connection_set_client_certificate(user_data, fingerprint, errors);
}

static void
on_front_done(EinsoraTlsFront *front, gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;

    g_hash_table_remove(self->fronts, front);
}

/* A TLS connection: the connection reads the inner end of its front's
 * pair, and sees the TCP peer's addresses as its own. */
static EinsoraHttpConnection *
accept_tls(EinsoraHttpEdge *self, GSocket *socket)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocket) inner = NULL;
    g_autoptr(GSocketAddress) local = g_socket_get_local_address(socket, NULL);
    g_autoptr(GSocketAddress) remote = g_socket_get_remote_address(socket, NULL);
    EinsoraTlsFront *front = einsora_tls_front_new(socket, self->certificate, &inner, &error);
    EinsoraHttpConnection *connection;

    if (front == NULL) {
        g_message("couldn't take a TLS connection: %s", error->message);
        return NULL;
    }
    g_socket_set_option(socket, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
    connection = einsora_http_connection_new(&self->host, inner);
    einsora_http_connection_set_peer(connection, local, remote);
    if (self->client_authority != NULL)
        einsora_tls_front_request_client_certificate(
            front, self->client_authority, on_client_certificate,
            einsora_http_connection_ref(connection), (GDestroyNotify)einsora_http_connection_unref);
    g_hash_table_add(self->fronts, front);
    einsora_tls_front_start(front, on_front_done, self);
    return connection;
}

static gboolean
on_incoming(GSocket *listener, GIOCondition condition, gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;

    for (guint i = 0; i < ACCEPT_BATCH; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GSocket) socket = g_socket_accept(listener, NULL, &error);
        EinsoraHttpConnection *connection;
        guint weight;

        if (socket == NULL) {
            if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
                return G_SOURCE_CONTINUE;
            /* Out of descriptors, most likely: pause rather than spin on
             * a connection that stays pending. */
            g_message("couldn't accept a connection: %s; pausing for %d ms", error->message,
                      ACCEPT_PAUSE_MS);
            self->incoming = NULL;
            self->accept_pause_id = g_timeout_add(ACCEPT_PAUSE_MS, resume_accepting, self);
            return G_SOURCE_REMOVE;
        }
        connection = self->certificate != NULL ? accept_tls(self, socket)
                                               : einsora_http_connection_new(&self->host, socket);
        if (connection == NULL)
            continue;
        weight = self->certificate != NULL ? TLS_WEIGHT : PLAIN_WEIGHT;
        g_hash_table_insert(self->connections, connection, GUINT_TO_POINTER(weight));
        g_atomic_int_add(&all_connections, (gint)weight);
        einsora_http_connection_start(connection);
        make_room(self, connection);
    }
    return G_SOURCE_CONTINUE;
}

static void
start_accepting(EinsoraHttpEdge *self)
{
    GSource *source = g_socket_create_source(self->listener, G_IO_IN, NULL);

    g_source_set_callback(source, G_SOURCE_FUNC(on_incoming), self, NULL);
    g_source_attach(source, g_main_context_get_thread_default());
    self->incoming = source;
    g_source_unref(source);
}

static gboolean
resume_accepting(gpointer user_data)
{
    EinsoraHttpEdge *self = user_data;

    self->accept_pause_id = 0;
    start_accepting(self);
    return G_SOURCE_REMOVE;
}

GInetSocketAddress *
einsora_http_address_parse(const char *address, GError **error)
{
    g_autoptr(GSocketConnectable) parsed = g_network_address_parse(address, 0, NULL);
    g_autoptr(GInetAddress) host = NULL;

    if (parsed != NULL)
        host = g_inet_address_new_from_string(
            g_network_address_get_hostname(G_NETWORK_ADDRESS(parsed)));
    if (host == NULL || strchr(address, ':') == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "\"%s\" is not an IP address and port, like 127.0.0.1:8080", address);
        return NULL;
    }
    return G_INET_SOCKET_ADDRESS(
        g_inet_socket_address_new(host, g_network_address_get_port(G_NETWORK_ADDRESS(parsed))));
}

GSocket *
einsora_http_listen_socket_new(GInetSocketAddress *address, GError **error)
{
    GSocketFamily family = g_inet_address_get_family(g_inet_socket_address_get_address(address));
    g_autoptr(GSocket) listener =
        g_socket_new(family, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, error);

    if (listener == NULL)
        return NULL;
    g_socket_set_blocking(listener, FALSE);
    /* An IPv6 address means IPv6 only. */
    if (family == G_SOCKET_FAMILY_IPV6 &&
        !g_socket_set_option(listener, IPPROTO_IPV6, IPV6_V6ONLY, 1, error))
        return NULL;
    g_socket_set_listen_backlog(listener, LISTEN_BACKLOG);
    /* SO_REUSEADDR: only a listener is in the way, not a connection of
     * the last run still closing. */
    if (!g_socket_bind(listener, G_SOCKET_ADDRESS(address), TRUE, error) ||
        !g_socket_listen(listener, error))
        return NULL;
    return g_steal_pointer(&listener);
}

gboolean
einsora_http_edge_listen(EinsoraHttpEdge *self, const char *address, GError **error)
{
    g_autoptr(GInetSocketAddress) socket_address = einsora_http_address_parse(address, error);

    g_return_val_if_fail(self->listener == NULL, FALSE);
    if (socket_address == NULL)
        return FALSE;
    self->listener = einsora_http_listen_socket_new(socket_address, error);
    if (self->listener == NULL)
        return FALSE;
    start_accepting(self);
    return TRUE;
}

guint
einsora_http_edge_get_port(EinsoraHttpEdge *self)
{
    g_autoptr(GSocketAddress) address = NULL;

    if (self->listener == NULL ||
        (address = g_socket_get_local_address(self->listener, NULL)) == NULL)
        return 0;
    return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address));
}

gchar *
einsora_http_edge_get_uri(EinsoraHttpEdge *self)
{
    g_autoptr(GSocketAddress) address = NULL;
    g_autofree gchar *host = NULL;
    GInetSocketAddress *inet;

    if (self->listener == NULL ||
        (address = g_socket_get_local_address(self->listener, NULL)) == NULL)
        return NULL;
    inet = G_INET_SOCKET_ADDRESS(address);
    host = g_inet_address_to_string(g_inet_socket_address_get_address(inet));
    return g_strdup_printf(
        g_inet_address_get_family(g_inet_socket_address_get_address(inet)) == G_SOCKET_FAMILY_IPV6
            ? "%s://[%s]:%u/"
            : "%s://%s:%u/",
        self->certificate != NULL ? "https" : "http", host, g_inet_socket_address_get_port(inet));
}

void
einsora_http_edge_set_tls_certificate(EinsoraHttpEdge *self, GTlsCertificate *certificate)
{
    g_set_object(&self->certificate, certificate);
}

void
einsora_http_edge_set_client_authority(EinsoraHttpEdge *self, GTlsDatabase *authority)
{
    g_return_if_fail(EINSORA_IS_HTTP_EDGE(self));

    g_set_object(&self->client_authority, authority);
}

gboolean
einsora_http_edge_is_tls(EinsoraHttpEdge *self)
{
    return self->certificate != NULL;
}

guint
einsora_http_edge_count_connections(EinsoraHttpEdge *self)
{
    return g_hash_table_size(self->connections);
}

guint
einsora_http_edge_get_max_connections(EinsoraHttpEdge *self)
{
    return self->settings.max_connections;
}

GCancellable *
einsora_http_message_get_hangup(SoupServerMessage *message)
{
    return g_object_get_data(G_OBJECT(message), HANGUP_KEY);
}

GSocket *
einsora_http_message_get_socket(SoupServerMessage *message)
{
    EinsoraHttpConnection *connection = g_object_get_data(G_OBJECT(message), CONNECTION_KEY);

    if (connection == NULL || einsora_http_connection_get_message(connection) != message)
        return NULL;
    return einsora_http_connection_get_socket(connection);
}

const char *
einsora_http_message_get_client_certificate(SoupServerMessage *message,
                                            GTlsCertificateFlags *errors)
{
    EinsoraHttpConnection *connection = g_object_get_data(G_OBJECT(message), CONNECTION_KEY);

    if (errors != NULL)
        *errors = 0;
    if (connection == NULL)
        return NULL;
    return einsora_http_connection_get_client_certificate(connection, errors);
}

void
einsora_http_message_close_after(SoupServerMessage *message)
{
    EinsoraHttpConnection *connection = g_object_get_data(G_OBJECT(message), CONNECTION_KEY);

    if (connection != NULL && einsora_http_connection_get_message(connection) == message)
        einsora_http_connection_close_after(connection);
}

GSource *
einsora_http_message_watch_hangup(SoupServerMessage *message, GCancellableSourceFunc callback,
                                  gpointer user_data)
{
    GCancellable *hangup = einsora_http_message_get_hangup(message);
    GSource *source;

    if (hangup == NULL)
        return NULL;
    source = g_cancellable_source_new(hangup);
    g_source_set_callback(source, G_SOURCE_FUNC(callback), user_data, NULL);
    g_source_attach(source, g_main_context_get_thread_default());
    return source;
}
