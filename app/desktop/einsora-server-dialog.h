/* "Connect to a Server…": a Lab daemon's address and API token. Connect
 * checks the address (http or https, with a host), keeps the token in
 * EinsoraTokenStore (left empty: the one kept already), sets the
 * daemon-url setting and activates app.reconnect. Use This Machine
 * clears daemon-url (kept tokens stay) and reconnects.
 * docs/adr/0021-desktop-app.md. */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_SERVER_DIALOG (einsora_server_dialog_get_type())
G_DECLARE_FINAL_TYPE(EinsoraServerDialog, einsora_server_dialog, EINSORA, SERVER_DIALOG, AdwWindow)

/* @settings: the app's (dev.einsora.Einsora). The dialog joins @parent's
 * application, whose "reconnect" action it activates. */
EinsoraServerDialog *einsora_server_dialog_new(GtkWindow *parent, GSettings *settings);
/* What a person would type (tests). */
void einsora_server_dialog_set_url(EinsoraServerDialog *self, const char *url);
void einsora_server_dialog_set_token(EinsoraServerDialog *self, const char *token);
/* (nullable) The error shown, if any. */
const char *einsora_server_dialog_get_error(EinsoraServerDialog *self);

G_END_DECLS
