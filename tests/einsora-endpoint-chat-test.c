/* The endpoint chat client (app/client/einsora-endpoint-chat.c) against a
 * stand-in for an endpoint's base URL (tests/einsora-test-openai.c): the
 * asynchronous reader hands each piece over as it arrives, sends the
 * whole conversation and the token as Bearer, reads OpenAI's error
 * shape, stops at a cancel; the blocking one reads the same stream. */
#include <gio/gio.h>

#include "einsora-client-error.h"
#include "einsora-endpoint-chat.h"
#include "einsora-test-openai.h"

#define TOKEN "ein_test_token_0123456789"

typedef struct {
    GString *text;
    guint pieces;
    GCancellable *cancel_after_first; /* (nullable) */
    gboolean finished;
    gboolean ok;
    GError *error;
    EinsoraChatUsage usage;
} Answer;

static void
on_piece(const char *text, gpointer user_data)
{
    Answer *answer = user_data;

    g_string_append(answer->text, text);
    answer->pieces++;
    if (answer->cancel_after_first != NULL)
        g_cancellable_cancel(answer->cancel_after_first);
}

static void
on_answered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Answer *answer = user_data;

    answer->ok = einsora_endpoint_chat_finish(result, &answer->usage, &answer->error);
    answer->finished = TRUE;
}

static JsonArray *
conversation(void)
{
    g_autoptr(JsonNode) node =
        json_from_string("[{\"role\": \"user\", \"content\": \"Hi\"},"
                         " {\"role\": \"assistant\", \"content\": \"Hello!\"},"
                         " {\"role\": \"user\", \"content\": \"Say more\"}]",
                         NULL);

    return json_array_ref(json_node_get_array(node));
}

static void
iterate_until(gboolean *flag)
{
    gint64 deadline = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;

    while (!*flag && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    g_assert_true(*flag);
}

static gboolean
first_piece_in(Answer *answer, EinsoraTestOpenai *openai)
{
    gint64 deadline = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;

    while (answer->pieces == 0 && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    return answer->pieces == 1;
}

static void
test_async_streams_pieces(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    g_autoptr(JsonArray) messages = conversation();
    Answer answer = {.text = g_string_new(NULL)};
    JsonArray *seen;

    einsora_test_openai_answer(openai, (const char *const[]){"Hel", "lo", " there", NULL}, 30,
                               TRUE);
    einsora_endpoint_chat_async(NULL, einsora_test_openai_get_base_url(openai), TOKEN, NULL,
                                messages, on_piece, &answer, NULL, on_answered, &answer);
    /* The first piece is handed over while the server still holds the rest. */
    g_assert_true(first_piece_in(&answer, openai));
    g_assert_cmpstr(answer.text->str, ==, "Hel");
    g_assert_false(answer.finished);
    g_assert_false(einsora_test_openai_is_done(openai));
    einsora_test_openai_release(openai);
    iterate_until(&answer.finished);
    g_assert_no_error(answer.error);
    g_assert_true(answer.ok);
    g_assert_cmpstr(answer.text->str, ==, "Hello there");
    g_assert_cmpuint(answer.pieces, ==, 3);
    g_assert_cmpint(answer.usage.prompt_tokens, ==, 3);
    g_assert_cmpint(answer.usage.completion_tokens, ==, 4);
    g_assert_cmpint(answer.usage.first_piece_us, >, 0);
    /* The token went as Bearer; the whole conversation went, in order. */
    g_assert_cmpstr(einsora_test_openai_get_authorization(openai), ==, "Bearer " TOKEN);
    seen = einsora_test_openai_get_messages(openai);
    g_assert_nonnull(seen);
    g_assert_cmpuint(json_array_get_length(seen), ==, 3);
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(seen, 1), "content"), ==,
        "Hello!");
    g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(seen, 2), "role"),
                    ==, "user");
    g_string_free(answer.text, TRUE);
}

static void
test_async_error_shape(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    g_autoptr(JsonArray) messages = conversation();
    Answer answer = {.text = g_string_new(NULL)};

    einsora_test_openai_fail(openai, 400, "the context is longer than this model reads");
    einsora_endpoint_chat_async(NULL, einsora_test_openai_get_base_url(openai), TOKEN, NULL,
                                messages, on_piece, &answer, NULL, on_answered, &answer);
    iterate_until(&answer.finished);
    g_assert_false(answer.ok);
    g_assert_error(answer.error, EINSORA_CLIENT_ERROR, EINSORA_CLIENT_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(answer.error->message, ==, "the context is longer than this model reads");
    g_assert_cmpuint(einsora_client_error_get_status(answer.error), ==, 400);
    g_assert_cmpuint(answer.pieces, ==, 0);
    g_clear_error(&answer.error);
    g_string_free(answer.text, TRUE);
}

static void
test_async_cancel(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    g_autoptr(JsonArray) messages = conversation();
    g_autoptr(GCancellable) cancellable = g_cancellable_new();
    Answer answer = {.text = g_string_new(NULL), .cancel_after_first = cancellable};
    gint64 deadline;

    einsora_test_openai_answer(openai, (const char *const[]){"one", "two", "three", NULL}, 30,
                               FALSE);
    einsora_endpoint_chat_async(NULL, einsora_test_openai_get_base_url(openai), TOKEN, NULL,
                                messages, on_piece, &answer, cancellable, on_answered, &answer);
    iterate_until(&answer.finished);
    g_assert_error(answer.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    g_assert_false(answer.ok);
    /* Nothing after the cancel, and the stream was let go. */
    g_assert_cmpstr(answer.text->str, ==, "one");
    deadline = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;
    while (!einsora_test_openai_client_left(openai) && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    g_assert_true(einsora_test_openai_client_left(openai));
    g_assert_false(einsora_test_openai_is_done(openai));
    g_assert_cmpuint(answer.pieces, ==, 1);
    g_clear_error(&answer.error);
    g_string_free(answer.text, TRUE);
}

typedef struct {
    gchar *base_url;
    GString *text;
    gboolean ok;
    GError *error;
    gboolean finished;
} Blocking;

static void
on_blocking_piece(const char *text, gpointer user_data)
{
    g_string_append(user_data, text);
}

static gpointer
chat_blocking(gpointer data)
{
    Blocking *blocking = data;

    blocking->ok = einsora_endpoint_chat(blocking->base_url, TOKEN, NULL, "tiny", "Hi",
                                         on_blocking_piece, blocking->text, NULL, &blocking->error);
    g_atomic_int_set(&blocking->finished, TRUE);
    g_main_context_wakeup(NULL);
    return NULL;
}

/* The CLI's blocking reader reads the same stream (the server runs in
 * this thread's context, the client in another thread). */
static void
test_blocking_same_reading(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    Blocking blocking = {.text = g_string_new(NULL)};
    GThread *thread;
    JsonArray *seen;

    einsora_test_openai_answer(openai, (const char *const[]){"a", "b", "c", NULL}, 10, FALSE);
    blocking.base_url = g_strdup(einsora_test_openai_get_base_url(openai));
    thread = g_thread_new("chat", chat_blocking, &blocking);
    while (!g_atomic_int_get(&blocking.finished))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(thread);
    g_assert_no_error(blocking.error);
    g_assert_true(blocking.ok);
    g_assert_cmpstr(blocking.text->str, ==, "abc");
    seen = einsora_test_openai_get_messages(openai);
    g_assert_cmpuint(json_array_get_length(seen), ==, 1);
    g_assert_cmpstr(
        json_object_get_string_member(json_array_get_object_element(seen, 0), "content"), ==, "Hi");
    g_string_free(blocking.text, TRUE);
    g_free(blocking.base_url);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/client/endpoint-chat/async/streams-pieces-as-they-arrive",
                    test_async_streams_pieces);
    g_test_add_func("/client/endpoint-chat/async/error-shape", test_async_error_shape);
    g_test_add_func("/client/endpoint-chat/async/cancel-stops-pieces", test_async_cancel);
    g_test_add_func("/client/endpoint-chat/blocking/same-reading", test_blocking_same_reading);
    return g_test_run();
}
