#define G_LOG_DOMAIN "einsora-app"

#include "einsora-server-dialog.h"

#include <glib/gi18n.h>
#include <string.h>

#include "einsora-client.h"
#include "einsora-connection.h"
#include "einsora-pinned-database.h"
#include "einsora-server-pins.h"
#include "einsora-token-store.h"

struct _EinsoraServerDialog {
    AdwWindow parent_instance;
    GtkRevealer *error_revealer;
    GtkLabel *error_label;
    GtkWidget *trust_button;
    AdwPreferencesGroup *server_group;
    AdwEntryRow *url_row;
    AdwEntryRow *email_row;
    AdwPasswordEntryRow *password_row;
    AdwPasswordEntryRow *new_password_row;
    AdwPasswordEntryRow *token_row;

    GSettings *settings;
    EinsoraTokenStore *store;
    GCancellable *cancellable;
    gchar *url;       /* being connected to */
    gchar *presented; /* the fingerprint of a certificate refused at sign-in */
};

G_DEFINE_FINAL_TYPE(EinsoraServerDialog, einsora_server_dialog, ADW_TYPE_WINDOW)

static void
show_error(EinsoraServerDialog *self, const char *message)
{
    gtk_label_set_text(self->error_label, message != NULL ? message : "");
    gtk_revealer_set_reveal_child(self->error_revealer, message != NULL);
    /* Trust is offered with the message that names the certificate only. */
    gtk_widget_set_visible(self->trust_button, FALSE);
}

static void
set_busy(EinsoraServerDialog *self, gboolean busy)
{
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.connect", !busy);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.use-local", !busy);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.trust-certificate", !busy);
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

/* A password or a token: zeroed before its memory goes back. */
typedef gchar Secret;

static void
secret_free(Secret *secret)
{
    if (secret != NULL)
        explicit_bzero(secret, strlen(secret));
    g_free(secret);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Secret, secret_free)

/* The API's code of a client's error; NULL for any other. */
static const char *
api_code(const GError *error)
{
    return error->domain == EINSORA_CLIENT_ERROR ? einsora_client_error_get_code(error) : NULL;
}

/* What a sign-in needs, copied for its thread. */
typedef struct {
    gchar *url;
    gchar *email;
    Secret *password;
    Secret *new_password; /* NULL: none asked for */
    gchar *presented;     /* out: the fingerprint of a certificate refused */
} SignIn;

static void
sign_in_free(SignIn *sign_in)
{
    g_free(sign_in->url);
    g_free(sign_in->email);
    secret_free(sign_in->password);
    secret_free(sign_in->new_password);
    g_free(sign_in->presented);
    g_free(sign_in);
}

/* Blocks (einsora_client_sign_in): a client of this thread's own, with
 * the server's pin as a connection applies it (docs/adr/0047). */
static void
sign_in_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
    SignIn *sign_in = task_data;
    g_autoptr(EinsoraClient) client = einsora_client_new(sign_in->url, NULL);
    g_autoptr(EinsoraServerPins) pins = NULL;
    g_autofree gchar *token_name = g_strdup_printf("Einsora app on %s", g_get_host_name());
    GError *error = NULL;
    gchar *secret;

    if (g_ascii_strncasecmp(sign_in->url, "https:", strlen("https:")) == 0) {
        pins = einsora_server_pins_load(NULL, &error);
        if (pins == NULL) {
            g_prefix_error(&error, _("The trusted certificates can’t be read: "));
            g_task_return_error(task, error);
            return;
        }
        einsora_client_set_pinned_certificate(client,
                                              einsora_server_pins_lookup(pins, sign_in->url));
    }
    secret = einsora_client_sign_in(client, sign_in->email, sign_in->password,
                                    sign_in->new_password, token_name, &error);
    if (secret == NULL) {
        if (g_error_matches(error, EINSORA_CLIENT_ERROR,
                            EINSORA_CLIENT_ERROR_UNTRUSTED_CERTIFICATE))
            sign_in->presented = einsora_pinned_database_dup_refused(
                EINSORA_PINNED_DATABASE(einsora_client_get_tls_database(client)));
        g_task_return_error(task, error);
        return;
    }
    g_task_return_pointer(task, secret, (GDestroyNotify)secret_free);
}

static void
on_signed_in(GObject *source, GAsyncResult *result, gpointer user_data)
{
    EinsoraServerDialog *self = EINSORA_SERVER_DIALOG(source);
    SignIn *sign_in = g_task_get_task_data(G_TASK(result));
    g_autoptr(GError) error = NULL;
    g_autoptr(Secret) secret = g_task_propagate_pointer(G_TASK(result), &error);
    const char *code;

    if (secret != NULL) {
        g_message("signed in to %s with a password: a token of this computer’s own is kept",
                  self->url);
        gtk_editable_set_text(GTK_EDITABLE(self->password_row), "");
        gtk_editable_set_text(GTK_EDITABLE(self->new_password_row), "");
        einsora_token_store_save_async(self->store, self->url, secret, self->cancellable, on_saved,
                                       g_object_ref(self));
        return;
    }
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    set_busy(self, FALSE);
    code = api_code(error);
    if (g_strcmp0(code, "password_change_required") == 0) {
        gtk_widget_set_visible(GTK_WIDGET(self->new_password_row), TRUE);
        show_error(self, _("Your admin reset your password. Choose a new one of at least 8 "
                           "characters under New Password, then connect again."));
        gtk_widget_grab_focus(GTK_WIDGET(self->new_password_row));
    } else if (g_strcmp0(code, "unauthenticated") == 0) {
        g_autofree gchar *text =
            g_strdup_printf(_("That email and password don’t sign in to %s."), self->url);
        show_error(self, text);
    } else {
        show_error(self, error->message);
        /* The message names the fingerprint; the person compares it. */
        if (sign_in->presented != NULL) {
            g_free(self->presented);
            self->presented = g_steal_pointer(&sign_in->presented);
            gtk_widget_set_visible(self->trust_button, TRUE);
        }
    }
}

/* A copy of what @row holds; NULL when it is empty. Passwords are taken
 * as typed, spaces and all. */
static Secret *
typed_secret(AdwPasswordEntryRow *row)
{
    const char *text = gtk_editable_get_text(GTK_EDITABLE(row));

    return *text != '\0' ? g_strdup(text) : NULL;
}

/* The API token typed, without spaces around it; copied from the row's
 * text rather than stripped in place, which would leave pieces of it
 * past the end that zeroing misses. */
static Secret *
typed_token(EinsoraServerDialog *self)
{
    const char *text = gtk_editable_get_text(GTK_EDITABLE(self->token_row));
    const char *end;

    while (g_ascii_isspace(*text))
        text++;
    end = text + strlen(text);
    while (end > text && g_ascii_isspace(end[-1]))
        end--;
    return g_strndup(text, (gsize)(end - text));
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
    g_autoptr(Secret) token = typed_token(self);
    g_autofree gchar *email =
        g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(self->email_row))));
    g_autoptr(Secret) password = typed_secret(self->password_row);
    g_autoptr(Secret) new_password = typed_secret(self->new_password_row);
    gboolean signs_in = *email != '\0' || password != NULL || new_password != NULL;
    gboolean local = einsora_connection_server_is_local(url);
    g_autoptr(GError) error = NULL;
    const char *refusal = NULL;

    g_clear_pointer(&self->presented, g_free);
    if (!einsora_connection_check_server(url, &error))
        refusal = error->message;
    /* This machine's daemon has its own token, which the app reads. */
    else if (local && *token != '\0')
        refusal = _("A daemon on this machine uses its own token: leave API Token empty.");
    else if (local && signs_in)
        refusal = _("A daemon on this machine uses its own token: leave Email and Password "
                    "empty.");
    else if (*token != '\0' && signs_in)
        refusal = _("Give either an API token, or an email and a password: not both.");
    else if (signs_in && (*email == '\0' || password == NULL))
        refusal = _("Give both your email and your password, or an API token instead.");
    show_error(self, refusal);
    if (refusal != NULL)
        return;
    g_free(self->url);
    self->url = g_steal_pointer(&url);
    if (local) {
        use_server(self);
        return;
    }
    set_busy(self, TRUE);
    if (signs_in) {
        g_autoptr(GTask) task = g_task_new(self, self->cancellable, on_signed_in, NULL);
        SignIn *sign_in = g_new0(SignIn, 1);

        sign_in->url = g_strdup(self->url);
        sign_in->email = g_steal_pointer(&email);
        sign_in->password = g_steal_pointer(&password);
        sign_in->new_password = g_steal_pointer(&new_password);
        g_task_set_source_tag(task, on_connect);
        g_task_set_task_data(task, sign_in, (GDestroyNotify)sign_in_free);
        g_task_run_in_thread(task, sign_in_thread);
    } else if (*token != '\0')
        einsora_token_store_save_async(self->store, self->url, token, self->cancellable, on_saved,
                                       g_object_ref(self));
    else
        einsora_token_store_lookup_async(self->store, self->url, self->cancellable, on_looked_up,
                                         g_object_ref(self));
}

/* The person compared the fingerprint the message names with the
 * server's and trusts it: pinned where the CLI's einsora login and the
 * app's connection keep pins, and the sign-in made again. */
static void
on_trust_certificate(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraServerDialog *self = EINSORA_SERVER_DIALOG(widget);
    g_autoptr(EinsoraServerPins) pins = NULL;
    g_autoptr(GError) error = NULL;

    if (self->presented == NULL || self->url == NULL)
        return;
    pins = einsora_server_pins_load(NULL, &error);
    if (pins == NULL || !einsora_server_pins_save(pins, self->url, self->presented, &error)) {
        show_error(self, error->message);
        return;
    }
    g_message("trusted the certificate %s of %s", self->presented, self->url);
    g_clear_pointer(&self->presented, g_free);
    gtk_widget_activate_action(GTK_WIDGET(self), "dialog.connect", NULL);
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
    g_clear_pointer(&self->presented, g_free);
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
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, trust_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, url_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, email_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, password_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, new_password_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraServerDialog, token_row);
    gtk_widget_class_install_action(widget_class, "dialog.connect", NULL, on_connect);
    gtk_widget_class_install_action(widget_class, "dialog.trust-certificate", NULL,
                                    on_trust_certificate);
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
    /* Enter in any row connects. */
    g_signal_connect_object(self->url_row, "entry-activated", G_CALLBACK(on_row_activated), self,
                            0);
    g_signal_connect_object(self->email_row, "entry-activated", G_CALLBACK(on_row_activated), self,
                            0);
    g_signal_connect_object(self->password_row, "entry-activated", G_CALLBACK(on_row_activated),
                            self, 0);
    g_signal_connect_object(self->new_password_row, "entry-activated", G_CALLBACK(on_row_activated),
                            self, 0);
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

void
einsora_server_dialog_set_email(EinsoraServerDialog *self, const char *email)
{
    gtk_editable_set_text(GTK_EDITABLE(self->email_row), email);
}

void
einsora_server_dialog_set_password(EinsoraServerDialog *self, const char *password)
{
    gtk_editable_set_text(GTK_EDITABLE(self->password_row), password);
}

void
einsora_server_dialog_set_new_password(EinsoraServerDialog *self, const char *new_password)
{
    gtk_editable_set_text(GTK_EDITABLE(self->new_password_row), new_password);
}

const char *
einsora_server_dialog_get_error(EinsoraServerDialog *self)
{
    if (!gtk_revealer_get_reveal_child(self->error_revealer))
        return NULL;
    return gtk_label_get_text(self->error_label);
}
