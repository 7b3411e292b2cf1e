/* The main window's Machines page: the caller's machines (GET
 * /v1/machines), each an EinsoraMachineRow, "Add a Machine…"
 * (app.add-machine) and, for an enrolled one, Revoke… behind a
 * confirmation (then app.revoke-machine). The application reads the
 * list; the view shows it and keeps its rows as the list changes. */
#pragma once

#include <adwaita.h>
#include <json-glib/json-glib.h>

#include "einsora-machine-row.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_MACHINES_VIEW (einsora_machines_view_get_type())
G_DECLARE_FINAL_TYPE(EinsoraMachinesView, einsora_machines_view, EINSORA, MACHINES_VIEW, GtkWidget)

GtkWidget *einsora_machines_view_new(void);
/* @machines: GET /v1/machines's "machines", in its order. */
void einsora_machines_view_set_machines(EinsoraMachinesView *self, JsonArray *machines);
/* The list couldn't be read: said above the rows last shown. */
void einsora_machines_view_set_error(EinsoraMachinesView *self, const char *message);
const char *einsora_machines_view_get_error(EinsoraMachinesView *self);

guint einsora_machines_view_get_n_machines(EinsoraMachinesView *self);
/* (nullable): the row named @name, or of the machine @id. */
EinsoraMachineRow *einsora_machines_view_find_row(EinsoraMachinesView *self, const char *name);
EinsoraMachineRow *einsora_machines_view_lookup_row(EinsoraMachinesView *self, const char *id);

G_END_DECLS
