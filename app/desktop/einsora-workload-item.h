/* One workload as the app shows it: the fields of the API's Workload
 * object as properties, so rows and pages bind to them and update when
 * the daemon says it changed. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_WORKLOAD_ITEM (einsora_workload_item_get_type())
G_DECLARE_FINAL_TYPE(EinsoraWorkloadItem, einsora_workload_item, EINSORA, WORKLOAD_ITEM, GObject)

/* NULL when @workload has no string "id". */
EinsoraWorkloadItem *einsora_workload_item_new(JsonObject *workload);
/* Takes the fields of a newer copy of the same workload; notifies only
 * the properties that changed. FALSE (and nothing changes) if @workload
 * is another workload's or has an older version. */
gboolean einsora_workload_item_update(EinsoraWorkloadItem *self, JsonObject *workload);

const char *einsora_workload_item_get_id(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_name(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_kind(EinsoraWorkloadItem *self);
/* An endpoint's model name; NULL for other kinds, and where the daemon
 * said none. */
const char *einsora_workload_item_get_model(EinsoraWorkloadItem *self);
gboolean einsora_workload_item_is_endpoint(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_state(EinsoraWorkloadItem *self);
/* The class it runs with (placed) or else the one asked for. */
const char *einsora_workload_item_get_class(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_image(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_region(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_machine_id(EinsoraWorkloadItem *self);
/* The machine's name, when the app knows it (from GET /v1/machines). */
const char *einsora_workload_item_get_machine_name(EinsoraWorkloadItem *self);
void einsora_workload_item_set_machine_name(EinsoraWorkloadItem *self, const char *name);
const char *einsora_workload_item_get_driver(EinsoraWorkloadItem *self);
const char *einsora_workload_item_get_created_at(EinsoraWorkloadItem *self);
gint64 einsora_workload_item_get_version(EinsoraWorkloadItem *self);

G_END_DECLS
