/* The client's server-sent events parser on any stream: the input is cut
 * into lines at CR, LF or CRLF, as EinsoraEventFeed cuts them, and every
 * line is pushed. */
#include <stdio.h>
#include <string.h>

#include "einsora-fuzz.h"
#include "einsora-sse-parser.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(EinsoraSseParser) parser = einsora_sse_parser_new(NULL);
    const char *text = (const char *)data;
    gsize start = 0;

    for (gsize i = 0; i <= size; i++) {
        g_autoptr(EinsoraSseEvent) event = NULL;
        g_autoptr(GError) error = NULL;
        gsize end = i;

        if (i < size && text[i] != '\n' && text[i] != '\r')
            continue;
        if (!einsora_sse_parser_push_line(parser, text + start, end - start, &event, &error)) {
            EINSORA_FUZZ_CHECK(error != NULL);
            return 0;
        }
        if (event != NULL) {
            EINSORA_FUZZ_CHECK(event->type != NULL && event->data != NULL);
            EINSORA_FUZZ_CHECK(g_utf8_validate(event->data, -1, NULL));
            EINSORA_FUZZ_CHECK(strlen(event->data) <= EINSORA_SSE_MAX_EVENT_BYTES);
        }
        if (i + 1 < size && text[i] == '\r' && text[i + 1] == '\n')
            i++;
        start = i + 1;
    }
    return 0;
}
