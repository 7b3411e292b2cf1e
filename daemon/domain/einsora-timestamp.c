#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-timestamp.h"

#include <stdio.h>

#include "einsora-error.h"

/* The real clock, for main.c to inject; nothing else should call it. */
gint64
einsora_now_real(gpointer user_data)
{
    return g_get_real_time();
}

gchar *
einsora_timestamp_format(gint64 unix_us)
{
    g_autoptr(GDateTime) dt = NULL;
    gint64 secs = unix_us / G_USEC_PER_SEC;
    gint64 frac = unix_us % G_USEC_PER_SEC;

    if (frac < 0) {
        frac += G_USEC_PER_SEC;
        secs--;
    }
    dt = g_date_time_new_from_unix_utc(secs);
    /* Years past 9999 do not fit the fixed width; clamp to the epoch-safe
     * range rather than emit a wider string. */
    if (dt == NULL || g_date_time_get_year(dt) > 9999)
        return g_strdup("9999-12-31T23:59:59.999999Z");
    return g_strdup_printf("%04d-%02d-%02dT%02d:%02d:%02d.%06" G_GINT64_FORMAT "Z",
                           g_date_time_get_year(dt), g_date_time_get_month(dt),
                           g_date_time_get_day_of_month(dt), g_date_time_get_hour(dt),
                           g_date_time_get_minute(dt), g_date_time_get_second(dt), frac);
}

static GDateTime *
parse_fixed_width(const char *str, int *micro)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
    int year, month, day, hour, minute, second;

    G_STATIC_ASSERT(sizeof pattern - 1 == EINSORA_TIMESTAMP_LEN);

    if (str == NULL || strlen(str) != EINSORA_TIMESTAMP_LEN)
        return NULL;
    for (guint i = 0; i < EINSORA_TIMESTAMP_LEN; i++) {
        if (pattern[i] == 'd' ? !g_ascii_isdigit(str[i]) : str[i] != pattern[i])
            return NULL;
    }
    if (sscanf(str, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &year, &month, &day, &hour, &minute, &second,
               micro) != 7)
        return NULL;
    return g_date_time_new_utc(year, month, day, hour, minute, second);
}

/* Parses exactly the form einsora_timestamp_format() writes. */
gboolean
einsora_timestamp_parse(const char *str, gint64 *unix_us, GError **error)
{
    int micro = 0;
    g_autoptr(GDateTime) dt = parse_fixed_width(str, &micro);

    if (dt == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "not a valid timestamp: expected YYYY-MM-DDTHH:MM:SS.ffffffZ in UTC");
        return FALSE;
    }
    if (unix_us != NULL)
        *unix_us = g_date_time_to_unix(dt) * G_USEC_PER_SEC + micro;
    return TRUE;
}
