/* EinsoraClient: one SoupSession, one base URL, one bearer token. Requests
 * are sent with soup_session_send_and_read() or its _async form; either
 * way the body is kept as received (export must reach the user byte for
 * byte) and turned into JSON or an error by one function,
 * response_to_json(), so both paths answer alike. */
#define G_LOG_DOMAIN "einsora-client"

#include "einsora-client.h"

#include <glib/gi18n-lib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-pinned-database.h"

/* A request with an Idempotency-Key that broke in transit is sent this many
 * times at most; the server answers a repeated key only once. */
#define MAX_ATTEMPTS 3
#define TIMEOUT_SECONDS 60
/* Lists are read whole, a page at a time, following next_cursor: the
 * largest page the API gives (docs/openapi.json), so a long list takes
 * few round trips and no answer is longer than one page. */
#define LIST_PAGE_LIMIT "1000"

struct _EinsoraClient {
    GObject parent_instance;
    gchar *base_url;
    gchar *token;
    SoupSession *session;
    SoupSession *stream_session; /* no I/O timeout: a followed log may be quiet for hours */
    /* Whom TLS trusts: the pinned certificate or the system's CAs. */
    EinsoraPinnedDatabase *trust;
};

G_DEFINE_TYPE(EinsoraClient, einsora_client, G_TYPE_OBJECT)

enum {
    PROP_0,
    PROP_BASE_URL,
    PROP_TOKEN,
    N_PROPS,
};

static GParamSpec *properties[N_PROPS];

static void
einsora_client_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
    EinsoraClient *self = EINSORA_CLIENT(object);

    switch (prop_id) {
    case PROP_BASE_URL:
        g_free(self->base_url);
        self->base_url = einsora_client_base_url_new(g_value_get_string(value));
        break;
    case PROP_TOKEN:
        g_free(self->token);
        self->token = g_value_dup_string(value);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_client_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
    EinsoraClient *self = EINSORA_CLIENT(object);

    switch (prop_id) {
    case PROP_BASE_URL:
        g_value_set_string(value, self->base_url);
        break;
    default:
        /* The token is write-only: nothing reads it back out. */
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_client_finalize(GObject *object)
{
    EinsoraClient *self = EINSORA_CLIENT(object);

    g_clear_object(&self->session);
    g_clear_object(&self->stream_session);
    g_clear_object(&self->trust);
    g_clear_pointer(&self->base_url, g_free);
    g_clear_pointer(&self->token, g_free);
    G_OBJECT_CLASS(einsora_client_parent_class)->finalize(object);
}

static void
einsora_client_class_init(EinsoraClientClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);

    object_class->set_property = einsora_client_set_property;
    object_class->get_property = einsora_client_get_property;
    object_class->finalize = einsora_client_finalize;

    properties[PROP_BASE_URL] =
        g_param_spec_string("base-url", NULL, NULL, NULL,
                            G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
    properties[PROP_TOKEN] =
        g_param_spec_string("token", NULL, NULL, NULL,
                            G_PARAM_WRITABLE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(object_class, N_PROPS, properties);
}

static void
einsora_client_init(EinsoraClient *self)
{
    self->trust = einsora_pinned_database_new(NULL);
    self->session = soup_session_new_with_options("timeout", TIMEOUT_SECONDS, "user-agent",
                                                  "einsora/" EINSORA_VERSION, "tls-database",
                                                  self->trust, NULL);
}

void
einsora_client_set_pinned_certificate(EinsoraClient *self, const char *fingerprint)
{
    g_return_if_fail(EINSORA_IS_CLIENT(self));
    g_clear_object(&self->trust);
    self->trust = einsora_pinned_database_new(fingerprint);
    soup_session_set_tls_database(self->session, G_TLS_DATABASE(self->trust));
    if (self->stream_session != NULL)
        soup_session_set_tls_database(self->stream_session, G_TLS_DATABASE(self->trust));
}

GTlsDatabase *
einsora_client_get_tls_database(EinsoraClient *self)
{
    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    return G_TLS_DATABASE(self->trust);
}

gchar *
einsora_client_base_url_new(const char *url)
{
    gchar *copy = g_strdup(url);
    gsize length = copy != NULL ? strlen(copy) : 0;

    while (length > 0 && copy[length - 1] == '/')
        copy[--length] = '\0';
    return copy;
}

gboolean
einsora_client_server_is_local(const char *server)
{
    g_autoptr(GUri) uri = server != NULL ? g_uri_parse(server, G_URI_FLAGS_NONE, NULL) : NULL;
    const char *host = uri != NULL ? g_uri_get_host(uri) : NULL;
    g_autoptr(GInetAddress) address = host != NULL ? g_inet_address_new_from_string(host) : NULL;

    if (host == NULL)
        return FALSE;
    if (g_ascii_strcasecmp(host, "localhost") == 0)
        return TRUE;
    return address != NULL && g_inet_address_get_is_loopback(address);
}

EinsoraClient *
einsora_client_new(const char *base_url, const char *token)
{
    g_return_val_if_fail(base_url != NULL, NULL);
    return g_object_new(EINSORA_TYPE_CLIENT, "base-url", base_url, "token", token, NULL);
}

const char *
einsora_client_get_token(EinsoraClient *self)
{
    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    return self->token;
}

const char *
einsora_client_get_base_url(EinsoraClient *self)
{
    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    return self->base_url;
}

EinsoraEventFeed *
einsora_client_new_event_feed(EinsoraClient *self)
{
    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    EinsoraEventFeed *feed = einsora_event_feed_new(self->base_url, self->token);

    einsora_event_feed_set_tls_database(feed, G_TLS_DATABASE(self->trust));
    return feed;
}

/* Only failures after which the request may have reached the server are
 * worth repeating; a refused connection or an unknown host never sent it. */
static gboolean
broke_in_transit(const GError *error)
{
    return g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT) ||
           g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED) ||
           g_error_matches(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE) ||
           g_error_matches(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
}

static SoupMessage *
build_message(EinsoraClient *self, const char *method, const char *path, GBytes *body,
              const char *idempotency_key, GError **error)
{
    g_autofree gchar *url = g_strconcat(self->base_url, path, NULL);
    g_autoptr(SoupMessage) message = soup_message_new(method, url);
    SoupMessageHeaders *headers;

    if (message == NULL) {
        g_autofree gchar *text =
            g_strdup_printf(_("“%s” is not an http:// or https:// URL"), self->base_url);
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0, text));
        return NULL;
    }
    headers = soup_message_get_request_headers(message);
    soup_message_headers_replace(headers, "Accept", "application/json");
    if (self->token != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("Bearer %s", self->token);
        soup_message_headers_replace(headers, "Authorization", authorization);
    }
    if (idempotency_key != NULL)
        soup_message_headers_replace(headers, "Idempotency-Key", idempotency_key);
    if (body != NULL)
        soup_message_set_request_body_from_bytes(message, "application/json", body);
    return g_steal_pointer(&message);
}

static JsonNode *
parse_json(GBytes *bytes, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    gsize size = 0;
    const char *data = g_bytes_get_data(bytes, &size);
    JsonNode *root;

    if (!json_parser_load_from_data(parser, data, (gssize)size, error))
        return NULL;
    root = json_parser_get_root(parser);
    if (root == NULL) {
        g_set_error_literal(error, JSON_PARSER_ERROR, JSON_PARSER_ERROR_PARSE, "empty document");
        return NULL;
    }
    return json_node_copy(root);
}

/* The API's {"error": {"code", "message", "request_id"}}; anything else
 * that isn't a success is a response this client doesn't understand. */
static GError *
response_error(SoupMessage *message, GBytes *bytes)
{
    guint status = soup_message_get_status(message);
    const char *header_id =
        soup_message_headers_get_one(soup_message_get_response_headers(message), "X-Request-ID");
    g_autoptr(JsonNode) root = g_bytes_get_size(bytes) > 0 ? parse_json(bytes, NULL) : NULL;
    g_autofree gchar *text = NULL;

    if (root != NULL && JSON_NODE_HOLDS_OBJECT(root)) {
        JsonObject *object = json_node_get_object(root);
        JsonNode *member = json_object_get_member(object, "error");

        if (member != NULL && JSON_NODE_HOLDS_OBJECT(member)) {
            JsonObject *problem = json_node_get_object(member);
            const char *code = json_object_get_string_member_with_default(problem, "code", NULL);
            const char *detail =
                json_object_get_string_member_with_default(problem, "message", NULL);
            const char *request_id =
                json_object_get_string_member_with_default(problem, "request_id", header_id);

            if (code != NULL && *code != '\0')
                return einsora_client_error_new(code, request_id, status,
                                                detail != NULL ? detail : code);
        }
    }
    text = g_strdup_printf(_("the server answered HTTP %u %s, which isn't an Einsora API error"),
                           status, soup_status_get_phrase(status));
    return einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, header_id, status, text);
}

/* The answer to @message, whose body is @bytes: the parsed JSON (a JSON
 * null for an empty success), or the error it means. @want_object: a
 * success must be a JSON object. @raw gets @bytes on success. The one
 * place both the synchronous and the asynchronous calls map answers. */
static JsonNode *
response_to_json(SoupMessage *message, GBytes *bytes, gboolean want_object, GBytes **raw,
                 GError **error)
{
    guint status = soup_message_get_status(message);
    const char *request_id =
        soup_message_headers_get_one(soup_message_get_response_headers(message), "X-Request-ID");
    g_autoptr(JsonNode) root = NULL;

    if (!SOUP_STATUS_IS_SUCCESSFUL(status)) {
        g_propagate_error(error, response_error(message, bytes));
        return NULL;
    }
    if (g_bytes_get_size(bytes) == 0) {
        root = json_node_new(JSON_NODE_NULL);
    } else {
        g_autoptr(GError) parse_error = NULL;

        root = parse_json(bytes, &parse_error);
        if (root == NULL) {
            g_autofree gchar *text =
                g_strdup_printf(_("the server answered HTTP %u with a body that isn't JSON: %s"),
                                status, parse_error->message);
            g_propagate_error(error, einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE,
                                                              request_id, status, text));
            return NULL;
        }
    }
    if (want_object && !JSON_NODE_HOLDS_OBJECT(root)) {
        g_propagate_error(
            error, einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, request_id, status,
                                            _("the server's answer is not a JSON object")));
        return NULL;
    }
    if (raw != NULL)
        *raw = g_bytes_ref(bytes);
    return g_steal_pointer(&root);
}

static GBytes *
body_bytes(JsonNode *body)
{
    gchar *text;

    if (body == NULL)
        return NULL;
    text = json_to_string(body, FALSE);
    return g_bytes_new_take(text, strlen(text));
}

/* Lists */

/* @base (a list's path, maybe with a query) asking for a page from
 * @cursor (NULL: the first). */
static gchar *
page_path(const char *base, const char *cursor)
{
    g_autofree gchar *escaped = cursor != NULL ? g_uri_escape_string(cursor, NULL, FALSE) : NULL;

    return g_strconcat(base, strchr(base, '?') != NULL ? "&" : "?", "limit=" LIST_PAGE_LIMIT,
                       escaped != NULL ? "&cursor=" : "", escaped != NULL ? escaped : "", NULL);
}

/* Moves @page's items under @member onto @items; *next_cursor gets its
 * next_cursor (NULL on the last page). */
static gboolean
take_page(JsonNode *page, const char *member, JsonArray *items, gchar **next_cursor, GError **error)
{
    JsonObject *root = json_node_get_object(page);
    JsonNode *list = json_object_get_member(root, member);
    JsonNode *cursor = json_object_get_member(root, "next_cursor");

    if (list == NULL || !JSON_NODE_HOLDS_ARRAY(list) ||
        (cursor != NULL && !JSON_NODE_HOLDS_NULL(cursor) &&
         json_node_get_value_type(cursor) != G_TYPE_STRING)) {
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 200,
                                                   _("the server's answer is not a list page")));
        return FALSE;
    }
    for (guint i = 0; i < json_array_get_length(json_node_get_array(list)); i++)
        json_array_add_element(items, json_array_dup_element(json_node_get_array(list), i));
    *next_cursor = cursor != NULL && !JSON_NODE_HOLDS_NULL(cursor)
                       ? g_strdup(json_node_get_string(cursor))
                       : NULL;
    return TRUE;
}

/* The whole list, as one page with no next_cursor would show it. */
static JsonNode *
whole_list(const char *member, JsonArray *items, GBytes **raw)
{
    JsonObject *root = json_object_new();
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);

    json_object_set_array_member(root, member, json_array_ref(items));
    json_object_set_null_member(root, "next_cursor");
    json_node_take_object(node, root);
    if (raw != NULL) {
        gchar *text = json_to_string(node, FALSE);
        *raw = g_bytes_new_take(text, strlen(text));
    }
    return node;
}

/* Whether a send that failed with @error goes once more. */
static gboolean
send_again(const char *method, const char *path, const char *idempotency_key, guint attempt,
           const GError *error)
{
    if (idempotency_key == NULL || attempt >= MAX_ATTEMPTS || !broke_in_transit(error))
        return FALSE;
    g_debug("%s %s broke in transit (%s); sending it again with the same key", method, path,
            error->message);
    return TRUE;
}

/* What to check and what to type, when TLS refused the server. */
static GError *
untrusted_error(EinsoraClient *self, const char *presented)
{
    const char *pin = einsora_pinned_database_get_pin(self->trust);
    g_autofree gchar *text =
        pin != NULL
            ? g_strdup_printf(_("%s presents a certificate other than the one you pinned: pinned "
                                "%s, now %s. Nothing was sent. If its admin renewed it, check "
                                "the new fingerprint with them (einsora-daemon info on the "
                                "server prints it), then pin it: einsora login %s "
                                "--fingerprint %s"),
                              self->base_url, pin, presented, self->base_url, presented)
            : g_strdup_printf(_("%s presents a certificate this machine doesn't trust, "
                                "fingerprint %s. Nothing was sent. Check the fingerprint with "
                                "the server's admin (einsora-daemon info on the server prints "
                                "it), then pin it: einsora login %s --fingerprint %s"),
                              self->base_url, presented, self->base_url, presented);

    return einsora_client_error_new(EINSORA_CLIENT_CODE_UNTRUSTED_CERTIFICATE, NULL, 0, text);
}

static GError *
unreachable_error(EinsoraClient *self, const GError *error)
{
    g_autofree gchar *refused = einsora_pinned_database_dup_refused(self->trust);
    g_autofree gchar *text = NULL;

    if (g_error_matches(error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE) && refused != NULL)
        return untrusted_error(self, refused);
    text = g_strdup_printf(_("can't reach %s: %s"), self->base_url, error->message);
    return einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0, text);
}

static JsonNode *
request_sync(EinsoraClient *self, const char *method, const char *path, JsonNode *body,
             const char *idempotency_key, gboolean want_object, GBytes **raw, GError **error)
{
    g_autoptr(GBytes) payload = body_bytes(body);
    g_autoptr(SoupMessage) message = NULL;
    g_autoptr(GBytes) bytes = NULL;

    for (guint attempt = 1;; attempt++) {
        g_autoptr(GError) local_error = NULL;

        g_clear_object(&message);
        message = build_message(self, method, path, payload, idempotency_key, error);
        if (message == NULL)
            return NULL;
        bytes = soup_session_send_and_read(self->session, message, NULL, &local_error);
        if (bytes != NULL)
            break;
        if (send_again(method, path, idempotency_key, attempt, local_error))
            continue;
        g_propagate_error(error, unreachable_error(self, local_error));
        return NULL;
    }
    return response_to_json(message, bytes, want_object, raw, error);
}

JsonNode *
einsora_client_request(EinsoraClient *self, const char *method, const char *path, JsonNode *body,
                       const char *idempotency_key, GBytes **raw, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    g_return_val_if_fail(method != NULL, NULL);
    g_return_val_if_fail(path != NULL && path[0] == '/', NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    return request_sync(self, method, path, body, idempotency_key, FALSE, raw, error);
}

/* A call whose answer must be a JSON object. */
static JsonNode *
request_object(EinsoraClient *self, const char *method, const char *path, JsonNode *body,
               const char *idempotency_key, GBytes **raw, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    return request_sync(self, method, path, body, idempotency_key, TRUE, raw, error);
}

/* Every page of the list at @base, whose items are under @member. One
 * page is answered as the server wrote it, byte for byte. */
static JsonNode *
request_list(EinsoraClient *self, const char *base, const char *member, GBytes **raw,
             GError **error)
{
    g_autoptr(JsonArray) items = json_array_new();
    g_autofree gchar *cursor = NULL;
    guint pages = 0;

    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    for (;;) {
        g_autofree gchar *path = page_path(base, cursor);
        g_autoptr(GBytes) page_raw = NULL;
        g_autoptr(JsonNode) page =
            request_sync(self, "GET", path, NULL, NULL, TRUE, &page_raw, error);

        if (page == NULL)
            return NULL;
        g_clear_pointer(&cursor, g_free);
        if (!take_page(page, member, items, &cursor, error))
            return NULL;
        pages++;
        if (cursor != NULL)
            continue;
        if (pages > 1)
            return whole_list(member, items, raw);
        if (raw != NULL)
            *raw = g_steal_pointer(&page_raw);
        return g_steal_pointer(&page);
    }
}

/* The asynchronous form: the same message, the same retries, the same
 * response_to_json(), on the thread-default main context. */

typedef struct {
    gchar *method;
    gchar *path;
    GBytes *payload;
    gchar *idempotency_key;
    gboolean want_object;
    guint attempt;
    SoupMessage *message;
    /* A list read whole: its path without a cursor, its member, the items
     * of the pages so far, and how many pages. */
    gchar *list_base;
    gchar *list_member;
    JsonArray *list_items;
    guint list_pages;
} RequestData;

static void
request_data_free(RequestData *data)
{
    g_free(data->method);
    g_free(data->path);
    g_free(data->list_base);
    g_free(data->list_member);
    g_clear_pointer(&data->list_items, json_array_unref);
    g_clear_pointer(&data->payload, g_bytes_unref);
    g_free(data->idempotency_key);
    g_clear_object(&data->message);
    g_free(data);
}

typedef struct {
    JsonNode *root;
    GBytes *raw;
} Answer;

static void
answer_free(Answer *answer)
{
    g_clear_pointer(&answer->root, json_node_unref);
    g_clear_pointer(&answer->raw, g_bytes_unref);
    g_free(answer);
}

static void send_attempt(GTask *task);

static void
sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    EinsoraClient *self = g_task_get_source_object(task);
    RequestData *data = g_task_get_task_data(task);
    g_autoptr(GError) local_error = NULL;
    g_autoptr(GBytes) bytes =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &local_error);
    Answer *answer;

    if (bytes == NULL) {
        if (g_error_matches(local_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_task_return_error(task, g_steal_pointer(&local_error));
        else if (send_again(data->method, data->path, data->idempotency_key, data->attempt,
                            local_error))
            send_attempt(g_steal_pointer(&task));
        else
            g_task_return_error(task, unreachable_error(self, local_error));
        return;
    }
    answer = g_new0(Answer, 1);
    answer->root =
        response_to_json(data->message, bytes, data->want_object, &answer->raw, &local_error);
    if (answer->root == NULL) {
        answer_free(answer);
        g_task_return_error(task, g_steal_pointer(&local_error));
        return;
    }
    if (data->list_member != NULL) {
        g_autofree gchar *cursor = NULL;

        if (!take_page(answer->root, data->list_member, data->list_items, &cursor, &local_error)) {
            answer_free(answer);
            g_task_return_error(task, g_steal_pointer(&local_error));
            return;
        }
        data->list_pages++;
        if (cursor != NULL) {
            /* The next page, with retries of its own. */
            answer_free(answer);
            g_free(data->path);
            data->path = page_path(data->list_base, cursor);
            data->attempt = 0;
            send_attempt(g_steal_pointer(&task));
            return;
        }
        if (data->list_pages > 1) {
            answer_free(answer);
            answer = g_new0(Answer, 1);
            answer->root = whole_list(data->list_member, data->list_items, &answer->raw);
        }
    }
    g_task_return_pointer(task, answer, (GDestroyNotify)answer_free);
}

/* Takes @task's reference. */
static void
send_attempt(GTask *task)
{
    EinsoraClient *self = g_task_get_source_object(task);
    RequestData *data = g_task_get_task_data(task);
    GError *error = NULL;

    data->attempt++;
    g_clear_object(&data->message);
    data->message =
        build_message(self, data->method, data->path, data->payload, data->idempotency_key, &error);
    if (data->message == NULL) {
        g_task_return_error(task, error);
        g_object_unref(task);
        return;
    }
    soup_session_send_and_read_async(self->session, data->message, G_PRIORITY_DEFAULT,
                                     g_task_get_cancellable(task), sent, task);
}

static void
request_async(EinsoraClient *self, const char *method, const char *path, JsonNode *body,
              const char *idempotency_key, gboolean want_object, GCancellable *cancellable,
              GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    RequestData *data = g_new0(RequestData, 1);

    g_task_set_source_tag(task, einsora_client_request_async);
    data->method = g_strdup(method);
    data->path = g_strdup(path);
    data->payload = body_bytes(body);
    data->idempotency_key = g_strdup(idempotency_key);
    data->want_object = want_object;
    g_task_set_task_data(task, data, (GDestroyNotify)request_data_free);
    send_attempt(task);
}

/* request_list()'s asynchronous form; it finishes as any request does. */
static void
request_list_async(EinsoraClient *self, const char *base, const char *member,
                   GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    RequestData *data = g_new0(RequestData, 1);

    g_task_set_source_tag(task, einsora_client_request_async);
    data->method = g_strdup("GET");
    data->path = page_path(base, NULL);
    data->want_object = TRUE;
    data->list_base = g_strdup(base);
    data->list_member = g_strdup(member);
    data->list_items = json_array_new();
    g_task_set_task_data(task, data, (GDestroyNotify)request_data_free);
    send_attempt(task);
}

void
einsora_client_request_async(EinsoraClient *self, const char *method, const char *path,
                             JsonNode *body, const char *idempotency_key, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_CLIENT(self));
    g_return_if_fail(method != NULL);
    g_return_if_fail(path != NULL && path[0] == '/');
    g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));

    request_async(self, method, path, body, idempotency_key, FALSE, cancellable, callback,
                  user_data);
}

JsonNode *
einsora_client_request_finish(EinsoraClient *self, GAsyncResult *result, GBytes **raw,
                              GError **error)
{
    Answer *answer;
    JsonNode *root;

    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == einsora_client_request_async,
                         NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    answer = g_task_propagate_pointer(G_TASK(result), error);
    if (answer == NULL)
        return NULL;
    root = g_steal_pointer(&answer->root);
    if (raw != NULL)
        *raw = g_steal_pointer(&answer->raw);
    answer_free(answer);
    return root;
}

/* The asynchronous calls whose answer must be a JSON object. */
static void
request_object_async(EinsoraClient *self, const char *method, const char *path, JsonNode *body,
                     const char *idempotency_key, GCancellable *cancellable,
                     GAsyncReadyCallback callback, gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_CLIENT(self));
    request_async(self, method, path, body, idempotency_key, TRUE, cancellable, callback,
                  user_data);
}

static const char *
workloads_path(gboolean include_deleted)
{
    return include_deleted ? "/v1/workloads?include_deleted=true" : "/v1/workloads";
}

/* "/v1/workloads/<id><suffix>", the ID escaped as a path segment. */
static gchar *
workload_path(const char *id, const char *suffix)
{
    g_autofree gchar *escaped = g_uri_escape_string(id, NULL, FALSE);
    return g_strconcat("/v1/workloads/", escaped, suffix, NULL);
}

JsonNode *
einsora_client_get_me(EinsoraClient *self, GBytes **raw, GError **error)
{
    return request_object(self, "GET", "/v1/me", NULL, NULL, raw, error);
}

/* A browser session's cookie and CSRF token, as POST /v1/login gave them. */
typedef struct {
    gchar *cookie; /* "einsora_session=..." */
    gchar *csrf;
} SignInSession;

static void
sign_in_session_clear(SignInSession *session)
{
    if (session->cookie != NULL)
        explicit_bzero(session->cookie, strlen(session->cookie));
    if (session->csrf != NULL)
        explicit_bzero(session->csrf, strlen(session->csrf));
    g_clear_pointer(&session->cookie, g_free);
    g_clear_pointer(&session->csrf, g_free);
}

/* One call as @session (NULL: none); the answer's object. */
static JsonNode *
session_call(EinsoraClient *self, const char *method, const char *path, JsonBuilder *body,
             const SignInSession *session, SoupMessage **answered, GError **error)
{
    g_autoptr(JsonNode) root = body != NULL ? json_builder_get_root(body) : NULL;
    g_autoptr(GBytes) payload = body_bytes(root);
    g_autoptr(SoupMessage) message = build_message(self, method, path, payload, NULL, error);
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(GError) local_error = NULL;
    JsonNode *answer;

    if (message == NULL)
        return NULL;
    if (session != NULL) {
        SoupMessageHeaders *headers = soup_message_get_request_headers(message);
        soup_message_headers_replace(headers, "Cookie", session->cookie);
        soup_message_headers_replace(headers, "X-CSRF-Token", session->csrf);
    }
    bytes = soup_session_send_and_read(self->session, message, NULL, &local_error);
    if (bytes == NULL) {
        g_propagate_error(error, unreachable_error(self, local_error));
        return NULL;
    }
    answer = response_to_json(message, bytes, FALSE, NULL, error);
    if (answer != NULL && answered != NULL)
        *answered = g_steal_pointer(&message);
    return answer;
}

/* POST /v1/logout: whatever it answers, the session is forgotten here. */
static void
end_session(EinsoraClient *self, const SignInSession *session)
{
    JsonNode *answer = session_call(self, "POST", "/v1/logout", NULL, session, NULL, NULL);

    if (answer != NULL)
        json_node_unref(answer);
}

static JsonBuilder *
credentials_body(const char *email, const char *password)
{
    JsonBuilder *builder = json_builder_new();

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "email");
    json_builder_add_string_value(builder, email);
    json_builder_set_member_name(builder, "password");
    json_builder_add_string_value(builder, password);
    json_builder_end_object(builder);
    return builder;
}

/* POST /v1/login: the session it opens, and whether the password must
 * change before anything else. */
static gboolean
open_session(EinsoraClient *self, const char *email, const char *password, SignInSession *session,
             gboolean *must_change, GError **error)
{
    g_autoptr(JsonBuilder) body = credentials_body(email, password);
    g_autoptr(SoupMessage) message = NULL;
    g_autoptr(JsonNode) root = session_call(self, "POST", "/v1/login", body, NULL, &message, error);
    const char *csrf;
    const char *set_cookie;
    const char *end;

    if (root == NULL)
        return FALSE;
    csrf = JSON_NODE_HOLDS_OBJECT(root) ? json_object_get_string_member_with_default(
                                              json_node_get_object(root), "csrf_token", NULL)
                                        : NULL;
    set_cookie =
        soup_message_headers_get_one(soup_message_get_response_headers(message), "Set-Cookie");
    if (csrf == NULL || set_cookie == NULL || !g_str_has_prefix(set_cookie, "einsora_session=")) {
        g_propagate_error(
            error, einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL,
                                            soup_message_get_status(message),
                                            _("the server's sign-in answer has no session")));
        return FALSE;
    }
    end = strchr(set_cookie, ';');
    session->cookie =
        end != NULL ? g_strndup(set_cookie, (gsize)(end - set_cookie)) : g_strdup(set_cookie);
    session->csrf = g_strdup(csrf);
    *must_change = json_object_get_boolean_member_with_default(json_node_get_object(root),
                                                               "password_must_change", FALSE);
    return TRUE;
}

gchar *
einsora_client_sign_in(EinsoraClient *self, const char *email, const char *password,
                       const char *new_password, const char *token_name, GError **error)
{
    SignInSession session = {NULL};
    gboolean must_change = FALSE;
    g_autoptr(JsonBuilder) token_body = json_builder_new();
    g_autoptr(JsonNode) made = NULL;
    gchar *secret = NULL;

    g_return_val_if_fail(EINSORA_IS_CLIENT(self), NULL);
    g_return_val_if_fail(email != NULL && password != NULL && token_name != NULL, NULL);
    g_return_val_if_fail(self->token == NULL, NULL);

    if (!open_session(self, email, password, &session, &must_change, error))
        return NULL;
    if (must_change) {
        g_autoptr(JsonBuilder) change = json_builder_new();
        g_autoptr(JsonNode) changed = NULL;

        if (new_password == NULL) {
            end_session(self, &session);
            sign_in_session_clear(&session);
            g_propagate_error(
                error, einsora_client_error_new(
                           "password_change_required", NULL, 403,
                           _("your password was reset by an admin: choose a new one to sign in")));
            return NULL;
        }
        json_builder_begin_object(change);
        json_builder_set_member_name(change, "current_password");
        json_builder_add_string_value(change, password);
        json_builder_set_member_name(change, "new_password");
        json_builder_add_string_value(change, new_password);
        json_builder_end_object(change);
        changed = session_call(self, "POST", "/v1/me/password", change, &session, NULL, error);
        /* A refused change leaves the session open: end it. */
        if (changed == NULL)
            end_session(self, &session);
        sign_in_session_clear(&session);
        /* The change ended every session: sign in again with the new one. */
        if (changed == NULL ||
            !open_session(self, email, new_password, &session, &must_change, error))
            return NULL;
    }
    json_builder_begin_object(token_body);
    json_builder_set_member_name(token_body, "name");
    json_builder_add_string_value(token_body, token_name);
    json_builder_end_object(token_body);
    made = session_call(self, "POST", "/v1/tokens", token_body, &session, NULL, error);
    if (made != NULL && JSON_NODE_HOLDS_OBJECT(made))
        secret = g_strdup(
            json_object_get_string_member_with_default(json_node_get_object(made), "secret", NULL));
    /* The session was only the way to the token. */
    end_session(self, &session);
    sign_in_session_clear(&session);
    if (made != NULL && secret == NULL)
        g_propagate_error(error, einsora_client_error_new(
                                     EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 0,
                                     _("the server made a token and didn't answer its secret")));
    return secret;
}

JsonNode *
einsora_client_list_workloads(EinsoraClient *self, gboolean include_deleted, GBytes **raw,
                              GError **error)
{
    return request_list(self, workloads_path(include_deleted), "workloads", raw, error);
}

JsonNode *
einsora_client_get_workload(EinsoraClient *self, const char *id, gboolean include_deleted,
                            GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, include_deleted ? "?include_deleted=true" : "");
    return request_object(self, "GET", path, NULL, NULL, raw, error);
}

/* A create's body: the members given, the NULL ones left out. */
static JsonNode *
workload_request_body_full(const char *kind, const char *name, const char *gpu_class,
                           const char *image, const char *region, const char *model)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    const char *members[][2] = {{"kind", kind},   {"name", name},     {"gpu_class", gpu_class},
                                {"image", image}, {"region", region}, {"model", model}};

    json_builder_begin_object(builder);
    for (guint i = 0; i < G_N_ELEMENTS(members); i++) {
        if (members[i][1] == NULL)
            continue;
        json_builder_set_member_name(builder, members[i][0]);
        json_builder_add_string_value(builder, members[i][1]);
    }
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

static JsonNode *
workload_request_body(const char *kind, const char *name, const char *gpu_class, const char *image,
                      const char *region)
{
    return workload_request_body_full(kind, name, gpu_class, image, region, NULL);
}

JsonNode *
einsora_client_create_workload(EinsoraClient *self, const char *kind, const char *name,
                               const char *gpu_class, const char *image, const char *region,
                               const char *idempotency_key, GBytes **raw, GError **error)
{
    g_autoptr(JsonNode) body = NULL;

    g_return_val_if_fail(kind != NULL && gpu_class != NULL && image != NULL, NULL);

    body = workload_request_body(kind, name, gpu_class, image, region);
    return request_object(self, "POST", "/v1/workloads", body, idempotency_key, raw, error);
}

JsonNode *
einsora_client_start_workload(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, "/start");
    return request_object(self, "POST", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_stop_workload(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, "/stop");
    return request_object(self, "POST", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_open_workload(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, "/access");
    return request_object(self, "POST", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_delete_workload(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, "");
    return request_object(self, "DELETE", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_list_events(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, "/events");
    return request_list(self, path, "events", raw, error);
}

JsonNode *
einsora_client_export_workload(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = workload_path(id, "/export");
    return request_object(self, "GET", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_list_machines(EinsoraClient *self, GBytes **raw, GError **error)
{
    return request_object(self, "GET", "/v1/machines", NULL, NULL, raw, error);
}

/* {"name": …, "region": …}, each only when given. */
static JsonNode *
enrolment_body(const char *name, const char *region)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    if (name != NULL) {
        json_builder_set_member_name(builder, "name");
        json_builder_add_string_value(builder, name);
    }
    if (region != NULL) {
        json_builder_set_member_name(builder, "region");
        json_builder_add_string_value(builder, region);
    }
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

static gchar *
machine_path(const char *id, const char *suffix)
{
    g_autofree gchar *escaped = g_uri_escape_string(id, NULL, FALSE);
    return g_strconcat("/v1/machines/", escaped, suffix, NULL);
}

JsonNode *
einsora_client_enrol_machine(EinsoraClient *self, const char *name, const char *region,
                             GBytes **raw, GError **error)
{
    g_autoptr(JsonNode) body = enrolment_body(name, region);

    return request_object(self, "POST", "/v1/machines/enrolments", body, NULL, raw, error);
}

JsonNode *
einsora_client_revoke_machine(EinsoraClient *self, const char *id, GBytes **raw, GError **error)
{
    g_autofree gchar *path = NULL;

    g_return_val_if_fail(id != NULL, NULL);
    path = machine_path(id, "/revoke");
    return request_object(self, "POST", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_get_catalog(EinsoraClient *self, GBytes **raw, GError **error)
{
    return request_object(self, "GET", "/v1/catalog", NULL, NULL, raw, error);
}

static gchar *
usage_path(const char *query)
{
    return query != NULL && *query != '\0' ? g_strdup_printf("/v1/usage?%s", query)
                                           : g_strdup("/v1/usage");
}

JsonNode *
einsora_client_get_usage(EinsoraClient *self, const char *query, GBytes **raw, GError **error)
{
    g_autofree gchar *path = usage_path(query);

    return request_object(self, "GET", path, NULL, NULL, raw, error);
}

JsonNode *
einsora_client_list_tokens(EinsoraClient *self, GBytes **raw, GError **error)
{
    return request_list(self, "/v1/tokens", "tokens", raw, error);
}

JsonNode *
einsora_client_create_token(EinsoraClient *self, const char *name, GBytes **raw, GError **error)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;

    g_return_val_if_fail(name != NULL, NULL);

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, name);
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    return request_object(self, "POST", "/v1/tokens", body, NULL, raw, error);
}

gboolean
einsora_client_revoke_token(EinsoraClient *self, const char *id, GError **error)
{
    g_autofree gchar *escaped = g_uri_escape_string(id, NULL, FALSE);
    g_autofree gchar *path = g_strconcat("/v1/tokens/", escaped, NULL);
    g_autoptr(JsonNode) root =
        einsora_client_request(self, "DELETE", path, NULL, NULL, NULL, error);

    return root != NULL;
}

/* The asynchronous calls the desktop app makes; each finishes with
 * einsora_client_request_finish(). */

void
einsora_client_list_workloads_async(EinsoraClient *self, gboolean include_deleted,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_CLIENT(self));
    request_list_async(self, workloads_path(include_deleted), "workloads", cancellable, callback,
                       user_data);
}

void
einsora_client_get_workload_async(EinsoraClient *self, const char *id, gboolean include_deleted,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
    g_autofree gchar *path = workload_path(id, include_deleted ? "?include_deleted=true" : "");
    request_object_async(self, "GET", path, NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_create_workload_async(EinsoraClient *self, const char *kind, const char *name,
                                     const char *gpu_class, const char *image, const char *region,
                                     const char *idempotency_key, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(JsonNode) body = NULL;

    g_return_if_fail(kind != NULL && gpu_class != NULL && image != NULL);

    body = workload_request_body(kind, name, gpu_class, image, region);
    request_object_async(self, "POST", "/v1/workloads", body, idempotency_key, cancellable,
                         callback, user_data);
}

void
einsora_client_create_endpoint_async(EinsoraClient *self, const char *name, const char *gpu_class,
                                     const char *model, const char *region,
                                     const char *idempotency_key, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(JsonNode) body = NULL;

    g_return_if_fail(gpu_class != NULL && model != NULL);

    body = workload_request_body_full("endpoint", name, gpu_class, NULL, region, model);
    request_object_async(self, "POST", "/v1/workloads", body, idempotency_key, cancellable,
                         callback, user_data);
}

void
einsora_client_start_workload_async(EinsoraClient *self, const char *id, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = workload_path(id, "/start");
    request_object_async(self, "POST", path, NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_stop_workload_async(EinsoraClient *self, const char *id, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = workload_path(id, "/stop");
    request_object_async(self, "POST", path, NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_delete_workload_async(EinsoraClient *self, const char *id, GCancellable *cancellable,
                                     GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = workload_path(id, "");
    request_object_async(self, "DELETE", path, NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_open_workload_async(EinsoraClient *self, const char *id, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = workload_path(id, "/access");
    request_object_async(self, "POST", path, NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_list_events_async(EinsoraClient *self, const char *id, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = workload_path(id, "/events");

    g_return_if_fail(EINSORA_IS_CLIENT(self));
    request_list_async(self, path, "events", cancellable, callback, user_data);
}

void
einsora_client_list_machines_async(EinsoraClient *self, GCancellable *cancellable,
                                   GAsyncReadyCallback callback, gpointer user_data)
{
    request_object_async(self, "GET", "/v1/machines", NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_enrol_machine_async(EinsoraClient *self, const char *name, const char *region,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data)
{
    g_autoptr(JsonNode) body = enrolment_body(name, region);

    request_object_async(self, "POST", "/v1/machines/enrolments", body, NULL, cancellable, callback,
                         user_data);
}

void
einsora_client_revoke_machine_async(EinsoraClient *self, const char *id, GCancellable *cancellable,
                                    GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = NULL;

    g_return_if_fail(id != NULL);
    path = machine_path(id, "/revoke");
    request_object_async(self, "POST", path, NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_get_catalog_async(EinsoraClient *self, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    request_object_async(self, "GET", "/v1/catalog", NULL, NULL, cancellable, callback, user_data);
}

void
einsora_client_get_usage_async(EinsoraClient *self, const char *query, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data)
{
    g_autofree gchar *path = usage_path(query);

    request_object_async(self, "GET", path, NULL, NULL, cancellable, callback, user_data);
}

/* Logs: text, not JSON, and possibly endless, so read as a stream. */

static SoupSession *
stream_session(EinsoraClient *self)
{
    if (self->stream_session == NULL)
        self->stream_session = soup_session_new_with_options(
            "user-agent", "einsora/" EINSORA_VERSION, "tls-database", self->trust, NULL);
    return self->stream_session;
}

static SoupMessage *
logs_message(EinsoraClient *self, const char *id, const char *query, GError **error)
{
    g_autofree gchar *base = workload_path(id, "/logs");
    g_autofree gchar *path =
        query != NULL && *query != '\0' ? g_strconcat(base, "?", query, NULL) : g_strdup(base);
    SoupMessage *message = build_message(self, "GET", path, NULL, NULL, error);

    if (message != NULL)
        soup_message_headers_replace(soup_message_get_request_headers(message), "Accept",
                                     "text/plain, application/json");
    return message;
}

#define LOGS_READ_BYTES 16384
#define LOGS_ERROR_BYTES 65536

gboolean
einsora_client_read_logs(EinsoraClient *self, const char *id, const char *query,
                         EinsoraClientTextFunc on_text, gpointer user_data,
                         GCancellable *cancellable, GError **error)
{
    g_autoptr(SoupMessage) message = NULL;
    g_autoptr(GInputStream) stream = NULL;
    g_autoptr(GError) local_error = NULL;

    g_return_val_if_fail(EINSORA_IS_CLIENT(self), FALSE);
    message = logs_message(self, id, query, error);
    if (message == NULL)
        return FALSE;
    stream = soup_session_send(stream_session(self), message, cancellable, &local_error);
    if (stream == NULL) {
        if (g_error_matches(local_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_propagate_error(error, g_steal_pointer(&local_error));
        else
            g_propagate_error(error, unreachable_error(self, local_error));
        return FALSE;
    }
    if (!SOUP_STATUS_IS_SUCCESSFUL(soup_message_get_status(message))) {
        g_autoptr(GBytes) body =
            g_input_stream_read_bytes(stream, LOGS_ERROR_BYTES, cancellable, NULL);
        g_autoptr(GBytes) empty = g_bytes_new(NULL, 0);
        g_propagate_error(error, response_error(message, body != NULL ? body : empty));
        return FALSE;
    }
    for (;;) {
        g_autoptr(GBytes) bytes =
            g_input_stream_read_bytes(stream, LOGS_READ_BYTES, cancellable, &local_error);
        gsize size = 0;
        const char *data;

        if (bytes == NULL) {
            if (g_error_matches(local_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                g_propagate_error(error, g_steal_pointer(&local_error));
            else
                g_propagate_error(error, unreachable_error(self, local_error));
            return FALSE;
        }
        data = g_bytes_get_data(bytes, &size);
        if (size == 0)
            return TRUE;
        on_text(data, size, user_data);
    }
}

typedef struct {
    EinsoraClient *client; /* owned */
    SoupMessage *message;  /* owned */
    GInputStream *stream;  /* owned */
    EinsoraClientTextFunc on_text;
    gpointer text_data;
} LogsRead;

static void
logs_read_free(LogsRead *read)
{
    g_clear_object(&read->client);
    g_clear_object(&read->message);
    g_clear_object(&read->stream);
    g_free(read);
}

static void
logs_fail(GTask *task, GError *error)
{
    LogsRead *read = g_task_get_task_data(task);

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_task_return_error(task, error);
        return;
    }
    g_task_return_error(task, unreachable_error(read->client, error));
    g_error_free(error);
}

static void
on_logs_error_body(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    LogsRead *read = g_task_get_task_data(task);
    g_autoptr(GBytes) body = g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, NULL);
    g_autoptr(GBytes) empty = g_bytes_new(NULL, 0);

    g_task_return_error(task, response_error(read->message, body != NULL ? body : empty));
}

static void on_logs_bytes(GObject *source, GAsyncResult *result, gpointer user_data);

/* The next piece; @task goes with the read. */
static void
read_on(GTask *task)
{
    LogsRead *read = g_task_get_task_data(task);
    GCancellable *cancellable = g_task_get_cancellable(task);

    g_input_stream_read_bytes_async(read->stream, LOGS_READ_BYTES, G_PRIORITY_DEFAULT, cancellable,
                                    on_logs_bytes, g_object_ref(task));
}

static void
on_logs_bytes(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    LogsRead *read = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, &error);
    gsize size = 0;
    const char *data;

    if (bytes == NULL) {
        logs_fail(task, g_steal_pointer(&error));
        return;
    }
    data = g_bytes_get_data(bytes, &size);
    if (size == 0) {
        g_task_return_boolean(task, TRUE);
        return;
    }
    read->on_text(data, size, read->text_data);
    read_on(task);
}

static void
on_logs_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    LogsRead *read = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;

    read->stream = soup_session_send_finish(SOUP_SESSION(source), result, &error);
    if (read->stream == NULL) {
        logs_fail(task, g_steal_pointer(&error));
        return;
    }
    if (!SOUP_STATUS_IS_SUCCESSFUL(soup_message_get_status(read->message))) {
        GCancellable *cancellable = g_task_get_cancellable(task);
        g_input_stream_read_bytes_async(read->stream, LOGS_ERROR_BYTES, G_PRIORITY_DEFAULT,
                                        cancellable, on_logs_error_body, g_steal_pointer(&task));
        return;
    }
    read_on(task);
}

void
einsora_client_read_logs_async(EinsoraClient *self, const char *id, const char *query,
                               EinsoraClientTextFunc on_text, gpointer text_data,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GError) error = NULL;
    LogsRead *read = g_new0(LogsRead, 1);

    read->client = g_object_ref(self);
    read->on_text = on_text;
    read->text_data = text_data;
    g_task_set_task_data(task, read, (GDestroyNotify)logs_read_free);
    read->message = logs_message(self, id, query, &error);
    if (read->message == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    soup_session_send_async(stream_session(self), read->message, G_PRIORITY_DEFAULT, cancellable,
                            on_logs_sent, g_steal_pointer(&task));
}

gboolean
einsora_client_read_logs_finish(EinsoraClient *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}
