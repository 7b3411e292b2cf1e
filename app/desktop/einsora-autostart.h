/* "Start at login": in a sandbox (Flatpak, Snap) the XDG Background
 * portal where one answers, else (no portal, or installed on the host)
 * an autostart desktop file in $XDG_CONFIG_HOME/autostart. Either way the
 * app starts with @commandline (einsora-app --background: in the tray, no
 * window). docs/adr/0066-start-at-login-and-tray.md. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_AUTOSTART_ERROR (einsora_autostart_error_quark())
typedef enum {
    /* The portal (the user, or the desktop's policy) said no. */
    EINSORA_AUTOSTART_ERROR_REFUSED,
    /* The portal's answer couldn't be read. */
    EINSORA_AUTOSTART_ERROR_FAILED,
} EinsoraAutostartError;
GQuark einsora_autostart_error_quark(void);

#define EINSORA_TYPE_AUTOSTART (einsora_autostart_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAutostart, einsora_autostart, EINSORA, AUTOSTART, GObject)

/* @bus: (nullable) the session bus, where the portal is; @app_id names
 * the autostart file; @commandline: what starts the app at login, its
 * first word the program. */
EinsoraAutostart *einsora_autostart_new(GDBusConnection *bus, const char *app_id,
                                        const char *const *commandline);
/* Asks for (or gives up) starting at login. @parent_window: the portal's
 * "x11:XID" or "" when unknown; @reason: shown by the portal's dialog.
 * @cancellable stops the call, not a portal dialog already shown. */
void einsora_autostart_set_enabled_async(EinsoraAutostart *self, gboolean enabled,
                                         const char *parent_window, const char *reason,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data);
/* TRUE when done: by the portal, or by the file when there is no portal. */
gboolean einsora_autostart_set_enabled_finish(EinsoraAutostart *self, GAsyncResult *result,
                                              GError **error);
/* (transfer full) The autostart file this falls back to. */
gchar *einsora_autostart_dup_file_path(EinsoraAutostart *self);

G_END_DECLS
