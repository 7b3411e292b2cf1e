#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-metrics.h"

#include <math.h>
#include <string.h>

/* One labelled series: a counter's or gauge's value, or a histogram's
 * counts per bucket (not cumulative; summed when rendered). */
typedef struct {
    GStrv values;
    double value;
    guint64 *buckets;
    guint64 count;
    double sum;
} Series;

struct _EinsoraMetric {
    EinsoraMetricType type;
    gchar *name;
    gchar *help;
    GStrv labels;
    guint n_labels;
    double *bounds;
    guint n_bounds;
    GPtrArray *series; /* Series*, ordered by their values */
};

struct _EinsoraMetrics {
    GObject parent_instance;
    GPtrArray *families; /* EinsoraMetric*, in the order they were made */
};

G_DEFINE_FINAL_TYPE(EinsoraMetrics, einsora_metrics, G_TYPE_OBJECT)

static void
series_free(Series *series)
{
    g_strfreev(series->values);
    g_free(series->buckets);
    g_free(series);
}

static void
metric_free(EinsoraMetric *metric)
{
    g_free(metric->name);
    g_free(metric->help);
    g_strfreev(metric->labels);
    g_free(metric->bounds);
    g_ptr_array_unref(metric->series);
    g_free(metric);
}

static void
einsora_metrics_finalize(GObject *object)
{
    EinsoraMetrics *self = EINSORA_METRICS(object);

    g_ptr_array_unref(self->families);
    G_OBJECT_CLASS(einsora_metrics_parent_class)->finalize(object);
}

static void
einsora_metrics_class_init(EinsoraMetricsClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_metrics_finalize;
}

static void
einsora_metrics_init(EinsoraMetrics *self)
{
    self->families = g_ptr_array_new_with_free_func((GDestroyNotify)metric_free);
}

EinsoraMetrics *
einsora_metrics_new(void)
{
    return g_object_new(EINSORA_TYPE_METRICS, NULL);
}

static gboolean
valid_name(const char *name, gboolean colons)
{
    if (name == NULL || *name == '\0' || g_ascii_isdigit(*name))
        return FALSE;
    for (const char *c = name; *c != '\0'; c++) {
        if (!g_ascii_isalnum(*c) && *c != '_' && !(colons && *c == ':'))
            return FALSE;
    }
    return TRUE;
}

static gboolean
valid_labels(const char *const *labels)
{
    for (guint i = 0; labels != NULL && labels[i] != NULL; i++) {
        if (!valid_name(labels[i], FALSE) || g_str_equal(labels[i], "le") ||
            g_str_has_prefix(labels[i], "__"))
            return FALSE;
        for (guint j = 0; j < i; j++) {
            if (g_str_equal(labels[i], labels[j]))
                return FALSE;
        }
    }
    return TRUE;
}

static gboolean
same_labels(const char *const *a, const char *const *b)
{
    guint length_a = a != NULL ? g_strv_length((GStrv)a) : 0;
    guint length_b = b != NULL ? g_strv_length((GStrv)b) : 0;

    if (length_a != length_b)
        return FALSE;
    for (guint i = 0; i < length_a; i++) {
        if (!g_str_equal(a[i], b[i]))
            return FALSE;
    }
    return TRUE;
}

static int
compare_values(const char *const *a, const char *const *b, guint n)
{
    for (guint i = 0; i < n; i++) {
        int order = strcmp(a[i], b[i]);
        if (order != 0)
            return order;
    }
    return 0;
}

/* The series for @values, made (in order) when @make. */
static Series *
find_series(EinsoraMetric *metric, const char *const *values, gboolean make)
{
    guint at = 0;
    Series *series;

    for (guint i = 0; i < metric->n_labels; i++)
        g_return_val_if_fail(values != NULL && values[i] != NULL, NULL);
    for (; at < metric->series->len; at++) {
        Series *known = g_ptr_array_index(metric->series, at);
        int order = compare_values((const char *const *)known->values, values, metric->n_labels);
        if (order == 0)
            return known;
        if (order > 0)
            break;
    }
    if (!make)
        return NULL;
    series = g_new0(Series, 1);
    series->values = g_new0(gchar *, metric->n_labels + 1);
    for (guint i = 0; i < metric->n_labels; i++)
        series->values[i] = g_strdup(values[i]);
    if (metric->type == EINSORA_METRIC_HISTOGRAM)
        series->buckets = g_new0(guint64, metric->n_bounds);
    g_ptr_array_insert(metric->series, (gint)at, series);
    return series;
}

static EinsoraMetric *
family_new(EinsoraMetrics *self, EinsoraMetricType type, const char *name, const char *help,
           const char *const *labels, const double *bounds, guint n_bounds)
{
    EinsoraMetric *metric;

    g_return_val_if_fail(EINSORA_IS_METRICS(self), NULL);
    g_return_val_if_fail(valid_name(name, TRUE), NULL);
    g_return_val_if_fail(help != NULL, NULL);
    g_return_val_if_fail(valid_labels(labels), NULL);
    for (guint i = 0; i < self->families->len; i++) {
        EinsoraMetric *known = g_ptr_array_index(self->families, i);
        if (!g_str_equal(known->name, name))
            continue;
        g_return_val_if_fail(known->type == type, NULL);
        g_return_val_if_fail(same_labels((const char *const *)known->labels, labels), NULL);
        return known;
    }
    metric = g_new0(EinsoraMetric, 1);
    metric->type = type;
    metric->name = g_strdup(name);
    metric->help = g_strdup(help);
    metric->labels = g_strdupv((GStrv)labels);
    if (metric->labels == NULL)
        metric->labels = g_new0(gchar *, 1);
    metric->n_labels = g_strv_length(metric->labels);
    metric->bounds = g_memdup2(bounds, n_bounds * sizeof(double));
    metric->n_bounds = n_bounds;
    metric->series = g_ptr_array_new_with_free_func((GDestroyNotify)series_free);
    g_ptr_array_add(self->families, metric);
    if (metric->n_labels == 0)
        find_series(metric, NULL, TRUE);
    return metric;
}

EinsoraMetric *
einsora_metrics_counter(EinsoraMetrics *self, const char *name, const char *help,
                        const char *const *labels)
{
    return family_new(self, EINSORA_METRIC_COUNTER, name, help, labels, NULL, 0);
}

EinsoraMetric *
einsora_metrics_gauge(EinsoraMetrics *self, const char *name, const char *help,
                      const char *const *labels)
{
    return family_new(self, EINSORA_METRIC_GAUGE, name, help, labels, NULL, 0);
}

EinsoraMetric *
einsora_metrics_histogram(EinsoraMetrics *self, const char *name, const char *help,
                          const char *const *labels, const double *bounds, guint n_bounds)
{
    for (guint i = 0; i < n_bounds; i++) {
        g_return_val_if_fail(isfinite(bounds[i]), NULL);
        g_return_val_if_fail(i == 0 || bounds[i] > bounds[i - 1], NULL);
    }
    return family_new(self, EINSORA_METRIC_HISTOGRAM, name, help, labels, bounds, n_bounds);
}

void
einsora_metric_add(EinsoraMetric *metric, const char *const *values, double amount)
{
    Series *series;

    if (metric == NULL)
        return;
    g_return_if_fail(metric->type != EINSORA_METRIC_HISTOGRAM);
    g_return_if_fail(metric->type != EINSORA_METRIC_COUNTER || amount >= 0);
    series = find_series(metric, values, TRUE);
    if (series != NULL)
        series->value += amount;
}

void
einsora_metric_set(EinsoraMetric *metric, const char *const *values, double value)
{
    Series *series;

    if (metric == NULL)
        return;
    g_return_if_fail(metric->type == EINSORA_METRIC_GAUGE);
    series = find_series(metric, values, TRUE);
    if (series != NULL)
        series->value = value;
}

void
einsora_metric_observe(EinsoraMetric *metric, const char *const *values, double value)
{
    Series *series;

    if (metric == NULL)
        return;
    g_return_if_fail(metric->type == EINSORA_METRIC_HISTOGRAM);
    series = find_series(metric, values, TRUE);
    if (series == NULL)
        return;
    for (guint i = 0; i < metric->n_bounds; i++) {
        if (value <= metric->bounds[i]) {
            series->buckets[i]++;
            break;
        }
    }
    series->count++;
    series->sum += value;
}

void
einsora_metric_touch(EinsoraMetric *metric, const char *const *values)
{
    if (metric != NULL)
        find_series(metric, values, TRUE);
}

double
einsora_metric_get(EinsoraMetric *metric, const char *const *values)
{
    Series *series = metric != NULL ? find_series(metric, values, FALSE) : NULL;

    if (series == NULL)
        return 0;
    return metric->type == EINSORA_METRIC_HISTOGRAM ? (double)series->count : series->value;
}

double
einsora_metric_get_sum(EinsoraMetric *metric, const char *const *values)
{
    Series *series = metric != NULL ? find_series(metric, values, FALSE) : NULL;

    return series != NULL ? series->sum : 0;
}

/* Rendering (text format 0.0.4) */

static const char *
type_name(EinsoraMetricType type)
{
    switch (type) {
    case EINSORA_METRIC_COUNTER:
        return "counter";
    case EINSORA_METRIC_GAUGE:
        return "gauge";
    case EINSORA_METRIC_HISTOGRAM:
    default:
        return "histogram";
    }
}

/* HELP escapes backslash and newline; a label value also the quote. */
static void
append_escaped(GString *out, const char *text, gboolean quote)
{
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '\\')
            g_string_append(out, "\\\\");
        else if (*c == '\n')
            g_string_append(out, "\\n");
        else if (quote && *c == '"')
            g_string_append(out, "\\\"");
        else
            g_string_append_c(out, *c);
    }
}

/* The shortest text that reads back as @value, in the C locale. */
static void
append_number(GString *out, double value)
{
    char buffer[G_ASCII_DTOSTR_BUF_SIZE];

    if (isnan(value)) {
        g_string_append(out, "NaN");
        return;
    }
    if (isinf(value)) {
        g_string_append(out, value > 0 ? "+Inf" : "-Inf");
        return;
    }
    g_ascii_formatd(buffer, sizeof buffer, "%.15g", value);
    if (g_ascii_strtod(buffer, NULL) != value)
        g_ascii_formatd(buffer, sizeof buffer, "%.17g", value);
    g_string_append(out, buffer);
}

/* name{a="x",b="y"[,le="B"]} */
static void
append_series_name(GString *out, const EinsoraMetric *metric, const char *suffix,
                   const Series *series, const char *le)
{
    gboolean any = metric->n_labels > 0 || le != NULL;

    g_string_append(out, metric->name);
    g_string_append(out, suffix);
    if (!any)
        return;
    g_string_append_c(out, '{');
    for (guint i = 0; i < metric->n_labels; i++) {
        g_string_append_printf(out, "%s%s=\"", i > 0 ? "," : "", metric->labels[i]);
        append_escaped(out, series->values[i], TRUE);
        g_string_append_c(out, '"');
    }
    if (le != NULL)
        g_string_append_printf(out, "%sle=\"%s\"", metric->n_labels > 0 ? "," : "", le);
    g_string_append_c(out, '}');
}

static void
append_sample(GString *out, const EinsoraMetric *metric, const char *suffix, const Series *series,
              const char *le, double value)
{
    append_series_name(out, metric, suffix, series, le);
    g_string_append_c(out, ' ');
    append_number(out, value);
    g_string_append_c(out, '\n');
}

static void
append_histogram(GString *out, const EinsoraMetric *metric, const Series *series)
{
    guint64 cumulative = 0;

    for (guint i = 0; i < metric->n_bounds; i++) {
        GString *le = g_string_new(NULL);
        cumulative += series->buckets[i];
        append_number(le, metric->bounds[i]);
        append_sample(out, metric, "_bucket", series, le->str, (double)cumulative);
        g_string_free(le, TRUE);
    }
    append_sample(out, metric, "_bucket", series, "+Inf", (double)series->count);
    append_sample(out, metric, "_sum", series, NULL, series->sum);
    append_sample(out, metric, "_count", series, NULL, (double)series->count);
}

GString *
einsora_metrics_render(EinsoraMetrics *self)
{
    GString *out = g_string_new(NULL);

    g_return_val_if_fail(EINSORA_IS_METRICS(self), out);
    for (guint i = 0; i < self->families->len; i++) {
        const EinsoraMetric *metric = g_ptr_array_index(self->families, i);

        g_string_append_printf(out, "# HELP %s ", metric->name);
        append_escaped(out, metric->help, FALSE);
        g_string_append_printf(out, "\n# TYPE %s %s\n", metric->name, type_name(metric->type));
        for (guint j = 0; j < metric->series->len; j++) {
            const Series *series = g_ptr_array_index(metric->series, j);
            if (metric->type == EINSORA_METRIC_HISTOGRAM)
                append_histogram(out, metric, series);
            else
                append_sample(out, metric, "", series, NULL, series->value);
        }
    }
    return out;
}
