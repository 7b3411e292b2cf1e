/* The new-workload dialog: kind, class, image and region from the
 * installation's catalog (GET /v1/catalog), with the class's capacity and
 * the tenant's GPU quota shown; for an endpoint, a model from the model
 * store (GET /v1/model-store) instead of an image. Create sends the request (with an
 * Idempotency-Key, so a retry can't create two) and shows the API's own
 * message if it is refused; on success it emits "created" and closes. */
#pragma once

#include <adwaita.h>
#include <json-glib/json-glib.h>

#include "einsora-client.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_NEW_WORKLOAD_DIALOG (einsora_new_workload_dialog_get_type())
G_DECLARE_FINAL_TYPE(EinsoraNewWorkloadDialog, einsora_new_workload_dialog, EINSORA,
                     NEW_WORKLOAD_DIALOG, AdwWindow)

/* @catalog: the API's catalog object. */
EinsoraNewWorkloadDialog *einsora_new_workload_dialog_new(GtkWindow *parent, EinsoraClient *client,
                                                          JsonObject *catalog);
/* Choose by name, as a person would in the combo rows; FALSE if that
 * choice isn't offered (for the current kind and class). */
gboolean einsora_new_workload_dialog_select(EinsoraNewWorkloadDialog *self, const char *row,
                                            const char *name);
/* The names @row offers now ("kind", "class", "image", "model",
 * "region"). */
gchar **einsora_new_workload_dialog_get_choices(EinsoraNewWorkloadDialog *self, const char *row);
/* Whether the model store has answered (with its models or an error). */
gboolean einsora_new_workload_dialog_has_read_models(EinsoraNewWorkloadDialog *self);
/* What the Model row says under its title: the chosen model's size, or
 * why there is none to choose. */
const char *einsora_new_workload_dialog_get_model_text(EinsoraNewWorkloadDialog *self);
void einsora_new_workload_dialog_set_name(EinsoraNewWorkloadDialog *self, const char *name);
/* What the quota row says now. */
const char *einsora_new_workload_dialog_get_quota_text(EinsoraNewWorkloadDialog *self);
/* (nullable) The error shown, if any. */
const char *einsora_new_workload_dialog_get_error(EinsoraNewWorkloadDialog *self);

G_END_DECLS
