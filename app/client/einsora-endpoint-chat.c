#define G_LOG_DOMAIN "einsora-client"

#include "einsora-endpoint-chat.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-client-error.h"
#include "einsora-sse-parser.h"

static GBytes *
request_body(const char *model, const char *prompt)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) root = NULL;
    gsize length = 0;
    gchar *text;

    json_builder_begin_object(builder);
    if (model != NULL) {
        json_builder_set_member_name(builder, "model");
        json_builder_add_string_value(builder, model);
    }
    json_builder_set_member_name(builder, "messages");
    json_builder_begin_array(builder);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "role");
    json_builder_add_string_value(builder, "user");
    json_builder_set_member_name(builder, "content");
    json_builder_add_string_value(builder, prompt);
    json_builder_end_object(builder);
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "stream");
    json_builder_add_boolean_value(builder, TRUE);
    json_builder_set_member_name(builder, "stream_options");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "include_usage");
    json_builder_add_boolean_value(builder, TRUE);
    json_builder_end_object(builder);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    text = json_to_string(root, FALSE);
    length = strlen(text);
    return g_bytes_new_take(text, length);
}

/* OpenAI's {"error": {"message", "type", "code"}}, which endpoints answer
 * with; the status alone when the body says nothing. */
static GError *
error_from_answer(SoupMessage *message, GBytes *body)
{
    guint status = soup_message_get_status(message);
    const char *request_id =
        soup_message_headers_get_one(soup_message_get_response_headers(message), "X-Request-ID");
    g_autoptr(JsonParser) parser = json_parser_new();
    const char *code = status == 401   ? "unauthenticated"
                       : status == 404 ? "not_found"
                       : status == 400 ? "invalid_request"
                                       : "bad_response";
    g_autofree gchar *text = NULL;
    gsize size = 0;
    const char *data = body != NULL ? g_bytes_get_data(body, &size) : NULL;

    if (data != NULL && json_parser_load_from_data(parser, data, (gssize)size, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        JsonObject *root = json_node_get_object(json_parser_get_root(parser));
        JsonNode *inner = json_object_get_member(root, "error");

        if (inner != NULL && JSON_NODE_HOLDS_OBJECT(inner)) {
            JsonObject *object = json_node_get_object(inner);
            JsonNode *node = json_object_get_member(object, "message");

            if (node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
                json_node_get_value_type(node) == G_TYPE_STRING)
                text = g_strdup(json_node_get_string(node));
        }
    }
    if (text == NULL)
        text = g_strdup_printf(_("the endpoint answered %u %s"), status,
                               soup_status_get_phrase(status));
    return einsora_client_error_new(code, request_id, status, text);
}

/* One event's data: a chunk with its delta, the usage chunk, or [DONE]. */
static gboolean
read_chunk(const char *data, EinsoraChatPieceFunc on_piece, gpointer user_data,
           EinsoraChatUsage *usage, gint64 started_us, gboolean *done, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *root;
    JsonNode *choices;
    JsonNode *counts;

    if (g_str_equal(data, "[DONE]")) {
        *done = TRUE;
        return TRUE;
    }
    if (!json_parser_load_from_data(parser, data, -1, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 200,
                                                   _("the endpoint sent a piece "
                                                     "that isn't JSON")));
        return FALSE;
    }
    root = json_node_get_object(json_parser_get_root(parser));
    choices = json_object_get_member(root, "choices");
    if (choices != NULL && JSON_NODE_HOLDS_ARRAY(choices)) {
        JsonArray *array = json_node_get_array(choices);

        for (guint i = 0; i < json_array_get_length(array); i++) {
            JsonNode *choice = json_array_get_element(array, i);
            JsonNode *delta = JSON_NODE_HOLDS_OBJECT(choice)
                                  ? json_object_get_member(json_node_get_object(choice), "delta")
                                  : NULL;
            JsonNode *content = delta != NULL && JSON_NODE_HOLDS_OBJECT(delta)
                                    ? json_object_get_member(json_node_get_object(delta), "content")
                                    : NULL;

            if (content == NULL || !JSON_NODE_HOLDS_VALUE(content) ||
                json_node_get_value_type(content) != G_TYPE_STRING)
                continue;
            if (*json_node_get_string(content) == '\0')
                continue;
            if (usage->first_piece_us == 0)
                usage->first_piece_us = g_get_monotonic_time() - started_us;
            on_piece(json_node_get_string(content), user_data);
        }
    }
    counts = json_object_get_member(root, "usage");
    if (counts != NULL && JSON_NODE_HOLDS_OBJECT(counts)) {
        JsonObject *object = json_node_get_object(counts);

        if (json_object_has_member(object, "prompt_tokens"))
            usage->prompt_tokens = json_object_get_int_member(object, "prompt_tokens");
        if (json_object_has_member(object, "completion_tokens"))
            usage->completion_tokens = json_object_get_int_member(object, "completion_tokens");
    }
    return TRUE;
}

gboolean
einsora_endpoint_chat(const char *base_url, const char *token, const char *model,
                      const char *prompt, EinsoraChatPieceFunc on_piece, gpointer user_data,
                      EinsoraChatUsage *usage, GError **error)
{
    g_autofree gchar *url = NULL;
    g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 0, NULL);
    g_autoptr(SoupMessage) message = NULL;
    g_autoptr(GBytes) body = request_body(model, prompt);
    g_autoptr(GInputStream) stream = NULL;
    g_autoptr(GDataInputStream) lines = NULL;
    g_autoptr(EinsoraSseParser) parser = einsora_sse_parser_new(NULL);
    g_autoptr(GError) local_error = NULL;
    EinsoraChatUsage counted = {0};
    gint64 started_us = g_get_monotonic_time();
    gboolean done = FALSE;

    url =
        g_strconcat(base_url, g_str_has_suffix(base_url, "/") ? "" : "/", "chat/completions", NULL);
    message = soup_message_new("POST", url);
    if (message == NULL) {
        g_autofree gchar *text =
            g_strdup_printf(_("“%s” is not an http:// or https:// URL"), base_url);
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0, text));
        return FALSE;
    }
    if (token != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("Bearer %s", token);
        soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                     authorization);
        explicit_bzero(authorization, strlen(authorization));
    }
    soup_message_headers_replace(soup_message_get_request_headers(message), "Accept",
                                 "text/event-stream");
    soup_message_set_request_body_from_bytes(message, "application/json", body);
    stream = soup_session_send(session, message, NULL, &local_error);
    if (stream == NULL) {
        g_propagate_error(error, einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0,
                                                          local_error->message));
        return FALSE;
    }
    if (soup_message_get_status(message) != SOUP_STATUS_OK) {
        /* An error is one small JSON body; read a bounded part of it. */
        g_autoptr(GBytes) answer = g_input_stream_read_bytes(stream, 64 * 1024, NULL, NULL);
        g_propagate_error(error, error_from_answer(message, answer));
        return FALSE;
    }
    lines = g_data_input_stream_new(stream);
    g_data_input_stream_set_newline_type(lines, G_DATA_STREAM_NEWLINE_TYPE_ANY);
    while (!done) {
        gsize length = 0;
        g_autofree gchar *line = g_data_input_stream_read_line(lines, &length, NULL, &local_error);
        g_autoptr(EinsoraSseEvent) event = NULL;

        if (line == NULL && local_error != NULL) {
            g_propagate_error(error, einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL,
                                                              0, local_error->message));
            return FALSE;
        }
        if (line == NULL)
            break; /* the end, with or without [DONE] */
        if (length > EINSORA_CHAT_MAX_LINE ||
            !einsora_sse_parser_push_line(parser, line, length, &event, &local_error)) {
            g_propagate_error(error,
                              einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 200,
                                                       _("the endpoint sent an event "
                                                         "too large to read")));
            return FALSE;
        }
        if (event != NULL &&
            !read_chunk(event->data, on_piece, user_data, &counted, started_us, &done, error))
            return FALSE;
    }
    counted.total_us = g_get_monotonic_time() - started_us;
    if (usage != NULL)
        *usage = counted;
    return TRUE;
}
