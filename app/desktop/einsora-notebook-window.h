/* A notebook in its own window: the access proxy's one-time link opened in
 * a WebKit view that has its own web context and its own ephemeral network
 * session, so one workload's cookie never reaches another window. Only the
 * workload's own origin loads in the view; off-site links go to the
 * default browser (docs/adr/0019-notebook-window.md). */
#pragma once

#include <adwaita.h>
#include <webkit/webkit.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_NOTEBOOK_WINDOW (einsora_notebook_window_get_type())
G_DECLARE_FINAL_TYPE(EinsoraNotebookWindow, einsora_notebook_window, EINSORA, NOTEBOOK_WINDOW,
                     AdwApplicationWindow)

/* @application: (nullable); @title: the workload's name; @url: the link
 * POST /v1/workloads/{id}/access answered,
 * http://w-<workload_id>.localhost:<port>/_einsora/open?ticket=... (a link
 * for another host is refused and the window says so).
 *
 * Signals the application handles:
 * - "open-in-browser" (void): the user asked for the notebook in the
 *   default browser. The link is one-time, so the application asks for a
 *   fresh one and launches it.
 * - "open-external" (gboolean, const char *uri): an off-site link the user
 *   followed; the default handler launches the default browser. A handler
 *   that returns TRUE stops it.
 * Windows the page opens itself (a link with target=_blank, window.open)
 * are EinsoraNotebookWindows of the same workload, sharing this window's
 * network session and application: GtkApplication::window-added sees them. */
EinsoraNotebookWindow *einsora_notebook_window_new(GtkApplication *application,
                                                   const char *workload_id, const char *title,
                                                   const char *url);
const char *einsora_notebook_window_get_workload_id(EinsoraNotebookWindow *self);
WebKitWebView *einsora_notebook_window_get_web_view(EinsoraNotebookWindow *self);
/* Where downloads go; NULL (the default) is the user's Downloads folder,
 * or the home folder when there is none. */
const char *einsora_notebook_window_get_download_dir(EinsoraNotebookWindow *self);
void einsora_notebook_window_set_download_dir(EinsoraNotebookWindow *self, const char *dir);
void einsora_notebook_window_toast(EinsoraNotebookWindow *self, const char *text);

G_END_DECLS
