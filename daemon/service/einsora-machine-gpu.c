#define G_LOG_DOMAIN "einsora-service"

#include "einsora-machine-gpu.h"

G_DEFINE_BOXED_TYPE(EinsoraMachineGpu, einsora_machine_gpu, einsora_machine_gpu_copy,
                    einsora_machine_gpu_free)

EinsoraMachineGpu *
einsora_machine_gpu_new(void)
{
    return g_new0(EinsoraMachineGpu, 1);
}

EinsoraMachineGpu *
einsora_machine_gpu_copy(const EinsoraMachineGpu *gpu)
{
    EinsoraMachineGpu *copy = einsora_machine_gpu_new();

    copy->vendor = g_strdup(gpu->vendor);
    copy->model = g_strdup(gpu->model);
    copy->memory_mib = gpu->memory_mib;
    copy->gpu_class = g_strdup(gpu->gpu_class);
    return copy;
}

void
einsora_machine_gpu_free(EinsoraMachineGpu *gpu)
{
    if (gpu == NULL)
        return;
    g_free(gpu->vendor);
    g_free(gpu->model);
    g_free(gpu->gpu_class);
    g_free(gpu);
}
