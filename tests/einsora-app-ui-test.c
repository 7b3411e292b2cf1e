/* The desktop app, for real, under Xvfb with a private session bus
 * (tests/run-under-xvfb.sh): EinsoraApplication in this process starts
 * the real einsora-daemon (default drivers: the native one, real Jupyter
 * in bubblewrap), and the test works the UI as a person would: the
 * new-workload dialog's rows and Create button, the list, the workload
 * page and its actions; and an endpoint through the same dialog, with a
 * model the test puts in the daemon's model store. Notifications are observed on the session bus,
 * where the test is the notification server. Screenshots of the windows
 * go to EINSORA_ARTIFACTS_DIR (else the build's tests/artifacts). */
#include <adwaita.h>
#include <float.h>
#include <math.h>
#include <glib/gstdio.h>
#include <libintl.h>
#include <locale.h>
#include <signal.h>

#include "einsora-application.h"
#include "einsora-client.h"
#include "einsora-connection.h"
#include "einsora-format.h"
#include "einsora-new-workload-dialog.h"
#include "einsora-notebook-window.h"
#include "einsora-server-dialog.h"
#include "einsora-test-app-wait.h"
#include "einsora-test-dir.h"
#include "einsora-test-port.h"
#include "einsora-test-workload-rows.h"
#include "einsora-usage-view.h"
#include "einsora-window.h"
#include "einsora-workload-page.h"

#define NOTEBOOK_NAME "ui-notebook"
#define ENDPOINT_NAME "ui-endpoint"

typedef struct {
    gchar *dir;
    gchar *artifacts;
    EinsoraApplication *app;
    GPtrArray *notifications; /* "summary|body" of each the app sent */
    GArray *notification_ids; /* the ID the server gave each (guint32) */
    guint bus_owner;
    guint registration;
    GDBusConnection *bus;
} Fixture;

static Fixture fixture;

/* ---- a notification server on the session bus ------------------------ */

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
    "<signal name='ActionInvoked'><arg type='u'/><arg type='s'/></signal>"
    "<signal name='NotificationClosed'><arg type='u'/><arg type='u'/></signal>"
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
        g_ptr_array_add(fixture.notifications, g_strdup_printf("%s|%s", summary, body));
        g_array_append_val(fixture.notification_ids, next_id);
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

    fixture.bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    g_assert_no_error(error);
    fixture.registration =
        g_dbus_connection_register_object(fixture.bus, "/org/freedesktop/Notifications",
                                          info->interfaces[0], &vtable, NULL, NULL, &error);
    g_assert_no_error(error);
    fixture.bus_owner =
        g_bus_own_name_on_connection(fixture.bus, "org.freedesktop.Notifications",
                                     G_BUS_NAME_OWNER_FLAGS_NONE, NULL, NULL, NULL, NULL);
}

/* ---- waiting with the main loop turning -------------------------------- */

static gboolean
app_ready(gpointer data)
{
    return einsora_application_is_ready(fixture.app);
}

static EinsoraWindow *
main_window(void)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(fixture.app)); l != NULL;
         l = l->next)
        if (EINSORA_IS_WINDOW(l->data))
            return l->data;
    return NULL;
}

static gpointer
find_toplevel(GType type)
{
    GListModel *toplevels = gtk_window_get_toplevels();

    for (guint i = 0; i < g_list_model_get_n_items(toplevels); i++) {
        g_autoptr(GObject) window = g_list_model_get_item(toplevels, i);
        if (G_TYPE_CHECK_INSTANCE_TYPE(window, type) && gtk_widget_get_visible(GTK_WIDGET(window)))
            return window;
    }
    return NULL;
}

static gboolean
dialog_shown(gpointer data)
{
    return find_toplevel(EINSORA_TYPE_NEW_WORKLOAD_DIALOG) != NULL;
}

static EinsoraWorkloadItem *
item_named(const char *name)
{
    EinsoraWorkloadList *list = einsora_application_get_workloads(fixture.app);

    for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(list)); i++) {
        g_autoptr(EinsoraWorkloadItem) item = g_list_model_get_item(G_LIST_MODEL(list), i);
        if (g_strcmp0(einsora_workload_item_get_name(item), name) == 0)
            return item;
    }
    return NULL;
}

static EinsoraWorkloadItem *
notebook_item(void)
{
    return item_named(NOTEBOOK_NAME);
}

static gboolean
listed(gpointer name)
{
    return item_named(name) != NULL;
}

static gboolean
models_read(gpointer dialog)
{
    return einsora_new_workload_dialog_has_read_models(dialog);
}

static gboolean
notebook_in_state(gpointer state)
{
    EinsoraWorkloadItem *item = notebook_item();

    return item != NULL && g_strcmp0(einsora_workload_item_get_state(item), state) == 0;
}

static gboolean
notified(gpointer prefix)
{
    for (guint i = 0; i < fixture.notifications->len; i++)
        if (g_str_has_prefix(g_ptr_array_index(fixture.notifications, i), prefix))
            return TRUE;
    return FALSE;
}

/* The person clicks the notification: the server says so on the bus. */
static void
click_notification(const char *prefix)
{
    g_autoptr(GError) error = NULL;

    for (guint i = 0; i < fixture.notifications->len; i++)
        if (g_str_has_prefix(g_ptr_array_index(fixture.notifications, i), prefix)) {
            g_dbus_connection_emit_signal(
                fixture.bus, NULL, "/org/freedesktop/Notifications",
                "org.freedesktop.Notifications", "ActionInvoked",
                g_variant_new("(us)", g_array_index(fixture.notification_ids, guint32, i),
                              "default"),
                &error);
            g_assert_no_error(error);
            return;
        }
    g_assert_not_reached();
}

static gboolean
dialog_error_shown(gpointer dialog)
{
    return einsora_new_workload_dialog_get_error(dialog) != NULL;
}

static gboolean
page_has_events(gpointer data)
{
    EinsoraWorkloadPage *page = einsora_window_get_workload_page(main_window());

    return einsora_workload_page_get_n_events(page) >= GPOINTER_TO_UINT(data);
}

static gboolean
page_log_has(gpointer needle)
{
    EinsoraWorkloadPage *page = einsora_window_get_workload_page(main_window());
    g_autofree gchar *text = einsora_workload_page_get_log_text(page);

    return strstr(text, needle) != NULL;
}

static gboolean
notebook_window_shown(gpointer data)
{
    return find_toplevel(EINSORA_TYPE_NOTEBOOK_WINDOW) != NULL;
}

/* Jupyter's own page, through the access proxy: its file browser. */
static gboolean
notebook_ui_loaded(gpointer view)
{
    const char *uri = webkit_web_view_get_uri(view);
    const char *title = webkit_web_view_get_title(view);

    return !webkit_web_view_is_loading(view) && uri != NULL && strstr(uri, "/tree") != NULL &&
           title != NULL && strstr(title, "Home") != NULL;
}

static gboolean
on_open_in_browser(EinsoraApplication *app, const char *url, gchar **seen)
{
    g_free(*seen);
    *seen = g_strdup(url);
    return TRUE; /* opened: no browser is started */
}

static gboolean
file_written(gpointer path)
{
    GStatBuf buf;

    return g_stat(path, &buf) == 0 && buf.st_size > 0;
}

static gboolean
string_set(gpointer pointer)
{
    return *(gchar **)pointer != NULL;
}

/* ---- screenshots ------------------------------------------------------- */

/* The real CLI's output as a terminal would show it: the command line,
 * then what it printed, in a window of its own, for a screenshot. */
static void
save_terminal_screenshot(const char *command_line, const char *output, const char *name)
{
    GtkWidget *window = gtk_window_new();
    GtkWidget *view = gtk_text_view_new();
    g_autofree gchar *text = g_strdup_printf("$ %s\n%s", command_line, output);
    g_autoptr(GtkCssProvider) css = gtk_css_provider_new();

    gtk_css_provider_load_from_data(
        css, "textview.terminal, textview.terminal text { background: #1e1e1e; color: #e8e8e8; }",
        -1);
    gtk_style_context_add_provider_for_display(gdk_display_get_default(), GTK_STYLE_PROVIDER(css),
                                               GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
    gtk_widget_add_css_class(view, "terminal");
    gtk_text_view_set_monospace(GTK_TEXT_VIEW(view), TRUE);
    gtk_text_view_set_editable(GTK_TEXT_VIEW(view), FALSE);
    gtk_text_view_set_wrap_mode(GTK_TEXT_VIEW(view), GTK_WRAP_CHAR);
    gtk_text_view_set_left_margin(GTK_TEXT_VIEW(view), 8);
    gtk_text_view_set_top_margin(GTK_TEXT_VIEW(view), 8);
    gtk_text_buffer_set_text(gtk_text_view_get_buffer(GTK_TEXT_VIEW(view)), text, -1);
    gtk_window_set_title(GTK_WINDOW(window), "Terminal");
    gtk_window_set_default_size(GTK_WINDOW(window), 900, 420);
    gtk_window_set_child(GTK_WINDOW(window), view);
    gtk_window_present(GTK_WINDOW(window));
    einsora_test_save_screenshot(view, fixture.artifacts, name);
    gtk_window_destroy(GTK_WINDOW(window));
}

static gchar *
read_or_empty(const char *path)
{
    gchar *text = NULL;
    return g_file_get_contents(path, &text, NULL, NULL) ? text : g_strdup("");
}

static gboolean
file_has(gpointer data)
{
    const char *const *pair = data;
    g_autofree gchar *text = read_or_empty(pair[0]);
    return strstr(text, pair[1]) != NULL;
}

/* ---- the tests ------------------------------------------------------- */

/* Once for the run, whichever test comes first (-p runs one alone). */
static void
start_app(void)
{
    g_autoptr(GError) error = NULL;

    if (g_application_get_is_registered(G_APPLICATION(fixture.app)))
        return;
    g_assert_true(g_application_register(G_APPLICATION(fixture.app), NULL, &error));
    g_assert_no_error(error);
    g_application_activate(G_APPLICATION(fixture.app));
    /* The app started the daemon itself (nothing answered) and listed. */
    g_assert_true(einsora_test_wait_for(app_ready, NULL, 120));
    g_assert_nonnull(main_window());
}

/* The API as a script would call it, with the app's own token. */
static JsonNode *
call(const char *method, const char *path, const char *body)
{
    EinsoraConnection *connection = einsora_application_get_connection(fixture.app);
    g_autoptr(EinsoraClient) client = einsora_client_new(einsora_connection_get_server(connection),
                                                         einsora_connection_get_token(connection));
    g_autoptr(JsonNode) node = body != NULL ? json_from_string(body, NULL) : NULL;
    g_autoptr(GError) error = NULL;
    JsonNode *answer = einsora_client_request(client, method, path, node, NULL, NULL, &error);

    g_assert_no_error(error);
    return answer;
}

static GtkWidget *
dialog_child(EinsoraNewWorkloadDialog *dialog, const char *name)
{
    GtkWidget *child = (GtkWidget *)gtk_widget_get_template_child(
        GTK_WIDGET(dialog), EINSORA_TYPE_NEW_WORKLOAD_DIALOG, name);

    g_assert_nonnull(child);
    return child;
}

/* The dialog as the app opens it, kind Endpoint chosen and the model
 * store read. */
static EinsoraNewWorkloadDialog *
open_endpoint_dialog(void)
{
    EinsoraNewWorkloadDialog *dialog;

    g_action_group_activate_action(G_ACTION_GROUP(fixture.app), "new-workload", NULL);
    g_assert_true(einsora_test_wait_for(dialog_shown, NULL, 30));
    dialog = find_toplevel(EINSORA_TYPE_NEW_WORKLOAD_DIALOG);
    g_assert_true(einsora_new_workload_dialog_select(dialog, "kind", "endpoint"));
    g_assert_true(einsora_test_wait_for(models_read, dialog, 30));
    /* A model instead of an image: the server picks the class's. */
    g_assert_true(gtk_widget_get_visible(dialog_child(dialog, "model_row")));
    g_assert_false(gtk_widget_get_visible(dialog_child(dialog, "image_row")));
    return dialog;
}

static gboolean
dialog_gone(gpointer data)
{
    return !dialog_shown(NULL);
}

/* Imports @path into the store as @name and waits for its end. */
static void
import_model(const char *name, const char *path)
{
    g_autofree gchar *body = g_strdup_printf("{\"name\": \"%s\", \"source\": \"%s\"}", name, path);
    g_autoptr(JsonNode) imported = call("POST", "/v1/model-store", body);
    JsonObject *object = json_node_get_object(imported);
    g_autofree gchar *watch =
        g_strdup_printf("/v1/model-store/imports/%s", json_object_get_string_member(object, "id"));
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    while (g_strcmp0(json_object_get_string_member(object, "state"), "importing") == 0) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        einsora_test_settle(20);
        g_clear_pointer(&imported, json_node_unref);
        imported = call("GET", watch, NULL);
        object = json_node_get_object(imported);
    }
    g_assert_cmpstr(json_object_get_string_member(object, "state"), ==, "done");
}

static void
test_endpoint_through_the_dialog(void)
{
    EinsoraNewWorkloadDialog *dialog;
    g_autofree gchar *model = NULL;
    g_autoptr(JsonNode) store = NULL;
    g_autoptr(JsonNode) workload = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *size = NULL;
    JsonArray *models;
    JsonObject *object;

    start_app();

    /* No model in the store: the dialog says how to add one, and Create
     * stays off. */
    dialog = open_endpoint_dialog();
    {
        g_auto(GStrv) names = einsora_new_workload_dialog_get_choices(dialog, "model");
        g_auto(GStrv) classes = einsora_new_workload_dialog_get_choices(dialog, "class");

        g_assert_cmpuint(g_strv_length(names), ==, 0);
        /* Only classes an endpoint image runs on: llama-cpp on CPU, none
         * on AMD's. */
        g_assert_true(g_strv_contains((const char *const *)classes, "cpu-2c-4g"));
        g_assert_false(g_strv_contains((const char *const *)classes, "amd-mi300x-192gb"));
    }
    g_assert_cmpstr(einsora_new_workload_dialog_get_model_text(dialog), ==,
                    "No models yet: add one with einsora models add NAME PATH");
    g_assert_cmpstr(adw_action_row_get_subtitle(ADW_ACTION_ROW(dialog_child(dialog, "model_row"))),
                    ==, "No models yet: add one with einsora models add NAME PATH");
    g_assert_false(gtk_widget_is_sensitive(dialog_child(dialog, "create_button")));
    einsora_test_save_screenshot(GTK_WIDGET(dialog), fixture.artifacts,
                                 "new-workload-dialog-no-models.png");
    gtk_window_close(GTK_WINDOW(dialog));
    g_assert_true(einsora_test_wait_for(dialog_gone, NULL, 10));

    /* A model in the store (a small valid GGUF: the dialog test needs its
     * record, not a model that answers). */
    model = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "fuzz", "corpus", "gguf",
                             "seed-00", NULL);
    import_model("tiny", model);
    store = call("GET", "/v1/model-store", NULL);
    models = json_object_get_array_member(json_node_get_object(store), "models");
    g_assert_cmpuint(json_array_get_length(models), ==, 1);
    object = json_array_get_object_element(models, 0);
    size = g_format_size((guint64)json_object_get_int_member(object, "size"));

    /* The dialog's list is the store's, each with its size. */
    dialog = open_endpoint_dialog();
    {
        g_auto(GStrv) names = einsora_new_workload_dialog_get_choices(dialog, "model");

        g_assert_cmpuint(g_strv_length(names), ==, 1);
        g_assert_cmpstr(names[0], ==, json_object_get_string_member(object, "name"));
    }
    g_assert_true(einsora_new_workload_dialog_select(dialog, "model", "tiny"));
    g_assert_false(einsora_new_workload_dialog_select(dialog, "model", "not-in-the-store"));
    g_assert_true(einsora_new_workload_dialog_select(dialog, "class", "cpu-2c-4g"));
    g_assert_true(g_str_has_prefix(einsora_new_workload_dialog_get_model_text(dialog), size));
    einsora_new_workload_dialog_set_name(dialog, ENDPOINT_NAME);
    g_assert_true(gtk_widget_is_sensitive(dialog_child(dialog, "create_button")));
    einsora_test_save_screenshot(GTK_WIDGET(dialog), fixture.artifacts,
                                 "new-workload-dialog-endpoint.png");

    /* Create: an endpoint of that model, on the image the server chose. */
    g_assert_true(gtk_widget_activate(dialog_child(dialog, "create_button")));
    g_assert_true(einsora_test_wait_for(listed, ENDPOINT_NAME, 30));
    g_assert_true(einsora_test_wait_for(dialog_gone, NULL, 10));
    path = g_strdup_printf("/v1/workloads/%s",
                           einsora_workload_item_get_id(item_named(ENDPOINT_NAME)));
    workload = call("GET", path, NULL);
    object = json_node_get_object(workload);
    g_assert_cmpstr(json_object_get_string_member(object, "kind"), ==, "endpoint");
    g_assert_cmpstr(json_object_get_string_member(object, "model"), ==, "tiny");
    g_assert_cmpstr(json_object_get_string_member(object, "image"), ==, "llama-cpp");
    g_assert_cmpstr(json_object_get_string_member(object, "gpu_class"), ==, "cpu-2c-4g");
    g_assert_true(einsora_workload_item_is_endpoint(item_named(ENDPOINT_NAME)));
}

static void
test_notebook_through_the_ui(void)
{
    EinsoraWindow *window;
    EinsoraNewWorkloadDialog *dialog;
    GtkWidget *create_button;
    EinsoraWorkloadPage *page;
    EinsoraWorkloadItem *item;
    g_autofree gchar *cli_out = NULL;
    g_autoptr(GSubprocess) logs_cli = NULL;

    start_app();
    window = main_window();

    /* The new-workload dialog, from the catalog, as a person fills it. */
    g_action_group_activate_action(G_ACTION_GROUP(fixture.app), "new-workload", NULL);
    g_assert_true(einsora_test_wait_for(dialog_shown, NULL, 30));
    dialog = find_toplevel(EINSORA_TYPE_NEW_WORKLOAD_DIALOG);
    g_assert_true(einsora_new_workload_dialog_select(dialog, "kind", "notebook"));
    g_assert_true(einsora_new_workload_dialog_select(dialog, "class", "cpu-1c-2g"));
    g_assert_true(einsora_new_workload_dialog_select(dialog, "image", "jupyter-linux"));
    /* An image of another kind isn't offered for a notebook. */
    g_assert_false(einsora_new_workload_dialog_select(dialog, "image", "vllm"));
    /* One no machine here can run (docker: no Engine here) is marked
     * (linux-native may not be offered yet when the catalog was read,
     * so jupyter-linux's mark isn't checked). */
    g_assert_true(einsora_new_workload_dialog_select(dialog, "image", "jupyter-notebook"));
    g_assert_cmpstr(adw_action_row_get_subtitle(ADW_ACTION_ROW(dialog_child(dialog, "image_row"))),
                    ==,
                    "No machine here can run it now (it runs on docker, macos-native, "
                    "macos-container): it will wait until one can");
    g_assert_true(einsora_new_workload_dialog_select(dialog, "image", "jupyter-linux"));
    g_assert_cmpstr(einsora_new_workload_dialog_get_quota_text(dialog), ==,
                    "This class uses no GPU quota");
    einsora_new_workload_dialog_set_name(dialog, NOTEBOOK_NAME);
    einsora_test_save_screenshot(GTK_WIDGET(dialog), fixture.artifacts, "new-workload-dialog.png");
    create_button = (GtkWidget *)gtk_widget_get_template_child(
        GTK_WIDGET(dialog), EINSORA_TYPE_NEW_WORKLOAD_DIALOG, "create_button");
    g_assert_nonnull(create_button);
    /* A request the API refuses: its own message, in the dialog. */
    {
        g_autofree gchar *long_name = g_strnfill(150, 'x');
        einsora_new_workload_dialog_set_name(dialog, long_name);
        g_assert_true(gtk_widget_activate(create_button));
        g_assert_true(einsora_test_wait_for(dialog_error_shown, dialog, 30));
        g_test_message("refused: %s", einsora_new_workload_dialog_get_error(dialog));
        g_assert_nonnull(strstr(einsora_new_workload_dialog_get_error(dialog), "name"));
        g_assert_true(dialog_shown(NULL));
        g_assert_null(notebook_item());
    }
    einsora_new_workload_dialog_set_name(dialog, NOTEBOOK_NAME);
    g_assert_true(gtk_widget_activate(create_button));

    /* It reaches running in the list, through the event feed alone. */
    g_assert_true(einsora_test_wait_for(notebook_in_state, "running", 120));
    g_assert_false(dialog_shown(NULL));
    /* A notification said so, on the session bus. */
    g_assert_true(einsora_test_wait_for(notified, NOTEBOOK_NAME " is running|", 30));
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "main-window.png");

    /* Clicking that notification opens the notebook. */
    click_notification(NOTEBOOK_NAME " is running|");
    g_assert_true(einsora_test_wait_for(notebook_window_shown, NULL, 30));
    g_assert_cmpstr(
        einsora_notebook_window_get_workload_id(find_toplevel(EINSORA_TYPE_NOTEBOOK_WINDOW)), ==,
        einsora_workload_item_get_id(notebook_item()));
    gtk_window_destroy(GTK_WINDOW(find_toplevel(EINSORA_TYPE_NOTEBOOK_WINDOW)));

    /* Its page: properties and the whole timeline. */
    item = notebook_item();
    g_action_group_activate_action(G_ACTION_GROUP(fixture.app), "show-workload",
                                   g_variant_new_string(einsora_workload_item_get_id(item)));
    page = einsora_window_get_workload_page(window);
    g_assert_true(einsora_workload_page_get_item(page) == item);
    /* created, admitted (provisioning), running at least */
    g_assert_true(einsora_test_wait_for(page_has_events, GUINT_TO_POINTER(3), 30));
    /* Its Logs: the real Jupyter's start-up lines, followed while open. */
    g_assert_true(einsora_test_wait_for(page_log_has, "Jupyter Notebook", 30));
    g_assert_true(einsora_test_wait_for(page_log_has, "is running at", 30));
    einsora_test_settle(5500); /* the "Created" toast goes (libadwaita's 5 s) */
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "workload-page.png");

    /* Open: the notebook's UI in a WebKit window, through the proxy. */
    gtk_widget_activate_action(GTK_WIDGET(page), "page.open", NULL);
    g_assert_true(einsora_test_wait_for(notebook_window_shown, NULL, 30));
    {
        EinsoraNotebookWindow *notebook = find_toplevel(EINSORA_TYPE_NOTEBOOK_WINDOW);
        WebKitWebView *view = einsora_notebook_window_get_web_view(notebook);
        g_autofree gchar *host =
            g_strdup_printf("w-%s.localhost", einsora_workload_item_get_id(item));
        g_autofree gchar *browser_url = NULL;
        gulong handler;

        g_assert_cmpstr(einsora_notebook_window_get_workload_id(notebook), ==,
                        einsora_workload_item_get_id(item));
        g_assert_true(einsora_test_wait_for(notebook_ui_loaded, view, 90));
        /* At the workload's own site; the one-time ticket is spent and gone. */
        g_assert_nonnull(strstr(webkit_web_view_get_uri(view), host));
        g_assert_null(strstr(webkit_web_view_get_uri(view), "ticket="));
        einsora_test_settle(2000); /* the web process paints on its own time */
        einsora_test_save_screenshot(GTK_WIDGET(notebook), fixture.artifacts,
                                     "notebook-window.png");

        /* Open in Browser: a fresh one-time link, to the user's browser. */
        handler = g_signal_connect(fixture.app, "open-in-browser", G_CALLBACK(on_open_in_browser),
                                   &browser_url);
        gtk_widget_activate_action(GTK_WIDGET(page), "page.open-in-browser", NULL);
        g_assert_true(einsora_test_wait_for(string_set, &browser_url, 30));
        g_signal_handler_disconnect(fixture.app, handler);
        g_assert_true(g_str_has_prefix(browser_url, "http://"));
        g_assert_nonnull(strstr(browser_url, host));
        g_assert_nonnull(strstr(browser_url, "/_einsora/open?ticket=tkt_"));
        gtk_window_destroy(GTK_WINDOW(notebook));
    }

    /* No token reaches the view. */
    {
        g_autofree gchar *text = einsora_workload_page_get_log_text(page);
        g_assert_null(strstr(text, "token="));
        g_assert_null(strstr(text, "ticket="));
    }
    /* `einsora logs -f` follows the same output from a terminal. */
    cli_out = g_build_filename(fixture.dir, "cli-logs.txt", NULL);
    {
        g_autoptr(GSubprocessLauncher) launcher =
            g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        g_autoptr(GError) error = NULL;
        const char *id = einsora_workload_item_get_id(item);
        g_autofree gchar *command_line = g_strdup_printf("einsora logs -f --tail 12 %s", id);
        const char *pair[] = {cli_out, "is running at"};
        g_autofree gchar *printed = NULL;

        g_subprocess_launcher_set_stdout_file_path(launcher, cli_out);
        logs_cli = g_subprocess_launcher_spawn(launcher, &error, g_getenv("EINSORA_CLI"), "logs",
                                               "-f", "--tail", "12", id, NULL);
        g_assert_no_error(error);
        g_assert_true(einsora_test_wait_for(file_has, pair, 30));
        printed = read_or_empty(cli_out);
        save_terminal_screenshot(command_line, printed, "cli-logs-follow.png");
    }

    /* Stop from the page: the timeline grows as it stops. */
    {
        guint before = einsora_workload_page_get_n_events(page);
        gtk_widget_activate_action(GTK_WIDGET(page), "page.stop", NULL);
        g_assert_true(einsora_test_wait_for(notebook_in_state, "stopped", 60));
        g_assert_true(einsora_test_wait_for(page_has_events, GUINT_TO_POINTER(before + 2), 30));
    }
    /* Its attempt is over, and so is `einsora logs -f`, with success. */
    {
        g_autoptr(GError) error = NULL;
        g_assert_true(g_subprocess_wait(logs_cli, NULL, &error));
        g_assert_no_error(error);
        g_assert_true(g_subprocess_get_if_exited(logs_cli));
        g_assert_cmpint(g_subprocess_get_exit_status(logs_cli), ==, 0);
    }
    /* Asked to stop: no "stopped by itself" notification. */
    g_assert_false(notified(NOTEBOOK_NAME " stopped by itself"));

    /* Export: the API's export, byte for byte, into the chosen file. */
    {
        g_autofree gchar *path = g_build_filename(fixture.dir, "exported.json", NULL);
        g_autofree gchar *contents = NULL;

        g_action_group_activate_action(
            G_ACTION_GROUP(fixture.app), "export-workload",
            g_variant_new("(ss)", einsora_workload_item_get_id(item), path));
        g_assert_true(einsora_test_wait_for(file_written, path, 30));
        g_assert_true(g_file_get_contents(path, &contents, NULL, NULL));
        g_assert_nonnull(strstr(contents, einsora_workload_item_get_id(item)));
        g_assert_nonnull(strstr(contents, "\"events\""));
    }

    /* A notebook with a three-second idle limit, through the API: once
     * it runs and nothing uses it, it is stopped and the app says so. */
    {
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonNode) body = json_from_string(
            "{\"kind\": \"notebook\", \"name\": \"ui-idle\", \"gpu_class\": \"cpu-1c-2g\", "
            "\"image\": \"jupyter-linux\", \"idle_timeout\": 3}",
            &error);
        g_autoptr(JsonNode) created =
            einsora_client_request(einsora_application_get_client(fixture.app), "POST",
                                   "/v1/workloads", body, NULL, NULL, &error);

        g_assert_no_error(error);
        g_assert_nonnull(created);
        g_assert_true(einsora_test_wait_for(notified, "ui-idle is running|", 120));
        g_assert_true(
            einsora_test_wait_for(notified,
                                  "ui-idle was stopped after 3s idle|stopped after 3s idle: no "
                                  "activity since ",
                                  60));
    }
}

/* ---- usage ---------------------------------------------------------- */

#define TRAIN_ID "0190b5d2-7c4e-7abc-8def-00000ee00001"
#define SWEEP_ID "0190b5d2-7c4e-7abc-8def-00000ee00002"
#define ANALYSIS_ID "0190b5d2-7c4e-7abc-8def-00000ee00003"

typedef struct {
    EinsoraUsageView *view;
    gchar *busy_day;  /* three days ago: 3.5 h + 1 h of two classes */
    gchar *quiet_day; /* yesterday: 1.25 h */
    gint64 asked_us;
} UsageWait;

/* A step of a history on @day: "running 2026-12-01T09:01:00.000000Z". */
static gchar *
step(const char *state, GDateTime *day, int hour, int minute)
{
    g_autoptr(GDateTime) time = g_date_time_add_full(day, 0, 0, 0, hour, minute, 0);
    g_autofree gchar *text = g_date_time_format(time, "%Y-%m-%dT%H:%M:%S.000000Z");

    return g_strdup_printf("%s %s", state, text);
}

/* Three workloads' pasts, each run once and deleted since. */
static void
insert_usage_history(const char *tenant_id, GDateTime *busy, GDateTime *quiet)
{
    g_autofree gchar *data_dir = g_build_filename(fixture.dir, "data", NULL);
    struct {
        const char *id, *name, *gpu_class;
        GDateTime *day;
        int from_hour, from_minute, to_hour, to_minute;
    } runs[] = {
        {TRAIN_ID, "ui-train", "cpu-2c-4g", busy, 9, 1, 12, 31},
        {SWEEP_ID, "ui-sweep", "cpu-1c-2g", busy, 20, 1, 21, 1},
        {ANALYSIS_ID, "ui-analysis", "cpu-2c-4g", quiet, 13, 1, 14, 16},
    };

    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree gchar *pending =
            step("pending", runs[i].day, runs[i].from_hour, runs[i].from_minute - 1);
        g_autofree gchar *provisioning =
            step("provisioning", runs[i].day, runs[i].from_hour, runs[i].from_minute - 1);
        g_autofree gchar *running =
            step("running", runs[i].day, runs[i].from_hour, runs[i].from_minute);
        g_autofree gchar *deleting =
            step("deleting", runs[i].day, runs[i].to_hour, runs[i].to_minute);
        g_autofree gchar *deleted =
            step("deleted", runs[i].day, runs[i].to_hour, runs[i].to_minute + 1);
        const char *const steps[] = {pending, provisioning, running, deleting, deleted, NULL};

        einsora_test_insert_history(data_dir, NULL, tenant_id, runs[i].id, runs[i].name,
                                    runs[i].gpu_class, steps);
    }
}

/* Metering runs every second here; the view reads again every 500 ms
 * while the test waits (the window itself does every minute). */
static gboolean
usage_shown(gpointer data)
{
    UsageWait *wait = data;
    EinsoraUsageChart *chart = einsora_usage_view_get_chart(wait->view);

    if (g_get_monotonic_time() - wait->asked_us > 500 * 1000) {
        wait->asked_us = g_get_monotonic_time();
        g_action_group_activate_action(G_ACTION_GROUP(fixture.app), "load-usage", NULL);
    }
    return einsora_usage_chart_get_n_days(chart) == EINSORA_USAGE_VIEW_DAYS &&
           einsora_usage_chart_get_day_total(chart, wait->busy_day) == 4.5 &&
           einsora_usage_chart_get_day_total(chart, wait->quiet_day) == 1.25 &&
           einsora_usage_view_get_n_workloads(wait->view) >= 3;
}

static void
on_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
    JsonNode **answer = user_data;
    g_autoptr(GError) error = NULL;

    *answer = einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    g_assert_no_error(error);
}

static gboolean
node_set(gpointer data)
{
    return *(JsonNode **)data != NULL;
}

/* The usage chart's axis: round steps in a unit that suits the busiest
 * day, and room for its widest label (a fixed width cut "0,00375 h"). */
static void
test_usage_chart_axis(void)
{
    static const struct {
        double hours;
        const char *labels;
    } cases[] = {
        {4.5, "0 h|2 h|4 h|6 h"},          {4.0, "0 h|1 h|2 h|3 h|4 h"},
        {1250, "0 h|500 h|1000 h|1500 h"}, {0.5, "0 min|10 min|20 min|30 min"},
        {9.0 / 3600, "0 s|5 s|10 s"},      {1.0 / 3600, "0 s|1 s"},
    };
    GtkWidget *window = gtk_window_new();
    EinsoraUsageChart *chart = EINSORA_USAGE_CHART(einsora_usage_chart_new());

    gtk_window_set_child(GTK_WINDOW(window), GTK_WIDGET(chart));
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(GStrv) labels = NULL;
        g_autofree gchar *joined = NULL;

        einsora_usage_chart_clear(chart);
        einsora_usage_chart_add(chart, "2026-12-01", "cpu-1c-2g", cases[i].hours / 2);
        einsora_usage_chart_add(chart, "2026-12-01", "gpu-1x", cases[i].hours / 2);
        einsora_usage_chart_add(chart, "2026-12-02", "cpu-1c-2g", cases[i].hours / 3);
        labels = einsora_usage_chart_dup_axis_labels(chart);
        joined = g_strjoinv("|", labels);
        g_assert_cmpstr(joined, ==, cases[i].labels);
        for (guint l = 0; labels[l] != NULL; l++) {
            PangoLayout *layout = gtk_widget_create_pango_layout(GTK_WIDGET(chart), labels[l]);
            int width = 0;

            pango_layout_get_pixel_size(layout, &width, NULL);
            g_object_unref(layout);
            g_assert_cmpfloat(width, <, einsora_usage_chart_get_axis_width(chart));
        }
    }
    /* Nothing yet, or nothing a number can say: an hour's axis, from 0. */
    einsora_usage_chart_clear(chart);
    einsora_usage_chart_add(chart, "2026-12-01", "cpu-1c-2g", INFINITY);
    einsora_usage_chart_add(chart, "2026-12-01", "cpu-1c-2g", NAN);
    g_assert_cmpfloat(einsora_usage_chart_get_day_total(chart, "2026-12-01"), ==, 0);
    for (guint overflowed = 0; overflowed < 2; overflowed++) {
        g_auto(GStrv) labels = einsora_usage_chart_dup_axis_labels(chart);

        g_assert_cmpuint(g_strv_length(labels), ==, 3);
        g_assert_cmpstr(labels[0], ==, "0 h");
        g_assert_cmpstr(labels[2], ==, "1 h");
        /* Two finite days whose sum isn't. */
        einsora_usage_chart_add(chart, "2026-12-02", "cpu-1c-2g", DBL_MAX);
        einsora_usage_chart_add(chart, "2026-12-02", "gpu-1x", DBL_MAX);
    }
    gtk_window_destroy(GTK_WINDOW(window));
}

/* The Usage view: the last seven days' hours stacked by class, the
 * total and the workloads, from the real daemon's metering of a past
 * written into its store; and `einsora usage` says the same. */
static void
test_usage_view(void)
{
    EinsoraWindow *window = main_window();
    EinsoraClient *client = einsora_application_get_client(fixture.app);
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) me = NULL;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autoptr(GDateTime) today =
        g_date_time_new_utc(g_date_time_get_year(now), g_date_time_get_month(now),
                            g_date_time_get_day_of_month(now), 0, 0, 0);
    g_autoptr(GDateTime) busy = g_date_time_add_days(today, -3);
    g_autoptr(GDateTime) quiet = g_date_time_add_days(today, -1);
    UsageWait wait = {0};
    g_autofree gchar *cli_out = g_build_filename(fixture.dir, "cli-usage.txt", NULL);
    g_autofree gchar *printed = NULL;

    /* Asked as the app asks (a blocking call would wait behind its
     * streams for a connection). */
    einsora_client_request_async(client, "GET", "/v1/me", NULL, NULL, NULL, on_answer, &me);
    g_assert_true(einsora_test_wait_for(node_set, &me, 30));
    g_assert_nonnull(window);
    insert_usage_history(json_object_get_string_member(json_node_get_object(me), "tenant_id"), busy,
                         quiet);
    wait.view = einsora_window_get_usage_view(window);
    wait.busy_day = g_date_time_format(busy, "%Y-%m-%d");
    wait.quiet_day = g_date_time_format(quiet, "%Y-%m-%d");
    einsora_window_show_usage(window);
    g_assert_true(einsora_test_wait_for(usage_shown, &wait, 60));
    g_test_message("usage: %s", einsora_usage_view_get_summary(wait.view));
    g_assert_nonnull(strstr(einsora_usage_view_get_summary(wait.view), "hours"));
    einsora_test_settle(5500); /* the last test's toast goes (libadwaita's 5 s) */
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "usage-view.png");

    /* The CLI's table of the same records. */
    {
        g_autoptr(GSubprocessLauncher) launcher =
            g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        g_autoptr(GSubprocess) cli = NULL;

        g_subprocess_launcher_set_stdout_file_path(launcher, cli_out);
        cli = g_subprocess_launcher_spawn(launcher, &error, g_getenv("EINSORA_CLI"), "usage",
                                          "--by", "workload", NULL);
        g_assert_no_error(error);
        g_assert_true(g_subprocess_wait_check(cli, NULL, &error));
        g_assert_no_error(error);
        printed = read_or_empty(cli_out);
        g_test_message("einsora usage:\n%s", printed);
        g_assert_nonnull(strstr(printed, "ui-train"));
        g_assert_nonnull(strstr(printed, "3.50"));
        g_assert_nonnull(strstr(printed, "ui-analysis"));
        g_assert_nonnull(strstr(printed, "1.25"));
        save_terminal_screenshot("einsora usage --by workload", printed, "cli-usage.png");
    }
    g_free(wait.busy_day);
    g_free(wait.quiet_day);
}

static void
set_up_daemon_env(void)
{
    guint port = einsora_test_free_port();
    g_autofree gchar *addr = g_strdup_printf("127.0.0.1:%u", port);
    g_autofree gchar *server = g_strdup_printf("http://%s", addr);
    g_autofree gchar *data_dir = g_build_filename(fixture.dir, "data", NULL);
    g_autofree gchar *run_dir = g_build_filename(fixture.dir, "run", NULL);
    g_autofree gchar *state_dir = g_build_filename(fixture.dir, "state", NULL);

    g_setenv("EINSORA_DATA_DIR", data_dir, TRUE);
    g_setenv("EINSORA_AGENT_STATE_DIR", data_dir, TRUE);
    g_setenv("EINSORA_AGENT_RUN_DIR", run_dir, TRUE);
    g_setenv("EINSORA_API_ADDR", addr, TRUE);
    g_setenv("EINSORA_ACCESS_ADDR", "127.0.0.1:0", TRUE);
    g_setenv("EINSORA_SERVER", server, TRUE);
    g_setenv("EINSORA_CONTROLLER_INTERVAL", "1s", TRUE);
    g_setenv("EINSORA_METERING_INTERVAL", "1s", TRUE);
    g_setenv("EINSORA_NO_SYSTEMD", "1", TRUE);
    /* Jupyter's activity read twice a second, not every 30 s. */
    g_setenv("EINSORA_TEST_ACTIVITY_INTERVAL_MS", "500", TRUE);
    g_setenv("XDG_STATE_HOME", state_dir, TRUE);
    g_unsetenv("EINSORA_DRIVERS"); /* the real ones that work here */
    /* Never this machine's own Docker, if it has one. */
    g_setenv("EINSORA_DOCKER_HOST", "unix:///nonexistent/docker.sock", TRUE);
}

static gboolean
toplevel_shown(gpointer type)
{
    return find_toplevel(GPOINTER_TO_SIZE(type)) != NULL;
}

/* The window of @type that @action opens, shown and closed. */
static void
save_window_screenshot(const char *action, GType type, const char *name)
{
    g_action_group_activate_action(G_ACTION_GROUP(fixture.app), action, NULL);
    g_assert_true(einsora_test_wait_for(toplevel_shown, GSIZE_TO_POINTER(type), 30));
    einsora_test_save_screenshot(find_toplevel(type), fixture.artifacts, name);
    gtk_window_destroy(find_toplevel(type));
}

/* The main window in German (tests/run-in-german.sh): this build's
 * catalogs, a notebook running, what the app owns in German (docs/adr/0063)
 * and a screenshot to look at for cut-off labels. */
static void
test_main_window_german(void)
{
    EinsoraWindow *window;
    GtkWidget *count_label;
    AdwViewStack *view_stack;
    GtkDropDown *filter;
    g_autoptr(JsonNode) created = NULL;

    start_app();
    window = main_window();
    created = call("POST", "/v1/workloads",
                   "{\"kind\": \"notebook\", \"name\": \"" NOTEBOOK_NAME "\", "
                   "\"gpu_class\": \"cpu-1c-2g\", \"image\": \"jupyter-linux\"}");
    g_assert_true(einsora_test_wait_for(notebook_in_state, "running", 120));
    /* The notification is the app's own text. */
    g_assert_true(einsora_test_wait_for(notified, NOTEBOOK_NAME " läuft|", 30));

    /* A plural form (ngettext), the view switcher's pages (a template's
     * translatable properties) and the filter's items (a GtkStringList's). */
    count_label = (GtkWidget *)gtk_widget_get_template_child(GTK_WIDGET(window),
                                                             EINSORA_TYPE_WINDOW, "count_label");
    g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(count_label)), ==, "1 Workload");
    view_stack = (AdwViewStack *)gtk_widget_get_template_child(GTK_WIDGET(window),
                                                               EINSORA_TYPE_WINDOW, "view_stack");
    g_assert_cmpstr(adw_view_stack_page_get_title(adw_view_stack_get_page(
                        view_stack, adw_view_stack_get_child_by_name(view_stack, "machines"))),
                    ==, "Rechner");
    g_assert_cmpstr(adw_view_stack_page_get_title(adw_view_stack_get_page(
                        view_stack, adw_view_stack_get_child_by_name(view_stack, "usage"))),
                    ==, "Nutzung");
    filter = (GtkDropDown *)gtk_widget_get_template_child(GTK_WIDGET(window), EINSORA_TYPE_WINDOW,
                                                          "filter_dropdown");
    g_assert_cmpstr(gtk_string_list_get_string(GTK_STRING_LIST(gtk_drop_down_get_model(filter)), 0),
                    ==, "Alle");
    /* Kinds, as the rows, pages and usage show them. */
    g_assert_cmpstr(einsora_format_kind("endpoint"), ==, "Endpunkt");
    g_assert_cmpstr(einsora_format_kind("vm"), ==, "Virtuelle Maschine");
    einsora_test_settle(5500); /* toasts go (libadwaita's 5 s) */
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "main-window-de.png");

    /* The rest of the app in German, to look at for cut-off text. */
    g_action_group_activate_action(
        G_ACTION_GROUP(fixture.app), "show-workload",
        g_variant_new_string(einsora_workload_item_get_id(notebook_item())));
    g_assert_true(einsora_test_wait_for(page_has_events, GUINT_TO_POINTER(3), 30));
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "workload-page-de.png");
    einsora_window_show_list(window);
    einsora_window_show_machines(window);
    einsora_test_settle(1000);
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "machines-de.png");
    einsora_window_show_usage(window);
    einsora_test_settle(1000);
    einsora_test_save_screenshot(GTK_WIDGET(window), fixture.artifacts, "usage-view-de.png");
    g_action_group_activate_action(G_ACTION_GROUP(fixture.app), "new-workload", NULL);
    g_assert_true(einsora_test_wait_for(dialog_shown, NULL, 30));
    {
        EinsoraNewWorkloadDialog *dialog = find_toplevel(EINSORA_TYPE_NEW_WORKLOAD_DIALOG);

        g_assert_true(einsora_new_workload_dialog_select(dialog, "kind", "notebook"));
        einsora_test_save_screenshot(GTK_WIDGET(dialog), fixture.artifacts,
                                     "new-workload-dialog-de.png");
        gtk_window_destroy(GTK_WINDOW(dialog));
    }
    save_window_screenshot("preferences", ADW_TYPE_PREFERENCES_WINDOW, "preferences-de.png");
    save_window_screenshot("connect-server", EINSORA_TYPE_SERVER_DIALOG, "server-dialog-de.png");
}

/* The app leaves its daemon running, as it should: stop it here. */
static void
stop_daemon(void)
{
    EinsoraConnection *connection = einsora_application_get_connection(fixture.app);
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
    const char *artifacts = g_getenv("EINSORA_ARTIFACTS_DIR");
    int status;

    g_test_init(&argc, &argv, NULL);
    if (g_getenv("DISPLAY") == NULL || g_getenv("DBUS_SESSION_BUS_ADDRESS") == NULL) {
        g_test_skip("needs a display and a session bus: run under tests/run-under-xvfb.sh");
        return g_test_run();
    }
    fixture.dir = einsora_test_dir_new();
    fixture.artifacts = artifacts != NULL
                            ? g_strdup(artifacts)
                            : g_build_filename(g_get_current_dir(), "artifacts", NULL);
    g_mkdir_with_parents(fixture.artifacts, 0755);
    fixture.notifications = g_ptr_array_new_with_free_func(g_free);
    fixture.notification_ids = g_array_new(FALSE, FALSE, sizeof(guint32));
    set_up_daemon_env();
    serve_notifications();
    adw_init(); /* setlocale(LC_ALL, "") */
    if (g_getenv("EINSORA_TEST_LOCALEDIR") != NULL) {
        /* As the app's main() does, with this build's catalogs. */
        bindtextdomain(GETTEXT_PACKAGE, g_getenv("EINSORA_TEST_LOCALEDIR"));
        bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
        textdomain(GETTEXT_PACKAGE);
        /* The daemon and Jupyter it starts run in the C locale, as in the
         * English run: only this process is German. */
        g_unsetenv("LC_ALL");
        g_unsetenv("LANGUAGE");
        g_unsetenv("LOCPATH");
    }
    fixture.app = einsora_application_new();
    g_test_add_func("/app/ui/usage-chart-axis", test_usage_chart_axis);
    g_test_add_func("/app/ui/notebook-through-the-ui", test_notebook_through_the_ui);
    g_test_add_func("/app/ui/endpoint-through-the-dialog", test_endpoint_through_the_dialog);
    g_test_add_func("/app/ui/usage-view", test_usage_view);
    /* Only in German, and alone (meson's einsora-app-german-test). */
    if (g_getenv("EINSORA_TEST_LOCALEDIR") != NULL)
        g_test_add_func("/app/ui/main-window-german", test_main_window_german);
    status = g_test_run();
    stop_daemon();
    g_clear_object(&fixture.app);
    einsora_test_dir_remove(fixture.dir);
    return status;
}
