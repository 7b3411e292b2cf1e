/* "Start at login" and "Show in the tray" (docs/adr/0066), the real app
 * under Xvfb: EinsoraApplication runs in this process with
 * g_application_run, on a private session bus this test starts
 * (GTestDBus, with nothing to activate), where the test is the
 * StatusNotifierWatcher and, in some tests, the XDG Background portal.
 * Each test runs in a process of its own (one bus, one application).
 * No daemon answers: the app shows that, and these tests don't mind.
 * The preferences window's screenshot goes to EINSORA_ARTIFACTS_DIR
 * (else the build's tests/artifacts). */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <string.h>

#include "einsora-application.h"
#include "einsora-preferences-window.h"
#include "einsora-test-app-wait.h"
#include "einsora-test-dir.h"
#include "einsora-window.h"

#define APP_ID "dev.einsora.Einsora"
#define WATCHER_NAME "org.kde.StatusNotifierWatcher"
#define WATCHER_PATH "/StatusNotifierWatcher"
#define PORTAL_NAME "org.freedesktop.portal.Desktop"
#define PORTAL_PATH "/org/freedesktop/portal/desktop"

static const char watcher_xml[] =
    "<node><interface name='org.kde.StatusNotifierWatcher'>"
    "<method name='RegisterStatusNotifierItem'><arg type='s' direction='in'/></method>"
    "<method name='RegisterStatusNotifierHost'><arg type='s' direction='in'/></method>"
    "<property name='RegisteredStatusNotifierItems' type='as' access='read'/>"
    "<property name='IsStatusNotifierHostRegistered' type='b' access='read'/>"
    "<property name='ProtocolVersion' type='i' access='read'/>"
    "<signal name='StatusNotifierItemRegistered'><arg type='s'/></signal>"
    "<signal name='StatusNotifierItemUnregistered'><arg type='s'/></signal>"
    "<signal name='StatusNotifierHostRegistered'/>"
    "<signal name='StatusNotifierHostUnregistered'/>"
    "</interface></node>";

static const char portal_xml[] =
    "<node><interface name='org.freedesktop.portal.Background'>"
    "<method name='RequestBackground'><arg type='s' direction='in'/>"
    "<arg type='a{sv}' direction='in'/><arg type='o' direction='out'/></method>"
    "</interface></node>";

typedef struct {
    gchar *dir;
    gchar *artifacts;
    GTestDBus *dbus;
    GDBusConnection *fake_bus; /* the watcher's and the portal's */
    GDBusNodeInfo *watcher_info;
    GDBusNodeInfo *portal_info;
    /* The watcher: the item's name, while it has an owner. */
    gchar *item;
    guint item_watch;
    guint registrations;
    guint items_gone;
    /* The portal: what it answers, and what it was asked. */
    gboolean portal;
    guint32 portal_response;
    GVariant *portal_options; /* the last RequestBackground's */
    guint portal_calls;
    GSettings *settings;
    EinsoraApplication *app;
    gboolean running; /* inside g_application_run */
    gboolean checked; /* a check ran while the app still ran */
    gboolean timed_out;
} Fixture;

static Fixture f;

/* ---- the StatusNotifierWatcher --------------------------------------- */

static void
on_item_vanished(GDBusConnection *bus, const char *name, gpointer user_data)
{
    /* As real watchers do: an item whose name has no owner is gone. */
    g_test_message("tray item %s gone", name);
    f.items_gone++;
    g_clear_pointer(&f.item, g_free);
    if (f.item_watch != 0)
        g_bus_unwatch_name(f.item_watch);
    f.item_watch = 0;
}

static void
on_watcher_call(GDBusConnection *connection, const char *sender, const char *path,
                const char *interface, const char *method, GVariant *parameters,
                GDBusMethodInvocation *invocation, gpointer user_data)
{
    const char *service = NULL;

    g_variant_get(parameters, "(&s)", &service);
    if (g_str_equal(method, "RegisterStatusNotifierItem")) {
        f.registrations++;
        g_free(f.item);
        f.item = g_strdup(service);
        if (f.item_watch != 0)
            g_bus_unwatch_name(f.item_watch);
        f.item_watch = g_bus_watch_name_on_connection(
            connection, service, G_BUS_NAME_WATCHER_FLAGS_NONE, NULL, on_item_vanished, NULL, NULL);
    }
    g_dbus_method_invocation_return_value(invocation, NULL);
}

static GVariant *
on_watcher_get(GDBusConnection *connection, const char *sender, const char *path,
               const char *interface, const char *property, GError **error, gpointer user_data)
{
    if (g_str_equal(property, "IsStatusNotifierHostRegistered"))
        return g_variant_new_boolean(TRUE);
    if (g_str_equal(property, "ProtocolVersion"))
        return g_variant_new_int32(0);
    return g_variant_new_strv(NULL, 0);
}

/* ---- the Background portal ------------------------------------------- */

typedef struct {
    gchar *handle;
    guint32 response;
} Answer;

static gboolean
send_response(gpointer data)
{
    Answer *answer = data;
    GVariantBuilder results;

    g_variant_builder_init(&results, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add(&results, "{sv}", "background",
                          g_variant_new_boolean(answer->response == 0));
    g_variant_builder_add(&results, "{sv}", "autostart",
                          g_variant_new_boolean(answer->response == 0));
    g_dbus_connection_emit_signal(f.fake_bus, NULL, answer->handle,
                                  "org.freedesktop.portal.Request", "Response",
                                  g_variant_new("(ua{sv})", answer->response, &results), NULL);
    g_free(answer->handle);
    g_free(answer);
    return G_SOURCE_REMOVE;
}

static void
on_portal_call(GDBusConnection *connection, const char *sender, const char *path,
               const char *interface, const char *method, GVariant *parameters,
               GDBusMethodInvocation *invocation, gpointer user_data)
{
    const char *token = NULL;
    g_autofree gchar *caller = g_strdup(sender + 1);
    Answer *answer = g_new0(Answer, 1);

    f.portal_calls++;
    g_clear_pointer(&f.portal_options, g_variant_unref);
    g_variant_get(parameters, "(&s@a{sv})", NULL, &f.portal_options);
    g_assert_true(g_variant_lookup(f.portal_options, "handle_token", "&s", &token));
    /* The Request's path as the portal documentation predicts it. */
    g_strdelimit(caller, ".", '_');
    answer->handle = g_strdup_printf(PORTAL_PATH "/request/%s/%s", caller, token);
    answer->response = f.portal_response;
    g_dbus_method_invocation_return_value(invocation, g_variant_new("(o)", answer->handle));
    /* After the reply, as a portal that asked the user does. */
    g_timeout_add(50, send_response, answer);
}

static void
own(const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) reply = g_dbus_connection_call_sync(
        f.fake_bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
        "RequestName", g_variant_new("(su)", name, 4), G_VARIANT_TYPE("(u)"),
        G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
    guint32 answer = 0;

    g_assert_no_error(error);
    g_variant_get(reply, "(u)", &answer);
    g_assert_cmpuint(answer, ==, 1); /* the primary owner */
}

/* ---- each test's process --------------------------------------------- */

static void
set_up(gboolean portal, guint32 portal_response)
{
    static const GDBusInterfaceVTable watcher_vtable = {on_watcher_call, on_watcher_get, NULL, {0}};
    static const GDBusInterfaceVTable portal_vtable = {on_portal_call, NULL, NULL, {0}};
    const char *artifacts = g_getenv("EINSORA_ARTIFACTS_DIR");
    g_autoptr(GError) error = NULL;
    g_autofree gchar *data = NULL;
    g_autofree gchar *display = NULL;

    f.dir = einsora_test_dir_new();
    f.artifacts = artifacts != NULL ? g_strdup(artifacts)
                                    : g_build_filename(g_get_current_dir(), "artifacts", NULL);
    g_mkdir_with_parents(f.artifacts, 0755);
    /* Before anything reads them (GLib keeps the first answer). */
    for (guint i = 0; i < 4; i++) {
        static const char *const names[] = {"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                                            "XDG_CACHE_HOME"};
        g_autofree gchar *path = g_build_filename(f.dir, names[i], NULL);

        g_mkdir_with_parents(path, 0700);
        g_setenv(names[i], path, TRUE);
    }
    data = g_build_filename(f.dir, "data", NULL);
    g_setenv("EINSORA_DATA_DIR", data, TRUE);
    /* Nothing answers, and the app starts no daemon. */
    g_setenv("EINSORA_NO_SYSTEMD", "1", TRUE);
    g_setenv("EINSORA_DAEMON", "/nonexistent/einsora-daemon", TRUE);
    g_setenv("EINSORA_TOKEN_STORE", "file", TRUE);
    /* The portal as in a sandbox, so that its absence is seen too. */
    g_setenv("EINSORA_AUTOSTART", "portal", TRUE);

    f.dbus = g_test_dbus_new(G_TEST_DBUS_NONE);
    /* It unsets DISPLAY (no X11 autolaunch of a bus): Xvfb's, again. */
    display = g_strdup(g_getenv("DISPLAY"));
    g_test_dbus_up(f.dbus);
    g_setenv("DISPLAY", display, TRUE);
    f.fake_bus =
        g_dbus_connection_new_for_address_sync(g_test_dbus_get_bus_address(f.dbus),
                                               G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                   G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                               NULL, NULL, &error);
    g_assert_no_error(error);
    f.watcher_info = g_dbus_node_info_new_for_xml(watcher_xml, &error);
    g_assert_no_error(error);
    g_dbus_connection_register_object(f.fake_bus, WATCHER_PATH, f.watcher_info->interfaces[0],
                                      &watcher_vtable, NULL, NULL, &error);
    g_assert_no_error(error);
    own(WATCHER_NAME);
    f.portal = portal;
    f.portal_response = portal_response;
    if (portal) {
        f.portal_info = g_dbus_node_info_new_for_xml(portal_xml, &error);
        g_assert_no_error(error);
        g_dbus_connection_register_object(f.fake_bus, PORTAL_PATH, f.portal_info->interfaces[0],
                                          &portal_vtable, NULL, NULL, &error);
        g_assert_no_error(error);
        own(PORTAL_NAME);
    }
    adw_init();
    f.settings = g_settings_new(APP_ID);
    f.app = einsora_application_new();
}

static gboolean
on_guard(gpointer data)
{
    f.timed_out = TRUE;
    g_application_quit(G_APPLICATION(f.app));
    return G_SOURCE_REMOVE;
}

/* Runs the app as main() does, with @driver in its loop; TRUE when it
 * ended by itself, FALSE when the guard (30 s) ended it. */
static gboolean
run_app(GSourceFunc driver, const char *option)
{
    const char *argv[] = {"einsora-app", option, NULL};
    guint guard = g_timeout_add_seconds(30, on_guard, NULL);

    g_idle_add(driver, NULL);
    f.running = TRUE;
    g_assert_cmpint(g_application_run(G_APPLICATION(f.app), option != NULL ? 2 : 1, (char **)argv),
                    ==, 0);
    f.running = FALSE;
    if (!f.timed_out)
        g_source_remove(guard);
    return !f.timed_out;
}

static void
tear_down(void)
{
    g_clear_object(&f.app);
    g_clear_object(&f.settings);
    g_clear_object(&f.fake_bus);
    g_clear_pointer(&f.watcher_info, g_dbus_node_info_unref);
    g_clear_pointer(&f.portal_info, g_dbus_node_info_unref);
    g_clear_pointer(&f.portal_options, g_variant_unref);
    /* Neither _down nor _stop: both wait for the app's session bus
     * connection, which GLib keeps. The bus ends with this process
     * (GTestDBus watches it). */
    einsora_test_dir_remove(f.dir);
    g_free(f.dir);
    g_free(f.artifacts);
    g_free(f.item);
}

/* ---- the app's windows ---------------------------------------------- */

static GtkWindow *
app_window(GType type)
{
    for (GList *l = gtk_application_get_windows(GTK_APPLICATION(f.app)); l != NULL; l = l->next)
        if (G_TYPE_CHECK_INSTANCE_TYPE(l->data, type))
            return l->data;
    return NULL;
}

static gboolean
has_main_window(gpointer data)
{
    GtkWindow *window = app_window(EINSORA_TYPE_WINDOW);

    return window != NULL && gtk_widget_get_mapped(GTK_WIDGET(window));
}

static gboolean
registered(gpointer data)
{
    return f.item != NULL;
}

static gboolean
item_gone(gpointer data)
{
    return f.items_gone > 0 && f.item == NULL;
}

static EinsoraPreferencesWindow *
open_preferences(void)
{
    EinsoraPreferencesWindow *window;

    /* As the menu item and Ctrl+comma do. */
    g_action_group_activate_action(G_ACTION_GROUP(f.app), "preferences", NULL);
    window = EINSORA_PREFERENCES_WINDOW(app_window(EINSORA_TYPE_PREFERENCES_WINDOW));
    g_assert_nonnull(window);
    return window;
}

static GtkSwitch *
preferences_switch(EinsoraPreferencesWindow *window, const char *name)
{
    GObject *child =
        gtk_widget_get_template_child(GTK_WIDGET(window), EINSORA_TYPE_PREFERENCES_WINDOW, name);

    g_assert_true(GTK_IS_SWITCH(child));
    return GTK_SWITCH(child);
}

static const char *
login_subtitle(EinsoraPreferencesWindow *window)
{
    GObject *row = gtk_widget_get_template_child(GTK_WIDGET(window),
                                                 EINSORA_TYPE_PREFERENCES_WINDOW, "login_row");

    return adw_action_row_get_subtitle(ADW_ACTION_ROW(row));
}

static gboolean
not_busy(gpointer window)
{
    return !einsora_preferences_window_is_busy(window);
}

/* Flips "Start at login" as a click does, and waits for the answer. */
static void
switch_login(EinsoraPreferencesWindow *window, gboolean on)
{
    GtkSwitch *login = preferences_switch(window, "login_switch");

    g_assert_true(gtk_widget_get_sensitive(GTK_WIDGET(login)));
    gtk_switch_set_active(login, on);
    g_assert_true(einsora_test_wait_for(not_busy, window, 10));
}

static gchar *
autostart_path(void)
{
    return g_build_filename(g_get_user_config_dir(), "autostart", APP_ID ".desktop", NULL);
}

/* ---- no portal: the autostart file ----------------------------------- */

static gboolean
drive_autostart_file(gpointer data)
{
    g_autofree gchar *path = autostart_path();
    g_autofree gchar *contents = NULL;
    g_autofree gchar *exec = NULL;
    g_autofree gchar *validate_out = NULL;
    g_autofree gchar *validate_err = NULL;
    g_autoptr(GKeyFile) file = g_key_file_new();
    g_autoptr(GError) error = NULL;
    EinsoraPreferencesWindow *window;
    const char *validate[] = {"desktop-file-validate", path, NULL};
    int status = -1;

    g_assert_true(einsora_test_wait_for(has_main_window, NULL, 20));
    window = open_preferences();
    g_assert_false(gtk_switch_get_active(preferences_switch(window, "login_switch")));
    g_assert_true(gtk_switch_get_active(preferences_switch(window, "tray_switch")));
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));

    switch_login(window, TRUE);
    g_assert_true(g_settings_get_boolean(f.settings, "start-at-login"));
    g_assert_true(gtk_switch_get_state(preferences_switch(window, "login_switch")));
    g_assert_true(g_key_file_load_from_file(file, path, G_KEY_FILE_NONE, &error));
    g_assert_no_error(error);
    exec = g_key_file_get_string(file, G_KEY_FILE_DESKTOP_GROUP, "Exec", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(exec, ==, "einsora-app --background");
    g_assert_true(
        g_key_file_get_boolean(file, G_KEY_FILE_DESKTOP_GROUP, "X-GNOME-Autostart-enabled", NULL));
    g_assert_true(g_spawn_sync(NULL, (char **)validate, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                               &validate_out, &validate_err, &status, &error));
    g_assert_no_error(error);
    g_test_message("desktop-file-validate: %s%s", validate_out, validate_err);
    g_assert_true(g_spawn_check_wait_status(status, &error));
    g_assert_no_error(error);
    /* Neither warnings nor hints. */
    g_assert_cmpstr(validate_out, ==, "");
    einsora_test_save_screenshot(GTK_WIDGET(window), f.artifacts, "preferences.png");

    switch_login(window, FALSE);
    g_assert_false(g_settings_get_boolean(f.settings, "start-at-login"));
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_application_quit(G_APPLICATION(f.app));
    return G_SOURCE_REMOVE;
}

static void
test_autostart_file(void)
{
    set_up(FALSE, 0);
    g_assert_true(run_app(drive_autostart_file, NULL));
    tear_down();
}

/* ---- the portal ------------------------------------------------------ */

static gboolean
drive_portal_granted(gpointer data)
{
    g_autofree gchar *path = autostart_path();
    g_autofree const char **commandline = NULL;
    gboolean autostart = FALSE, activatable = TRUE;
    const char *reason = NULL;
    EinsoraPreferencesWindow *window;

    g_assert_true(einsora_test_wait_for(has_main_window, NULL, 20));
    window = open_preferences();
    switch_login(window, TRUE);
    g_assert_cmpuint(f.portal_calls, ==, 1);
    g_assert_true(g_variant_lookup(f.portal_options, "autostart", "b", &autostart));
    g_assert_true(autostart);
    g_assert_true(g_variant_lookup(f.portal_options, "commandline", "^a&s", &commandline));
    g_assert_cmpuint(g_strv_length((gchar **)commandline), ==, 2);
    g_assert_cmpstr(commandline[0], ==, "einsora-app");
    g_assert_cmpstr(commandline[1], ==, "--background");
    g_assert_true(g_variant_lookup(f.portal_options, "dbus-activatable", "b", &activatable));
    g_assert_false(activatable);
    g_assert_true(g_variant_lookup(f.portal_options, "reason", "&s", &reason));
    g_assert_cmpstr(reason, !=, "");
    g_assert_true(g_settings_get_boolean(f.settings, "start-at-login"));
    g_assert_true(gtk_switch_get_state(preferences_switch(window, "login_switch")));
    /* The portal starts it: no file of the app's own. */
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));

    /* Off: asked of the portal too. */
    switch_login(window, FALSE);
    g_assert_cmpuint(f.portal_calls, ==, 2);
    g_assert_true(g_variant_lookup(f.portal_options, "autostart", "b", &autostart));
    g_assert_false(autostart);
    g_assert_false(g_settings_get_boolean(f.settings, "start-at-login"));
    g_application_quit(G_APPLICATION(f.app));
    return G_SOURCE_REMOVE;
}

static void
test_portal_granted(void)
{
    set_up(TRUE, 0);
    g_assert_true(run_app(drive_portal_granted, NULL));
    tear_down();
}

static gboolean
drive_portal_refused(gpointer data)
{
    g_autofree gchar *path = autostart_path();
    EinsoraPreferencesWindow *window;
    GtkSwitch *login;
    g_autofree gchar *before = NULL;

    g_assert_true(einsora_test_wait_for(has_main_window, NULL, 20));
    window = open_preferences();
    login = preferences_switch(window, "login_switch");
    before = g_strdup(login_subtitle(window));
    switch_login(window, TRUE);
    g_assert_cmpuint(f.portal_calls, ==, 1);
    /* Back off, and the row says why. */
    g_assert_false(gtk_switch_get_active(login));
    g_assert_false(gtk_switch_get_state(login));
    g_assert_false(g_settings_get_boolean(f.settings, "start-at-login"));
    g_assert_cmpstr(login_subtitle(window), !=, before);
    g_assert_nonnull(strstr(login_subtitle(window), "not allow"));
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_application_quit(G_APPLICATION(f.app));
    return G_SOURCE_REMOVE;
}

static void
test_portal_refused(void)
{
    set_up(TRUE, 1);
    g_assert_true(run_app(drive_portal_refused, NULL));
    tear_down();
}

/* Installed on the host (no sandbox): the file, even with a portal. */
static gboolean
drive_host_uses_file(gpointer data)
{
    g_autofree gchar *path = autostart_path();
    EinsoraPreferencesWindow *window;

    g_assert_true(einsora_test_wait_for(has_main_window, NULL, 20));
    window = open_preferences();
    switch_login(window, TRUE);
    g_assert_cmpuint(f.portal_calls, ==, 0);
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
    g_assert_true(g_settings_get_boolean(f.settings, "start-at-login"));
    switch_login(window, FALSE);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    g_application_quit(G_APPLICATION(f.app));
    return G_SOURCE_REMOVE;
}

static void
test_host_uses_file(void)
{
    set_up(TRUE, 0);
    g_unsetenv("EINSORA_AUTOSTART");
    g_assert_true(run_app(drive_host_uses_file, NULL));
    tear_down();
}

/* ---- the tray -------------------------------------------------------- */

static gboolean
drive_tray_off(gpointer data)
{
    EinsoraPreferencesWindow *window;

    g_assert_true(einsora_test_wait_for(has_main_window, NULL, 20));
    g_assert_true(einsora_test_wait_for(registered, NULL, 10));
    g_assert_true(g_str_has_prefix(f.item, "org.kde.StatusNotifierItem-"));
    window = open_preferences();
    gtk_switch_set_active(preferences_switch(window, "tray_switch"), FALSE);
    g_assert_false(g_settings_get_boolean(f.settings, "keep-running-in-tray"));
    /* The watcher sees the item's name go. */
    g_assert_true(einsora_test_wait_for(item_gone, NULL, 10));
    /* Closing the windows quits: run_app returns by itself. */
    gtk_window_close(GTK_WINDOW(window));
    gtk_window_close(app_window(EINSORA_TYPE_WINDOW));
    return G_SOURCE_REMOVE;
}

static void
test_tray_off(void)
{
    set_up(FALSE, 0);
    g_assert_true(run_app(drive_tray_off, NULL));
    g_assert_cmpuint(f.registrations, ==, 1);
    tear_down();
}

static gboolean
check_still_running(gpointer data)
{
    g_assert_true(f.running);
    g_assert_null(gtk_application_get_windows(GTK_APPLICATION(f.app)));
    g_assert_nonnull(f.item);
    g_assert_cmpuint(f.items_gone, ==, 0);
    f.checked = TRUE;
    g_application_quit(G_APPLICATION(f.app));
    return G_SOURCE_REMOVE;
}

static gboolean
drive_tray_on(gpointer data)
{
    g_assert_true(einsora_test_wait_for(has_main_window, NULL, 20));
    g_assert_true(einsora_test_wait_for(registered, NULL, 10));
    g_assert_true(g_settings_get_boolean(f.settings, "keep-running-in-tray"));
    gtk_window_close(app_window(EINSORA_TYPE_WINDOW));
    /* After this returns, in the app's own loop: still there. */
    g_timeout_add(1500, check_still_running, NULL);
    return G_SOURCE_REMOVE;
}

static void
test_tray_on(void)
{
    set_up(FALSE, 0);
    g_assert_true(run_app(drive_tray_on, NULL));
    g_assert_true(f.checked);
    tear_down();
}

/* ---- --background ------------------------------------------------------ */

static gboolean
drive_background(gpointer data)
{
    g_assert_true(einsora_test_wait_for(registered, NULL, 10));
    g_timeout_add(1500, check_still_running, NULL);
    return G_SOURCE_REMOVE;
}

static void
test_background(void)
{
    set_up(FALSE, 0);
    g_assert_true(run_app(drive_background, "--background"));
    g_assert_true(f.checked);
    tear_down();
}

/* Each in a process of its own: one session bus, one application. */
static void
in_subprocess(gconstpointer data)
{
    GTestFunc test = (GTestFunc)data;

    if (g_test_subprocess()) {
        test();
        return;
    }
    g_test_trap_subprocess(NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
    g_test_trap_assert_passed();
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (g_getenv("DISPLAY") == NULL) {
        g_test_skip("needs a display: run under tests/run-under-xvfb.sh");
        return g_test_run();
    }
    g_test_add_data_func("/app/preferences/autostart-file", test_autostart_file, in_subprocess);
    g_test_add_data_func("/app/preferences/portal-granted", test_portal_granted, in_subprocess);
    g_test_add_data_func("/app/preferences/portal-refused", test_portal_refused, in_subprocess);
    g_test_add_data_func("/app/preferences/host-uses-file", test_host_uses_file, in_subprocess);
    g_test_add_data_func("/app/preferences/tray-off-quits", test_tray_off, in_subprocess);
    g_test_add_data_func("/app/preferences/tray-on-keeps-running", test_tray_on, in_subprocess);
    g_test_add_data_func("/app/preferences/background-no-window", test_background, in_subprocess);
    return g_test_run();
}
