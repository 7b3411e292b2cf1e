/* The main window's Usage view: the caller's tenant's hours of the last
 * days (GET /v1/usage by day, stacked by class in an EinsoraUsageChart),
 * the total, and the workloads that used them (by workload). Usage,
 * never money (docs/adr/0042). The application reads the reports; the
 * view only shows them. */
#pragma once

#include <adwaita.h>
#include <json-glib/json-glib.h>

#include "einsora-usage-chart.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_USAGE_VIEW (einsora_usage_view_get_type())
G_DECLARE_FINAL_TYPE(EinsoraUsageView, einsora_usage_view, EINSORA, USAGE_VIEW, GtkWidget)

/* How many days the view shows, today's included. */
#define EINSORA_USAGE_VIEW_DAYS 7

GtkWidget *einsora_usage_view_new(void);
/* @report: GET /v1/usage?group_by=day over the days from @first_day
 * (UTC midnight) on, EINSORA_USAGE_VIEW_DAYS of them; days without use
 * are shown empty. */
void einsora_usage_view_set_days(EinsoraUsageView *self, JsonObject *report, GDateTime *first_day);
/* @report: GET /v1/usage?group_by=workload over the same days. */
void einsora_usage_view_set_workloads(EinsoraUsageView *self, JsonObject *report);
/* The report couldn't be read: says so in place of the figures. */
void einsora_usage_view_set_error(EinsoraUsageView *self, const char *message);

EinsoraUsageChart *einsora_usage_view_get_chart(EinsoraUsageView *self);
/* "12.5 hours · 2.0 GPU hours", as shown. */
const char *einsora_usage_view_get_summary(EinsoraUsageView *self);
guint einsora_usage_view_get_n_workloads(EinsoraUsageView *self);

G_END_DECLS
