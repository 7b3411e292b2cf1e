#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-workload-mode.h"

static const char *const modes[] = {
    [EINSORA_WORKLOAD_MODE_RUN] = "run",
    [EINSORA_WORKLOAD_MODE_PARK] = "park",
    [EINSORA_WORKLOAD_MODE_REMOVE] = "remove",
};

G_STATIC_ASSERT(G_N_ELEMENTS(modes) == EINSORA_WORKLOAD_MODE_COUNT);

const char *
einsora_workload_mode_to_string(EinsoraWorkloadMode mode)
{
    if ((guint)mode >= G_N_ELEMENTS(modes))
        return NULL;
    return modes[mode];
}

gboolean
einsora_workload_mode_from_string(const char *str, EinsoraWorkloadMode *mode)
{
    for (guint i = 0; str != NULL && i < G_N_ELEMENTS(modes); i++) {
        if (g_str_equal(modes[i], str)) {
            *mode = (EinsoraWorkloadMode)i;
            return TRUE;
        }
    }
    return FALSE;
}
