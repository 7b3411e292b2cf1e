#define G_LOG_DOMAIN "einsora-app"

#include "einsora-application.h"

#include <glib/gi18n.h>
#include <string.h>

#include "einsora-access-relay.h"
#include "einsora-add-machine-dialog.h"
#include "einsora-autostart.h"
#include "einsora-chat-window.h"
#include "einsora-connection.h"
#include "einsora-event-feed.h"
#include "einsora-format.h"
#include "einsora-new-workload-dialog.h"
#include "einsora-notebook-module.h"
#include "einsora-preferences-window.h"
#include "einsora-server-dialog.h"
#include "einsora-tray.h"
#include "einsora-window.h"
#include "einsora-json-member.h"

/* How long a local daemon the app starts may take to answer. */
#define DAEMON_START_TIMEOUT_MS 30000
/* A page's connections fail together: their relay's failure is said once
 * in this long. */
#define RELAY_FAILURE_QUIET_US (10 * G_USEC_PER_SEC)

struct _EinsoraApplication {
    AdwApplication parent_instance;
    GSettings *settings;
    EinsoraConnection *connection;
    /* The certificate the server presented when it wasn't trusted. */
    gchar *refused_fingerprint;
    EinsoraClient *client;
    EinsoraWorkloadList *workloads;
    GCancellable *cancellable; /* of the current connection's calls */
    GCancellable *logs;        /* of the log the workload page follows */
    EinsoraEventFeed *feed;
    gboolean ready;
    EinsoraTray *tray;  /* (nullable): while keep-running-in-tray */
    gboolean tray_hold; /* held while a tray shows the app */
    /* Started with --background (at login): no window, held until one is
     * shown, so the app runs on with no tray too (docs/adr/0066). */
    gboolean background;
    gboolean background_hold;
    EinsoraAutostart *autostart;
    /* To the connected server's access proxy when it speaks TLS
     * (docs/adr/0053): one for every notebook and endpoint of the
     * connection, made when the first needs it, closed with it. */
    EinsoraAccessRelay *relay; /* (nullable) */
    guint relay_proxy_port;
    gchar *relay_failure; /* the last failure said, and when */
    gint64 relay_failure_us;
};

G_DEFINE_FINAL_TYPE(EinsoraApplication, einsora_application, ADW_TYPE_APPLICATION)

enum { SIGNAL_READY, SIGNAL_WORKLOAD_EVENT, SIGNAL_OPEN_IN_BROWSER, N_SIGNALS };
static guint signals[N_SIGNALS];

static EinsoraWindow *
main_window(EinsoraApplication *self)
{
    GtkWindow *window = gtk_application_get_active_window(GTK_APPLICATION(self));

    if (window != NULL && EINSORA_IS_WINDOW(window))
        return EINSORA_WINDOW(window);
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(self)); l != NULL; l = l->next)
        if (EINSORA_IS_WINDOW(l->data))
            return l->data;
    return NULL;
}

static void
show_error(EinsoraApplication *self, const char *message)
{
    EinsoraWindow *window = main_window(self);

    g_message("not connected: %s", message);
    if (window != NULL)
        einsora_window_show_error(window, message);
}

static void
on_machines(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    EinsoraWindow *window = main_window(self);
    JsonObject *object;
    JsonNode *machines;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    /* Said on the Machines page, which reads again every few seconds
     * while shown: not a toast each time. */
    if (answer == NULL) {
        if (window != NULL)
            einsora_window_set_machines_error(window, error->message);
        return;
    }
    object = JSON_NODE_HOLDS_OBJECT(answer) ? json_node_get_object(answer) : NULL;
    machines = object != NULL ? json_object_get_member(object, "machines") : NULL;
    if (machines == NULL || !JSON_NODE_HOLDS_ARRAY(machines)) {
        if (window != NULL)
            einsora_window_set_machines_error(
                window, _("The daemon's list of machines isn't one this app can read."));
        return;
    }
    einsora_workload_list_set_machines(self->workloads, json_node_get_array(machines));
    if (window != NULL)
        einsora_window_set_machines(window, json_node_get_array(machines));
}

static void
on_workloads(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    JsonObject *object;
    JsonNode *workloads;
    EinsoraWindow *window;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    if (answer == NULL) {
        show_error(self, error->message);
        return;
    }
    object = JSON_NODE_HOLDS_OBJECT(answer) ? json_node_get_object(answer) : NULL;
    workloads = object != NULL ? json_object_get_member(object, "workloads") : NULL;
    if (workloads == NULL || !JSON_NODE_HOLDS_ARRAY(workloads)) {
        show_error(self, _("The daemon's list of workloads isn't one this app can read."));
        return;
    }
    einsora_workload_list_replace(self->workloads, json_node_get_array(workloads));
    self->ready = TRUE;
    window = main_window(self);
    if (window != NULL)
        einsora_window_show_ready(window);
    g_message("connected to %s: %u workloads", einsora_connection_get_server(self->connection),
              g_list_model_get_n_items(G_LIST_MODEL(self->workloads)));
    g_signal_emit(self, signals[SIGNAL_READY], 0);
}

/* A desktop notification when a workload starts running, fails, or stops
 * without being asked to. */
static void
notify_event(EinsoraApplication *self, JsonObject *event, EinsoraWorkloadItem *item)
{
    const char *from = einsora_json_member_string(event, "from_state");
    const char *to = einsora_json_member_string(event, "to_state");
    const char *id = einsora_json_member_string(event, "workload_id");
    const char *name = item != NULL ? einsora_workload_item_get_name(item) : id;
    gboolean notebook =
        item != NULL && g_strcmp0(einsora_workload_item_get_kind(item), "notebook") == 0;
    g_autoptr(GNotification) notification = NULL;
    g_autofree gchar *title = NULL;
    g_autofree gchar *reason =
        einsora_format_reason(einsora_json_member_string(event, "reason"), 200);
    g_autofree gchar *notification_id = NULL;

    if (!g_settings_get_boolean(self->settings, "notify") || from == NULL ||
        g_strcmp0(from, to) == 0)
        return;
    if (g_strcmp0(to, "running") == 0)
        title = g_strdup_printf(_("%s is running"), name);
    else if (g_strcmp0(to, "stopping") == 0 && g_str_has_prefix(reason, "stopped after ") &&
             strstr(reason, " idle: ") != NULL) {
        /* Idle auto-stop (docs/adr/0044): the reason names the span. */
        const char *span = reason + strlen("stopped after ");
        g_autofree gchar *limit = g_strndup(span, (gsize)(strstr(span, " idle: ") - span));
        /* TRANSLATORS: a workload's name, then a span as "1h" or "30m" */
        title = g_strdup_printf(_("%s was stopped after %s idle"), name, limit);
    } else if (g_strcmp0(to, "failed") == 0)
        title = g_strdup_printf(_("%s failed"), name);
    else if (g_strcmp0(to, "stopped") == 0 && g_strcmp0(from, "stopping") != 0)
        title = g_strdup_printf(_("%s stopped by itself"), name);
    else
        return;
    notification = g_notification_new(title);
    g_notification_set_body(notification, reason);
    if (g_strcmp0(to, "failed") == 0)
        g_notification_set_priority(notification, G_NOTIFICATION_PRIORITY_HIGH);
    /* Clicking a running notebook's notification opens it; any other
     * shows its page. */
    if (g_strcmp0(to, "running") == 0 && notebook) {
        g_notification_set_default_action_and_target(notification, "app.open-workload", "s", id);
        g_notification_add_button_with_target(notification, _("Open"), "app.open-workload", "s",
                                              id);
    } else {
        g_notification_set_default_action_and_target(notification, "app.show-workload", "s", id);
    }
    notification_id = g_strdup_printf("workload-%s", id);
    g_application_send_notification(G_APPLICATION(self), notification_id, notification);
}

typedef struct {
    EinsoraApplication *self;
    JsonObject *event;
} EventFetch;

static void
on_event_workload(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EventFetch *fetch = user_data;
    EinsoraApplication *self = fetch->self;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    EinsoraWorkloadItem *item = NULL;

    if (answer != NULL && JSON_NODE_HOLDS_OBJECT(answer))
        item = einsora_workload_list_upsert(self->workloads, json_node_get_object(answer));
    else if (error != NULL && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_message("can't read workload %s: %s",
                  einsora_json_member_string(fetch->event, "workload_id"), error->message);
    if (answer != NULL || !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        notify_event(self, fetch->event, item);
        g_signal_emit(self, signals[SIGNAL_WORKLOAD_EVENT], 0, fetch->event);
    }
    json_object_unref(fetch->event);
    g_object_unref(fetch->self);
    g_free(fetch);
}

/* One event of the feed: the workload as it is now, then whoever shows
 * it (its page, a notification). */
static void
on_feed_event(EinsoraEventFeed *feed, JsonObject *event, EinsoraApplication *self)
{
    const char *id = einsora_json_member_string(event, "workload_id");
    g_autofree gchar *path = NULL;
    EventFetch *fetch;

    if (id == NULL || self->client == NULL)
        return;
    fetch = g_new0(EventFetch, 1);
    fetch->self = g_object_ref(self);
    fetch->event = json_object_ref(event);
    /* Deleted ones too: their deletion takes them out of the list. */
    path = g_strdup_printf("/v1/workloads/%s?include_deleted=true", id);
    einsora_client_request_async(self->client, "GET", path, NULL, NULL, self->cancellable,
                                 on_event_workload, fetch);
}

static void load_lists(EinsoraApplication *self);

/* The feed is open: the list read now misses nothing the feed won't tell. */
static void
on_feed_connected(EinsoraEventFeed *feed, GParamSpec *pspec, EinsoraApplication *self)
{
    if (einsora_event_feed_get_connected(feed) && !self->ready)
        load_lists(self);
}

static void
on_feed_failed(EinsoraEventFeed *feed, GError *error, EinsoraApplication *self)
{
    show_error(self, error->message);
}

static void
load_lists(EinsoraApplication *self)
{
    einsora_client_list_workloads_async(self->client, FALSE, self->cancellable, on_workloads,
                                        g_object_ref(self));
    einsora_client_list_machines_async(self->client, self->cancellable, on_machines,
                                       g_object_ref(self));
}

static void
load(EinsoraApplication *self)
{
    if (self->feed != NULL)
        einsora_event_feed_stop(self->feed);
    g_clear_object(&self->feed);
    /* The client's: over https it trusts what the client's calls trust
     * (the pin), where a feed of its own would know only the CAs. */
    self->feed = einsora_client_new_event_feed(self->client);
    g_signal_connect_object(self->feed, "event", G_CALLBACK(on_feed_event), self, 0);
    g_signal_connect_object(self->feed, "notify::connected", G_CALLBACK(on_feed_connected), self,
                            0);
    g_signal_connect_object(self->feed, "failed", G_CALLBACK(on_feed_failed), self, 0);
    /* From now: the list, read once the feed is open, has the past. */
    einsora_event_feed_start(self->feed, NULL);
}

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    EinsoraClient *client =
        einsora_connection_ensure_finish(EINSORA_CONNECTION(source), result, &error);

    if (client == NULL) {
        if (g_error_matches(error, EINSORA_CONNECTION_ERROR,
                            EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE)) {
            EinsoraWindow *window = main_window(self);
            g_free(self->refused_fingerprint);
            self->refused_fingerprint =
                einsora_connection_dup_refused_fingerprint(EINSORA_CONNECTION(source));
            g_message("not connected: %s", error->message);
            if (window != NULL)
                einsora_window_show_untrusted(window, error->message,
                                              self->refused_fingerprint != NULL);
            return;
        }
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            show_error(self, error->message);
        return;
    }
    g_clear_object(&self->client);
    self->client = client;
    load(self);
}

static void
on_progress(EinsoraConnection *connection, const char *what, EinsoraApplication *self)
{
    EinsoraWindow *window = main_window(self);

    if (window == NULL)
        return;
    einsora_window_show_connecting(window, what);
    einsora_window_set_server(window, einsora_connection_get_server(connection),
                              einsora_connection_is_local(connection));
}

static void
stop_following_logs(EinsoraApplication *self)
{
    if (self->logs != NULL)
        g_cancellable_cancel(self->logs);
    g_clear_object(&self->logs);
}

static void
close_relay(EinsoraApplication *self)
{
    if (self->relay != NULL)
        einsora_access_relay_close(self->relay);
    g_clear_object(&self->relay);
    self->relay_proxy_port = 0;
    g_clear_pointer(&self->relay_failure, g_free);
}

static void
connect_daemon(EinsoraApplication *self)
{
    g_autofree gchar *server = g_settings_get_string(self->settings, "daemon-url");

    stop_following_logs(self);
    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    if (self->feed != NULL)
        einsora_event_feed_stop(self->feed);
    g_clear_object(&self->feed);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->connection);
    /* Nothing acts on, or shows, the daemon it was connected to before;
     * its notebook windows reach it no more. */
    g_clear_object(&self->client);
    close_relay(self);
    einsora_workload_list_replace(self->workloads, NULL);
    self->ready = FALSE;
    self->cancellable = g_cancellable_new();
    self->connection = einsora_connection_new(server, NULL);
    g_signal_connect_object(self->connection, "progress", G_CALLBACK(on_progress), self, 0);
    einsora_connection_ensure_async(self->connection, DAEMON_START_TIMEOUT_MS, self->cancellable,
                                    on_connected, g_object_ref(self));
}

static EinsoraWorkloadItem *
lookup(EinsoraApplication *self, GVariant *parameter)
{
    return einsora_workload_list_lookup(self->workloads, g_variant_get_string(parameter, NULL));
}

static void
toast(EinsoraApplication *self, const char *text)
{
    EinsoraWindow *window = main_window(self);

    if (window != NULL)
        einsora_window_toast(window, text);
}

/* The answer of stop, start or delete: the feed brings the change; only
 * a refusal needs saying. */
static void
on_change_answered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);

    if (answer != NULL && JSON_NODE_HOLDS_OBJECT(answer))
        einsora_workload_list_upsert(self->workloads, json_node_get_object(answer));
    else if (error != NULL && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        toast(self, error->message);
}

typedef void (*WorkloadChange)(EinsoraClient *client, const char *id, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);

/* Stop, start or delete: the same request shape and the same answer. */
static void
change_workload(EinsoraApplication *self, GVariant *parameter, WorkloadChange change)
{
    if (self->client != NULL)
        change(self->client, g_variant_get_string(parameter, NULL), self->cancellable,
               on_change_answered, g_object_ref(self));
}

static void
on_stop_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    change_workload(user_data, parameter, einsora_client_stop_workload_async);
}

static void
on_start_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    change_workload(user_data, parameter, einsora_client_start_workload_async);
}

static void
on_delete_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    EinsoraWindow *window = main_window(self);

    /* Its page has nothing left to show. */
    if (self->client != NULL && window != NULL &&
        einsora_workload_page_get_item(einsora_window_get_workload_page(window)) ==
            lookup(self, parameter))
        einsora_window_show_list(window);
    change_workload(self, parameter, einsora_client_delete_workload_async);
}

typedef struct {
    EinsoraApplication *self;
    gchar *workload_id;
} PageLoad;

static void
on_page_events(GObject *source, GAsyncResult *result, gpointer user_data)
{
    PageLoad *load = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    EinsoraWindow *window = main_window(load->self);
    EinsoraWorkloadPage *page = window != NULL ? einsora_window_get_workload_page(window) : NULL;
    EinsoraWorkloadItem *item = page != NULL ? einsora_workload_page_get_item(page) : NULL;
    JsonNode *events = answer != NULL && JSON_NODE_HOLDS_OBJECT(answer)
                           ? json_object_get_member(json_node_get_object(answer), "events")
                           : NULL;

    if (error != NULL && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        toast(load->self, error->message);
    /* Still the page it was asked for. */
    if (item != NULL && g_strcmp0(einsora_workload_item_get_id(item), load->workload_id) == 0 &&
        events != NULL && JSON_NODE_HOLDS_ARRAY(events))
        einsora_workload_page_add_events(page, json_node_get_array(events));
    g_object_unref(load->self);
    g_free(load->workload_id);
    g_free(load);
}

static void
on_show_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    EinsoraWorkloadItem *item = lookup(self, parameter);
    EinsoraWindow *window;
    PageLoad *load;

    g_application_activate(G_APPLICATION(self));
    window = main_window(self);
    if (window == NULL || item == NULL || self->client == NULL)
        return;
    einsora_window_show_workload(window, item);
    load = g_new0(PageLoad, 1);
    load->self = g_object_ref(self);
    load->workload_id = g_strdup(einsora_workload_item_get_id(item));
    einsora_client_list_events_async(self->client, load->workload_id, self->cancellable,
                                     on_page_events, load);
}

/* The workload page's Logs: followed from when the page asks until it
 * goes (or asks for another), through GET .../logs?follow=true. */
typedef struct {
    EinsoraApplication *self;
    gchar *workload_id;
} LogFollow;

static void
on_log_text(const char *text, gsize length, gpointer user_data)
{
    LogFollow *follow = user_data;
    EinsoraWindow *window = main_window(follow->self);

    if (window != NULL)
        einsora_workload_page_append_log(einsora_window_get_workload_page(window),
                                         follow->workload_id, text, length);
}

static void
on_logs_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    LogFollow *follow = user_data;
    g_autoptr(GError) error = NULL;

    /* No output yet (it never ran) says so in the view, as a line. */
    if (!einsora_client_read_logs_finish(EINSORA_CLIENT(source), result, &error) &&
        !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_autofree gchar *line = g_strdup_printf("[einsora] %s\n", error->message);
        on_log_text(line, strlen(line), follow);
    }
    g_object_unref(follow->self);
    g_free(follow->workload_id);
    g_free(follow);
}

static void
on_follow_logs(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    const char *workload_id = NULL;
    const char *query = NULL;
    LogFollow *follow;

    g_variant_get(parameter, "(&s&s)", &workload_id, &query);
    stop_following_logs(self);
    if (*workload_id == '\0' || self->client == NULL)
        return;
    self->logs = g_cancellable_new();
    follow = g_new0(LogFollow, 1);
    follow->self = g_object_ref(self);
    follow->workload_id = g_strdup(workload_id);
    einsora_client_read_logs_async(self->client, workload_id, query, on_log_text, follow,
                                   self->logs, on_logs_done, follow);
}

/* New events of the workload whose page is shown join its timeline. */
static void
on_workload_event(EinsoraApplication *self, JsonObject *event, gpointer user_data)
{
    EinsoraWindow *window = main_window(self);

    if (window != NULL)
        einsora_workload_page_add_event(einsora_window_get_workload_page(window), event);
}

static void
on_export_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *done = NULL;

    if (!g_file_replace_contents_finish(G_FILE(source), result, NULL, &error)) {
        toast(self, error->message);
        return;
    }
    done = g_strdup_printf(_("Exported to %s"), g_file_peek_path(G_FILE(source)));
    toast(self, done);
}

static void
on_exported(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GFile) file = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, &raw, &error);
    EinsoraApplication *self = g_object_get_data(G_OBJECT(file), "einsora-app");

    if (answer == NULL) {
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            toast(self, error->message);
        return;
    }
    /* As the API gave it, byte for byte; written off the main loop. */
    g_file_replace_contents_bytes_async(file, raw, NULL, FALSE, G_FILE_CREATE_PRIVATE, NULL,
                                        on_export_written, g_object_ref(self));
}

static void
on_export_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    const char *id = NULL, *path = NULL;
    g_autofree gchar *request_path = NULL;
    GFile *file;

    g_variant_get(parameter, "(&s&s)", &id, &path);
    if (self->client == NULL)
        return;
    file = g_file_new_for_path(path);
    g_object_set_data_full(G_OBJECT(file), "einsora-app", g_object_ref(self), g_object_unref);
    request_path = g_strdup_printf("/v1/workloads/%s/export", id);
    einsora_client_request_async(self->client, "GET", request_path, NULL, NULL, self->cancellable,
                                 on_exported, file);
}

static void
on_dialog_created(EinsoraNewWorkloadDialog *dialog, JsonObject *workload, EinsoraApplication *self)
{
    g_autofree gchar *text =
        g_strdup_printf(_("Created %s"), einsora_json_member_string(workload, "name"));

    einsora_workload_list_upsert(self->workloads, workload);
    toast(self, text);
}

static void
on_catalog(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    EinsoraWindow *window = main_window(self);
    EinsoraNewWorkloadDialog *dialog;

    if (answer == NULL || !JSON_NODE_HOLDS_OBJECT(answer)) {
        if (error != NULL && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            toast(self, error->message);
        return;
    }
    dialog = einsora_new_workload_dialog_new(GTK_WINDOW(window), self->client,
                                             json_node_get_object(answer));
    g_signal_connect_object(dialog, "created", G_CALLBACK(on_dialog_created), self, 0);
    gtk_window_present(GTK_WINDOW(dialog));
}

/* The catalog is read each time: the quota shown is today's. */
static void
on_new_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;

    if (self->client != NULL)
        einsora_client_get_catalog_async(self->client, self->cancellable, on_catalog,
                                         g_object_ref(self));
}

/* The Usage view's two reports (by day, by workload) over the same days:
 * UTC days, as the records are kept, today's the last. */
typedef struct {
    EinsoraApplication *app;
    GDateTime *first_day;
    gboolean by_day;
} UsageCall;

static void
usage_call_free(UsageCall *call)
{
    g_object_unref(call->app);
    g_date_time_unref(call->first_day);
    g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(UsageCall, usage_call_free)

static void
on_usage(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(UsageCall) call = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    EinsoraWindow *window = main_window(call->app);
    EinsoraUsageView *view = window != NULL ? einsora_window_get_usage_view(window) : NULL;
    JsonObject *report;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) || view == NULL)
        return;
    if (answer == NULL || !JSON_NODE_HOLDS_OBJECT(answer)) {
        einsora_usage_view_set_error(view, error != NULL ? error->message
                                                         : _("The daemon's answer isn't a report"));
        return;
    }
    report = json_node_get_object(answer);
    if (call->by_day)
        einsora_usage_view_set_days(view, report, call->first_day);
    else
        einsora_usage_view_set_workloads(view, report);
}

static void
on_load_usage(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autoptr(GDateTime) today = NULL;
    g_autoptr(GDateTime) first_day = NULL;
    g_autoptr(GDateTime) end = NULL;
    g_autofree gchar *from = NULL, *to = NULL;

    if (self->client == NULL)
        return;
    today = g_date_time_new_utc(g_date_time_get_year(now), g_date_time_get_month(now),
                                g_date_time_get_day_of_month(now), 0, 0, 0);
    first_day = g_date_time_add_days(today, 1 - EINSORA_USAGE_VIEW_DAYS);
    end = g_date_time_add_days(today, 1);
    from = g_date_time_format(first_day, "%Y-%m-%dT%H:%M:%SZ");
    to = g_date_time_format(end, "%Y-%m-%dT%H:%M:%SZ");
    for (guint i = 0; i < 2; i++) {
        UsageCall *call = g_new0(UsageCall, 1);
        g_autofree gchar *query = NULL;

        call->app = g_object_ref(self);
        call->first_day = g_date_time_ref(first_day);
        call->by_day = i == 0;
        query = g_strdup_printf("from=%s&to=%s&group_by=%s", from, to,
                                call->by_day ? "day" : "workload");
        einsora_client_get_usage_async(self->client, query, self->cancellable, on_usage, call);
    }
}

static void
on_load_machines(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;

    if (self->client != NULL)
        einsora_client_list_machines_async(self->client, self->cancellable, on_machines,
                                           g_object_ref(self));
}

static void
on_add_machine(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    EinsoraAddMachineDialog *dialog;

    if (self->client == NULL)
        return;
    dialog = einsora_add_machine_dialog_new(GTK_WINDOW(main_window(self)), self->client);
    gtk_window_present(GTK_WINDOW(dialog));
}

static void
on_machine_revoked(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    g_autofree gchar *text = NULL;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    if (answer == NULL || !JSON_NODE_HOLDS_OBJECT(answer)) {
        toast(self, error != NULL ? error->message : _("The daemon's answer isn't a machine"));
        return;
    }
    text = g_strdup_printf(_("%s is revoked: its agent can't sync any more"),
                           einsora_json_member_string(json_node_get_object(answer), "name"));
    toast(self, text);
    on_load_machines(NULL, NULL, self);
}

/* Asked already, on the Machines page. */
static void
on_revoke_machine(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;

    if (self->client != NULL)
        einsora_client_revoke_machine_async(self->client, g_variant_get_string(parameter, NULL),
                                            self->cancellable, on_machine_revoked,
                                            g_object_ref(self));
}

static GtkWindow *
notebook_window(EinsoraApplication *self, const char *workload_id)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(self)); l != NULL; l = l->next)
        if (g_strcmp0(einsora_notebook_module_get_workload_id(l->data), workload_id) == 0)
            return l->data;
    return NULL;
}

static void
on_notebook_wants_browser(GtkWindow *window, EinsoraApplication *self)
{
    g_action_group_activate_action(
        G_ACTION_GROUP(self), "open-in-browser",
        g_variant_new_string(einsora_notebook_module_get_workload_id(window)));
}

/* Every notebook window, also those a page opens (new-tab links), can
 * ask for the browser. */
static void
on_window_added(GtkApplication *application, GtkWindow *window, gpointer user_data)
{
    if (einsora_notebook_module_get_workload_id(window) != NULL)
        g_signal_connect_object(window, "open-in-browser", G_CALLBACK(on_notebook_wants_browser),
                                application, 0);
}

/* The relay couldn't reach the server (an untrusted certificate, a port
 * that refuses): said in the main window and in every notebook window,
 * any of which may have asked. */
static void
on_relay_failed(EinsoraAccessRelay *relay, const GError *error, EinsoraApplication *self)
{
    gint64 now = g_get_monotonic_time();
    g_autofree gchar *text = NULL;

    g_message("relay: %s", error->message);
    if (g_strcmp0(self->relay_failure, error->message) == 0 &&
        now - self->relay_failure_us < RELAY_FAILURE_QUIET_US)
        return;
    g_free(self->relay_failure);
    self->relay_failure = g_strdup(error->message);
    self->relay_failure_us = now;
    text = g_strdup_printf(_("The server’s access proxy can’t be reached: %s"), error->message);
    toast(self, text);
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(self)); l != NULL; l = l->next)
        einsora_notebook_module_toast(l->data, text);
}

/* The relay to the access proxy at @port of the connected server, made
 * if it must be (again, if the proxy moved). */
static EinsoraAccessRelay *
access_relay(EinsoraApplication *self, gint64 port, GError **error)
{
    g_autoptr(GUri) server = NULL;
    g_autoptr(EinsoraAccessRelay) relay = NULL;

    if (port <= 0 || port > G_MAXUINT16) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            _("The daemon’s answer doesn’t say where its access proxy is."));
        return NULL;
    }
    if (self->relay != NULL && self->relay_proxy_port == (guint)port)
        return self->relay;
    server = g_uri_parse(einsora_client_get_base_url(self->client), G_URI_FLAGS_NONE, NULL);
    if (server == NULL || g_uri_get_host(server) == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            _("The daemon’s address has no host to relay to."));
        return NULL;
    }
    /* The certificate is checked as the API's is: the pin, or the CAs. */
    relay = einsora_access_relay_new(g_uri_get_host(server), (guint)port,
                                     einsora_client_get_tls_database(self->client));
    if (!einsora_access_relay_listen(relay, 0, error))
        return NULL;
    g_signal_connect_object(relay, "failed", G_CALLBACK(on_relay_failed), self, 0);
    close_relay(self);
    self->relay = g_steal_pointer(&relay);
    self->relay_proxy_port = (guint)port;
    g_message("relaying 127.0.0.1:%u to %s:%u over TLS", einsora_access_relay_get_port(self->relay),
              g_uri_get_host(server), (guint)port);
    return self->relay;
}

/* @url, a link or base URL in @answer (an access grant), as this machine
 * reaches it: as it is from the server's own loopback, or through the
 * relay when the access proxy speaks TLS, as einsora open does. */
static gchar *
reachable_url(EinsoraApplication *self, JsonObject *answer, const char *url, GError **error)
{
    JsonObject *proxy = einsora_json_member_object(answer, "proxy");
    EinsoraAccessRelay *relay;
    gchar *local;

    if (self->client == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "not connected");
        return NULL;
    }
    if (!einsora_json_member_boolean(proxy, "tls", FALSE)) {
        if (!einsora_client_server_is_local(einsora_client_get_base_url(self->client))) {
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                                _("The server’s access proxy listens on its own loopback only, "
                                  "so this computer can’t reach it: its operator sets "
                                  "--access-listen to an address people reach (it then speaks "
                                  "TLS)."));
            return NULL;
        }
        return g_strdup(url);
    }
    relay = access_relay(self, einsora_json_member_int(proxy, "port", 0), error);
    if (relay == NULL)
        return NULL;
    local = einsora_access_relay_local_url(relay, url);
    if (local == NULL)
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            _("The daemon’s link isn’t a URL."));
    return local;
}

static void
on_browser_launched(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraApplication) self = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_app_info_launch_default_for_uri_finish(result, &error))
        toast(self, error->message);
}

typedef struct {
    EinsoraApplication *self;
    gchar *workload_id;
    gboolean in_browser;
} Opening;

static void
opening_free(Opening *opening)
{
    g_object_unref(opening->self);
    g_free(opening->workload_id);
    g_free(opening);
}

/* A one-time link (POST .../access): into a notebook window of its own,
 * or to the user's browser. The link is never logged: it holds a ticket. */
static void
on_access_link(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Opening *opening = user_data;
    EinsoraApplication *self = opening->self;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    JsonObject *object =
        answer != NULL && JSON_NODE_HOLDS_OBJECT(answer) ? json_node_get_object(answer) : NULL;
    const char *link = einsora_json_member_string(object, "url");
    g_autofree gchar *url = NULL;
    EinsoraWorkloadItem *item = einsora_workload_list_lookup(self->workloads, opening->workload_id);
    gboolean handled = FALSE;

    if (link != NULL)
        url = reachable_url(self, object, link, &error);
    if (url == NULL) {
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            toast(self, error != NULL ? error->message : _("The daemon gave no link to open."));
    } else if (opening->in_browser) {
        g_signal_emit(self, signals[SIGNAL_OPEN_IN_BROWSER], 0, url, &handled);
        if (!handled)
            g_app_info_launch_default_for_uri_async(url, NULL, NULL, on_browser_launched,
                                                    g_object_ref(self));
    } else {
        /* The first notebook window loads WebKit (ADR 0031). */
        GtkWindow *window = einsora_notebook_module_new_window(
            GTK_APPLICATION(self), opening->workload_id,
            item != NULL ? einsora_workload_item_get_name(item) : opening->workload_id, url,
            &error);

        if (window != NULL) {
            gtk_window_present(window);
        } else {
            g_message("no notebook window: %s", error->message);
            toast(self, error->message);
        }
    }
    opening_free(opening);
}

static void
open_workload(EinsoraApplication *self, const char *workload_id, gboolean in_browser)
{
    Opening *opening;
    GtkWindow *window = in_browser ? NULL : notebook_window(self, workload_id);

    /* Its window is open already: that one. */
    if (window != NULL) {
        gtk_window_present(window);
        return;
    }
    if (self->client == NULL)
        return;
    opening = g_new0(Opening, 1);
    opening->self = g_object_ref(self);
    opening->workload_id = g_strdup(workload_id);
    opening->in_browser = in_browser;
    einsora_client_open_workload_async(self->client, workload_id, self->cancellable, on_access_link,
                                       opening);
}

static void
on_open_workload(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    g_autofree gchar *open_in = g_settings_get_string(self->settings, "open-in");

    open_workload(self, g_variant_get_string(parameter, NULL), g_str_equal(open_in, "browser"));
}

static void
on_open_in_browser(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    open_workload(EINSORA_APPLICATION(user_data), g_variant_get_string(parameter, NULL), TRUE);
}

/* ---- endpoints: their base URL and the chat ------------------------ */

typedef void (*BaseUrlFunc)(EinsoraApplication *self, const char *workload_id,
                            const char *base_url);

typedef struct {
    EinsoraApplication *self;
    gchar *workload_id;
    BaseUrlFunc then;
} Granting;

static void
granting_free(Granting *granting)
{
    g_object_unref(granting->self);
    g_free(granting->workload_id);
    g_free(granting);
}

/* An endpoint's access grant is its base URL: no ticket, nothing secret,
 * so it is shown and copied as it is; the token stays apart. */
static void
on_endpoint_granted(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Granting *granting = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    JsonObject *object =
        answer != NULL && JSON_NODE_HOLDS_OBJECT(answer) ? json_node_get_object(answer) : NULL;
    const char *granted = einsora_json_member_string(object, "base_url");
    g_autofree gchar *base_url = NULL;

    if (granted != NULL)
        base_url = reachable_url(granting->self, object, granted, &error);
    if (base_url != NULL)
        granting->then(granting->self, granting->workload_id, base_url);
    else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        toast(granting->self,
              error != NULL ? error->message : _("The daemon gave no base URL for the endpoint."));
    granting_free(granting);
}

static void
grant_endpoint(EinsoraApplication *self, const char *workload_id, BaseUrlFunc then)
{
    Granting *granting;

    if (self->client == NULL)
        return;
    granting = g_new0(Granting, 1);
    granting->self = g_object_ref(self);
    granting->workload_id = g_strdup(workload_id);
    granting->then = then;
    einsora_client_open_workload_async(self->client, workload_id, self->cancellable,
                                       on_endpoint_granted, granting);
}

static void
show_base_url(EinsoraApplication *self, const char *workload_id, const char *base_url)
{
    EinsoraWindow *window = main_window(self);

    if (window != NULL)
        einsora_workload_page_set_base_url(einsora_window_get_workload_page(window), workload_id,
                                           base_url);
}

/* The workload page shows a running endpoint: its base URL. */
static void
on_endpoint_base_url(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    grant_endpoint(EINSORA_APPLICATION(user_data), g_variant_get_string(parameter, NULL),
                   show_base_url);
}

static GtkWindow *
chat_window(EinsoraApplication *self, const char *workload_id)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(self)); l != NULL; l = l->next)
        if (EINSORA_IS_CHAT_WINDOW(l->data) &&
            g_strcmp0(einsora_chat_window_get_workload_id(l->data), workload_id) == 0)
            return l->data;
    return NULL;
}

static void
open_chat(EinsoraApplication *self, const char *workload_id, const char *base_url)
{
    EinsoraWorkloadItem *item = einsora_workload_list_lookup(self->workloads, workload_id);
    EinsoraChatWindow *window;

    if (self->connection == NULL || chat_window(self, workload_id) != NULL)
        return;
    window =
        einsora_chat_window_new(GTK_APPLICATION(self), workload_id,
                                item != NULL ? einsora_workload_item_get_name(item) : workload_id,
                                base_url, einsora_connection_get_token(self->connection));
    gtk_window_present(GTK_WINDOW(window));
}

/* Chat with an endpoint: its window, with the app's own API token. */
static void
on_chat_endpoint(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    const char *workload_id = g_variant_get_string(parameter, NULL);
    GtkWindow *window = chat_window(self, workload_id);

    if (window != NULL)
        gtk_window_present(window);
    else
        grant_endpoint(self, workload_id, open_chat);
}

static void
on_quit(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    /* Only the app: the daemon and its workloads run on. */
    g_application_quit(G_APPLICATION(user_data));
}

static void
on_reconnect(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    connect_daemon(EINSORA_APPLICATION(user_data));
}

/* The person compared the fingerprint the error page shows with the
 * server's, and trusts it: kept in the pins the CLI keeps too. */
static void
on_trust_certificate(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    g_autoptr(GError) error = NULL;

    if (self->connection == NULL || self->refused_fingerprint == NULL)
        return;
    if (!einsora_connection_trust_certificate(self->connection, self->refused_fingerprint,
                                              &error)) {
        show_error(self, error->message);
        return;
    }
    g_clear_pointer(&self->refused_fingerprint, g_free);
    connect_daemon(self);
}

/* A Lab server's address and token (or this machine again): the dialog
 * sets daemon-url and activates app.reconnect. */
static void
on_connect_server(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    EinsoraServerDialog *dialog;

    /* Asked over D-Bus with no window open: the dialog needs one (its
     * parent, and the application its Connect reaches). */
    if (main_window(self) == NULL)
        g_application_activate(G_APPLICATION(self));
    dialog = einsora_server_dialog_new(GTK_WINDOW(main_window(self)), self->settings);
    gtk_window_present(GTK_WINDOW(dialog));
}

static void
on_preferences(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;
    GtkWindow *parent = GTK_WINDOW(main_window(self));
    EinsoraPreferencesWindow *window = NULL;

    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(self)); l != NULL; l = l->next)
        if (EINSORA_IS_PREFERENCES_WINDOW(l->data))
            window = l->data;
    if (window == NULL) {
        window = einsora_preferences_window_new(parent, self->settings, self->autostart);
        gtk_window_set_application(GTK_WINDOW(window), GTK_APPLICATION(self));
    }
    gtk_window_present(GTK_WINDOW(window));
}

static void
on_about(GSimpleAction *action, GVariant *parameter, gpointer user_data)
{
    EinsoraApplication *self = user_data;

    adw_show_about_window(GTK_WINDOW(main_window(self)), "application-name", _("Einsora"),
                          "application-icon", EINSORA_APPLICATION_ID, "version", EINSORA_VERSION,
                          "comments", _("Notebooks on your own machines, each in its own sandbox"),
                          NULL);
}

static const GActionEntry app_actions[] = {
    {"new-workload", on_new_workload, NULL, NULL, NULL, {0}},
    {"show-workload", on_show_workload, "s", NULL, NULL, {0}},
    {"open-workload", on_open_workload, "s", NULL, NULL, {0}},
    {"open-in-browser", on_open_in_browser, "s", NULL, NULL, {0}},
    {"endpoint-base-url", on_endpoint_base_url, "s", NULL, NULL, {0}},
    {"chat-endpoint", on_chat_endpoint, "s", NULL, NULL, {0}},
    {"stop-workload", on_stop_workload, "s", NULL, NULL, {0}},
    {"start-workload", on_start_workload, "s", NULL, NULL, {0}},
    {"delete-workload", on_delete_workload, "s", NULL, NULL, {0}},
    {"export-workload", on_export_workload, "(ss)", NULL, NULL, {0}},
    {"follow-logs", on_follow_logs, "(ss)", NULL, NULL, {0}},
    {"load-usage", on_load_usage, NULL, NULL, NULL, {0}},
    {"load-machines", on_load_machines, NULL, NULL, NULL, {0}},
    {"add-machine", on_add_machine, NULL, NULL, NULL, {0}},
    {"revoke-machine", on_revoke_machine, "s", NULL, NULL, {0}},
    {"quit", on_quit, NULL, NULL, NULL, {0}},
    {"reconnect", on_reconnect, NULL, NULL, NULL, {0}},
    {"trust-certificate", on_trust_certificate, NULL, NULL, NULL, {0}},
    {"connect-server", on_connect_server, NULL, NULL, NULL, {0}},
    {"preferences", on_preferences, NULL, NULL, NULL, {0}},
    {"about", on_about, NULL, NULL, NULL, {0}},
};

/* The tray (docs/adr/0020-tray.md): its menu opens running notebooks,
 * shows the window and quits. It is there while the user keeps
 * "keep-running-in-tray" ("Show in the tray", docs/adr/0066); while a
 * host shows it the app holds itself once, so closing the last window
 * leaves it running; the hold goes when the tray does. */
static void
update_tray_hold(EinsoraApplication *self)
{
    gboolean hold = self->tray != NULL && einsora_tray_is_available(self->tray) &&
                    g_settings_get_boolean(self->settings, "keep-running-in-tray");

    if (hold == self->tray_hold)
        return;
    self->tray_hold = hold;
    if (hold)
        g_application_hold(G_APPLICATION(self));
    else
        g_application_release(G_APPLICATION(self));
}

static void
on_tray_available(EinsoraTray *tray, GParamSpec *pspec, EinsoraApplication *self)
{
    update_tray_hold(self);
}

static void start_tray(EinsoraApplication *self);

static void
stop_tray(EinsoraApplication *self)
{
    if (self->tray == NULL)
        return;
    g_signal_handlers_disconnect_by_data(self->tray, self);
    /* Its bus name goes with it: the watcher drops the item. */
    g_clear_object(&self->tray);
}

static void
on_keep_running_changed(GSettings *settings, const char *key, EinsoraApplication *self)
{
    if (g_settings_get_boolean(settings, "keep-running-in-tray"))
        start_tray(self);
    else
        stop_tray(self);
    update_tray_hold(self);
}

static void
on_tray_open_workload(EinsoraTray *tray, const char *id, EinsoraApplication *self)
{
    g_action_group_activate_action(G_ACTION_GROUP(self), "open-workload", g_variant_new_string(id));
}

static void
on_tray_show_window(EinsoraTray *tray, EinsoraApplication *self)
{
    g_application_activate(G_APPLICATION(self));
}

static void
on_tray_quit(EinsoraTray *tray, EinsoraApplication *self)
{
    g_application_quit(G_APPLICATION(self));
}

static void
start_tray(EinsoraApplication *self)
{
    GDBusConnection *bus = g_application_get_dbus_connection(G_APPLICATION(self));
    g_autoptr(GError) error = NULL;

#ifdef __APPLE__
    bus = NULL; /* no StatusNotifierWatcher: a menu bar item instead, docs/macos.md */
#endif
    if (bus == NULL || self->tray != NULL ||
        !g_settings_get_boolean(self->settings, "keep-running-in-tray"))
        return; /* no session bus, no tray; or not wanted */
    self->tray = einsora_tray_new(bus, G_LIST_MODEL(self->workloads), EINSORA_APPLICATION_ID);
    g_signal_connect(self->tray, "open-workload", G_CALLBACK(on_tray_open_workload), self);
    g_signal_connect(self->tray, "show-window", G_CALLBACK(on_tray_show_window), self);
    g_signal_connect(self->tray, "quit", G_CALLBACK(on_tray_quit), self);
    g_signal_connect(self->tray, "notify::available", G_CALLBACK(on_tray_available), self);
    if (!einsora_tray_start(self->tray, &error)) {
        g_message("no tray icon: %s", error->message);
        stop_tray(self);
    }
}

static void
einsora_application_startup(GApplication *application)
{
    EinsoraApplication *self = EINSORA_APPLICATION(application);
    static const char *const quit_accels[] = {"<Primary>q", NULL};
    static const char *const reconnect_accels[] = {"<Primary><Shift>r", NULL};
    static const char *const new_accels[] = {"<Primary>n", NULL};
    static const char *const preferences_accels[] = {"<Primary>comma", NULL};
    /* What starts the app at login: in the background, no window. */
    static const char *const login_commandline[] = {"einsora-app", "--background", NULL};

    G_APPLICATION_CLASS(einsora_application_parent_class)->startup(application);
    self->settings = g_settings_new(EINSORA_APPLICATION_ID);
    g_action_map_add_action_entries(G_ACTION_MAP(self), app_actions, G_N_ELEMENTS(app_actions),
                                    self);
    gtk_application_set_accels_for_action(GTK_APPLICATION(self), "app.quit", quit_accels);
    gtk_application_set_accels_for_action(GTK_APPLICATION(self), "app.reconnect", reconnect_accels);
    gtk_application_set_accels_for_action(GTK_APPLICATION(self), "app.new-workload", new_accels);
    gtk_application_set_accels_for_action(GTK_APPLICATION(self), "app.preferences",
                                          preferences_accels);
    self->autostart = einsora_autostart_new(g_application_get_dbus_connection(application),
                                            EINSORA_APPLICATION_ID, login_commandline);
    g_signal_connect(self->settings, "changed::keep-running-in-tray",
                     G_CALLBACK(on_keep_running_changed), self);
    start_tray(self);
}

static void
einsora_application_activate(GApplication *application)
{
    EinsoraApplication *self = EINSORA_APPLICATION(application);
    EinsoraWindow *window = main_window(self);

    if (self->background) {
        /* Started at login: connected (for notifications), no window. */
        self->background = FALSE;
        if (!self->background_hold)
            g_application_hold(application);
        self->background_hold = TRUE;
        g_message("started in the background");
        if (self->connection == NULL)
            connect_daemon(self);
        return;
    }
    if (window == NULL) {
        window = einsora_window_new(GTK_APPLICATION(self), G_LIST_MODEL(self->workloads),
                                    self->settings);
        if (self->ready)
            einsora_window_show_ready(window);
        if (self->connection != NULL)
            einsora_window_set_server(window, einsora_connection_get_server(self->connection),
                                      einsora_connection_is_local(self->connection));
    }
    gtk_window_present(GTK_WINDOW(window));
    /* The window holds the app now; once closed, the tray or nothing. */
    if (self->background_hold)
        g_application_release(application);
    self->background_hold = FALSE;
    if (self->connection == NULL)
        connect_daemon(self);
}

/* --background, at login (docs/adr/0066): a first instance starts with
 * no window; one already running is left as it is. */
static gint
einsora_application_handle_local_options(GApplication *application, GVariantDict *options)
{
    EinsoraApplication *self = EINSORA_APPLICATION(application);
    g_autoptr(GError) error = NULL;

    if (!g_variant_dict_contains(options, "background"))
        return -1;
    if (!g_application_register(application, NULL, &error)) {
        g_printerr("%s\n", error->message);
        return 1;
    }
    if (g_application_get_is_remote(application))
        return 0;
    self->background = TRUE;
    return -1;
}

static void
einsora_application_shutdown(GApplication *application)
{
    EinsoraApplication *self = EINSORA_APPLICATION(application);

    stop_following_logs(self);
    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    close_relay(self);
    if (self->settings != NULL)
        g_signal_handlers_disconnect_by_data(self->settings, self);
    stop_tray(self);
    G_APPLICATION_CLASS(einsora_application_parent_class)->shutdown(application);
}

static void
einsora_application_dispose(GObject *object)
{
    EinsoraApplication *self = EINSORA_APPLICATION(object);

    if (self->feed != NULL)
        einsora_event_feed_stop(self->feed);
    g_clear_object(&self->feed);
    stop_following_logs(self);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->connection);
    g_clear_pointer(&self->refused_fingerprint, g_free);
    close_relay(self);
    g_clear_object(&self->client);
    g_clear_object(&self->workloads);
    g_clear_object(&self->settings);
    g_clear_object(&self->autostart);
    G_OBJECT_CLASS(einsora_application_parent_class)->dispose(object);
}

static void
einsora_application_class_init(EinsoraApplicationClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = einsora_application_dispose;
    G_APPLICATION_CLASS(klass)->startup = einsora_application_startup;
    G_APPLICATION_CLASS(klass)->activate = einsora_application_activate;
    G_APPLICATION_CLASS(klass)->shutdown = einsora_application_shutdown;
    G_APPLICATION_CLASS(klass)->handle_local_options = einsora_application_handle_local_options;
    /* The daemon answered and the first list is in (tests wait for it). */
    signals[SIGNAL_READY] = g_signal_new("ready", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                         NULL, NULL, NULL, G_TYPE_NONE, 0);
    /* A link to open in the user's browser: a handler that returns TRUE
     * opened it (tests); else the default browser does. */
    signals[SIGNAL_OPEN_IN_BROWSER] = g_signal_new(
        "open-in-browser", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
        g_signal_accumulator_true_handled, NULL, NULL, G_TYPE_BOOLEAN, 1, G_TYPE_STRING);
    /* An event of the feed, after the list took the workload's change. */
    signals[SIGNAL_WORKLOAD_EVENT] =
        g_signal_new("workload-event", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, JSON_TYPE_OBJECT);
}

static void
einsora_application_init(EinsoraApplication *self)
{
    self->workloads = einsora_workload_list_new();
    g_signal_connect(self, "workload-event", G_CALLBACK(on_workload_event), NULL);
    g_signal_connect(self, "window-added", G_CALLBACK(on_window_added), NULL);
    g_application_add_main_option(G_APPLICATION(self), "background", 0, G_OPTION_FLAG_NONE,
                                  G_OPTION_ARG_NONE,
                                  _("Start in the background, with no window (as at login)"), NULL);
}

EinsoraApplication *
einsora_application_new(void)
{
    return g_object_new(EINSORA_TYPE_APPLICATION, "application-id", EINSORA_APPLICATION_ID, "flags",
                        G_APPLICATION_DEFAULT_FLAGS, "resource-base-path", "/dev/einsora/Einsora",
                        NULL);
}

EinsoraClient *
einsora_application_get_client(EinsoraApplication *self)
{
    return self->client;
}

EinsoraWorkloadList *
einsora_application_get_workloads(EinsoraApplication *self)
{
    return self->workloads;
}

gboolean
einsora_application_is_ready(EinsoraApplication *self)
{
    return self->ready;
}

EinsoraConnection *
einsora_application_get_connection(EinsoraApplication *self)
{
    return self->connection;
}
