#define G_LOG_DOMAIN "einsora-app"

#include "einsora-format.h"

#include <glib/gi18n.h>
#include <string.h>

typedef struct {
    const char *state;
    const char *label;
    const char *style;
    EinsoraStateFilter filter;
} StateInfo;

static const StateInfo states[] = {
    {"pending", N_("Pending"), "accent", EINSORA_STATE_FILTER_WAITING},
    {"queued", N_("Queued"), "accent", EINSORA_STATE_FILTER_WAITING},
    {"provisioning", N_("Starting"), "accent", EINSORA_STATE_FILTER_WAITING},
    {"running", N_("Running"), "success", EINSORA_STATE_FILTER_RUNNING},
    {"stopping", N_("Stopping"), "warning", EINSORA_STATE_FILTER_STOPPED},
    {"stopped", N_("Stopped"), "dim-label", EINSORA_STATE_FILTER_STOPPED},
    {"failed", N_("Failed"), "error", EINSORA_STATE_FILTER_FAILED},
    {"deleting", N_("Deleting"), "warning", EINSORA_STATE_FILTER_STOPPED},
    {"deleted", N_("Deleted"), "dim-label", EINSORA_STATE_FILTER_STOPPED},
};

static const char *const filter_names[] = {"all", "running", "waiting", "stopped", "failed"};

static const StateInfo *
lookup_state(const char *state)
{
    for (gsize i = 0; state != NULL && i < G_N_ELEMENTS(states); i++)
        if (g_str_equal(states[i].state, state))
            return &states[i];
    return NULL;
}

const char *
einsora_format_state_label(const char *state)
{
    const StateInfo *info = lookup_state(state);

    if (info != NULL)
        return _(info->label);
    return state != NULL ? state : "";
}

const char *
einsora_format_kind(const char *kind)
{
    if (g_strcmp0(kind, "notebook") == 0)
        return C_("workload kind", "Notebook");
    if (g_strcmp0(kind, "endpoint") == 0)
        return C_("workload kind", "Endpoint");
    if (g_strcmp0(kind, "vm") == 0)
        return C_("workload kind", "Virtual Machine");
    /* A kind newer than the app: as the API names it. */
    return kind != NULL ? kind : "";
}

const char *
einsora_format_state_style(const char *state)
{
    const StateInfo *info = lookup_state(state);

    return info != NULL ? info->style : "dim-label";
}

gboolean
einsora_format_state_matches(const char *state, EinsoraStateFilter filter)
{
    const StateInfo *info;

    if (filter == EINSORA_STATE_FILTER_ALL)
        return TRUE;
    info = lookup_state(state);
    return info != NULL && info->filter == filter;
}

EinsoraStateFilter
einsora_format_state_filter_from_string(const char *name)
{
    for (gsize i = 0; name != NULL && i < G_N_ELEMENTS(filter_names); i++)
        if (g_str_equal(filter_names[i], name))
            return (EinsoraStateFilter)i;
    return EINSORA_STATE_FILTER_ALL;
}

const char *
einsora_format_state_filter_to_string(EinsoraStateFilter filter)
{
    if ((guint)filter >= G_N_ELEMENTS(filter_names))
        return filter_names[0];
    return filter_names[filter];
}

GDateTime *
einsora_format_parse_time(const char *text)
{
    if (text == NULL || *text == '\0')
        return NULL;
    return g_date_time_new_from_iso8601(text, NULL);
}

gchar *
einsora_format_age(GDateTime *then, GDateTime *now)
{
    GTimeSpan span = g_date_time_difference(now, then);
    gint64 minutes = span / G_TIME_SPAN_MINUTE;
    gint64 hours = span / G_TIME_SPAN_HOUR;
    gint64 days = span / G_TIME_SPAN_DAY;

    /* A clock a little behind the daemon's still reads as now. */
    if (minutes < 1)
        return g_strdup(_("just now"));
    if (hours < 1)
        return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%d min", "%d min", (gulong)minutes),
                               (int)minutes);
    if (days < 1)
        return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%d h", "%d h", (gulong)hours),
                               (int)hours);
    return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%d day", "%d days", (gulong)days),
                           (int)days);
}

gchar *
einsora_format_ago(GDateTime *then, GDateTime *now)
{
    GTimeSpan span = g_date_time_difference(now, then);
    gint64 seconds = span / G_TIME_SPAN_SECOND;
    gint64 minutes = span / G_TIME_SPAN_MINUTE;
    gint64 hours = span / G_TIME_SPAN_HOUR;
    gint64 days = span / G_TIME_SPAN_DAY;

    if (seconds < 1)
        return g_strdup(_("just now"));
    if (minutes < 1)
        return g_strdup_printf(
            /* TRANSLATORS: how long ago an agent last synced, in seconds */
            g_dngettext(GETTEXT_PACKAGE, "%d s ago", "%d s ago", (gulong)seconds), (int)seconds);
    if (hours < 1)
        return g_strdup_printf(
            g_dngettext(GETTEXT_PACKAGE, "%d min ago", "%d min ago", (gulong)minutes),
            (int)minutes);
    if (days < 1)
        return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%d h ago", "%d h ago", (gulong)hours),
                               (int)hours);
    return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%d day ago", "%d days ago", (gulong)days),
                           (int)days);
}

gchar *
einsora_format_clock_offset(gint64 offset_ms)
{
    /* Unsigned, so that no offset a server sends overflows. */
    guint64 magnitude = offset_ms < 0 ? (guint64)0 - (guint64)offset_ms : (guint64)offset_ms;
    guint64 seconds = magnitude / 1000 + (magnitude % 1000 >= 500);

    /* long long: xgettext can't read G_GUINT64_FORMAT in a message. */
    return g_strdup_printf(
        /* TRANSLATORS: how far a machine's clock is from the server's */
        g_dngettext(GETTEXT_PACKAGE, "clock off by %llu s", "clock off by %llu s", (gulong)seconds),
        (unsigned long long)seconds);
}

gchar *
einsora_format_date(GDateTime *time)
{
    g_autoptr(GDateTime) local = g_date_time_to_local(time);

    /* TRANSLATORS: a day, strftime format */
    return g_date_time_format(local, _("%-d %b %Y"));
}

gchar *
einsora_format_event_time(GDateTime *time, GDateTime *now)
{
    g_autoptr(GDateTime) local = g_date_time_to_local(time);
    g_autoptr(GDateTime) local_now = g_date_time_to_local(now);

    if (g_date_time_get_year(local) == g_date_time_get_year(local_now) &&
        g_date_time_get_day_of_year(local) == g_date_time_get_day_of_year(local_now))
        return g_date_time_format(local, "%H:%M:%S");
    if (g_date_time_get_year(local) == g_date_time_get_year(local_now))
        /* TRANSLATORS: an event's date this year, strftime format */
        return g_date_time_format(local, _("%-d %b %H:%M:%S"));
    /* TRANSLATORS: an event's date in another year, strftime format */
    return g_date_time_format(local, _("%-d %b %Y %H:%M:%S"));
}

gchar *
einsora_format_transition(const char *from_state, const char *to_state)
{
    if (from_state == NULL)
        return g_strdup_printf(_("created: %s"), einsora_format_state_label(to_state));
    if (g_strcmp0(from_state, to_state) == 0)
        return g_strdup(_("note"));
    return g_strdup_printf("%s → %s", einsora_format_state_label(from_state),
                           einsora_format_state_label(to_state));
}

gchar *
einsora_format_reason(const char *reason, guint max_chars)
{
    g_autoptr(GString) line = g_string_new(NULL);
    const char *p;
    guint chars = 0;

    if (reason == NULL)
        return g_strdup("");
    for (p = reason; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char_validated(p, -1);

        if (c == (gunichar)-1 || c == (gunichar)-2)
            break; /* not UTF-8 from here on: show what came before */
        if (chars == max_chars) {
            g_string_append(line, "…");
            break;
        }
        if (g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT)
            g_string_append_c(line, ' ');
        else
            g_string_append_unichar(line, c);
        chars++;
    }
    return g_string_free(g_steal_pointer(&line), FALSE);
}

gchar *
einsora_format_capacity(gint64 cpus, gint64 memory_mib)
{
    g_autofree gchar *memory =
        g_format_size_full((guint64)MAX(memory_mib, 0) * 1024 * 1024, G_FORMAT_SIZE_IEC_UNITS);
    g_autofree gchar *cpu_text =
        g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%d CPU", "%d CPUs", (gulong)cpus), (int)cpus);

    return g_strdup_printf("%s · %s", cpu_text, memory);
}

gchar *
einsora_format_usage(gint64 seconds)
{
    double hours = seconds / 3600.0;

    if (seconds <= 0)
        return g_strdup(_("none"));
    if (seconds < 60)
        return g_strdup(_("under a minute"));
    if (seconds < 3600)
        return g_strdup_printf(
            g_dngettext(GETTEXT_PACKAGE, "%d min", "%d min", (gulong)(seconds / 60)),
            (int)(seconds / 60));
    if (hours < 99.995)
        /* Translators: hours of use, to two decimals as `einsora usage`
         * prints them: "2.75 hours". A decimal, never a whole count, so
         * no plural forms: use the form your language takes for
         * fractions. */
        return g_strdup_printf(_("%.2f hours"), hours);
    return g_strdup_printf(
        /* Translators: hours of use, whole, with the locale's grouping */
        g_dngettext(GETTEXT_PACKAGE, "%'.0f hour", "%'.0f hours", (gulong)(hours + 0.5)), hours);
}
