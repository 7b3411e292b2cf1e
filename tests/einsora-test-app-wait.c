#include "einsora-test-app-wait.h"

gboolean
einsora_test_wait_for(EinsoraTestCondition condition, gpointer data, guint seconds)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)seconds * G_TIME_SPAN_SECOND;

    while (!condition(data)) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return TRUE;
}

void
einsora_test_settle(guint ms)
{
    gint64 until = g_get_monotonic_time() + ms * 1000;

    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(2000);
    }
}

static gboolean
widget_drawn(gpointer widget)
{
    return gtk_widget_get_mapped(widget) && gtk_widget_get_width(widget) > 0;
}

void
einsora_test_save_screenshot(GtkWidget *widget, const char *dir, const char *name)
{
    g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new(widget);
    GtkSnapshot *snapshot;
    g_autoptr(GskRenderNode) node = NULL;
    g_autoptr(GdkTexture) texture = NULL;
    g_autofree gchar *path = NULL;
    GskRenderer *renderer;
    int width, height;

    if (dir == NULL)
        return;
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    path = g_build_filename(dir, name, NULL);
    g_assert_true(einsora_test_wait_for(widget_drawn, widget, 10));
    einsora_test_settle(300);
    renderer = gtk_native_get_renderer(gtk_widget_get_native(widget));
    width = gtk_widget_get_width(widget);
    height = gtk_widget_get_height(widget);
    snapshot = gtk_snapshot_new();
    gdk_paintable_snapshot(paintable, snapshot, width, height);
    node = gtk_snapshot_free_to_node(snapshot);
    /* A screenshot is a record, not a check: a window GTK drew nothing of
     * this once (mid-frame) gets none. */
    if (node == NULL) {
        g_test_message("screenshot %s: nothing drawn, none saved", name);
        return;
    }
    texture = gsk_renderer_render_texture(renderer, node,
                                          &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
    g_assert_true(gdk_texture_save_to_png(texture, path));
    g_test_message("screenshot: %s", path);
}
