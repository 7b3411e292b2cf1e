/* The einsora-app program as installed, started as a user starts it,
 * under Xvfb with a private session bus (tests/run-under-xvfb.sh), against
 * the real daemon (sim driver): WebKitGTK is not in the process until the
 * first notebook window opens (docs/adr/0031-webkit-on-demand.md), nor is
 * librsvg until an SVG icon is shown. What
 * is mapped is read from /proc/PID/maps, so a link that pulls WebKit in,
 * directly or through another library, fails here. The window is asked
 * for over D-Bus (app.open-workload), as the tray and notifications do. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>

#include "einsora-test-daemon.h"

/* What WebKitGTK 6.0 maps: its own library and its JavaScript engine. */
static const char *const webkit_libraries[] = {"libwebkitgtk-6.0.so",
                                               "libjavascriptcoregtk-6.0.so"};
#define NOTEBOOK_LIBRARY "libeinsora-notebook"
/* Adwaita's status icons and spinner are SVG only: the first one drawn
 * loads librsvg (about 6 MiB). The window sets them when they are shown,
 * and the spinner only after a connection has taken a second. */
#define SVG_LIBRARY "librsvg-2.so"
/* Waits with an end, not timings: a start on a loaded machine is slow. */
#define WAIT_SECONDS 120

typedef struct {
    EinsoraTestDaemon *daemon;
    GSubprocess *app;
    gchar *pid;
    gchar *stdout_path;
    gchar *stderr_path;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->daemon = einsora_test_daemon_new();
    einsora_test_daemon_setenv(f->daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_start(f->daemon);
    f->stdout_path = g_build_filename(f->daemon->dir, "app.out", NULL);
    f->stderr_path = g_build_filename(f->daemon->dir, "app.err", NULL);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    if (f->app != NULL) {
        g_subprocess_send_signal(f->app, SIGTERM);
        g_subprocess_wait(f->app, NULL, NULL);
    }
    g_clear_object(&f->app);
    einsora_test_daemon_stop(f->daemon);
    einsora_test_daemon_free(f->daemon);
    g_free(f->pid);
    g_free(f->stdout_path);
    g_free(f->stderr_path);
}

static gchar *
create_running_notebook(Fixture *f)
{
    g_autoptr(EinsoraTestResponse) created = einsora_test_request(
        f->daemon, "POST", "/v1/workloads", f->daemon->owner_token, "application/json",
        "{\"kind\": \"notebook\", \"name\": \"launch\", \"gpu_class\": \"cpu-1c-2g\", "
        "\"image\": \"jupyter-notebook\"}",
        NULL);
    g_autofree gchar *path = NULL;
    gint64 deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;

    g_assert_cmpuint(created->status, ==, 201);
    path = g_strdup_printf("/v1/workloads/%s", einsora_test_response_string(created, "id"));
    for (;;) {
        g_autoptr(EinsoraTestResponse) read =
            einsora_test_request(f->daemon, "GET", path, f->daemon->owner_token, NULL, NULL, NULL);
        const char *state = einsora_test_response_string(read, "state");

        if (g_strcmp0(state, "running") == 0)
            return g_strdup(einsora_test_response_string(created, "id"));
        if (g_get_monotonic_time() > deadline)
            g_error("the workload is %s, not running", state);
        g_usleep(50 * 1000);
    }
}

/* @module_dir: (nullable) EINSORA_APP_MODULE_DIR; NULL: as installed
 * programs run, the library found beside the program. */
static void
start_app(Fixture *f, const char *module_dir)
{
    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    g_autoptr(GError) error = NULL;
    const char *app = g_getenv("EINSORA_APP"); /* meson test sets it */

    g_assert_nonnull(app);
    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", f->daemon->uri, TRUE);
    /* The local daemon's token file is read from its data directory. */
    g_subprocess_launcher_setenv(launcher, "EINSORA_DATA_DIR", f->daemon->data_dir, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_NO_SYSTEMD", "1", TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_APP_TIMING", "1", TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_STATE_HOME", f->daemon->dir, TRUE);
    if (module_dir != NULL)
        g_subprocess_launcher_setenv(launcher, "EINSORA_APP_MODULE_DIR", module_dir, TRUE);
    else
        g_subprocess_launcher_unsetenv(launcher, "EINSORA_APP_MODULE_DIR");
    g_subprocess_launcher_set_stdout_file_path(launcher, f->stdout_path);
    g_subprocess_launcher_set_stderr_file_path(launcher, f->stderr_path);
    f->app = g_subprocess_launcher_spawn(launcher, &error, app, NULL);
    g_assert_no_error(error);
    f->pid = g_strdup(g_subprocess_get_identifier(f->app));
}

/* Turns the test's own loop too (its D-Bus calls) while it waits for
 * @needle in the program's standard output (or @path). */
static void
wait_for_text(Fixture *f, const char *path, const char *needle)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *out = NULL;
        g_autofree gchar *err = NULL;

        if (g_file_get_contents(path, &out, NULL, NULL) && strstr(out, needle) != NULL)
            return;
        g_file_get_contents(f->stderr_path, &err, NULL, NULL);
        if (g_subprocess_get_identifier(f->app) == NULL)
            g_error("einsora-app exited before \"%s\": %s", needle, err);
        if (g_get_monotonic_time() > deadline)
            g_error("einsora-app printed no \"%s\" in %d s: %s", needle, WAIT_SECONDS, err);
        while (g_main_context_iteration(NULL, FALSE))
            ;
        g_usleep(20 * 1000);
    }
}

static gchar *
read_maps(Fixture *f)
{
    g_autofree gchar *path = g_strdup_printf("/proc/%s/maps", f->pid);
    g_autoptr(GError) error = NULL;
    gchar *maps = NULL;

    g_assert_true(g_file_get_contents(path, &maps, NULL, &error));
    g_assert_no_error(error);
    return maps;
}

static gboolean
maps_webkit(const char *maps)
{
    for (guint i = 0; i < G_N_ELEMENTS(webkit_libraries); i++)
        if (strstr(maps, webkit_libraries[i]) != NULL)
            return TRUE;
    return FALSE;
}

/* As the tray and notifications ask: app.open-workload over D-Bus. */
static void
open_workload(const char *id)
{
    g_autoptr(GDBusConnection) bus = NULL;
    g_autoptr(GDBusActionGroup) actions = NULL;
    g_autoptr(GError) error = NULL;

    bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    g_assert_no_error(error);
    actions = g_dbus_action_group_get(bus, "dev.einsora.Einsora", "/dev/einsora/Einsora");
    g_action_group_activate_action(G_ACTION_GROUP(actions), "open-workload",
                                   g_variant_new_string(id));
    g_dbus_connection_flush_sync(bus, NULL, &error);
    g_assert_no_error(error);
}

static void
test_webkit_on_first_notebook_window(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = create_running_notebook(f);
    g_autofree gchar *maps = NULL;
    gint64 deadline;

    start_app(f, NULL);
    /* Drawn, the list read and shown: all a start does. */
    wait_for_text(f, f->stdout_path, "list-frame");
    maps = read_maps(f);
    /* The proof that the read means something: GTK is there. */
    g_assert_nonnull(strstr(maps, "libgtk-4.so"));
    for (guint i = 0; i < G_N_ELEMENTS(webkit_libraries); i++)
        if (strstr(maps, webkit_libraries[i]) != NULL)
            g_error("%s is mapped at start, before any notebook window", webkit_libraries[i]);
    g_assert_null(strstr(maps, NOTEBOOK_LIBRARY));
    /* Unless this loaded machine was slow enough for the spinner. */
    if (strstr(maps, SVG_LIBRARY) != NULL) {
        g_autofree gchar *out = NULL;

        g_assert_true(g_file_get_contents(f->stdout_path, &out, NULL, NULL));
        if (strstr(out, "timing: spinner") == NULL)
            g_error("%s is mapped at start, with no spinner shown", SVG_LIBRARY);
        g_test_message("the spinner was shown: %s is mapped", SVG_LIBRARY);
    }

    open_workload(id);

    deadline = g_get_monotonic_time() + WAIT_SECONDS * G_USEC_PER_SEC;
    for (;;) {
        g_free(maps);
        maps = read_maps(f);
        if (maps_webkit(maps) && strstr(maps, NOTEBOOK_LIBRARY) != NULL)
            break;
        if (g_subprocess_get_identifier(f->app) == NULL)
            g_error("einsora-app exited while opening the notebook window");
        if (g_get_monotonic_time() > deadline)
            g_error("no WebKit in einsora-app %d s after app.open-workload", WAIT_SECONDS);
        while (g_main_context_iteration(NULL, FALSE))
            ;
        g_usleep(50 * 1000);
    }
    for (guint i = 0; i < G_N_ELEMENTS(webkit_libraries); i++)
        g_assert_nonnull(strstr(maps, webkit_libraries[i]));
}

/* A broken install (no library where it should be): the app says so
 * and goes on, and WebKit stays out. */
static void
test_notebook_library_missing(Fixture *f, gconstpointer data)
{
    g_autofree gchar *id = create_running_notebook(f);
    g_autofree gchar *empty_dir = g_build_filename(f->daemon->dir, "no-modules", NULL);
    g_autofree gchar *maps = NULL;

    g_assert_cmpint(g_mkdir(empty_dir, 0700), ==, 0);
    start_app(f, empty_dir);
    wait_for_text(f, f->stdout_path, "list-frame");
    open_workload(id);
    wait_for_text(f, f->stderr_path, "no notebook window: Notebook windows can't open");
    g_assert_nonnull(g_subprocess_get_identifier(f->app));
    maps = read_maps(f);
    g_assert_false(maps_webkit(maps));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/app/launch/webkit-on-first-notebook-window", Fixture, NULL, fixture_set_up,
               test_webkit_on_first_notebook_window, fixture_tear_down);
    g_test_add("/app/launch/notebook-library-missing", Fixture, NULL, fixture_set_up,
               test_notebook_library_missing, fixture_tear_down);
    return g_test_run();
}
