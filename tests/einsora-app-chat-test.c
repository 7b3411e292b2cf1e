/* The app's endpoint views under Xvfb (tests/run-under-xvfb.sh): the chat
 * window against a stand-in for an endpoint's base URL that streams its
 * answer in chunks with pauses (tests/einsora-test-openai.c), and the
 * workload page of an endpoint, whose base URL the "app" asks for and
 * whose Copy puts it on the clipboard. Screenshots go to
 * EINSORA_ARTIFACTS_DIR (else the build's tests/artifacts). */
#include <adwaita.h>
#include <glib/gstdio.h>

#include "einsora-chat-window.h"
#include "einsora-test-app-wait.h"
#include "einsora-test-openai.h"
#include "einsora-workload-page.h"
#include "einsora-workload-row.h"

#define TOKEN "ein_app_token_0123456789abcdef"
#define ENDPOINT_ID "0190c0de-0000-7000-8000-00000000e001"

static gchar *artifacts;

/* ---- the chat window ------------------------------------------------- */

typedef struct {
    EinsoraChatWindow *window;
    EinsoraTestOpenai *openai;
} Chat;

static gboolean
first_piece_shown(gpointer data)
{
    Chat *chat = data;

    return g_strcmp0(einsora_chat_window_get_answer(chat->window), "Hello") == 0;
}

static gboolean
answered(gpointer data)
{
    return !einsora_chat_window_is_answering(((Chat *)data)->window);
}

static gboolean
client_left(gpointer data)
{
    return einsora_test_openai_client_left(((Chat *)data)->openai);
}

/* As a person does: types into the entry and clicks Send. */
static void
type_and_send(EinsoraChatWindow *window, const char *text)
{
    GtkWidget *entry = GTK_WIDGET(
        gtk_widget_get_template_child(GTK_WIDGET(window), EINSORA_TYPE_CHAT_WINDOW, "entry"));
    GtkWidget *send = GTK_WIDGET(
        gtk_widget_get_template_child(GTK_WIDGET(window), EINSORA_TYPE_CHAT_WINDOW, "send_button"));

    gtk_editable_set_text(GTK_EDITABLE(entry), text);
    g_assert_true(gtk_widget_get_visible(send));
    g_signal_emit_by_name(send, "clicked");
    g_assert_cmpstr(gtk_editable_get_text(GTK_EDITABLE(entry)), ==, "");
}

static const char *
message_content(JsonArray *messages, guint index, const char *member)
{
    return json_object_get_string_member(json_array_get_object_element(messages, index), member);
}

static void
test_chat_streams_and_keeps_the_conversation(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    Chat chat = {.openai = openai};
    JsonArray *sent;

    chat.window = einsora_chat_window_new(NULL, ENDPOINT_ID, "tiny-endpoint",
                                          einsora_test_openai_get_base_url(openai), TOKEN);
    gtk_window_present(GTK_WINDOW(chat.window));
    einsora_test_openai_answer(openai, (const char *const[]){"Hello", ", ", "world", "!", NULL}, 40,
                               TRUE);
    type_and_send(chat.window, "Say hello");
    g_assert_true(einsora_chat_window_is_answering(chat.window));

    /* The first piece is on screen while the rest is still to come. */
    g_assert_true(einsora_test_wait_for(first_piece_shown, &chat, 20));
    g_assert_true(einsora_chat_window_is_answering(chat.window));
    g_assert_cmpuint(einsora_test_openai_get_n_sent(openai), ==, 1);
    g_assert_false(einsora_test_openai_is_done(openai));
    einsora_test_save_screenshot(GTK_WIDGET(chat.window), artifacts, "chat-window-streaming.png");
    einsora_test_openai_release(openai);
    g_assert_true(einsora_test_wait_for(answered, &chat, 20));
    g_assert_cmpstr(einsora_chat_window_get_answer(chat.window), ==, "Hello, world!");
    g_assert_null(einsora_chat_window_get_error(chat.window));
    g_assert_true(einsora_test_openai_is_done(openai));
    /* The app's token, as Bearer; the question as the one message. */
    g_assert_cmpstr(einsora_test_openai_get_authorization(openai), ==, "Bearer " TOKEN);
    sent = einsora_test_openai_get_messages(openai);
    g_assert_cmpuint(json_array_get_length(sent), ==, 1);
    g_assert_cmpstr(message_content(sent, 0, "content"), ==, "Say hello");
    g_assert_cmpuint(einsora_chat_window_get_n_messages(chat.window), ==, 2);

    /* The next question carries what was said before. */
    einsora_test_openai_answer(openai, (const char *const[]){"Again", ": hi", NULL}, 20, FALSE);
    type_and_send(chat.window, "Once more");
    g_assert_true(einsora_test_wait_for(answered, &chat, 20));
    g_assert_cmpstr(einsora_chat_window_get_answer(chat.window), ==, "Again: hi");
    sent = einsora_test_openai_get_messages(openai);
    g_assert_cmpuint(json_array_get_length(sent), ==, 3);
    g_assert_cmpstr(message_content(sent, 0, "content"), ==, "Say hello");
    g_assert_cmpstr(message_content(sent, 1, "role"), ==, "assistant");
    g_assert_cmpstr(message_content(sent, 1, "content"), ==, "Hello, world!");
    g_assert_cmpstr(message_content(sent, 2, "content"), ==, "Once more");
    g_assert_cmpuint(einsora_chat_window_get_n_messages(chat.window), ==, 4);
    einsora_test_save_screenshot(GTK_WIDGET(chat.window), artifacts, "chat-window.png");
    gtk_window_destroy(GTK_WINDOW(chat.window));
}

static void
test_chat_shows_the_endpoints_error(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    Chat chat = {.openai = openai};

    chat.window = einsora_chat_window_new(NULL, ENDPOINT_ID, "tiny-endpoint",
                                          einsora_test_openai_get_base_url(openai), TOKEN);
    gtk_window_present(GTK_WINDOW(chat.window));
    einsora_test_openai_fail(openai, 400, "the request exceeds the context of this model");
    type_and_send(chat.window, "A very long question");
    g_assert_true(einsora_test_wait_for(answered, &chat, 20));
    g_assert_cmpstr(einsora_chat_window_get_error(chat.window), ==,
                    "the request exceeds the context of this model");
    /* An unanswered question isn't sent again as said. */
    g_assert_cmpuint(einsora_chat_window_get_n_messages(chat.window), ==, 0);
    einsora_test_save_screenshot(GTK_WIDGET(chat.window), artifacts, "chat-window-error.png");

    /* The next one goes, and the error goes with the new request. */
    einsora_test_openai_answer(openai, (const char *const[]){"Short", NULL}, 10, FALSE);
    type_and_send(chat.window, "Short one");
    g_assert_true(einsora_test_wait_for(answered, &chat, 20));
    g_assert_null(einsora_chat_window_get_error(chat.window));
    g_assert_cmpuint(json_array_get_length(einsora_test_openai_get_messages(openai)), ==, 1);
    gtk_window_destroy(GTK_WINDOW(chat.window));
}

static void
test_chat_stop_cancels(void)
{
    g_autoptr(EinsoraTestOpenai) openai = einsora_test_openai_new();
    Chat chat = {.openai = openai};
    GtkWidget *stop;

    chat.window = einsora_chat_window_new(NULL, ENDPOINT_ID, "tiny-endpoint",
                                          einsora_test_openai_get_base_url(openai), TOKEN);
    gtk_window_present(GTK_WINDOW(chat.window));
    einsora_test_openai_answer(openai, (const char *const[]){"Hello", " and", " more", NULL}, 40,
                               TRUE);
    type_and_send(chat.window, "Go on");
    g_assert_true(einsora_test_wait_for(first_piece_shown, &chat, 20));
    stop = GTK_WIDGET(gtk_widget_get_template_child(GTK_WIDGET(chat.window),
                                                    EINSORA_TYPE_CHAT_WINDOW, "stop_button"));
    g_assert_true(gtk_widget_get_visible(stop));
    g_signal_emit_by_name(stop, "clicked");
    g_assert_true(einsora_test_wait_for(answered, &chat, 20));
    /* The server goes on: the client has hung up and shows nothing more. */
    einsora_test_openai_release(openai);
    g_assert_true(einsora_test_wait_for(client_left, &chat, 20));
    einsora_test_settle(200);
    g_assert_cmpstr(einsora_chat_window_get_answer(chat.window), ==, "Hello");
    g_assert_null(einsora_chat_window_get_error(chat.window));
    g_assert_false(einsora_test_openai_is_done(openai));
    /* What the user saw of the answer stays in the conversation. */
    g_assert_cmpuint(einsora_chat_window_get_n_messages(chat.window), ==, 2);
    gtk_window_destroy(GTK_WINDOW(chat.window));
}

/* ---- the workload page of an endpoint -------------------------------- */

#define BASE_URL "http://127.0.0.1:8090/endpoints/" ENDPOINT_ID "/v1"

typedef struct {
    EinsoraWorkloadPage *page;
    guint asked;
    gchar *asked_for;
    gchar *clipboard;
    gboolean clipboard_read;
} PageFixture;

/* The app's side of app.endpoint-base-url: the access grant's answer
 * comes back later, as it does over the network. */
static gboolean
grant_later(gpointer data)
{
    PageFixture *fixture = data;

    einsora_workload_page_set_base_url(fixture->page, fixture->asked_for, BASE_URL);
    return G_SOURCE_REMOVE;
}

static void
on_endpoint_base_url(GSimpleAction *action, GVariant *parameter, gpointer data)
{
    PageFixture *fixture = data;

    fixture->asked++;
    g_free(fixture->asked_for);
    fixture->asked_for = g_variant_dup_string(parameter, NULL);
    g_timeout_add(50, grant_later, fixture);
}

static EinsoraWorkloadItem *
endpoint_item(const char *state, gint64 version)
{
    g_autofree gchar *text = g_strdup_printf(
        "{\"id\": \"" ENDPOINT_ID "\", \"name\": \"tiny-endpoint\", \"kind\": \"endpoint\","
        " \"model\": \"tiny\", \"state\": \"%s\", \"gpu_class\": \"cpu-2c-4g\","
        " \"image\": \"llama-cpp\", \"region\": \"local\", \"driver\": \"linux-native\","
        " \"created_at\": \"2026-11-29T10:00:00.000000Z\", \"version\": %" G_GINT64_FORMAT "}",
        state, version);
    g_autoptr(JsonNode) node = json_from_string(text, NULL);

    return einsora_workload_item_new(json_node_get_object(node));
}

static void
set_state(EinsoraWorkloadItem *item, const char *state, gint64 version)
{
    g_autofree gchar *text = g_strdup_printf(
        "{\"id\": \"" ENDPOINT_ID "\", \"name\": \"tiny-endpoint\", \"kind\": \"endpoint\","
        " \"model\": \"tiny\", \"state\": \"%s\", \"gpu_class\": \"cpu-2c-4g\","
        " \"image\": \"llama-cpp\", \"region\": \"local\", \"driver\": \"linux-native\","
        " \"created_at\": \"2026-11-29T10:00:00.000000Z\", \"version\": %" G_GINT64_FORMAT "}",
        state, version);
    g_autoptr(JsonNode) node = json_from_string(text, NULL);

    g_assert_true(einsora_workload_item_update(item, json_node_get_object(node)));
}

static gboolean
base_url_shown(gpointer data)
{
    return g_strcmp0(einsora_workload_page_get_base_url(((PageFixture *)data)->page), BASE_URL) ==
           0;
}

static void
on_clipboard_text(GObject *source, GAsyncResult *result, gpointer data)
{
    PageFixture *fixture = data;

    fixture->clipboard = gdk_clipboard_read_text_finish(GDK_CLIPBOARD(source), result, NULL);
    fixture->clipboard_read = TRUE;
}

static gboolean
clipboard_read(gpointer data)
{
    return ((PageFixture *)data)->clipboard_read;
}

static const char *
template_label(GtkWidget *widget, GType type, const char *name)
{
    return gtk_label_get_text(GTK_LABEL(gtk_widget_get_template_child(widget, type, name)));
}

static void
test_endpoint_page_base_url_and_copy(void)
{
    PageFixture fixture = {0};
    const GActionEntry entries[] = {
        {"endpoint-base-url", on_endpoint_base_url, "s", NULL, NULL, {0}},
    };
    g_autoptr(GSimpleActionGroup) app = g_simple_action_group_new();
    g_autoptr(EinsoraWorkloadItem) item = endpoint_item("provisioning", 1);
    GtkWidget *window = adw_window_new();
    GtkWidget *page = einsora_workload_page_new();
    GtkWidget *row = einsora_workload_row_new();
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
    GtkWidget *open, *chat;

    g_action_map_add_action_entries(G_ACTION_MAP(app), entries, G_N_ELEMENTS(entries), &fixture);
    gtk_widget_insert_action_group(window, "app", G_ACTION_GROUP(app));
    gtk_window_set_default_size(GTK_WINDOW(window), 900, 700);
    gtk_widget_set_vexpand(page, TRUE);
    gtk_box_append(GTK_BOX(box), row);
    gtk_box_append(GTK_BOX(box), page);
    adw_window_set_content(ADW_WINDOW(window), box);
    gtk_window_present(GTK_WINDOW(window));
    fixture.page = EINSORA_WORKLOAD_PAGE(page);

    /* The list's row says what it serves. */
    einsora_workload_row_set_item(EINSORA_WORKLOAD_ROW(row), item);
    g_assert_true(g_str_has_prefix(template_label(row, EINSORA_TYPE_WORKLOAD_ROW, "details_label"),
                                   "Endpoint · tiny · "));

    /* Not running yet: no base URL to ask for, nothing to copy, no Chat. */
    einsora_workload_page_set_item(fixture.page, item);
    open =
        GTK_WIDGET(gtk_widget_get_template_child(page, EINSORA_TYPE_WORKLOAD_PAGE, "open_button"));
    chat =
        GTK_WIDGET(gtk_widget_get_template_child(page, EINSORA_TYPE_WORKLOAD_PAGE, "chat_button"));
    g_assert_false(gtk_widget_get_visible(open));
    g_assert_true(gtk_widget_get_visible(chat));
    g_assert_false(gtk_widget_is_sensitive(chat));
    g_assert_cmpuint(fixture.asked, ==, 0);
    g_assert_null(einsora_workload_page_get_base_url(fixture.page));
    g_assert_cmpstr(template_label(page, EINSORA_TYPE_WORKLOAD_PAGE, "base_url_label"), ==,
                    "Once it is running");

    /* Running: the page asks once, and shows the answer. */
    set_state(item, "running", 2);
    g_assert_cmpuint(fixture.asked, ==, 1);
    g_assert_cmpstr(fixture.asked_for, ==, ENDPOINT_ID);
    g_assert_true(einsora_test_wait_for(base_url_shown, &fixture, 10));
    g_assert_cmpstr(template_label(page, EINSORA_TYPE_WORKLOAD_PAGE, "base_url_label"), ==,
                    BASE_URL);
    g_assert_true(gtk_widget_is_sensitive(chat));
    g_assert_cmpuint(fixture.asked, ==, 1);
    einsora_test_save_screenshot(window, artifacts, "endpoint-page.png");

    /* Copy: on the display's clipboard, as another app would read it. */
    g_assert_true(gtk_widget_activate_action(page, "page.copy-base-url", NULL));
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(page), NULL, on_clipboard_text,
                                  &fixture);
    g_assert_true(einsora_test_wait_for(clipboard_read, &fixture, 10));
    g_assert_cmpstr(fixture.clipboard, ==, BASE_URL);

    /* Stopped: the URL answers nothing, so it goes; running again asks again. */
    set_state(item, "stopped", 3);
    g_assert_null(einsora_workload_page_get_base_url(fixture.page));
    g_assert_false(gtk_widget_is_sensitive(chat));
    set_state(item, "running", 4);
    g_assert_cmpuint(fixture.asked, ==, 2);
    g_assert_true(einsora_test_wait_for(base_url_shown, &fixture, 10));

    /* A late answer for another workload changes nothing. */
    einsora_workload_page_set_base_url(fixture.page, "0190c0de-0000-7000-8000-000000000bad",
                                       "http://127.0.0.1:1/elsewhere/v1");
    g_assert_cmpstr(einsora_workload_page_get_base_url(fixture.page), ==, BASE_URL);

    einsora_workload_row_set_item(EINSORA_WORKLOAD_ROW(row), NULL);
    einsora_workload_page_set_item(fixture.page, NULL);
    gtk_window_destroy(GTK_WINDOW(window));
    g_free(fixture.asked_for);
    g_free(fixture.clipboard);
}

int
main(int argc, char **argv)
{
    const char *dir = g_getenv("EINSORA_ARTIFACTS_DIR");
    int status;

    g_test_init(&argc, &argv, NULL);
    if (g_getenv("DISPLAY") == NULL) {
        g_test_skip("needs a display: run under tests/run-under-xvfb.sh");
        return g_test_run();
    }
    artifacts =
        dir != NULL ? g_strdup(dir) : g_build_filename(g_get_current_dir(), "artifacts", NULL);
    g_mkdir_with_parents(artifacts, 0755);
    adw_init();
    {
        /* The app's own style (an AdwApplication would load it). */
        g_autoptr(GtkCssProvider) css = gtk_css_provider_new();

        gtk_css_provider_load_from_resource(css, "/dev/einsora/Einsora/style.css");
        gtk_style_context_add_provider_for_display(gdk_display_get_default(),
                                                   GTK_STYLE_PROVIDER(css),
                                                   GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
    }
    g_test_add_func("/app/chat/streams-and-keeps-the-conversation",
                    test_chat_streams_and_keeps_the_conversation);
    g_test_add_func("/app/chat/shows-the-endpoints-error", test_chat_shows_the_endpoints_error);
    g_test_add_func("/app/chat/stop-cancels", test_chat_stop_cancels);
    g_test_add_func("/app/endpoint-page/base-url-and-copy", test_endpoint_page_base_url_and_copy);
    status = g_test_run();
    g_free(artifacts);
    return status;
}
