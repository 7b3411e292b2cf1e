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

/* How far the pull of a starting workload's image is: layers complete
 * of those seen, bytes of the sizes known so far. All zero: no pull. */
typedef struct {
    gint64 layers_done;
    gint64 layers;
    gint64 bytes_done;
    gint64 bytes_total;
} EinsoraPullProgress;

#define EINSORA_PULL_MAX_LAYERS 4096

/* While it runs, what its server says of its use, read by its driver:
 * kernels executing now, and when it was last active (Unix ms; 0:
 * unknown, as for a server that says nothing, like llama-server). Idle
 * auto-stop decides on these (docs/adr/0044). */
typedef struct {
    gint64 busy_kernels;
    gint64 last_active_ms;
} EinsoraWorkloadActivity;

#define EINSORA_ACTIVITY_MAX_KERNELS 4096

typedef struct {
    gchar *workload_id;
    gint64 attempt;
    EinsoraWorkloadMode mode; /* the mode this status is about */
    EinsoraStatusCode code;
    gint64 applied_generation;
    /* Only while starting, and only numbers: never the runtime's words. */
    EinsoraPullProgress pull;
    /* Only while running; all zero when the driver knows nothing. */
    EinsoraWorkloadActivity activity;
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
