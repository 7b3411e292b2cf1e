/* What an agent sends on every Sync: the status of every workload it has,
 * the desired-state generation it last applied, its inventory when that
 * changed, and its version and clock (docs/adr/0057). */
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
    /* Both optional, since agents before them never sent them: the
     * agent's build (at most EINSORA_PROTOCOL_MAX_AGENT_VERSION bytes of
     * printable ASCII, no spaces) and its clock when it sent the report
     * (a fixed-width timestamp, einsora-timestamp.h). */
    gchar *agent_version;
    gchar *sent_at;
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
