#include "einsora-test-openai.h"

#include <libsoup/soup.h>

#include "einsora-test-server.h"

#define ENDPOINT_PATH "/endpoints/0190c0de-0000-7000-8000-00000000e001/v1"

struct _EinsoraTestOpenai {
    SoupServer *server;
    gchar *base_url;
    GStrv pieces;
    guint pause_ms;
    gboolean hold;
    guint fail_status;
    gchar *fail_message;
    guint n_requests;
    gchar *authorization;
    JsonArray *messages;
    /* The stream of the latest request. */
    SoupServerMessage *message;
    guint n_sent;
    gboolean done;
    gboolean client_left;
    gboolean held;
    guint timer;
};

static void
append(SoupServerMessage *message, const char *text)
{
    soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_COPY, text,
                             strlen(text));
}

static gchar *
piece_event(const char *piece)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *json = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "choices");
    json_builder_begin_array(builder);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "index");
    json_builder_add_int_value(builder, 0);
    json_builder_set_member_name(builder, "delta");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "content");
    json_builder_add_string_value(builder, piece);
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    json = json_to_string(root, FALSE);
    return g_strdup_printf("data: %s\n\n", json);
}

static gboolean send_next(gpointer data);

static void
schedule(EinsoraTestOpenai *self)
{
    self->timer = g_timeout_add(self->pause_ms, send_next, self);
}

static gboolean
send_next(gpointer data)
{
    EinsoraTestOpenai *self = data;
    SoupServerMessage *message = self->message;

    self->timer = 0;
    if (message == NULL)
        return G_SOURCE_REMOVE;
    if (self->pieces[self->n_sent] != NULL) {
        g_autofree gchar *event = piece_event(self->pieces[self->n_sent]);

        append(message, event);
        self->n_sent++;
        if (self->hold && self->n_sent == 1)
            self->held = TRUE;
        else
            schedule(self);
    } else {
        append(message, ": a comment, which a reader skips\n\n");
        append(message, "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 3, "
                        "\"completion_tokens\": 4}}\n\n");
        append(message, "data: [DONE]\n\n");
        soup_message_body_complete(soup_server_message_get_response_body(message));
        self->done = TRUE;
    }
    soup_server_message_unpause(message);
    return G_SOURCE_REMOVE;
}

static void
on_finished(SoupServerMessage *message, EinsoraTestOpenai *self)
{
    if (self->message != message)
        return;
    if (!self->done)
        self->client_left = TRUE;
    g_clear_handle_id(&self->timer, g_source_remove);
    g_clear_object(&self->message);
}

static void
handle(SoupServer *server, SoupServerMessage *message, const char *path, GHashTable *query,
       gpointer user_data)
{
    EinsoraTestOpenai *self = user_data;
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(message);
    SoupMessageBody *body = soup_server_message_get_request_body(message);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GBytes) request = soup_message_body_flatten(body);

    if (g_strcmp0(soup_server_message_get_method(message), "POST") != 0) {
        soup_server_message_set_status(message, 405, NULL);
        return;
    }
    self->n_requests++;
    g_free(self->authorization);
    self->authorization = g_strdup(soup_message_headers_get_one(
        soup_server_message_get_request_headers(message), "Authorization"));
    g_clear_pointer(&self->messages, json_array_unref);
    if (json_parser_load_from_data(parser, g_bytes_get_data(request, NULL),
                                   (gssize)g_bytes_get_size(request), NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        JsonObject *root = json_node_get_object(json_parser_get_root(parser));
        if (json_object_has_member(root, "messages"))
            self->messages = json_array_ref(json_object_get_array_member(root, "messages"));
    }
    if (self->fail_status != 0) {
        g_autoptr(JsonBuilder) builder = json_builder_new();
        g_autoptr(JsonNode) root = NULL;
        g_autofree gchar *text = NULL;

        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "error");
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "message");
        json_builder_add_string_value(builder, self->fail_message);
        json_builder_set_member_name(builder, "type");
        json_builder_add_string_value(builder, "invalid_request_error");
        json_builder_set_member_name(builder, "code");
        json_builder_add_string_value(builder, "invalid_request");
        json_builder_end_object(builder);
        json_builder_end_object(builder);
        root = json_builder_get_root(builder);
        text = json_to_string(root, FALSE);
        soup_server_message_set_status(message, self->fail_status, NULL);
        soup_server_message_set_response(message, "application/json", SOUP_MEMORY_COPY, text,
                                         strlen(text));
        return;
    }
    /* A new stream: the one before, if any, is no longer followed. */
    g_clear_handle_id(&self->timer, g_source_remove);
    g_clear_object(&self->message);
    self->message = g_object_ref(message);
    self->n_sent = 0;
    self->done = FALSE;
    self->client_left = FALSE;
    self->held = FALSE;
    soup_server_message_set_status(message, 200, NULL);
    soup_message_headers_set_content_type(headers, "text/event-stream", NULL);
    soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED);
    g_signal_connect(message, "finished", G_CALLBACK(on_finished), self);
    soup_server_message_pause(message);
    schedule(self);
}

EinsoraTestOpenai *
einsora_test_openai_new(void)
{
    EinsoraTestOpenai *self = g_new0(EinsoraTestOpenai, 1);

    self->server = soup_server_new(NULL, NULL);
    soup_server_add_handler(self->server, ENDPOINT_PATH "/chat/completions", handle, self, NULL);
    self->base_url = g_strdup_printf("http://127.0.0.1:%u" ENDPOINT_PATH,
                                     einsora_test_server_listen_loopback(self->server));
    self->pieces = g_strdupv((gchar *[]){"Hello", NULL});
    self->pause_ms = 20;
    return self;
}

void
einsora_test_openai_free(EinsoraTestOpenai *self)
{
    g_clear_handle_id(&self->timer, g_source_remove);
    if (self->message != NULL)
        g_signal_handlers_disconnect_by_data(self->message, self);
    g_clear_object(&self->message);
    soup_server_disconnect(self->server);
    g_object_unref(self->server);
    g_strfreev(self->pieces);
    g_free(self->fail_message);
    g_free(self->authorization);
    g_free(self->base_url);
    g_clear_pointer(&self->messages, json_array_unref);
    g_free(self);
}

const char *
einsora_test_openai_get_base_url(EinsoraTestOpenai *self)
{
    return self->base_url;
}

void
einsora_test_openai_answer(EinsoraTestOpenai *self, const char *const *pieces, guint pause_ms,
                           gboolean hold)
{
    g_strfreev(self->pieces);
    self->pieces = g_strdupv((gchar **)pieces);
    self->pause_ms = pause_ms;
    self->hold = hold;
    self->fail_status = 0;
}

void
einsora_test_openai_fail(EinsoraTestOpenai *self, guint status, const char *message)
{
    self->fail_status = status;
    g_free(self->fail_message);
    self->fail_message = g_strdup(message);
}

void
einsora_test_openai_release(EinsoraTestOpenai *self)
{
    if (!self->held)
        return;
    self->held = FALSE;
    schedule(self);
}

guint
einsora_test_openai_get_n_requests(EinsoraTestOpenai *self)
{
    return self->n_requests;
}

guint
einsora_test_openai_get_n_sent(EinsoraTestOpenai *self)
{
    return self->n_sent;
}

gboolean
einsora_test_openai_is_done(EinsoraTestOpenai *self)
{
    return self->done;
}

gboolean
einsora_test_openai_client_left(EinsoraTestOpenai *self)
{
    return self->client_left;
}

const char *
einsora_test_openai_get_authorization(EinsoraTestOpenai *self)
{
    return self->authorization;
}

JsonArray *
einsora_test_openai_get_messages(EinsoraTestOpenai *self)
{
    return self->messages;
}
