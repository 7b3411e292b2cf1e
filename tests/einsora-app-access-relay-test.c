/* The desktop app against a daemon whose access proxy speaks TLS, as a
 * Lab's does off loopback (EINSORA_TLS=on gives it TLS on loopback too):
 * the real daemon with the sim driver, the app's connection pinned to its
 * certificate, under Xvfb (tests/run-under-xvfb.sh). Open loads the
 * notebook's link at the app's relay on this machine's loopback
 * (docs/adr/0053), and the proxy's own page comes back through it over
 * TLS (a sim notebook has no server, so the proxy says it isn't running);
 * Open in Browser and an endpoint's base URL go through the same relay,
 * and the chat reaches the proxy through it; when the daemon presents
 * another certificate, the relay carries nothing and the windows say
 * why. */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <signal.h>

#include "einsora-application.h"
#include "einsora-chat-window.h"
#include "einsora-client.h"
#include "einsora-connection.h"
#include "einsora-notebook-window.h"
#include "einsora-test-app-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-tls-identity.h"
#include "einsora-window.h"
#include "einsora-workload-page.h"

static gchar *dir;
static EinsoraTestDaemon *daemon_;
static gchar *fingerprint; /* the daemon's certificate's, pinned for it */
static EinsoraApplication *app;

/* ---- waiting with the main loop turning -------------------------------- */

static gpointer
app_window(GType type)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(app)); l != NULL; l = l->next)
        if (G_TYPE_CHECK_INSTANCE_TYPE(l->data, type))
            return l->data;
    return NULL;
}

static gboolean
notebook_window_shown(gpointer data)
{
    return app_window(EINSORA_TYPE_NOTEBOOK_WINDOW) != NULL;
}

static gboolean
chat_window_shown(gpointer data)
{
    return app_window(EINSORA_TYPE_CHAT_WINDOW) != NULL;
}

static gboolean
in_state(gpointer data)
{
    const char *const *pair = data; /* workload ID, state */
    EinsoraWorkloadItem *item =
        einsora_workload_list_lookup(einsora_application_get_workloads(app), pair[0]);

    return item != NULL && g_strcmp0(einsora_workload_item_get_state(item), pair[1]) == 0;
}

/* The access proxy's page for a notebook that isn't running, loaded. */
static gboolean
proxy_page_loaded(gpointer view)
{
    return !webkit_web_view_is_loading(view) &&
           g_strcmp0(webkit_web_view_get_title(view), "This notebook isn't running") == 0;
}

static gboolean
base_url_shown(gpointer page)
{
    return einsora_workload_page_get_base_url(page) != NULL;
}

static gboolean
chat_failed(gpointer chat)
{
    return !einsora_chat_window_is_answering(chat) && einsora_chat_window_get_error(chat) != NULL;
}

typedef struct {
    GtkWidget *window;
    const char *needle;
} Shown;

static gboolean
text_shown(gpointer data)
{
    Shown *shown = data;

    return einsora_test_shows_text(shown->window, shown->needle);
}

static gboolean
log_has(gpointer needle)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(daemon_);

    return strstr(log, needle) != NULL;
}

/* ---- the daemon, as a script would call it ----------------------------- */

static JsonNode *
call(const char *method, const char *path, const char *body)
{
    g_autoptr(EinsoraClient) client = einsora_client_new(daemon_->uri, daemon_->owner_token);
    g_autoptr(JsonNode) node = body != NULL ? json_from_string(body, NULL) : NULL;
    g_autoptr(GError) error = NULL;
    JsonNode *answer;

    einsora_client_set_pinned_certificate(client, fingerprint);
    answer = einsora_client_request(client, method, path, node, NULL, NULL, &error);
    g_assert_no_error(error);
    return answer;
}

/* A workload made through the API, running as the app's list sees it. */
static gchar *
create_running(const char *body)
{
    g_autoptr(JsonNode) created = call("POST", "/v1/workloads", body);
    gchar *id = g_strdup(json_object_get_string_member(json_node_get_object(created), "id"));
    const char *pair[] = {id, "running"};

    g_assert_true(einsora_test_wait_for(in_state, pair, 90));
    return id;
}

/* Once for the run, whichever test comes first (-p runs one alone). */
static void
start_app(void)
{
    g_autoptr(GError) error = NULL;

    if (g_application_get_is_registered(G_APPLICATION(app)))
        return;
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_activate(G_APPLICATION(app));
    g_assert_true(einsora_test_wait_for(einsora_test_app_ready, app, 60));
    g_assert_nonnull(einsora_test_main_window(app));
    /* This machine's daemon over https: its proxy's TLS is what relays. */
    g_assert_true(g_str_has_prefix(daemon_->uri, "https://127.0.0.1:"));
    g_assert_true(einsora_connection_is_local(einsora_application_get_connection(app)));
}

/* The port a URL names: http://w-<id>.localhost:<port>/... */
static guint
url_port(const char *url, const char *scheme, const char *host)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GUri) uri = g_uri_parse(url, G_URI_FLAGS_ENCODED, &error);

    g_assert_no_error(error);
    g_assert_cmpstr(g_uri_get_scheme(uri), ==, scheme);
    g_assert_cmpstr(g_uri_get_host(uri), ==, host);
    g_assert_cmpint(g_uri_get_port(uri), >, 0);
    return (guint)g_uri_get_port(uri);
}

static guint relay_port; /* the app's relay's, once a notebook opened */
static gchar *notebook_id;

static gboolean
on_open_in_browser(EinsoraApplication *application, const char *url, gchar **seen)
{
    g_free(*seen);
    *seen = g_strdup(url);
    return TRUE; /* opened: no browser is started */
}

/* Open: the window loads the link at the relay, not at the proxy's own
 * port (which speaks TLS, and plain HTTP there gets nothing), and the
 * proxy's page comes back through it. Open in Browser hands the browser
 * a link at the same relay. */
static void
test_notebook_window(void)
{
    EinsoraNotebookWindow *window;
    WebKitWebView *view;
    g_autofree gchar *host = NULL;
    g_autofree gchar *browser_url = NULL;
    g_autofree gchar *prefix = NULL;
    gulong handler;

    start_app();
    notebook_id = create_running("{\"kind\": \"notebook\", \"name\": \"relay-notebook\", "
                                 "\"gpu_class\": \"cpu-1c-2g\", \"image\": \"jupyter-linux\"}");
    host = g_strdup_printf("w-%s.localhost", notebook_id);

    g_action_group_activate_action(G_ACTION_GROUP(app), "open-workload",
                                   g_variant_new_string(notebook_id));
    g_assert_true(einsora_test_wait_for(notebook_window_shown, NULL, 30));
    window = app_window(EINSORA_TYPE_NOTEBOOK_WINDOW);
    view = einsora_notebook_window_get_web_view(window);
    g_assert_nonnull(webkit_web_view_get_uri(view));
    relay_port = url_port(webkit_web_view_get_uri(view), "http", host);
    g_assert_cmpuint(relay_port, !=, daemon_->access_port);
    g_assert_true(einsora_test_wait_for(proxy_page_loaded, view, 60));
    g_assert_cmpuint(url_port(webkit_web_view_get_uri(view), "http", host), ==, relay_port);

    handler =
        g_signal_connect(app, "open-in-browser", G_CALLBACK(on_open_in_browser), &browser_url);
    g_action_group_activate_action(G_ACTION_GROUP(app), "open-in-browser",
                                   g_variant_new_string(notebook_id));
    g_assert_true(einsora_test_wait_for(einsora_test_string_set, &browser_url, 30));
    g_signal_handler_disconnect(app, handler);
    prefix = g_strdup_printf("http://%s:%u/_einsora/open?ticket=tkt_", host, relay_port);
    g_assert_true(g_str_has_prefix(browser_url, prefix));
}

/* An endpoint's base URL, shown on its page and used by its chat, is at
 * the relay too, on 127.0.0.1; the chat's request reaches the proxy
 * through it (a sim endpoint has no server: the proxy says so). */
static void
test_endpoint(void)
{
    g_autofree gchar *seed = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "fuzz",
                                              "corpus", "gguf", "seed-00", NULL);
    g_autofree gchar *import = g_strdup_printf("{\"name\": \"tiny\", \"source\": \"%s\"}", seed);
    g_autoptr(JsonNode) imported = call("POST", "/v1/model-store", import);
    g_autofree gchar *watch = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    EinsoraWorkloadPage *page;
    EinsoraChatWindow *chat;
    const char *base_url;

    start_app();
    watch = g_strdup_printf("/v1/model-store/imports/%s",
                            json_object_get_string_member(json_node_get_object(imported), "id"));
    for (gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;;) {
        g_autoptr(JsonNode) state = call("GET", watch, NULL);
        const char *now = json_object_get_string_member(json_node_get_object(state), "state");

        if (g_strcmp0(now, "importing") != 0) {
            g_assert_cmpstr(now, ==, "done");
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(20 * 1000);
    }
    id = create_running("{\"kind\": \"endpoint\", \"name\": \"relay-endpoint\", "
                        "\"gpu_class\": \"cpu-1c-2g\", \"model\": \"tiny\"}");

    g_action_group_activate_action(G_ACTION_GROUP(app), "show-workload", g_variant_new_string(id));
    page = einsora_window_get_workload_page(einsora_test_main_window(app));
    g_assert_true(einsora_test_wait_for(base_url_shown, page, 30));
    base_url = einsora_workload_page_get_base_url(page);
    g_test_message("base URL: %s", base_url);
    path = g_strdup_printf("/endpoints/%s/v1", id);
    g_assert_true(g_str_has_suffix(base_url, path));
    g_assert_cmpuint(url_port(base_url, "http", "127.0.0.1"), !=, daemon_->access_port);
    if (relay_port != 0)
        g_assert_cmpuint(url_port(base_url, "http", "127.0.0.1"), ==, relay_port);

    gtk_widget_activate_action(GTK_WIDGET(page), "page.chat", NULL);
    g_assert_true(einsora_test_wait_for(chat_window_shown, NULL, 30));
    chat = app_window(EINSORA_TYPE_CHAT_WINDOW);
    g_assert_true(einsora_chat_window_send(chat, "Hello"));
    g_assert_true(einsora_test_wait_for(chat_failed, chat, 60));
    g_test_message("the chat's error: %s", einsora_chat_window_get_error(chat));
    /* The proxy's own refusal, not a TLS error on the way. */
    g_assert_nonnull(strstr(einsora_chat_window_get_error(chat), "no running endpoint"));
    gtk_window_destroy(GTK_WINDOW(chat));
}

/* One request to 127.0.0.1:@port, read until the relay closes it, in a
 * thread: the relay is this process's main loop's. */
static gpointer
knock(gpointer data)
{
    guint port = GPOINTER_TO_UINT(data);
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketConnection) connection = NULL;
    const char request[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    char buffer[1024];
    gssize got;
    gsize total = 0;

    g_socket_client_set_timeout(client, 30);
    connection = g_socket_client_connect_to_host(client, "127.0.0.1", (guint16)port, NULL, NULL);
    if (connection == NULL)
        return GSIZE_TO_POINTER(G_MAXSIZE);
    g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(connection)), request,
                              strlen(request), NULL, NULL, NULL);
    while ((got = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(connection)), buffer,
                                      sizeof buffer, NULL, NULL)) > 0)
        total += (gsize)got;
    return GSIZE_TO_POINTER(total);
}

/* The daemon presents another certificate (SIGHUP reads it): the
 * relay, checking the pin as the API's calls do, carries nothing, and
 * the main window and the notebook's say why. Last: the app's pin no
 * longer holds for this daemon. */
static void
test_changed_certificate(void)
{
    g_autofree gchar *other = g_build_filename(dir, "other-identity", NULL);
    g_autofree gchar *own = g_build_filename(daemon_->data_dir, "tls", NULL);
    const char *const hosts[] = {"127.0.0.1", "localhost", NULL};
    const char *const files[] = {EINSORA_TLS_CERT_FILE, EINSORA_TLS_KEY_FILE};
    g_autoptr(GError) error = NULL;
    GThread *thread;
    Shown in_main = {NULL, "doesn't trust"};
    Shown in_notebook = {NULL, "doesn't trust"};

    if (relay_port == 0)
        test_notebook_window();
    in_main.window = GTK_WIDGET(einsora_test_main_window(app));
    in_notebook.window = app_window(EINSORA_TYPE_NOTEBOOK_WINDOW);
    g_assert_nonnull(in_notebook.window);
    g_assert_false(text_shown(&in_main));

    g_assert_true(einsora_tls_identity_ensure(other, hosts, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
        g_autofree gchar *from = g_build_filename(other, files[i], NULL);
        g_autofree gchar *to = g_build_filename(own, files[i], NULL);
        g_autofree gchar *contents = NULL;
        gsize length = 0;

        g_assert_true(g_file_get_contents(from, &contents, &length, &error));
        g_assert_no_error(error);
        g_assert_true(g_file_set_contents_full(to, contents, (gssize)length,
                                               G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error));
        g_assert_no_error(error);
    }
    g_subprocess_send_signal(daemon_->process, SIGHUP);
    g_assert_true(einsora_test_wait_for(log_has, "SIGHUP: TLS certificate", 30));

    thread = g_thread_new("knock", knock, GUINT_TO_POINTER(relay_port));
    g_assert_true(einsora_test_wait_for(text_shown, &in_main, 30));
    g_assert_true(einsora_test_wait_for(text_shown, &in_notebook, 10));
    /* Nothing came back: the browser's connection was closed. */
    g_assert_cmpuint(GPOINTER_TO_SIZE(g_thread_join(thread)), ==, 0);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    if (g_getenv("DISPLAY") == NULL || g_getenv("DBUS_SESSION_BUS_ADDRESS") == NULL) {
        g_test_skip("needs a display and a session bus: run under tests/run-under-xvfb.sh");
        return g_test_run();
    }
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here (glib-networking)");
        return g_test_run();
    }
    dir = einsora_test_dir_new();
    daemon_ = einsora_test_app_daemon_start(
        dir, (const char *const[]){"EINSORA_CONTROLLER_INTERVAL", "1s", NULL}, &fingerprint);
    app = einsora_application_new();
    g_test_add_func("/app/access-relay/notebook-window", test_notebook_window);
    g_test_add_func("/app/access-relay/endpoint", test_endpoint);
    g_test_add_func("/app/access-relay/changed-certificate", test_changed_certificate);
    status = g_test_run();
    g_clear_object(&app);
    einsora_test_daemon_stop(daemon_);
    einsora_test_daemon_free(daemon_);
    einsora_test_dir_remove(dir);
    g_free(dir);
    g_free(fingerprint);
    g_free(notebook_id);
    return status;
}
