/* An endpoint through the desktop app, for real, under Xvfb with a
 * private session bus: EinsoraApplication starts the real einsora-daemon
 * with the linux-native driver and the real llama-server
 * (EINSORA_LLAMA_DIR, tests/einsora-test-llama.c); the test imports the
 * tiny generated model into the model store and launches an endpoint over
 * /v1, then works the UI: the row shows the model, the page the base URL
 * the access grant gives (Copy puts it on the clipboard), and the chat
 * window streams an answer through the access proxy with the app's token
 * until Stop. Skipped where llama-server isn't built, or where the daemon
 * has no model store yet. Screenshots go to EINSORA_ARTIFACTS_DIR. */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <signal.h>

#include "einsora-application.h"
#include "einsora-chat-window.h"
#include "einsora-client-error.h"
#include "einsora-connection.h"
#include "einsora-test-dir.h"
#include "einsora-test-llama.h"
#include "einsora-test-port.h"
#include "einsora-window.h"
#include "einsora-workload-page.h"

#define ENDPOINT_NAME "ui-endpoint"

static gchar *dir;
static gchar *artifacts;
static EinsoraApplication *app;

typedef gboolean (*Condition)(gpointer data);

static gboolean
wait_for(Condition condition, gpointer data, guint seconds)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)seconds * G_TIME_SPAN_SECOND;

    while (!condition(data)) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return TRUE;
}

static void
settle(guint ms)
{
    gint64 until = g_get_monotonic_time() + ms * 1000;

    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(2000);
    }
}

static gboolean
widget_drawn(gpointer widget)
{
    return gtk_widget_get_mapped(widget) && gtk_widget_get_width(widget) > 0;
}

static void
save_screenshot(GtkWidget *widget, const char *name)
{
    g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(widget);
    GtkSnapshot *snapshot;
    g_autoptr(GskRenderNode) node = NULL;
    g_autoptr(GdkTexture) texture = NULL;
    g_autofree gchar *path = g_build_filename(artifacts, name, NULL);
    GskRenderer *renderer = gtk_native_get_renderer(gtk_widget_get_native(widget));
    int width, height;

    g_assert_true(wait_for(widget_drawn, widget, 10));
    settle(300);
    width = gtk_widget_get_width(widget);
    height = gtk_widget_get_height(widget);
    snapshot = gtk_snapshot_new();
    gdk_paintable_snapshot(paintable, snapshot, width, height);
    node = gtk_snapshot_free_to_node(snapshot);
    g_assert_nonnull(node);
    texture = gsk_renderer_render_texture(renderer, node,
                                          &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
    g_assert_true(gdk_texture_save_to_png(texture, path));
    g_test_message("screenshot: %s", path);
}

static gboolean
app_ready(gpointer data)
{
    return einsora_application_is_ready(app);
}

static EinsoraWindow *
main_window(void)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(app)); l != NULL; l = l->next)
        if (EINSORA_IS_WINDOW(l->data))
            return l->data;
    return NULL;
}

static EinsoraWorkloadItem *
endpoint_item(void)
{
    EinsoraWorkloadList *list = einsora_application_get_workloads(app);

    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(list)); i++) {
        g_autoptr(EinsoraWorkloadItem) item = g_list_model_get_item(G_LIST_MODEL(list), i);
        if (g_strcmp0(einsora_workload_item_get_name(item), ENDPOINT_NAME) == 0)
            return item;
    }
    return NULL;
}

static gboolean
endpoint_in_state(gpointer state)
{
    EinsoraWorkloadItem *item = endpoint_item();

    return item != NULL && g_strcmp0(einsora_workload_item_get_state(item), state) == 0;
}

static gboolean
base_url_shown(gpointer page)
{
    return einsora_workload_page_get_base_url(page) != NULL;
}

static gpointer
chat_window(void)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(app)); l != NULL; l = l->next)
        if (EINSORA_IS_CHAT_WINDOW(l->data))
            return l->data;
    return NULL;
}

static gboolean
chat_shown(gpointer data)
{
    return chat_window() != NULL;
}

static gboolean
answer_begun(gpointer window)
{
    const char *answer = einsora_chat_window_get_answer(window);

    return (answer != NULL && *answer != '\0') || einsora_chat_window_get_error(window) != NULL;
}

static gboolean
answered(gpointer window)
{
    return !einsora_chat_window_is_answering(window);
}

typedef struct {
    gchar *text;
    gboolean read;
} Clipboard;

static void
on_clipboard_text(GObject *source, GAsyncResult *result, gpointer data)
{
    Clipboard *clipboard = data;

    clipboard->text = gdk_clipboard_read_text_finish(GDK_CLIPBOARD(source), result, NULL);
    clipboard->read = TRUE;
}

static gboolean
clipboard_read(gpointer data)
{
    return ((Clipboard *)data)->read;
}

/* The API as a script would call it, with the app's own token. */
static JsonNode *
call(const char *method, const char *path, const char *body, GError **error)
{
    EinsoraConnection *connection = einsora_application_get_connection(app);
    g_autoptr(EinsoraClient) client = einsora_client_new(einsora_connection_get_server(connection),
                                                         einsora_connection_get_token(connection));
    g_autoptr(JsonNode) node = body != NULL ? json_from_string(body, NULL) : NULL;

    return einsora_client_request(client, method, path, node, NULL, NULL, error);
}

static void
test_endpoint_through_the_app(void)
{
    g_autofree gchar *llama_server = einsora_test_llama_server();
    g_autofree gchar *model = g_build_filename(dir, "tiny.gguf", NULL);
    g_autofree gchar *import = NULL;
    g_autofree gchar *expected_path = NULL;
    g_autoptr(JsonNode) imported = NULL;
    g_autoptr(JsonNode) created = NULL;
    g_autoptr(GError) error = NULL;
    EinsoraWindow *window;
    EinsoraWorkloadPage *page;
    EinsoraWorkloadItem *item;
    EinsoraChatWindow *chat;
    Clipboard clipboard = {0};
    const char *base_url;

    if (llama_server == NULL)
        return; /* skipped, and said why */
    g_setenv("EINSORA_LLAMA_SERVER", llama_server, TRUE);
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_activate(G_APPLICATION(app));
    g_assert_true(wait_for(app_ready, NULL, 120));
    window = main_window();
    g_assert_nonnull(window);

    /* The model, made here, into the store. */
    einsora_test_llama_make_model(model);
    import = g_strdup_printf("{\"name\": \"tiny\", \"path\": \"%s\"}", model);
    imported = call("POST", "/v1/model-store", import, &error);
    /* No such route (404, or 405 where a neighbour path answers): the
     * model store isn't in this daemon yet. */
    if (error != NULL && error->domain == EINSORA_CLIENT_ERROR &&
        (einsora_client_error_get_status(error) == 404 ||
         einsora_client_error_get_status(error) == 405)) {
        g_test_skip("this daemon has no model store yet (POST /v1/model-store)");
        return;
    }
    g_assert_no_error(error);
    created = call("POST", "/v1/workloads",
                   "{\"kind\": \"endpoint\", \"gpu_class\": \"cpu-2c-4g\", \"model\": \"tiny\","
                   " \"name\": \"" ENDPOINT_NAME "\"}",
                   &error);
    g_assert_no_error(error);

    /* Running, through the feed; its row and page know its model. */
    g_assert_true(wait_for(endpoint_in_state, "running", 180));
    item = endpoint_item();
    g_assert_true(einsora_workload_item_is_endpoint(item));
    g_assert_cmpstr(einsora_workload_item_get_model(item), ==, "tiny");
    g_action_group_activate_action(G_ACTION_GROUP(app), "show-workload",
                                   g_variant_new_string(einsora_workload_item_get_id(item)));
    page = einsora_window_get_workload_page(window);
    g_assert_true(einsora_workload_page_get_item(page) == item);

    /* The base URL the access grant gave, and Copy. */
    g_assert_true(wait_for(base_url_shown, page, 30));
    base_url = einsora_workload_page_get_base_url(page);
    expected_path = g_strdup_printf("/endpoints/%s/v1", einsora_workload_item_get_id(item));
    g_assert_true(g_str_has_prefix(base_url, "http://127.0.0.1:"));
    g_assert_true(g_str_has_suffix(base_url, expected_path));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(page), "page.copy-base-url", NULL));
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(GTK_WIDGET(page)), NULL,
                                  on_clipboard_text, &clipboard);
    g_assert_true(wait_for(clipboard_read, &clipboard, 10));
    g_assert_cmpstr(clipboard.text, ==, base_url);
    settle(5500); /* the toasts go (libadwaita's 5 s) */
    save_screenshot(GTK_WIDGET(window), "endpoint-page-running.png");

    /* Chat: llama-server's answer streams in through the proxy with the
     * app's token; random weights write without end, so Stop ends it. */
    gtk_widget_activate_action(GTK_WIDGET(page), "page.chat", NULL);
    g_assert_true(wait_for(chat_shown, NULL, 30));
    chat = chat_window();
    g_assert_true(einsora_chat_window_send(chat, "Hello"));
    g_assert_true(wait_for(answer_begun, chat, 120));
    g_assert_null(einsora_chat_window_get_error(chat));
    settle(1000);
    save_screenshot(GTK_WIDGET(chat), "chat-window-llama.png");
    einsora_chat_window_stop(chat);
    g_assert_true(wait_for(answered, chat, 30));
    g_assert_null(einsora_chat_window_get_error(chat));
    g_assert_cmpuint(einsora_chat_window_get_n_messages(chat), ==, 2);
    gtk_window_destroy(GTK_WINDOW(chat));

    /* Stopped: no base URL on the page any more. */
    gtk_widget_activate_action(GTK_WIDGET(page), "page.stop", NULL);
    g_assert_true(wait_for(endpoint_in_state, "stopped", 60));
    g_assert_null(einsora_workload_page_get_base_url(page));
    g_free(clipboard.text);
}

static void
set_up_daemon_env(void)
{
    guint port = einsora_test_free_port();
    g_autofree gchar *addr = g_strdup_printf("127.0.0.1:%u", port);
    g_autofree gchar *server = g_strdup_printf("http://%s", addr);
    g_autofree gchar *data_dir = g_build_filename(dir, "data", NULL);
    g_autofree gchar *run_dir = g_build_filename(dir, "run", NULL);
    g_autofree gchar *state_dir = g_build_filename(dir, "state", NULL);

    g_setenv("EINSORA_DATA_DIR", data_dir, TRUE);
    g_setenv("EINSORA_AGENT_STATE_DIR", data_dir, TRUE);
    g_setenv("EINSORA_AGENT_RUN_DIR", run_dir, TRUE);
    g_setenv("EINSORA_API_ADDR", addr, TRUE);
    g_setenv("EINSORA_ACCESS_ADDR", "127.0.0.1:0", TRUE);
    g_setenv("EINSORA_SERVER", server, TRUE);
    g_setenv("EINSORA_CONTROLLER_INTERVAL", "1s", TRUE);
    g_setenv("EINSORA_NO_SYSTEMD", "1", TRUE);
    g_setenv("EINSORA_DRIVERS", "linux-native", TRUE);
    g_setenv("XDG_STATE_HOME", state_dir, TRUE);
}

/* The app leaves its daemon running, as it should: stop it here. */
static void
stop_daemon(void)
{
    EinsoraConnection *connection = einsora_application_get_connection(app);
    const char *pid_text =
        connection != NULL ? einsora_connection_get_daemon_pid(connection) : NULL;
    GPid pid = pid_text != NULL ? (GPid)g_ascii_strtoll(pid_text, NULL, 10) : 0;

    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int tries = 0; tries < 200 && kill(pid, 0) == 0; tries++)
        g_usleep(50 * 1000);
}

int
main(int argc, char **argv)
{
    const char *dir_env = g_getenv("EINSORA_ARTIFACTS_DIR");
    int status;

    g_test_init(&argc, &argv, NULL);
    if (g_getenv("DISPLAY") == NULL || g_getenv("DBUS_SESSION_BUS_ADDRESS") == NULL) {
        g_test_skip("needs a display and a session bus: run under tests/run-under-xvfb.sh");
        return g_test_run();
    }
    dir = einsora_test_dir_new();
    artifacts = dir_env != NULL ? g_strdup(dir_env)
                                : g_build_filename(g_get_current_dir(), "artifacts", NULL);
    g_mkdir_with_parents(artifacts, 0755);
    set_up_daemon_env();
    adw_init();
    app = einsora_application_new();
    g_test_add_func("/app/ui/endpoint-through-the-app", test_endpoint_through_the_app);
    status = g_test_run();
    stop_daemon();
    g_clear_object(&app);
    einsora_test_dir_remove(dir);
    g_free(artifacts);
    g_free(dir);
    return status;
}
