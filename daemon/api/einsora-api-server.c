#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-server.h"

#include <string.h>

#include "einsora-api-routes.h"
#include "einsora-error.h"
#include "einsora-http-edge.h"
#include "einsora-tls-identity.h"
#include "einsora-uuid.h"

#define SESSION_COOKIE "einsora_session"
#define IDEMPOTENCY_KEY_MAX 128
#define DEFAULT_ACCESS_PORT 8090

/* Tests only: a shorter session lifetime, in seconds. */
#define SESSION_TTL_TEST_VARIABLE "EINSORA_TEST_SESSION_TTL_S"

/* Sign-ins from one address (docs/adr/0024). */
static const EinsoraLoginThrottleRule address_rule = {
    .free_failures = 10,
    .first_delay_us = 1 * G_USEC_PER_SEC,
    .max_delay_us = 5 * G_TIME_SPAN_MINUTE,
    .forget_after_us = G_TIME_SPAN_HOUR,
    .max_keys = 4096,
};

struct _EinsoraApiServer {
    GObject parent_instance;
    SoupServer *server;
    EinsoraService *service;
    EinsoraAuth *auth;
    EinsoraNowFunc now;
    gpointer now_data;
    guint access_port;
    gboolean access_tls;
    gchar *tls_fingerprint; /* the certificate it presents, NULL without TLS */
    gchar *agent_ca_dir;    /* where the CA that signs agents' certificates is */
    EinsoraSyncTransport *agent_hub;
    EinsoraTunnels *tunnels;
    gboolean metrics_open_to_loopback;
    EinsoraLoginThrottle *login_throttle;
    /* Listening, connections and request hygiene (docs/adr/0025). */
    EinsoraHttpEdge *edge;
};

G_DEFINE_FINAL_TYPE(EinsoraApiServer, einsora_api_server, G_TYPE_OBJECT)

static void
einsora_api_server_dispose(GObject *object)
{
    EinsoraApiServer *self = EINSORA_API_SERVER(object);

    g_clear_object(&self->edge);
    if (self->server != NULL) {
        g_signal_handlers_disconnect_by_data(self->server, self);
        soup_server_disconnect(self->server);
    }
    g_clear_object(&self->server);
    g_clear_object(&self->service);
    g_clear_object(&self->auth);
    G_OBJECT_CLASS(einsora_api_server_parent_class)->dispose(object);
}

/* A sign-in still checking its password holds the server, and reports
 * to the throttle when it ends: the throttle goes last. */
static void
einsora_api_server_finalize(GObject *object)
{
    EinsoraApiServer *self = EINSORA_API_SERVER(object);

    g_clear_object(&self->login_throttle);
    g_free(self->tls_fingerprint);
    g_free(self->agent_ca_dir);
    g_clear_object(&self->agent_hub);
    g_clear_object(&self->tunnels);
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

void
einsora_api_server_set_access_tls(EinsoraApiServer *self, gboolean tls)
{
    g_return_if_fail(EINSORA_IS_API_SERVER(self));
    self->access_tls = tls;
}

gboolean
einsora_api_server_get_access_tls(EinsoraApiServer *self)
{
    g_return_val_if_fail(EINSORA_IS_API_SERVER(self), FALSE);
    return self->access_tls;
}

void
einsora_api_server_set_metrics_open_to_loopback(EinsoraApiServer *self, gboolean open)
{
    g_return_if_fail(EINSORA_IS_API_SERVER(self));
    self->metrics_open_to_loopback = open;
}

gboolean
einsora_api_server_get_metrics_open_to_loopback(EinsoraApiServer *self)
{
    g_return_val_if_fail(EINSORA_IS_API_SERVER(self), FALSE);
    return self->metrics_open_to_loopback;
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

/* A refusal the edge answers names its request too, as every answer. */
static gchar *
new_request_id(void)
{
    return einsora_uuid_v7_new(g_get_real_time() / 1000);
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

    gboolean agent = g_strcmp0(path, EINSORA_API_AGENT_SYNC_PATH) == 0;
    goffset max_body = agent ? EINSORA_API_MAX_AGENT_BODY_BYTES : EINSORA_API_MAX_BODY_BYTES;
    GTlsCertificateFlags errors = 0;

    /* An agent's report may be larger, but only an enrolled agent's: a
     * client without a certificate that checks is refused before its
     * body is read. */
    if (agent &&
        (einsora_http_message_get_client_certificate(message, &errors) == NULL || errors != 0)) {
        status = SOUP_STATUS_UNAUTHORIZED;
        reason = einsora_api_agent_certificate_problem(message);
    } else if (encoding == SOUP_ENCODING_CONTENT_LENGTH &&
               soup_message_headers_get_content_length(headers) > max_body) {
        status = SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE;
        reason = agent ? "the report is larger than 4 MiB" : "the body is larger than 64 KiB";
    } else if (encoding != SOUP_ENCODING_CONTENT_LENGTH && encoding != SOUP_ENCODING_NONE) {
        status = SOUP_STATUS_LENGTH_REQUIRED;
        reason = "a body needs a Content-Length of at most 64 KiB";
    }
    if (status != 0) {
        g_autoptr(EinsoraApiRequest) request = request_new(self, message);
        soup_message_body_set_accumulate(soup_server_message_get_request_body(message), FALSE);
        einsora_http_message_close_after(message);
        einsora_api_request_respond_problem(
            request, status,
            status == SOUP_STATUS_UNAUTHORIZED ? "unauthenticated" : "invalid_request", reason);
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

    if (body->length >
        (g_str_equal(einsora_api_request_get_path(request), EINSORA_API_AGENT_SYNC_PATH)
             ? EINSORA_API_MAX_AGENT_BODY_BYTES
             : EINSORA_API_MAX_BODY_BYTES)) {
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
        /* A reset password opens the way to changing it, nothing else. */
        if (actor->password_must_change && !g_str_equal(route->pattern, "/v1/me/password") &&
            !g_str_equal(route->pattern, "/v1/logout") && !g_str_equal(route->pattern, "/v1/me")) {
            einsora_actor_free(actor);
            einsora_api_request_respond_problem(
                request, SOUP_STATUS_FORBIDDEN, "password_change_required",
                "your password was reset: change it first (POST /v1/me/password)");
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
    {
        EinsoraHttpEdgeSettings settings;
        einsora_http_edge_settings_init(&settings);
        settings.json_refusals = TRUE;
        settings.new_request_id = new_request_id;
        self->edge = einsora_http_edge_new(self->server, &settings);
    }
    {
        const char *ttl = g_getenv(SESSION_TTL_TEST_VARIABLE);
        guint64 ttl_s = 0;
        if (ttl != NULL && g_ascii_string_to_unsigned(ttl, 10, 1, G_MAXUINT32, &ttl_s, NULL))
            einsora_auth_set_session_lifetime(auth, (gint64)ttl_s * G_USEC_PER_SEC);
    }
    soup_server_add_early_handler(self->server, NULL, early_handler, self, NULL);
    soup_server_add_handler(self->server, NULL, handle_request, self, NULL);
    return self;
}

gboolean
einsora_api_server_listen(EinsoraApiServer *self, const char *address, GError **error)
{
    return einsora_http_edge_listen(self->edge, address, error);
}

void
einsora_api_server_set_tls_certificate(EinsoraApiServer *self, GTlsCertificate *certificate)
{
    einsora_http_edge_set_tls_certificate(self->edge, certificate);
    g_free(self->tls_fingerprint);
    self->tls_fingerprint =
        certificate != NULL ? einsora_tls_certificate_fingerprint(certificate) : NULL;
}

const char *
einsora_api_server_get_tls_fingerprint(EinsoraApiServer *self)
{
    g_return_val_if_fail(EINSORA_IS_API_SERVER(self), NULL);
    return self->tls_fingerprint;
}

gboolean
einsora_api_server_set_agent_ca_dir(EinsoraApiServer *self, const char *dir, GError **error)
{
    g_autoptr(GTlsDatabase) authority = NULL;

    g_return_val_if_fail(EINSORA_IS_API_SERVER(self), FALSE);

    /* Agents sync with client certificates this CA signed: every TLS
     * connection is asked for one (docs/adr/0056). */
    if (dir != NULL) {
        authority = einsora_tls_identity_agent_authority(dir, error);
        if (authority == NULL)
            return FALSE;
    }
    einsora_http_edge_set_client_authority(self->edge, authority);
    g_free(self->agent_ca_dir);
    self->agent_ca_dir = g_strdup(dir);
    return TRUE;
}

void
einsora_api_server_set_agent_hub(EinsoraApiServer *self, EinsoraSyncTransport *hub)
{
    g_return_if_fail(EINSORA_IS_API_SERVER(self));
    g_set_object(&self->agent_hub, hub);
}

EinsoraSyncTransport *
einsora_api_server_get_agent_hub(EinsoraApiServer *self)
{
    return self->agent_hub;
}

void
einsora_api_server_set_tunnels(EinsoraApiServer *self, EinsoraTunnels *tunnels)
{
    g_return_if_fail(EINSORA_IS_API_SERVER(self));
    g_set_object(&self->tunnels, tunnels);
}

EinsoraTunnels *
einsora_api_server_get_tunnels(EinsoraApiServer *self)
{
    return self->tunnels;
}

const char *
einsora_api_server_get_agent_ca_dir(EinsoraApiServer *self)
{
    g_return_val_if_fail(EINSORA_IS_API_SERVER(self), NULL);
    return self->agent_ca_dir;
}

gchar *
einsora_api_server_get_uri(EinsoraApiServer *self)
{
    return einsora_http_edge_get_uri(self->edge);
}
