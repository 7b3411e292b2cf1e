/* What an agent sends on every Sync: the status of every workload it has,
 * the desired-state generation it last applied, and its inventory when
 * that changed. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-inventory.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

typedef struct {
    gchar *machine_id;
    gint64 applied_generation;
    GPtrArray *statuses;         /* EinsoraWorkloadStatus, owned */
    EinsoraInventory *inventory; /* NULL: unchanged since the last report */
} EinsoraSyncReport;

#define EINSORA_TYPE_SYNC_REPORT (einsora_sync_report_get_type())
GType einsora_sync_report_get_type(void);

EinsoraSyncReport *einsora_sync_report_new(void);
EinsoraSyncReport *einsora_sync_report_copy(const EinsoraSyncReport *report);
void einsora_sync_report_free(EinsoraSyncReport *report);

JsonNode *einsora_sync_report_to_json(const EinsoraSyncReport *report);
EinsoraSyncReport *einsora_sync_report_from_json(JsonNode *node, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraSyncReport, einsora_sync_report_free)

G_END_DECLS
