/* The parsers of what a request names in its path and query: workload,
 * machine and token IDs (UUIDv7) and timestamps. Each has exactly one
 * spelling, so what is accepted must come back byte for byte when written
 * out again. */
#include <stdio.h>
#include <string.h>

#include "einsora-fuzz.h"
#include "einsora-timestamp.h"
#include "einsora-uuid.h"

static void
check_uuid(const char *text)
{
    guint8 bytes[16];
    g_autoptr(GError) error = NULL;
    GString *written;

    if (!einsora_uuid_parse(text, bytes, &error)) {
        EINSORA_FUZZ_CHECK(error != NULL);
        EINSORA_FUZZ_CHECK(!einsora_uuid_is_valid(text));
        return;
    }
    EINSORA_FUZZ_CHECK(error == NULL);
    EINSORA_FUZZ_CHECK(einsora_uuid_is_valid(text));
    written = g_string_new(NULL);
    for (guint i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            g_string_append_c(written, '-');
        g_string_append_printf(written, "%02x", bytes[i]);
    }
    EINSORA_FUZZ_CHECK(strcmp(written->str, text) == 0);
    g_string_free(written, TRUE);
}

static void
check_timestamp(const char *text)
{
    gint64 unix_us = 0;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *written = NULL;

    if (!einsora_timestamp_parse(text, &unix_us, &error)) {
        EINSORA_FUZZ_CHECK(error != NULL);
        return;
    }
    EINSORA_FUZZ_CHECK(error == NULL);
    written = einsora_timestamp_format(unix_us);
    EINSORA_FUZZ_CHECK(strcmp(written, text) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);

    check_uuid(text);
    check_timestamp(text);
    return 0;
}
