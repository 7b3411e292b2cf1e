/* The desktop app's tests against the real daemon over TLS: the daemon
 * started with its own certificate, pinned for the app, the app's files
 * in the test's directory, notifications off; and the waits and looks
 * such a test makes, with the main loop turning. */
#pragma once

#include <gtk/gtk.h>

#include "einsora-application.h"
#include "einsora-test-app-wait.h"
#include "einsora-test-daemon.h"
#include "einsora-window.h"

G_BEGIN_DECLS

/* Starts a daemon (EINSORA_TLS=on, the sim driver, and @extra_env's
 * NULL-ended name/value pairs), points the app at it and pins its
 * certificate; *@fingerprint: the pinned one. Call after g_test_init(),
 * with @dir the test's directory. Calls adw_init(). */
EinsoraTestDaemon *einsora_test_app_daemon_start(const char *dir, const char *const *extra_env,
                                                 gchar **fingerprint);

/* Conditions: @app (an EinsoraApplication) is ready; *(gchar **)@pointer is set. */
gboolean einsora_test_app_ready(gpointer app);
gboolean einsora_test_string_set(gpointer pointer);
/* The app's main window, or NULL. */
EinsoraWindow *einsora_test_main_window(EinsoraApplication *app);
/* A label under @widget whose text has @needle: a toast shows as one. */
gboolean einsora_test_shows_text(GtkWidget *widget, const char *needle);

G_END_DECLS
