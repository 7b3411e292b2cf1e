/* einsora-daemon: wiring only. Settings come from EINSORA_* variables and
 * the matching options; a bad value stops the daemon at start with a
 * message naming the setting. */
#define G_LOG_DOMAIN "einsora-daemon"

#include <errno.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <glib.h>
#include <locale.h>
#include <stdlib.h>

#include "einsora-catalog.h"
#include "einsora-service.h"
#include "einsora-sqlite-store.h"
#include "einsora-timestamp.h"

#define DATABASE_NAME "einsora.db"

typedef struct {
    gchar *data_dir;
    gchar *catalog;
} EinsoraDaemonSettings;

static void
settings_clear(EinsoraDaemonSettings *settings)
{
    g_clear_pointer(&settings->data_dir, g_free);
    g_clear_pointer(&settings->catalog, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(EinsoraDaemonSettings, settings_clear)

/* An option wins over its variable; an empty value is a mistake, not a
 * request for the default. */
static gboolean
resolve_setting(gchar **value, const char *variable, const char *option, GError **error)
{
    const char *env = g_getenv(variable);

    if (*value == NULL && env != NULL)
        *value = g_strdup(env);
    if (*value != NULL && **value == '\0') {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "%s (%s) is set but empty",
                    variable, option);
        return FALSE;
    }
    return TRUE;
}

static gboolean
resolve_settings(EinsoraDaemonSettings *settings, GError **error)
{
    if (!resolve_setting(&settings->data_dir, "EINSORA_DATA_DIR", "--data-dir", error))
        return FALSE;
    if (!resolve_setting(&settings->catalog, "EINSORA_CATALOG", "--catalog", error))
        return FALSE;
    if (settings->data_dir == NULL)
        settings->data_dir = g_build_filename(g_get_user_data_dir(), "einsora", NULL);
    if (!g_path_is_absolute(settings->data_dir)) {
        gchar *absolute = g_canonicalize_filename(settings->data_dir, NULL);
        g_free(settings->data_dir);
        settings->data_dir = absolute;
    }
    return TRUE;
}

/* The data directory is private to this user: created 0700; an existing
 * one is checked by the store, which refuses one that others can write. */
static EinsoraSqliteStore *
open_store(const EinsoraDaemonSettings *settings, GError **error)
{
    g_autofree gchar *path = g_build_filename(settings->data_dir, DATABASE_NAME, NULL);
    g_autoptr(EinsoraSqliteStore) store = NULL;

    if (g_mkdir_with_parents(settings->data_dir, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                    "EINSORA_DATA_DIR (--data-dir): can't create %s: %s", settings->data_dir,
                    g_strerror(errno));
        return NULL;
    }
    store = einsora_sqlite_store_open(path, error);
    if (store == NULL) {
        g_prefix_error(error, "EINSORA_DATA_DIR (--data-dir): ");
        return NULL;
    }
    return g_steal_pointer(&store);
}

static gboolean
quit_on_signal(gpointer user_data)
{
    GMainLoop *loop = user_data;

    g_message("stopping");
    g_main_loop_quit(loop);
    return G_SOURCE_CONTINUE;
}

static int
run_migrate(const EinsoraDaemonSettings *settings)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = open_store(settings, &error);

    if (store == NULL || !einsora_sqlite_store_migrate(store, einsora_now_real(NULL), &error)) {
        g_printerr("einsora-daemon migrate: %s\n", error->message);
        return EXIT_FAILURE;
    }
    g_print("einsora-daemon migrate: %s is up to date\n", settings->data_dir);
    return EXIT_SUCCESS;
}

static int
run_daemon(const EinsoraDaemonSettings *settings)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog = NULL;
    g_autoptr(EinsoraSqliteStore) store = NULL;
    g_autoptr(EinsoraService) service = NULL;
    g_autoptr(GMainLoop) loop = NULL;

    /* Everything is checked before anything starts: nothing runs
     * half-configured. */
    catalog = einsora_catalog_load(settings->catalog, &error);
    if (catalog == NULL) {
        g_printerr("einsora-daemon: EINSORA_CATALOG (--catalog): %s\n", error->message);
        return EXIT_FAILURE;
    }
    store = open_store(settings, &error);
    if (store == NULL || !einsora_sqlite_store_migrate(store, einsora_now_real(NULL), &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    einsora_sqlite_store_set_clock(store, einsora_now_real, NULL);
    service = einsora_service_new(EINSORA_STORE(store), catalog, einsora_now_real, NULL);

    loop = g_main_loop_new(NULL, FALSE);
    g_unix_signal_add(SIGINT, quit_on_signal, loop);
    g_unix_signal_add(SIGTERM, quit_on_signal, loop);
    g_message("ready: data in %s, catalog %s", settings->data_dir,
              einsora_catalog_get_origin(catalog));
    g_main_loop_run(loop);
    return EXIT_SUCCESS;
}

int
main(int argc, char **argv)
{
    g_auto(EinsoraDaemonSettings) settings = {NULL, NULL};
    g_autoptr(GOptionContext) context = NULL;
    g_autoptr(GError) error = NULL;
    const GOptionEntry entries[] = {
        {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &settings.data_dir,
         "Where the database lives (EINSORA_DATA_DIR)", "DIR"},
        {"catalog", 0, 0, G_OPTION_ARG_FILENAME, &settings.catalog,
         "A catalog file that replaces the built-in one (EINSORA_CATALOG)", "FILE"},
        {NULL},
    };

    setlocale(LC_ALL, "");
    context = g_option_context_new("[migrate]");
    g_option_context_set_summary(context, "Runs Einsora: the store, the catalog and the service. "
                                          "\"migrate\" applies the database migrations and exits.");
    g_option_context_add_main_entries(context, entries, NULL);
    if (!g_option_context_parse(context, &argc, &argv, &error) ||
        !resolve_settings(&settings, &error)) {
        g_printerr("einsora-daemon: %s\n", error->message);
        return EXIT_FAILURE;
    }
    if (argc > 2 || (argc == 2 && g_strcmp0(argv[1], "migrate") != 0)) {
        g_printerr("einsora-daemon: unknown command \"%s\"; the only command is migrate\n",
                   argv[argc - 1]);
        return EXIT_FAILURE;
    }
    if (argc == 2)
        return run_migrate(&settings);
    return run_daemon(&settings);
}
