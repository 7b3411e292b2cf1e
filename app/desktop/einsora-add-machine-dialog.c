#define G_LOG_DOMAIN "einsora-app"

#include "einsora-add-machine-dialog.h"

#include <glib/gi18n.h>

#include "einsora-format.h"
#include "einsora-json-member.h"

struct _EinsoraAddMachineDialog {
    AdwWindow parent_instance;
    GtkRevealer *error_revealer;
    GtkLabel *error_label;
    GtkStack *stack;
    AdwEntryRow *name_row;
    GtkLabel *note_label;
    GtkLabel *command_label;
    GtkWidget *get_button;
    GtkWidget *done_button;
    GtkWidget *cancel_button;

    EinsoraClient *client;
    GCancellable *cancellable;
    gchar *command; /* once given */
};

G_DEFINE_FINAL_TYPE(EinsoraAddMachineDialog, einsora_add_machine_dialog, ADW_TYPE_WINDOW)

static void
show_error(EinsoraAddMachineDialog *self, const char *message)
{
    gtk_label_set_text(self->error_label, message != NULL ? message : "");
    gtk_revealer_set_reveal_child(self->error_revealer, message != NULL);
}

/* "…before 15:04 (within the hour)…": the server's expiry in local time. */
static gchar *
describe_expiry(JsonObject *enrolment)
{
    g_autoptr(GDateTime) expires = einsora_format_parse_time(
        enrolment != NULL ? einsora_json_member_string(enrolment, "expires_at") : NULL);
    g_autoptr(GDateTime) local = expires != NULL ? g_date_time_to_local(expires) : NULL;
    g_autofree gchar *time = local != NULL ? g_date_time_format(local, "%H:%M") : NULL;

    if (time == NULL)
        return g_strdup(_("On the other computer, run this command within the hour. It works "
                          "once."));
    /* TRANSLATORS: %s is a time of day, within the hour */
    return g_strdup_printf(_("On the other computer, run this command before %s. It works once, "
                             "and only to join this server."),
                           time);
}

static void
on_enrolled(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraAddMachineDialog) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonNode) answer =
        einsora_client_request_finish(EINSORA_CLIENT(source), result, NULL, &error);
    JsonObject *object =
        answer != NULL && JSON_NODE_HOLDS_OBJECT(answer) ? json_node_get_object(answer) : NULL;
    const char *command = object != NULL ? einsora_json_member_string(object, "command") : NULL;
    g_autofree gchar *note = NULL;

    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "dialog.get-command", TRUE);
    if (command == NULL) {
        show_error(self, error != NULL ? error->message
                                       : _("The server's answer has no command to run."));
        return;
    }
    show_error(self, NULL);
    self->command = g_strdup(command);
    note = describe_expiry(einsora_json_member_object(object, "enrolment"));
    gtk_label_set_text(self->note_label, note);
    gtk_label_set_text(self->command_label, command);
    gtk_stack_set_visible_child_name(self->stack, "command");
    /* Asked once: what is left is to copy it and close. */
    gtk_widget_set_visible(self->get_button, FALSE);
    gtk_widget_set_visible(self->cancel_button, FALSE);
    gtk_widget_set_visible(self->done_button, TRUE);
    gtk_window_set_default_widget(GTK_WINDOW(self), self->done_button);
    g_message(
        "enrolment token made (expires %s)",
        einsora_json_member_string(einsora_json_member_object(object, "enrolment"), "expires_at"));
}

static void
on_get_command(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    EinsoraAddMachineDialog *self = EINSORA_ADD_MACHINE_DIALOG(widget);
    g_autofree gchar *name =
        g_strstrip(g_strdup(gtk_editable_get_text(GTK_EDITABLE(self->name_row))));

    if (self->command != NULL)
        return; /* one token a dialog: a second would leave the first unused */
    gtk_widget_action_set_enabled(widget, "dialog.get-command", FALSE);
    einsora_client_enrol_machine_async(self->client, *name != '\0' ? name : NULL, NULL,
                                       self->cancellable, on_enrolled, g_object_ref(self));
}

static void
on_copy(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    EinsoraAddMachineDialog *self = EINSORA_ADD_MACHINE_DIALOG(widget);

    if (self->command == NULL)
        return;
    gdk_clipboard_set_text(gtk_widget_get_clipboard(widget), self->command);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->command_label), _("Copied"));
}

static void
einsora_add_machine_dialog_dispose(GObject *object)
{
    EinsoraAddMachineDialog *self = EINSORA_ADD_MACHINE_DIALOG(object);

    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->client);
    g_clear_pointer(&self->command, g_free);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_ADD_MACHINE_DIALOG);
    G_OBJECT_CLASS(einsora_add_machine_dialog_parent_class)->dispose(object);
}

static void
einsora_add_machine_dialog_class_init(EinsoraAddMachineDialogClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_add_machine_dialog_dispose;
    gtk_widget_class_set_template_from_resource(
        widget_class, "/dev/einsora/Einsora/einsora-add-machine-dialog.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, error_revealer);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, error_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, stack);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, name_row);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, note_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, command_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, get_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, done_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraAddMachineDialog, cancel_button);
    gtk_widget_class_install_action(widget_class, "dialog.get-command", NULL, on_get_command);
    gtk_widget_class_install_action(widget_class, "dialog.copy", NULL, on_copy);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
on_name_activated(AdwEntryRow *row, EinsoraAddMachineDialog *self)
{
    gtk_widget_activate_action(GTK_WIDGET(self), "dialog.get-command", NULL);
}

static void
einsora_add_machine_dialog_init(EinsoraAddMachineDialog *self)
{
    PangoAttrList *attributes = pango_attr_list_new();

    gtk_widget_init_template(GTK_WIDGET(self));
    self->cancellable = g_cancellable_new();
    /* The command wraps anywhere, and a hyphen Pango would add where it
     * breaks a word would read as part of it. */
    pango_attr_list_insert(attributes, pango_attr_insert_hyphens_new(FALSE));
    gtk_label_set_attributes(self->command_label, attributes);
    pango_attr_list_unref(attributes);
    g_signal_connect_object(self->name_row, "entry-activated", G_CALLBACK(on_name_activated), self,
                            0);
}

EinsoraAddMachineDialog *
einsora_add_machine_dialog_new(GtkWindow *parent, EinsoraClient *client)
{
    EinsoraAddMachineDialog *self =
        g_object_new(EINSORA_TYPE_ADD_MACHINE_DIALOG, "transient-for", parent, "application",
                     parent != NULL ? gtk_window_get_application(parent) : NULL, NULL);

    g_return_val_if_fail(EINSORA_IS_CLIENT(client), NULL);
    self->client = g_object_ref(client);
    return self;
}

void
einsora_add_machine_dialog_set_name(EinsoraAddMachineDialog *self, const char *name)
{
    g_return_if_fail(EINSORA_IS_ADD_MACHINE_DIALOG(self));
    gtk_editable_set_text(GTK_EDITABLE(self->name_row), name);
}

const char *
einsora_add_machine_dialog_get_error(EinsoraAddMachineDialog *self)
{
    g_return_val_if_fail(EINSORA_IS_ADD_MACHINE_DIALOG(self), NULL);
    if (!gtk_revealer_get_reveal_child(self->error_revealer))
        return NULL;
    return gtk_label_get_text(self->error_label);
}

const char *
einsora_add_machine_dialog_get_command(EinsoraAddMachineDialog *self)
{
    g_return_val_if_fail(EINSORA_IS_ADD_MACHINE_DIALOG(self), NULL);
    return self->command;
}

const char *
einsora_add_machine_dialog_get_note(EinsoraAddMachineDialog *self)
{
    g_return_val_if_fail(EINSORA_IS_ADD_MACHINE_DIALOG(self), NULL);
    return gtk_label_get_text(self->note_label);
}
