/* Browser sessions: password login sets a host-only, HttpOnly,
 * SameSite=Strict cookie and returns the CSRF token that every unsafe
 * request the cookie authenticates must carry in X-CSRF-Token. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"
#include "einsora-error.h"
#include "einsora-http-edge.h"

#define BUSY_RETRY_AFTER_SECONDS "5"
/* libsoup 3.2 names no 429. */
#define STATUS_TOO_MANY_REQUESTS 429
/* What the access log says of a sign-in whose client went away (nginx's
 * number for it); nobody reads the answer. */
#define STATUS_CLIENT_GONE 499

typedef struct {
    EinsoraApiServer *server;
    EinsoraApiRequest *request;
    /* Cancelled when the client disconnects: its sign-in then costs no
     * password check that has not started, and stores no session. */
    GCancellable *cancellable;
    gulong disconnected_id;
    gboolean disconnected; /* libsoup said so: the message has no I/O left */
    GCancellable *hangup;  /* the edge's, while connected to it */
    gulong hangup_id;
    gchar *throttle_key; /* the client's address, for the sign-in throttle */
} LoginContext;

static void
stop_watching(LoginContext *ctx)
{
    if (ctx->hangup == NULL)
        return;
    g_cancellable_disconnect(ctx->hangup, ctx->hangup_id);
    ctx->hangup_id = 0;
    g_clear_object(&ctx->hangup);
}

static void
login_context_free(LoginContext *ctx)
{
    stop_watching(ctx);
    g_clear_signal_handler(&ctx->disconnected_id, einsora_api_request_get_message(ctx->request));
    g_object_unref(ctx->cancellable);
    g_free(ctx->throttle_key);
    g_object_unref(ctx->server);
    g_object_unref(ctx->request);
    g_free(ctx);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(LoginContext, login_context_free)

/* Written by hand: host-only (no Domain) is what we want, and libsoup's
 * SoupCookie insists on a domain. The value is base64url, safe as is. */
static void
set_cookie(EinsoraApiRequest *request, const char *value, int max_age)
{
    g_autofree gchar *header = g_strdup_printf(
        "einsora_session=%s; Path=/; Max-Age=%d; HttpOnly; SameSite=Strict", value, max_age);

    soup_message_headers_append(
        soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
        "Set-Cookie", header);
}

static void
on_disconnected(SoupServerMessage *message, gpointer user_data)
{
    LoginContext *ctx = user_data;

    ctx->disconnected = TRUE;
    g_cancellable_cancel(ctx->cancellable);
}

/* libsoup does not read a paused message's connection: the edge
 * watches it for the client's hang-up meanwhile, and the sign-in is
 * cancelled at once (not an iteration later, when the check of a locked
 * account may have answered already). */
static void
cancel_login(GCancellable *hangup, gpointer user_data)
{
    g_cancellable_cancel(user_data);
}

static void
watch_socket(LoginContext *ctx)
{
    GCancellable *hangup =
        einsora_http_message_get_hangup(einsora_api_request_get_message(ctx->request));

    if (hangup == NULL)
        return;
    ctx->hangup = g_object_ref(hangup);
    ctx->hangup_id = g_cancellable_connect(hangup, G_CALLBACK(cancel_login),
                                           g_object_ref(ctx->cancellable), g_object_unref);
}

static void
on_login(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(LoginContext) ctx = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraActor) actor = NULL;
    g_autofree gchar *session = NULL;
    g_autofree gchar *csrf = NULL;
    SoupServerMessage *message = einsora_api_request_get_message(ctx->request);
    gboolean ok =
        einsora_auth_login_finish(EINSORA_AUTH(source), result, &actor, &session, &csrf, &error);

    stop_watching(ctx);
    /* Only a verdict on the password counts: not a full pool, nor a
     * client that went away. */
    einsora_login_throttle_end(
        einsora_api_server_get_login_throttle(ctx->server), ctx->throttle_key,
        ok ? EINSORA_LOGIN_OUTCOME_SUCCEEDED
           : (g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED)
                  ? EINSORA_LOGIN_OUTCOME_FAILED
                  : EINSORA_LOGIN_OUTCOME_NONE));
    if (g_cancellable_is_cancelled(ctx->cancellable)) {
        /* Once libsoup has dropped the connection there is nothing to
         * resume; otherwise unpausing lets it find out and clean up. */
        if (ctx->disconnected) {
            einsora_api_request_log(ctx->request, G_LOG_LEVEL_MESSAGE,
                                    "the client went away during sign-in");
            return;
        }
        einsora_api_request_respond_empty(ctx->request, STATUS_CLIENT_GONE);
    } else if (!ok && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_BUSY)) {
        soup_message_headers_replace(soup_server_message_get_response_headers(message),
                                     "Retry-After", BUSY_RETRY_AFTER_SECONDS);
        einsora_api_request_respond_problem(ctx->request, SOUP_STATUS_SERVICE_UNAVAILABLE,
                                            "unavailable",
                                            "too many sign-ins at once; try again shortly");
    } else if (!ok) {
        einsora_api_request_respond_error(ctx->request, error);
    } else {
        g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
        JsonObject *root = json_object_new();
        JsonObject *user = json_object_new();

        json_object_set_string_member(user, "id", actor->user_id);
        json_object_set_string_member(user, "email", actor->subject);
        json_object_set_string_member(user, "tenant_id", actor->tenant_id);
        json_object_set_object_member(root, "user", user);
        json_object_set_string_member(root, "csrf_token", csrf);
        json_object_set_boolean_member(root, "password_must_change", actor->password_must_change);
        json_node_take_object(node, root);
        einsora_api_request_set_actor(ctx->request, g_steal_pointer(&actor));
        set_cookie(
            ctx->request, session,
            (int)(einsora_auth_get_session_lifetime(einsora_api_server_get_auth(ctx->server)) /
                  G_USEC_PER_SEC));
        einsora_api_request_respond_json(ctx->request, SOUP_STATUS_OK, node);
    }
    soup_server_message_unpause(message);
}

/* The password is checked in a worker thread (argon2id is slow on
 * purpose), so the message waits paused while the loop goes on. Too many
 * sign-ins at once are answered 503 with Retry-After; too many failed ones
 * from one address, 429 with Retry-After, before any password check
 * (docs/adr/0024). */
const EinsoraApiField einsora_api_session_login_fields[] = {
    {"email", G_TYPE_STRING, TRUE},
    {"password", G_TYPE_STRING, TRUE},
    {NULL},
};

void
einsora_api_session_login(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_session_login_fields, &error);
    EinsoraLoginThrottle *throttle = einsora_api_server_get_login_throttle(server);
    g_autofree gchar *key = NULL;
    gint64 retry_after_us = 0;
    LoginContext *ctx;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    key = einsora_api_server_client_key(einsora_api_request_get_message(request));
    if (!einsora_login_throttle_begin(throttle, key, &retry_after_us)) {
        g_autofree gchar *seconds = g_strdup_printf(
            "%" G_GINT64_FORMAT, (retry_after_us + G_USEC_PER_SEC - 1) / G_USEC_PER_SEC);

        soup_message_headers_replace(
            soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
            "Retry-After", seconds);
        einsora_api_request_respond_problem(request, STATUS_TOO_MANY_REQUESTS, "too_many_requests",
                                            "too many failed sign-ins from this address; try "
                                            "again after Retry-After seconds");
        soup_server_message_set_status(einsora_api_request_get_message(request),
                                       STATUS_TOO_MANY_REQUESTS, "Too Many Requests");
        return;
    }
    ctx = g_new0(LoginContext, 1);
    ctx->throttle_key = g_steal_pointer(&key);
    ctx->server = g_object_ref(server);
    ctx->request = g_object_ref(request);
    ctx->cancellable = g_cancellable_new();
    ctx->disconnected_id = g_signal_connect(einsora_api_request_get_message(request),
                                            "disconnected", G_CALLBACK(on_disconnected), ctx);
    soup_server_message_pause(einsora_api_request_get_message(request));
    watch_socket(ctx);
    einsora_auth_login_async(
        einsora_api_server_get_auth(server), json_object_get_string_member(body, "email"),
        json_object_get_string_member(body, "password"), ctx->cancellable, on_login, ctx);
}

void
einsora_api_session_logout(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *value = einsora_api_request_get_cookie(request, "einsora_session");

    /* A bearer token has no session to end. */
    if (value != NULL && !einsora_auth_logout(einsora_api_server_get_auth(server), value, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    set_cookie(request, "", 0);
    einsora_api_request_respond_empty(request, SOUP_STATUS_NO_CONTENT);
}

void
einsora_api_session_me(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    const EinsoraActor *actor = einsora_api_request_get_actor(request);
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    JsonObject *root = json_object_new();

    json_object_set_string_member(root, "user_id", actor->user_id);
    json_object_set_string_member(root, "tenant_id", actor->tenant_id);
    json_object_set_string_member(root, "subject", actor->subject);
    json_object_set_string_member(root, "via", actor->via);
    json_object_set_boolean_member(root, "password_must_change", actor->password_must_change);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
