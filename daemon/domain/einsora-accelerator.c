#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-accelerator.h"

static const char *const accelerator_names[] = {
    [EINSORA_ACCELERATOR_CPU] = "cpu",
    [EINSORA_ACCELERATOR_APPLE] = "apple",
    [EINSORA_ACCELERATOR_NVIDIA] = "nvidia",
    [EINSORA_ACCELERATOR_AMD] = "amd",
};

G_STATIC_ASSERT(G_N_ELEMENTS(accelerator_names) == EINSORA_ACCELERATOR_COUNT);

const char *
einsora_accelerator_to_string(EinsoraAccelerator accelerator)
{
    if ((guint)accelerator >= EINSORA_ACCELERATOR_COUNT)
        return NULL;
    return accelerator_names[accelerator];
}

gboolean
einsora_accelerator_from_string(const char *str, EinsoraAccelerator *accelerator)
{
    for (guint i = 0; str != NULL && i < EINSORA_ACCELERATOR_COUNT; i++) {
        if (g_strcmp0(str, accelerator_names[i]) == 0) {
            *accelerator = (EinsoraAccelerator)i;
            return TRUE;
        }
    }
    return FALSE;
}
