#define G_LOG_DOMAIN "einsora-client"

#include "einsora-endpoint-chat.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-client-error.h"
#include "einsora-sse-parser.h"

static GBytes *
request_body(const char *model, JsonArray *messages)
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
    json_builder_add_value(builder, json_node_init_array(json_node_alloc(), messages));
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

/* The POST to @base_url/chat/completions, the token in Authorization. */
static SoupMessage *
request_new(const char *base_url, const char *token, const char *model, JsonArray *messages,
            GError **error)
{
    g_autofree gchar *url =
        g_strconcat(base_url, g_str_has_suffix(base_url, "/") ? "" : "/", "chat/completions", NULL);
    g_autoptr(SoupMessage) message = soup_message_new("POST", url);
    g_autoptr(GBytes) body = NULL;

    if (message == NULL) {
        g_autofree gchar *text =
            g_strdup_printf(_("“%s” is not an http:// or https:// URL"), base_url);
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0, text));
        return NULL;
    }
    if (token != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("Bearer %s", token);
        soup_message_headers_replace(soup_message_get_request_headers(message), "Authorization",
                                     authorization);
        explicit_bzero(authorization, strlen(authorization));
    }
    soup_message_headers_replace(soup_message_get_request_headers(message), "Accept",
                                 "text/event-stream");
    body = request_body(model, messages);
    soup_message_set_request_body_from_bytes(message, "application/json", body);
    return g_steal_pointer(&message);
}

static JsonArray *
one_question(const char *prompt)
{
    JsonArray *messages = json_array_new();
    JsonObject *message = json_object_new();

    json_object_set_string_member(message, "role", "user");
    json_object_set_string_member(message, "content", prompt);
    json_array_add_object_element(messages, message);
    return messages;
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

/* Where the reading of one answer's stream stands; the same for the
 * blocking and the asynchronous reader. */
typedef struct {
    EinsoraSseParser *parser;
    EinsoraChatPieceFunc on_piece;
    gpointer piece_data;
    EinsoraChatUsage counted;
    gint64 started_us;
    gboolean done; /* [DONE] came */
} Reading;

static void
reading_init(Reading *reading, EinsoraChatPieceFunc on_piece, gpointer piece_data)
{
    reading->parser = einsora_sse_parser_new(NULL);
    reading->on_piece = on_piece;
    reading->piece_data = piece_data;
    reading->started_us = g_get_monotonic_time();
}

static void
reading_clear(Reading *reading)
{
    g_clear_pointer(&reading->parser, einsora_sse_parser_free);
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

/* One line of the stream (its terminator taken off). */
static gboolean
reading_push_line(Reading *reading, const char *line, gsize length, GError **error)
{
    g_autoptr(EinsoraSseEvent) event = NULL;

    if (length > EINSORA_CHAT_MAX_LINE ||
        !einsora_sse_parser_push_line(reading->parser, line, length, &event, NULL)) {
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 200,
                                                   _("the endpoint sent an event "
                                                     "too large to read")));
        return FALSE;
    }
    return event == NULL ||
           read_chunk(event->data, reading->on_piece, reading->piece_data, &reading->counted,
                      reading->started_us, &reading->done, error);
}

static GDataInputStream *
lines_of(GInputStream *stream)
{
    GDataInputStream *lines = g_data_input_stream_new(stream);

    g_data_input_stream_set_newline_type(lines, G_DATA_STREAM_NEWLINE_TYPE_ANY);
    return lines;
}

gboolean
einsora_endpoint_chat(const char *base_url, const char *token, GTlsDatabase *database,
                      const char *model, const char *prompt, EinsoraChatPieceFunc on_piece,
                      gpointer user_data, EinsoraChatUsage *usage, GError **error)
{
    g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 0, NULL);
    g_autoptr(JsonArray) messages = one_question(prompt);
    g_autoptr(SoupMessage) message = request_new(base_url, token, model, messages, error);
    g_autoptr(GInputStream) stream = NULL;
    g_autoptr(GDataInputStream) lines = NULL;
    g_autoptr(GError) local_error = NULL;
    Reading reading = {0};
    gboolean ok = TRUE;

    if (message == NULL)
        return FALSE;
    if (database != NULL)
        soup_session_set_tls_database(session, database);
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
    lines = lines_of(stream);
    reading_init(&reading, on_piece, user_data);
    while (ok && !reading.done) {
        gsize length = 0;
        g_autofree gchar *line = g_data_input_stream_read_line(lines, &length, NULL, &local_error);

        if (line == NULL && local_error != NULL) {
            g_propagate_error(error, einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL,
                                                              0, local_error->message));
            ok = FALSE;
        } else if (line == NULL) {
            break; /* the end, with or without [DONE] */
        } else {
            ok = reading_push_line(&reading, line, length, error);
        }
    }
    reading.counted.total_us = g_get_monotonic_time() - reading.started_us;
    if (ok && usage != NULL)
        *usage = reading.counted;
    reading_clear(&reading);
    return ok;
}

/* ---- asynchronous: the same reading, one line per callback ---------- */

typedef struct {
    SoupSession *session;
    SoupMessage *message;
    GDataInputStream *lines;
    Reading reading;
} Chat;

static void
chat_free(Chat *chat)
{
    g_clear_object(&chat->lines);
    g_clear_object(&chat->message);
    g_clear_object(&chat->session);
    reading_clear(&chat->reading);
    g_free(chat);
}

static void read_next_line(GTask *task);

/* Cancelled is said as it is, so the caller can tell a Stop from a fault. */
static GError *
broken(GError *error)
{
    g_autoptr(GError) owned = error;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return g_steal_pointer(&owned);
    return einsora_client_error_new(EINSORA_CLIENT_CODE_UNREACHABLE, NULL, 0, error->message);
}

static void
on_line(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Chat *chat = g_task_get_task_data(task);
    GError *error = NULL;
    gsize length = 0;
    g_autofree gchar *line =
        g_data_input_stream_read_line_finish(G_DATA_INPUT_STREAM(source), result, &length, &error);

    if (error == NULL && g_task_return_error_if_cancelled(task))
        return;
    if (line == NULL && error != NULL) {
        g_task_return_error(task, broken(error));
        return;
    }
    if (line != NULL && !chat->reading.done &&
        !reading_push_line(&chat->reading, line, length, &error)) {
        g_task_return_error(task, error);
        return;
    }
    if (line == NULL || chat->reading.done) {
        chat->reading.counted.total_us = g_get_monotonic_time() - chat->reading.started_us;
        g_task_return_boolean(task, TRUE);
        return;
    }
    read_next_line(g_steal_pointer(&task));
}

static void
read_next_line(GTask *task)
{
    Chat *chat = g_task_get_task_data(task);

    g_data_input_stream_read_line_async(chat->lines, G_PRIORITY_DEFAULT,
                                        g_task_get_cancellable(task), on_line, task);
}

static void
on_error_body(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Chat *chat = g_task_get_task_data(task);
    g_autoptr(GBytes) answer =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, NULL);

    if (g_task_return_error_if_cancelled(task))
        return;
    g_task_return_error(task, error_from_answer(chat->message, answer));
}

static void
on_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Chat *chat = g_task_get_task_data(task);
    GError *error = NULL;
    g_autoptr(GInputStream) stream = soup_session_send_finish(SOUP_SESSION(source), result, &error);

    if (stream == NULL) {
        g_task_return_error(task, broken(error));
        return;
    }
    if (soup_message_get_status(chat->message) != SOUP_STATUS_OK) {
        /* An error is one small JSON body; read a bounded part of it. */
        GCancellable *cancellable = g_task_get_cancellable(task);

        g_input_stream_read_bytes_async(stream, 64 * 1024, G_PRIORITY_DEFAULT, cancellable,
                                        on_error_body, g_steal_pointer(&task));
        return;
    }
    chat->lines = lines_of(stream);
    read_next_line(g_steal_pointer(&task));
}

void
einsora_endpoint_chat_async(SoupSession *session, const char *base_url, const char *token,
                            const char *model, JsonArray *messages, EinsoraChatPieceFunc on_piece,
                            gpointer piece_data, GCancellable *cancellable,
                            GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);
    GError *error = NULL;
    Chat *chat = g_new0(Chat, 1);

    g_task_set_source_tag(task, einsora_endpoint_chat_async);
    g_task_set_task_data(task, chat, (GDestroyNotify)chat_free);
    chat->session =
        session != NULL ? g_object_ref(session) : soup_session_new_with_options("timeout", 0, NULL);
    chat->message = request_new(base_url, token, model, messages, &error);
    if (chat->message == NULL) {
        g_task_return_error(task, error);
        return;
    }
    reading_init(&chat->reading, on_piece, piece_data);
    soup_session_send_async(chat->session, chat->message, G_PRIORITY_DEFAULT, cancellable, on_sent,
                            g_steal_pointer(&task));
}

gboolean
einsora_endpoint_chat_finish(GAsyncResult *result, EinsoraChatUsage *usage, GError **error)
{
    GTask *task = G_TASK(result);

    g_return_val_if_fail(g_task_is_valid(result, NULL), FALSE);
    if (!g_task_propagate_boolean(task, error))
        return FALSE;
    if (usage != NULL)
        *usage = ((Chat *)g_task_get_task_data(task))->reading.counted;
    return TRUE;
}
