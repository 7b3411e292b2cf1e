/* What desired state asks of a workload on its machine: run it, park it
 * (stopped, keeping its data) or remove it with everything it stored. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    EINSORA_WORKLOAD_MODE_RUN,
    EINSORA_WORKLOAD_MODE_PARK,
    EINSORA_WORKLOAD_MODE_REMOVE,
} EinsoraWorkloadMode;

#define EINSORA_WORKLOAD_MODE_COUNT 3

const char *einsora_workload_mode_to_string(EinsoraWorkloadMode mode);
gboolean einsora_workload_mode_from_string(const char *str, EinsoraWorkloadMode *mode);

G_END_DECLS
