/* One machine on the Machines page: its name, whether it is online (and
 * takes new workloads), its agent's last sync and version, a clock off
 * by more than the server allows, its certificate's expiry, what guests
 * hold when it is shared, and Revoke… for a machine that enrolled over
 * the network. Updated in place from GET /v1/machines's object. */
#pragma once

#include <adwaita.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_MACHINE_ROW (einsora_machine_row_get_type())
G_DECLARE_FINAL_TYPE(EinsoraMachineRow, einsora_machine_row, EINSORA, MACHINE_ROW, AdwActionRow)

GtkWidget *einsora_machine_row_new(void);
/* @machine: one of GET /v1/machines's; ages are read against @now. */
void einsora_machine_row_update(EinsoraMachineRow *self, JsonObject *machine, GDateTime *now);
const char *einsora_machine_row_get_machine_id(EinsoraMachineRow *self);
/* The badge: "Online", "Not Placeable" or "Offline". */
const char *einsora_machine_row_get_status(EinsoraMachineRow *self);
/* Whether it offers Revoke… (it has an agent certificate). */
gboolean einsora_machine_row_can_revoke(EinsoraMachineRow *self);

G_END_DECLS
