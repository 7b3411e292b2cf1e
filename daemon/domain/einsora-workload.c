#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-workload.h"

G_DEFINE_BOXED_TYPE(EinsoraWorkload, einsora_workload, einsora_workload_copy, einsora_workload_free)

EinsoraWorkload *
einsora_workload_new(void)
{
    return g_new0(EinsoraWorkload, 1);
}

EinsoraWorkload *
einsora_workload_copy(const EinsoraWorkload *workload)
{
    EinsoraWorkload *copy = g_new0(EinsoraWorkload, 1);
    *copy = *workload;
    copy->id = g_strdup(workload->id);
    copy->tenant_id = g_strdup(workload->tenant_id);
    copy->name = g_strdup(workload->name);
    copy->region = g_strdup(workload->region);
    copy->gpu_class = g_strdup(workload->gpu_class);
    copy->placed_class = g_strdup(workload->placed_class);
    copy->image = g_strdup(workload->image);
    copy->model = g_strdup(workload->model);
    copy->model_digest = g_strdup(workload->model_digest);
    copy->fallback = g_strdup(workload->fallback);
    copy->machine_id = g_strdup(workload->machine_id);
    copy->driver = g_strdup(workload->driver);
    copy->created_by = g_strdup(workload->created_by);
    copy->created_at = g_strdup(workload->created_at);
    copy->updated_at = g_strdup(workload->updated_at);
    return copy;
}

void
einsora_workload_free(EinsoraWorkload *workload)
{
    if (workload == NULL)
        return;
    g_free(workload->id);
    g_free(workload->tenant_id);
    g_free(workload->name);
    g_free(workload->region);
    g_free(workload->gpu_class);
    g_free(workload->placed_class);
    g_free(workload->image);
    g_free(workload->model);
    g_free(workload->model_digest);
    g_free(workload->fallback);
    g_free(workload->machine_id);
    g_free(workload->driver);
    g_free(workload->created_by);
    g_free(workload->created_at);
    g_free(workload->updated_at);
    g_free(workload);
}

const char *
einsora_workload_get_class(const EinsoraWorkload *workload)
{
    return workload->placed_class != NULL ? workload->placed_class : workload->gpu_class;
}
