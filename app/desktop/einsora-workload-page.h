/* A workload's page: its properties and its whole timeline (every event
 * with its time, state change and reason), both following the daemon as
 * it changes; and what can be done with it now: open, stop, start,
 * delete (after a confirmation), export; for an endpoint, its base URL
 * (with Copy) and Chat instead of Open; and its Logs, followed while the
 * page is open. The actions are the app's
 * (app.open-workload and so on), so the page holds no client. */
#pragma once

#include <adwaita.h>
#include <json-glib/json-glib.h>

#include "einsora-workload-item.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_WORKLOAD_PAGE (einsora_workload_page_get_type())
G_DECLARE_FINAL_TYPE(EinsoraWorkloadPage, einsora_workload_page, EINSORA, WORKLOAD_PAGE, GtkWidget)

GtkWidget *einsora_workload_page_new(void);
/* @item: (nullable): the workload shown; its timeline starts empty. */
void einsora_workload_page_set_item(EinsoraWorkloadPage *self, EinsoraWorkloadItem *item);
EinsoraWorkloadItem *einsora_workload_page_get_item(EinsoraWorkloadPage *self);
/* Adds events (the API's objects) in their order; one already shown
 * (same "id") is skipped, so a listing and the feed may overlap. */
void einsora_workload_page_add_events(EinsoraWorkloadPage *self, JsonArray *events);
void einsora_workload_page_add_event(EinsoraWorkloadPage *self, JsonObject *event);
guint einsora_workload_page_get_n_events(EinsoraWorkloadPage *self);
/* The base URL the access grant gave for the running endpoint
 * @workload_id (the app's answer to app.endpoint-base-url); ignored when
 * the page shows another workload or it no longer runs. */
void einsora_workload_page_set_base_url(EinsoraWorkloadPage *self, const char *workload_id,
                                        const char *base_url);
/* (nullable) */
const char *einsora_workload_page_get_base_url(EinsoraWorkloadPage *self);
/* Output of @workload_id as the app follows it (app.follow-logs, which
 * the page asks for while it is open); ignored for another workload.
 * Whole lines are shown, the last 2,000 kept. */
void einsora_workload_page_append_log(EinsoraWorkloadPage *self, const char *workload_id,
                                      const char *text, gsize length);
/* What the Logs view shows (for tests). */
gchar *einsora_workload_page_get_log_text(EinsoraWorkloadPage *self);

G_END_DECLS
