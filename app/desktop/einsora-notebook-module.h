/* The notebook window, and WebKitGTK with it, loaded when the first one
 * opens rather than at start: the window is in libeinsora-notebook, which
 * the app opens with GModule and never links
 * (docs/adr/0031-webkit-on-demand.md). */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Opens the library (once; later calls answer at once): from
 * $EINSORA_APP_MODULE_DIR, else beside the program (the build tree), else
 * where it was installed. */
gboolean einsora_notebook_module_load(GError **error);
gboolean einsora_notebook_module_is_loaded(void);
/* einsora_notebook_window_new(), loading the library first. */
GtkWindow *einsora_notebook_module_new_window(GtkApplication *application, const char *workload_id,
                                              const char *title, const char *url, GError **error);
/* The workload a notebook window shows; NULL for any other window (and
 * for every window while the library isn't loaded: there are none). */
const char *einsora_notebook_module_get_workload_id(GtkWindow *window);
/* einsora_notebook_window_toast() on a notebook window; nothing on any
 * other window. */
void einsora_notebook_module_toast(GtkWindow *window, const char *text);

G_END_DECLS
