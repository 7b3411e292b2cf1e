#define G_LOG_DOMAIN "einsora-app"

#include "einsora-preferences-window.h"

#include <glib/gi18n.h>

struct _EinsoraPreferencesWindow {
    AdwPreferencesWindow parent_instance;
    GSettings *settings;
    EinsoraAutostart *autostart;
    GCancellable *cancellable;
    GtkSwitch *tray_switch;
    GtkSwitch *login_switch;
    AdwActionRow *login_row;
    gchar *login_subtitle; /* the row's own, shown again once it works */
    gboolean busy;         /* an answer about start at login is awaited */
    gboolean putting_back; /* the switch is moved back, not by a person */
};

G_DEFINE_FINAL_TYPE(EinsoraPreferencesWindow, einsora_preferences_window,
                    ADW_TYPE_PREFERENCES_WINDOW)

static void
on_autostart_set(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraPreferencesWindow) self = user_data;
    g_autoptr(GError) error = NULL;
    gboolean wanted = gtk_switch_get_active(self->login_switch);
    gboolean done = einsora_autostart_set_enabled_finish(EINSORA_AUTOSTART(source), result, &error);

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return; /* the window closed */
    self->busy = FALSE;
    gtk_widget_set_sensitive(GTK_WIDGET(self->login_switch), TRUE);
    if (done) {
        g_settings_set_boolean(self->settings, "start-at-login", wanted);
        gtk_switch_set_state(self->login_switch, wanted);
        adw_action_row_set_subtitle(self->login_row, self->login_subtitle);
        return;
    }
    /* Back as it was, and why, on the row and in a toast. */
    g_message("start at login: %s", error->message);
    self->putting_back = TRUE;
    gtk_switch_set_active(self->login_switch, !wanted);
    gtk_switch_set_state(self->login_switch, !wanted);
    self->putting_back = FALSE;
    g_settings_set_boolean(self->settings, "start-at-login", !wanted);
    adw_action_row_set_subtitle(self->login_row, error->message);
    adw_preferences_window_add_toast(ADW_PREFERENCES_WINDOW(self), adw_toast_new(error->message));
}

/* The switch moved: the state follows once the portal (or the file)
 * has done it. */
static gboolean
on_login_state_set(GtkSwitch *login_switch, gboolean state, EinsoraPreferencesWindow *self)
{
    if (self->putting_back)
        return FALSE;
    if (self->busy)
        return TRUE;
    self->busy = TRUE;
    gtk_widget_set_sensitive(GTK_WIDGET(self->login_switch), FALSE);
    einsora_autostart_set_enabled_async(
        self->autostart, state, "",
        _("Einsora keeps running in the background so that notifications about your workloads "
          "still arrive."),
        self->cancellable, on_autostart_set, g_object_ref(self));
    return TRUE;
}

static void
einsora_preferences_window_dispose(GObject *object)
{
    EinsoraPreferencesWindow *self = EINSORA_PREFERENCES_WINDOW(object);

    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_PREFERENCES_WINDOW);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->settings);
    g_clear_object(&self->autostart);
    G_OBJECT_CLASS(einsora_preferences_window_parent_class)->dispose(object);
}

static void
einsora_preferences_window_finalize(GObject *object)
{
    EinsoraPreferencesWindow *self = EINSORA_PREFERENCES_WINDOW(object);

    g_free(self->login_subtitle);
    G_OBJECT_CLASS(einsora_preferences_window_parent_class)->finalize(object);
}

static void
einsora_preferences_window_class_init(EinsoraPreferencesWindowClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_preferences_window_dispose;
    G_OBJECT_CLASS(klass)->finalize = einsora_preferences_window_finalize;
    gtk_widget_class_set_template_from_resource(
        widget_class, "/dev/einsora/Einsora/einsora-preferences-window.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraPreferencesWindow, tray_switch);
    gtk_widget_class_bind_template_child(widget_class, EinsoraPreferencesWindow, login_switch);
    gtk_widget_class_bind_template_child(widget_class, EinsoraPreferencesWindow, login_row);
    gtk_widget_class_bind_template_callback(widget_class, on_login_state_set);
}

static void
einsora_preferences_window_init(EinsoraPreferencesWindow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->cancellable = g_cancellable_new();
    self->login_subtitle = g_strdup(adw_action_row_get_subtitle(self->login_row));
}

EinsoraPreferencesWindow *
einsora_preferences_window_new(GtkWindow *parent, GSettings *settings, EinsoraAutostart *autostart)
{
    EinsoraPreferencesWindow *self;

    g_return_val_if_fail(G_IS_SETTINGS(settings), NULL);
    g_return_val_if_fail(EINSORA_IS_AUTOSTART(autostart), NULL);
    self = g_object_new(EINSORA_TYPE_PREFERENCES_WINDOW, "transient-for", parent, "application",
                        parent != NULL ? gtk_window_get_application(parent) : NULL, NULL);
    self->settings = g_object_ref(settings);
    self->autostart = g_object_ref(autostart);
    g_settings_bind(settings, "keep-running-in-tray", self->tray_switch, "active",
                    G_SETTINGS_BIND_DEFAULT);
    /* Set before the handler could act: what is, not a request. */
    self->putting_back = TRUE;
    gtk_switch_set_active(self->login_switch, g_settings_get_boolean(settings, "start-at-login"));
    self->putting_back = FALSE;
    return self;
}

gboolean
einsora_preferences_window_is_busy(EinsoraPreferencesWindow *self)
{
    g_return_val_if_fail(EINSORA_IS_PREFERENCES_WINDOW(self), FALSE);
    return self->busy;
}
