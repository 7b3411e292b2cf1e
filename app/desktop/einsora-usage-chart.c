#define G_LOG_DOMAIN "einsora-app"

#include "einsora-usage-chart.h"

#include <glib/gi18n.h>
#include <math.h>

#define AXIS_MIN_WIDTH 36.0
#define AXIS_PADDING 4.0 /* left of the widest label */
#define AXIS_GAP 6.0     /* between a label and the plot */
#define DAY_LABEL_HEIGHT 22.0
#define LEGEND_HEIGHT 26.0
#define TOP_MARGIN 10.0
#define BAR_GAP 0.3 /* of a day's slot */

struct _EinsoraUsageChart {
    GtkWidget parent_instance;
    GPtrArray *days;    /* gchar*, in order */
    GPtrArray *classes; /* gchar*, in order first seen */
    GHashTable *hours;  /* "day\nclass" -> double* */
};

G_DEFINE_FINAL_TYPE(EinsoraUsageChart, einsora_usage_chart, GTK_TYPE_WIDGET)

/* libadwaita's palette (blue 3, green 4, yellow 5, orange 4, purple 3,
 * red 3, brown 3, teal): distinct in light and dark styles alike. */
static const char *const palette[] = {"#3584e4", "#2ec27e", "#e5a50a", "#ff7800",
                                      "#9141ac", "#e01b24", "#986a44", "#1c71d8"};

/* The widget's foreground colour (GTK 4.8 has no gtk_widget_get_color()). */
static void
foreground(GtkWidget *widget, GdkRGBA *color)
{
    gtk_style_context_get_color(gtk_widget_get_style_context(widget), color);
}

static double
hours_of(EinsoraUsageChart *self, const char *day, const char *gpu_class)
{
    g_autofree gchar *key = g_strconcat(day, "\n", gpu_class, NULL);
    const double *hours = g_hash_table_lookup(self->hours, key);

    return hours != NULL ? *hours : 0;
}

double
einsora_usage_chart_get_day_total(EinsoraUsageChart *self, const char *day)
{
    double total = 0;

    g_return_val_if_fail(EINSORA_IS_USAGE_CHART(self), 0);
    for (guint i = 0; i < self->classes->len; i++)
        total += hours_of(self, day, g_ptr_array_index(self->classes, i));
    return total;
}

/* The y axis: @intervals steps of @step each, in a unit that suits the
 * largest day (hours, or minutes or seconds for a short one), so that
 * its labels are short numbers: "0 h, 2 h, 4 h", "0 s, 5 s, 10 s". */
typedef struct {
    double per_hour; /* units in an hour: 1, 60 or 3600 */
    double step;     /* in units: 1, 2 or 5 times a power of ten */
    guint intervals; /* 1 to 4 */
} Axis;

static Axis
axis_for(double max_hours)
{
    const double factors[] = {1, 2, 5, 10};
    Axis axis = {1, 0, 0};
    double max, raw, power;

    if (!isfinite(max_hours))
        max_hours = 0;
    if (max_hours > 0 && max_hours < 1)
        axis.per_hour = max_hours * 60 >= 1 ? 60 : 3600;
    max = max_hours > 0 ? max_hours * axis.per_hour : 1;
    raw = max / 4;
    power = pow(10, floor(log10(raw)));
    /* The smallest round step that covers the top in four. */
    for (guint i = 0; i < G_N_ELEMENTS(factors); i++) {
        axis.step = power * factors[i];
        if (axis.step >= raw * (1 - 1e-9))
            break;
    }
    if (axis.per_hour == 3600 && axis.step < 1)
        axis.step = 1; /* usage is counted in whole seconds */
    axis.intervals = (guint)CLAMP(ceil(max / axis.step - 1e-9), 1, 4);
    return axis;
}

static double
axis_top_hours(const Axis *axis)
{
    return axis->step * axis->intervals / axis->per_hour;
}

/* The label of the @i-th grid line from the bottom. */
static gchar *
axis_label(const Axis *axis, guint i)
{
    double value = axis->step * i;

    if (axis->per_hour == 3600)
        /* Translators: the usage chart's axis: %g is a number of seconds. */
        return g_strdup_printf(C_("usage chart axis", "%g s"), value);
    if (axis->per_hour == 60)
        /* Translators: the usage chart's axis: %g is a number of minutes. */
        return g_strdup_printf(C_("usage chart axis", "%g min"), value);
    /* Translators: the usage chart's axis: %g is a number of hours. */
    return g_strdup_printf(C_("usage chart axis", "%g h"), value);
}

static double
max_day_total(EinsoraUsageChart *self)
{
    double max = 0;

    for (guint d = 0; d < self->days->len; d++)
        max = MAX(max, einsora_usage_chart_get_day_total(self, g_ptr_array_index(self->days, d)));
    return max;
}

GStrv
einsora_usage_chart_dup_axis_labels(EinsoraUsageChart *self)
{
    Axis axis;
    g_autoptr(GStrvBuilder) labels = g_strv_builder_new();

    g_return_val_if_fail(EINSORA_IS_USAGE_CHART(self), NULL);
    axis = axis_for(max_day_total(self));
    for (guint i = 0; i <= axis.intervals; i++) {
        g_autofree gchar *label = axis_label(&axis, i);

        g_strv_builder_add(labels, label);
    }
    return g_strv_builder_end(labels);
}

static int
text_width_of(GtkWidget *widget, const char *text)
{
    PangoLayout *layout = gtk_widget_create_pango_layout(widget, text);
    int width = 0;

    pango_layout_get_pixel_size(layout, &width, NULL);
    g_object_unref(layout);
    return width;
}

/* As wide as its widest label: none is cut off, in any language. */
static double
axis_width(GtkWidget *widget, const Axis *axis)
{
    int widest = 0;

    for (guint i = 0; i <= axis->intervals; i++) {
        g_autofree gchar *label = axis_label(axis, i);

        widest = MAX(widest, text_width_of(widget, label));
    }
    return MAX(AXIS_MIN_WIDTH, widest + AXIS_PADDING + AXIS_GAP);
}

double
einsora_usage_chart_get_axis_width(EinsoraUsageChart *self)
{
    Axis axis;

    g_return_val_if_fail(EINSORA_IS_USAGE_CHART(self), 0);
    axis = axis_for(max_day_total(self));
    return axis_width(GTK_WIDGET(self), &axis);
}

static void
append_text(GtkWidget *widget, GtkSnapshot *snapshot, const char *text, double x, double y,
            double width, double align, gboolean dim)
{
    PangoLayout *layout = gtk_widget_create_pango_layout(widget, text);
    GdkRGBA color;
    int text_width, text_height;

    foreground(widget, &color);
    if (dim)
        color.alpha *= 0.6f;
    pango_layout_get_pixel_size(layout, &text_width, &text_height);
    gtk_snapshot_save(snapshot);
    gtk_snapshot_translate(
        snapshot, &GRAPHENE_POINT_INIT((float)(x + (width - text_width) * align), (float)y));
    gtk_snapshot_append_layout(snapshot, layout, &color);
    gtk_snapshot_restore(snapshot);
    g_object_unref(layout);
}

static void
einsora_usage_chart_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
    EinsoraUsageChart *self = EINSORA_USAGE_CHART(widget);
    double width = gtk_widget_get_width(widget);
    double height = gtk_widget_get_height(widget);
    double plot_height = height - TOP_MARGIN - DAY_LABEL_HEIGHT - LEGEND_HEIGHT;
    Axis axis = axis_for(max_day_total(self));
    double left = axis_width(widget, &axis);
    double plot_width = width - left;
    double top = axis_top_hours(&axis), slot;
    GdkRGBA line;

    if (plot_height < 20 || plot_width < 20)
        return;
    foreground(widget, &line);
    line.alpha = 0.15f;
    /* The grid lines with their values. */
    for (guint i = 0; i <= axis.intervals; i++) {
        double y = TOP_MARGIN + plot_height * (1 - (double)i / axis.intervals);
        g_autofree gchar *label = axis_label(&axis, i);

        gtk_snapshot_append_color(snapshot, &line,
                                  &GRAPHENE_RECT_INIT((float)left, (float)y, (float)plot_width, 1));
        append_text(widget, snapshot, label, 0, y - 9, left - AXIS_GAP, 1.0, TRUE);
    }
    if (self->days->len == 0) {
        append_text(widget, snapshot, _("Nothing ran in this time"), left,
                    TOP_MARGIN + plot_height / 2 - 9, plot_width, 0.5, TRUE);
        return;
    }
    slot = plot_width / self->days->len;
    for (guint d = 0; d < self->days->len; d++) {
        const char *day = g_ptr_array_index(self->days, d);
        double x = left + slot * d + slot * BAR_GAP / 2;
        double bar = slot * (1 - BAR_GAP);
        double y = TOP_MARGIN + plot_height;

        for (guint c = 0; c < self->classes->len; c++) {
            double hours = hours_of(self, day, g_ptr_array_index(self->classes, c));
            double h = plot_height * hours / top;
            GdkRGBA color;

            if (!(h > 0) || !isfinite(h))
                continue;
            gdk_rgba_parse(&color, palette[c % G_N_ELEMENTS(palette)]);
            y -= h;
            gtk_snapshot_append_color(
                snapshot, &color, &GRAPHENE_RECT_INIT((float)x, (float)y, (float)bar, (float)h));
        }
        /* "12-03": the month and day, under the bar. */
        append_text(widget, snapshot, strlen(day) >= 10 ? day + 5 : day, left + slot * d,
                    TOP_MARGIN + plot_height + 4, slot, 0.5, TRUE);
    }
    /* The legend: a swatch and its class each. */
    {
        double x = left;
        double y = height - LEGEND_HEIGHT + 6;

        for (guint c = 0; c < self->classes->len; c++) {
            const char *name = g_ptr_array_index(self->classes, c);
            int text_width = text_width_of(widget, name);
            GdkRGBA color;

            gdk_rgba_parse(&color, palette[c % G_N_ELEMENTS(palette)]);
            gtk_snapshot_append_color(snapshot, &color,
                                      &GRAPHENE_RECT_INIT((float)x, (float)y + 3, 12, 12));
            append_text(widget, snapshot, name, x + 18, y, text_width, 0, FALSE);
            x += 18 + text_width + 18;
        }
    }
}

static void
einsora_usage_chart_measure(GtkWidget *widget, GtkOrientation orientation, int for_size,
                            int *minimum, int *natural, int *minimum_baseline,
                            int *natural_baseline)
{
    *minimum = orientation == GTK_ORIENTATION_HORIZONTAL ? 240 : 200;
    *natural = orientation == GTK_ORIENTATION_HORIZONTAL ? 600 : 260;
}

static void
einsora_usage_chart_finalize(GObject *object)
{
    EinsoraUsageChart *self = EINSORA_USAGE_CHART(object);

    g_ptr_array_unref(self->days);
    g_ptr_array_unref(self->classes);
    g_hash_table_unref(self->hours);
    G_OBJECT_CLASS(einsora_usage_chart_parent_class)->finalize(object);
}

static void
einsora_usage_chart_class_init(EinsoraUsageChartClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->finalize = einsora_usage_chart_finalize;
    widget_class->snapshot = einsora_usage_chart_snapshot;
    widget_class->measure = einsora_usage_chart_measure;
    gtk_widget_class_set_accessible_role(widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
einsora_usage_chart_init(EinsoraUsageChart *self)
{
    self->days = g_ptr_array_new_with_free_func(g_free);
    self->classes = g_ptr_array_new_with_free_func(g_free);
    self->hours = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

GtkWidget *
einsora_usage_chart_new(void)
{
    return g_object_new(EINSORA_TYPE_USAGE_CHART, NULL);
}

void
einsora_usage_chart_clear(EinsoraUsageChart *self)
{
    g_return_if_fail(EINSORA_IS_USAGE_CHART(self));
    g_ptr_array_set_size(self->days, 0);
    g_ptr_array_set_size(self->classes, 0);
    g_hash_table_remove_all(self->hours);
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

static gboolean
contains(GPtrArray *array, const char *text)
{
    for (guint i = 0; i < array->len; i++)
        if (g_str_equal(g_ptr_array_index(array, i), text))
            return TRUE;
    return FALSE;
}

void
einsora_usage_chart_add_day(EinsoraUsageChart *self, const char *day)
{
    g_return_if_fail(EINSORA_IS_USAGE_CHART(self));
    g_return_if_fail(day != NULL);
    if (!contains(self->days, day))
        g_ptr_array_add(self->days, g_strdup(day));
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

void
einsora_usage_chart_add(EinsoraUsageChart *self, const char *day, const char *gpu_class,
                        double hours)
{
    g_autofree gchar *key = NULL;
    double *sum;

    g_return_if_fail(EINSORA_IS_USAGE_CHART(self));
    if (day == NULL || gpu_class == NULL || !(hours > 0) || !isfinite(hours))
        return;
    if (!contains(self->days, day))
        g_ptr_array_add(self->days, g_strdup(day));
    if (!contains(self->classes, gpu_class))
        g_ptr_array_add(self->classes, g_strdup(gpu_class));
    key = g_strconcat(day, "\n", gpu_class, NULL);
    sum = g_hash_table_lookup(self->hours, key);
    if (sum == NULL) {
        sum = g_new0(double, 1);
        g_hash_table_insert(self->hours, g_steal_pointer(&key), sum);
    }
    *sum += hours;
    gtk_widget_queue_draw(GTK_WIDGET(self));
}

guint
einsora_usage_chart_get_n_days(EinsoraUsageChart *self)
{
    g_return_val_if_fail(EINSORA_IS_USAGE_CHART(self), 0);
    return self->days->len;
}
