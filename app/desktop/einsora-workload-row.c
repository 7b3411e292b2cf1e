#define G_LOG_DOMAIN "einsora-app"

#include "einsora-workload-row.h"

#include <glib/gi18n.h>

#include "einsora-format.h"

struct _EinsoraWorkloadRow {
    GtkWidget parent_instance;
    GtkWidget *box;
    GtkLabel *name_label;
    GtkLabel *details_label;
    GtkLabel *age_label;
    GtkLabel *state_label;
    EinsoraWorkloadItem *item;
    gulong notify_handler;
    const char *state_style; /* the badge's CSS class now */
};

G_DEFINE_FINAL_TYPE(EinsoraWorkloadRow, einsora_workload_row, GTK_TYPE_WIDGET)

static void
einsora_workload_row_dispose(GObject *object)
{
    EinsoraWorkloadRow *self = EINSORA_WORKLOAD_ROW(object);

    einsora_workload_row_set_item(self, NULL);
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_WORKLOAD_ROW);
    G_OBJECT_CLASS(einsora_workload_row_parent_class)->dispose(object);
}

static void
einsora_workload_row_class_init(EinsoraWorkloadRowClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_workload_row_dispose;
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-workload-row.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadRow, box);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadRow, name_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadRow, details_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadRow, age_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraWorkloadRow, state_label);
}

static void
einsora_workload_row_init(EinsoraWorkloadRow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
}

GtkWidget *
einsora_workload_row_new(void)
{
    return g_object_new(EINSORA_TYPE_WORKLOAD_ROW, NULL);
}

static void
show_item(EinsoraWorkloadRow *self)
{
    EinsoraWorkloadItem *item = self->item;
    const char *state = item != NULL ? einsora_workload_item_get_state(item) : NULL;
    const char *style = einsora_format_state_style(state);
    g_autoptr(GString) details = g_string_new(NULL);
    const char *parts[5];

    if (item == NULL)
        return;
    gtk_label_set_text(self->name_label, einsora_workload_item_get_name(item));
    /* An endpoint is known by its model: "Endpoint · tiny · …". */
    parts[0] = einsora_format_kind(einsora_workload_item_get_kind(item));
    parts[1] = einsora_workload_item_get_model(item);
    parts[2] = einsora_workload_item_get_class(item);
    parts[3] = einsora_workload_item_get_machine_name(item) != NULL
                   ? einsora_workload_item_get_machine_name(item)
                   : einsora_workload_item_get_machine_id(item);
    parts[4] = einsora_workload_item_get_driver(item);
    for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
        if (parts[i] == NULL || *parts[i] == '\0')
            continue;
        if (details->len > 0)
            g_string_append(details, " · ");
        /* A machine not (yet) known by name: the start of its ID. */
        if (i == 3 && einsora_workload_item_get_machine_name(item) == NULL)
            g_string_append_len(details, parts[i], MIN(strlen(parts[i]), 8));
        else
            g_string_append(details, parts[i]);
    }
    gtk_label_set_text(self->details_label, details->str);
    gtk_label_set_text(self->state_label, einsora_format_state_label(state));
    if (self->state_style != style) {
        if (self->state_style != NULL)
            gtk_widget_remove_css_class(GTK_WIDGET(self->state_label), self->state_style);
        gtk_widget_add_css_class(GTK_WIDGET(self->state_label), style);
        self->state_style = style;
    }
    gtk_accessible_update_property(GTK_ACCESSIBLE(self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                   einsora_workload_item_get_name(item), -1);
    einsora_workload_row_refresh_age(self);
}

static void
on_item_notify(EinsoraWorkloadItem *item, GParamSpec *pspec, EinsoraWorkloadRow *self)
{
    show_item(self);
}

void
einsora_workload_row_set_item(EinsoraWorkloadRow *self, EinsoraWorkloadItem *item)
{
    if (self->item == item)
        return;
    if (self->item != NULL) {
        g_clear_signal_handler(&self->notify_handler, self->item);
        g_clear_object(&self->item);
    }
    if (item == NULL)
        return;
    self->item = g_object_ref(item);
    self->notify_handler = g_signal_connect(item, "notify", G_CALLBACK(on_item_notify), self);
    show_item(self);
}

EinsoraWorkloadItem *
einsora_workload_row_get_item(EinsoraWorkloadRow *self)
{
    return self->item;
}

void
einsora_workload_row_refresh_age(EinsoraWorkloadRow *self)
{
    g_autoptr(GDateTime) created = NULL;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree gchar *age = NULL;

    if (self->item == NULL)
        return;
    created = einsora_format_parse_time(einsora_workload_item_get_created_at(self->item));
    age = created != NULL ? einsora_format_age(created, now) : g_strdup("");
    gtk_label_set_text(self->age_label, age);
}
