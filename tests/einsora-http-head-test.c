/* The HTTP edge's rules for a request head, a chunked body and an
 * answer's head, table by table (daemon/http/einsora-http-head.c). */
#include <string.h>

#include "einsora-http-head.h"
#include "einsora-websocket-tunnel.h"

typedef struct {
    const char *name;
    const char *head;
    guint status; /* 0: accepted */
    EinsoraHttpBody body;
    guint64 length;
    gboolean keep_alive;
} HeadCase;

#define OK_GET(name, head)                                                                         \
    {                                                                                              \
        name, head, 0, EINSORA_HTTP_BODY_NONE, 0, TRUE                                             \
    }
#define REFUSED(name, head, status)                                                                \
    {                                                                                              \
        name, head, status, EINSORA_HTTP_BODY_NONE, 0, FALSE                                       \
    }

static const HeadCase head_cases[] = {
    OK_GET("a plain GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
    OK_GET("empty lines first", "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
    OK_GET("a port and OWS", "GET /x?y=1 HTTP/1.1\r\nHost:  127.0.0.1:80 \t\r\n\r\n"),
    OK_GET("obs-text in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf\xc3\xa9\r\n\r\n"),
    {"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", 0, EINSORA_HTTP_BODY_NONE, 0, FALSE},
    {"HTTP/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0,
     EINSORA_HTTP_BODY_NONE, 0, TRUE},
    {"Connection: close", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, close\r\n\r\n", 0,
     EINSORA_HTTP_BODY_NONE, 0, FALSE},
    {"a Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n", 0,
     EINSORA_HTTP_BODY_LENGTH, 12, TRUE},
    {"Content-Length 0", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 0,
     EINSORA_HTTP_BODY_NONE, 0, TRUE},
    {"chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n", 0,
     EINSORA_HTTP_BODY_CHUNKED, 0, TRUE},

    REFUSED("no Host", "GET / HTTP/1.1\r\n\r\n", 400),
    REFUSED("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400),
    REFUSED("an empty Host", "GET / HTTP/1.1\r\nHost: \r\n\r\n", 400),
    REFUSED("a Host with a path", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
    REFUSED("a Host with credentials", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400),
    REFUSED("absolute form", "GET http://evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("asterisk form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("authority form", "GET a:80 HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("a fragment", "GET /#x HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("CL and TE",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
            "Transfer-Encoding: chunked\r\n\r\n",
            400),
    REFUSED("TE and CL",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
            "Content-Length: 3\r\n\r\n",
            400),
    REFUSED("two Content-Lengths",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
            "Content-Length: 3\r\n\r\n",
            400),
    REFUSED("a listed Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\n",
            400),
    REFUSED("a negative Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
            400),
    REFUSED("a huge Content-Length",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
    REFUSED("gzip coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            400),
    REFUSED("chunked twice",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400),
    REFUSED("two TE headers",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
            "Transfer-Encoding: chunked\r\n\r\n",
            400),
    REFUSED("identity coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n",
            400),
    REFUSED("TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    REFUSED("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400),
    REFUSED("obs-fold with a tab",
            "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer\r\n\tx\r\n\r\n", 400),
    REFUSED("space before the colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
    REFUSED("a tab before the colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400),
    REFUSED("no colon", "GET / HTTP/1.1\r\nHost: a\r\nJunk\r\n\r\n", 400),
    REFUSED("an empty name", "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", 400),
    REFUSED("a bare LF", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
    REFUSED("a bare CR", "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400),
    REFUSED("a DEL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n", 400),
    REFUSED("an escape in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[31m\r\n\r\n", 400),
    REFUSED("a space in the target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("two spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("a lower-case version", "GET / http/1.1\r\nHost: a\r\n\r\n", 400),
    REFUSED("HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
    REFUSED("HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505),
    REFUSED("the HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    REFUSED("CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 405),
    REFUSED("TRACE", "TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", 405),
    REFUSED("an unknown method", "BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
    REFUSED("a lower-case method", "get / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
    REFUSED("TLS bytes", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
};

static void
test_request_heads(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(head_cases); i++) {
        const HeadCase *c = &head_cases[i];
        g_autoptr(EinsoraHttpRequestHead) head = NULL;
        guint status = 0;
        const char *reason = NULL;
        EinsoraHttpHeadScan scan = einsora_http_request_head_scan(
            (const guint8 *)c->head, strlen(c->head), einsora_http_head_limits_default(), &head,
            &status, &reason);

        g_test_message("%s: %u %s", c->name, status, reason != NULL ? reason : "");
        if (c->status != 0) {
            g_assert_cmpint(scan, ==, EINSORA_HTTP_HEAD_REFUSED);
            g_assert_cmpuint(status, ==, c->status);
            g_assert_nonnull(reason);
            g_assert_null(head);
            continue;
        }
        g_assert_cmpint(scan, ==, EINSORA_HTTP_HEAD_COMPLETE);
        g_assert_nonnull(head);
        g_assert_cmpuint(head->length, ==, strlen(c->head));
        g_assert_cmpint(head->body, ==, c->body);
        g_assert_cmpuint(head->content_length, ==, c->length);
        g_assert_cmpint(head->keep_alive, ==, c->keep_alive);
    }
}

/* What a head that hasn't all arrived can already be told. */
static void
test_partial_heads(void)
{
    const EinsoraHttpHeadLimits *limits = einsora_http_head_limits_default();
    g_autoptr(EinsoraHttpRequestHead) head = NULL;
    g_autoptr(GString) text = g_string_new("GET /");
    guint status = 0;
    const char *reason = NULL;

    /* Every prefix of a good head wants more. */
    {
        const char *good = "POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n";
        for (gsize i = 0; i < strlen(good); i++)
            g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)good, i, limits, &head,
                                                           &status, &reason),
                            ==, EINSORA_HTTP_HEAD_INCOMPLETE);
    }
    /* A target past the limit, before its line ends: 414. */
    while (text->len <= limits->max_target_bytes + 40)
        g_string_append_c(text, 'a');
    g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)text->str, text->len, limits,
                                                   &head, &status, &reason),
                    ==, EINSORA_HTTP_HEAD_REFUSED);
    g_assert_cmpuint(status, ==, 414);
    /* A complete line with a long target: 414 too. */
    g_string_append(text, " HTTP/1.1\r\nHost: a\r\n\r\n");
    g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)text->str, text->len, limits,
                                                   &head, &status, &reason),
                    ==, EINSORA_HTTP_HEAD_REFUSED);
    g_assert_cmpuint(status, ==, 414);
    /* Headers past the limit (a 1 MB Cookie), still arriving: 431. */
    g_string_assign(text, "GET / HTTP/1.1\r\nHost: a\r\nCookie: ");
    while (text->len < 1024 * 1024)
        g_string_append(text, "a=b; ");
    g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)text->str, text->len, limits,
                                                   &head, &status, &reason),
                    ==, EINSORA_HTTP_HEAD_REFUSED);
    g_assert_cmpuint(status, ==, 431);
    /* 10,000 header lines, complete: 431. */
    g_string_assign(text, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (guint i = 0; i < 10000; i++)
        g_string_append(text, "X: y\r\n");
    g_string_append(text, "\r\n");
    g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)text->str, text->len, limits,
                                                   &head, &status, &reason),
                    ==, EINSORA_HTTP_HEAD_REFUSED);
    g_assert_cmpuint(status, ==, 431);
    /* More than the lines allowed, in a head that fits: 431 as well. */
    g_string_assign(text, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (guint i = 0; i < limits->max_header_lines + 1; i++)
        g_string_append(text, "X: y\r\n");
    g_string_append(text, "\r\n");
    g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)text->str, text->len, limits,
                                                   &head, &status, &reason),
                    ==, EINSORA_HTTP_HEAD_REFUSED);
    g_assert_cmpuint(status, ==, 431);
    /* Garbage is refused before its head ends. */
    g_assert_cmpint(einsora_http_request_head_scan((const guint8 *)"\x16\x03\x01", 3, limits, &head,
                                                   &status, &reason),
                    ==, EINSORA_HTTP_HEAD_REFUSED);
    g_assert_cmpuint(status, ==, 400);
}

typedef struct {
    const char *name;
    const char *body; /* with what follows it, if anything */
    gssize length;    /* of the body: -1 malformed, 0 incomplete */
} ChunkedCase;

static const ChunkedCase chunked_cases[] = {
    {"one chunk", "5\r\nhello\r\n0\r\n\r\n", 15},
    {"two chunks, hex", "a\r\n0123456789\r\nA\r\n0123456789\r\n0\r\n\r\n", 35},
    {"an extension", "5;name=value\r\nhello\r\n0\r\n\r\n", 26},
    {"trailers", "5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n", 25},
    {"the next request follows", "0\r\n\r\nGET / HTTP/1.1\r\n", 5},
    {"incomplete", "5\r\nhel", 0},
    {"no final CRLF yet", "0\r\n", 0},
    {"not hex", "g\r\nhello\r\n0\r\n\r\n", -1},
    {"a bare LF", "5\nhello\r\n0\r\n\r\n", -1},
    {"data longer than said", "3\r\nhello\r\n0\r\n\r\n", -1},
    {"a size that overflows", "ffffffffffffffffff\r\n", -1},
    {"an extension past 100 bytes (libsoup's line is 128)",
     "5;"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "\r\nhello\r\n0\r\n\r\n",
     -1},
    {"an empty size", "\r\n", -1},
};

static void
test_chunked(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(chunked_cases); i++) {
        const ChunkedCase *c = &chunked_cases[i];
        gsize total = strlen(c->body);

        /* Whole, then a byte at a time: the same verdict. */
        for (guint bytewise = 0; bytewise < 2; bytewise++) {
            EinsoraHttpChunked chunked = EINSORA_HTTP_CHUNKED_INIT;
            gboolean done = FALSE;
            gssize taken = 0;
            gsize at = 0;

            g_test_message("%s%s", c->name, bytewise ? ", a byte at a time" : "");
            while (at < total && !done) {
                gsize step = bytewise ? 1 : total - at;
                gssize part =
                    einsora_http_chunked_feed(&chunked, (const guint8 *)c->body + at, step, &done);
                if (part < 0) {
                    taken = -1;
                    break;
                }
                at += (gsize)part;
                taken += part;
            }
            if (c->length < 0)
                g_assert_cmpint(taken, ==, -1);
            else if (c->length == 0)
                g_assert_false(done);
            else {
                g_assert_true(done);
                g_assert_cmpint(taken, ==, c->length);
            }
        }
    }
}

/* Decoding gives the chunks' data, whole or a byte at a time, and the
 * same verdict as the parser on a malformed body. */
static void
test_chunked_decode(void)
{
    static const struct {
        const char *body;
        const char *data; /* NULL: malformed */
    } cases[] = {
        {"3\r\nabc\r\n0\r\n\r\n", "abc"},
        {"3;ext=1\r\nabc\r\na\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", "abc0123456789"},
        {"0\r\n\r\n", ""},
        {"3\r\nabcd\r\n0\r\n\r\n", NULL},
        {"z\r\n", NULL},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        for (guint bytewise = 0; bytewise < 2; bytewise++) {
            EinsoraHttpChunked chunked = EINSORA_HTTP_CHUNKED_INIT;
            g_autofree guint8 *copy = (guint8 *)g_strdup(cases[i].body);
            g_autoptr(GString) data = g_string_new(NULL);
            gsize total = strlen(cases[i].body);
            gboolean done = FALSE, failed = FALSE;
            gsize at = 0;

            while (at < total && !done) {
                gsize step = bytewise ? 1 : total - at;
                gsize length = 0;
                gssize part =
                    einsora_http_chunked_decode(&chunked, copy + at, step, &length, &done);
                if (part < 0) {
                    failed = TRUE;
                    break;
                }
                g_string_append_len(data, (const char *)copy + at, (gssize)length);
                at += (gsize)part;
            }
            if (cases[i].data == NULL) {
                g_assert_true(failed);
            } else {
                g_assert_false(failed);
                g_assert_true(done);
                g_assert_cmpuint(at, ==, total);
                g_assert_cmpstr(data->str, ==, cases[i].data);
            }
        }
    }
}

typedef struct {
    const char *name;
    const char *head;
    gboolean head_request;
    guint minor;
    gboolean keep_alive_in;
    gboolean keep_alive_out;
    EinsoraHttpBody body;
    const char *must_have;     /* in the rewritten head */
    const char *must_not_have; /* ditto */
} ResponseCase;

static const ResponseCase response_cases[] = {
    {"a framed answer stays open", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", FALSE, 1, TRUE,
     TRUE, EINSORA_HTTP_BODY_LENGTH, "Content-Length: 3", "Connection"},
    {"libsoup's own close goes",
     "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\n", FALSE, 1, TRUE, TRUE,
     EINSORA_HTTP_BODY_LENGTH, NULL, "Connection"},
    {"chunked stays open", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", FALSE, 1, TRUE,
     TRUE, EINSORA_HTTP_BODY_CHUNKED, "Transfer-Encoding: chunked", "Connection"},
    {"no framing: closes", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", FALSE, 1, TRUE,
     FALSE, EINSORA_HTTP_BODY_UNTIL_CLOSE, "Connection: close", NULL},
    {"a 204 loses its coding", "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
     FALSE, 1, TRUE, TRUE, EINSORA_HTTP_BODY_NONE, NULL, "Transfer-Encoding"},
    {"a 204 loses its length", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", FALSE, 1,
     TRUE, TRUE, EINSORA_HTTP_BODY_NONE, NULL, "Content-Length"},
    {"a 304 keeps its length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", FALSE, 1,
     TRUE, TRUE, EINSORA_HTTP_BODY_NONE, "Content-Length: 10", NULL},
    {"HEAD: no coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", TRUE, 1, TRUE,
     TRUE, EINSORA_HTTP_BODY_NONE, NULL, "Transfer-Encoding"},
    {"the client asked to close", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", FALSE, 1, FALSE,
     FALSE, EINSORA_HTTP_BODY_LENGTH, "Connection: close", NULL},
    {"HTTP/1.0 keep-alive is said", "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n", FALSE, 0, TRUE,
     TRUE, EINSORA_HTTP_BODY_LENGTH, "Connection: keep-alive", NULL},
    {"HTTP/1.0 and chunked: closes", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", FALSE,
     0, TRUE, FALSE, EINSORA_HTTP_BODY_CHUNKED, "Connection: close", NULL},
    {"a 101 is left as it is",
     "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", FALSE,
     1, TRUE, TRUE, EINSORA_HTTP_BODY_UNTIL_CLOSE, "Connection: Upgrade", NULL},
    {"a 100 Continue", "HTTP/1.1 100 Continue\r\n\r\n", FALSE, 1, TRUE, TRUE,
     EINSORA_HTTP_BODY_NONE, NULL, "Connection"},
};

static void
test_response_heads(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(response_cases); i++) {
        const ResponseCase *c = &response_cases[i];
        EinsoraHttpResponseHead out;
        gboolean keep_alive = c->keep_alive_in;
        g_autoptr(GString) head = einsora_http_response_head_rewrite(
            c->head, strlen(c->head), c->head_request, c->minor, &keep_alive, &out);

        g_test_message("%s", c->name);
        g_assert_nonnull(head);
        g_assert_true(g_str_has_suffix(head->str, "\r\n\r\n"));
        g_assert_cmpint(keep_alive, ==, c->keep_alive_out);
        g_assert_cmpint(out.body, ==, c->body);
        if (c->must_have != NULL)
            g_assert_nonnull(strstr(head->str, c->must_have));
        if (c->must_not_have != NULL)
            g_assert_null(strstr(head->str, c->must_not_have));
    }
    {
        EinsoraHttpResponseHead out;
        gboolean keep_alive = TRUE;
        /* Found by the fuzzer: a NUL in a head (and a bare CR or LF). */
        const char nul[] = "HTTP/1.1 204 No Content\r\nTr\0ansfer-Encoding: chunked\r\n\r\n";
        const char *bare[] = {"HTTP/1.1 200 OK\r\nX: a\rb\r\nContent-Length: 0\r\n\r\n",
                              "HTTP/1.1 200 OK\r\nX: a\nb\r\nContent-Length: 0\r\n\r\n"};
        g_assert_null(
            einsora_http_response_head_rewrite("junk\r\n\r\n", 8, FALSE, 1, &keep_alive, &out));
        g_assert_null(
            einsora_http_response_head_rewrite(nul, sizeof nul - 1, FALSE, 1, &keep_alive, &out));
        for (guint i = 0; i < G_N_ELEMENTS(bare); i++)
            g_assert_null(einsora_http_response_head_rewrite(bare[i], strlen(bare[i]), FALSE, 1,
                                                             &keep_alive, &out));
    }
}

/* A frame: FIN and opcode in @first, an unmasked payload of @length. */
static void
append_frame(GByteArray *bytes, guint8 first, gsize length)
{
    guint8 head[4] = {first, 0, 0, 0};
    g_autofree guint8 *payload = g_malloc0(length + 1);

    if (length < 126) {
        head[1] = (guint8)length;
        g_byte_array_append(bytes, head, 2);
    } else {
        head[1] = 126;
        head[2] = (guint8)(length >> 8);
        head[3] = (guint8)(length & 0xff);
        g_byte_array_append(bytes, head, 4);
    }
    g_byte_array_append(bytes, payload, (guint)length);
}

/* The tunnel's frame bookkeeping: a message's fragments count together
 * against the bound, control frames may come between them, and what
 * isn't WebSocket framing is refused. */
static void
test_websocket_frames(void)
{
    const guint64 max = 1000;

    {
        /* 3 fragments of 400: the third passes the bound; it is cut before
         * its header, at a boundary. */
        g_autoptr(GByteArray) bytes = g_byte_array_new();
        EinsoraWebsocketFrames frames = {0};
        gboolean too_big = FALSE;
        gssize taken;
        gsize before_third;

        append_frame(bytes, 0x02, 400);
        append_frame(bytes, 0x89, 4); /* a ping between fragments */
        append_frame(bytes, 0x00, 400);
        before_third = bytes->len;
        append_frame(bytes, 0x80, 400);
        taken = einsora_websocket_frames_feed(&frames, bytes->data, bytes->len, max, &too_big);
        g_assert_true(too_big);
        g_assert_cmpint(taken - (gssize)frames.header_length, ==, (gssize)before_third);
    }
    {
        /* The same under the bound, a byte at a time: all of it, ending at
         * a boundary. */
        g_autoptr(GByteArray) bytes = g_byte_array_new();
        EinsoraWebsocketFrames frames = {0};
        gboolean too_big = FALSE;

        append_frame(bytes, 0x01, 300);
        append_frame(bytes, 0x80, 300);
        append_frame(bytes, 0x82, 999);
        for (guint i = 0; i < bytes->len; i++) {
            g_assert_cmpint(
                einsora_websocket_frames_feed(&frames, bytes->data + i, 1, max, &too_big), ==, 1);
            g_assert_false(too_big);
        }
        g_assert_true(einsora_websocket_frames_at_boundary(&frames));
    }
    {
        const guint8 continuation_first[] = {0x80, 0x00};
        const guint8 reserved_opcode[] = {0x83, 0x00};
        const guint8 long_ping[] = {0x89, 126, 0x01, 0x00};
        const guint8 fragmented_ping[] = {0x09, 0x00};
        const guint8 *bad[] = {continuation_first, reserved_opcode, long_ping, fragmented_ping};
        const gsize lengths[] = {sizeof continuation_first, sizeof reserved_opcode,
                                 sizeof long_ping, sizeof fragmented_ping};

        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
            EinsoraWebsocketFrames frames = {0};
            gboolean too_big = FALSE;
            g_assert_cmpint(
                einsora_websocket_frames_feed(&frames, bad[i], lengths[i], max, &too_big), ==, -1);
        }
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/http/head/requests", test_request_heads);
    g_test_add_func("/http/head/partial", test_partial_heads);
    g_test_add_func("/http/head/chunked", test_chunked);
    g_test_add_func("/http/head/chunked-decode", test_chunked_decode);
    g_test_add_func("/http/head/responses", test_response_heads);
    g_test_add_func("/http/websocket/frames", test_websocket_frames);
    return g_test_run();
}
