#define G_LOG_DOMAIN "einsora-client"

#include "einsora-access-relay.h"

struct _EinsoraAccessRelay {
    GObject parent_instance;

    gchar *host;
    guint port;
    GTlsDatabase *database;
    GSocketService *service;
    guint local_port;
    GHashTable *carries; /* Carry * (owned) */
};

G_DEFINE_FINAL_TYPE(EinsoraAccessRelay, einsora_access_relay, G_TYPE_OBJECT)

enum { SIGNAL_FAILED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* One browser connection, from the connect to the server to the end of
 * the splice. Each operation under way holds a reference; the relay's
 * table holds one until the carry ends. */
typedef struct {
    gatomicrefcount refs;
    EinsoraAccessRelay *self; /* not owned: a carry ends before its relay */
    GSocketConnection *local;
    GSocketConnection *tcp; /* under remote */
    GIOStream *remote;
    GCancellable *cancellable;
    guint timeout_id; /* until the handshake is done */
    gboolean ended;
} Carry;

static Carry *
carry_ref(Carry *carry)
{
    g_atomic_ref_count_inc(&carry->refs);
    return carry;
}

static void
carry_unref(Carry *carry)
{
    if (!g_atomic_ref_count_dec(&carry->refs))
        return;
    g_clear_object(&carry->remote);
    g_clear_object(&carry->tcp);
    g_clear_object(&carry->local);
    g_clear_object(&carry->cancellable);
    g_free(carry);
}

/* Ends @carry once: its operations are cancelled and both streams
 * closed. @error (nullable) is why the server couldn't be reached. */
static void
carry_end(Carry *carry, const GError *error)
{
    if (carry->ended)
        return;
    carry->ended = TRUE;
    g_clear_handle_id(&carry->timeout_id, g_source_remove);
    g_cancellable_cancel(carry->cancellable);
    /* The sockets themselves: closing a stream with an operation pending
     * fails, and a TLS close would wait on the server. */
    if (carry->tcp != NULL)
        g_socket_close(g_socket_connection_get_socket(carry->tcp), NULL);
    g_socket_close(g_socket_connection_get_socket(carry->local), NULL);
    if (error != NULL && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_signal_emit(carry->self, signals[SIGNAL_FAILED], 0, error);
    /* The table's reference, last: the caller still holds its own. */
    g_hash_table_remove(carry->self->carries, carry);
}

static gboolean
on_connect_timeout(gpointer user_data)
{
    Carry *carry = user_data;
    g_autoptr(GError) error =
        g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                    "the server's access proxy at %s:%u didn't answer within %d s",
                    carry->self->host, carry->self->port, EINSORA_ACCESS_RELAY_CONNECT_TIMEOUT_S);

    carry->timeout_id = 0;
    carry_ref(carry);
    carry_end(carry, error);
    carry_unref(carry);
    return G_SOURCE_REMOVE;
}

static void
on_spliced(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Carry *carry = user_data;

    /* Either side's end, or a reset, ends both: what went wrong is the
     * browser's or the server's to say. */
    (void)g_io_stream_splice_finish(result, NULL);
    carry_end(carry, NULL);
    carry_unref(carry);
}

static void
on_handshake(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Carry *carry = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_tls_connection_handshake_finish(G_TLS_CONNECTION(source), result, &error)) {
        /* A refused certificate says so, naming no secret. */
        if (g_error_matches(error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE)) {
            g_clear_error(&error);
            g_set_error(&error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
                        "the access proxy at %s:%u presented a certificate this machine "
                        "doesn't trust (not the one pinned for the server)",
                        carry->self->host, carry->self->port);
        }
        carry_end(carry, error);
        carry_unref(carry);
        return;
    }
    if (carry->ended) {
        carry_unref(carry);
        return;
    }
    g_clear_handle_id(&carry->timeout_id, g_source_remove);
    /* The reference passes to the splice. */
    g_io_stream_splice_async(G_IO_STREAM(carry->local), carry->remote,
                             G_IO_STREAM_SPLICE_CLOSE_STREAM1 | G_IO_STREAM_SPLICE_CLOSE_STREAM2,
                             G_PRIORITY_DEFAULT, carry->cancellable, on_spliced, carry);
}

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Carry *carry = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocketConnection) tcp =
        g_socket_client_connect_finish(G_SOCKET_CLIENT(source), result, &error);
    g_autoptr(GSocketConnectable) identity = NULL;
    GIOStream *tls;

    if (tcp == NULL || carry->ended) {
        carry_end(carry, error);
        carry_unref(carry);
        return;
    }
    identity = g_network_address_new(carry->self->host, (guint16)carry->self->port);
    tls = g_tls_client_connection_new(G_IO_STREAM(tcp), identity, &error);
    if (tls == NULL) {
        carry_end(carry, error);
        carry_unref(carry);
        return;
    }
    g_tls_connection_set_database(G_TLS_CONNECTION(tls), carry->self->database);
    carry->tcp = g_steal_pointer(&tcp);
    carry->remote = tls;
    /* The reference passes to the handshake. */
    g_tls_connection_handshake_async(G_TLS_CONNECTION(tls), G_PRIORITY_DEFAULT, carry->cancellable,
                                     on_handshake, carry);
}

static gboolean
on_incoming(GSocketService *service, GSocketConnection *connection, GObject *source_object,
            gpointer user_data)
{
    EinsoraAccessRelay *self = user_data;
    g_autoptr(GSocketClient) client = NULL;
    Carry *carry;

    /* Past the bound the browser's connection is closed: it opens another
     * when one of its own ends. */
    if (g_hash_table_size(self->carries) >= EINSORA_ACCESS_RELAY_MAX_CONNECTIONS) {
        g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
        return TRUE;
    }
    carry = g_new0(Carry, 1);
    g_atomic_ref_count_init(&carry->refs);
    carry->self = self;
    carry->local = g_object_ref(connection);
    carry->cancellable = g_cancellable_new();
    g_hash_table_add(self->carries, carry);
    carry->timeout_id =
        g_timeout_add_seconds(EINSORA_ACCESS_RELAY_CONNECT_TIMEOUT_S, on_connect_timeout, carry);
    client = g_socket_client_new();
    g_socket_client_connect_to_host_async(client, self->host, (guint16)self->port,
                                          carry->cancellable, on_connected, carry_ref(carry));
    return TRUE;
}

static void
einsora_access_relay_dispose(GObject *object)
{
    EinsoraAccessRelay *self = EINSORA_ACCESS_RELAY(object);

    einsora_access_relay_close(self);
    G_OBJECT_CLASS(einsora_access_relay_parent_class)->dispose(object);
}

static void
einsora_access_relay_finalize(GObject *object)
{
    EinsoraAccessRelay *self = EINSORA_ACCESS_RELAY(object);

    g_hash_table_unref(self->carries);
    g_clear_object(&self->service);
    g_clear_object(&self->database);
    g_free(self->host);
    G_OBJECT_CLASS(einsora_access_relay_parent_class)->finalize(object);
}

static void
einsora_access_relay_class_init(EinsoraAccessRelayClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->dispose = einsora_access_relay_dispose;
    object_class->finalize = einsora_access_relay_finalize;
    signals[SIGNAL_FAILED] = g_signal_new("failed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                          NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_ERROR);
}

static void
einsora_access_relay_init(EinsoraAccessRelay *self)
{
    self->carries = g_hash_table_new_full(NULL, NULL, (GDestroyNotify)carry_unref, NULL);
}

EinsoraAccessRelay *
einsora_access_relay_new(const char *host, guint port, GTlsDatabase *database)
{
    EinsoraAccessRelay *self;

    g_return_val_if_fail(host != NULL, NULL);
    g_return_val_if_fail(port > 0 && port <= G_MAXUINT16, NULL);
    g_return_val_if_fail(G_IS_TLS_DATABASE(database), NULL);
    self = g_object_new(EINSORA_TYPE_ACCESS_RELAY, NULL);
    self->host = g_strdup(host);
    self->port = port;
    self->database = g_object_ref(database);
    return self;
}

gboolean
einsora_access_relay_listen(EinsoraAccessRelay *self, guint local_port, GError **error)
{
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GSocketAddress) effective = NULL;

    g_return_val_if_fail(EINSORA_IS_ACCESS_RELAY(self), FALSE);
    g_return_val_if_fail(self->service == NULL, FALSE);
    address = g_inet_socket_address_new(loopback, (guint16)local_port);
    self->service = g_socket_service_new();
    if (!g_socket_listener_add_address(G_SOCKET_LISTENER(self->service), address,
                                       G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL,
                                       &effective, error)) {
        g_clear_object(&self->service);
        return FALSE;
    }
    self->local_port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(effective));
    g_signal_connect(self->service, "incoming", G_CALLBACK(on_incoming), self);
    g_socket_service_start(self->service);
    return TRUE;
}

guint
einsora_access_relay_get_port(EinsoraAccessRelay *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_RELAY(self), 0);
    return self->local_port;
}

guint
einsora_access_relay_count_connections(EinsoraAccessRelay *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_RELAY(self), 0);
    return g_hash_table_size(self->carries);
}

gchar *
einsora_access_relay_local_url(EinsoraAccessRelay *self, const char *url)
{
    g_autoptr(GUri) uri = NULL;
    const char *host;

    g_return_val_if_fail(EINSORA_IS_ACCESS_RELAY(self), NULL);
    g_return_val_if_fail(self->local_port != 0, NULL);
    uri = url != NULL ? g_uri_parse(url, G_URI_FLAGS_ENCODED, NULL) : NULL;
    if (uri == NULL || g_uri_get_host(uri) == NULL)
        return NULL;
    host = g_uri_get_host(uri);
    if (!g_str_has_prefix(host, "w-") || !g_str_has_suffix(host, ".localhost"))
        host = "127.0.0.1";
    return g_uri_join(G_URI_FLAGS_ENCODED, "http", NULL, host, (gint)self->local_port,
                      g_uri_get_path(uri), g_uri_get_query(uri), NULL);
}

void
einsora_access_relay_close(EinsoraAccessRelay *self)
{
    g_return_if_fail(EINSORA_IS_ACCESS_RELAY(self));
    if (self->service != NULL) {
        g_socket_service_stop(self->service);
        g_socket_listener_close(G_SOCKET_LISTENER(self->service));
    }
    /* Each carry ends itself, taking itself out of the table. */
    while (g_hash_table_size(self->carries) > 0) {
        GHashTableIter iter;
        gpointer carry;

        g_hash_table_iter_init(&iter, self->carries);
        g_hash_table_iter_next(&iter, &carry, NULL);
        carry_ref(carry);
        carry_end(carry, NULL);
        carry_unref(carry);
    }
}
