/* What this Linux machine has, read from /proc, /sys and NVML: usable
 * CPUs (the affinity mask, capped by a cgroup CPU quota), memory (capped
 * by a cgroup memory limit), OS and architecture, NVIDIA GPUs through
 * NVML loaded at run time (dlopen of libnvidia-ml.so.1: no build-time
 * dependency) and AMD GPUs from sysfs. The drivers that work here are
 * the caller's to probe and fill in. Every path is read under a root
 * directory, so tests read fixture trees; NVML's library can be replaced
 * by a test double loaded the same way. */
#pragma once

#include <gio/gio.h>

#include "einsora-inventory.h"

G_BEGIN_DECLS

#define EINSORA_NVML_LIBRARY "libnvidia-ml.so.1"

typedef struct {
    /* "/" normally; where proc/, sys/ and dev/ are read from. */
    const char *root;
    /* NULL: EINSORA_NVML_LIBRARY through the dynamic loader's search. */
    const char *nvml_library;
} EinsoraLinuxInventorySource;

/* Never fails for missing optional parts (no NVML, no cgroup files, no
 * DRM devices): what can't be read isn't there. Fails only when CPUs or
 * memory can't be read at all. drivers is left empty. */
EinsoraInventory *einsora_linux_inventory_read(const EinsoraLinuxInventorySource *source,
                                               GError **error);

/* /dev/nvidia* device nodes under @root ("/" normally), sorted, as full
 * paths under @root: what a sandbox binds for an NVIDIA workload. */
gchar **einsora_linux_inventory_nvidia_device_nodes(const char *root);

G_END_DECLS
