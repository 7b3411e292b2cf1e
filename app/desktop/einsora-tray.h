/* The app's tray icon on Linux: a StatusNotifierItem and its menu
 * (com.canonical.dbusmenu), exported with GIO alone, so no GTK3 library
 * and no display. It follows the workload list: how many run, each
 * running notebook to open, the window, quit. Hosts find it through an
 * org.kde.StatusNotifierWatcher; "available" says whether one shows it,
 * which is when closing the window may keep the app running. It
 * registers by a bus name of its own, org.kde.StatusNotifierItem-PID-N,
 * which goes with the object: watchers then drop the item ("Show in the
 * tray" off). docs/adr/0020-tray.md, 0066. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_TRAY (einsora_tray_get_type())
G_DECLARE_FINAL_TYPE(EinsoraTray, einsora_tray, EINSORA, TRAY, GObject)

/* @bus: a message bus connection (the session bus); @workloads: a list
 * of EinsoraWorkloadItem; @icon_name: the themed icon the host shows.
 * Signals: "open-workload" (the workload's ID), "show-window", "quit". */
EinsoraTray *einsora_tray_new(GDBusConnection *bus, GListModel *workloads, const char *icon_name);
/* Exports the item at /StatusNotifierItem and its menu at /MenuBar, and
 * registers with a StatusNotifierWatcher now and whenever one appears.
 * Fails only when the objects cannot be exported. */
gboolean einsora_tray_start(EinsoraTray *self, GError **error);
/* TRUE while a watcher holds the item and says a host shows it. */
gboolean einsora_tray_is_available(EinsoraTray *self);

G_END_DECLS
