/* How the desktop app shows the API's values to a person: state labels
 * and badge styles, ages and event times, sizes, transitions, reasons.
 * Pure GLib, so tests need no display. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Which workloads the list shows. */
typedef enum {
    EINSORA_STATE_FILTER_ALL,
    EINSORA_STATE_FILTER_RUNNING,
    EINSORA_STATE_FILTER_WAITING, /* pending, queued, provisioning */
    EINSORA_STATE_FILTER_STOPPED, /* stopping, stopped */
    EINSORA_STATE_FILTER_FAILED,
} EinsoraStateFilter;

/* "Running", "Queued"...; an unknown state is shown as it came. */
const char *einsora_format_state_label(const char *state);
/* "Notebook", "Endpoint", "Virtual Machine"; an unknown kind is shown
 * as it came. */
const char *einsora_format_kind(const char *kind);
/* The CSS class of the state's badge: "success", "warning", "error",
 * "accent" or "dim-label". */
const char *einsora_format_state_style(const char *state);
gboolean einsora_format_state_matches(const char *state, EinsoraStateFilter filter);
/* From a GSettings string ("all", "running"...); unknown is ALL. */
EinsoraStateFilter einsora_format_state_filter_from_string(const char *name);
const char *einsora_format_state_filter_to_string(EinsoraStateFilter filter);

/* A time from the API (RFC 3339, UTC), or NULL if it isn't one. */
GDateTime *einsora_format_parse_time(const char *text);
/* How long ago: "just now", "5 min", "3 h", "2 days". */
gchar *einsora_format_age(GDateTime *then, GDateTime *now);
/* How long ago, to the second, for what happens every few seconds (an
 * agent's sync): "just now", "12 s ago", "3 min ago", "2 h ago",
 * "4 days ago". A time a little ahead of @now is "just now". */
gchar *einsora_format_ago(GDateTime *then, GDateTime *now);
/* "clock off by 42 s": the magnitude of @offset_ms in whole seconds,
 * rounded, as `einsora machines` prints it. */
gchar *einsora_format_clock_offset(gint64 offset_ms);
/* A day in local time: "28 Nov 2026". */
gchar *einsora_format_date(GDateTime *time);
/* An event's time in local time: "14:03:12" today, "28 Nov 14:03:12"
 * this year, "28 Nov 2025 14:03:12" before. */
gchar *einsora_format_event_time(GDateTime *time, GDateTime *now);
/* "queued → running", "created: pending" (no from state), "note" when
 * the state didn't change. */
gchar *einsora_format_transition(const char *from_state, const char *to_state);
/* One line, control characters replaced, at most @max_chars characters
 * with an ellipsis. The daemon cleans reasons; this keeps a bad one
 * from breaking a row. */
gchar *einsora_format_reason(const char *reason, guint max_chars);
/* "4 CPUs · 16 GiB"; memory in MiB as the API gives it. */
gchar *einsora_format_capacity(gint64 cpus, gint64 memory_mib);
/* Metered time: "none", "under a minute", "45 min", "2.75 hours" (to
 * two decimals, as the CLI's table, up to 100 hours), "1,250 hours". */
gchar *einsora_format_usage(gint64 seconds);

G_END_DECLS
