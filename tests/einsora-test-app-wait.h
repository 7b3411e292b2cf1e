/* What the desktop app's tests do with the main loop turning: wait for a
 * condition, let it settle, and save a screenshot of a widget once it is
 * drawn. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef gboolean (*EinsoraTestCondition)(gpointer data);

/* Turns the main loop until @condition holds, or @seconds pass (FALSE). */
gboolean einsora_test_wait_for(EinsoraTestCondition condition, gpointer data, guint seconds);
/* Turns the main loop for @ms milliseconds: what is queued (a redraw, an
 * idle) runs. */
void einsora_test_settle(guint ms);
/* @widget as drawn, once mapped, to @dir/@name (a PNG; @dir made if
 * missing, nothing saved when it is NULL); the path goes to the test's
 * log. */
void einsora_test_save_screenshot(GtkWidget *widget, const char *dir, const char *name);

G_END_DECLS
