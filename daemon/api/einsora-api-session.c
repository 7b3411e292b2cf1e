/* Browser sessions: password login sets a host-only, HttpOnly,
 * SameSite=Strict cookie and returns the CSRF token that every unsafe
 * request the cookie authenticates must carry in X-CSRF-Token. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#define SESSION_MAX_AGE_SECONDS (7 * 24 * 60 * 60)

typedef struct {
    EinsoraApiServer *server;
    EinsoraApiRequest *request;
} LoginContext;

static void
login_context_free(LoginContext *ctx)
{
    g_object_unref(ctx->server);
    g_object_unref(ctx->request);
    g_free(ctx);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(LoginContext, login_context_free)

static void
set_cookie(EinsoraApiRequest *request, const char *value, int max_age)
{
    g_autoptr(SoupCookie) cookie = soup_cookie_new("einsora_session", value, NULL, "/", max_age);
    g_autofree gchar *header = NULL;

    soup_cookie_set_http_only(cookie, TRUE);
    soup_cookie_set_same_site_policy(cookie, SOUP_SAME_SITE_POLICY_STRICT);
    header = soup_cookie_to_set_cookie_header(cookie);
    soup_message_headers_append(
        soup_server_message_get_response_headers(einsora_api_request_get_message(request)),
        "Set-Cookie", header);
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

    if (!einsora_auth_login_finish(EINSORA_AUTH(source), result, &actor, &session, &csrf, &error)) {
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
        json_node_take_object(node, root);
        einsora_api_request_set_actor(ctx->request, g_steal_pointer(&actor));
        set_cookie(ctx->request, session, SESSION_MAX_AGE_SECONDS);
        einsora_api_request_respond_json(ctx->request, SOUP_STATUS_OK, node);
    }
    soup_server_message_unpause(message);
}

/* The password is checked in a worker thread (argon2id is slow on
 * purpose), so the message waits paused while the loop goes on. */
void
einsora_api_session_login(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    static const EinsoraApiField fields[] = {
        {"email", G_TYPE_STRING, TRUE},
        {"password", G_TYPE_STRING, TRUE},
        {NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body = einsora_api_request_parse_body(request, fields, &error);
    LoginContext *ctx;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    ctx = g_new0(LoginContext, 1);
    ctx->server = g_object_ref(server);
    ctx->request = g_object_ref(request);
    soup_server_message_pause(einsora_api_request_get_message(request));
    einsora_auth_login_async(einsora_api_server_get_auth(server),
                             json_object_get_string_member(body, "email"),
                             json_object_get_string_member(body, "password"), NULL, on_login, ctx);
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
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
