/* Which of a machine's GPUs a workload holds: a bit per GPU, bit i for
 * the i-th GPU of the machine's inventory (NVML's index order, which
 * NVIDIA's container runtime and CUDA_VISIBLE_DEVICES use too). A machine
 * reports at most 64 GPUs (EINSORA_INVENTORY_MAX_GPUS), so one 64-bit
 * word holds any choice. 0 means none was chosen. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_GPU_MASK_BITS 64

guint einsora_gpu_mask_count(guint64 mask);
/* The @count lowest GPUs of @available, or 0 when it has fewer. */
guint64 einsora_gpu_mask_pick(guint64 available, gint64 count);
/* "0,3": the indexes in rising order; "" for 0. */
gchar *einsora_gpu_mask_to_string(guint64 mask);
/* The inverse of _to_string, strictly: rising, unique indexes below 64,
 * no spaces; "" is 0. */
gboolean einsora_gpu_mask_from_string(const char *text, guint64 *mask);

G_END_DECLS
