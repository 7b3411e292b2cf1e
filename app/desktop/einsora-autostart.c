#define G_LOG_DOMAIN "einsora-app"

#include "einsora-autostart.h"

#include <glib/gi18n.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define PORTAL_NAME "org.freedesktop.portal.Desktop"
#define PORTAL_PATH "/org/freedesktop/portal/desktop"
#define BACKGROUND_INTERFACE "org.freedesktop.portal.Background"
#define REQUEST_INTERFACE "org.freedesktop.portal.Request"
/* What an Exec argument may hold unquoted. */
#define SAFE_EXEC_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=+,:@"

struct _EinsoraAutostart {
    GObject parent_instance;
    GDBusConnection *bus; /* (nullable) */
    gchar *app_id;
    GStrv commandline;
    guint next_token;
    gboolean use_portal;
};

G_DEFINE_FINAL_TYPE(EinsoraAutostart, einsora_autostart, G_TYPE_OBJECT)
G_DEFINE_QUARK(einsora - autostart - error - quark, einsora_autostart_error)

typedef struct {
    gboolean enabled;
    gchar *request_path;
    guint response_signal;
} Request;

static void
request_unsubscribe(GTask *task)
{
    EinsoraAutostart *self = g_task_get_source_object(task);
    Request *request = g_task_get_task_data(task);

    if (request->response_signal != 0)
        g_dbus_connection_signal_unsubscribe(self->bus, request->response_signal);
    request->response_signal = 0;
}

static void
request_free(Request *request)
{
    g_free(request->request_path);
    g_free(request);
}

/* ---- the autostart file, where there is no portal ------------------- */

static gchar *
file_path(EinsoraAutostart *self)
{
    g_autofree gchar *name = g_strconcat(self->app_id, ".desktop", NULL);

    return g_build_filename(g_get_user_config_dir(), "autostart", name, NULL);
}

static gboolean
write_file(EinsoraAutostart *self, GError **error)
{
    g_autofree gchar *path = file_path(self);
    g_autofree gchar *dir = g_path_get_dirname(path);
    g_autoptr(GString) exec = g_string_new(NULL);
    g_autoptr(GKeyFile) file = g_key_file_new();
    g_autofree gchar *data = NULL;
    gsize length = 0;

    /* Quoted as the Desktop Entry spec's Exec asks, where needed. */
    for (guint i = 0; self->commandline[i] != NULL; i++) {
        const char *arg = self->commandline[i];

        if (i > 0)
            g_string_append_c(exec, ' ');
        if (*arg != '\0' && strspn(arg, SAFE_EXEC_CHARS) == strlen(arg)) {
            g_string_append(exec, arg);
            continue;
        }
        g_string_append_c(exec, '"');
        for (const char *c = arg; *c != '\0'; c++) {
            if (strchr("\"`$\\", *c) != NULL)
                g_string_append_c(exec, '\\');
            g_string_append_c(exec, *c);
        }
        g_string_append_c(exec, '"');
    }
    g_key_file_set_string(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_TYPE,
                          G_KEY_FILE_DESKTOP_TYPE_APPLICATION);
    g_key_file_set_string(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_NAME,
                          _("Einsora"));
    g_key_file_set_string(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_COMMENT,
                          _("Keeps Einsora running in the background from login"));
    g_key_file_set_string(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_EXEC, exec->str);
    g_key_file_set_string(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_ICON,
                          self->app_id);
    g_key_file_set_boolean(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_TERMINAL, FALSE);
    /* Not a launcher of its own in menus: the app's own entry is that. */
    g_key_file_set_boolean(file, G_KEY_FILE_DESKTOP_GROUP, G_KEY_FILE_DESKTOP_KEY_NO_DISPLAY, TRUE);
    g_key_file_set_boolean(file, G_KEY_FILE_DESKTOP_GROUP, "X-GNOME-Autostart-enabled", TRUE);
    data = g_key_file_to_data(file, &length, NULL);
    if (g_mkdir_with_parents(dir, 0700) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), _("Can't create %s: %s"), dir,
                    g_strerror(saved));
        return FALSE;
    }
    if (!g_file_set_contents(path, data, (gssize)length, error))
        return FALSE;
    g_message("autostart: wrote %s", path);
    return TRUE;
}

static gboolean
remove_file(EinsoraAutostart *self, GError **error)
{
    g_autofree gchar *path = file_path(self);

    if (g_unlink(path) != 0 && errno != ENOENT) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved), _("Can't remove %s: %s"), path,
                    g_strerror(saved));
        return FALSE;
    }
    return TRUE;
}

/* Done without the portal: the file, or its removal. */
static void
finish_with_file(GTask *task)
{
    EinsoraAutostart *self = g_task_get_source_object(task);
    Request *request = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    gboolean done = request->enabled ? write_file(self, &error) : remove_file(self, &error);

    if (done)
        g_task_return_boolean(task, TRUE);
    else
        g_task_return_error(task, g_steal_pointer(&error));
}

/* ---- the portal ---------------------------------------------------- */

/* The errors that say there is no Background portal to ask. */
static gboolean
no_portal(const GError *error)
{
    return g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
           g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
           g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD) ||
           g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_INTERFACE) ||
           g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_OBJECT);
}

static void
on_response(GDBusConnection *bus, const char *sender, const char *object_path,
            const char *interface_name, const char *signal_name, GVariant *parameters,
            gpointer user_data)
{
    GTask *task = user_data;
    Request *request = g_task_get_task_data(task);
    g_autoptr(GVariant) results = NULL;
    guint32 response = 2;
    gboolean autostart = FALSE;

    if (g_strcmp0(object_path, request->request_path) != 0 ||
        !g_variant_is_of_type(parameters, G_VARIANT_TYPE("(ua{sv})")))
        return;
    g_object_ref(task);
    request_unsubscribe(task);
    g_variant_get(parameters, "(u@a{sv})", &response, &results);
    if (!g_variant_lookup(results, "autostart", "b", &autostart))
        autostart = FALSE;
    g_debug("autostart: the portal answered %u, autostart %d", response, autostart);
    if (!request->enabled) {
        /* Whatever it says, the fallback file (of an earlier portal-less
         * session) goes too. */
        finish_with_file(task);
    } else if (response == 0 && autostart) {
        g_task_return_boolean(task, TRUE);
    } else if (response == 1 || response == 0) {
        g_task_return_new_error(task, EINSORA_AUTOSTART_ERROR, EINSORA_AUTOSTART_ERROR_REFUSED,
                                _("The system did not allow Einsora to start at login."));
    } else {
        g_task_return_new_error(task, EINSORA_AUTOSTART_ERROR, EINSORA_AUTOSTART_ERROR_FAILED,
                                _("Asking the system to start Einsora at login failed."));
    }
    g_object_unref(task);
}

static void
subscribe(GTask *task, const char *path)
{
    EinsoraAutostart *self = g_task_get_source_object(task);
    Request *request = g_task_get_task_data(task);

    if (request->response_signal != 0)
        g_dbus_connection_signal_unsubscribe(self->bus, request->response_signal);
    g_free(request->request_path);
    request->request_path = g_strdup(path);
    request->response_signal = g_dbus_connection_signal_subscribe(
        self->bus, PORTAL_NAME, REQUEST_INTERFACE, "Response", path, NULL, G_DBUS_SIGNAL_FLAGS_NONE,
        on_response, g_object_ref(task), g_object_unref);
}

static void
on_request_background(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Request *request = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GVariant) reply =
        g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);
    const char *handle = NULL;

    if (g_task_return_error_if_cancelled(task)) {
        request_unsubscribe(task);
        return;
    }
    if (reply == NULL) {
        request_unsubscribe(task);
        if (no_portal(error)) {
            g_message("autostart: no Background portal (%s); using the autostart file",
                      error->message);
            finish_with_file(task);
        } else {
            g_task_return_error(task, g_steal_pointer(&error));
        }
        return;
    }
    /* Portals older than the handle_token convention answer another
     * path: listen there. */
    g_variant_get(reply, "(&o)", &handle);
    if (g_strcmp0(handle, request->request_path) != 0 && request->response_signal != 0)
        subscribe(task, handle);
}

void
einsora_autostart_set_enabled_async(EinsoraAutostart *self, gboolean enabled,
                                    const char *parent_window, const char *reason,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data)
{
    g_autoptr(GTask) task = NULL;
    Request *request;
    g_autofree gchar *token = NULL;
    g_autofree gchar *sender = NULL;
    g_autofree gchar *path = NULL;
    GVariantBuilder options;

    g_return_if_fail(EINSORA_IS_AUTOSTART(self));
    task = g_task_new(self, cancellable, callback, user_data);
    g_task_set_source_tag(task, einsora_autostart_set_enabled_async);
    request = g_new0(Request, 1);
    request->enabled = enabled;
    g_task_set_task_data(task, request, (GDestroyNotify)request_free);
    if (!self->use_portal || self->bus == NULL ||
        g_dbus_connection_get_unique_name(self->bus) == NULL) {
        finish_with_file(task);
        return;
    }
    /* The Request's path is known before the call: listen first, so an
     * answer that comes at once isn't missed. */
    token = g_strdup_printf("einsora%u_%u", (guint)getpid(), ++self->next_token);
    sender = g_strdup(g_dbus_connection_get_unique_name(self->bus) + 1);
    g_strdelimit(sender, ".", '_');
    path = g_strdup_printf(PORTAL_PATH "/request/%s/%s", sender, token);
    subscribe(task, path);
    g_variant_builder_init(&options, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add(&options, "{sv}", "handle_token", g_variant_new_string(token));
    g_variant_builder_add(&options, "{sv}", "reason",
                          g_variant_new_string(reason != NULL ? reason : ""));
    g_variant_builder_add(&options, "{sv}", "autostart", g_variant_new_boolean(enabled));
    g_variant_builder_add(&options, "{sv}", "commandline",
                          g_variant_new_strv((const char *const *)self->commandline, -1));
    g_variant_builder_add(&options, "{sv}", "dbus-activatable", g_variant_new_boolean(FALSE));
    g_dbus_connection_call(
        self->bus, PORTAL_NAME, PORTAL_PATH, BACKGROUND_INTERFACE, "RequestBackground",
        g_variant_new("(sa{sv})", parent_window != NULL ? parent_window : "", &options),
        G_VARIANT_TYPE("(o)"), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, on_request_background,
        g_object_ref(task));
}

gboolean
einsora_autostart_set_enabled_finish(EinsoraAutostart *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}

gchar *
einsora_autostart_dup_file_path(EinsoraAutostart *self)
{
    g_return_val_if_fail(EINSORA_IS_AUTOSTART(self), NULL);
    return file_path(self);
}

static void
einsora_autostart_finalize(GObject *object)
{
    EinsoraAutostart *self = EINSORA_AUTOSTART(object);

    g_clear_object(&self->bus);
    g_free(self->app_id);
    g_strfreev(self->commandline);
    G_OBJECT_CLASS(einsora_autostart_parent_class)->finalize(object);
}

static void
einsora_autostart_class_init(EinsoraAutostartClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_autostart_finalize;
}

static void
einsora_autostart_init(EinsoraAutostart *self)
{
}

/* The portal for a sandboxed app only: for one installed on the host,
 * portals up to Debian 12's (1.16) know no application ID, and their
 * autostart entry would be ".desktop" running "flatpak run". The file
 * then, as other host apps do. EINSORA_AUTOSTART=portal|file decides
 * (tests). */
static gboolean
wants_portal(void)
{
    const char *forced = g_getenv("EINSORA_AUTOSTART");

    if (g_strcmp0(forced, "portal") == 0)
        return TRUE;
    if (g_strcmp0(forced, "file") == 0)
        return FALSE;
    return g_file_test("/.flatpak-info", G_FILE_TEST_EXISTS) || g_getenv("SNAP") != NULL;
}

EinsoraAutostart *
einsora_autostart_new(GDBusConnection *bus, const char *app_id, const char *const *commandline)
{
    EinsoraAutostart *self;

    g_return_val_if_fail(bus == NULL || G_IS_DBUS_CONNECTION(bus), NULL);
    g_return_val_if_fail(app_id != NULL, NULL);
    g_return_val_if_fail(commandline != NULL && commandline[0] != NULL, NULL);
    self = g_object_new(EINSORA_TYPE_AUTOSTART, NULL);
    self->bus = bus != NULL ? g_object_ref(bus) : NULL;
    self->app_id = g_strdup(app_id);
    self->commandline = g_strdupv((gchar **)commandline);
    self->use_portal = wants_portal();
    return self;
}
