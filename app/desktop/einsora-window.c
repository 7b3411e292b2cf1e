#define G_LOG_DOMAIN "einsora-app"

#include "einsora-window.h"

#include <glib/gi18n.h>

#include "einsora-format.h"
#include "einsora-workload-item.h"
#include "einsora-workload-row.h"
#include "einsora-json-member.h"

/* Ages ("5 min") are re-read once a minute: a clock, not the daemon. */
#define AGE_REFRESH_SECONDS 60
/* The Usage view is read again this often while shown: metering's own
 * interval (EINSORA_METERING_INTERVAL's default). */
#define USAGE_REFRESH_SECONDS 60
/* The Machines page is read again this often while shown: an agent
 * syncs every few seconds, and a person watching one join or go
 * offline wants to see it soon. */
#define MACHINES_REFRESH_SECONDS 10
/* A connection that takes longer than this shows the spinner; a local
 * daemon usually answers first, and no spinner flashes. */
#define SPINNER_DELAY_MS 1000

/* The status pages' icons and the spinner are SVG only in Adwaita: the
 * first one drawn or measured (a GtkStack measures its hidden pages too)
 * loads librsvg, about 6 MiB of a start's memory and a part of its time
 * (docs/bench.md, "The desktop app"). So they are set when they are
 * shown. */
#define ERROR_ICON "dialog-error-symbolic"
#define EMPTY_ICON "dev.einsora.Einsora-symbolic"

struct _EinsoraWindow {
    AdwApplicationWindow parent_instance;
    AdwToastOverlay *toasts;
    GtkStack *main_stack;
    AdwStatusPage *connecting_page;
    GtkSpinner *connecting_spinner;
    guint spinner_source;
    AdwStatusPage *error_page;
    GtkLabel *error_label;
    GtkWidget *trust_button;
    GtkStack *list_stack;
    AdwStatusPage *empty_page;
    GtkLabel *count_label;
    AdwViewSwitcherTitle *switcher_title;
    GtkDropDown *filter_dropdown;
    GtkListView *workload_list_view;
    EinsoraMachinesView *machines_view;
    guint machines_source;
    AdwViewStack *view_stack;
    EinsoraUsageView *usage_view;
    guint usage_source;
    AdwLeaflet *leaflet;
    GtkWidget *main_box;
    EinsoraWorkloadPage *workload_page;

    GSettings *settings;
    GListModel *workloads;
    GtkFilterListModel *filtered;
    GtkCustomFilter *filter;
    GHashTable *bound_rows; /* EinsoraWorkloadRow shown now */
    guint age_source;
    /* bench/app-bench.sh: when the first frame, and the first with the
     * list, were painted (EINSORA_APP_TIMING set). */
    gulong paint_handler;
    gboolean first_frame_told;
    gboolean list_shown;
};

G_DEFINE_FINAL_TYPE(EinsoraWindow, einsora_window, ADW_TYPE_APPLICATION_WINDOW)

static gboolean
on_spinner_due(gpointer user_data)
{
    EinsoraWindow *self = user_data;

    self->spinner_source = 0;
    /* (tests/einsora-app-launch-test.c: the spinner's SVG may load now) */
    if (g_getenv("EINSORA_APP_TIMING") != NULL)
        g_print("einsora-app timing: spinner %" G_GINT64_FORMAT "\n", g_get_real_time());
    gtk_spinner_start(self->connecting_spinner);
    return G_SOURCE_REMOVE;
}

/* The connecting page spins only once a connection has taken a while. */
static void
on_main_page(GtkStack *stack, GParamSpec *pspec, EinsoraWindow *self)
{
    gboolean connecting = g_strcmp0(gtk_stack_get_visible_child_name(stack), "connecting") == 0;

    if (connecting && self->spinner_source == 0 &&
        !gtk_spinner_get_spinning(self->connecting_spinner))
        self->spinner_source = g_timeout_add(SPINNER_DELAY_MS, on_spinner_due, self);
    if (!connecting) {
        g_clear_handle_id(&self->spinner_source, g_source_remove);
        gtk_spinner_stop(self->connecting_spinner);
    }
}

static void
einsora_window_dispose(GObject *object)
{
    EinsoraWindow *self = EINSORA_WINDOW(object);

    g_clear_handle_id(&self->age_source, g_source_remove);
    g_clear_handle_id(&self->spinner_source, g_source_remove);
    g_clear_handle_id(&self->usage_source, g_source_remove);
    g_clear_handle_id(&self->machines_source, g_source_remove);
    if (self->main_stack != NULL)
        g_signal_handlers_disconnect_by_func(self->main_stack, on_main_page, self);
    if (self->paint_handler != 0 && gtk_widget_get_frame_clock(GTK_WIDGET(self)) != NULL)
        g_clear_signal_handler(&self->paint_handler, gtk_widget_get_frame_clock(GTK_WIDGET(self)));
    g_clear_pointer(&self->bound_rows, g_hash_table_unref);
    g_clear_object(&self->filtered);
    g_clear_object(&self->filter);
    g_clear_object(&self->workloads);
    g_clear_object(&self->settings);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_WINDOW);
    G_OBJECT_CLASS(einsora_window_parent_class)->dispose(object);
}

static gboolean
einsora_window_close_request(GtkWindow *window)
{
    EinsoraWindow *self = EINSORA_WINDOW(window);
    int width = 0, height = 0;

    gtk_window_get_default_size(window, &width, &height);
    g_settings_set_int(self->settings, "window-width", width);
    g_settings_set_int(self->settings, "window-height", height);
    g_settings_set_boolean(self->settings, "window-maximized", gtk_window_is_maximized(window));
    return GTK_WINDOW_CLASS(einsora_window_parent_class)->close_request(window);
}

static void
einsora_window_class_init(EinsoraWindowClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_window_dispose;
    GTK_WINDOW_CLASS(klass)->close_request = einsora_window_close_request;
    g_type_ensure(EINSORA_TYPE_WORKLOAD_PAGE);
    g_type_ensure(EINSORA_TYPE_USAGE_VIEW);
    g_type_ensure(EINSORA_TYPE_MACHINES_VIEW);
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-window.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, toasts);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, main_stack);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, connecting_page);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, connecting_spinner);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, error_page);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, error_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, trust_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, list_stack);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, empty_page);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, count_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, switcher_title);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, filter_dropdown);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, workload_list_view);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, machines_view);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, view_stack);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, usage_view);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, leaflet);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, main_box);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWindow, workload_page);
}

static void
on_setup_row(GtkSignalListItemFactory *factory, GtkListItem *list_item, EinsoraWindow *self)
{
    gtk_list_item_set_child(list_item, einsora_workload_row_new());
}

static void
on_bind_row(GtkSignalListItemFactory *factory, GtkListItem *list_item, EinsoraWindow *self)
{
    EinsoraWorkloadRow *row = EINSORA_WORKLOAD_ROW(gtk_list_item_get_child(list_item));

    einsora_workload_row_set_item(row, gtk_list_item_get_item(list_item));
    g_hash_table_add(self->bound_rows, row);
}

static void
on_unbind_row(GtkSignalListItemFactory *factory, GtkListItem *list_item, EinsoraWindow *self)
{
    EinsoraWorkloadRow *row = EINSORA_WORKLOAD_ROW(gtk_list_item_get_child(list_item));

    g_hash_table_remove(self->bound_rows, row);
    einsora_workload_row_set_item(row, NULL);
}

static gboolean
on_age_tick(gpointer user_data)
{
    EinsoraWindow *self = user_data;
    GHashTableIter iter;
    gpointer row;

    g_hash_table_iter_init(&iter, self->bound_rows);
    while (g_hash_table_iter_next(&iter, &row, NULL))
        einsora_workload_row_refresh_age(row);
    return G_SOURCE_CONTINUE;
}

static gboolean
matches_filter(gpointer item, gpointer user_data)
{
    EinsoraWindow *self = user_data;
    EinsoraStateFilter filter =
        (EinsoraStateFilter)gtk_drop_down_get_selected(self->filter_dropdown);

    return einsora_format_state_matches(einsora_workload_item_get_state(item), filter);
}

static void
update_count(EinsoraWindow *self)
{
    guint shown = g_list_model_get_n_items(G_LIST_MODEL(self->filtered));
    guint all = g_list_model_get_n_items(self->workloads);
    g_autofree gchar *text = NULL;

    if (shown == all)
        text =
            g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%u workload", "%u workloads", all), all);
    else
        text = g_strdup_printf(
            g_dngettext(GETTEXT_PACKAGE, "%u of %u workload", "%u of %u workloads", all), shown,
            all);
    gtk_label_set_text(self->count_label, text);
    /* Until the list is in, the window shows the connecting page, and the
     * empty page needs no icon yet. */
    if (shown == 0 && self->list_shown)
        adw_status_page_set_icon_name(self->empty_page, EMPTY_ICON);
    gtk_stack_set_visible_child_name(self->list_stack, shown > 0 ? "list" : "empty");
}

static void
on_filtered_changed(GListModel *model, guint position, guint removed, guint added,
                    EinsoraWindow *self)
{
    update_count(self);
}

/* A state change can move an item in or out of the filter. */
static void
on_workload_state(EinsoraWorkloadItem *item, GParamSpec *pspec, EinsoraWindow *self)
{
    gtk_filter_changed(GTK_FILTER(self->filter), GTK_FILTER_CHANGE_DIFFERENT);
}

static void
watch_states(EinsoraWindow *self, guint position, guint added)
{
    for (guint i = position; i < position + added; i++) {
        g_autoptr(EinsoraWorkloadItem) item = g_list_model_get_item(self->workloads, i);

        /* A reload hands back the same items: watched once each. */
        if (g_signal_handler_find(item, G_SIGNAL_MATCH_FUNC | G_SIGNAL_MATCH_DATA, 0, 0, NULL,
                                  on_workload_state, self) == 0)
            g_signal_connect_object(item, "notify::state", G_CALLBACK(on_workload_state), self, 0);
    }
}

static void
on_workloads_changed(GListModel *model, guint position, guint removed, guint added,
                     EinsoraWindow *self)
{
    watch_states(self, position, added);
}

static void
on_filter_selected(GtkDropDown *dropdown, GParamSpec *pspec, EinsoraWindow *self)
{
    EinsoraStateFilter filter = (EinsoraStateFilter)gtk_drop_down_get_selected(dropdown);

    gtk_filter_changed(GTK_FILTER(self->filter), GTK_FILTER_CHANGE_DIFFERENT);
    g_settings_set_string(self->settings, "state-filter",
                          einsora_format_state_filter_to_string(filter));
}

static void
on_row_activated(GtkListView *view, guint position, EinsoraWindow *self)
{
    g_autoptr(EinsoraWorkloadItem) item =
        g_list_model_get_item(G_LIST_MODEL(self->filtered), position);

    /* The app shows the page and loads its timeline. */
    if (item != NULL)
        gtk_widget_activate_action(GTK_WIDGET(self), "app.show-workload", "s",
                                   einsora_workload_item_get_id(item));
}

static void
on_page_back(EinsoraWorkloadPage *page, EinsoraWindow *self)
{
    einsora_window_show_list(self);
}

static gboolean
on_usage_due(gpointer user_data)
{
    EinsoraWindow *self = user_data;

    gtk_widget_activate_action(GTK_WIDGET(self), "app.load-usage", NULL);
    return G_SOURCE_CONTINUE;
}

static gboolean
on_machines_due(gpointer user_data)
{
    EinsoraWindow *self = user_data;

    gtk_widget_activate_action(GTK_WIDGET(self), "app.load-machines", NULL);
    return G_SOURCE_CONTINUE;
}

/* Usage and machines are read only while their views are shown. */
static void
on_view_page(AdwViewStack *stack, GParamSpec *pspec, EinsoraWindow *self)
{
    const char *page = adw_view_stack_get_visible_child_name(stack);
    gboolean usage = g_strcmp0(page, "usage") == 0;
    gboolean machines = g_strcmp0(page, "machines") == 0;

    if (usage && self->usage_source == 0) {
        on_usage_due(self);
        self->usage_source = g_timeout_add_seconds(USAGE_REFRESH_SECONDS, on_usage_due, self);
    }
    if (!usage)
        g_clear_handle_id(&self->usage_source, g_source_remove);
    if (machines && self->machines_source == 0) {
        on_machines_due(self);
        self->machines_source =
            g_timeout_add_seconds(MACHINES_REFRESH_SECONDS, on_machines_due, self);
    }
    if (!machines)
        g_clear_handle_id(&self->machines_source, g_source_remove);
}

static void
on_after_paint(GdkFrameClock *clock, EinsoraWindow *self)
{
    if (!self->first_frame_told) {
        self->first_frame_told = TRUE;
        g_print("einsora-app timing: first-frame %" G_GINT64_FORMAT "\n", g_get_real_time());
    }
    if (self->list_shown) {
        g_print("einsora-app timing: list-frame %" G_GINT64_FORMAT " workloads %u\n",
                g_get_real_time(), g_list_model_get_n_items(self->workloads));
        g_clear_signal_handler(&self->paint_handler, clock);
    }
}

static void
on_realize(GtkWidget *widget, EinsoraWindow *self)
{
    GdkFrameClock *clock = gtk_widget_get_frame_clock(widget);

    if (clock != NULL && g_getenv("EINSORA_APP_TIMING") != NULL)
        self->paint_handler =
            g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), self);
}

static void
einsora_window_init(EinsoraWindow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->bound_rows = g_hash_table_new(NULL, NULL);
    g_signal_connect_object(self->workload_list_view, "activate", G_CALLBACK(on_row_activated),
                            self, 0);
    g_signal_connect_object(self->workload_page, "back", G_CALLBACK(on_page_back), self, 0);
    g_signal_connect(self, "realize", G_CALLBACK(on_realize), self);
    g_signal_connect_object(self->main_stack, "notify::visible-child-name",
                            G_CALLBACK(on_main_page), self, 0);
    g_signal_connect_object(self->view_stack, "notify::visible-child-name",
                            G_CALLBACK(on_view_page), self, 0);
    on_main_page(self->main_stack, NULL, self);
}

EinsoraWindow *
einsora_window_new(GtkApplication *application, GListModel *workloads, GSettings *settings)
{
    EinsoraWindow *self = g_object_new(EINSORA_TYPE_WINDOW, "application", application, NULL);
    g_autoptr(GtkListItemFactory) factory = gtk_signal_list_item_factory_new();
    g_autofree gchar *filter_name = g_settings_get_string(settings, "state-filter");

    self->settings = g_object_ref(settings);
    self->workloads = g_object_ref(workloads);
    gtk_window_set_default_size(GTK_WINDOW(self), g_settings_get_int(settings, "window-width"),
                                g_settings_get_int(settings, "window-height"));
    if (g_settings_get_boolean(settings, "window-maximized"))
        gtk_window_maximize(GTK_WINDOW(self));

    gtk_drop_down_set_selected(self->filter_dropdown,
                               einsora_format_state_filter_from_string(filter_name));
    self->filter = gtk_custom_filter_new(matches_filter, self, NULL);
    self->filtered =
        gtk_filter_list_model_new(g_object_ref(workloads), GTK_FILTER(g_object_ref(self->filter)));
    g_signal_connect_object(self->filtered, "items-changed", G_CALLBACK(on_filtered_changed), self,
                            0);
    g_signal_connect_object(workloads, "items-changed", G_CALLBACK(on_workloads_changed), self, 0);
    watch_states(self, 0, g_list_model_get_n_items(workloads));
    g_signal_connect_object(self->filter_dropdown, "notify::selected",
                            G_CALLBACK(on_filter_selected), self, 0);

    g_signal_connect(factory, "setup", G_CALLBACK(on_setup_row), self);
    g_signal_connect(factory, "bind", G_CALLBACK(on_bind_row), self);
    g_signal_connect(factory, "unbind", G_CALLBACK(on_unbind_row), self);
    gtk_list_view_set_factory(self->workload_list_view, factory);
    gtk_list_view_set_model(
        self->workload_list_view,
        GTK_SELECTION_MODEL(gtk_no_selection_new(G_LIST_MODEL(g_object_ref(self->filtered)))));
    update_count(self);
    self->age_source = g_timeout_add_seconds(AGE_REFRESH_SECONDS, on_age_tick, self);
    return self;
}

void
einsora_window_show_connecting(EinsoraWindow *self, const char *what)
{
    adw_status_page_set_description(self->connecting_page, what);
    gtk_stack_set_visible_child_name(self->main_stack, "connecting");
}

void
einsora_window_show_error(EinsoraWindow *self, const char *message)
{
    einsora_window_show_untrusted(self, message, FALSE);
}

void
einsora_window_show_untrusted(EinsoraWindow *self, const char *message, gboolean offer_trust)
{
    gtk_widget_set_visible(self->trust_button, offer_trust);
    adw_status_page_set_title(self->error_page, offer_trust
                                                    ? _("This Server’s Certificate Isn’t Trusted")
                                                    : _("Einsora Can't Reach Its Daemon"));
    gtk_label_set_text(self->error_label, message);
    adw_status_page_set_icon_name(self->error_page, ERROR_ICON);
    gtk_stack_set_visible_child_name(self->main_stack, "error");
}

void
einsora_window_show_ready(EinsoraWindow *self)
{
    /* The list comes in at once, not with the stack's crossfade: that
     * draws both pages offscreen for its 200 ms, and its buffers stay in
     * the heap (about 5 MiB of a start; docs/bench.md). */
    gtk_stack_set_visible_child_full(self->main_stack, "ready", GTK_STACK_TRANSITION_TYPE_NONE);
    self->list_shown = TRUE;
    update_count(self);
}

void
einsora_window_set_machines(EinsoraWindow *self, JsonArray *machines)
{
    einsora_machines_view_set_machines(self->machines_view, machines);
}

void
einsora_window_set_machines_error(EinsoraWindow *self, const char *message)
{
    einsora_machines_view_set_error(self->machines_view, message);
}

EinsoraMachinesView *
einsora_window_get_machines_view(EinsoraWindow *self)
{
    return self->machines_view;
}

void
einsora_window_show_machines(EinsoraWindow *self)
{
    einsora_window_show_list(self);
    adw_view_stack_set_visible_child_name(self->view_stack, "machines");
}

void
einsora_window_toast(EinsoraWindow *self, const char *text)
{
    /* A toast's title is markup in libadwaita 1.2. */
    g_autofree gchar *escaped = g_markup_escape_text(text, -1);

    adw_toast_overlay_add_toast(self->toasts, adw_toast_new(escaped));
}

EinsoraWorkloadPage *
einsora_window_show_workload(EinsoraWindow *self, EinsoraWorkloadItem *item)
{
    einsora_workload_page_set_item(self->workload_page, item);
    gtk_stack_set_visible_child_name(self->main_stack, "ready");
    adw_leaflet_set_visible_child(self->leaflet, GTK_WIDGET(self->workload_page));
    return self->workload_page;
}

EinsoraWorkloadPage *
einsora_window_get_workload_page(EinsoraWindow *self)
{
    return self->workload_page;
}

void
einsora_window_show_list(EinsoraWindow *self)
{
    adw_leaflet_set_visible_child(self->leaflet, self->main_box);
}

EinsoraUsageView *
einsora_window_get_usage_view(EinsoraWindow *self)
{
    return self->usage_view;
}

void
einsora_window_show_usage(EinsoraWindow *self)
{
    einsora_window_show_list(self);
    adw_view_stack_set_visible_child_name(self->view_stack, "usage");
}

/* Which daemon, said discreetly: a server's name in the window's title
 * (task switchers show it) and the header's subtitle when narrow; the
 * whole address on the workload count's tooltip. */
void
einsora_window_set_server(EinsoraWindow *self, const char *server, gboolean local)
{
    g_autoptr(GUri) uri = server != NULL ? g_uri_parse(server, G_URI_FLAGS_NONE, NULL) : NULL;
    const char *host = uri != NULL ? g_uri_get_host(uri) : NULL;
    g_autofree gchar *title = NULL, *tooltip = NULL;

    if (local || host == NULL) {
        title = g_strdup(_("Einsora"));
        tooltip = g_strdup_printf(_("This machine’s daemon, at %s"), server);
        host = "";
    } else {
        /* Translators: the main window's title; %s is a server's name. */
        title = g_strdup_printf(_("Einsora — %s"), host);
        tooltip = g_strdup_printf(_("The daemon at %s"), server);
    }
    gtk_window_set_title(GTK_WINDOW(self), title);
    adw_view_switcher_title_set_subtitle(self->switcher_title, host);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->count_label), tooltip);
}
