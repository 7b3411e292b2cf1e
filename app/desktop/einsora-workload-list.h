/* The tenant's workloads as a list model, newest first, kept in step
 * with the daemon: a whole list after (re)connecting, then one workload
 * at a time as the event feed says it changed. Items keep their identity
 * across updates, so rows and pages bound to them follow along. */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "einsora-workload-item.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_WORKLOAD_LIST (einsora_workload_list_get_type())
G_DECLARE_FINAL_TYPE(EinsoraWorkloadList, einsora_workload_list, EINSORA, WORKLOAD_LIST, GObject)

EinsoraWorkloadList *einsora_workload_list_new(void);
/* @workloads: (nullable): the API's list (objects with an "id"); NULL
 * empties the list. Deleted ones and entries without an id are left out. */
void einsora_workload_list_replace(EinsoraWorkloadList *self, JsonArray *workloads);
/* Adds or updates one workload; a deleted one leaves the list. Returns
 * its item, or NULL when it isn't (or is no longer) in the list. */
EinsoraWorkloadItem *einsora_workload_list_upsert(EinsoraWorkloadList *self, JsonObject *workload);
/* (transfer none) (nullable) */
EinsoraWorkloadItem *einsora_workload_list_lookup(EinsoraWorkloadList *self, const char *id);
guint einsora_workload_list_count_state(EinsoraWorkloadList *self, const char *state);
/* @machines: the API's machine objects; each item then knows its
 * machine's name, now and as it moves. */
void einsora_workload_list_set_machines(EinsoraWorkloadList *self, JsonArray *machines);

G_END_DECLS
