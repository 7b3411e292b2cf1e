#define G_LOG_DOMAIN "einsora-app"

#include "einsora-notebook-module.h"

#include <glib/gi18n.h>
#include <gmodule.h>

typedef GType (*GetTypeFunc)(void);
typedef GtkWindow *(*NewWindowFunc)(GtkApplication *application, const char *workload_id,
                                    const char *title, const char *url);
typedef const char *(*GetWorkloadIdFunc)(GtkWindow *window);
typedef void (*ToastFunc)(GtkWindow *window, const char *text);

/* The process's one copy: a GType can't be unregistered, so the library
 * stays once it is in. */
static struct {
    GModule *module;
    GType window_type;
    NewWindowFunc new_window;
    GetWorkloadIdFunc get_workload_id;
    ToastFunc toast;
} notebook;

static gboolean
find_symbol(GModule *module, const char *name, gpointer *symbol, GError **error)
{
    if (g_module_symbol(module, name, symbol) && *symbol != NULL)
        return TRUE;
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, _("%s has no %s."), g_module_name(module),
                name);
    return FALSE;
}

/* $EINSORA_APP_MODULE_DIR; else beside the program, where the build tree
 * has it (the installed program's directory has none); else where it was
 * installed. */
static gchar *
module_path(void)
{
    const char *dir = g_getenv("EINSORA_APP_MODULE_DIR");
    g_autofree gchar *program = g_file_read_link("/proc/self/exe", NULL);
    g_autofree gchar *beside = NULL;

    if (dir != NULL && *dir != '\0')
        return g_build_filename(dir, EINSORA_NOTEBOOK_MODULE, NULL);
    if (program != NULL) {
        g_autofree gchar *program_dir = g_path_get_dirname(program);

        beside = g_build_filename(program_dir, EINSORA_NOTEBOOK_MODULE, NULL);
        if (g_file_test(beside, G_FILE_TEST_IS_REGULAR))
            return g_steal_pointer(&beside);
    }
    return g_build_filename(EINSORA_MODULE_DIR, EINSORA_NOTEBOOK_MODULE, NULL);
}

gboolean
einsora_notebook_module_load(GError **error)
{
    g_autofree gchar *path = NULL;
    GModule *module;
    GetTypeFunc get_type = NULL;
    gpointer new_window = NULL;
    gpointer get_workload_id = NULL;
    gpointer toast = NULL;

    if (notebook.module != NULL)
        return TRUE;
    path = module_path();
    /* Local: its symbols (WebKit's among them) stay out of the app's
     * namespace; lazy: most of WebKit is never called. */
    module = g_module_open(path, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
    if (module == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, _("Notebook windows can't open: %s"),
                    g_module_error());
        return FALSE;
    }
    if (!find_symbol(module, "einsora_notebook_window_get_type", (gpointer *)&get_type, error) ||
        !find_symbol(module, "einsora_notebook_window_new", &new_window, error) ||
        !find_symbol(module, "einsora_notebook_window_get_workload_id", &get_workload_id, error) ||
        !find_symbol(module, "einsora_notebook_window_toast", &toast, error)) {
        g_prefix_error(error, "%s", _("Notebook windows can't open: "));
        g_module_close(module);
        return FALSE;
    }
    g_module_make_resident(module);
    notebook.module = module;
    notebook.window_type = get_type();
    notebook.new_window = (NewWindowFunc)new_window;
    notebook.get_workload_id = (GetWorkloadIdFunc)get_workload_id;
    notebook.toast = (ToastFunc)toast;
    g_debug("loaded %s", path);
    return TRUE;
}

gboolean
einsora_notebook_module_is_loaded(void)
{
    return notebook.module != NULL;
}

GtkWindow *
einsora_notebook_module_new_window(GtkApplication *application, const char *workload_id,
                                   const char *title, const char *url, GError **error)
{
    if (!einsora_notebook_module_load(error))
        return NULL;
    return notebook.new_window(application, workload_id, title, url);
}

const char *
einsora_notebook_module_get_workload_id(GtkWindow *window)
{
    if (notebook.module == NULL || !G_TYPE_CHECK_INSTANCE_TYPE(window, notebook.window_type))
        return NULL;
    return notebook.get_workload_id(window);
}

void
einsora_notebook_module_toast(GtkWindow *window, const char *text)
{
    if (notebook.module != NULL && G_TYPE_CHECK_INSTANCE_TYPE(window, notebook.window_type))
        notebook.toast(window, text);
}
