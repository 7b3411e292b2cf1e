/* The notebook window under Xvfb (tests/run-under-xvfb.sh), against a
 * stand-in for the access proxy: a libsoup server on 127.0.0.1 that answers
 * only Host w-<uuid>.localhost:<port>, opens a session for a one-time
 * ticket with a cookie and a page that refreshes to /, refuses everything
 * else without the cookie, and records what it was asked. WebKitGTK
 * resolves *.localhost to loopback itself. Screenshots go to
 * EINSORA_ARTIFACTS_DIR. */
#include <dlfcn.h>
#include <gdk/x11/gdkx.h>
#include <libsoup/soup.h>
#include <locale.h>

#include "einsora-notebook-window.h"
#include "einsora-test-dir.h"

#define WAIT_SECONDS 60
#define COOKIE_NAME "einsora_access"
#define OFF_SITE "http://example.invalid/"
#define DOWNLOAD_BODY "name,value\nanswer,42\nnot-utf8,\xff\xfe\n"

typedef struct {
    gchar *path;
    gchar *cookie; /* the einsora_access value sent, or NULL */
} Request;

static void
request_free(Request *request)
{
    g_free(request->path);
    g_free(request->cookie);
    g_free(request);
}

/* The stand-in for the access proxy. */
typedef struct {
    SoupServer *server;
    gchar *workload_id;
    gchar *host;   /* w-<id>.localhost:<port>, what Host must be */
    gchar *origin; /* http://w-<id>.localhost:<port> */
    GHashTable *tickets;
    guint sessions;
    GPtrArray *requests;
} Proxy;

static Proxy *proxy;
static GtkApplication *app;
static gchar *home_dir;
static gchar *fetched_dir; /* the Downloads folder of user-dirs.dirs */

static const char home_page[] =
    "<!DOCTYPE html><html><head><title>Notebook Home</title></head><body>"
    "<h1>Notebook Home</h1>"
    "<p><a id=\"same\" href=\"/tree\">Files</a></p>"
    "<p><a id=\"offsite\" href=\"" OFF_SITE "\">Off-site</a></p>"
    "<p><a id=\"download\" href=\"/files/data.csv\">data.csv</a></p>"
    "<p><a id=\"newtab\" href=\"/notebooks/one\" target=\"_blank\">A notebook in a new tab</a></p>"
    "<p><a id=\"offsite-newtab\" href=\"" OFF_SITE "tab\" target=\"_blank\">Off-site tab</a></p>"
    /* Jupyter Notebook 6's "New" menu: a window first, its location later. */
    "<p><button id=\"jupyter-new\" onclick=\"var w = window.open(undefined, '_blank'); "
    "setTimeout(function () { w.location = '/notebooks/two'; }, 100);\">New</button></p>"
    "<p><a id=\"jump\" href=\"/jump\">A page that leaves by itself</a></p>"
    "</body></html>";

/* Leaves for another site by itself, with no user gesture, then for a page
 * of its own so the test knows when it is done. */
static const char jump_page[] =
    "<!DOCTYPE html><html><head><title>Jump</title><script>"
    "window.location.href = '" OFF_SITE "gesture-less';"
    "setTimeout(function () { window.location.href = '/after-jump'; }, 300);"
    "</script></head><body>Jumping</body></html>";

static gchar *
cookie_value(const char *header)
{
    g_autoptr(GHashTable) cookies = NULL;
    const char *value;

    if (header == NULL)
        return NULL;
    cookies = soup_header_parse_semi_param_list(header);
    value = g_hash_table_lookup(cookies, COOKIE_NAME);
    return g_strdup(value);
}

static void
respond_html(SoupServerMessage *msg, guint status, const char *title)
{
    g_autofree gchar *page = g_strdup_printf(
        "<!DOCTYPE html><html><head><title>%s</title></head><body><h1>%s</h1></body></html>", title,
        title);

    soup_server_message_set_status(msg, status, NULL);
    soup_server_message_set_response(msg, "text/html; charset=utf-8", SOUP_MEMORY_COPY, page,
                                     strlen(page));
}

static void
respond_static(SoupServerMessage *msg, const char *type, const char *body, gsize length)
{
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, type, SOUP_MEMORY_STATIC, body, length);
}

static void
handle(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
       gpointer user_data)
{
    SoupMessageHeaders *request_headers = soup_server_message_get_request_headers(msg);
    SoupMessageHeaders *response_headers = soup_server_message_get_response_headers(msg);
    const char *host = soup_message_headers_get_one(request_headers, "Host");
    Request *request = g_new0(Request, 1);

    request->path = g_strdup(path);
    request->cookie = cookie_value(soup_message_headers_get_one(request_headers, "Cookie"));
    g_ptr_array_add(proxy->requests, request);
    g_debug("proxy: %s %s cookie %s", soup_server_message_get_method(msg), path,
            request->cookie != NULL ? request->cookie : "-");

    if (g_strcmp0(host, proxy->host) != 0) {
        respond_html(msg, SOUP_STATUS_MISDIRECTED_REQUEST, "Misdirected");
        return;
    }
    if (g_str_equal(path, "/_einsora/open")) {
        const char *ticket = query != NULL ? g_hash_table_lookup(query, "ticket") : NULL;
        g_autofree gchar *set_cookie = NULL;
        static const char opened[] = "<!DOCTYPE html><html><head><title>Opening</title>"
                                     "<meta http-equiv=\"refresh\" content=\"0; url=/\">"
                                     "</head><body>Opening</body></html>";

        if (ticket == NULL || !g_hash_table_remove(proxy->tickets, ticket)) {
            respond_html(msg, SOUP_STATUS_FORBIDDEN, "This link doesn't open anything");
            return;
        }
        set_cookie = g_strdup_printf(COOKIE_NAME "=session-%u; Path=/; HttpOnly; SameSite=Strict",
                                     ++proxy->sessions);
        soup_message_headers_append(response_headers, "Set-Cookie", set_cookie);
        soup_message_headers_replace(response_headers, "Cache-Control", "no-store");
        soup_message_headers_replace(response_headers, "Referrer-Policy", "no-referrer");
        respond_static(msg, "text/html; charset=utf-8", opened, strlen(opened));
        return;
    }
    if (request->cookie == NULL) {
        respond_html(msg, SOUP_STATUS_FORBIDDEN, "No session");
        return;
    }
    if (g_str_equal(path, "/"))
        respond_static(msg, "text/html; charset=utf-8", home_page, strlen(home_page));
    else if (g_str_equal(path, "/jump"))
        respond_static(msg, "text/html; charset=utf-8", jump_page, strlen(jump_page));
    else if (g_str_equal(path, "/tree"))
        respond_html(msg, SOUP_STATUS_OK, "Files");
    else if (g_str_equal(path, "/after-jump"))
        respond_html(msg, SOUP_STATUS_OK, "After the jump");
    else if (g_str_has_prefix(path, "/notebooks/"))
        respond_html(msg, SOUP_STATUS_OK, path + strlen("/notebooks/"));
    else if (g_str_equal(path, "/files/data.csv")) {
        /* A type WebKit could show: only the disposition makes it a file. */
        soup_message_headers_replace(response_headers, "Content-Disposition",
                                     "attachment; filename=\"data.csv\"");
        respond_static(msg, "text/plain", DOWNLOAD_BODY, sizeof(DOWNLOAD_BODY) - 1);
    } else
        respond_html(msg, SOUP_STATUS_NOT_FOUND, "Not found");
}

static Proxy *
proxy_new(void)
{
    Proxy *self = g_new0(Proxy, 1);
    g_autoptr(GError) error = NULL;
    GSList *uris;
    guint port;

    self->server = soup_server_new(NULL, NULL);
    self->tickets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->requests = g_ptr_array_new_with_free_func((GDestroyNotify)request_free);
    soup_server_add_handler(self->server, NULL, handle, NULL, NULL);
    g_assert_true(soup_server_listen_local(self->server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error));
    g_assert_no_error(error);
    uris = soup_server_get_uris(self->server);
    port = g_uri_get_port(uris->data);
    g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
    self->workload_id = g_uuid_string_random();
    self->host = g_strdup_printf("w-%s.localhost:%u", self->workload_id, port);
    self->origin = g_strdup_printf("http://%s", self->host);
    return self;
}

static void
proxy_free(Proxy *self)
{
    soup_server_disconnect(self->server);
    g_object_unref(self->server);
    g_hash_table_unref(self->tickets);
    g_ptr_array_unref(self->requests);
    g_free(self->workload_id);
    g_free(self->host);
    g_free(self->origin);
    g_free(self);
}

/* A one-time link, as POST /v1/workloads/{id}/access answers it. */
static gchar *
proxy_issue_link(void)
{
    gchar *ticket = g_uuid_string_random();

    g_hash_table_add(proxy->tickets, ticket);
    return g_strdup_printf("%s/_einsora/open?ticket=%s", proxy->origin, ticket);
}

/* The first request for @path from @from on; the test fails without one. */
static Request *
proxy_find(const char *path, guint from)
{
    for (guint i = from; i < proxy->requests->len; i++) {
        Request *request = g_ptr_array_index(proxy->requests, i);
        if (g_str_equal(request->path, path))
            return request;
    }
    g_error("the proxy was never asked for %s", path);
}

/* Waiting on the main loop */

static gboolean
on_timeout(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

typedef gboolean (*Condition)(gpointer data);

static void
wait_for(Condition condition, gpointer data, const char *what)
{
    gboolean timed_out = FALSE;
    guint source = g_timeout_add_seconds(WAIT_SECONDS, on_timeout, &timed_out);

    while (!condition(data) && !timed_out)
        g_main_context_iteration(NULL, TRUE);
    if (timed_out)
        g_error("gave up waiting for %s", what);
    g_source_remove(source);
}

static void
spin(guint milliseconds)
{
    gboolean done = FALSE;

    g_timeout_add(milliseconds, on_timeout, &done);
    while (!done)
        g_main_context_iteration(NULL, TRUE);
}

typedef struct {
    WebKitWebView *view;
    gchar *uri;
} PageWait;

static gboolean
page_loaded(gpointer data)
{
    PageWait *wait = data;

    return !webkit_web_view_is_loading(wait->view) &&
           g_strcmp0(webkit_web_view_get_uri(wait->view), wait->uri) == 0;
}

/* Until @view has finished loading @path of the workload's site. */
static void
wait_for_page(WebKitWebView *view, const char *path)
{
    PageWait wait = {view, g_strconcat(proxy->origin, path, NULL)};
    g_autofree gchar *what = g_strdup_printf("%s to load", wait.uri);

    wait_for(page_loaded, &wait, what);
    g_free(wait.uri);
}

static gboolean
flag_set(gpointer data)
{
    return *(gboolean *)data;
}

typedef struct {
    GtkWindow *window;
    const char *title;
} TitleWait;

static gboolean
title_is(gpointer data)
{
    TitleWait *wait = data;

    return g_strcmp0(gtk_window_get_title(wait->window), wait->title) == 0;
}

/* WebKit may tell the title after the load has finished. */
static void
wait_for_title(EinsoraNotebookWindow *window, const char *title)
{
    TitleWait wait = {GTK_WINDOW(window), title};
    g_autofree gchar *what = g_strdup_printf("the title \"%s\"", title);

    wait_for(title_is, &wait, what);
}

static gboolean
array_not_empty(gpointer data)
{
    return ((GPtrArray *)data)->len > 0;
}

/* The workload's page at @path, as WebKit spells it. */
static gchar *
page_uri(const char *path)
{
    return g_strconcat(proxy->origin, path, NULL);
}

static void
on_script_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JSCValue) value =
        webkit_web_view_evaluate_javascript_finish(WEBKIT_WEB_VIEW(source), result, &error);

    g_assert_no_error(error);
    *(gboolean *)user_data = TRUE;
}

/* Clicks from a script the app runs count as the user's (WebKit runs
 * them with a user gesture). */
static void
click(WebKitWebView *view, const char *id)
{
    g_autofree gchar *script = g_strdup_printf("document.getElementById('%s').click();", id);
    gboolean done = FALSE;

    webkit_web_view_evaluate_javascript(view, script, -1, NULL, NULL, NULL, on_script_done, &done);
    wait_for(flag_set, &done, script);
}

/* Windows */

static gboolean
on_open_external(EinsoraNotebookWindow *window, const char *uri, GPtrArray *opened)
{
    g_ptr_array_add(opened, g_strdup(uri));
    return TRUE; /* no browser in a test */
}

/* Every URI a view started to load, provisional ones included. */
static void
on_load_changed(WebKitWebView *view, WebKitLoadEvent event, GPtrArray *started)
{
    if (event == WEBKIT_LOAD_STARTED)
        g_ptr_array_add(started, g_strdup(webkit_web_view_get_uri(view)));
}

static gboolean
any_off_site(GPtrArray *uris)
{
    for (guint i = 0; i < uris->len; i++)
        if (!g_str_has_prefix(g_ptr_array_index(uris, i), proxy->origin))
            return TRUE;
    return FALSE;
}

static EinsoraNotebookWindow *
open_window(void)
{
    g_autofree gchar *link = proxy_issue_link();
    EinsoraNotebookWindow *window =
        einsora_notebook_window_new(app, proxy->workload_id, "analysis", link);

    gtk_window_set_default_size(GTK_WINDOW(window), 1024, 700);
    gtk_window_present(GTK_WINDOW(window));
    return window;
}

static gboolean
no_windows(gpointer data)
{
    return gtk_application_get_windows(app) == NULL;
}

static gboolean
pointer_cleared(gpointer data)
{
    return *(gpointer *)data == NULL;
}

/* Closes every window and checks the one the test opened is freed. */
static void
close_windows(EinsoraNotebookWindow *window)
{
    gpointer weak = window;

    g_object_add_weak_pointer(G_OBJECT(window), &weak);
    while (gtk_application_get_windows(app) != NULL)
        gtk_window_destroy(gtk_application_get_windows(app)->data);
    wait_for(no_windows, NULL, "the windows to go");
    wait_for(pointer_cleared, &weak, "the notebook window to be freed");
}

/* Screenshots */

static gchar *
artifact_path(const char *name)
{
    const char *dir = g_getenv("EINSORA_ARTIFACTS_DIR");
    g_autofree gchar *fallback = NULL;

    if (dir == NULL)
        dir = fallback = g_build_filename(g_get_tmp_dir(), "einsora-test-artifacts", NULL);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    return g_build_filename(dir, name, NULL);
}

static gboolean
count_frame(GtkWidget *widget, GdkFrameClock *clock, gpointer user_data)
{
    guint *frames = user_data;

    (*frames)--;
    return *frames > 0 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean
frames_done(gpointer data)
{
    return *(guint *)data == 0;
}

/* Until @window has drawn what it shows now. */
static void
wait_for_frames(GtkWidget *window, guint frames)
{
    gtk_widget_add_tick_callback(window, count_frame, &frames, NULL);
    gtk_widget_queue_draw(window);
    wait_for(frames_done, &frames, "the window to draw");
}

static void
save_window(GtkWidget *window, const char *name)
{
    g_autofree gchar *path = artifact_path(name);
    g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(window);
    GtkSnapshot *snapshot = gtk_snapshot_new();
    int width, height;
    g_autoptr(GskRenderNode) node = NULL;
    g_autoptr(GdkTexture) texture = NULL;

    wait_for_frames(window, 3);
    width = gtk_widget_get_width(window);
    height = gtk_widget_get_height(window);
    gdk_paintable_snapshot(paintable, snapshot, width, height);
    node = gtk_snapshot_free_to_node(snapshot);
    g_assert_nonnull(node);
    texture = gsk_renderer_render_texture(gtk_native_get_renderer(GTK_NATIVE(window)), node,
                                          &GRAPHENE_RECT_INIT(0, 0, width, height));
    g_assert_true(gdk_texture_save_to_png(texture, path));
    g_test_message("screenshot: %s", path);
}

typedef struct {
    GdkTexture *texture;
    gboolean done;
} Snapshot;

static void
on_snapshot(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Snapshot *snapshot = user_data;
    g_autoptr(GError) error = NULL;

    snapshot->texture =
        webkit_web_view_get_snapshot_finish(WEBKIT_WEB_VIEW(source), result, &error);
    g_assert_no_error(error);
    snapshot->done = TRUE;
}

/* What the page drew, as WebKit renders it. */
static void
save_page(WebKitWebView *view, const char *name)
{
    g_autofree gchar *path = artifact_path(name);
    Snapshot snapshot = {NULL, FALSE};

    webkit_web_view_get_snapshot(view, WEBKIT_SNAPSHOT_REGION_VISIBLE, WEBKIT_SNAPSHOT_OPTIONS_NONE,
                                 NULL, on_snapshot, &snapshot);
    wait_for(flag_set, &snapshot.done, "the page's snapshot");
    g_assert_true(gdk_texture_save_to_png(snapshot.texture, path));
    g_assert_cmpint(gdk_texture_get_width(snapshot.texture), >, 0);
    g_object_unref(snapshot.texture);
    g_test_message("page snapshot: %s", path);
}

/* Tests */

static void
test_opens_link(void)
{
    guint from = proxy->requests->len;
    EinsoraNotebookWindow *window = open_window();
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);
    WebKitNetworkSession *session = webkit_web_view_get_network_session(view);
    Request *open, *home;
    g_autofree gchar *session_cookie = NULL;

    wait_for_page(view, "/");
    session_cookie = g_strdup_printf("session-%u", proxy->sessions);
    open = proxy_find("/_einsora/open", from);
    home = proxy_find("/", from);
    g_assert_null(open->cookie);
    /* The refresh to / carried the session the ticket opened. */
    g_assert_cmpstr(home->cookie, ==, session_cookie);

    /* Its own, ephemeral session and its own web context. */
    g_assert_true(webkit_network_session_is_ephemeral(session));
    g_assert_true(session != webkit_network_session_get_default());
    g_assert_true(webkit_web_view_get_context(view) != webkit_web_context_get_default());
    g_assert_false(webkit_settings_get_enable_developer_extras(webkit_web_view_get_settings(view)));
    g_assert_false(webkit_settings_get_enable_back_forward_navigation_gestures(
        webkit_web_view_get_settings(view)));

    /* The title follows the page's. */
    wait_for_title(window, "Notebook Home");
    g_assert_cmpstr(einsora_notebook_window_get_workload_id(window), ==, proxy->workload_id);
    g_assert_true(gtk_widget_get_mapped(GTK_WIDGET(view)));

    /* Let it paint, then keep what it looks like. */
    spin(500);
    save_page(view, "notebook-window-page.png");
    save_window(GTK_WIDGET(window), "notebook-window.png");
    close_windows(window);
}

static void
test_sessions_apart(void)
{
    EinsoraNotebookWindow *first = open_window();
    WebKitWebView *first_view = einsora_notebook_window_get_web_view(first);
    EinsoraNotebookWindow *second;
    WebKitWebView *second_view;
    Request *first_home, *open, *second_home;
    guint from = proxy->requests->len;

    wait_for_page(first_view, "/");
    first_home = proxy_find("/", from);
    g_assert_nonnull(first_home->cookie);

    from = proxy->requests->len;
    second = open_window();
    second_view = einsora_notebook_window_get_web_view(second);
    wait_for_page(second_view, "/");
    g_assert_true(webkit_web_view_get_network_session(first_view) !=
                  webkit_web_view_get_network_session(second_view));
    /* The second window came with no cookie of the first. */
    open = proxy_find("/_einsora/open", from);
    g_assert_null(open->cookie);
    second_home = proxy_find("/", from);
    g_assert_nonnull(second_home->cookie);
    g_assert_cmpstr(second_home->cookie, !=, first_home->cookie);
    close_windows(second);
}

static void
test_same_origin_link(void)
{
    EinsoraNotebookWindow *window = open_window();
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);

    wait_for_page(view, "/");
    /* The proxy's refresh replaced the ticket's page: going back can't
     * land on a spent link. */
    g_assert_false(webkit_web_view_can_go_back(view));
    click(view, "same");
    wait_for_page(view, "/tree");
    wait_for_title(window, "Files");

    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(window), "win.back", NULL));
    wait_for_page(view, "/");
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(window), "win.forward", NULL));
    wait_for_page(view, "/tree");
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(window), "win.reload", NULL));
    wait_for_page(view, "/tree");
    close_windows(window);
}

static void
test_off_site_link(void)
{
    EinsoraNotebookWindow *window = open_window();
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);
    g_autoptr(GPtrArray) opened = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) started = g_ptr_array_new_with_free_func(g_free);
    g_autofree gchar *home_uri = page_uri("/");
    guint from;

    g_signal_connect(window, "open-external", G_CALLBACK(on_open_external), opened);
    g_signal_connect(view, "load-changed", G_CALLBACK(on_load_changed), started);
    wait_for_page(view, "/");

    /* Clicked: the default browser gets it, the view stays. */
    click(view, "offsite");
    wait_for(array_not_empty, opened, "the off-site link to go to the browser");
    g_assert_cmpuint(opened->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(opened, 0), ==, OFF_SITE);

    /* A new tab off-site: the browser too. */
    click(view, "offsite-newtab");
    while (opened->len < 2)
        g_main_context_iteration(NULL, TRUE);
    g_assert_cmpstr(g_ptr_array_index(opened, 1), ==, OFF_SITE "tab");
    spin(300);
    g_assert_cmpstr(webkit_web_view_get_uri(view), ==, home_uri);
    g_assert_cmpuint(g_list_length(gtk_application_get_windows(app)), ==, 1);

    /* By itself, with no user gesture: dropped, not even to the browser. */
    from = proxy->requests->len;
    click(view, "jump");
    wait_for_page(view, "/after-jump");
    proxy_find("/jump", from);
    g_assert_cmpuint(opened->len, ==, 2);
    g_assert_false(any_off_site(started));
    close_windows(window);
}

static void
on_window_added(GtkApplication *application, GtkWindow *window, GPtrArray *added)
{
    g_ptr_array_add(added, window);
}

static gboolean
has_windows(gpointer data)
{
    GPtrArray *added = data;

    return added->len > 0;
}

static void
test_new_windows(void)
{
    EinsoraNotebookWindow *window = open_window();
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);
    g_autoptr(GPtrArray) added = g_ptr_array_new();
    gulong handler = g_signal_connect(app, "window-added", G_CALLBACK(on_window_added), added);
    EinsoraNotebookWindow *child;
    WebKitWebView *child_view;
    g_autofree gchar *home_uri = page_uri("/");
    Request *home, *page;
    guint from = proxy->requests->len;

    wait_for_page(view, "/");
    home = proxy_find("/", from);

    /* target=_blank: a window of the same workload and session. */
    from = proxy->requests->len;
    click(view, "newtab");
    wait_for(has_windows, added, "a window for the new tab");
    g_assert_true(EINSORA_IS_NOTEBOOK_WINDOW(added->pdata[0]));
    child = added->pdata[0];
    child_view = einsora_notebook_window_get_web_view(child);
    wait_for_page(child_view, "/notebooks/one");
    g_assert_true(webkit_web_view_get_network_session(child_view) ==
                  webkit_web_view_get_network_session(view));
    g_assert_cmpstr(einsora_notebook_window_get_workload_id(child), ==, proxy->workload_id);
    page = proxy_find("/notebooks/one", from);
    g_assert_cmpstr(page->cookie, ==, home->cookie);
    g_assert_true(gtk_widget_get_mapped(GTK_WIDGET(child)));
    /* The first window stays where it was. */
    g_assert_cmpstr(webkit_web_view_get_uri(view), ==, home_uri);

    /* Jupyter's New: window.open() first, the location later. */
    g_ptr_array_set_size(added, 0);
    click(view, "jupyter-new");
    wait_for(has_windows, added, "a window for the new notebook");
    child = added->pdata[0];
    wait_for_page(einsora_notebook_window_get_web_view(child), "/notebooks/two");
    g_assert_true(webkit_web_view_get_network_session(einsora_notebook_window_get_web_view(
                      child)) == webkit_web_view_get_network_session(view));

    g_signal_handler_disconnect(app, handler);
    close_windows(window);
}

typedef struct {
    WebKitDownload *download;
    gboolean finished;
    gboolean failed;
} DownloadWait;

static void
on_download_finished(WebKitDownload *download, DownloadWait *wait)
{
    wait->finished = TRUE;
}

static void
on_download_failed(WebKitDownload *download, GError *error, DownloadWait *wait)
{
    g_test_message("download failed: %s", error->message);
    wait->failed = TRUE;
}

static void
on_download_started(WebKitNetworkSession *session, WebKitDownload *download, DownloadWait *wait)
{
    wait->download = g_object_ref(download);
    g_signal_connect(download, "finished", G_CALLBACK(on_download_finished), wait);
    g_signal_connect(download, "failed", G_CALLBACK(on_download_failed), wait);
}

/* Clicks the download link and answers where the file went. */
static gchar *
download(EinsoraNotebookWindow *window)
{
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);
    DownloadWait wait = {NULL, FALSE, FALSE};
    gulong handler = g_signal_connect(webkit_web_view_get_network_session(view), "download-started",
                                      G_CALLBACK(on_download_started), &wait);
    gchar *destination;

    click(view, "download");
    wait_for(flag_set, &wait.finished, "the download to finish");
    g_assert_false(wait.failed);
    g_signal_handler_disconnect(webkit_web_view_get_network_session(view), handler);
    destination = g_strdup(webkit_download_get_destination(wait.download));
    g_signal_handlers_disconnect_by_data(wait.download, &wait);
    g_object_unref(wait.download);
    return destination;
}

static void
assert_downloaded(const char *path)
{
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    g_autoptr(GError) error = NULL;

    g_assert_true(g_file_get_contents(path, &contents, &length, &error));
    g_assert_no_error(error);
    g_assert_cmpmem(contents, length, DOWNLOAD_BODY, sizeof(DOWNLOAD_BODY) - 1);
}

static void
test_downloads(void)
{
    EinsoraNotebookWindow *window = open_window();
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *first = NULL, *second = NULL, *third = NULL;
    g_autofree gchar *expected = NULL;
    g_autofree gchar *home_uri = page_uri("/");

    wait_for_page(view, "/");
    /* The user's Downloads folder (XDG_DOWNLOAD_DIR) when none is set. */
    g_assert_null(einsora_notebook_window_get_download_dir(window));
    first = download(window);
    expected = g_build_filename(fetched_dir, "data.csv", NULL);
    g_assert_cmpstr(first, ==, expected);
    assert_downloaded(first);

    g_object_set(window, "download-dir", dir, NULL);
    second = download(window);
    g_free(expected);
    expected = g_build_filename(dir, "data.csv", NULL);
    g_assert_cmpstr(second, ==, expected);
    assert_downloaded(second);

    /* Never over a file that is there: a name of its own. */
    third = download(window);
    g_free(expected);
    expected = g_build_filename(dir, "data (1).csv", NULL);
    g_assert_cmpstr(third, ==, expected);
    assert_downloaded(third);
    assert_downloaded(second);

    /* The view stays on its page. */
    g_assert_cmpstr(webkit_web_view_get_uri(view), ==, home_uri);
    g_assert_true(gtk_widget_get_mapped(GTK_WIDGET(view)));
    close_windows(window);
    einsora_test_dir_remove(dir);
}

static void
on_open_in_browser(EinsoraNotebookWindow *window, guint *count)
{
    (*count)++;
}

/* Real key presses, through the X server (XTest), so GTK's own event
 * handling decides who gets them. Looked up at run time: libXtst has no
 * -dev package on the build machines. */
typedef int (*FakeKeyEventFunc)(Display *display, unsigned int keycode, Bool is_press,
                                unsigned long delay);
typedef KeyCode (*KeysymToKeycodeFunc)(Display *display, KeySym keysym);
typedef int (*FlushFunc)(Display *display);

static gboolean
press_keys(GtkWidget *widget, const KeySym *keysyms, guint n_keysyms)
{
    static void *xtst, *xlib;
    GdkDisplay *display = gtk_widget_get_display(widget);
    Display *xdisplay;
    FakeKeyEventFunc fake_key;
    KeysymToKeycodeFunc keycode;
    FlushFunc flush;

    if (!GDK_IS_X11_DISPLAY(display))
        return FALSE;
    if (xtst == NULL)
        xtst = dlopen("libXtst.so.6", RTLD_NOW | RTLD_LOCAL);
    if (xlib == NULL)
        xlib = dlopen("libX11.so.6", RTLD_NOW | RTLD_LOCAL);
    if (xtst == NULL || xlib == NULL)
        return FALSE;
    fake_key = (FakeKeyEventFunc)dlsym(xtst, "XTestFakeKeyEvent");
    keycode = (KeysymToKeycodeFunc)dlsym(xlib, "XKeysymToKeycode");
    flush = (FlushFunc)dlsym(xlib, "XFlush");
    if (fake_key == NULL || keycode == NULL || flush == NULL)
        return FALSE;
    xdisplay = gdk_x11_display_get_xdisplay(display);
    for (guint i = 0; i < n_keysyms; i++)
        fake_key(xdisplay, keycode(xdisplay, keysyms[i]), True, CurrentTime);
    for (guint i = n_keysyms; i > 0; i--)
        fake_key(xdisplay, keycode(xdisplay, keysyms[i - 1]), False, CurrentTime);
    flush(xdisplay);
    return TRUE;
}

static gboolean
window_active(gpointer data)
{
    return gtk_window_is_active(GTK_WINDOW(data));
}

static void
on_reconnect(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    (*(guint *)user_data)++;
}

typedef struct {
    const char *path;
    guint from;
} RequestWait;

static gboolean
requested(gpointer data)
{
    RequestWait *wait = data;

    for (guint i = wait->from; i < proxy->requests->len; i++)
        if (g_str_equal(((Request *)g_ptr_array_index(proxy->requests, i))->path, wait->path))
            return TRUE;
    return FALSE;
}

/* <Primary>r reloads the notebook, though the application has the same
 * accelerator (EinsoraApplication's app.reconnect); Alt+Left and
 * Alt+Right go back and forward. */
static void
test_shortcuts(void)
{
    static const KeySym reload[] = {XK_Control_L, XK_r};
    static const KeySym back[] = {XK_Alt_L, XK_Left};
    static const KeySym forward[] = {XK_Alt_L, XK_Right};
    static const char *const reconnect_accels[] = {"<Primary>r", NULL};
    g_autoptr(GSimpleAction) reconnect = g_simple_action_new("reconnect", NULL);
    EinsoraNotebookWindow *window = open_window();
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);
    RequestWait wait = {"/", 0};
    guint reconnects = 0;

    g_signal_connect(reconnect, "activate", G_CALLBACK(on_reconnect), &reconnects);
    g_action_map_add_action(G_ACTION_MAP(app), G_ACTION(reconnect));
    gtk_application_set_accels_for_action(app, "app.reconnect", reconnect_accels);
    wait_for_page(view, "/");
    wait_for(window_active, window, "the window to have the keyboard");

    wait.from = proxy->requests->len;
    if (!press_keys(GTK_WIDGET(window), reload, G_N_ELEMENTS(reload))) {
        g_test_skip("no XTest here (libXtst.so.6) to press keys with");
        close_windows(window);
        return;
    }
    wait_for(requested, &wait, "Ctrl+R to reload the page");
    wait_for_page(view, "/");
    g_assert_cmpuint(reconnects, ==, 0);

    click(view, "same");
    wait_for_page(view, "/tree");
    press_keys(GTK_WIDGET(window), back, G_N_ELEMENTS(back));
    wait_for_page(view, "/");
    press_keys(GTK_WIDGET(window), forward, G_N_ELEMENTS(forward));
    wait_for_page(view, "/tree");

    gtk_application_set_accels_for_action(app, "app.reconnect", (const char *const[]){NULL});
    g_action_map_remove_action(G_ACTION_MAP(app), "reconnect");
    close_windows(window);
}

static void
test_open_in_browser(void)
{
    EinsoraNotebookWindow *window = open_window();
    guint count = 0;

    g_signal_connect(window, "open-in-browser", G_CALLBACK(on_open_in_browser), &count);
    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(window), "win.open-in-browser", NULL));
    g_assert_cmpuint(count, ==, 1);
    wait_for_page(einsora_notebook_window_get_web_view(window), "/");
    close_windows(window);
}

static gboolean
view_unmapped(gpointer data)
{
    return !gtk_widget_get_mapped(GTK_WIDGET(data));
}

/* Nothing listens at the link's port: the window shows why in place of
 * the page (the view leaves the screen), and Try Again tries the same
 * link. */
static void
test_load_failure(void)
{
    g_autoptr(GSocket) socket = NULL;
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
    g_autoptr(GSocketAddress) bound = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *link = NULL;
    EinsoraNotebookWindow *window;
    WebKitWebView *view;

    /* A port that was free a moment ago and has no listener. */
    socket =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
    g_assert_no_error(error);
    g_assert_true(g_socket_bind(socket, any, FALSE, &error));
    bound = g_socket_get_local_address(socket, &error);
    g_assert_no_error(error);
    link = g_strdup_printf("http://w-%s.localhost:%u/_einsora/open?ticket=x", proxy->workload_id,
                           g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound)));
    g_socket_close(socket, NULL);

    window = einsora_notebook_window_new(app, proxy->workload_id, "analysis", link);
    view = einsora_notebook_window_get_web_view(window);
    gtk_window_present(GTK_WINDOW(window));
    wait_for(view_unmapped, view, "the error page");
    g_assert_cmpstr(gtk_window_get_title(GTK_WINDOW(window)), ==, "analysis");
    save_window(GTK_WIDGET(window), "notebook-window-error.png");

    g_assert_true(gtk_widget_activate_action(GTK_WIDGET(window), "win.reload", NULL));
    g_assert_true(gtk_widget_get_mapped(GTK_WIDGET(view)));
    wait_for(view_unmapped, view, "the error page again");
    close_windows(window);
}

/* A link for some other host is not loaded at all. */
static void
test_foreign_link(void)
{
    guint from = proxy->requests->len;
    g_autofree gchar *other = g_uuid_string_random();
    g_autofree gchar *link =
        g_strdup_printf("http://w-%s.localhost:%u/_einsora/open?ticket=x", other,
                        (guint)g_ascii_strtoull(strrchr(proxy->host, ':') + 1, NULL, 10));
    EinsoraNotebookWindow *window =
        einsora_notebook_window_new(app, proxy->workload_id, "analysis", link);
    WebKitWebView *view = einsora_notebook_window_get_web_view(window);

    gtk_window_present(GTK_WINDOW(window));
    spin(500);
    g_assert_false(gtk_widget_get_mapped(GTK_WIDGET(view)));
    g_assert_null(webkit_web_view_get_uri(view));
    g_assert_cmpuint(proxy->requests->len, ==, from);
    close_windows(window);
}

/* A home of the test's own, so nothing lands in the real one: downloads
 * go to the XDG_DOWNLOAD_DIR its user-dirs.dirs names. */
static void
set_up_home(void)
{
    g_autofree gchar *config = NULL;
    g_autofree gchar *user_dirs = NULL;
    g_autofree gchar *contents = NULL;
    g_autoptr(GError) error = NULL;

    home_dir = einsora_test_dir_new();
    config = g_build_filename(home_dir, "config", NULL);
    fetched_dir = g_build_filename(home_dir, "Fetched", NULL);
    g_assert_cmpint(g_mkdir_with_parents(config, 0700), ==, 0);
    user_dirs = g_build_filename(config, "user-dirs.dirs", NULL);
    contents = g_strdup_printf("XDG_DOWNLOAD_DIR=\"$HOME/Fetched\"\n");
    g_assert_true(g_file_set_contents(user_dirs, contents, -1, &error));
    g_assert_no_error(error);
    g_setenv("HOME", home_dir, TRUE);
    g_setenv("XDG_CONFIG_HOME", config, TRUE);
    g_setenv("XDG_DATA_HOME", home_dir, TRUE);
    g_setenv("XDG_CACHE_HOME", home_dir, TRUE);
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    gboolean tap = FALSE;
    int status;

    set_up_home();
    for (int i = 1; i < argc; i++)
        tap = tap || g_str_equal(argv[i], "--tap");
    g_test_init(&argc, &argv, NULL);
    gtk_disable_setlocale();
    setlocale(LC_ALL, "C.UTF-8");
    if (!gtk_init_check()) {
        /* Skipped: a TAP plan of nothing, or 77 for meson's exit codes. */
        if (tap)
            g_print("1..0 # SKIP no display (run it under tests/run-under-xvfb.sh)\n");
        else
            g_printerr("skipped: no display (run it under tests/run-under-xvfb.sh)\n");
        einsora_test_dir_remove(home_dir);
        return tap ? 0 : 77;
    }
    app = GTK_APPLICATION(g_object_new(
        ADW_TYPE_APPLICATION, "application-id", "dev.einsora.Einsora.NotebookWindowTest", "flags",
        G_APPLICATION_NON_UNIQUE, "resource-base-path", "/dev/einsora/Einsora", NULL));
    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    proxy = proxy_new();

    g_test_add_func("/notebook-window/opens-link-with-its-session", test_opens_link);
    g_test_add_func("/notebook-window/sessions-apart", test_sessions_apart);
    g_test_add_func("/notebook-window/same-origin-link", test_same_origin_link);
    g_test_add_func("/notebook-window/off-site-link", test_off_site_link);
    g_test_add_func("/notebook-window/new-windows-share-session", test_new_windows);
    g_test_add_func("/notebook-window/downloads", test_downloads);
    g_test_add_func("/notebook-window/open-in-browser", test_open_in_browser);
    g_test_add_func("/notebook-window/shortcuts", test_shortcuts);
    g_test_add_func("/notebook-window/load-failure", test_load_failure);
    g_test_add_func("/notebook-window/foreign-link", test_foreign_link);
    status = g_test_run();

    proxy_free(proxy);
    g_object_unref(app);
    einsora_test_dir_remove(home_dir);
    g_free(home_dir);
    g_free(fetched_dir);
    return status;
}
