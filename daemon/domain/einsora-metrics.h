/* The daemon's metrics: counters, gauges and histograms with labels,
 * rendered in Prometheus' text format 0.0.4 for GET /metrics
 * (docs/adr/0043-metrics.md). Families are made once, at wiring time;
 * the parts that count hold their families and add to them as things
 * happen. Label values come from small fixed sets (states, kinds, status
 * classes), never from a workload, a tenant or a request, so memory stays
 * bounded. Not thread-safe: everything runs on the one main loop. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define EINSORA_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef enum {
    EINSORA_METRIC_COUNTER,
    EINSORA_METRIC_GAUGE,
    EINSORA_METRIC_HISTOGRAM,
} EinsoraMetricType;

/* One family (a name, its help, its label names), owned by the registry
 * and living as long as it. Every function taking one does nothing with
 * NULL, so a part that was given no registry needs no checks. */
typedef struct _EinsoraMetric EinsoraMetric;

#define EINSORA_TYPE_METRICS (einsora_metrics_get_type())
G_DECLARE_FINAL_TYPE(EinsoraMetrics, einsora_metrics, EINSORA, METRICS, GObject)

EinsoraMetrics *einsora_metrics_new(void);

/* A new family. @name matches [a-zA-Z_:][a-zA-Z0-9_:]*; @labels is NULL
 * (none) or NULL-terminated names matching [a-zA-Z_][a-zA-Z0-9_]* (not
 * "le", and none beginning "__"). Asking again for a name already made
 * with the same type and labels returns that family. A family without
 * labels has its one series, at 0, from the start. */
EinsoraMetric *einsora_metrics_counter(EinsoraMetrics *self, const char *name, const char *help,
                                       const char *const *labels);
EinsoraMetric *einsora_metrics_gauge(EinsoraMetrics *self, const char *name, const char *help,
                                     const char *const *labels);
/* @bounds: the buckets' upper bounds, increasing, without +Inf (which
 * every histogram has). */
EinsoraMetric *einsora_metrics_histogram(EinsoraMetrics *self, const char *name, const char *help,
                                         const char *const *labels, const double *bounds,
                                         guint n_bounds);

/* @values: one per label name, in their order (NULL for a family without
 * labels). A counter only grows: a negative @amount is refused. */
void einsora_metric_add(EinsoraMetric *metric, const char *const *values, double amount);
void einsora_metric_set(EinsoraMetric *metric, const char *const *values, double value);
void einsora_metric_observe(EinsoraMetric *metric, const char *const *values, double value);
/* Makes the series at 0 if it isn't there, so it is scraped before its
 * first event (a rate() needs the 0). */
void einsora_metric_touch(EinsoraMetric *metric, const char *const *values);
/* The series' value (a histogram's count), 0 when it has none: tests. */
double einsora_metric_get(EinsoraMetric *metric, const char *const *values);
/* A histogram series' sum: tests. */
double einsora_metric_get_sum(EinsoraMetric *metric, const char *const *values);

/* Every family in the order they were made, each series in the order of
 * its label values. */
GString *einsora_metrics_render(EinsoraMetrics *self);

/* Seconds between two g_get_monotonic_time() readings. */
static inline double
einsora_metrics_seconds(gint64 from_us, gint64 to_us)
{
    return (double)(to_us - from_us) / G_USEC_PER_SEC;
}

G_END_DECLS
