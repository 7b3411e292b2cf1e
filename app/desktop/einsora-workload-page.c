#define G_LOG_DOMAIN "einsora-app"

#include "einsora-workload-page.h"

#include <glib/gi18n.h>
#include <string.h>

#include "einsora-format.h"
#include "einsora-json-member.h"

#define REASON_MAX_CHARS 400

struct _EinsoraWorkloadPage {
    GtkWidget parent_instance;
    GtkWidget *box;
    AdwToastOverlay *toasts;
    AdwWindowTitle *title;
    GtkWidget *open_button;
    GtkWidget *chat_button;
    GtkWidget *endpoint_group;
    GtkLabel *base_url_label;
    GtkGrid *properties_grid;
    GtkListBox *timeline_list;
    GtkTextView *logs_view;
    GtkWidget *logs_scroller;
    GString *log_pending; /* a line begun and not yet ended */
    /* Logs are asked for when the page shows a workload, and again when
     * a new attempt of it begins (it comes back to provisioning or
     * running): the follow ended with the attempt before. */
    gboolean logs_asked;
    gboolean logs_live;
    GPtrArray *property_values; /* GtkLabel, in the order of property_names */
    GtkWidget *model_name;      /* the label naming ROW_MODEL */
    EinsoraWorkloadItem *item;
    gulong notify_handler;
    GHashTable *event_ids;
    /* A running endpoint's base URL, once the app had it granted; asked
     * once each time the endpoint is seen running. */
    gchar *base_url;
    gboolean base_url_asked;
};

G_DEFINE_FINAL_TYPE(EinsoraWorkloadPage, einsora_workload_page, GTK_TYPE_WIDGET)

enum { SIGNAL_BACK, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef enum {
    ROW_STATE,
    ROW_KIND,
    ROW_CLASS,
    ROW_IMAGE,
    ROW_REGION,
    ROW_MACHINE,
    ROW_DRIVER,
    ROW_CREATED,
    ROW_ID,
    ROW_MODEL, /* last: only an endpoint has one, so it is hidden from the others */
    N_ROWS
} PropertyRow;

static const char *const property_names[N_ROWS] = {
    N_("State"),   N_("Kind"),   N_("Class"),   N_("Image"), N_("Region"),
    N_("Machine"), N_("Driver"), N_("Created"), N_("ID"),    N_("Model"),
};

static const char *
item_id(EinsoraWorkloadPage *self)
{
    return self->item != NULL ? einsora_workload_item_get_id(self->item) : NULL;
}

static void
activate_app_action(EinsoraWorkloadPage *self, const char *name)
{
    if (item_id(self) != NULL)
        gtk_widget_activate_action(GTK_WIDGET(self), name, "s", item_id(self));
}

/* The most lines the Logs view keeps; older ones scroll away for good
 * (`einsora logs` has them all). */
#define LOG_MAX_LINES 2000
#define LOG_TAIL "tail=500&follow=true"

static void
clear_log(EinsoraWorkloadPage *self)
{
    gtk_text_buffer_set_text(gtk_text_view_get_buffer(self->logs_view), "", 0);
    g_string_truncate(self->log_pending, 0);
}

/* Asks the app to follow this workload's logs into the page (an empty ID
 * stops whatever it follows). */
static void
follow_logs(EinsoraWorkloadPage *self, const char *workload_id)
{
    clear_log(self);
    gtk_widget_activate_action(GTK_WIDGET(self), "app.follow-logs", "(ss)",
                               workload_id != NULL ? workload_id : "", LOG_TAIL);
}

static void
on_back(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraWorkloadPage *self = EINSORA_WORKLOAD_PAGE(widget);

    /* Followed while the page is open, no longer. */
    gtk_widget_activate_action(widget, "app.follow-logs", "(ss)", "", "");
    self->logs_asked = FALSE;
    g_signal_emit(widget, signals[SIGNAL_BACK], 0);
}

static void
on_open(GtkWidget *widget, const char *action, GVariant *parameter)
{
    activate_app_action(EINSORA_WORKLOAD_PAGE(widget), "app.open-workload");
}

static void
on_open_in_browser(GtkWidget *widget, const char *action, GVariant *parameter)
{
    activate_app_action(EINSORA_WORKLOAD_PAGE(widget), "app.open-in-browser");
}

static void
on_stop(GtkWidget *widget, const char *action, GVariant *parameter)
{
    activate_app_action(EINSORA_WORKLOAD_PAGE(widget), "app.stop-workload");
}

static void
on_start(GtkWidget *widget, const char *action, GVariant *parameter)
{
    activate_app_action(EINSORA_WORKLOAD_PAGE(widget), "app.start-workload");
}

static void
on_chat(GtkWidget *widget, const char *action, GVariant *parameter)
{
    activate_app_action(EINSORA_WORKLOAD_PAGE(widget), "app.chat-endpoint");
}

static void
on_copy_base_url(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraWorkloadPage *self = EINSORA_WORKLOAD_PAGE(widget);

    if (self->base_url == NULL)
        return;
    gdk_clipboard_set_text(gtk_widget_get_clipboard(widget), self->base_url);
    adw_toast_overlay_add_toast(self->toasts, adw_toast_new(_("Base URL copied")));
}

/* The answer of a dialog may come after the page shows another workload,
 * or is gone: it acts on the workload the dialog named, through the app. */
#define DIALOG_WORKLOAD_ID "einsora-workload-id"

static void
activate_for_dialog(GObject *dialog, const char *action, GVariant *parameter)
{
    GApplication *application = g_application_get_default();

    if (application != NULL)
        g_action_group_activate_action(G_ACTION_GROUP(application), action, parameter);
}

static void
on_delete_response(AdwMessageDialog *dialog, const char *response, gpointer user_data)
{
    const char *id = g_object_get_data(G_OBJECT(dialog), DIALOG_WORKLOAD_ID);

    if (g_strcmp0(response, "delete") == 0 && id != NULL)
        activate_for_dialog(G_OBJECT(dialog), "delete-workload", g_variant_new_string(id));
}

static void
on_delete(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraWorkloadPage *self = EINSORA_WORKLOAD_PAGE(widget);
    GtkRoot *root = gtk_widget_get_root(widget);
    GtkWidget *dialog;

    if (self->item == NULL)
        return;
    dialog = adw_message_dialog_new(GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL,
                                    _("Delete Workload?"), NULL);
    adw_message_dialog_format_body(
        ADW_MESSAGE_DIALOG(dialog),
        _("“%s” and everything it stored will be deleted. This can't be undone."),
        einsora_workload_item_get_name(self->item));
    adw_message_dialog_add_responses(ADW_MESSAGE_DIALOG(dialog), "cancel", _("_Cancel"), "delete",
                                     _("_Delete"), NULL);
    adw_message_dialog_set_response_appearance(ADW_MESSAGE_DIALOG(dialog), "delete",
                                               ADW_RESPONSE_DESTRUCTIVE);
    adw_message_dialog_set_default_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    adw_message_dialog_set_close_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    g_object_set_data_full(G_OBJECT(dialog), DIALOG_WORKLOAD_ID, g_strdup(item_id(self)), g_free);
    g_signal_connect(dialog, "response", G_CALLBACK(on_delete_response), NULL);
    gtk_window_present(GTK_WINDOW(dialog));
}

static void
on_export_chosen(GtkNativeDialog *chooser, int response, gpointer user_data)
{
    const char *id = g_object_get_data(G_OBJECT(chooser), DIALOG_WORKLOAD_ID);
    g_autoptr(GFile) file = NULL;
    g_autofree gchar *path = NULL;

    if (response == GTK_RESPONSE_ACCEPT)
        file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(chooser));
    path = file != NULL ? g_file_get_path(file) : NULL;
    if (path != NULL && id != NULL)
        activate_for_dialog(G_OBJECT(chooser), "export-workload", g_variant_new("(ss)", id, path));
    g_object_unref(chooser);
}

static void
on_export(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraWorkloadPage *self = EINSORA_WORKLOAD_PAGE(widget);
    GtkRoot *root = gtk_widget_get_root(widget);
    GtkFileChooserNative *chooser;
    g_autofree gchar *name = NULL;

    if (self->item == NULL)
        return;
    chooser = gtk_file_chooser_native_new(_("Export Timeline"),
                                          GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL,
                                          GTK_FILE_CHOOSER_ACTION_SAVE, _("_Export"), NULL);
    name = g_strdup_printf("%s.json", einsora_workload_item_get_name(self->item));
    gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(chooser), name);
    gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(chooser), TRUE);
    g_object_set_data_full(G_OBJECT(chooser), DIALOG_WORKLOAD_ID, g_strdup(item_id(self)), g_free);
    g_signal_connect(chooser, "response", G_CALLBACK(on_export_chosen), NULL);
    gtk_native_dialog_show(GTK_NATIVE_DIALOG(chooser));
}

static void
einsora_workload_page_dispose(GObject *object)
{
    EinsoraWorkloadPage *self = EINSORA_WORKLOAD_PAGE(object);

    einsora_workload_page_set_item(self, NULL);
    g_clear_pointer(&self->property_values, g_ptr_array_unref);
    g_clear_pointer(&self->event_ids, g_hash_table_unref);
    g_clear_pointer(&self->base_url, g_free);
    if (self->log_pending != NULL)
        g_string_free(g_steal_pointer(&self->log_pending), TRUE);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_WORKLOAD_PAGE);
    G_OBJECT_CLASS(einsora_workload_page_parent_class)->dispose(object);
}

static void
einsora_workload_page_class_init(EinsoraWorkloadPageClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_workload_page_dispose;
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-workload-page.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, box);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, toasts);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, title);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, open_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, chat_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, endpoint_group);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, base_url_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, properties_grid);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, timeline_list);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, logs_view);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadPage, logs_scroller);
    gtk_widget_class_install_action(widget_class, "page.back", NULL, on_back);
    gtk_widget_class_install_action(widget_class, "page.open", NULL, on_open);
    gtk_widget_class_install_action(widget_class, "page.open-in-browser", NULL, on_open_in_browser);
    gtk_widget_class_install_action(widget_class, "page.stop", NULL, on_stop);
    gtk_widget_class_install_action(widget_class, "page.start", NULL, on_start);
    gtk_widget_class_install_action(widget_class, "page.delete", NULL, on_delete);
    gtk_widget_class_install_action(widget_class, "page.export", NULL, on_export);
    gtk_widget_class_install_action(widget_class, "page.chat", NULL, on_chat);
    gtk_widget_class_install_action(widget_class, "page.copy-base-url", NULL, on_copy_base_url);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Escape, 0, "page.back", NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Left, GDK_ALT_MASK, "page.back",
                                        NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_o, GDK_CONTROL_MASK, "page.open",
                                        NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Delete, 0, "page.delete", NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_e, GDK_CONTROL_MASK, "page.export",
                                        NULL);
    /* The user asked to go back to the list. */
    signals[SIGNAL_BACK] = g_signal_new("back", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
                                        NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
einsora_workload_page_init(EinsoraWorkloadPage *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->log_pending = g_string_new(NULL);
    {
        GtkTextBuffer *buffer = gtk_text_view_get_buffer(self->logs_view);
        GtkTextIter end;
        gtk_text_buffer_get_end_iter(buffer, &end);
        gtk_text_buffer_create_mark(buffer, "end", &end, FALSE);
    }
    self->property_values = g_ptr_array_new();
    self->event_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    /* Two columns of name and value: the timeline stays in view. */
    for (guint i = 0; i < N_ROWS; i++) {
        GtkWidget *name = gtk_label_new(_(property_names[i]));
        GtkWidget *value = gtk_label_new(NULL);
        int column = i % 2 == 0 ? 0 : 2, line = (int)(i / 2);

        gtk_label_set_xalign(GTK_LABEL(name), 0);
        gtk_widget_add_css_class(name, "dim-label");
        gtk_label_set_xalign(GTK_LABEL(value), 0);
        gtk_label_set_selectable(GTK_LABEL(value), TRUE);
        gtk_label_set_ellipsize(GTK_LABEL(value), PANGO_ELLIPSIZE_MIDDLE);
        gtk_widget_set_hexpand(value, TRUE);
        gtk_grid_attach(self->properties_grid, name, column, line, 1, 1);
        gtk_grid_attach(self->properties_grid, value, column + 1, line, 1, 1);
        g_ptr_array_add(self->property_values, value);
        if (i == ROW_MODEL)
            self->model_name = name;
    }
}

GtkWidget *
einsora_workload_page_new(void)
{
    return g_object_new(EINSORA_TYPE_WORKLOAD_PAGE, NULL);
}

static void
set_row(EinsoraWorkloadPage *self, PropertyRow row, const char *value)
{
    gtk_label_set_text(g_ptr_array_index(self->property_values, row),
                       value != NULL && *value != '\0' ? value : "—");
}

static gboolean
state_in(const char *state, const char *const *states)
{
    return state != NULL && g_strv_contains(states, state);
}

/* An endpoint's API: its base URL while it runs (the app asks the
 * access grant for it, app.endpoint-base-url, and hands it back with
 * einsora_workload_page_set_base_url()), and Chat. */
static void
show_endpoint(EinsoraWorkloadPage *self, gboolean endpoint, gboolean running)
{
    gtk_widget_set_visible(self->endpoint_group, endpoint);
    gtk_widget_set_visible(self->chat_button, endpoint);
    if (!endpoint || !running) {
        /* A stopped endpoint's URL answers nothing: it is asked again
         * when it runs again. */
        g_clear_pointer(&self->base_url, g_free);
        self->base_url_asked = FALSE;
    } else if (self->base_url == NULL && !self->base_url_asked) {
        self->base_url_asked = gtk_widget_activate_action(GTK_WIDGET(self), "app.endpoint-base-url",
                                                          "s", item_id(self));
    }
    gtk_label_set_text(self->base_url_label, self->base_url != NULL ? self->base_url
                                             : running              ? _("Asking…")
                                                                    : _("Once it is running"));
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "page.copy-base-url", self->base_url != NULL);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "page.chat", endpoint && running);
}

static void
show_item(EinsoraWorkloadPage *self)
{
    EinsoraWorkloadItem *item = self->item;
    const char *state = item != NULL ? einsora_workload_item_get_state(item) : NULL;
    gboolean notebook =
        item != NULL && g_strcmp0(einsora_workload_item_get_kind(item), "notebook") == 0;
    gboolean endpoint = item != NULL && einsora_workload_item_is_endpoint(item);
    gboolean running = g_strcmp0(state, "running") == 0;
    g_autoptr(GDateTime) created = NULL;
    g_autofree gchar *created_text = NULL;

    if (item == NULL)
        return;
    adw_window_title_set_title(self->title, einsora_workload_item_get_name(item));
    adw_window_title_set_subtitle(self->title, einsora_format_state_label(state));
    set_row(self, ROW_STATE, einsora_format_state_label(state));
    set_row(self, ROW_KIND, einsora_format_kind(einsora_workload_item_get_kind(item)));
    set_row(self, ROW_MODEL, einsora_workload_item_get_model(item));
    gtk_widget_set_visible(self->model_name, endpoint);
    gtk_widget_set_visible(g_ptr_array_index(self->property_values, ROW_MODEL), endpoint);
    set_row(self, ROW_CLASS, einsora_workload_item_get_class(item));
    set_row(self, ROW_IMAGE, einsora_workload_item_get_image(item));
    set_row(self, ROW_REGION, einsora_workload_item_get_region(item));
    set_row(self, ROW_MACHINE,
            einsora_workload_item_get_machine_name(item) != NULL
                ? einsora_workload_item_get_machine_name(item)
                : einsora_workload_item_get_machine_id(item));
    set_row(self, ROW_DRIVER, einsora_workload_item_get_driver(item));
    created = einsora_format_parse_time(einsora_workload_item_get_created_at(item));
    if (created != NULL) {
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        created_text = einsora_format_event_time(created, now);
    }
    set_row(self, ROW_CREATED, created_text);
    set_row(self, ROW_ID, einsora_workload_item_get_id(item));

    show_endpoint(self, endpoint, running);
    {
        gboolean live =
            state_in(state, (const char *const[]){"provisioning", "running", "stopping", NULL});
        if (!self->logs_asked || (live && !self->logs_live)) {
            self->logs_asked = TRUE;
            follow_logs(self, einsora_workload_item_get_id(item));
        }
        self->logs_live = live;
    }
    gtk_widget_set_visible(self->open_button, !endpoint);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "page.open", notebook && running);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "page.open-in-browser", notebook && running);
    gtk_widget_action_set_enabled(
        GTK_WIDGET(self), "page.stop",
        state_in(state,
                 (const char *const[]){"pending", "queued", "provisioning", "running", NULL}));
    gtk_widget_action_set_enabled(
        GTK_WIDGET(self), "page.start",
        state_in(state, (const char *const[]){"stopped", "failed", NULL}));
    gtk_widget_action_set_enabled(
        GTK_WIDGET(self), "page.delete",
        !state_in(state, (const char *const[]){"deleting", "deleted", NULL}));
}

static void
on_item_notify(EinsoraWorkloadItem *item, GParamSpec *pspec, EinsoraWorkloadPage *self)
{
    show_item(self);
}

void
einsora_workload_page_set_item(EinsoraWorkloadPage *self, EinsoraWorkloadItem *item)
{
    GtkWidget *child;

    if (self->item == item)
        return;
    if (self->item != NULL) {
        g_clear_signal_handler(&self->notify_handler, self->item);
        g_clear_object(&self->item);
    }
    g_hash_table_remove_all(self->event_ids);
    g_clear_pointer(&self->base_url, g_free);
    self->base_url_asked = FALSE;
    self->logs_asked = FALSE;
    self->logs_live = FALSE;
    clear_log(self);
    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->timeline_list))) != NULL)
        gtk_list_box_remove(self->timeline_list, child);
    if (item == NULL)
        return;
    self->item = g_object_ref(item);
    self->notify_handler = g_signal_connect(item, "notify", G_CALLBACK(on_item_notify), self);
    show_item(self);
}

EinsoraWorkloadItem *
einsora_workload_page_get_item(EinsoraWorkloadPage *self)
{
    return self->item;
}

void
einsora_workload_page_add_event(EinsoraWorkloadPage *self, JsonObject *event)
{
    const char *id = einsora_json_member_string(event, "id");
    g_autofree gchar *transition = NULL;
    g_autofree gchar *reason = NULL;
    g_autofree gchar *title = NULL;
    g_autofree gchar *subtitle = NULL;
    g_autofree gchar *when = NULL;
    g_autoptr(GDateTime) time = NULL;
    GtkWidget *row, *time_label;

    if (id == NULL || self->item == NULL ||
        g_strcmp0(einsora_json_member_string(event, "workload_id"), item_id(self)) != 0 ||
        g_hash_table_contains(self->event_ids, id))
        return;
    g_hash_table_add(self->event_ids, g_strdup(id));
    transition = einsora_format_transition(einsora_json_member_string(event, "from_state"),
                                           einsora_json_member_string(event, "to_state"));
    reason = einsora_format_reason(einsora_json_member_string(event, "reason"), REASON_MAX_CHARS);
    time = einsora_format_parse_time(einsora_json_member_string(event, "created_at"));
    if (time != NULL) {
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        when = einsora_format_event_time(time, now);
    }
    title = g_markup_escape_text(transition, -1);
    subtitle = g_markup_escape_text(reason, -1);
    row = adw_action_row_new();
    adw_preferences_row_set_title(ADW_PREFERENCES_ROW(row), title);
    adw_action_row_set_subtitle(ADW_ACTION_ROW(row), subtitle);
    time_label = gtk_label_new(when != NULL ? when : "");
    gtk_widget_add_css_class(time_label, "dim-label");
    gtk_widget_add_css_class(time_label, "numeric");
    adw_action_row_add_suffix(ADW_ACTION_ROW(row), time_label);
    gtk_list_box_append(self->timeline_list, row);
}

void
einsora_workload_page_add_events(EinsoraWorkloadPage *self, JsonArray *events)
{
    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonNode *node = json_array_get_element(events, i);
        if (JSON_NODE_HOLDS_OBJECT(node))
            einsora_workload_page_add_event(self, json_node_get_object(node));
    }
}

guint
einsora_workload_page_get_n_events(EinsoraWorkloadPage *self)
{
    return g_hash_table_size(self->event_ids);
}

void
einsora_workload_page_set_base_url(EinsoraWorkloadPage *self, const char *workload_id,
                                   const char *base_url)
{
    g_return_if_fail(EINSORA_IS_WORKLOAD_PAGE(self));

    /* An answer for a page that moved on, or an endpoint that stopped
     * since, is dropped. */
    if (self->item == NULL || g_strcmp0(workload_id, item_id(self)) != 0 ||
        !einsora_workload_item_is_endpoint(self->item) ||
        g_strcmp0(einsora_workload_item_get_state(self->item), "running") != 0)
        return;
    g_free(self->base_url);
    self->base_url = g_strdup(base_url);
    show_item(self);
}

const char *
einsora_workload_page_get_base_url(EinsoraWorkloadPage *self)
{
    return self->base_url;
}

void
einsora_workload_page_append_log(EinsoraWorkloadPage *self, const char *workload_id,
                                 const char *text, gsize length)
{
    GtkTextBuffer *buffer;
    GtkTextIter end;
    const char *last;
    g_autofree gchar *lines = NULL;
    g_autofree gchar *valid = NULL;
    int excess;

    g_return_if_fail(EINSORA_IS_WORKLOAD_PAGE(self));
    if (self->item == NULL || g_strcmp0(workload_id, item_id(self)) != 0)
        return;
    g_string_append_len(self->log_pending, text, (gssize)length);
    last = memrchr(self->log_pending->str, '\n', self->log_pending->len);
    if (last == NULL)
        return;
    /* Whole lines only, so a character split between reads stays whole. */
    lines = g_strndup(self->log_pending->str, (gsize)(last - self->log_pending->str) + 1);
    g_string_erase(self->log_pending, 0, (gssize)(last - self->log_pending->str) + 1);
    valid = g_utf8_make_valid(lines, -1);
    buffer = gtk_text_view_get_buffer(self->logs_view);
    gtk_text_buffer_get_end_iter(buffer, &end);
    gtk_text_buffer_insert(buffer, &end, valid, -1);
    excess = gtk_text_buffer_get_line_count(buffer) - 1 - LOG_MAX_LINES;
    if (excess > 0) {
        GtkTextIter start, cut;
        gtk_text_buffer_get_start_iter(buffer, &start);
        gtk_text_buffer_get_iter_at_line(buffer, &cut, excess);
        gtk_text_buffer_delete(buffer, &start, &cut);
    }
    gtk_text_view_scroll_mark_onscreen(self->logs_view, gtk_text_buffer_get_mark(buffer, "end"));
}

gchar *
einsora_workload_page_get_log_text(EinsoraWorkloadPage *self)
{
    GtkTextBuffer *buffer;
    GtkTextIter start, end;

    g_return_val_if_fail(EINSORA_IS_WORKLOAD_PAGE(self), NULL);
    buffer = gtk_text_view_get_buffer(self->logs_view);
    gtk_text_buffer_get_bounds(buffer, &start, &end);
    return gtk_text_buffer_get_text(buffer, &start, &end, FALSE);
}
