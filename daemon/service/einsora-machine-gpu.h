/* One GPU of a machine as the API shows it: what its agent last reported
 * (vendor, model, memory) and the class it serves here, from the
 * catalog; NULL when no class of the installation offers it. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *vendor;
    gchar *model;
    gint64 memory_mib;
    gchar *gpu_class;
} EinsoraMachineGpu;

#define EINSORA_TYPE_MACHINE_GPU (einsora_machine_gpu_get_type())
GType einsora_machine_gpu_get_type(void);

EinsoraMachineGpu *einsora_machine_gpu_new(void);
EinsoraMachineGpu *einsora_machine_gpu_copy(const EinsoraMachineGpu *gpu);
void einsora_machine_gpu_free(EinsoraMachineGpu *gpu);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraMachineGpu, einsora_machine_gpu_free)

G_END_DECLS
