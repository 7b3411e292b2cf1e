#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-request.h"

#include "einsora-error.h"
#include "einsora-json-text.h"
#include "einsora-redact.h"

/* How long a client waits after a 503: about the controller's interval. */
#define RETRY_AFTER_SECONDS "5"

struct _EinsoraApiRequest {
    GObject parent_instance;
    SoupServerMessage *message;
    gchar *id;
    gint64 started_us;
    GStrv params;
    EinsoraActor *actor;
    gchar *idempotency_key;
    gchar *request_sha256;
    guint status;
    gboolean finished;
};

G_DEFINE_FINAL_TYPE(EinsoraApiRequest, einsora_api_request, G_TYPE_OBJECT)

static void
einsora_api_request_finalize(GObject *object)
{
    EinsoraApiRequest *self = EINSORA_API_REQUEST(object);

    g_clear_object(&self->message);
    g_free(self->id);
    g_free(self->idempotency_key);
    g_free(self->request_sha256);
    g_strfreev(self->params);
    einsora_actor_free(self->actor);
    G_OBJECT_CLASS(einsora_api_request_parent_class)->finalize(object);
}

static void
einsora_api_request_class_init(EinsoraApiRequestClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_api_request_finalize;
}

static void
einsora_api_request_init(EinsoraApiRequest *self)
{
}

EinsoraApiRequest *
einsora_api_request_new(SoupServerMessage *message, const char *request_id, gint64 started_us)
{
    EinsoraApiRequest *self = g_object_new(EINSORA_TYPE_API_REQUEST, NULL);

    self->message = g_object_ref(message);
    self->id = g_strdup(request_id);
    self->started_us = started_us;
    return self;
}

SoupServerMessage *
einsora_api_request_get_message(EinsoraApiRequest *self)
{
    return self->message;
}

const char *
einsora_api_request_get_id(EinsoraApiRequest *self)
{
    return self->id;
}

const char *
einsora_api_request_get_method(EinsoraApiRequest *self)
{
    return soup_server_message_get_method(self->message);
}

const char *
einsora_api_request_get_path(EinsoraApiRequest *self)
{
    return g_uri_get_path(soup_server_message_get_uri(self->message));
}

const char *
einsora_api_request_get_param(EinsoraApiRequest *self, guint index)
{
    if (self->params == NULL || index >= g_strv_length(self->params))
        return NULL;
    return self->params[index];
}

void
einsora_api_request_set_params(EinsoraApiRequest *self, GStrv params)
{
    g_strfreev(self->params);
    self->params = params;
}

gchar *
einsora_api_request_get_cookie(EinsoraApiRequest *self, const char *name)
{
    const char *header = soup_message_headers_get_one(
        soup_server_message_get_request_headers(self->message), "Cookie");
    GHashTable *cookies;
    gchar *value;

    if (header == NULL)
        return NULL;
    cookies = soup_header_parse_semi_param_list(header);
    value = g_strdup(g_hash_table_lookup(cookies, name));
    soup_header_free_param_list(cookies);
    return value;
}

const EinsoraActor *
einsora_api_request_get_actor(EinsoraApiRequest *self)
{
    return self->actor;
}

void
einsora_api_request_set_actor(EinsoraApiRequest *self, EinsoraActor *actor)
{
    einsora_actor_free(self->actor);
    self->actor = actor;
}

void
einsora_api_request_set_idempotency(EinsoraApiRequest *self, const char *key,
                                    const char *request_sha256)
{
    g_free(self->idempotency_key);
    g_free(self->request_sha256);
    self->idempotency_key = g_strdup(key);
    self->request_sha256 = g_strdup(request_sha256);
}

const char *
einsora_api_request_get_idempotency_key(EinsoraApiRequest *self)
{
    return self->idempotency_key;
}

const char *
einsora_api_request_get_request_sha256(EinsoraApiRequest *self)
{
    return self->request_sha256;
}

gboolean
einsora_api_request_is_finished(EinsoraApiRequest *self)
{
    return self->finished;
}

guint
einsora_api_request_get_status(EinsoraApiRequest *self)
{
    return self->status;
}

void
einsora_api_request_log(EinsoraApiRequest *self, GLogLevelFlags level, const char *format, ...)
{
    va_list args;
    g_autofree gchar *text = NULL;
    g_autofree gchar *who = NULL;
    g_autofree gchar *message = NULL;

    va_start(args, format);
    text = g_strdup_vprintf(format, args);
    va_end(args);
    if (self->actor != NULL)
        who = g_strdup_printf(" tenant=%s subject=%s", self->actor->tenant_id,
                              self->actor->subject != NULL ? self->actor->subject : "-");
    /* The fields are also in the message so that plain stderr shows them;
     * journald gets them as fields too. */
    message = g_strdup_printf("request_id=%s%s %s", self->id, who != NULL ? who : "", text);
    {
        const GLogField fields[] = {
            {"MESSAGE", message, -1},
            {"PRIORITY",
             level & G_LOG_LEVEL_WARNING ? "4" : (level & G_LOG_LEVEL_MESSAGE ? "5" : "6"), -1},
            {"GLIB_DOMAIN", G_LOG_DOMAIN, -1},
            {"EINSORA_REQUEST_ID", self->id, -1},
            {"EINSORA_TENANT_ID", self->actor != NULL ? self->actor->tenant_id : "", -1},
        };
        g_log_structured_array(level, fields, G_N_ELEMENTS(fields));
    }
}

static void
finish(EinsoraApiRequest *self, guint status)
{
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(self->message);

    g_return_if_fail(!self->finished);
    self->finished = TRUE;
    self->status = status;
    soup_server_message_set_status(self->message, status, NULL);
    soup_message_headers_replace(headers, "X-Request-ID", self->id);
    /* API answers are per caller and may name secrets (a new token). */
    soup_message_headers_replace(headers, "Cache-Control", "no-store");
    soup_message_headers_replace(headers, "X-Content-Type-Options", "nosniff");
    /* Every 503 says when to try again; a handler that knows better set
     * its own. */
    if (status == SOUP_STATUS_SERVICE_UNAVAILABLE &&
        soup_message_headers_get_one(headers, "Retry-After") == NULL)
        soup_message_headers_replace(headers, "Retry-After", RETRY_AFTER_SECONDS);
    {
        /* The path arrives percent-decoded: escape it again, so that no
         * caller can write a log line of its own. */
        g_autofree gchar *path =
            g_uri_escape_string(einsora_api_request_get_path(self), "/", FALSE);
        g_autofree gchar *method =
            g_uri_escape_string(einsora_api_request_get_method(self), NULL, FALSE);
        einsora_api_request_log(self, G_LOG_LEVEL_MESSAGE, "%s %s %u %" G_GINT64_FORMAT "us",
                                method, path, status, g_get_monotonic_time() - self->started_us);
    }
}

void
einsora_api_request_respond_json(EinsoraApiRequest *self, guint status, JsonNode *node)
{
    g_autofree gchar *body = json_to_string(node, FALSE);
    gsize length = strlen(body);

    finish(self, status);
    soup_server_message_set_response(self->message, "application/json", SOUP_MEMORY_TAKE,
                                     g_steal_pointer(&body), length);
}

void
einsora_api_request_respond_raw(EinsoraApiRequest *self, guint status, const char *body)
{
    finish(self, status);
    if (body != NULL && *body != '\0')
        soup_server_message_set_response(self->message, "application/json", SOUP_MEMORY_COPY, body,
                                         strlen(body));
}

void
einsora_api_request_respond_text(EinsoraApiRequest *self, guint status, GString *body)
{
    gsize length = body->len;

    finish(self, status);
    soup_server_message_set_response(self->message, "application/json", SOUP_MEMORY_TAKE,
                                     g_string_free(body, FALSE), length);
}

void
einsora_api_request_respond_empty(EinsoraApiRequest *self, guint status)
{
    finish(self, status);
}

void
einsora_api_request_respond_problem(EinsoraApiRequest *self, guint status, const char *code,
                                    const char *message)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) node = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "error");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "code");
    json_builder_add_string_value(builder, code);
    json_builder_set_member_name(builder, "message");
    json_builder_add_string_value(builder, message);
    json_builder_set_member_name(builder, "request_id");
    json_builder_add_string_value(builder, self->id);
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    node = json_builder_get_root(builder);
    einsora_api_request_respond_json(self, status, node);
}

/* The one place a GError becomes an API error. Einsora's own errors carry
 * fixed, human messages; anything else is a 500 whose detail goes only to
 * the operator's log, redacted. */
void
einsora_api_request_respond_error(EinsoraApiRequest *self, const GError *error)
{
    if (error != NULL && error->domain == EINSORA_ERROR &&
        einsora_error_code_to_string(error->code) != NULL) {
        /* The store logged what failed; this says which request met it. */
        if (error->code == EINSORA_ERROR_UNAVAILABLE)
            einsora_api_request_log(self, G_LOG_LEVEL_MESSAGE, "unavailable: %s", error->message);
        einsora_api_request_respond_problem(self, einsora_error_http_status(error->code),
                                            einsora_error_code_to_string(error->code),
                                            error->message);
        return;
    }
    {
        g_autofree gchar *detail =
            einsora_redact_secrets(error != NULL ? error->message : "no error set");
        einsora_api_request_log(self, G_LOG_LEVEL_WARNING, "internal error: %s", detail);
    }
    einsora_api_request_respond_problem(self, SOUP_STATUS_INTERNAL_SERVER_ERROR, "internal",
                                        "something went wrong on the server; the operator's log "
                                        "has the details under this request ID");
}

/* Strings only, and a bounded number: a list in a body is a short one. */
#define STRV_FIELD_MAX 16

static gboolean
node_has_type(JsonNode *node, GType type)
{
    if (type == EINSORA_API_TYPE_STRINGS) {
        JsonArray *array;

        if (!JSON_NODE_HOLDS_ARRAY(node))
            return FALSE;
        array = json_node_get_array(node);
        if (json_array_get_length(array) > STRV_FIELD_MAX)
            return FALSE;
        for (guint i = 0; i < json_array_get_length(array); i++) {
            JsonNode *element = json_array_get_element(array, i);
            if (!JSON_NODE_HOLDS_VALUE(element) ||
                json_node_get_value_type(element) != G_TYPE_STRING)
                return FALSE;
        }
        return TRUE;
    }
    if (!JSON_NODE_HOLDS_VALUE(node))
        return FALSE;
    if (type == G_TYPE_INT64)
        return json_node_get_value_type(node) == G_TYPE_INT64;
    return json_node_get_value_type(node) == type;
}

static const char *
type_name(GType type)
{
    if (type == G_TYPE_BOOLEAN)
        return "a boolean";
    if (type == G_TYPE_INT64)
        return "an integer";
    if (type == EINSORA_API_TYPE_STRINGS)
        return "a list of at most 16 strings";
    return "a string";
}

/* Members seen so far, as "object address, name"; json-glib keeps the
 * last of two members with one name without a word. Once a duplicate is
 * found nothing else is recorded, so a freed object's reused address
 * can't be taken for a duplicate. */
typedef struct {
    GHashTable *seen;
    gboolean duplicate;
} MemberCheck;

static void
on_object_member(JsonParser *parser, JsonObject *object, const char *name, gpointer user_data)
{
    MemberCheck *check = user_data;

    if (check->duplicate)
        return;
    if (!g_hash_table_add(check->seen, g_strdup_printf("%p %s", (void *)object, name)))
        check->duplicate = TRUE;
}

JsonObject *
einsora_api_parse_body(const char *data, gsize length, const EinsoraApiField *fields,
                       GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    MemberCheck check = {seen, FALSE};
    g_autoptr(GList) members = NULL;
    JsonNode *root;
    JsonObject *object;

    if (data == NULL || length == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the body must be a JSON object");
        return NULL;
    }
    g_signal_connect(parser, "object-member", G_CALLBACK(on_object_member), &check);
    if (!g_utf8_validate(data, (gssize)length, NULL) ||
        !einsora_json_text_is_one_value(data, length) ||
        !json_parser_load_from_data(parser, data, (gssize)length, NULL)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the body is not valid JSON");
        return NULL;
    }
    if (check.duplicate) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the body names a field more than once");
        return NULL;
    }
    root = json_parser_get_root(parser);
    if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the body must be a JSON object");
        return NULL;
    }
    object = json_node_get_object(root);
    members = json_object_get_members(object);
    for (GList *l = members; l != NULL; l = l->next) {
        const char *name = l->data;
        const EinsoraApiField *field = NULL;
        for (guint i = 0; fields[i].name != NULL; i++) {
            if (g_strcmp0(fields[i].name, name) == 0)
                field = &fields[i];
        }
        if (field == NULL) {
            g_autofree gchar *shown = g_strescape(name, NULL);
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "unknown field \"%.64s\"", shown);
            return NULL;
        }
        if (!node_has_type(json_object_get_member(object, name), field->type)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "field \"%s\" must be %s", name, type_name(field->type));
            return NULL;
        }
    }
    for (guint i = 0; fields[i].name != NULL; i++) {
        if (fields[i].required && !json_object_has_member(object, fields[i].name)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "field \"%s\" is required", fields[i].name);
            return NULL;
        }
    }
    return json_object_ref(object);
}

JsonObject *
einsora_api_request_parse_body(EinsoraApiRequest *self, const EinsoraApiField *fields,
                               GError **error)
{
    g_autoptr(GBytes) bytes =
        soup_message_body_flatten(soup_server_message_get_request_body(self->message));
    gsize length = 0;
    const char *data = g_bytes_get_data(bytes, &length);

    return einsora_api_parse_body(data, length, fields, error);
}

gboolean
einsora_api_query_check(const char *query, const char *const *allowed, GError **error)
{
    g_autoptr(GHashTable) seen = NULL;
    g_autoptr(GError) local_error = NULL;
    GUriParamsIter iter;
    gchar *name = NULL;

    if (query == NULL || *query == '\0')
        return TRUE;
    seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_uri_params_iter_init(&iter, query, -1, "&", G_URI_PARAMS_NONE);
    while (g_uri_params_iter_next(&iter, &name, NULL, &local_error)) {
        g_autofree gchar *shown = g_strescape(name, NULL);

        if (allowed == NULL || !g_strv_contains(allowed, name)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "unknown query parameter \"%.64s\"", shown);
            g_free(name);
            return FALSE;
        }
        /* Given twice, which one counts would be a guess. */
        if (!g_hash_table_add(seen, name)) {
            g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                        "query parameter \"%.64s\" is given more than once", shown);
            return FALSE;
        }
    }
    if (local_error != NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the query string is malformed");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_api_request_check_query(EinsoraApiRequest *self, const char *const *allowed, GError **error)
{
    return einsora_api_query_check(g_uri_get_query(soup_server_message_get_uri(self->message)),
                                   allowed, error);
}

const char *
einsora_api_request_get_query(EinsoraApiRequest *self)
{
    return g_uri_get_query(soup_server_message_get_uri(self->message));
}

gboolean
einsora_api_query_flag(const char *query, const char *name, gboolean *value, GError **error)
{
    g_autoptr(GHashTable) params = NULL;
    const char *text;

    *value = FALSE;
    if (query == NULL)
        return TRUE;
    params = g_uri_parse_params(query, -1, "&", G_URI_PARAMS_NONE, NULL);
    text = params != NULL ? g_hash_table_lookup(params, name) : NULL;
    if (text == NULL)
        return TRUE;
    if (g_strcmp0(text, "true") == 0) {
        *value = TRUE;
        return TRUE;
    }
    if (g_strcmp0(text, "false") == 0)
        return TRUE;
    g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                "query parameter \"%s\" must be true or false", name);
    return FALSE;
}

gboolean
einsora_api_request_query_flag(EinsoraApiRequest *self, const char *name, gboolean *value,
                               GError **error)
{
    return einsora_api_query_flag(g_uri_get_query(soup_server_message_get_uri(self->message)), name,
                                  value, error);
}
