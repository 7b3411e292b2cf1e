#include "einsora-error.h"
#include "einsora-timestamp.h"

static void
test_format_fixed_width(void)
{
    static const struct {
        gint64 us;
        const char *text;
    } table[] = {
        {0, "1970-01-01T00:00:00.000000Z"},
        {1, "1970-01-01T00:00:00.000001Z"},
        {G_GINT64_CONSTANT(1764406000123456), "2025-11-29T08:46:40.123456Z"},
        {G_GINT64_CONSTANT(946684799999999), "1999-12-31T23:59:59.999999Z"},
        {-1, "1969-12-31T23:59:59.999999Z"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree gchar *text = einsora_timestamp_format(table[i].us);
        gint64 back = 0;
        g_autoptr(GError) error = NULL;

        g_assert_cmpstr(text, ==, table[i].text);
        g_assert_cmpuint(strlen(text), ==, EINSORA_TIMESTAMP_LEN);
        g_assert_true(einsora_timestamp_parse(text, &back, &error));
        g_assert_no_error(error);
        g_assert_cmpint(back, ==, table[i].us);
    }
}

static void
test_text_order_is_time_order(void)
{
    gint64 times[] = {5, 999999, 1000000, G_GINT64_CONSTANT(1764406000000000),
                      G_GINT64_CONSTANT(4102444800000000)};

    for (guint i = 1; i < G_N_ELEMENTS(times); i++) {
        g_autofree gchar *a = einsora_timestamp_format(times[i - 1]);
        g_autofree gchar *b = einsora_timestamp_format(times[i]);
        g_assert_cmpstr(a, <, b);
    }
}

static void
test_parse_refuses(void)
{
    static const char *const bad[] = {
        "",
        "2026-11-29T09:06:36Z",
        "2026-11-29T09:06:36.123Z",
        "2026-11-29 09:06:36.123456Z",
        "2026-11-29T09:06:36.123456+00:00",
        "2026-13-29T09:06:36.123456Z",
        "2026-02-30T09:06:36.123456Z",
        "2026-11-29T25:06:36.123456Z",
        "2026-11-29T09:06:36.12345xZ",
        "2026-11-29T09:06:36.123456z",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        gint64 us = 42;
        g_test_message("%s", bad[i]);
        g_assert_false(einsora_timestamp_parse(bad[i], &us, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_cmpint(us, ==, 42);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/timestamp/format/fixed-width-utc", test_format_fixed_width);
    g_test_add_func("/timestamp/format/text-order-is-time-order", test_text_order_is_time_order);
    g_test_add_func("/timestamp/parse/refuses-other-forms", test_parse_refuses);
    return g_test_run();
}
