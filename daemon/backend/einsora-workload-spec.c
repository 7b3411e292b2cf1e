#define G_LOG_DOMAIN "einsora-backend"

#include "einsora-workload-spec.h"

G_DEFINE_BOXED_TYPE(EinsoraWorkloadSpec, einsora_workload_spec, einsora_workload_spec_copy,
                    einsora_workload_spec_free)

EinsoraWorkloadSpec *
einsora_workload_spec_new(void)
{
    return g_new0(EinsoraWorkloadSpec, 1);
}

EinsoraWorkloadSpec *
einsora_workload_spec_copy(const EinsoraWorkloadSpec *spec)
{
    EinsoraWorkloadSpec *copy = g_new0(EinsoraWorkloadSpec, 1);

    *copy = *spec;
    copy->workload_id = g_strdup(spec->workload_id);
    copy->tenant_id = g_strdup(spec->tenant_id);
    copy->region = g_strdup(spec->region);
    copy->placed_class = g_strdup(spec->placed_class);
    copy->image = g_strdup(spec->image);
    copy->runtime_reference = g_strdup(spec->runtime_reference);
    copy->machine_id = g_strdup(spec->machine_id);
    copy->driver = g_strdup(spec->driver);
    return copy;
}

void
einsora_workload_spec_free(EinsoraWorkloadSpec *spec)
{
    if (spec == NULL)
        return;
    g_free(spec->workload_id);
    g_free(spec->tenant_id);
    g_free(spec->region);
    g_free(spec->placed_class);
    g_free(spec->image);
    g_free(spec->runtime_reference);
    g_free(spec->machine_id);
    g_free(spec->driver);
    g_free(spec);
}
