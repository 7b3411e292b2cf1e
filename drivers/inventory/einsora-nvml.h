/* NVIDIA GPUs as NVML reports them. NVML is loaded at run time (dlopen),
 * so Einsora builds and runs on machines without NVIDIA's driver; a test
 * double can stand in for it by path. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* @library: a file name for the dynamic loader's search, or a path.
 * Returns the GPUs (EinsoraInventoryGpu, owned; vendor "nvidia", model
 * exactly as NVML names it), or NULL when NVML can't be used at all (no
 * library, a missing symbol, nvmlInit failed). A GPU NVML can't read is
 * left out, and the others are still reported. */
GPtrArray *einsora_nvml_read_gpus(const char *library, GError **error);

G_END_DECLS
