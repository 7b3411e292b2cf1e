/* One row of a workload's timeline: a transition (from != to), a note
 * (from == to), or its creation (no from state). Append-only. */
#pragma once

#include <glib-object.h>

#include "einsora-workload-state.h"

G_BEGIN_DECLS

typedef struct {
    /* Where it stands in the store's one, global, increasing sequence;
     * 0 until the store has it (what the change feed's IDs are). */
    gint64 seq;
    gchar *id;
    gchar *tenant_id;
    gchar *workload_id;
    gboolean has_from_state; /* FALSE only for the creation row */
    EinsoraWorkloadState from_state;
    EinsoraWorkloadState to_state;
    gchar *reason; /* cleaned, from the fixed vocabulary */
    gint64 attempt;
    /* The class the workload was placed on after this step (what usage
     * is accounted by); NULL while unplaced, and in rows written before
     * the store recorded it. */
    gchar *placed_class;
    gchar *created_at;
} EinsoraWorkloadEvent;

#define EINSORA_TYPE_WORKLOAD_EVENT (einsora_workload_event_get_type())
GType einsora_workload_event_get_type(void);

EinsoraWorkloadEvent *einsora_workload_event_new(void);
EinsoraWorkloadEvent *einsora_workload_event_copy(const EinsoraWorkloadEvent *event);
void einsora_workload_event_free(EinsoraWorkloadEvent *event);
gboolean einsora_workload_event_is_note(const EinsoraWorkloadEvent *event);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraWorkloadEvent, einsora_workload_event_free)

G_END_DECLS
