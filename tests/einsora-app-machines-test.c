/* The Machines page under Xvfb (tests/run-under-xvfb.sh), against the
 * real daemon over TLS (EINSORA_TLS=on: only then does it give enrolment
 * tokens) with the sim driver, the app's connection pinned to its
 * certificate. The page shows the daemon's own machine online, with no
 * Revoke…; Add a Machine… refuses a bad name in the dialog, then shows
 * the one command, which Copy puts on the clipboard; the test runs that
 * command, the real `einsora-daemon agent --join`, as another machine
 * (a data directory of its own), then that machine's agent: the page
 * finds it by itself (it reads again every 10 s while shown), online,
 * with its agent's version and its certificate's expiry. Revoke… asks
 * first; confirmed, the daemon has no certificate for it any more and
 * the page offers Revoke… no longer. Screenshots go to
 * EINSORA_ARTIFACTS_DIR. */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <string.h>

#include "einsora-add-machine-dialog.h"
#include "einsora-application.h"
#include "einsora-client.h"
#include "einsora-connection.h"
#include "einsora-test-app-wait.h"
#include "einsora-test-app-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-window.h"

#define MACHINE_NAME "ui-box"

static gchar *dir;
static EinsoraTestDaemon *daemon_;
static gchar *fingerprint; /* the daemon's certificate's, pinned for it */
static EinsoraApplication *app;

/* ---- waiting with the main loop turning -------------------------------- */

static gpointer
find_toplevel(GType type)
{
    GListModel *toplevels = gtk_window_get_toplevels();

    for (guint i = 0; i < g_list_model_get_n_items(toplevels); i++) {
        g_autoptr(GObject) window = g_list_model_get_item(toplevels, i);
        if (G_TYPE_CHECK_INSTANCE_TYPE(window, type) && gtk_widget_get_visible(GTK_WIDGET(window)))
            return window;
    }
    return NULL;
}

static gboolean
toplevel_shown(gpointer type)
{
    return find_toplevel(GPOINTER_TO_SIZE(type)) != NULL;
}

static gboolean
toplevel_gone(gpointer type)
{
    return find_toplevel(GPOINTER_TO_SIZE(type)) == NULL;
}

/* A button with @action_name under @widget that a person can see. */
static GtkWidget *
find_button(GtkWidget *widget, const char *action_name)
{
    if (GTK_IS_BUTTON(widget) &&
        g_strcmp0(gtk_actionable_get_action_name(GTK_ACTIONABLE(widget)), action_name) == 0 &&
        gtk_widget_is_drawable(widget))
        return widget;
    for (GtkWidget *child = gtk_widget_get_first_child(widget); child != NULL;
         child = gtk_widget_get_next_sibling(child)) {
        GtkWidget *found = find_button(child, action_name);
        if (found != NULL)
            return found;
    }
    return NULL;
}

/* A person clicks the button with @action_name in @widget. */
static void
click(GtkWidget *widget, const char *action_name)
{
    GtkWidget *button = find_button(widget, action_name);

    g_assert_nonnull(button);
    g_assert_true(gtk_widget_is_sensitive(button));
    g_signal_emit_by_name(button, "clicked");
}

static gboolean
toast_shown(gpointer needle)
{
    return einsora_test_shows_text(GTK_WIDGET(einsora_test_main_window(app)), needle);
}

/* ---- screenshots ------------------------------------------------------- */

/* ---- the daemon, as a script would call it ----------------------------- */

static JsonNode *
call(const char *method, const char *path)
{
    g_autoptr(EinsoraClient) client = einsora_client_new(daemon_->uri, daemon_->owner_token);
    g_autoptr(GError) error = NULL;
    JsonNode *answer;

    einsora_client_set_pinned_certificate(client, fingerprint);
    answer = einsora_client_request(client, method, path, NULL, NULL, NULL, &error);
    g_assert_no_error(error);
    return answer;
}

/* The daemon's own machine: the one without an agent certificate. */
static gchar *
own_machine_id(void)
{
    g_autoptr(JsonNode) list = call("GET", "/v1/machines");
    JsonArray *machines = json_object_get_array_member(json_node_get_object(list), "machines");

    g_assert_cmpuint(json_array_get_length(machines), ==, 1);
    return g_strdup(
        json_object_get_string_member(json_array_get_object_element(machines, 0), "id"));
}

/* ---- the page ---------------------------------------------------------- */

typedef struct {
    const char *id;   /* or */
    const char *name; /* the row's */
    const char *status;
    gboolean enrolled; /* offers Revoke… */
} RowWait;

static EinsoraMachineRow *
row_of(const RowWait *wait)
{
    EinsoraMachinesView *view = einsora_window_get_machines_view(einsora_test_main_window(app));

    return wait->id != NULL ? einsora_machines_view_lookup_row(view, wait->id)
                            : einsora_machines_view_find_row(view, wait->name);
}

static gboolean
row_shows(gpointer data)
{
    const RowWait *wait = data;
    EinsoraMachineRow *row = row_of(wait);

    return row != NULL && g_strcmp0(einsora_machine_row_get_status(row), wait->status) == 0 &&
           einsora_machine_row_can_revoke(row) == wait->enrolled;
}

static const char *
subtitle_of(EinsoraMachineRow *row)
{
    return adw_action_row_get_subtitle(ADW_ACTION_ROW(row));
}

static gboolean
command_shown(gpointer dialog)
{
    return einsora_add_machine_dialog_get_command(dialog) != NULL;
}

static gboolean
dialog_error_shown(gpointer dialog)
{
    return einsora_add_machine_dialog_get_error(dialog) != NULL;
}

static void
on_clipboard_text(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GError) error = NULL;

    *(gchar **)user_data = gdk_clipboard_read_text_finish(GDK_CLIPBOARD(source), result, &error);
    g_assert_no_error(error);
}

static void
on_process_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_subprocess_wait_finish(G_SUBPROCESS(source), result, NULL);
    *(gboolean *)user_data = TRUE;
}

static gboolean
flag_set(gpointer flag)
{
    return *(gboolean *)flag;
}

/* Waits for @process with the main loop turning (the app's with it). */
static gboolean
wait_process(GSubprocess *process, guint seconds)
{
    gboolean done = FALSE;

    g_subprocess_wait_async(process, NULL, on_process_done, &done);
    return einsora_test_wait_for(flag_set, &done, seconds);
}

/* @command as another machine runs it: einsora-daemon from this build,
 * with a data directory of its own. */
static GSubprocess *
run_as_other_machine(const char *command, const char *other, GError **error)
{
    g_auto(GStrv) argv = NULL;
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    g_autofree gchar *log = g_build_filename(other, "agent.log", NULL);

    if (command != NULL && !g_shell_parse_argv(command, NULL, &argv, error))
        return NULL;
    g_ptr_array_add(args, (gpointer)einsora_test_daemon_path());
    g_ptr_array_add(args, "--data-dir");
    g_ptr_array_add(args, (gpointer)other);
    if (argv != NULL)
        for (guint i = 1; argv[i] != NULL; i++)
            g_ptr_array_add(args, argv[i]);
    else
        g_ptr_array_add(args, "agent");
    g_ptr_array_add(args, NULL);
    /* Nothing of this machine's daemon: the other has only what the
     * join gave it. */
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_SERVER");
    g_subprocess_launcher_setenv(launcher, "EINSORA_DRIVERS", "sim", TRUE);
    g_subprocess_launcher_set_stderr_file_path(launcher, log);
    return g_subprocess_launcher_spawnv(launcher, (const char *const *)args->pdata, error);
}

static void
test_machines_page(void)
{
    EinsoraWindow *window;
    EinsoraMachinesView *view;
    EinsoraAddMachineDialog *dialog;
    EinsoraMachineRow *row;
    g_autofree gchar *own_id = own_machine_id();
    g_autofree gchar *command = NULL;
    g_autofree gchar *copied = NULL;
    g_autofree gchar *other = einsora_test_dir_new();
    g_autofree gchar *machine_id = NULL;
    g_autoptr(GSubprocess) agent = NULL;
    g_autoptr(GError) error = NULL;
    AdwMessageDialog *confirm;

    g_assert_true(g_application_register(G_APPLICATION(app), NULL, &error));
    g_assert_no_error(error);
    g_application_activate(G_APPLICATION(app));
    g_assert_true(einsora_test_wait_for(einsora_test_app_ready, app, 60));
    window = einsora_test_main_window(app);
    g_assert_nonnull(window);
    g_assert_true(einsora_connection_is_local(einsora_application_get_connection(app)));

    /* The page: this daemon's machine, online, nothing to revoke. */
    einsora_window_show_machines(window);
    view = einsora_window_get_machines_view(window);
    {
        RowWait own = {own_id, NULL, "Online", FALSE};

        g_assert_true(einsora_test_wait_for(row_shows, &own, 30));
        row = row_of(&own);
        g_test_message("own machine: %s", subtitle_of(row));
        g_assert_true(g_str_has_prefix(subtitle_of(row), "Last sync "));
        g_assert_nonnull(strstr(subtitle_of(row), " · agent "));
        g_assert_nonnull(strstr(subtitle_of(row), "sim"));
        g_assert_null(strstr(subtitle_of(row), "certificate"));
        g_assert_null(strstr(subtitle_of(row), "clock off"));
    }
    g_assert_cmpuint(einsora_machines_view_get_n_machines(view), ==, 1);
    g_assert_null(einsora_machines_view_get_error(view));

    /* Add a Machine…: a name the server refuses is said in the dialog. */
    click(GTK_WIDGET(view), "app.add-machine");
    g_assert_true(einsora_test_wait_for(toplevel_shown,
                                        GSIZE_TO_POINTER(EINSORA_TYPE_ADD_MACHINE_DIALOG), 10));
    dialog = find_toplevel(EINSORA_TYPE_ADD_MACHINE_DIALOG);
    einsora_add_machine_dialog_set_name(dialog, "Not A Name!");
    click(GTK_WIDGET(dialog), "dialog.get-command");
    g_assert_true(einsora_test_wait_for(dialog_error_shown, dialog, 30));
    g_test_message("refused: %s", einsora_add_machine_dialog_get_error(dialog));
    g_assert_null(einsora_add_machine_dialog_get_command(dialog));
    einsora_test_settle(500); /* the error's revealer open */
    einsora_test_save_screenshot(GTK_WIDGET(dialog), g_getenv("EINSORA_ARTIFACTS_DIR"),
                                 "add-machine-dialog-error.png");

    /* A good one: the command, shown once, saying when it stops working. */
    einsora_add_machine_dialog_set_name(dialog, MACHINE_NAME);
    click(GTK_WIDGET(dialog), "dialog.get-command");
    g_assert_true(einsora_test_wait_for(command_shown, dialog, 30));
    g_assert_null(einsora_add_machine_dialog_get_error(dialog));
    command = g_strdup(einsora_add_machine_dialog_get_command(dialog));
    g_test_message("command: %s", command);
    g_assert_true(g_str_has_prefix(command, "einsora-daemon agent --join "));
    g_assert_nonnull(strstr(command, " --token enr_"));
    g_assert_nonnull(strstr(command, fingerprint));
    g_assert_true(einsora_test_shows_text(GTK_WIDGET(dialog), command));
    g_assert_nonnull(strstr(einsora_add_machine_dialog_get_note(dialog), "before "));
    g_assert_nonnull(strstr(einsora_add_machine_dialog_get_note(dialog), "works once"));
    g_assert_null(find_button(GTK_WIDGET(dialog), "dialog.get-command"));
    einsora_test_settle(500); /* the stack's crossfade */
    einsora_test_save_screenshot(GTK_WIDGET(dialog), g_getenv("EINSORA_ARTIFACTS_DIR"),
                                 "add-machine-dialog.png");
    /* Copy: the command on the clipboard, as the terminal will paste it. */
    click(GTK_WIDGET(dialog), "dialog.copy");
    gdk_clipboard_read_text_async(gtk_widget_get_clipboard(GTK_WIDGET(dialog)), NULL,
                                  on_clipboard_text, &copied);
    g_assert_true(einsora_test_wait_for(einsora_test_string_set, &copied, 10));
    g_assert_cmpstr(copied, ==, command);
    click(GTK_WIDGET(dialog), "window.close");
    g_assert_true(einsora_test_wait_for(toplevel_gone,
                                        GSIZE_TO_POINTER(EINSORA_TYPE_ADD_MACHINE_DIALOG), 10));

    /* The command, on "another machine": it enrols, then its agent runs. */
    {
        g_autoptr(GSubprocess) join = run_as_other_machine(command, other, &error);
        g_autofree gchar *id_path = g_build_filename(other, "agent", "machine-id", NULL);

        g_assert_no_error(error);
        g_assert_true(wait_process(join, 60));
        g_assert_true(g_subprocess_get_successful(join));
        g_assert_true(g_file_get_contents(id_path, &machine_id, NULL, NULL));
        g_strstrip(machine_id);
    }
    agent = run_as_other_machine(NULL, other, &error);
    g_assert_no_error(error);

    /* The page finds it by itself, online and enrolled. */
    {
        RowWait joined = {machine_id, NULL, "Online", TRUE};

        g_assert_true(einsora_test_wait_for(row_shows, &joined, 45));
        row = row_of(&joined);
        g_test_message("joined machine: %s", subtitle_of(row));
        g_assert_cmpstr(adw_preferences_row_get_title(ADW_PREFERENCES_ROW(row)), ==, MACHINE_NAME);
        g_assert_true(g_str_has_prefix(subtitle_of(row), "Last sync "));
        g_assert_nonnull(strstr(subtitle_of(row), " · agent "));
        g_assert_nonnull(strstr(subtitle_of(row), "certificate is valid until "));
        g_assert_true(row == einsora_machines_view_find_row(view, MACHINE_NAME));
    }
    g_assert_cmpuint(einsora_machines_view_get_n_machines(view), ==, 2);
    einsora_test_settle(5500); /* no toast over the page (libadwaita's 5 s) */
    einsora_test_save_screenshot(GTK_WIDGET(window), g_getenv("EINSORA_ARTIFACTS_DIR"),
                                 "machines-page.png");

    /* Revoke…: asked first, saying what follows. */
    click(GTK_WIDGET(row), "machines.revoke");
    g_assert_true(
        einsora_test_wait_for(toplevel_shown, GSIZE_TO_POINTER(ADW_TYPE_MESSAGE_DIALOG), 10));
    confirm = find_toplevel(ADW_TYPE_MESSAGE_DIALOG);
    g_assert_cmpstr(adw_message_dialog_get_heading(confirm), ==, "Revoke " MACHINE_NAME "?");
    g_assert_nonnull(strstr(adw_message_dialog_get_body(confirm), "refused at once"));
    g_assert_nonnull(strstr(adw_message_dialog_get_body(confirm), "offline"));
    einsora_test_save_screenshot(GTK_WIDGET(confirm), g_getenv("EINSORA_ARTIFACTS_DIR"),
                                 "revoke-machine-dialog.png");
    adw_message_dialog_response(confirm, "revoke");
    g_assert_true(einsora_test_wait_for(toast_shown, MACHINE_NAME " is revoked", 30));
    {
        RowWait revoked = {machine_id, NULL, NULL, FALSE};
        g_autofree gchar *path = g_strdup_printf("/v1/machines/%s", machine_id);
        g_autoptr(JsonNode) machine = NULL;

        /* (its status is whatever the refused agent's last sync left) */
        revoked.status = einsora_machine_row_get_status(row_of(&revoked));
        g_assert_true(einsora_test_wait_for(row_shows, &revoked, 30));
        g_assert_null(strstr(subtitle_of(row_of(&revoked)), "certificate"));
        machine = call("GET", path);
        g_assert_true(JSON_NODE_HOLDS_NULL(
            json_object_get_member(json_node_get_object(machine), "certificate")));
    }

    g_subprocess_force_exit(agent);
    g_assert_true(wait_process(agent, 10));
    {
        g_autofree gchar *log_path = g_build_filename(other, "agent.log", NULL);
        g_autofree gchar *log = NULL;

        if (g_file_get_contents(log_path, &log, NULL, NULL))
            g_test_message("the other machine's agent said:\n%s", log);
    }
    einsora_test_dir_remove(other);
}

/* What the real daemon here can't easily show: an agent's clock off by
 * more than the server allows, a machine online that takes no new
 * workloads, one offline, and what guests hold on a shared one; a row
 * kept across refreshes, and one gone when its machine is. */
static void
test_row_texts(void)
{
    /* (last_seen_at: a minute and a half ago) */
    static const char machines_json[] =
        "[{\"id\":\"m-skewed\",\"name\":\"skewed\",\"status\":\"online\","
        "\"placeable\":false,\"cpus\":8,\"memory_mib\":32768,\"workloads\":1,"
        "\"drivers\":[\"native\"],\"sharing\":\"community\","
        "\"last_seen_at\":\"%s\","
        "\"guests\":{\"workloads\":2,\"cpus\":3,\"memory_mib\":4096,\"gpus\":1},"
        "\"certificate\":{\"fingerprint\":\"SHA256:00\","
        "\"expires_at\":\"2031-05-20T12:00:00Z\"},"
        "\"agent\":{\"version\":\"0.2.0\",\"clock_offset_ms\":-42600,"
        "\"clock_skewed\":true}},"
        "{\"id\":\"m-gone\",\"name\":\"gone\",\"status\":\"offline\","
        "\"placeable\":false,\"last_seen_at\":null,\"sharing\":\"community\","
        "\"guests\":{\"workloads\":0,\"cpus\":0,\"memory_mib\":0,\"gpus\":0},"
        "\"certificate\":null,\"agent\":null}]";
    GtkWidget *window = gtk_window_new();
    EinsoraMachinesView *view = EINSORA_MACHINES_VIEW(einsora_machines_view_new());
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autoptr(GDateTime) seen = g_date_time_add_seconds(now, -90);
    g_autofree gchar *seen_text = g_date_time_format_iso8601(seen);
    g_autofree gchar *text = g_strdup_printf(machines_json, seen_text);
    g_autoptr(JsonNode) machines = json_from_string(text, NULL);
    g_autoptr(JsonNode) fewer = NULL;
    EinsoraMachineRow *skewed, *gone;

    gtk_window_set_child(GTK_WINDOW(window), GTK_WIDGET(view));
    gtk_window_present(GTK_WINDOW(window));
    einsora_machines_view_set_machines(view, json_node_get_array(machines));
    g_assert_cmpuint(einsora_machines_view_get_n_machines(view), ==, 2);
    skewed = einsora_machines_view_find_row(view, "skewed");
    gone = einsora_machines_view_find_row(view, "gone");
    g_assert_nonnull(skewed);
    g_assert_nonnull(gone);
    g_test_message("skewed: %s", adw_action_row_get_subtitle(ADW_ACTION_ROW(skewed)));
    g_test_message("gone: %s", adw_action_row_get_subtitle(ADW_ACTION_ROW(gone)));
    g_assert_cmpstr(einsora_machine_row_get_status(skewed), ==, "Not Placeable");
    g_assert_true(einsora_machine_row_can_revoke(skewed));
    g_assert_cmpstr(adw_action_row_get_subtitle(ADW_ACTION_ROW(skewed)), ==,
                    "Last sync 1 min ago · agent 0.2.0 · clock off by 43 s\n"
                    "8 CPUs · 32.0\u00a0GiB · native · 1 workload\n"
                    "Enrolled: its certificate is valid until 20 May 2031\n"
                    "Shared with the Lab: guests hold 2 workloads · 3 CPUs · 4.0\u00a0GiB · 1 GPU");
    g_assert_cmpstr(einsora_machine_row_get_status(gone), ==, "Offline");
    g_assert_false(einsora_machine_row_can_revoke(gone));
    g_assert_cmpstr(adw_action_row_get_subtitle(ADW_ACTION_ROW(gone)), ==,
                    "Never synced\ncapacity not reported · 0 workloads\n"
                    "Shared with the Lab: no guests now");

    /* Refreshed: the same row, kept; one gone from the list, gone here. */
    fewer = json_from_string(text, NULL);
    json_array_remove_element(json_node_get_array(fewer), 1);
    einsora_machines_view_set_machines(view, json_node_get_array(fewer));
    g_assert_cmpuint(einsora_machines_view_get_n_machines(view), ==, 1);
    g_assert_true(einsora_machines_view_find_row(view, "skewed") == skewed);
    g_assert_null(einsora_machines_view_find_row(view, "gone"));
    einsora_machines_view_set_error(view, "The daemon stopped.");
    g_assert_cmpstr(einsora_machines_view_get_error(view), ==, "The daemon stopped.");
    gtk_window_destroy(GTK_WINDOW(window));
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    if (g_getenv("DISPLAY") == NULL || g_getenv("DBUS_SESSION_BUS_ADDRESS") == NULL) {
        g_test_skip("needs a display and a session bus: run under tests/run-under-xvfb.sh");
        return g_test_run();
    }
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here (glib-networking)");
        return g_test_run();
    }
    dir = einsora_test_dir_new();
    daemon_ = einsora_test_app_daemon_start(dir, NULL, &fingerprint);
    app = einsora_application_new();
    g_test_add_func("/app/machines/page", test_machines_page);
    g_test_add_func("/app/machines/row-texts", test_row_texts);
    status = g_test_run();
    g_clear_object(&app);
    einsora_test_daemon_stop(daemon_);
    einsora_test_daemon_free(daemon_);
    einsora_test_dir_remove(dir);
    g_free(dir);
    g_free(fingerprint);
    return status;
}
