#define G_LOG_DOMAIN "einsora-app"

#include "einsora-machine-row.h"

#include <glib/gi18n.h>

#include "einsora-format.h"
#include "einsora-json-member.h"

struct _EinsoraMachineRow {
    AdwActionRow parent_instance;
    GtkLabel *status_label;
    GtkWidget *revoke_button;
    gchar *machine_id;
    const char *style; /* the badge's class now */
};

G_DEFINE_FINAL_TYPE(EinsoraMachineRow, einsora_machine_row, ADW_TYPE_ACTION_ROW)

static void
einsora_machine_row_finalize(GObject *object)
{
    EinsoraMachineRow *self = EINSORA_MACHINE_ROW(object);

    g_free(self->machine_id);
    G_OBJECT_CLASS(einsora_machine_row_parent_class)->finalize(object);
}

static void
einsora_machine_row_dispose(GObject *object)
{
    gtk_widget_dispose_template(GTK_WIDGET(object), EINSORA_TYPE_MACHINE_ROW);
    G_OBJECT_CLASS(einsora_machine_row_parent_class)->dispose(object);
}

static void
einsora_machine_row_class_init(EinsoraMachineRowClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->finalize = einsora_machine_row_finalize;
    G_OBJECT_CLASS(klass)->dispose = einsora_machine_row_dispose;
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-machine-row.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraMachineRow, status_label);
    gtk_widget_class_bind_template_child(widget_class, EinsoraMachineRow, revoke_button);
}

static void
einsora_machine_row_init(EinsoraMachineRow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    /* The target first: an action with a parameter and no target yet
     * warns. */
    gtk_actionable_set_action_target(GTK_ACTIONABLE(self->revoke_button), "s", "");
    gtk_actionable_set_action_name(GTK_ACTIONABLE(self->revoke_button), "machines.revoke");
}

GtkWidget *
einsora_machine_row_new(void)
{
    return g_object_new(EINSORA_TYPE_MACHINE_ROW, NULL);
}

/* "Last sync 12 s ago · agent 0.1.0 · clock off by 42 s" */
static void
append_sync(GString *text, JsonObject *machine, GDateTime *now)
{
    g_autoptr(GDateTime) seen =
        einsora_format_parse_time(einsora_json_member_string(machine, "last_seen_at"));
    JsonObject *agent = einsora_json_member_object(machine, "agent");

    if (seen != NULL) {
        g_autofree gchar *ago = einsora_format_ago(seen, now);
        /* TRANSLATORS: "Last sync 12 s ago" */
        g_string_append_printf(text, _("Last sync %s"), ago);
    } else {
        g_string_append(text, _("Never synced"));
    }
    if (agent == NULL)
        return;
    if (einsora_json_member_string(agent, "version") != NULL)
        /* TRANSLATORS: the version of the machine's agent */
        g_string_append_printf(text, _(" · agent %s"),
                               einsora_json_member_string(agent, "version"));
    else
        g_string_append(text, _(" · agent of an unknown version"));
    if (einsora_json_member_boolean(agent, "clock_skewed", FALSE)) {
        g_autofree gchar *offset =
            einsora_format_clock_offset(einsora_json_member_int(agent, "clock_offset_ms", 0));
        g_string_append_printf(text, " · %s", offset);
    }
}

/* "4 CPUs · 16 GiB · A100 (nvidia-a100) · native, sim · 2 workloads" */
static void
append_capacity(GString *text, JsonObject *machine)
{
    gint64 cpus = einsora_json_member_int(machine, "cpus", 0);
    gint64 memory_mib = einsora_json_member_int(machine, "memory_mib", 0);
    g_autofree gchar *capacity = NULL;
    JsonArray *gpus = einsora_json_member_array(machine, "gpus");
    JsonArray *drivers = einsora_json_member_array(machine, "drivers");
    gint64 workloads = einsora_json_member_int(machine, "workloads", 0);

    /* An agent that hasn't told its inventory yet reports nothing, not a
     * machine of no CPUs. */
    if (cpus > 0 || memory_mib > 0)
        capacity = einsora_format_capacity(cpus, memory_mib);
    g_string_append(text, capacity != NULL ? capacity : _("capacity not reported"));
    for (guint i = 0; gpus != NULL && i < json_array_get_length(gpus); i++) {
        JsonObject *gpu = einsora_json_array_object(gpus, i);
        const char *model = gpu != NULL ? einsora_json_member_string(gpu, "model") : NULL;
        const char *class = gpu != NULL ? einsora_json_member_string(gpu, "gpu_class") : NULL;

        g_string_append_printf(text, " · %s", model != NULL ? model : _("GPU"));
        if (class != NULL)
            g_string_append_printf(text, " (%s)", class);
    }
    for (guint i = 0; drivers != NULL && i < json_array_get_length(drivers); i++) {
        JsonNode *driver = json_array_get_element(drivers, i);
        if (json_node_get_value_type(driver) == G_TYPE_STRING)
            g_string_append_printf(text, "%s%s", i == 0 ? " · " : ", ",
                                   json_node_get_string(driver));
    }
    g_string_append(text, " · ");
    g_string_append_printf(
        text, g_dngettext(GETTEXT_PACKAGE, "%d workload", "%d workloads", (gulong)workloads),
        (int)workloads);
}

/* "Shared with the Lab: guests hold 1 workload, 2 CPUs, 4 GiB" */
static void
append_sharing(GString *text, JsonObject *machine)
{
    JsonObject *guests = einsora_json_member_object(machine, "guests");
    gint64 workloads = guests != NULL ? einsora_json_member_int(guests, "workloads", 0) : 0;
    gint64 gpus = guests != NULL ? einsora_json_member_int(guests, "gpus", 0) : 0;
    g_autofree gchar *capacity = NULL;
    g_autofree gchar *held = NULL;

    if (g_strcmp0(einsora_json_member_string(machine, "sharing"), "community") != 0 &&
        workloads == 0)
        return;
    g_string_append_c(text, '\n');
    if (workloads == 0) {
        g_string_append(text, _("Shared with the Lab: no guests now"));
        return;
    }
    capacity = einsora_format_capacity(einsora_json_member_int(guests, "cpus", 0),
                                       einsora_json_member_int(guests, "memory_mib", 0));
    held = g_strdup_printf(
        g_dngettext(GETTEXT_PACKAGE, "%d workload", "%d workloads", (gulong)workloads),
        (int)workloads);
    /* TRANSLATORS: "Shared with the Lab: guests hold 1 workload · 2 CPUs · 4 GiB" */
    g_string_append_printf(text, _("Shared with the Lab: guests hold %s · %s"), held, capacity);
    if (gpus > 0)
        g_string_append_printf(
            text, g_dngettext(GETTEXT_PACKAGE, " · %d GPU", " · %d GPUs", (gulong)gpus), (int)gpus);
}

void
einsora_machine_row_update(EinsoraMachineRow *self, JsonObject *machine, GDateTime *now)
{
    g_autoptr(GString) subtitle = g_string_new(NULL);
    JsonObject *certificate = einsora_json_member_object(machine, "certificate");
    gboolean online = g_strcmp0(einsora_json_member_string(machine, "status"), "online") == 0;
    gboolean placeable = einsora_json_member_boolean(machine, "placeable", FALSE);
    const char *status, *style, *tooltip;

    g_return_if_fail(EINSORA_IS_MACHINE_ROW(self));

    g_free(self->machine_id);
    self->machine_id = g_strdup(einsora_json_member_string(machine, "id"));
    adw_preferences_row_set_title(ADW_PREFERENCES_ROW(self),
                                  einsora_json_member_string(machine, "name"));

    if (online && placeable) {
        status = _("Online");
        style = "success";
        tooltip = _("Its agent syncs: new workloads may go to it");
    } else if (online) {
        status = _("Not Placeable");
        style = "warning";
        tooltip = _("Online, but its agent missed a sync or two: no new workloads go to it "
                    "until it syncs again");
    } else {
        status = _("Offline");
        style = "error";
        tooltip = _("Its agent hasn’t synced for a while: its workloads count as on a machine "
                    "gone offline");
    }
    gtk_label_set_text(self->status_label, status);
    gtk_widget_set_tooltip_text(GTK_WIDGET(self->status_label), tooltip);
    if (self->style != NULL)
        gtk_widget_remove_css_class(GTK_WIDGET(self->status_label), self->style);
    self->style = style;
    gtk_widget_add_css_class(GTK_WIDGET(self->status_label), style);

    append_sync(subtitle, machine, now);
    g_string_append_c(subtitle, '\n');
    append_capacity(subtitle, machine);
    if (certificate != NULL) {
        g_autoptr(GDateTime) expires =
            einsora_format_parse_time(einsora_json_member_string(certificate, "expires_at"));
        g_autofree gchar *day = expires != NULL ? einsora_format_date(expires) : NULL;

        g_string_append_c(subtitle, '\n');
        if (day != NULL)
            /* TRANSLATORS: the day its agent's certificate expires */
            g_string_append_printf(subtitle, _("Enrolled: its certificate is valid until %s"), day);
        else
            g_string_append(subtitle, _("Enrolled with a certificate"));
    }
    append_sharing(subtitle, machine);
    adw_action_row_set_subtitle(ADW_ACTION_ROW(self), subtitle->str);

    /* The daemon's own machine has no certificate to revoke. */
    gtk_actionable_set_action_target(GTK_ACTIONABLE(self->revoke_button), "s",
                                     self->machine_id != NULL ? self->machine_id : "");
    gtk_widget_set_visible(self->revoke_button, certificate != NULL && self->machine_id != NULL);
    {
        /* Each row's button says whose it is to a screen reader. */
        g_autofree gchar *label = g_strdup_printf(
            _("Revoke %s"), adw_preferences_row_get_title(ADW_PREFERENCES_ROW(self)));
        gtk_accessible_update_property(GTK_ACCESSIBLE(self->revoke_button),
                                       GTK_ACCESSIBLE_PROPERTY_LABEL, label, -1);
    }
}

const char *
einsora_machine_row_get_machine_id(EinsoraMachineRow *self)
{
    g_return_val_if_fail(EINSORA_IS_MACHINE_ROW(self), NULL);
    return self->machine_id;
}

const char *
einsora_machine_row_get_status(EinsoraMachineRow *self)
{
    g_return_val_if_fail(EINSORA_IS_MACHINE_ROW(self), NULL);
    return gtk_label_get_text(self->status_label);
}

gboolean
einsora_machine_row_can_revoke(EinsoraMachineRow *self)
{
    g_return_val_if_fail(EINSORA_IS_MACHINE_ROW(self), FALSE);
    return gtk_widget_get_visible(self->revoke_button);
}
