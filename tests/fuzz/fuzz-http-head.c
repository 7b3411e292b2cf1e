/* The HTTP edge's parsers of what a peer sends (docs/adr/0025): a request
 * head, a chunked body, and an answer's head as rewritten for the
 * connection. Each is fed the same bytes. */
#include <string.h>

#include "einsora-fuzz.h"
#include "einsora-http-head.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(EinsoraHttpRequestHead) head = NULL;
    EinsoraHttpChunked chunked = EINSORA_HTTP_CHUNKED_INIT;
    EinsoraHttpResponseHead response;
    guint status = 0;
    const char *reason = NULL;
    gboolean done = FALSE;
    gboolean keep_alive = TRUE;
    gssize taken;

    switch (einsora_http_request_head_scan(data, size, einsora_http_head_limits_default(), &head,
                                           &status, &reason)) {
    case EINSORA_HTTP_HEAD_COMPLETE:
        /* A head that passed: within the input, framed one way only, with
         * an origin-form target of printable ASCII. */
        EINSORA_FUZZ_CHECK(head != NULL && head->length <= size && head->length >= 4);
        EINSORA_FUZZ_CHECK(memcmp(data + head->length - 4, "\r\n\r\n", 4) == 0);
        EINSORA_FUZZ_CHECK(head->target[0] == '/');
        for (const char *p = head->target; *p != '\0'; p++)
            EINSORA_FUZZ_CHECK(*p > 0x20 && *p < 0x7f && *p != '#');
        EINSORA_FUZZ_CHECK(head->body != EINSORA_HTTP_BODY_LENGTH || head->content_length > 0);
        EINSORA_FUZZ_CHECK(head->body != EINSORA_HTTP_BODY_UNTIL_CLOSE);
        break;
    case EINSORA_HTTP_HEAD_REFUSED:
        EINSORA_FUZZ_CHECK(head == NULL && reason != NULL);
        EINSORA_FUZZ_CHECK(status == 400 || status == 405 || status == 414 || status == 431 ||
                           status == 501 || status == 505);
        break;
    case EINSORA_HTTP_HEAD_INCOMPLETE:
        /* Never more than the head limit (after empty lines) is waited for. */
        EINSORA_FUZZ_CHECK(size < EINSORA_HTTP_MAX_HEAD_BYTES + 130);
        break;
    }

    taken = einsora_http_chunked_feed(&chunked, data, size, &done);
    EINSORA_FUZZ_CHECK(taken >= -1 && taken <= (gssize)size);
    EINSORA_FUZZ_CHECK(!done || taken >= 5);

    {
        gsize end = einsora_http_head_end(data, size);
        g_autoptr(GString) rewritten = NULL;
        if (end > 0)
            rewritten = einsora_http_response_head_rewrite((const char *)data, end, size % 2 == 0,
                                                           1, &keep_alive, &response);
        if (rewritten != NULL) {
            EINSORA_FUZZ_CHECK(g_str_has_suffix(rewritten->str, "\r\n\r\n"));
            /* No body can follow these: nor can a coding be said. */
            if (response.status == 204 || response.status == 304 ||
                (response.status >= 100 && response.status < 200 && response.status != 101))
                EINSORA_FUZZ_CHECK(response.body == EINSORA_HTTP_BODY_NONE);
            if (response.body == EINSORA_HTTP_BODY_UNTIL_CLOSE && response.status != 101)
                EINSORA_FUZZ_CHECK(!keep_alive);
        }
    }
    return 0;
}
