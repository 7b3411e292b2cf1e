/* POST /v1/me/password: the caller's own new password; POST
 * /v1/admin/accounts/{id}/reset-password: an admin's reset, its
 * temporary password in the answer once (docs/adr/0049). argon2id runs in
 * a worker thread while the message waits paused; a client that went
 * away gets no answer, and its change still completes or not as a whole. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"
#include "einsora-error.h"

typedef struct {
    EinsoraApiServer *server;
    EinsoraApiRequest *request;
    gulong disconnected_id;
    gboolean disconnected;
    /* Cancelled when the client goes: a check not started costs nothing. */
    GCancellable *cancellable;
} PasswordCall;

static void
password_call_free(PasswordCall *call)
{
    g_clear_signal_handler(&call->disconnected_id, einsora_api_request_get_message(call->request));
    g_object_unref(call->cancellable);
    g_object_unref(call->server);
    g_object_unref(call->request);
    g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(PasswordCall, password_call_free)

static void
on_disconnected(SoupServerMessage *message, gpointer user_data)
{
    PasswordCall *call = user_data;

    call->disconnected = TRUE;
    g_cancellable_cancel(call->cancellable);
}

static PasswordCall *
password_call_new(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    PasswordCall *call = g_new0(PasswordCall, 1);

    call->server = g_object_ref(server);
    call->request = g_object_ref(request);
    call->cancellable = g_cancellable_new();
    call->disconnected_id = g_signal_connect(einsora_api_request_get_message(request),
                                             "disconnected", G_CALLBACK(on_disconnected), call);
    soup_server_message_pause(einsora_api_request_get_message(request));
    return call;
}

/* TRUE when the answer may be written. */
static gboolean
still_there(PasswordCall *call)
{
    if (call->disconnected) {
        einsora_api_request_log(call->request, G_LOG_LEVEL_MESSAGE,
                                "the client went away during a password change");
        return FALSE;
    }
    return TRUE;
}

static void
on_changed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(PasswordCall) call = user_data;
    g_autoptr(GError) error = NULL;
    gboolean ok = einsora_auth_change_password_finish(EINSORA_AUTH(source), result, &error);

    if (!still_there(call))
        return;
    if (ok)
        einsora_api_request_respond_empty(call->request, SOUP_STATUS_NO_CONTENT);
    else
        einsora_api_request_respond_error(call->request, error);
    soup_server_message_unpause(einsora_api_request_get_message(call->request));
}

const EinsoraApiField einsora_api_password_change_fields[] = {
    {"current_password", G_TYPE_STRING, FALSE},
    {"new_password", G_TYPE_STRING, TRUE},
    {NULL},
};

void
einsora_api_password_change(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_password_change_fields, &error);
    PasswordCall *call;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    call = password_call_new(server, request);
    einsora_auth_change_password_async(
        einsora_api_server_get_auth(server), einsora_api_request_get_actor(request),
        json_object_get_string_member_with_default(body, "current_password", NULL),
        json_object_get_string_member(body, "new_password"), call->cancellable, on_changed, call);
}

static void
on_reset(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(PasswordCall) call = user_data;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *password =
        einsora_auth_admin_reset_password_finish(EINSORA_AUTH(source), result, &error);
    g_autoptr(JsonNode) node = NULL;
    JsonObject *root;

    if (!still_there(call)) {
        if (password != NULL)
            explicit_bzero(password, strlen(password));
        return;
    }
    if (password == NULL) {
        einsora_api_request_respond_error(call->request, error);
    } else {
        root = json_object_new();
        json_object_set_string_member(root, "password", password);
        json_object_set_boolean_member(root, "password_must_change", TRUE);
        node = json_node_new(JSON_NODE_OBJECT);
        json_node_take_object(node, root);
        einsora_api_request_respond_json(call->request, SOUP_STATUS_OK, node);
        explicit_bzero(password, strlen(password));
    }
    soup_server_message_unpause(einsora_api_request_get_message(call->request));
}

void
einsora_api_admin_reset_password(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    PasswordCall *call = password_call_new(server, request);

    einsora_auth_admin_reset_password_async(
        einsora_api_server_get_auth(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), call->cancellable, on_reset, call);
}
