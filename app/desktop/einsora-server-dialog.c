#define G_LOG_DOMAIN "einsora-app"

#include "einsora-server-dialog.h"

#include <glib/gi18n.h>
#include <string.h>

#include "einsora-connection.h"
#include "einsora-token-store.h"

struct _EinsoraServerDialog {
    AdwWindow parent_instance;
    GtkRevealer *error_revealer;
    GtkLabel *error_label;
    AdwPreferencesGroup *server_group;
    AdwEntryRow *url_row;
    AdwPasswordEntryRow *token_row;

    GSettings *settings;
    EinsoraTokenStore *store;
    GCancellable *cancellable;
    gchar *url; /* being connected to */
};

G_DEFINE_FINAL_TYPE(EinsoraServerDialog, einsora_server_dialog, ADW_TYPE_WINDOW)

static void
show_error(EinsoraServerDialog *self, const char *message)
{
    gtk_label_set_text(self->error_label, message != NULL ? message : "");
    gtk_revealer_set_reveal_child(self->error_revealer, message != NULL);
}

static void
set_busy(EinsoraServerDialog *self, gboolean busy)
{
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.connect", !busy);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.use-local", !busy);
}

/* Where tokens are kept, once the store has chosen: said under the rows. */
static void
on_backend(EinsoraTokenStore *store, GParamSpec *pspec, EinsoraServerDialog *self)
{
    const char *backend = einsora_token_store_get_backend(store);
    g_autofree gchar *text = NULL;

    if (g_strcmp0(backend, EINSORA_TOKEN_STORE_SECRET_SERVICE) == 0)
        text = g_strdup(_("The token is kept in your keyring (the Secret Service)."));
    else if (g_strcmp0(backend, EINSORA_TOKEN_STORE_FILE) == 0)
        text = g_strdup_printf(_("The token is kept in %s, which only you can read (no keyring "
                                 "answered)."),
                               einsora_token_store_get_path(store));
    if (text != NULL)
        adw_preferences_group_set_description(self->server_group, text);
}

static void
reconnect(EinsoraServerDialog *self)
{
    gtk_widget_activate_action(GTK_WIDGET(self), "app.reconnect", NULL);
    gtk_window_close(GTK_WINDOW(self));
}

static void
use_server(EinsoraServerDialog *self)
{
    g_message("the daemon is now %s", self->url);
    g_settings_set_string(self->settings, "daemon-url", self->url);
    reconnect(self);
}

static void
on_saved(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraServerDialog) self = user_data;
    g_autoptr(GError) error = NULL;

    if (!einsora_token_store_save_finish(EINSORA_TOKEN_STORE(source), result, &error)) {
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
            set_busy(self, FALSE);
            show_error(self, error->message);
        }
        return;
    }
    use_server(self);
}

/* No token typed: the one kept for the server, if there is one. */
static void
on_looked_up(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraServerDialog) self = user_data;
    g_autoptr(GError) error = NULL;
    gchar *token = einsora_token_store_lookup_finish(EINSORA_TOKEN_STORE(source), result, &error);
    gboolean kept = token != NULL;

    if (token != NULL)
        explicit_bzero(token, strlen(token));
    g_free(token);
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    set_busy(self, FALSE);
    if (error != NULL)
        show_error(self, error->message);
    else if (!kept)
        show_error(self, _("Give the server’s API token: none is kept for it yet."));
    else
        use_server(self);
}

/* An address as typed, without spaces around it or a slash at its end. */
static gchar *
typed_url(EinsoraServerDialog *self)
{
    gchar *url = g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(self->url_row))));
    gsize length = strlen(url);

    while (length > 0 && url[length - 1] == '/')
        url[--length] = '\0';
    return url;
}

static void
on_connect(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraServerDialog *self = EINSORA_SERVER_DIALOG(widget);
    g_autofree gchar *url = typed_url(self);
    g_autofree gchar *token =
        g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(self->token_row))));
    g_autoptr(GError) error = NULL;

    show_error(self, NULL);
    if (!einsora_connection_check_server(url, &error)) {
        show_error(self, error->message);
        return;
    }
    g_free(self->url);
    self->url = g_steal_pointer(&url);
    /* This machine's daemon has its own token, which the app reads. */
    if (einsora_connection_server_is_local(self->url)) {
        if (*token != '\0') {
            show_error(self, _("A daemon on this machine uses its own token: leave API Token "
                               "empty."));
            return;
        }
        use_server(self);
        return;
    }
    set_busy(self, TRUE);
    if (*token != '\0')
        einsora_token_store_save_async(self->store, self->url, token, self->cancellable, on_saved,
                                       g_object_ref(self));
    else
        einsora_token_store_lookup_async(self->store, self->url, self->cancellable, on_looked_up,
                                         g_object_ref(self));
    explicit_bzero(token, strlen(token));
}

static void
on_use_local(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraServerDialog *self = EINSORA_SERVER_DIALOG(widget);

    g_message("the daemon is now this machine's");
    g_settings_reset(self->settings, "daemon-url");
    reconnect(self);
}

static void
einsora_server_dialog_dispose(GObject *object)
{
    EinsoraServerDialog *self = EINSORA_SERVER_DIALOG(object);

    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->store);
    g_clear_object(&self->settings);
    g_clear_pointer(&self->url, g_free);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_SERVER_DIALOG);
    G_OBJECT_CLASS(einsora_server_dialog_parent_class)->dispose(object);
}

static void
einsora_server_dialog_class_init(EinsoraServerDialogClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_server_dialog_dispose;
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-server-dialog.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, error_revealer);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, error_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, server_group);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, url_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, token_row);
    gtk_widget_class_install_action(widget_class, "dialog.connect", NULL, on_connect);
    gtk_widget_class_install_action(widget_class, "dialog.use-local", NULL, on_use_local);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
on_row_activated(AdwEntryRow *row, EinsoraServerDialog *self)
{
    gtk_widget_activate_action(GTK_WIDGET(self), "dialog.connect", NULL);
}

static void
einsora_server_dialog_init(EinsoraServerDialog *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->cancellable = g_cancellable_new();
    self->store = einsora_token_store_new();
    g_signal_connect_object(self->store, "notify::backend", G_CALLBACK(on_backend), self, 0);
    on_backend(self->store, NULL, self);
    /* Enter in either row connects. */
    g_signal_connect_object(self->url_row, "entry-activated", G_CALLBACK(on_row_activated), self,
                            0);
    g_signal_connect_object(self->token_row, "entry-activated", G_CALLBACK(on_row_activated), self,
                            0);
}

EinsoraServerDialog *
einsora_server_dialog_new(GtkWindow *parent, GSettings *settings)
{
    EinsoraServerDialog *self =
        g_object_new(EINSORA_TYPE_SERVER_DIALOG, "transient-for", parent, "application",
                     parent != NULL ? gtk_window_get_application(parent) : NULL, NULL);
    g_autofree gchar *url = g_settings_get_string(settings, "daemon-url");

    self->settings = g_object_ref(settings);
    gtk_editable_set_text(GTK_EDITABLE(self->url_row), url);
    return self;
}

void
einsora_server_dialog_set_url(EinsoraServerDialog *self, const char *url)
{
    gtk_editable_set_text(GTK_EDITABLE(self->url_row), url);
}

void
einsora_server_dialog_set_token(EinsoraServerDialog *self, const char *token)
{
    gtk_editable_set_text(GTK_EDITABLE(self->token_row), token);
}

const char *
einsora_server_dialog_get_error(EinsoraServerDialog *self)
{
    if (!gtk_revealer_get_reveal_child(self->error_revealer))
        return NULL;
    return gtk_label_get_text(self->error_label);
}
