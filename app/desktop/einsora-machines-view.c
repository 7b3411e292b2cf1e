#define G_LOG_DOMAIN "einsora-app"

#include "einsora-machines-view.h"

#include <glib/gi18n.h>

#include "einsora-json-member.h"

struct _EinsoraMachinesView {
    GtkWidget parent_instance;
    GtkWidget *scrolled;
    GtkLabel *count_label;
    GtkLabel *error_label;
    GtkListBox *list;
    GHashTable *rows; /* machine ID -> EinsoraMachineRow in the list */
};

G_DEFINE_FINAL_TYPE(EinsoraMachinesView, einsora_machines_view, GTK_TYPE_WIDGET)

static void
einsora_machines_view_dispose(GObject *object)
{
    EinsoraMachinesView *self = EINSORA_MACHINES_VIEW(object);

    g_clear_pointer(&self->rows, g_hash_table_unref);
    /* A plain GtkWidget unparents its children itself. */
    g_clear_pointer(&self->scrolled, gtk_widget_unparent);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_MACHINES_VIEW);
    G_OBJECT_CLASS(einsora_machines_view_parent_class)->dispose(object);
}

typedef struct {
    GtkWidget *view; /* (owned) */
    gchar *machine_id;
} Revocation;

static void
revocation_free(Revocation *revocation)
{
    g_object_unref(revocation->view);
    g_free(revocation->machine_id);
    g_free(revocation);
}

static void
on_revoke_response(AdwMessageDialog *dialog, const char *response, gpointer user_data)
{
    Revocation *revocation = user_data;

    if (g_strcmp0(response, "revoke") == 0)
        gtk_widget_activate_action(revocation->view, "app.revoke-machine", "s",
                                   revocation->machine_id);
}

/* machines.revoke(id): asked first; the application revokes. */
static void
on_revoke(GtkWidget *widget, const char *action_name, GVariant *parameter)
{
    EinsoraMachinesView *self = EINSORA_MACHINES_VIEW(widget);
    const char *id = g_variant_get_string(parameter, NULL);
    EinsoraMachineRow *row = einsora_machines_view_lookup_row(self, id);
    GtkRoot *root = gtk_widget_get_root(widget);
    Revocation *revocation;
    GtkWidget *dialog;

    if (row == NULL)
        return;
    dialog = adw_message_dialog_new(GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL, NULL, NULL);
    adw_message_dialog_format_heading(ADW_MESSAGE_DIALOG(dialog), _("Revoke %s?"),
                                      adw_preferences_row_get_title(ADW_PREFERENCES_ROW(row)));
    adw_message_dialog_set_body(
        ADW_MESSAGE_DIALOG(dialog),
        _("Its agent will be refused at once, even in the middle of a sync, and its workloads "
          "will be treated as on a machine gone offline. To use it again, add it again."));
    adw_message_dialog_add_responses(ADW_MESSAGE_DIALOG(dialog), "cancel", _("_Cancel"), "revoke",
                                     _("_Revoke"), NULL);
    adw_message_dialog_set_response_appearance(ADW_MESSAGE_DIALOG(dialog), "revoke",
                                               ADW_RESPONSE_DESTRUCTIVE);
    adw_message_dialog_set_default_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    adw_message_dialog_set_close_response(ADW_MESSAGE_DIALOG(dialog), "cancel");
    revocation = g_new0(Revocation, 1);
    revocation->view = g_object_ref(widget);
    revocation->machine_id = g_strdup(id);
    g_signal_connect_data(dialog, "response", G_CALLBACK(on_revoke_response), revocation,
                          (GClosureNotify)(void (*)(void))revocation_free, 0);
    gtk_window_present(GTK_WINDOW(dialog));
}

static void
einsora_machines_view_class_init(EinsoraMachinesViewClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_machines_view_dispose;
    g_type_ensure(EINSORA_TYPE_MACHINE_ROW);
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-machines-view.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraMachinesView, scrolled);
    gtk_widget_class_bind_template_child(widget_class, EinsoraMachinesView, count_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraMachinesView, error_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraMachinesView, list);
    gtk_widget_class_install_action(widget_class, "machines.revoke", "s", on_revoke);
}

static void
einsora_machines_view_init(EinsoraMachinesView *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    self->rows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    gtk_label_set_text(self->count_label, _("Your Machines"));
}

GtkWidget *
einsora_machines_view_new(void)
{
    return g_object_new(EINSORA_TYPE_MACHINES_VIEW, NULL);
}

/* Rows are kept and updated, not made again: a refresh every few
 * seconds must not take the focus from a row's button. */
void
einsora_machines_view_set_machines(EinsoraMachinesView *self, JsonArray *machines)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autoptr(GHashTable) listed = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTableIter iter;
    gpointer id, row;
    guint position = 0;
    guint n;

    g_return_if_fail(EINSORA_IS_MACHINES_VIEW(self));

    einsora_machines_view_set_error(self, NULL);
    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = einsora_json_array_object(machines, i);
        const char *machine_id = machine != NULL ? einsora_json_member_string(machine, "id") : NULL;
        EinsoraMachineRow *kept;

        if (machine_id == NULL || g_hash_table_contains(listed, machine_id))
            continue;
        kept = g_hash_table_lookup(self->rows, machine_id);
        if (kept == NULL) {
            kept = EINSORA_MACHINE_ROW(einsora_machine_row_new());
            gtk_list_box_insert(self->list, GTK_WIDGET(kept), (int)position);
            g_hash_table_insert(self->rows, g_strdup(machine_id), kept);
        } else if ((guint)gtk_list_box_row_get_index(GTK_LIST_BOX_ROW(kept)) != position) {
            g_object_ref(kept);
            gtk_list_box_remove(self->list, GTK_WIDGET(kept));
            gtk_list_box_insert(self->list, GTK_WIDGET(kept), (int)position);
            g_object_unref(kept);
        }
        einsora_machine_row_update(kept, machine, now);
        g_hash_table_add(listed, (gpointer)einsora_machine_row_get_machine_id(kept));
        position++;
    }
    g_hash_table_iter_init(&iter, self->rows);
    while (g_hash_table_iter_next(&iter, &id, &row))
        if (!g_hash_table_contains(listed, id)) {
            gtk_list_box_remove(self->list, row);
            g_hash_table_iter_remove(&iter);
        }
    n = g_hash_table_size(self->rows);
    {
        g_autofree gchar *count =
            g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%u Machine", "%u Machines", n), n);
        gtk_label_set_text(self->count_label, count);
    }
}

void
einsora_machines_view_set_error(EinsoraMachinesView *self, const char *message)
{
    g_return_if_fail(EINSORA_IS_MACHINES_VIEW(self));
    gtk_label_set_text(self->error_label, message != NULL ? message : "");
    gtk_widget_set_visible(GTK_WIDGET(self->error_label), message != NULL);
}

const char *
einsora_machines_view_get_error(EinsoraMachinesView *self)
{
    g_return_val_if_fail(EINSORA_IS_MACHINES_VIEW(self), NULL);
    return gtk_widget_get_visible(GTK_WIDGET(self->error_label))
               ? gtk_label_get_text(self->error_label)
               : NULL;
}

guint
einsora_machines_view_get_n_machines(EinsoraMachinesView *self)
{
    g_return_val_if_fail(EINSORA_IS_MACHINES_VIEW(self), 0);
    return g_hash_table_size(self->rows);
}

EinsoraMachineRow *
einsora_machines_view_find_row(EinsoraMachinesView *self, const char *name)
{
    GHashTableIter iter;
    gpointer row;

    g_return_val_if_fail(EINSORA_IS_MACHINES_VIEW(self), NULL);
    g_hash_table_iter_init(&iter, self->rows);
    while (g_hash_table_iter_next(&iter, NULL, &row))
        if (g_strcmp0(adw_preferences_row_get_title(row), name) == 0)
            return row;
    return NULL;
}

EinsoraMachineRow *
einsora_machines_view_lookup_row(EinsoraMachinesView *self, const char *id)
{
    g_return_val_if_fail(EINSORA_IS_MACHINES_VIEW(self), NULL);
    return id != NULL ? g_hash_table_lookup(self->rows, id) : NULL;
}
