/* What an agent sends on every Sync: the status of every workload it has,
 * the desired-state generation it last applied, its inventory when that
 * changed, and its version and clock (docs/adr/0057). */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-inventory.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

/* A status change a networked agent kept in its outbox until the hub
 * acknowledges it (a desired state's replayed_through), replayed in the
 * order it happened: @seq only grows. */
typedef struct {
    gint64 seq;
    EinsoraWorkloadStatus *status; /* owned */
} EinsoraReplayedStatus;

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
    /* EinsoraReplayedStatus, owned, oldest first, at most
     * EINSORA_PROTOCOL_MAX_REPLAY; empty from the in-process agent,
     * which has no outbox (docs/adr/0058). */
    GPtrArray *replay;
    /* The agent opens tunnel streams when a desired state asks
     * (open_tunnels, docs/adr/0059): only then does the hub ask. */
    gboolean tunnels;
} EinsoraSyncReport;

#define EINSORA_TYPE_SYNC_REPORT (einsora_sync_report_get_type())
GType einsora_sync_report_get_type(void);

EinsoraSyncReport *einsora_sync_report_new(void);
EinsoraSyncReport *einsora_sync_report_copy(const EinsoraSyncReport *report);
void einsora_sync_report_free(EinsoraSyncReport *report);
/* Adds a copy of @status as the change numbered @seq. */
void einsora_sync_report_add_replay(EinsoraSyncReport *report, gint64 seq,
                                    const EinsoraWorkloadStatus *status);

JsonNode *einsora_sync_report_to_json(const EinsoraSyncReport *report);
EinsoraSyncReport *einsora_sync_report_from_json(JsonNode *node, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraSyncReport, einsora_sync_report_free)

G_END_DECLS
