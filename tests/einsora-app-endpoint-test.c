/* An endpoint through the desktop app, for real, under Xvfb with a
 * private session bus: EinsoraApplication starts the real einsora-daemon
 * with the linux-native driver and the real llama-server
 * (EINSORA_LLAMA_DIR, tests/einsora-test-llama.c); the test imports the
 * tiny generated model into the model store and launches an endpoint over
 * /v1, then works the UI: the row shows the model, the page the base URL
 * the access grant gives (Copy puts it on the clipboard), and the chat
 * window streams an answer through the access proxy with the app's token
 * until Stop; the endpoint's running is a desktop notification (the test
 * is the notification server on its bus). Skipped where llama-server
 * isn't built. Screenshots go to EINSORA_ARTIFACTS_DIR. */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "einsora-application.h"
#include "einsora-chat-window.h"
#include "einsora-client-error.h"
#include "einsora-connection.h"
#include "einsora-test-app-wait.h"
#include "einsora-test-dir.h"
#include "einsora-test-llama.h"
#include "einsora-test-port.h"
#include "einsora-window.h"
#include "einsora-workload-page.h"

#define ENDPOINT_NAME "ui-endpoint"

static gchar *dir;
static gchar *artifacts;
static EinsoraApplication *app;
static GPtrArray *notifications; /* "summary|body" of each the app sent */

static const char notifications_xml[] =
    "<node><interface name='org.freedesktop.Notifications'>"
    "<method name='Notify'><arg type='s' direction='in'/><arg type='u' direction='in'/>"
    "<arg type='s' direction='in'/><arg type='s' direction='in'/><arg type='s' direction='in'/>"
    "<arg type='as' direction='in'/><arg type='a{sv}' direction='in'/>"
    "<arg type='i' direction='in'/><arg type='u' direction='out'/></method>"
    "<method name='CloseNotification'><arg type='u' direction='in'/></method>"
    "<method name='GetCapabilities'><arg type='as' direction='out'/></method>"
    "<method name='GetServerInformation'><arg type='s' direction='out'/>"
    "<arg type='s' direction='out'/><arg type='s' direction='out'/>"
    "<arg type='s' direction='out'/></method>"
    "</interface></node>";

static void
on_notifications_call(GDBusConnection *connection, const char *sender, const char *path,
                      const char *interface, const char *method, GVariant *parameters,
                      GDBusMethodInvocation *invocation, gpointer user_data)
{
    static guint32 next_id = 1;

    if (g_str_equal(method, "Notify")) {
        const char *summary = NULL, *body = NULL;

        g_variant_get(parameters, "(&su&s&s&s@as@a{sv}i)", NULL, NULL, NULL, &summary, &body, NULL,
                      NULL, NULL);
        g_ptr_array_add(notifications, g_strdup_printf("%s|%s", summary, body));
        g_dbus_method_invocation_return_value(invocation, g_variant_new("(u)", next_id++));
    } else if (g_str_equal(method, "GetCapabilities")) {
        const char *caps[] = {"body", "actions", NULL};
        g_dbus_method_invocation_return_value(invocation, g_variant_new("(^as)", (gchar **)caps));
    } else if (g_str_equal(method, "GetServerInformation")) {
        g_dbus_method_invocation_return_value(
            invocation, g_variant_new("(ssss)", "einsora-test", "einsora", "1", "1.2"));
    } else {
        g_dbus_method_invocation_return_value(invocation, NULL);
    }
}

static void
serve_notifications(void)
{
    static const GDBusInterfaceVTable vtable = {on_notifications_call, NULL, NULL, {0}};
    g_autoptr(GDBusNodeInfo) info = g_dbus_node_info_new_for_xml(notifications_xml, NULL);
    g_autoptr(GError) error = NULL;
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);

    g_assert_no_error(error);
    g_dbus_connection_register_object(bus, "/org/freedesktop/Notifications", info->interfaces[0],
                                      &vtable, NULL, NULL, &error);
    g_assert_no_error(error);
    g_bus_own_name_on_connection(bus, "org.freedesktop.Notifications", G_BUS_NAME_OWNER_FLAGS_NONE,
                                 NULL, NULL, NULL, NULL);
}

static gboolean
notified_running(gpointer data)
{
    for (guint i = 0; i < notifications->len; i++) {
        const char *text = notifications->pdata[i];
        if (strstr(text, ENDPOINT_NAME) != NULL && strstr(text, "running") != NULL)
            return TRUE;
    }
    return FALSE;
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
    g_assert_true(einsora_test_wait_for(app_ready, NULL, 120));
    window = main_window();
    g_assert_nonnull(window);

    /* The model, made here, into the store. */
    einsora_test_llama_make_model(model);
    import = g_strdup_printf("{\"name\": \"tiny\", \"source\": \"%s\"}", model);
    imported = call("POST", "/v1/model-store", import, &error);
    g_assert_no_error(error);
    /* The import goes on in the daemon's worker thread: watched to its end. */
    {
        JsonObject *object = json_node_get_object(imported);
        g_autofree gchar *watch = g_strdup_printf("/v1/model-store/imports/%s",
                                                  json_object_get_string_member(object, "id"));
        gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

        while (g_strcmp0(json_object_get_string_member(object, "state"), "importing") == 0) {
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            einsora_test_settle(20);
            g_clear_pointer(&imported, json_node_unref);
            imported = call("GET", watch, NULL, &error);
            g_assert_no_error(error);
            object = json_node_get_object(imported);
        }
        g_assert_cmpstr(json_object_get_string_member(object, "state"), ==, "done");
    }
    created = call("POST", "/v1/workloads",
                   "{\"kind\": \"endpoint\", \"gpu_class\": \"cpu-2c-4g\", \"model\": \"tiny\","
                   " \"name\": \"" ENDPOINT_NAME "\"}",
                   &error);
    g_assert_no_error(error);

    /* Running, through the feed; its row and page know its model. */
    g_assert_true(einsora_test_wait_for(endpoint_in_state, "running", 180));
    g_assert_true(einsora_test_wait_for(notified_running, NULL, 30));
    item = endpoint_item();
    g_assert_true(einsora_workload_item_is_endpoint(item));
    g_assert_cmpstr(einsora_workload_item_get_model(item), ==, "tiny");
    g_action_group_activate_action(G_ACTION_GROUP(app), "show-workload",
                                   g_variant_new_string(einsora_workload_item_get_id(item)));
    page = einsora_window_get_workload_page(window);
    g_assert_true(einsora_workload_page_get_item(page) == item);

    /* The base URL the access grant gave, and Copy. */
    g_assert_true(einsora_test_wait_for(base_url_shown, page, 30));
    base_url = einsora_workload_page_get_base_url(page);
    expected_path = g_strdup_printf("/endpoints/%s/v1", einsora_workload_item_get_id(item));
    g_assert_true(g_str_has_prefix(base_url, "http://127.0.0.1:"));
    g_assert_true(g_str_has_suffix(base_url, expected_path));
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(page), "page.copy-base-url", NULL));
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(GTK_WIDGET(page)), NULL,
                                  on_clipboard_text, &clipboard);
    g_assert_true(einsora_test_wait_for(clipboard_read, &clipboard, 10));
    g_assert_cmpstr(clipboard.text, ==, base_url);
    einsora_test_settle(5500); /* the toasts go (libadwaita's 5 s) */
    einsora_test_save_screenshot(GTK_WIDGET(window), artifacts, "endpoint-page-running.png");

    /* Chat: llama-server's answer streams in through the proxy with the
     * app's token; random weights write without end, so Stop ends it. */
    gtk_widget_activate_action(GTK_WIDGET(page), "page.chat", NULL);
    g_assert_true(einsora_test_wait_for(chat_shown, NULL, 30));
    chat = chat_window();
    g_assert_true(einsora_chat_window_send(chat, "Hello"));
    g_assert_true(einsora_test_wait_for(answer_begun, chat, 120));
    g_assert_null(einsora_chat_window_get_error(chat));
    einsora_test_settle(1000);
    einsora_test_save_screenshot(GTK_WIDGET(chat), artifacts, "chat-window-llama.png");
    einsora_chat_window_stop(chat);
    g_assert_true(einsora_test_wait_for(answered, chat, 30));
    g_assert_null(einsora_chat_window_get_error(chat));
    g_assert_cmpuint(einsora_chat_window_get_n_messages(chat), ==, 2);
    gtk_window_destroy(GTK_WINDOW(chat));

    /* Stopped: no base URL on the page any more. */
    gtk_widget_activate_action(GTK_WIDGET(page), "page.stop", NULL);
    g_assert_true(einsora_test_wait_for(endpoint_in_state, "stopped", 60));
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
    notifications = g_ptr_array_new_with_free_func(g_free);
    serve_notifications();
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
