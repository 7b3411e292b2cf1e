/* Preferences (Ctrl+comma, the main menu): "Show in the tray" (the
 * keep-running-in-tray setting: the tray icon, and closing the window
 * keeps the app there) and "Start at login" (start-at-login, through
 * EinsoraAutostart; a refusal turns the switch back off and says so).
 * docs/adr/0066-start-at-login-and-tray.md. */
#pragma once

#include <adwaita.h>

#include "einsora-autostart.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_PREFERENCES_WINDOW (einsora_preferences_window_get_type())
G_DECLARE_FINAL_TYPE(EinsoraPreferencesWindow, einsora_preferences_window, EINSORA,
                     PREFERENCES_WINDOW, AdwPreferencesWindow)

/* @parent: (nullable); @settings: the app's (dev.einsora.Einsora). */
EinsoraPreferencesWindow *einsora_preferences_window_new(GtkWindow *parent, GSettings *settings,
                                                         EinsoraAutostart *autostart);
/* TRUE while "Start at login" waits for an answer (tests). */
gboolean einsora_preferences_window_is_busy(EinsoraPreferencesWindow *self);

G_END_DECLS
