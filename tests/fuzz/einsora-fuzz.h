/* What every harness shares: GLib's log made quiet and never fatal, so a
 * g_warning() or g_critical() on hostile input is not a crash, and the
 * input as a NUL-terminated copy, as the daemon's callers hold it. */
#pragma once

#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static GLogWriterOutput
einsora_fuzz_quiet_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields,
                          gpointer user_data)
{
    return G_LOG_WRITER_HANDLED;
}

static inline void
einsora_fuzz_init(void)
{
    g_log_set_always_fatal(G_LOG_FATAL_MASK);
    g_log_set_writer_func(einsora_fuzz_quiet_writer, NULL, NULL);
}

/* A NUL-terminated copy of the input (it may hold NULs of its own). */
static inline gchar *
einsora_fuzz_text(const uint8_t *data, size_t size)
{
    gchar *text = g_malloc(size + 1);

    if (size > 0)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

/* A property the code documents does not hold: a finding. */
#define EINSORA_FUZZ_CHECK(condition)                                                              \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, "fuzz: property failed: %s (%s:%d)\n", #condition, __FILE__,           \
                    __LINE__);                                                                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)
