#include "einsora-fuzz.h"

static GLogWriterOutput
quiet_writer(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    return G_LOG_WRITER_HANDLED;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    g_log_set_always_fatal(G_LOG_FATAL_MASK);
    g_log_set_writer_func(quiet_writer, NULL, NULL);
    return 0;
}

gchar *
einsora_fuzz_text(const uint8_t *data, size_t size)
{
    gchar *text = g_malloc(size + 1);

    if (size > 0)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}
