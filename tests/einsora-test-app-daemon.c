#include "einsora-test-app-daemon.h"

#include <adwaita.h>
#include <string.h>

#include "einsora-application.h"
#include "einsora-pinned-database.h"
#include "einsora-server-pins.h"

EinsoraTestDaemon *
einsora_test_app_daemon_start(const char *dir, const char *const *extra_env, gchar **fingerprint)
{
    g_autoptr(GError) error = NULL;
    EinsoraTestDaemon *daemon;

    {
        g_autofree gchar *config = g_build_filename(dir, "config", NULL);
        g_autofree gchar *state = g_build_filename(dir, "state", NULL);

        /* The pins and the app's own files in the test's directory. */
        g_setenv("XDG_CONFIG_HOME", config, TRUE);
        g_setenv("XDG_STATE_HOME", state, TRUE);
    }
    g_setenv("EINSORA_NO_SYSTEMD", "1", TRUE);
    daemon = einsora_test_daemon_new();
    einsora_test_daemon_setenv(daemon, "EINSORA_TLS", "on");
    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    for (guint i = 0; extra_env != NULL && extra_env[i] != NULL; i += 2)
        einsora_test_daemon_setenv(daemon, extra_env[i], extra_env[i + 1]);
    einsora_test_daemon_start(daemon);
    /* The app's local daemon is this one: its address and token file. */
    g_setenv("EINSORA_SERVER", daemon->uri, TRUE);
    g_setenv("EINSORA_DATA_DIR", daemon->data_dir, TRUE);
    {
        g_autofree gchar *cert = g_build_filename(daemon->data_dir, "tls", "server.pem", NULL);
        g_autoptr(GTlsCertificate) certificate = g_tls_certificate_new_from_file(cert, &error);
        g_autoptr(EinsoraServerPins) pins = NULL;

        g_assert_no_error(error);
        *fingerprint = einsora_certificate_fingerprint(certificate);
        pins = einsora_server_pins_load(NULL, &error);
        g_assert_no_error(error);
        g_assert_true(einsora_server_pins_save(pins, daemon->uri, *fingerprint, &error));
        g_assert_no_error(error);
    }
    adw_init();
    {
        g_autoptr(GSettings) settings = g_settings_new(EINSORA_APPLICATION_ID);

        /* No notification server on the test's bus. */
        g_settings_set_boolean(settings, "notify", FALSE);
    }
    return daemon;
}

gboolean
einsora_test_app_ready(gpointer app)
{
    return einsora_application_is_ready(app);
}

gboolean
einsora_test_string_set(gpointer pointer)
{
    return *(gchar **)pointer != NULL;
}

EinsoraWindow *
einsora_test_main_window(EinsoraApplication *app)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(app)); l != NULL; l = l->next)
        if (EINSORA_IS_WINDOW(l->data))
            return l->data;
    return NULL;
}

gboolean
einsora_test_shows_text(GtkWidget *widget, const char *needle)
{
    if (GTK_IS_LABEL(widget) && strstr(gtk_label_get_text(GTK_LABEL(widget)), needle) != NULL)
        return TRUE;
    for (GtkWidget *child = gtk_widget_get_first_child(widget); child != NULL;
         child = gtk_widget_get_next_sibling(child))
        if (einsora_test_shows_text(child, needle))
            return TRUE;
    return FALSE;
}
