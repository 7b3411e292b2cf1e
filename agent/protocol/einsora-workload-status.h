/* One workload's status as its agent reports it: a code from the fixed
 * vocabulary, about one attempt and mode, and the desired-state generation
 * the agent had applied when it saw it (so an old status never answers a
 * newer request). */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-status-code.h"
#include "einsora-workload-mode.h"

G_BEGIN_DECLS

typedef struct {
    gchar *workload_id;
    gint64 attempt;
    EinsoraWorkloadMode mode; /* the mode this status is about */
    EinsoraStatusCode code;
    gint64 applied_generation;
} EinsoraWorkloadStatus;

#define EINSORA_TYPE_WORKLOAD_STATUS (einsora_workload_status_get_type())
GType einsora_workload_status_get_type(void);

EinsoraWorkloadStatus *einsora_workload_status_new(void);
EinsoraWorkloadStatus *einsora_workload_status_copy(const EinsoraWorkloadStatus *status);
void einsora_workload_status_free(EinsoraWorkloadStatus *status);

JsonNode *einsora_workload_status_to_json(const EinsoraWorkloadStatus *status);
EinsoraWorkloadStatus *einsora_workload_status_from_json(JsonNode *node, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraWorkloadStatus, einsora_workload_status_free)

G_END_DECLS
