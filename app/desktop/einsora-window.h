/* The main window: while connecting, what it is doing; if the daemon
 * can't be reached, why, with a way to try again; then the workloads
 * (a live list, filtered by state) and the machines. */
#pragma once

#include <adwaita.h>
#include <json-glib/json-glib.h>

#include "einsora-machines-view.h"
#include "einsora-usage-view.h"
#include "einsora-workload-item.h"
#include "einsora-workload-page.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_WINDOW (einsora_window_get_type())
G_DECLARE_FINAL_TYPE(EinsoraWindow, einsora_window, EINSORA, WINDOW, AdwApplicationWindow)

/* @workloads: the application's list (EinsoraWorkloadItem). */
EinsoraWindow *einsora_window_new(GtkApplication *application, GListModel *workloads,
                                  GSettings *settings);
void einsora_window_show_connecting(EinsoraWindow *self, const char *what);
void einsora_window_show_error(EinsoraWindow *self, const char *message);
/* The error page for a server whose certificate isn't trusted: with
 * @offer_trust, its Trust This Certificate button (app.trust-certificate). */
void einsora_window_show_untrusted(EinsoraWindow *self, const char *message, gboolean offer_trust);
void einsora_window_show_ready(EinsoraWindow *self);
/* @machines: the API's machine objects. */
void einsora_window_set_machines(EinsoraWindow *self, JsonArray *machines);
/* They couldn't be read: said on the Machines page. */
void einsora_window_set_machines_error(EinsoraWindow *self, const char *message);
void einsora_window_toast(EinsoraWindow *self, const char *text);
/* Shows @item's page (its timeline starts empty: the app fills it). */
EinsoraWorkloadPage *einsora_window_show_workload(EinsoraWindow *self, EinsoraWorkloadItem *item);
/* The workload page, whether shown or not. */
EinsoraWorkloadPage *einsora_window_get_workload_page(EinsoraWindow *self);
void einsora_window_show_list(EinsoraWindow *self);
/* The Usage view: while it is shown, the window asks for its reports
 * ("app.load-usage") when it opens and every minute after. */
EinsoraUsageView *einsora_window_get_usage_view(EinsoraWindow *self);
void einsora_window_show_usage(EinsoraWindow *self);
/* The Machines page: while it is shown, the window asks for the list
 * ("app.load-machines") when it opens and every 10 s after. */
EinsoraMachinesView *einsora_window_get_machines_view(EinsoraWindow *self);
void einsora_window_show_machines(EinsoraWindow *self);
/* Says which daemon the app uses: @server, its address; @local, whether
 * it is this machine's. */
void einsora_window_set_server(EinsoraWindow *self, const char *server, gboolean local);

G_END_DECLS
