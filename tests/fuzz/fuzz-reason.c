/* einsora_reason_clean() on any text: what it returns is one line of
 * valid UTF-8, no control characters, at most EINSORA_REASON_MAX_BYTES. */
#include <stdio.h>
#include <string.h>

#include "einsora-fuzz.h"
#include "einsora-reason.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);
    g_autofree gchar *clean = einsora_reason_clean(text);

    EINSORA_FUZZ_CHECK(clean != NULL);
    EINSORA_FUZZ_CHECK(strlen(clean) <= EINSORA_REASON_MAX_BYTES);
    EINSORA_FUZZ_CHECK(g_utf8_validate(clean, -1, NULL));
    for (const char *p = clean; *p != '\0'; p = g_utf8_next_char(p)) {
        gunichar c = g_utf8_get_char(p);
        EINSORA_FUZZ_CHECK(c != '\n' && c != '\r');
        EINSORA_FUZZ_CHECK(!g_unichar_iscntrl(c));
    }
    return 0;
}
