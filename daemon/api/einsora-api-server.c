#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-server.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>

#include "einsora-api-routes.h"
#include "einsora-error.h"
#include "einsora-uuid.h"

#define SESSION_COOKIE "einsora_session"
#define IDEMPOTENCY_KEY_MAX 128
#define DEFAULT_ACCESS_PORT 8090

/* Connection limits (docs/adr/0023). A request's head and body must
 * arrive within this long of its start (for a kept-alive connection: of
 * the previous answer), or the connection is closed: a slow or silent
 * client holds a connection for a bounded time. */
#define REQUEST_READ_TIMEOUT_MS (30 * 1000)
/* How often read deadlines are checked. */
#define SWEEP_INTERVAL_MS 1000
/* Tests only: a shorter read timeout, in milliseconds. */
#define REQUEST_READ_TIMEOUT_TEST_VARIABLE "EINSORA_TEST_REQUEST_TIMEOUT_MS"
/* Tests only: a shorter session lifetime, in seconds. */
#define SESSION_TTL_TEST_VARIABLE "EINSORA_TEST_SESSION_TTL_S"
/* Connections held at once: at most this many, and at most three
 * quarters of the open-file limit, so the store, the agents and the
 * access proxy keep the rest. */
#define MAX_CONNECTIONS_CEILING 32768
/* Connections the kernel completes before we accept them (capped by
 * net.core.somaxconn). */
#define LISTEN_BACKLOG 4096
/* Connections accepted per main-loop iteration, and the pause when
 * accepting fails (out of descriptors). */
#define ACCEPT_BATCH 256
#define ACCEPT_PAUSE_MS 100
#define MIN_CONNECTIONS 64

/* Sign-ins from one address (docs/adr/0024). */
static const EinsoraLoginThrottleRule address_rule = {
    .free_failures = 10,
    .first_delay_us = 1 * G_USEC_PER_SEC,
    .max_delay_us = 5 * G_TIME_SPAN_MINUTE,
    .forget_after_us = G_TIME_SPAN_HOUR,
    .max_keys = 4096,
};

typedef struct _Watch Watch;
struct _Watch {
    EinsoraApiServer *server;   /* not a reference: it removes its watches when disposed */
    GSocket *socket;            /* a reference */
    SoupServerMessage *message; /* reading: the message (not a reference: it owns the watch) */
    GList link;                 /* in server->reading */
    gint64 deadline_us;         /* monotonic */
};

#define READING_KEY "einsora-reading"
#define SOCKET_KEY "einsora-socket"
#define ADDRESS_KEY "einsora-address"

static void watch_free(Watch *watch);
static gboolean resume_accepting(gpointer user_data);

struct _EinsoraApiServer {
    GObject parent_instance;
    SoupServer *server;
    EinsoraService *service;
    EinsoraAuth *auth;
    EinsoraNowFunc now;
    gpointer now_data;
    guint access_port;
    EinsoraLoginThrottle *login_throttle;
    guint read_timeout_ms;
    guint max_connections;
    /* Requests being read, oldest first (Watch *). */
    GQueue reading;
    GSource *sweep;
    GSocket *listener;
    /* Sockets our acceptor took, by their client's "address port". */
    GHashTable *accepted;
    GSource *incoming; /* owned by the main context while attached */
    guint accept_pause_id;
    /* Open connections (GSocket references), dropped when closed. */
    GHashTable *connections;
};

G_DEFINE_FINAL_TYPE(EinsoraApiServer, einsora_api_server, G_TYPE_OBJECT)

static void
einsora_api_server_dispose(GObject *object)
{
    EinsoraApiServer *self = EINSORA_API_SERVER(object);

    /* Messages still being read may outlive the server. */
    while (!g_queue_is_empty(&self->reading)) {
        /* The link is the watch's own: popped, not freed. */
        Watch *watch = g_queue_pop_head_link(&self->reading)->data;
        watch->server = NULL;
    }
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
    g_clear_pointer(&self->accepted, g_hash_table_unref);
    if (self->server != NULL) {
        g_signal_handlers_disconnect_by_data(self->server, self);
        soup_server_disconnect(self->server);
    }
    g_clear_object(&self->server);
    g_clear_object(&self->service);
    g_clear_object(&self->auth);
    g_clear_pointer(&self->connections, g_hash_table_unref);
    G_OBJECT_CLASS(einsora_api_server_parent_class)->dispose(object);
}

/* A sign-in still checking its password holds the server, and reports
 * to the throttle when it ends: the throttle goes last. */
static void
einsora_api_server_finalize(GObject *object)
{
    EinsoraApiServer *self = EINSORA_API_SERVER(object);

    g_clear_object(&self->login_throttle);
    G_OBJECT_CLASS(einsora_api_server_parent_class)->finalize(object);
}

static void
einsora_api_server_class_init(EinsoraApiServerClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = einsora_api_server_dispose;
    G_OBJECT_CLASS(klass)->finalize = einsora_api_server_finalize;
}

static gint64
monotonic_now(gpointer user_data)
{
    return g_get_monotonic_time();
}

static void
einsora_api_server_init(EinsoraApiServer *self)
{
    self->access_port = DEFAULT_ACCESS_PORT;
    self->login_throttle = einsora_login_throttle_new(&address_rule, monotonic_now, NULL);
    self->connections = g_hash_table_new_full(g_direct_hash, g_direct_equal, g_object_unref, NULL);
    g_queue_init(&self->reading);
    self->accepted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
}

void
einsora_api_server_set_access_port(EinsoraApiServer *self, guint port)
{
    g_return_if_fail(EINSORA_IS_API_SERVER(self));
    g_return_if_fail(port > 0 && port <= G_MAXUINT16);
    self->access_port = port;
}

guint
einsora_api_server_get_access_port(EinsoraApiServer *self)
{
    g_return_val_if_fail(EINSORA_IS_API_SERVER(self), 0);
    return self->access_port;
}

EinsoraService *
einsora_api_server_get_service(EinsoraApiServer *self)
{
    return self->service;
}

EinsoraAuth *
einsora_api_server_get_auth(EinsoraApiServer *self)
{
    return self->auth;
}

gint64
einsora_api_server_now(EinsoraApiServer *self)
{
    return self->now(self->now_data);
}

EinsoraLoginThrottle *
einsora_api_server_get_login_throttle(EinsoraApiServer *self)
{
    return self->login_throttle;
}

gchar *
einsora_api_server_client_key(SoupServerMessage *message)
{
    GSocketAddress *address = soup_server_message_get_remote_address(message);
    GInetAddress *inet;
    guint8 bytes[16] = {0};

    if (address == NULL || !G_IS_INET_SOCKET_ADDRESS(address))
        return g_strdup("unknown");
    inet = g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address));
    if (g_inet_address_get_family(inet) != G_SOCKET_FAMILY_IPV6)
        return g_inet_address_to_string(inet);
    /* One IPv6 host usually holds a whole /64: count it as one. */
    memcpy(bytes, g_inet_address_to_bytes(inet), 8);
    {
        g_autoptr(GInetAddress) prefix = g_inet_address_new_from_bytes(bytes, G_SOCKET_FAMILY_IPV6);
        g_autofree gchar *text = g_inet_address_to_string(prefix);
        return g_strdup_printf("%s/64", text);
    }
}

/* Connection limits (docs/adr/0023)
 *
 * A request being read (from "request-started" to "request-read") must
 * arrive within the read timeout; shutting the socket down makes libsoup
 * see an end of stream and clean up as for any client that left. Every
 * answer says "Connection: close": libsoup 3.2 neither times out a
 * kept-alive connection nor notices when its client closes it (it starts
 * the next message only once a byte arrives), so each would hold its
 * descriptor, and closing one behind its back leaves its objects, about
 * 2 KiB, for good. */

static void
watch_free(Watch *watch)
{
    if (watch->server != NULL)
        g_queue_unlink(&watch->server->reading, &watch->link);
    g_object_unref(watch->socket);
    g_free(watch);
}

/* A reading message's watch belongs to the message. */
static void
stop_reading(SoupServerMessage *message)
{
    g_object_set_data(G_OBJECT(message), READING_KEY, NULL);
}

static void
forget_connection(EinsoraApiServer *self, GSocket *socket)
{
    const char *key = g_object_get_data(G_OBJECT(socket), ADDRESS_KEY);

    if (key != NULL && self->accepted != NULL && g_hash_table_lookup(self->accepted, key) == socket)
        g_hash_table_remove(self->accepted, key);
    if (self->connections != NULL)
        g_hash_table_remove(self->connections, socket);
}

static gchar *
address_key(GSocketAddress *address)
{
    g_autofree gchar *host = NULL;

    if (address == NULL || !G_IS_INET_SOCKET_ADDRESS(address))
        return NULL;
    host =
        g_inet_address_to_string(g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address)));
    return g_strdup_printf("%s %u", host,
                           g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address)));
}

/* The socket under @message. libsoup names it only for connections its
 * own listener took; the ones ours took are found by their client's
 * address and port, which no two open connections share. */
static GSocket *
message_socket(EinsoraApiServer *self, SoupServerMessage *message)
{
    GSocket *socket = soup_server_message_get_socket(message);
    g_autofree gchar *key = NULL;

    if (socket != NULL || self == NULL || self->accepted == NULL)
        return socket;
    key = address_key(soup_server_message_get_remote_address(message));
    return key != NULL ? g_hash_table_lookup(self->accepted, key) : NULL;
}

GSocket *
einsora_api_server_message_socket(SoupServerMessage *message)
{
    return g_object_get_data(G_OBJECT(message), SOCKET_KEY);
}

static void
close_reading(EinsoraApiServer *self, SoupServerMessage *message)
{
    GSocket *socket = message_socket(self, message);

    stop_reading(message);
    if (socket != NULL && !g_socket_is_closed(socket))
        g_socket_shutdown(socket, TRUE, TRUE, NULL);
}

/* Once a second (one timer, not one per connection: the main loop's cost
 * grows with its sources): the watches past their deadline, oldest
 * first. */
static gboolean
on_sweep(gpointer user_data)
{
    EinsoraApiServer *self = user_data;
    gint64 now_us = g_get_monotonic_time();

    while (!g_queue_is_empty(&self->reading)) {
        Watch *oldest = g_queue_peek_head(&self->reading);
        if (oldest->deadline_us > now_us)
            break;
        g_debug("closing a connection whose request did not arrive within %u ms",
                self->read_timeout_ms);
        /* Frees @oldest. */
        close_reading(self, oldest->message);
    }
    return G_SOURCE_CONTINUE;
}

static Watch *
watch_new(EinsoraApiServer *self, GSocket *socket)
{
    Watch *watch = g_new0(Watch, 1);

    watch->server = self;
    watch->socket = g_object_ref(socket);
    watch->link.data = watch;
    watch->deadline_us = g_get_monotonic_time() + (gint64)self->read_timeout_ms * 1000;
    return watch;
}

static void
on_request_read(SoupServer *server, SoupServerMessage *message, gpointer user_data)
{
    stop_reading(message);
}

/* The answer is written (or the request failed): with "Connection:
 * close", libsoup closes the connection next, so it is no longer counted. */
static void
on_request_done(SoupServer *server, SoupServerMessage *message, gpointer user_data)
{
    EinsoraApiServer *self = user_data;
    GSocket *socket = g_object_get_data(G_OBJECT(message), SOCKET_KEY);

    stop_reading(message);
    if (socket != NULL)
        forget_connection(self, socket);
}

static void
on_disconnected(SoupServerMessage *message, gpointer user_data)
{
    on_request_done(NULL, message, user_data);
}

/* Over the limit, the connection whose request is slowest to arrive
 * makes room. Connections already closed are dropped first. */
static void
make_room(EinsoraApiServer *self)
{
    GHashTableIter iter;
    gpointer key;
    gpointer value;

    if (g_hash_table_size(self->connections) <= self->max_connections)
        return;
    g_hash_table_iter_init(&iter, self->accepted);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        if (g_socket_is_closed(value))
            g_hash_table_iter_remove(&iter);
    }
    g_hash_table_iter_init(&iter, self->connections);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (g_socket_is_closed(key))
            g_hash_table_iter_remove(&iter);
    }
    if (g_hash_table_size(self->connections) <= self->max_connections)
        return;
    g_message("%u connections open, the most allowed: closing the one waiting longest",
              self->max_connections);
    if (!g_queue_is_empty(&self->reading)) {
        Watch *oldest = g_queue_peek_head(&self->reading);
        close_reading(self, oldest->message);
    }
}

/* Every message libsoup starts reading: a new connection's one. */
static void
on_request_started(SoupServer *server, SoupServerMessage *message, gpointer user_data)
{
    EinsoraApiServer *self = user_data;
    GSocket *socket = message_socket(self, message);
    Watch *watch;

    /* Set first, so that even libsoup's own answers (a malformed request)
     * say it. */
    soup_message_headers_replace(soup_server_message_get_response_headers(message), "Connection",
                                 "close");
    if (socket == NULL)
        return;
    g_object_set_data_full(G_OBJECT(message), SOCKET_KEY, g_object_ref(socket), g_object_unref);
    g_signal_connect_object(message, "disconnected", G_CALLBACK(on_disconnected), self, 0);
    watch = watch_new(self, socket);
    watch->message = message;
    g_queue_push_tail_link(&self->reading, &watch->link);
    g_object_set_data_full(G_OBJECT(message), READING_KEY, watch, (GDestroyNotify)watch_free);
    if (!g_hash_table_contains(self->connections, socket)) {
        g_hash_table_add(self->connections, g_object_ref(socket));
        make_room(self);
    }
}

static guint
max_connections_for_limit(void)
{
    struct rlimit limit;

    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        return MAX_CONNECTIONS_CEILING;
    return (guint)CLAMP(limit.rlim_cur / 4 * 3, MIN_CONNECTIONS, MAX_CONNECTIONS_CEILING);
}

static guint
positive_test_variable(const char *name, guint fallback)
{
    const char *text = g_getenv(name);
    guint64 value = 0;

    if (text == NULL || !g_ascii_string_to_unsigned(text, 10, 1, G_MAXUINT32, &value, NULL))
        return fallback;
    return (guint)value;
}

static EinsoraApiRequest *
request_new(EinsoraApiServer *self, SoupServerMessage *message)
{
    g_autofree gchar *id = einsora_uuid_v7_new(einsora_api_server_now(self) / 1000);
    EinsoraApiRequest *request = einsora_api_request_new(message, id, g_get_monotonic_time());
    const char *client_id = soup_message_headers_get_one(
        soup_server_message_get_request_headers(message), "X-Request-ID");

    /* A caller's own ID is logged only when it cannot forge a log line. */
    if (client_id != NULL && strlen(client_id) <= 64 &&
        strspn(client_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
            strlen(client_id) &&
        *client_id != '\0')
        einsora_api_request_log(request, G_LOG_LEVEL_INFO, "client_request_id=%s", client_id);
    return request;
}

/* Refuses a body that is too large, or whose size isn't said up front,
 * before libsoup reads it: turning accumulation off keeps it from being
 * held in memory, and the connection is closed after the answer. */
static void
early_handler(SoupServer *server, SoupServerMessage *message, const char *path, GHashTable *query,
              gpointer user_data)
{
    EinsoraApiServer *self = user_data;
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(message);
    SoupEncoding encoding = soup_message_headers_get_encoding(headers);
    guint status = 0;
    const char *reason = NULL;

    if (encoding == SOUP_ENCODING_CONTENT_LENGTH &&
        soup_message_headers_get_content_length(headers) > EINSORA_API_MAX_BODY_BYTES) {
        status = SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE;
        reason = "the body is larger than 64 KiB";
    } else if (encoding != SOUP_ENCODING_CONTENT_LENGTH && encoding != SOUP_ENCODING_NONE) {
        status = SOUP_STATUS_LENGTH_REQUIRED;
        reason = "a body needs a Content-Length of at most 64 KiB";
    }
    if (status != 0) {
        g_autoptr(EinsoraApiRequest) request = request_new(self, message);
        soup_message_body_set_accumulate(soup_server_message_get_request_body(message), FALSE);
        soup_message_headers_replace(soup_server_message_get_response_headers(message),
                                     "Connection", "close");
        einsora_api_request_respond_problem(request, status, "invalid_request", reason);
    }
}

static gboolean
is_unsafe(const char *method)
{
    return g_strcmp0(method, "GET") != 0 && g_strcmp0(method, "HEAD") != 0 &&
           g_strcmp0(method, "OPTIONS") != 0;
}

/* Bearer tokens first; otherwise the browser session cookie, which needs
 * the CSRF token on every unsafe method. */
EinsoraActor *
einsora_api_server_authenticate(EinsoraApiServer *self, EinsoraApiRequest *request, GError **error)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(message);
    const char *authorization = soup_message_headers_get_one(headers, "Authorization");
    g_autofree gchar *cookie = NULL;

    if (authorization != NULL) {
        if (!g_str_has_prefix(authorization, "Bearer ") || authorization[7] == '\0') {
            g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                                "use Authorization: Bearer <API token>");
            return NULL;
        }
        return einsora_auth_authenticate_token(self->auth, authorization + 7, error);
    }
    cookie = einsora_api_request_get_cookie(request, SESSION_COOKIE);
    if (cookie != NULL)
        return einsora_auth_authenticate_session(
            self->auth, cookie, soup_message_headers_get_one(headers, "X-CSRF-Token"),
            is_unsafe(einsora_api_request_get_method(request)), error);
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED,
                        "authentication required: an API token or a browser session");
    return NULL;
}

/* JSON only: a body, when there is one, must say so. */
static gboolean
check_body(EinsoraApiRequest *request, guint *status, GError **error)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    SoupMessageBody *body = soup_server_message_get_request_body(message);
    const char *type;

    if (body->length > EINSORA_API_MAX_BODY_BYTES) {
        *status = SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE;
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the body is larger than 64 KiB");
        return FALSE;
    }
    if (body->length == 0)
        return TRUE;
    type = soup_message_headers_get_content_type(soup_server_message_get_request_headers(message),
                                                 NULL);
    if (type == NULL || g_ascii_strcasecmp(type, "application/json") != 0) {
        *status = SOUP_STATUS_UNSUPPORTED_MEDIA_TYPE;
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the body must be application/json");
        return FALSE;
    }
    return TRUE;
}

static gchar *
request_digest(EinsoraApiRequest *request)
{
    SoupMessageBody *body =
        soup_server_message_get_request_body(einsora_api_request_get_message(request));
    g_autoptr(GBytes) bytes = soup_message_body_flatten(body);
    g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
    gsize length = 0;
    const guchar *data = g_bytes_get_data(bytes, &length);

    g_checksum_update(checksum, (const guchar *)einsora_api_request_get_method(request), -1);
    g_checksum_update(checksum, (const guchar *)"\n", 1);
    g_checksum_update(checksum, (const guchar *)einsora_api_request_get_path(request), -1);
    g_checksum_update(checksum, (const guchar *)"\n", 1);
    if (length > 0)
        g_checksum_update(checksum, data, (gssize)length);
    return g_strdup(g_checksum_get_string(checksum));
}

static gboolean
idempotency_key_valid(const char *key)
{
    gsize length = strlen(key);
    return length > 0 && length <= IDEMPOTENCY_KEY_MAX &&
           strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") ==
               length;
}

/* A repeated key with the same request answers what the first answered;
 * with another request, 409. Returns TRUE when it answered. */
static gboolean
replay_idempotent(EinsoraApiServer *self, EinsoraApiRequest *request, const char *key,
                  const char *digest)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraIdempotencyRecord) record = einsora_service_get_idempotency_record(
        self->service, einsora_api_request_get_actor(request)->tenant_id, key, &error);

    if (record == NULL) {
        if (g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND))
            return FALSE;
        einsora_api_request_respond_error(request, error);
        return TRUE;
    }
    if (g_strcmp0(record->request_sha256, digest) != 0) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_CONFLICT, "conflict",
                                            "this Idempotency-Key was used for another request");
        return TRUE;
    }
    soup_message_headers_replace(
        soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
        "Idempotent-Replayed", "true");
    einsora_api_request_respond_raw(request, (guint)record->response_status, record->response_body);
    return TRUE;
}

static void
remember_idempotent(EinsoraApiServer *self, EinsoraApiRequest *request, const char *key,
                    const char *digest)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    g_autoptr(GBytes) body =
        soup_message_body_flatten(soup_server_message_get_response_body(message));
    g_autofree gchar *text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
    g_autoptr(GError) error = NULL;

    /* Failures are not remembered: a retry should try again. */
    if (!einsora_api_request_is_finished(request) || einsora_api_request_get_status(request) >= 500)
        return;
    if (!einsora_service_save_idempotency_record(
            self->service, einsora_api_request_get_actor(request)->tenant_id, key, digest,
            einsora_api_request_get_status(request), text, &error))
        einsora_api_request_log(request, G_LOG_LEVEL_WARNING,
                                "couldn't remember the Idempotency-Key: %s", error->message);
}

static void
handle_request(SoupServer *server, SoupServerMessage *message, const char *path, GHashTable *query,
               gpointer user_data)
{
    EinsoraApiServer *self = user_data;
    g_autoptr(EinsoraApiRequest) request = request_new(self, message);
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) params = NULL;
    gboolean path_known = FALSE;
    const EinsoraApiRoute *route;
    const char *key = NULL;
    g_autofree gchar *digest = NULL;
    guint status = 0;

    route = einsora_api_route_match(soup_server_message_get_method(message), path, &params,
                                    &path_known);
    if (route == NULL) {
        if (path_known)
            einsora_api_request_respond_problem(request, SOUP_STATUS_METHOD_NOT_ALLOWED,
                                                "invalid_request",
                                                "this method is not allowed here");
        else
            einsora_api_request_respond_problem(request, SOUP_STATUS_NOT_FOUND, "not_found",
                                                "no such route");
        return;
    }
    einsora_api_request_set_params(request, g_steal_pointer(&params));
    if (!check_body(request, &status, &error)) {
        einsora_api_request_respond_problem(request, status, "invalid_request", error->message);
        return;
    }
    /* Unknown input is refused, not ignored: a body where none is taken,
     * and any query parameter the route doesn't list. */
    if (!route->takes_body && soup_server_message_get_request_body(message)->length > 0) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                                            "this request takes no body");
        return;
    }
    if (!einsora_api_request_check_query(request, route->query, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (route->auth == EINSORA_API_AUTH_REQUIRED) {
        EinsoraActor *actor = einsora_api_server_authenticate(self, request, &error);
        if (actor == NULL) {
            einsora_api_request_respond_error(request, error);
            return;
        }
        einsora_api_request_set_actor(request, actor);
    }

    key = soup_message_headers_get_one(soup_server_message_get_request_headers(message),
                                       "Idempotency-Key");
    if (key != NULL) {
        if (!route->idempotent_key || !idempotency_key_valid(key)) {
            einsora_api_request_respond_problem(
                request, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                route->idempotent_key ? "Idempotency-Key must be 1 to 128 of A-Z a-z 0-9 . _ : -"
                                      : "Idempotency-Key is not accepted here");
            return;
        }
        digest = request_digest(request);
        if (replay_idempotent(self, request, key, digest))
            return;
        einsora_api_request_set_idempotency(request, key, digest);
    }

    route->handler(self, request);

    if (key != NULL)
        remember_idempotent(self, request, key, digest);
}

EinsoraApiServer *
einsora_api_server_new(EinsoraService *service, EinsoraAuth *auth, EinsoraNowFunc now,
                       gpointer now_data)
{
    EinsoraApiServer *self = g_object_new(EINSORA_TYPE_API_SERVER, NULL);

    self->service = g_object_ref(service);
    self->auth = g_object_ref(auth);
    self->now = now;
    self->now_data = now_data;
    self->server = soup_server_new("server-header", "einsora", NULL);
    self->read_timeout_ms =
        positive_test_variable(REQUEST_READ_TIMEOUT_TEST_VARIABLE, REQUEST_READ_TIMEOUT_MS);
    self->max_connections = max_connections_for_limit();
    {
        guint ttl_s = positive_test_variable(SESSION_TTL_TEST_VARIABLE, 0);
        if (ttl_s > 0)
            einsora_auth_set_session_lifetime(auth, (gint64)ttl_s * G_USEC_PER_SEC);
    }
    self->sweep = g_timeout_source_new(MIN(SWEEP_INTERVAL_MS, self->read_timeout_ms / 4 + 1));
    g_source_set_callback(self->sweep, on_sweep, self, NULL);
    g_source_attach(self->sweep, g_main_context_get_thread_default());
    g_signal_connect(self->server, "request-started", G_CALLBACK(on_request_started), self);
    g_signal_connect(self->server, "request-read", G_CALLBACK(on_request_read), self);
    g_signal_connect(self->server, "request-finished", G_CALLBACK(on_request_done), self);
    g_signal_connect(self->server, "request-aborted", G_CALLBACK(on_request_done), self);
    soup_server_add_early_handler(self->server, NULL, early_handler, self, NULL);
    soup_server_add_handler(self->server, NULL, handle_request, self, NULL);
    return self;
}

/* Accepts what is waiting, up to a batch: libsoup's own listener takes
 * one connection per main-loop iteration, and each iteration costs as
 * much as the connections open, so a burst of thousands took minutes. */
static gboolean
on_incoming(GSocket *listener, GIOCondition condition, gpointer user_data)
{
    EinsoraApiServer *self = user_data;

    for (guint i = 0; i < ACCEPT_BATCH; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GSocket) socket = g_socket_accept(listener, NULL, &error);
        g_autoptr(GSocketConnection) connection = NULL;
        g_autoptr(GSocketAddress) local = NULL;
        g_autoptr(GSocketAddress) remote = NULL;

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
        connection = g_socket_connection_factory_create_connection(socket);
        local = g_socket_get_local_address(socket, NULL);
        remote = g_socket_get_remote_address(socket, NULL);
        {
            gchar *key = address_key(remote);
            if (key != NULL) {
                g_object_set_data_full(G_OBJECT(socket), ADDRESS_KEY, g_strdup(key), g_free);
                g_hash_table_replace(self->accepted, key, g_object_ref(socket));
            }
        }
        if (local == NULL || remote == NULL ||
            !soup_server_accept_iostream(self->server, G_IO_STREAM(connection), local, remote,
                                         &error))
            g_debug("couldn't take a connection: %s",
                    error != NULL ? error->message : "it has no address");
    }
    return G_SOURCE_CONTINUE;
}

static void
start_accepting(EinsoraApiServer *self)
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
    EinsoraApiServer *self = user_data;

    self->accept_pause_id = 0;
    start_accepting(self);
    return G_SOURCE_REMOVE;
}

gboolean
einsora_api_server_listen(EinsoraApiServer *self, const char *address, GError **error)
{
    g_autoptr(GSocketConnectable) parsed = g_network_address_parse(address, 0, NULL);
    g_autoptr(GInetAddress) host = NULL;
    g_autoptr(GSocketAddress) socket_address = NULL;
    g_autoptr(GSocket) listener = NULL;

    g_return_val_if_fail(self->listener == NULL, FALSE);

    if (parsed != NULL)
        host = g_inet_address_new_from_string(
            g_network_address_get_hostname(G_NETWORK_ADDRESS(parsed)));
    if (host == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "\"%s\" is not an IP address and port, like 127.0.0.1:8080", address);
        return FALSE;
    }
    socket_address =
        g_inet_socket_address_new(host, g_network_address_get_port(G_NETWORK_ADDRESS(parsed)));
    /* Our own socket, for its backlog (GLib's default is 10: a burst past
     * it waits for SYN retries, seconds each) and for accepting in
     * batches. */
    listener = g_socket_new(g_inet_address_get_family(host), G_SOCKET_TYPE_STREAM,
                            G_SOCKET_PROTOCOL_TCP, error);
    if (listener == NULL)
        return FALSE;
    g_socket_set_blocking(listener, FALSE);
    /* As libsoup's own listeners: an IPv6 address means IPv6 only. */
    if (g_inet_address_get_family(host) == G_SOCKET_FAMILY_IPV6 &&
        !g_socket_set_option(listener, IPPROTO_IPV6, IPV6_V6ONLY, 1, error))
        return FALSE;
    g_socket_set_listen_backlog(listener, LISTEN_BACKLOG);
    if (!g_socket_bind(listener, socket_address, TRUE, error) || !g_socket_listen(listener, error))
        return FALSE;
    self->listener = g_steal_pointer(&listener);
    /* libsoup is given the same socket, as before this server had its
     * own; it may still take a connection now and then (one at a time),
     * and those name their socket themselves (message_socket). With no
     * keep-alive, nothing else needs its listener any more: dropping it
     * is left for a change that can measure it. */
    if (!soup_server_listen_socket(self->server, self->listener, 0, error))
        return FALSE;
    start_accepting(self);
    return TRUE;
}

gchar *
einsora_api_server_get_uri(EinsoraApiServer *self)
{
    g_autoptr(GSocketAddress) address = NULL;
    g_autofree gchar *host = NULL;
    GInetSocketAddress *inet;

    if (self->listener == NULL ||
        (address = g_socket_get_local_address(self->listener, NULL)) == NULL)
        return NULL;
    inet = G_INET_SOCKET_ADDRESS(address);
    host = g_inet_address_to_string(g_inet_socket_address_get_address(inet));
    return g_strdup_printf(g_inet_address_get_family(g_inet_socket_address_get_address(inet)) ==
                                   G_SOCKET_FAMILY_IPV6
                               ? "http://[%s]:%u/"
                               : "http://%s:%u/",
                           host, g_inet_socket_address_get_port(inet));
}
