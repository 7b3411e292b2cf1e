#define G_LOG_DOMAIN "einsora-backend"

#include "einsora-observation.h"

const char *
einsora_runtime_status_to_string(EinsoraRuntimeStatus status)
{
    static const char *const names[] = {
        [EINSORA_RUNTIME_UNKNOWN] = "unknown",         [EINSORA_RUNTIME_ABSENT] = "absent",
        [EINSORA_RUNTIME_PROGRESSING] = "progressing", [EINSORA_RUNTIME_READY] = "ready",
        [EINSORA_RUNTIME_PARKED] = "parked",           [EINSORA_RUNTIME_REMOVED] = "removed",
        [EINSORA_RUNTIME_FAILED] = "failed",           [EINSORA_RUNTIME_EXITED] = "exited",
    };

    if ((guint)status >= G_N_ELEMENTS(names))
        return NULL;
    return names[status];
}
