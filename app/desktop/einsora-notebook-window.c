#define G_LOG_DOMAIN "einsora-app"

#include "einsora-notebook-window.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <libsoup/soup.h>

struct _EinsoraNotebookWindow {
    AdwApplicationWindow parent_instance;
    AdwToastOverlay *toasts;
    AdwWindowTitle *window_title;
    GtkProgressBar *progress_bar;
    GtkStack *stack;
    AdwBin *web_bin;
    AdwStatusPage *error_page;

    WebKitWebView *web_view; /* web_bin's child */
    gchar *workload_id;
    gchar *title;
    gchar *download_dir;
    /* The workload's origin, from the link: the only one the view loads. */
    gchar *scheme;
    gchar *host;
    gint port;
    /* What win.reload loads while a failed load is shown. */
    gchar *failed_uri;
};

G_DEFINE_FINAL_TYPE(EinsoraNotebookWindow, einsora_notebook_window, ADW_TYPE_APPLICATION_WINDOW)

enum { PROP_0, PROP_WORKLOAD_ID, PROP_WORKLOAD_TITLE, PROP_DOWNLOAD_DIR, N_PROPS };
static GParamSpec *props[N_PROPS];

enum { SIGNAL_OPEN_IN_BROWSER, SIGNAL_OPEN_EXTERNAL, N_SIGNALS };
static guint signals[N_SIGNALS];

/* Where a URI points, seen from this window. */
typedef enum {
    TARGET_OWN,   /* the workload's own origin (or nothing: about:blank) */
    TARGET_WEB,   /* another http(s) site: the default browser's business */
    TARGET_OTHER, /* any other scheme: not followed at all */
} Target;

static gboolean
parse_origin(const char *uri, gchar **scheme, gchar **host, gint *port)
{
    /* SCHEME_NORMALIZE fills in the default port, so :80 and no port match. */
    g_autoptr(GUri) parsed =
        g_uri_parse(uri, G_URI_FLAGS_ENCODED | G_URI_FLAGS_SCHEME_NORMALIZE, NULL);
    const char *parsed_scheme = parsed != NULL ? g_uri_get_scheme(parsed) : NULL;

    if (parsed_scheme == NULL || (g_ascii_strcasecmp(parsed_scheme, "http") != 0 &&
                                  g_ascii_strcasecmp(parsed_scheme, "https") != 0))
        return FALSE;
    if (g_uri_get_host(parsed) == NULL || *g_uri_get_host(parsed) == '\0')
        return FALSE;
    *scheme = g_ascii_strdown(parsed_scheme, -1);
    *host = g_ascii_strdown(g_uri_get_host(parsed), -1);
    *port = g_uri_get_port(parsed);
    return TRUE;
}

static Target
classify(EinsoraNotebookWindow *self, const char *uri)
{
    g_autofree gchar *scheme = NULL;
    g_autofree gchar *host = NULL;
    gint port = -1;

    if (uri == NULL)
        return TARGET_OTHER;
    /* Empty documents: window.open() before it is given a location, and
     * iframes Jupyter fills by script. Nothing is fetched. */
    if (g_strcmp0(uri, "about:blank") == 0 || g_strcmp0(uri, "about:srcdoc") == 0)
        return TARGET_OWN;
    /* A blob: URL belongs to the origin that made it. */
    if (g_ascii_strncasecmp(uri, "blob:", 5) == 0)
        return classify(self, uri + 5) == TARGET_OWN ? TARGET_OWN : TARGET_OTHER;
    if (!parse_origin(uri, &scheme, &host, &port))
        return TARGET_OTHER;
    if (self->host != NULL && g_str_equal(scheme, self->scheme) && g_str_equal(host, self->host) &&
        port == self->port)
        return TARGET_OWN;
    return TARGET_WEB;
}

/* URIs in the log lose their query: the link's holds the ticket. */
static gchar *
loggable_uri(const char *uri)
{
    const char *query = uri != NULL ? strpbrk(uri, "?#") : NULL;

    return query != NULL ? g_strndup(uri, query - uri) : g_strdup(uri);
}

static void
open_external(EinsoraNotebookWindow *self, const char *uri)
{
    gboolean handled = FALSE;

    g_signal_emit(self, signals[SIGNAL_OPEN_EXTERNAL], 0, uri, &handled);
}

/* Off-site: never in this view. What the user clicked goes to their
 * browser; what a page does by itself (a redirect, a script, an iframe) is
 * dropped. */
static void
send_away(EinsoraNotebookWindow *self, const char *uri, Target target, gboolean user_gesture)
{
    g_autofree gchar *shown = loggable_uri(uri);

    if (target == TARGET_WEB && user_gesture) {
        g_debug("opening %s in the default browser", shown);
        open_external(self, uri);
        return;
    }
    g_debug("not following %s (%s)", shown,
            target == TARGET_WEB ? "off-site, no user gesture" : "not a web address");
}

static void
show_failure(EinsoraNotebookWindow *self, const char *title, const char *description)
{
    g_autofree gchar *escaped = g_markup_escape_text(description, -1);

    adw_status_page_set_title(self->error_page, title);
    /* The status page's description is markup. */
    adw_status_page_set_description(self->error_page, escaped);
    gtk_stack_set_visible_child_name(self->stack, "error");
}

static void
show_web(EinsoraNotebookWindow *self)
{
    g_clear_pointer(&self->failed_uri, g_free);
    gtk_stack_set_visible_child_name(self->stack, "web");
}

/* Actions */

static void
update_actions(EinsoraNotebookWindow *self)
{
    WebKitWebView *view = self->web_view;

    gtk_widget_action_set_enabled(GTK_WIDGET(self), "win.back",
                                  view != NULL && webkit_web_view_can_go_back(view));
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "win.forward",
                                  view != NULL && webkit_web_view_can_go_forward(view));
}

static void
on_reload(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(widget);
    g_autofree gchar *failed = g_steal_pointer(&self->failed_uri);

    if (self->web_view == NULL || self->host == NULL)
        return;
    show_web(self);
    if (failed != NULL)
        webkit_web_view_load_uri(self->web_view, failed);
    else
        webkit_web_view_reload(self->web_view);
}

static void
on_back(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(widget);

    if (self->web_view != NULL && webkit_web_view_can_go_back(self->web_view)) {
        show_web(self);
        webkit_web_view_go_back(self->web_view);
    }
}

static void
on_forward(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(widget);

    if (self->web_view != NULL && webkit_web_view_can_go_forward(self->web_view)) {
        show_web(self);
        webkit_web_view_go_forward(self->web_view);
    }
}

static void
on_open_in_browser(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    g_signal_emit(widget, signals[SIGNAL_OPEN_IN_BROWSER], 0);
}

/* The default browser */

static void
on_launched(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraNotebookWindow) self = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_app_info_launch_default_for_uri_finish(result, &error)) {
        g_message("the default browser didn't open a link: %s", error->message);
        einsora_notebook_window_toast(self, _("Couldn't open the link in your web browser"));
    }
}

static gboolean
einsora_notebook_window_real_open_external(EinsoraNotebookWindow *self, const char *uri)
{
    GdkDisplay *display = gtk_widget_get_display(GTK_WIDGET(self));
    g_autoptr(GdkAppLaunchContext) context = gdk_display_get_app_launch_context(display);

    g_app_info_launch_default_for_uri_async(uri, G_APP_LAUNCH_CONTEXT(context), NULL, on_launched,
                                            g_object_ref(self));
    return TRUE;
}

/* Navigation policy: the one place that decides what the view loads. */

static void
decide_navigation(EinsoraNotebookWindow *self, WebKitNavigationPolicyDecision *decision,
                  gboolean new_window)
{
    WebKitNavigationAction *action =
        webkit_navigation_policy_decision_get_navigation_action(decision);
    const char *uri = webkit_uri_request_get_uri(webkit_navigation_action_get_request(action));
    gboolean user_gesture = webkit_navigation_action_is_user_gesture(action);
    Target target = classify(self, uri);

    /* In the view: the workload's own pages, whoever asked. A new window
     * (target=_blank): only when the user asked for it; "create" makes it. */
    if (target == TARGET_OWN && (!new_window || user_gesture)) {
        webkit_policy_decision_use(WEBKIT_POLICY_DECISION(decision));
        return;
    }
    webkit_policy_decision_ignore(WEBKIT_POLICY_DECISION(decision));
    if (target == TARGET_OWN)
        g_debug("no new window without a user gesture");
    else
        send_away(self, uri, target, user_gesture);
}

static gboolean
is_attachment(WebKitURIResponse *response)
{
    SoupMessageHeaders *headers = webkit_uri_response_get_http_headers(response);
    g_autofree gchar *disposition = NULL;

    if (headers == NULL ||
        !soup_message_headers_get_content_disposition(headers, &disposition, NULL))
        return FALSE;
    return g_ascii_strcasecmp(disposition, "attachment") == 0;
}

static void
decide_response(EinsoraNotebookWindow *self, WebKitResponsePolicyDecision *decision)
{
    WebKitURIResponse *response = webkit_response_policy_decision_get_response(decision);

    /* What the server says to save, or the view can't show, is saved
     * (WebKit would show an attachment it can read, text/plain say). */
    if (is_attachment(response) ||
        !webkit_response_policy_decision_is_mime_type_supported(decision))
        webkit_policy_decision_download(WEBKIT_POLICY_DECISION(decision));
    else
        webkit_policy_decision_use(WEBKIT_POLICY_DECISION(decision));
}

static gboolean
on_decide_policy(WebKitWebView *view, WebKitPolicyDecision *decision, WebKitPolicyDecisionType type,
                 EinsoraNotebookWindow *self)
{
    switch (type) {
    case WEBKIT_POLICY_DECISION_TYPE_NAVIGATION_ACTION:
        decide_navigation(self, WEBKIT_NAVIGATION_POLICY_DECISION(decision), FALSE);
        return TRUE;
    case WEBKIT_POLICY_DECISION_TYPE_NEW_WINDOW_ACTION:
        decide_navigation(self, WEBKIT_NAVIGATION_POLICY_DECISION(decision), TRUE);
        return TRUE;
    case WEBKIT_POLICY_DECISION_TYPE_RESPONSE:
        decide_response(self, WEBKIT_RESPONSE_POLICY_DECISION(decision));
        return TRUE;
    default:
        webkit_policy_decision_ignore(decision);
        return TRUE;
    }
}

/* Windows the page opens */

static void set_up_view(EinsoraNotebookWindow *self, WebKitWebView *related);

static void
on_ready_to_show(WebKitWebView *view, EinsoraNotebookWindow *self)
{
    gtk_window_present(GTK_WINDOW(self));
}

/* A page may close only windows it opened (WebKit's rule). */
static void
on_close(WebKitWebView *view, EinsoraNotebookWindow *self)
{
    gtk_window_destroy(GTK_WINDOW(self));
}

/* Jupyter opens notebooks in new tabs, often as window.open() first and a
 * location later, so the page needs a real window: a new one of the same
 * workload, whose view is related to this one and so shares its web
 * process and network session (and with them the workload's cookie). */
static GtkWidget *
on_create(WebKitWebView *view, WebKitNavigationAction *action, EinsoraNotebookWindow *self)
{
    const char *uri = webkit_uri_request_get_uri(webkit_navigation_action_get_request(action));
    gboolean user_gesture = webkit_navigation_action_is_user_gesture(action);
    Target target = uri == NULL || *uri == '\0' ? TARGET_OWN : classify(self, uri);
    EinsoraNotebookWindow *window;

    if (target != TARGET_OWN) {
        send_away(self, uri, target, user_gesture);
        return NULL;
    }
    if (!user_gesture) {
        g_debug("no new window without a user gesture");
        return NULL;
    }
    window =
        g_object_new(EINSORA_TYPE_NOTEBOOK_WINDOW, "application",
                     gtk_window_get_application(GTK_WINDOW(self)), "workload-id", self->workload_id,
                     "workload-title", self->title, "download-dir", self->download_dir, NULL);
    window->scheme = g_strdup(self->scheme);
    window->host = g_strdup(self->host);
    window->port = self->port;
    set_up_view(window, view);
    gtk_window_set_default_size(GTK_WINDOW(window), gtk_widget_get_width(GTK_WIDGET(self)),
                                gtk_widget_get_height(GTK_WIDGET(self)));
    return GTK_WIDGET(window->web_view);
}

/* Downloads */

static const char *
download_dir(EinsoraNotebookWindow *self)
{
    const char *dir = self->download_dir;

    if (dir == NULL)
        dir = g_get_user_special_dir(G_USER_DIRECTORY_DOWNLOAD);
    return dir != NULL ? dir : g_get_home_dir();
}

/* The server's name for the file, made safe to use as a name in the
 * downloads folder: no directories, not hidden. */
static gchar *
download_name(const char *suggested)
{
    g_autofree gchar *base = suggested != NULL ? g_path_get_basename(suggested) : NULL;
    const char *name = base;

    while (name != NULL && (*name == '.' || g_ascii_isspace(*name)))
        name++;
    if (name == NULL || *name == '\0' || g_str_equal(name, G_DIR_SEPARATOR_S))
        return g_strdup("download");
    return g_strdup(name);
}

static gboolean
path_taken(const char *path)
{
    return g_file_test(path, G_FILE_TEST_EXISTS) || g_file_test(path, G_FILE_TEST_IS_SYMLINK);
}

/* "data.csv", then "data (1).csv", "data (2).csv", ... */
static gchar *
unique_path(const char *dir, const char *name)
{
    const char *dot = strrchr(name, '.');
    g_autofree gchar *stem = dot != NULL ? g_strndup(name, dot - name) : g_strdup(name);
    gchar *path = g_build_filename(dir, name, NULL);

    for (guint n = 1; path_taken(path) && n < G_MAXUINT; n++) {
        g_autofree gchar *candidate = g_strdup_printf("%s (%u)%s", stem, n, dot != NULL ? dot : "");
        g_free(path);
        path = g_build_filename(dir, candidate, NULL);
    }
    return path;
}

static gboolean
on_decide_destination(WebKitDownload *download, const char *suggested, EinsoraNotebookWindow *self)
{
    const char *dir = download_dir(self);
    g_autofree gchar *name = download_name(suggested);
    g_autofree gchar *path = NULL;

    if (g_mkdir_with_parents(dir, 0700) != 0)
        g_message("no downloads folder %s: %s", dir, g_strerror(errno));
    path = unique_path(dir, name);
    g_debug("downloading to %s", path);
    /* Never over a file that appeared since: the download fails instead. */
    webkit_download_set_allow_overwrite(download, FALSE);
    webkit_download_set_destination(download, path);
    return TRUE;
}

static gchar *
download_shown_name(WebKitDownload *download)
{
    const char *destination = webkit_download_get_destination(download);

    return destination != NULL ? g_path_get_basename(destination) : g_strdup(_("a file"));
}

static void
on_download_failed(WebKitDownload *download, GError *error, EinsoraNotebookWindow *self)
{
    g_autofree gchar *name = download_shown_name(download);
    g_autofree gchar *text = NULL;

    g_object_set_data(G_OBJECT(download), "einsora-failed", GINT_TO_POINTER(TRUE));
    if (g_error_matches(error, WEBKIT_DOWNLOAD_ERROR, WEBKIT_DOWNLOAD_ERROR_CANCELLED_BY_USER))
        return;
    g_message("a download failed: %s", error->message);
    text = g_strdup_printf(_("Couldn't download “%s”"), name);
    einsora_notebook_window_toast(self, text);
}

static void
on_download_finished(WebKitDownload *download, EinsoraNotebookWindow *self)
{
    g_autofree gchar *name = NULL;
    g_autofree gchar *text = NULL;

    if (g_object_get_data(G_OBJECT(download), "einsora-failed") != NULL)
        return;
    name = download_shown_name(download);
    text = g_strdup_printf(_("Downloaded “%s”"), name);
    einsora_notebook_window_toast(self, text);
}

/* The network session may be shared with windows this one opened: each
 * window takes the downloads of its own view. */
static void
on_download_started(WebKitNetworkSession *session, WebKitDownload *download,
                    EinsoraNotebookWindow *self)
{
    if (self->web_view == NULL || webkit_download_get_web_view(download) != self->web_view)
        return;
    g_signal_connect_object(download, "decide-destination", G_CALLBACK(on_decide_destination), self,
                            0);
    g_signal_connect_object(download, "failed", G_CALLBACK(on_download_failed), self, 0);
    g_signal_connect_object(download, "finished", G_CALLBACK(on_download_finished), self, 0);
}

/* Loading */

static void
update_title(EinsoraNotebookWindow *self)
{
    const char *page = self->web_view != NULL ? webkit_web_view_get_title(self->web_view) : NULL;
    const char *workload = self->title != NULL ? self->title : _("Notebook");

    if (page != NULL && *page != '\0' && g_strcmp0(page, workload) != 0) {
        adw_window_title_set_title(self->window_title, page);
        adw_window_title_set_subtitle(self->window_title, workload);
        gtk_window_set_title(GTK_WINDOW(self), page);
    } else {
        adw_window_title_set_title(self->window_title, workload);
        adw_window_title_set_subtitle(self->window_title, NULL);
        gtk_window_set_title(GTK_WINDOW(self), workload);
    }
}

static void
on_title(WebKitWebView *view, GParamSpec *pspec, EinsoraNotebookWindow *self)
{
    update_title(self);
}

static void
on_is_loading(WebKitWebView *view, GParamSpec *pspec, EinsoraNotebookWindow *self)
{
    gtk_widget_set_visible(GTK_WIDGET(self->progress_bar), webkit_web_view_is_loading(view));
}

static void
on_history_changed(WebKitBackForwardList *list, WebKitBackForwardListItem *added, GList *removed,
                   EinsoraNotebookWindow *self)
{
    update_actions(self);
}

static void
on_load_changed(WebKitWebView *view, WebKitLoadEvent event, EinsoraNotebookWindow *self)
{
    if (event == WEBKIT_LOAD_COMMITTED)
        show_web(self);
    update_actions(self);
}

/* A page the proxy answers (a stopped workload, a spent link) is a page
 * like any other; this is for when there is no page at all. */
static gboolean
on_load_failed(WebKitWebView *view, WebKitLoadEvent event, const char *failing_uri, GError *error,
               EinsoraNotebookWindow *self)
{
    g_autofree gchar *shown = loggable_uri(failing_uri);
    g_autofree gchar *description = NULL;

    /* A load stopped for another one, or turned into a download. */
    if (g_error_matches(error, WEBKIT_NETWORK_ERROR, WEBKIT_NETWORK_ERROR_CANCELLED) ||
        g_error_matches(error, WEBKIT_POLICY_ERROR,
                        WEBKIT_POLICY_ERROR_FRAME_LOAD_INTERRUPTED_BY_POLICY_CHANGE))
        return TRUE;
    g_message("%s didn't load: %s", shown, error->message);
    g_free(self->failed_uri);
    self->failed_uri = g_strdup(failing_uri);
    description = g_strdup_printf(_("Einsora's access proxy didn't answer: %s. If the daemon "
                                    "stopped, start Einsora again and open the notebook anew."),
                                  error->message);
    show_failure(self, _("The Notebook Can't Be Reached"), description);
    return TRUE;
}

static void
on_web_process_terminated(WebKitWebView *view, WebKitWebProcessTerminationReason reason,
                          EinsoraNotebookWindow *self)
{
    g_message("the notebook window's web process ended (reason %d)", (int)reason);
    show_failure(self, _("The Page Stopped"),
                 reason == WEBKIT_WEB_PROCESS_EXCEEDED_MEMORY_LIMIT
                     ? _("It used too much memory. Reload it to carry on.")
                     : _("Reload it to carry on."));
}

/* Notebooks have no use for the camera, location, notifications and the
 * like: every permission is refused without asking the user. */
static gboolean
on_permission_request(WebKitWebView *view, WebKitPermissionRequest *request,
                      EinsoraNotebookWindow *self)
{
    webkit_permission_request_deny(request);
    return TRUE;
}

static WebKitSettings *
new_settings(void)
{
    WebKitSettings *settings = webkit_settings_new();

    webkit_settings_set_enable_javascript(settings, TRUE);
    /* The inspector only on request, for whoever debugs a notebook. */
    webkit_settings_set_enable_developer_extras(
        settings, g_strcmp0(g_getenv("EINSORA_WEB_INSPECTOR"), "1") == 0);
    webkit_settings_set_enable_back_forward_navigation_gestures(settings, FALSE);
    webkit_settings_set_javascript_can_open_windows_automatically(settings, FALSE);
    webkit_settings_set_media_playback_requires_user_gesture(settings, TRUE);
    webkit_settings_set_user_agent_with_application_details(settings, "Einsora", EINSORA_VERSION);
    return settings;
}

/* @related: the view that asked for this window, or NULL for a window of
 * its own context and session. */
static void
set_up_view(EinsoraNotebookWindow *self, WebKitWebView *related)
{
    WebKitWebView *view;
    WebKitNetworkSession *session;

    if (related != NULL) {
        view = g_object_new(WEBKIT_TYPE_WEB_VIEW, "related-view", related, "settings",
                            webkit_web_view_get_settings(related), NULL);
    } else {
        g_autoptr(WebKitWebContext) context = webkit_web_context_new();
        g_autoptr(WebKitNetworkSession) own_session = webkit_network_session_new_ephemeral();
        g_autoptr(WebKitSettings) settings = new_settings();

        /* The notebook is on this machine's loopback: a proxy configured
         * for the web would only see its tickets and cookies. */
        webkit_network_session_set_proxy_settings(own_session, WEBKIT_NETWORK_PROXY_MODE_NO_PROXY,
                                                  NULL);
        view = g_object_new(WEBKIT_TYPE_WEB_VIEW, "web-context", context, "network-session",
                            own_session, "settings", settings, NULL);
    }
    self->web_view = view;
    gtk_widget_set_hexpand(GTK_WIDGET(view), TRUE);
    gtk_widget_set_vexpand(GTK_WIDGET(view), TRUE);
    adw_bin_set_child(self->web_bin, GTK_WIDGET(view));

    session = webkit_web_view_get_network_session(view);
    g_signal_connect_object(session, "download-started", G_CALLBACK(on_download_started), self, 0);
    g_signal_connect_object(view, "decide-policy", G_CALLBACK(on_decide_policy), self, 0);
    g_signal_connect_object(view, "create", G_CALLBACK(on_create), self, 0);
    g_signal_connect_object(view, "ready-to-show", G_CALLBACK(on_ready_to_show), self, 0);
    g_signal_connect_object(view, "close", G_CALLBACK(on_close), self, 0);
    g_signal_connect_object(view, "load-changed", G_CALLBACK(on_load_changed), self, 0);
    g_signal_connect_object(view, "load-failed", G_CALLBACK(on_load_failed), self, 0);
    g_signal_connect_object(view, "web-process-terminated", G_CALLBACK(on_web_process_terminated),
                            self, 0);
    g_signal_connect_object(view, "permission-request", G_CALLBACK(on_permission_request), self, 0);
    g_signal_connect_object(webkit_web_view_get_back_forward_list(view), "changed",
                            G_CALLBACK(on_history_changed), self, 0);
    g_signal_connect_object(view, "notify::title", G_CALLBACK(on_title), self, 0);
    g_signal_connect_object(view, "notify::is-loading", G_CALLBACK(on_is_loading), self, 0);
    g_object_bind_property(view, "estimated-load-progress", self->progress_bar, "fraction",
                           G_BINDING_SYNC_CREATE);
    update_title(self);
    update_actions(self);
}

/* GObject */

static void
einsora_notebook_window_dispose(GObject *object)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(object);

    self->web_view = NULL;
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_NOTEBOOK_WINDOW);
    G_OBJECT_CLASS(einsora_notebook_window_parent_class)->dispose(object);
}

static void
einsora_notebook_window_finalize(GObject *object)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(object);

    g_free(self->workload_id);
    g_free(self->title);
    g_free(self->download_dir);
    g_free(self->scheme);
    g_free(self->host);
    g_free(self->failed_uri);
    G_OBJECT_CLASS(einsora_notebook_window_parent_class)->finalize(object);
}

static void
einsora_notebook_window_get_property(GObject *object, guint prop_id, GValue *value,
                                     GParamSpec *pspec)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(object);

    switch (prop_id) {
    case PROP_WORKLOAD_ID:
        g_value_set_string(value, self->workload_id);
        break;
    case PROP_WORKLOAD_TITLE:
        g_value_set_string(value, self->title);
        break;
    case PROP_DOWNLOAD_DIR:
        g_value_set_string(value, self->download_dir);
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_notebook_window_set_property(GObject *object, guint prop_id, const GValue *value,
                                     GParamSpec *pspec)
{
    EinsoraNotebookWindow *self = EINSORA_NOTEBOOK_WINDOW(object);

    switch (prop_id) {
    case PROP_WORKLOAD_ID:
        g_free(self->workload_id);
        self->workload_id = g_value_dup_string(value);
        break;
    case PROP_WORKLOAD_TITLE:
        g_free(self->title);
        self->title = g_value_dup_string(value);
        update_title(self);
        break;
    case PROP_DOWNLOAD_DIR:
        einsora_notebook_window_set_download_dir(self, g_value_get_string(value));
        break;
    default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    }
}

static void
einsora_notebook_window_class_init(EinsoraNotebookWindowClass *klass)
{
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    object_class->dispose = einsora_notebook_window_dispose;
    object_class->finalize = einsora_notebook_window_finalize;
    object_class->get_property = einsora_notebook_window_get_property;
    object_class->set_property = einsora_notebook_window_set_property;

    props[PROP_WORKLOAD_ID] =
        g_param_spec_string("workload-id", NULL, NULL, NULL,
                            G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
    props[PROP_WORKLOAD_TITLE] =
        g_param_spec_string("workload-title", NULL, NULL, NULL,
                            G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
    props[PROP_DOWNLOAD_DIR] =
        g_param_spec_string("download-dir", NULL, NULL, NULL,
                            G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
    g_object_class_install_properties(object_class, N_PROPS, props);

    signals[SIGNAL_OPEN_IN_BROWSER] =
        g_signal_new("open-in-browser", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 0);
    /* A final type has no class struct to hold the default handler. */
    signals[SIGNAL_OPEN_EXTERNAL] = g_signal_new_class_handler(
        "open-external", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
        G_CALLBACK(einsora_notebook_window_real_open_external), g_signal_accumulator_true_handled,
        NULL, NULL, G_TYPE_BOOLEAN, 1, G_TYPE_STRING);

    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-notebook-window.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraNotebookWindow, toasts);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNotebookWindow, window_title);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNotebookWindow, progress_bar);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNotebookWindow, stack);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNotebookWindow, web_bin);
    gtk_widget_class_bind_template_child(widget_class, EinsoraNotebookWindow, error_page);

    gtk_widget_class_install_action(widget_class, "win.reload", NULL, on_reload);
    gtk_widget_class_install_action(widget_class, "win.back", NULL, on_back);
    gtk_widget_class_install_action(widget_class, "win.forward", NULL, on_forward);
    gtk_widget_class_install_action(widget_class, "win.open-in-browser", NULL, on_open_in_browser);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Left, GDK_ALT_MASK, "win.back", NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Right, GDK_ALT_MASK, "win.forward",
                                        NULL);
}

/* Reload is taken before anything else sees the key: the application's
 * own <Primary>r (app.reconnect) would otherwise win, as application
 * accelerators run in the capture phase. */
static void
add_reload_shortcuts(EinsoraNotebookWindow *self)
{
    GtkEventController *controller = gtk_shortcut_controller_new();
    const char *const triggers[] = {"<Primary>r", "F5"};

    gtk_event_controller_set_name(controller, "einsora-notebook-reload");
    gtk_event_controller_set_propagation_phase(controller, GTK_PHASE_CAPTURE);
    for (guint i = 0; i < G_N_ELEMENTS(triggers); i++)
        gtk_shortcut_controller_add_shortcut(
            GTK_SHORTCUT_CONTROLLER(controller),
            gtk_shortcut_new(gtk_shortcut_trigger_parse_string(triggers[i]),
                             gtk_named_action_new("win.reload")));
    gtk_widget_add_controller(GTK_WIDGET(self), controller);
}

static void
einsora_notebook_window_init(EinsoraNotebookWindow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    add_reload_shortcuts(self);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "win.back", FALSE);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "win.forward", FALSE);
}

EinsoraNotebookWindow *
einsora_notebook_window_new(GtkApplication *application, const char *workload_id, const char *title,
                            const char *url)
{
    EinsoraNotebookWindow *self;
    g_autofree gchar *id = NULL;
    g_autofree gchar *expected_host = NULL;

    g_return_val_if_fail(application == NULL || GTK_IS_APPLICATION(application), NULL);
    g_return_val_if_fail(workload_id != NULL, NULL);
    g_return_val_if_fail(url != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_NOTEBOOK_WINDOW, "application", application, "workload-id",
                        workload_id, "workload-title", title, NULL);
    set_up_view(self, NULL);
    /* The link must be for this workload's own host: that host is the
     * only one the view will load. */
    id = g_ascii_strdown(workload_id, -1);
    expected_host = g_strdup_printf("w-%s.localhost", id);
    if (!parse_origin(url, &self->scheme, &self->host, &self->port) ||
        !g_str_equal(self->host, expected_host)) {
        g_autofree gchar *shown = loggable_uri(url);

        g_message("refused a notebook link for another host: %s", shown);
        g_clear_pointer(&self->scheme, g_free);
        g_clear_pointer(&self->host, g_free);
        show_failure(self, _("This Link Isn't for This Notebook"),
                     _("Open the notebook again from Einsora."));
        return self;
    }
    webkit_web_view_load_uri(self->web_view, url);
    return self;
}

const char *
einsora_notebook_window_get_workload_id(EinsoraNotebookWindow *self)
{
    g_return_val_if_fail(EINSORA_IS_NOTEBOOK_WINDOW(self), NULL);
    return self->workload_id;
}

WebKitWebView *
einsora_notebook_window_get_web_view(EinsoraNotebookWindow *self)
{
    g_return_val_if_fail(EINSORA_IS_NOTEBOOK_WINDOW(self), NULL);
    return self->web_view;
}

const char *
einsora_notebook_window_get_download_dir(EinsoraNotebookWindow *self)
{
    g_return_val_if_fail(EINSORA_IS_NOTEBOOK_WINDOW(self), NULL);
    return self->download_dir;
}

void
einsora_notebook_window_set_download_dir(EinsoraNotebookWindow *self, const char *dir)
{
    g_return_if_fail(EINSORA_IS_NOTEBOOK_WINDOW(self));
    if (g_strcmp0(self->download_dir, dir) == 0)
        return;
    g_free(self->download_dir);
    self->download_dir = g_strdup(dir);
    g_object_notify_by_pspec(G_OBJECT(self), props[PROP_DOWNLOAD_DIR]);
}

void
einsora_notebook_window_toast(EinsoraNotebookWindow *self, const char *text)
{
    /* A toast's title is markup in libadwaita 1.2. */
    g_autofree gchar *escaped = g_markup_escape_text(text, -1);

    g_return_if_fail(EINSORA_IS_NOTEBOOK_WINDOW(self));
    /* A late answer (a launch, a download) after the window went. */
    if (self->toasts == NULL)
        return;
    adw_toast_overlay_add_toast(self->toasts, adw_toast_new(escaped));
}
