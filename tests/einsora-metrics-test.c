/* The metrics registry renders Prometheus' text format 0.0.4 exactly:
 * HELP and TYPE before the samples, label values escaped, series in a
 * stable order, histogram buckets cumulative up to +Inf. */
#include <math.h>

#include "einsora-metrics.h"

#define LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void
test_render_exact(void)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    static const double bounds[] = {0.1, 1, 2.5};
    EinsoraMetric *requests = einsora_metrics_counter(
        metrics, "test_requests_total", "Requests, by class.", LABELS("code", "kind"));
    EinsoraMetric *open = einsora_metrics_gauge(metrics, "test_open", "Open now.", NULL);
    EinsoraMetric *latency =
        einsora_metrics_histogram(metrics, "test_latency_seconds", "How long.", NULL, bounds, 3);
    EinsoraMetric *info =
        einsora_metrics_gauge(metrics, "test_build_info", "Build.", LABELS("version"));
    g_autoptr(GString) text = NULL;

    /* Made out of order: rendered in the order of their values. */
    einsora_metric_add(requests, LABELS("5xx", "notebook"), 1);
    einsora_metric_add(requests, LABELS("2xx", "notebook"), 2);
    einsora_metric_add(requests, LABELS("2xx", "endpoint"), 1);
    einsora_metric_add(requests, LABELS("2xx", "notebook"), 1);
    einsora_metric_add(open, NULL, 2);
    einsora_metric_add(open, NULL, -1);
    einsora_metric_observe(latency, NULL, 0.05);
    einsora_metric_observe(latency, NULL, 0.1); /* le is inclusive */
    einsora_metric_observe(latency, NULL, 2);
    einsora_metric_observe(latency, NULL, 30);
    einsora_metric_set(info, LABELS("0.1.0 \"dev\"\\\n"), 1);
    text = einsora_metrics_render(metrics);
    g_assert_cmpstr(text->str, ==,
                    "# HELP test_requests_total Requests, by class.\n"
                    "# TYPE test_requests_total counter\n"
                    "test_requests_total{code=\"2xx\",kind=\"endpoint\"} 1\n"
                    "test_requests_total{code=\"2xx\",kind=\"notebook\"} 3\n"
                    "test_requests_total{code=\"5xx\",kind=\"notebook\"} 1\n"
                    "# HELP test_open Open now.\n"
                    "# TYPE test_open gauge\n"
                    "test_open 1\n"
                    "# HELP test_latency_seconds How long.\n"
                    "# TYPE test_latency_seconds histogram\n"
                    "test_latency_seconds_bucket{le=\"0.1\"} 2\n"
                    "test_latency_seconds_bucket{le=\"1\"} 2\n"
                    "test_latency_seconds_bucket{le=\"2.5\"} 3\n"
                    "test_latency_seconds_bucket{le=\"+Inf\"} 4\n"
                    "test_latency_seconds_sum 32.15\n"
                    "test_latency_seconds_count 4\n"
                    "# HELP test_build_info Build.\n"
                    "# TYPE test_build_info gauge\n"
                    "test_build_info{version=\"0.1.0 \\\"dev\\\"\\\\\\n\"} 1\n");
    g_assert_cmpfloat(einsora_metric_get(requests, LABELS("2xx", "notebook")), ==, 3);
    g_assert_cmpfloat(einsora_metric_get(latency, NULL), ==, 4);
    g_assert_cmpfloat(einsora_metric_get(requests, LABELS("4xx", "notebook")), ==, 0);
}

/* A labelled histogram puts its labels before le; a labelled family
 * with no series yet still says what it is; help text is escaped. */
static void
test_render_labelled_histogram(void)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    static const double bounds[] = {0.001};
    EinsoraMetric *tx = einsora_metrics_histogram(metrics, "test_tx_seconds", "One\\two\nthree",
                                                  LABELS("outcome"), bounds, 1);
    g_autoptr(GString) empty = einsora_metrics_render(metrics);
    g_autoptr(GString) text = NULL;

    g_assert_cmpstr(empty->str, ==,
                    "# HELP test_tx_seconds One\\\\two\\nthree\n"
                    "# TYPE test_tx_seconds histogram\n");
    einsora_metric_touch(tx, LABELS("rollback"));
    einsora_metric_observe(tx, LABELS("commit"), 0.0005);
    text = einsora_metrics_render(metrics);
    g_assert_cmpstr(text->str, ==,
                    "# HELP test_tx_seconds One\\\\two\\nthree\n"
                    "# TYPE test_tx_seconds histogram\n"
                    "test_tx_seconds_bucket{outcome=\"commit\",le=\"0.001\"} 1\n"
                    "test_tx_seconds_bucket{outcome=\"commit\",le=\"+Inf\"} 1\n"
                    "test_tx_seconds_sum{outcome=\"commit\"} 0.0005\n"
                    "test_tx_seconds_count{outcome=\"commit\"} 1\n"
                    "test_tx_seconds_bucket{outcome=\"rollback\",le=\"0.001\"} 0\n"
                    "test_tx_seconds_bucket{outcome=\"rollback\",le=\"+Inf\"} 0\n"
                    "test_tx_seconds_sum{outcome=\"rollback\"} 0\n"
                    "test_tx_seconds_count{outcome=\"rollback\"} 0\n");
}

/* Numbers read back as written, whatever the locale; the specials as
 * the format spells them. */
static void
test_render_numbers(void)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    EinsoraMetric *gauge = einsora_metrics_gauge(metrics, "test:values", "v", LABELS("n"));
    g_autoptr(GString) text = NULL;

    einsora_metric_set(gauge, LABELS("a"), 0.1);
    einsora_metric_set(gauge, LABELS("b"), 1e21);
    einsora_metric_set(gauge, LABELS("c"), -INFINITY);
    einsora_metric_set(gauge, LABELS("d"), NAN);
    einsora_metric_set(gauge, LABELS("e"), 123456789012);
    einsora_metric_set(gauge, LABELS("f"), 1.0 / 3);
    text = einsora_metrics_render(metrics);
    g_assert_cmpstr(text->str, ==,
                    "# HELP test:values v\n"
                    "# TYPE test:values gauge\n"
                    "test:values{n=\"a\"} 0.1\n"
                    "test:values{n=\"b\"} 1e+21\n"
                    "test:values{n=\"c\"} -Inf\n"
                    "test:values{n=\"d\"} NaN\n"
                    "test:values{n=\"e\"} 123456789012\n"
                    "test:values{n=\"f\"} 0.33333333333333331\n");
}

/* Asking again gives the same family; mistakes are refused, and a NULL
 * family (a part given no registry) does nothing. */
static void
test_families(void)
{
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    EinsoraMetric *counter = einsora_metrics_counter(metrics, "test_total", "t", LABELS("code"));

    g_assert_true(einsora_metrics_counter(metrics, "test_total", "t", LABELS("code")) == counter);
    einsora_metric_add(NULL, NULL, 1);
    einsora_metric_set(NULL, NULL, 1);
    einsora_metric_observe(NULL, NULL, 1);
    g_assert_cmpfloat(einsora_metric_get(NULL, NULL), ==, 0);
}

/* Each mistake is a critical (fatal under the tests' G_DEBUG). */
static const char *const mistakes[] = {"digit", "dash", "le", "reserved", "retyped", "down", NULL};

static void
test_refusals(gconstpointer data)
{
    const char *mistake = data;

    if (g_test_subprocess()) {
        g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
        EinsoraMetric *counter =
            einsora_metrics_counter(metrics, "test_total", "t", LABELS("code"));

        g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL);
        if (g_str_equal(mistake, "digit"))
            einsora_metrics_counter(metrics, "1bad", "t", NULL);
        else if (g_str_equal(mistake, "dash"))
            einsora_metrics_counter(metrics, "bad-name", "t", NULL);
        else if (g_str_equal(mistake, "le"))
            einsora_metrics_gauge(metrics, "ok", "t", LABELS("le"));
        else if (g_str_equal(mistake, "reserved"))
            einsora_metrics_gauge(metrics, "ok", "t", LABELS("__x"));
        else if (g_str_equal(mistake, "retyped"))
            einsora_metrics_gauge(metrics, "test_total", "t", LABELS("code"));
        else
            einsora_metric_add(counter, LABELS("2xx"), -1);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*CRITICAL*");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/metrics/render/exact", test_render_exact);
    g_test_add_func("/metrics/render/labelled-histogram", test_render_labelled_histogram);
    g_test_add_func("/metrics/render/numbers", test_render_numbers);
    g_test_add_func("/metrics/families/same-and-null", test_families);
    for (guint i = 0; mistakes[i] != NULL; i++) {
        g_autofree gchar *path = g_strdup_printf("/metrics/families/refused/%s", mistakes[i]);
        g_test_add_data_func(path, mistakes[i], test_refusals);
    }
    return g_test_run();
}
