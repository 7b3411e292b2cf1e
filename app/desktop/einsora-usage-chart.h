/* Hours of use per day as stacked bars, one colour per class, drawn with
 * GTK's snapshot API (no chart library): an axis of time on the left,
 * the days under their bars, a legend of the classes below. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_USAGE_CHART (einsora_usage_chart_get_type())
G_DECLARE_FINAL_TYPE(EinsoraUsageChart, einsora_usage_chart, EINSORA, USAGE_CHART, GtkWidget)

GtkWidget *einsora_usage_chart_new(void);
/* Forgets what it showed. */
void einsora_usage_chart_clear(EinsoraUsageChart *self);
/* Adds @hours of @gpu_class on @day ("2026-12-03"); days are shown in
 * their order, classes in the order first seen. */
/* Shows @day ("2026-12-03") in its place even if nothing ran that day. */
void einsora_usage_chart_add_day(EinsoraUsageChart *self, const char *day);
void einsora_usage_chart_add(EinsoraUsageChart *self, const char *day, const char *gpu_class,
                             double hours);
guint einsora_usage_chart_get_n_days(EinsoraUsageChart *self);
/* The total of @day, of every class (0 for a day it hasn't). */
double einsora_usage_chart_get_day_total(EinsoraUsageChart *self, const char *day);
/* The y axis's labels, bottom up, for what it holds now: round steps in
 * hours, or in minutes or seconds when the busiest day is shorter. */
GStrv einsora_usage_chart_dup_axis_labels(EinsoraUsageChart *self);
/* The axis's width in pixels: its widest label's and a margin. */
double einsora_usage_chart_get_axis_width(EinsoraUsageChart *self);

G_END_DECLS
