/* "Add a Machine…": an optional name, then the one command that enrols
 * another computer of the user's as a machine of this server (POST
 * /v1/machines/enrolments, docs/adr/0055), shown once, selectable, with
 * Copy; it works once, before the time it says (within the hour). The
 * server's refusals (a bad name, a daemon without TLS) are said in the
 * dialog. */
#pragma once

#include <adwaita.h>

#include "einsora-client.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_ADD_MACHINE_DIALOG (einsora_add_machine_dialog_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAddMachineDialog, einsora_add_machine_dialog, EINSORA,
                     ADD_MACHINE_DIALOG, AdwWindow)

EinsoraAddMachineDialog *einsora_add_machine_dialog_new(GtkWindow *parent, EinsoraClient *client);
/* What a person would type (tests). */
void einsora_add_machine_dialog_set_name(EinsoraAddMachineDialog *self, const char *name);
/* (nullable) The error shown, if any. */
const char *einsora_add_machine_dialog_get_error(EinsoraAddMachineDialog *self);
/* (nullable) The command shown, once the server gave one. */
const char *einsora_add_machine_dialog_get_command(EinsoraAddMachineDialog *self);
/* What the dialog says of it: "…before 15:04…". */
const char *einsora_add_machine_dialog_get_note(EinsoraAddMachineDialog *self);

G_END_DECLS
