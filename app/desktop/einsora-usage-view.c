#define G_LOG_DOMAIN "einsora-app"

#include "einsora-usage-view.h"

#include <glib/gi18n.h>

#include "einsora-format.h"
#include "einsora-json-member.h"

struct _EinsoraUsageView {
    GtkWidget parent_instance;
    GtkWidget *scrolled;
    GtkLabel *summary;
    EinsoraUsageChart *chart;
    GtkListBox *workloads;
    guint n_workloads;
};

G_DEFINE_FINAL_TYPE(EinsoraUsageView, einsora_usage_view, GTK_TYPE_WIDGET)

static void
einsora_usage_view_dispose(GObject *object)
{
    EinsoraUsageView *self = EINSORA_USAGE_VIEW(object);

    g_clear_pointer(&self->scrolled, gtk_widget_unparent);
    G_OBJECT_CLASS(einsora_usage_view_parent_class)->dispose(object);
}

static void
einsora_usage_view_class_init(EinsoraUsageViewClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_usage_view_dispose;
    gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
}

static GtkWidget *
heading(const char *text)
{
    GtkWidget *label = gtk_label_new(text);

    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_widget_add_css_class(label, "heading");
    return label;
}

static void
einsora_usage_view_init(EinsoraUsageView *self)
{
    GtkWidget *clamp = adw_clamp_new();
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12);
    GtkWidget *frame = gtk_frame_new(NULL);
    g_autofree gchar *title =
        g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "The Last %d Day", "The Last %d Days",
                                    EINSORA_USAGE_VIEW_DAYS),
                        EINSORA_USAGE_VIEW_DAYS);

    self->scrolled = gtk_scrolled_window_new();
    gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(self->scrolled), GTK_POLICY_NEVER,
                                   GTK_POLICY_AUTOMATIC);
    gtk_widget_set_parent(self->scrolled, GTK_WIDGET(self));
    adw_clamp_set_maximum_size(ADW_CLAMP(clamp), 760);
    gtk_widget_set_margin_top(box, 18);
    gtk_widget_set_margin_bottom(box, 18);
    gtk_widget_set_margin_start(box, 12);
    gtk_widget_set_margin_end(box, 12);

    gtk_box_append(GTK_BOX(box), heading(title));
    self->summary = GTK_LABEL(gtk_label_new(NULL));
    gtk_label_set_xalign(self->summary, 0);
    gtk_label_set_wrap(self->summary, TRUE);
    gtk_widget_add_css_class(GTK_WIDGET(self->summary), "title-2");
    gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->summary));

    /* Hours per UTC day, as the records are kept. */
    self->chart = EINSORA_USAGE_CHART(einsora_usage_chart_new());
    gtk_widget_set_margin_top(GTK_WIDGET(self->chart), 12);
    gtk_widget_set_margin_bottom(GTK_WIDGET(self->chart), 6);
    gtk_widget_set_margin_start(GTK_WIDGET(self->chart), 6);
    gtk_widget_set_margin_end(GTK_WIDGET(self->chart), 12);
    gtk_accessible_update_property(GTK_ACCESSIBLE(self->chart), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                   _("Hours of use per day, by class"), -1);
    gtk_frame_set_child(GTK_FRAME(frame), GTK_WIDGET(self->chart));
    gtk_widget_add_css_class(frame, "view");
    gtk_box_append(GTK_BOX(box), frame);

    gtk_box_append(GTK_BOX(box), heading(_("Workloads")));
    self->workloads = GTK_LIST_BOX(gtk_list_box_new());
    gtk_list_box_set_selection_mode(self->workloads, GTK_SELECTION_NONE);
    gtk_widget_add_css_class(GTK_WIDGET(self->workloads), "boxed-list");
    gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->workloads));

    /* (usage, never money: there is no price to show) */
    {
        GtkWidget *note = gtk_label_new(_("Times are in UTC days, counted while a workload runs, "
                                          "and updated about once a minute."));
        gtk_label_set_xalign(GTK_LABEL(note), 0);
        gtk_label_set_wrap(GTK_LABEL(note), TRUE);
        gtk_widget_add_css_class(note, "dim-label");
        gtk_widget_add_css_class(note, "caption");
        gtk_box_append(GTK_BOX(box), note);
    }

    adw_clamp_set_child(ADW_CLAMP(clamp), box);
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(self->scrolled), clamp);
}

GtkWidget *
einsora_usage_view_new(void)
{
    return g_object_new(EINSORA_TYPE_USAGE_VIEW, NULL);
}

/* "12.5 hours · 2.0 GPU hours"; without GPU time, the hours alone. */
static gchar *
describe_amounts(JsonObject *amounts)
{
    gint64 seconds = amounts != NULL ? einsora_json_member_int(amounts, "seconds", 0) : 0;
    gint64 gpu_seconds = amounts != NULL ? einsora_json_member_int(amounts, "gpu_seconds", 0) : 0;
    g_autofree gchar *time = einsora_format_usage(seconds);
    g_autofree gchar *gpu_time = NULL;

    if (gpu_seconds <= 0)
        return g_steal_pointer(&time);
    gpu_time = einsora_format_usage(gpu_seconds);
    /* Translators: "12.5 hours · 2.0 hours on GPUs". */
    return g_strdup_printf(_("%s · %s on GPUs"), time, gpu_time);
}

void
einsora_usage_view_set_days(EinsoraUsageView *self, JsonObject *report, GDateTime *first_day)
{
    JsonObject *total = NULL;
    JsonArray *groups = NULL;
    g_autofree gchar *summary = NULL;

    g_return_if_fail(EINSORA_IS_USAGE_VIEW(self));
    g_return_if_fail(first_day != NULL);

    if (report != NULL) {
        JsonNode *node = json_object_get_member(report, "total");
        total = node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
        groups = einsora_json_member_array(report, "groups");
    }
    einsora_usage_chart_clear(self->chart);
    for (guint d = 0; d < EINSORA_USAGE_VIEW_DAYS; d++) {
        g_autoptr(GDateTime) day = g_date_time_add_days(first_day, (gint)d);
        g_autofree gchar *name = g_date_time_format(day, "%Y-%m-%d");
        einsora_usage_chart_add_day(self->chart, name);
    }
    for (guint i = 0; groups != NULL && i < json_array_get_length(groups); i++) {
        JsonObject *group = einsora_json_array_object(groups, i);
        const char *day = group != NULL ? einsora_json_member_string(group, "day") : NULL;
        JsonArray *classes = group != NULL ? einsora_json_member_array(group, "classes") : NULL;

        for (guint c = 0; day != NULL && classes != NULL && c < json_array_get_length(classes);
             c++) {
            JsonObject *class = einsora_json_array_object(classes, c);
            if (class != NULL)
                einsora_usage_chart_add(self->chart, day,
                                        einsora_json_member_string(class, "gpu_class"),
                                        einsora_json_member_int(class, "seconds", 0) / 3600.0);
        }
    }
    summary = describe_amounts(total);
    gtk_label_set_text(self->summary, summary);
}

/* The most used first; equals as the API lists them (by name). */
static gint
compare_use(gconstpointer a, gconstpointer b)
{
    gint64 x = einsora_json_member_int(*(JsonObject *const *)a, "seconds", 0);
    gint64 y = einsora_json_member_int(*(JsonObject *const *)b, "seconds", 0);

    return x < y ? 1 : x > y ? -1 : 0;
}

void
einsora_usage_view_set_workloads(EinsoraUsageView *self, JsonObject *report)
{
    JsonArray *groups = report != NULL ? einsora_json_member_array(report, "groups") : NULL;
    g_autoptr(GPtrArray) sorted = g_ptr_array_new();
    GtkWidget *child;

    g_return_if_fail(EINSORA_IS_USAGE_VIEW(self));

    while ((child = gtk_widget_get_first_child(GTK_WIDGET(self->workloads))) != NULL)
        gtk_list_box_remove(self->workloads, child);
    self->n_workloads = 0;
    for (guint i = 0; groups != NULL && i < json_array_get_length(groups); i++) {
        JsonObject *group = einsora_json_array_object(groups, i);
        if (group != NULL)
            g_ptr_array_add(sorted, group);
    }
    /* (g_ptr_array_sort is a stable merge sort) */
    g_ptr_array_sort(sorted, compare_use);
    for (guint i = 0; i < sorted->len; i++) {
        JsonObject *group = g_ptr_array_index(sorted, i);
        g_autofree gchar *amounts = NULL;
        GtkWidget *row, *suffix;

        amounts = describe_amounts(group);
        row = adw_action_row_new();
        adw_preferences_row_set_use_markup(ADW_PREFERENCES_ROW(row), FALSE);
        adw_preferences_row_set_title(ADW_PREFERENCES_ROW(row),
                                      einsora_json_member_string(group, "name"));
        adw_action_row_set_subtitle(ADW_ACTION_ROW(row),
                                    einsora_format_kind(einsora_json_member_string(group, "kind")));
        suffix = gtk_label_new(amounts);
        gtk_widget_add_css_class(suffix, "numeric");
        adw_action_row_add_suffix(ADW_ACTION_ROW(row), suffix);
        gtk_list_box_append(self->workloads, row);
        self->n_workloads++;
    }
    if (self->n_workloads == 0) {
        GtkWidget *row = adw_action_row_new();
        adw_preferences_row_set_title(ADW_PREFERENCES_ROW(row), _("Nothing ran in this time"));
        gtk_list_box_append(self->workloads, row);
    }
}

void
einsora_usage_view_set_error(EinsoraUsageView *self, const char *message)
{
    g_return_if_fail(EINSORA_IS_USAGE_VIEW(self));
    gtk_label_set_text(self->summary, message);
}

EinsoraUsageChart *
einsora_usage_view_get_chart(EinsoraUsageView *self)
{
    g_return_val_if_fail(EINSORA_IS_USAGE_VIEW(self), NULL);
    return self->chart;
}

const char *
einsora_usage_view_get_summary(EinsoraUsageView *self)
{
    g_return_val_if_fail(EINSORA_IS_USAGE_VIEW(self), NULL);
    return gtk_label_get_text(self->summary);
}

guint
einsora_usage_view_get_n_workloads(EinsoraUsageView *self)
{
    g_return_val_if_fail(EINSORA_IS_USAGE_VIEW(self), 0);
    return self->n_workloads;
}
