/* /v1/tokens: the caller's own API tokens. A new token's secret is in the
 * answer that creates it and nowhere else; only its SHA-256 is stored. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-page.h"
#include "einsora-api-routes.h"

static JsonNode *
token_to_json(gconstpointer item)
{
    const EinsoraApiToken *token = item;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    const struct {
        const char *name;
        const char *value;
    } members[] = {
        {"id", token->id},
        {"name", token->name},
        {"prefix", token->prefix},
        {"created_at", token->created_at},
        {"last_used_at", token->last_used_at},
        {"expires_at", token->expires_at},
        {"revoked_at", token->revoked_at},
    };

    json_builder_begin_object(builder);
    for (guint i = 0; i < G_N_ELEMENTS(members); i++) {
        json_builder_set_member_name(builder, members[i].name);
        if (members[i].value != NULL)
            json_builder_add_string_value(builder, members[i].value);
        else
            json_builder_add_null_value(builder);
    }
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

/* A user holds few tokens: each row goes through json-glib, one at a
 * time, never the whole list as one tree. */
static void
append_token(GString *out, gconstpointer item)
{
    g_autoptr(JsonNode) node = token_to_json(item);
    g_autofree gchar *text = json_to_string(node, FALSE);

    g_string_append(out, text);
}

const EinsoraApiField einsora_api_tokens_create_fields[] = {{"name", G_TYPE_STRING, TRUE}, {NULL}};

void
einsora_api_tokens_create(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_tokens_create_fields, &error);
    g_autoptr(EinsoraApiToken) token = NULL;
    g_autofree gchar *secret = NULL;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *root;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    token = einsora_auth_create_token(einsora_api_server_get_auth(server),
                                      einsora_api_request_get_actor(request),
                                      json_object_get_string_member(body, "name"), &secret, &error);
    if (token == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    root = json_object_new();
    json_object_set_member(root, "token", token_to_json(token));
    json_object_set_string_member(root, "secret", secret);
    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_CREATED, node);
}

typedef struct {
    EinsoraAuth *auth;
    EinsoraActor *actor;
} TokenList;

static void
token_list_free(gpointer data)
{
    TokenList *list = data;

    g_object_unref(list->auth);
    einsora_actor_free(list->actor);
    g_free(list);
}

static GPtrArray *
read_tokens(gpointer data, const EinsoraApiPage *page, guint limit, GError **error)
{
    TokenList *list = data;

    return einsora_auth_list_tokens_page(list->auth, list->actor, page->after_key, page->after_id,
                                         limit, error);
}

static void
advance_past_token(EinsoraApiPage *page, gconstpointer item)
{
    const EinsoraApiToken *token = item;

    g_free(page->after_key);
    g_free(page->after_id);
    page->after_key = g_strdup(token->created_at);
    page->after_id = g_strdup(token->id);
}

void
einsora_api_tokens_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    const EinsoraActor *actor = einsora_api_request_get_actor(request);
    g_autofree gchar *scope = g_strjoin("\n", actor->tenant_id, actor->user_id, NULL);
    EinsoraApiPage *page = NULL;
    TokenList *list;
    EinsoraApiPageSource source = {
        "tokens", "tokens", scope, read_tokens, advance_past_token, append_token,
    };

    page = einsora_api_page_read(einsora_api_request_get_query(request), "tokens",
                                 EINSORA_API_PAGE_BY_CREATED, scope, EINSORA_API_PAGE_DEFAULT_LIMIT,
                                 &error);
    if (page == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    list = g_new0(TokenList, 1);
    list->auth = g_object_ref(einsora_api_server_get_auth(server));
    list->actor = einsora_actor_copy(actor);
    einsora_api_page_respond(request, &source, page, list, token_list_free);
}

void
einsora_api_tokens_revoke(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;

    if (!einsora_auth_revoke_token(einsora_api_server_get_auth(server),
                                   einsora_api_request_get_actor(request),
                                   einsora_api_request_get_param(request, 0), &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    einsora_api_request_respond_empty(request, SOUP_STATUS_NO_CONTENT);
}
