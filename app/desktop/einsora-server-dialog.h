/* "Connect to a Server…": a Lab daemon's address, and either an email and
 * a password or an API token. Connect checks the address (http or https,
 * with a host); a password signs in for a token of this computer's own
 * (einsora_client_sign_in, in a thread; a password an admin reset asks
 * for a new one, an untrusted certificate may be trusted there); the
 * token, signed in for or typed, is kept in EinsoraTokenStore (none
 * given: the one kept already); then it sets the daemon-url setting and
 * activates app.reconnect. Use This Machine clears daemon-url (kept
 * tokens stay) and reconnects. docs/adr/0021-desktop-app.md, 0054. */
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
void einsora_server_dialog_set_email(EinsoraServerDialog *self, const char *email);
void einsora_server_dialog_set_password(EinsoraServerDialog *self, const char *password);
/* The New Password row's, shown once the server asks for one. */
void einsora_server_dialog_set_new_password(EinsoraServerDialog *self, const char *new_password);
/* (nullable) The error shown, if any. */
const char *einsora_server_dialog_get_error(EinsoraServerDialog *self);

G_END_DECLS
