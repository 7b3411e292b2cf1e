/* What a class computes on: the CPU, an Apple GPU, an NVIDIA or AMD GPU. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    EINSORA_ACCELERATOR_CPU,
    EINSORA_ACCELERATOR_APPLE,
    EINSORA_ACCELERATOR_NVIDIA,
    EINSORA_ACCELERATOR_AMD,
} EinsoraAccelerator;

#define EINSORA_ACCELERATOR_COUNT 4

const char *einsora_accelerator_to_string(EinsoraAccelerator accelerator);
gboolean einsora_accelerator_from_string(const char *str, EinsoraAccelerator *accelerator);

G_END_DECLS
