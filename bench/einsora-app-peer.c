/* The peer of bench/app-bench.sh: the least a libadwaita app with a
 * comparable window does. A header bar and a list of as many rows as
 * Einsora shows (two labels each), from memory, with no daemon, no
 * client and no WebKit. It prints the same timing lines as einsora-app
 * with EINSORA_APP_TIMING set.
 *
 * Usage: einsora-app-peer N_ROWS */
#include <adwaita.h>

static guint n_rows;
static gboolean told;

static void
on_after_paint(GdkFrameClock *clock, gpointer user_data)
{
    if (told)
        return;
    told = TRUE;
    /* Everything is in the first frame: it is also the list's. */
    g_print("einsora-app timing: first-frame %" G_GINT64_FORMAT "\n", g_get_real_time());
    g_print("einsora-app timing: list-frame %" G_GINT64_FORMAT " workloads %u\n", g_get_real_time(),
            n_rows);
}

static void
on_setup(GtkSignalListItemFactory *factory, GtkListItem *item, gpointer user_data)
{
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);

    gtk_box_append(GTK_BOX(box), gtk_label_new(NULL));
    gtk_box_append(GTK_BOX(box), gtk_label_new(NULL));
    gtk_list_item_set_child(item, box);
}

static void
on_bind(GtkSignalListItemFactory *factory, GtkListItem *item, gpointer user_data)
{
    GtkWidget *box = gtk_list_item_get_child(item);
    const char *text = gtk_string_object_get_string(gtk_list_item_get_item(item));

    gtk_label_set_text(GTK_LABEL(gtk_widget_get_first_child(box)), text);
    gtk_label_set_text(GTK_LABEL(gtk_widget_get_last_child(box)), "notebook · cpu-1c-2g");
}

static void
on_realize(GtkWidget *window, gpointer user_data)
{
    g_signal_connect(gtk_widget_get_frame_clock(window), "after-paint", G_CALLBACK(on_after_paint),
                     NULL);
}

static void
on_activate(GApplication *app, gpointer user_data)
{
    GtkWidget *window = adw_application_window_new(GTK_APPLICATION(app));
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
    GtkWidget *scrolled = gtk_scrolled_window_new();
    GtkStringList *names = gtk_string_list_new(NULL);
    GtkListItemFactory *factory = gtk_signal_list_item_factory_new();
    GtkWidget *view;

    for (guint i = 0; i < n_rows; i++) {
        g_autofree gchar *name = g_strdup_printf("notebook-%u", i);
        gtk_string_list_append(names, name);
    }
    g_signal_connect(factory, "setup", G_CALLBACK(on_setup), NULL);
    g_signal_connect(factory, "bind", G_CALLBACK(on_bind), NULL);
    view =
        gtk_list_view_new(GTK_SELECTION_MODEL(gtk_no_selection_new(G_LIST_MODEL(names))), factory);
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scrolled), view);
    gtk_widget_set_vexpand(scrolled, TRUE);
    gtk_box_append(GTK_BOX(box), adw_header_bar_new());
    gtk_box_append(GTK_BOX(box), scrolled);
    adw_application_window_set_content(ADW_APPLICATION_WINDOW(window), box);
    gtk_window_set_default_size(GTK_WINDOW(window), 960, 640);
    g_signal_connect(window, "realize", G_CALLBACK(on_realize), NULL);
    gtk_window_present(GTK_WINDOW(window));
}

int
main(int argc, char **argv)
{
    g_autoptr(AdwApplication) app = NULL;

    n_rows = argc > 1 ? (guint)g_ascii_strtoull(argv[1], NULL, 10) : 100;
    app = adw_application_new("dev.einsora.EinsoraBenchPeer", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
    return g_application_run(G_APPLICATION(app), 1, argv);
}
