/* What every harness shares: GLib's log made quiet and never fatal, so a
 * g_warning() or g_critical() on hostile input is not a crash, and the
 * input as a NUL-terminated copy, as the daemon's callers hold it. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* einsora-fuzz.c defines LLVMFuzzerInitialize for every harness. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated copy of the input (it may hold NULs of its own). */
gchar *einsora_fuzz_text(const uint8_t *data, size_t size);

/* A property the code documents does not hold: a finding. */
#define EINSORA_FUZZ_CHECK(condition)                                                              \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, "fuzz: property failed: %s (%s:%d)\n", #condition, __FILE__,           \
                    __LINE__);                                                                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
