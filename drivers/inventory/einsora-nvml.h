/* NVIDIA GPUs as NVML reports them. NVML is loaded at run time (dlopen),
 * so Einsora builds and runs on machines without NVIDIA's driver; a test
 * double can stand in for it by path. */
#pragma once

#include <gio/gio.h>

#include "einsora-inventory-gpu.h"

G_BEGIN_DECLS

/* What a GPU NVML can't read (or name) is reported as: no catalog class
 * serves it, so it is offered as nothing, but it keeps its place. */
#define EINSORA_NVML_UNREADABLE_MODEL "unreadable NVIDIA GPU"

/* @library: a file name for the dynamic loader's search, or a path.
 * Returns the GPUs in NVML's index order (EinsoraInventoryGpu, owned;
 * vendor "nvidia", model exactly as NVML names it), or NULL when NVML
 * can't be used at all (no library, a missing symbol, nvmlInit failed).
 * A GPU NVML can't read keeps its place as EINSORA_NVML_UNREADABLE_MODEL,
 * so that the i-th GPU of an inventory is NVML's (and nvidia-smi's, and
 * the container runtime's) GPU i, which placement's choices name. */
GPtrArray *einsora_nvml_read_gpus(const char *library, GError **error);
EinsoraInventoryGpu *einsora_nvml_unreadable_gpu(void);
/* Each GPU's device minor (its node is /dev/nvidia<minor>), by NVML
 * index, G_MAXUINT where NVML can't say; NULL when NVML can't be used. A
 * GPU's index is not always its minor: only NVML knows which node is
 * which. */
GArray *einsora_nvml_read_minors(const char *library, GError **error);

G_END_DECLS
