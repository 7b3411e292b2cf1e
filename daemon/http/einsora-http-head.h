/* What the HTTP edge reads before libsoup sees a byte: a request head
 * checked against one set of rules for every listener, the end of a
 * chunked body, and the head of an answer rewritten for the connection
 * it goes out on. Pure functions on bytes, so they can be table-tested
 * and fuzzed alone (docs/adr/0025). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* How a message's body is framed. */
typedef enum {
    EINSORA_HTTP_BODY_NONE,
    EINSORA_HTTP_BODY_LENGTH,
    EINSORA_HTTP_BODY_CHUNKED,
    EINSORA_HTTP_BODY_UNTIL_CLOSE, /* answers only: ended by the close */
} EinsoraHttpBody;

typedef struct {
    guint max_target_bytes; /* longer: 414 */
    guint max_head_bytes;   /* the whole head, request line included: longer is 431 */
    guint max_header_lines; /* more: 431 */
    gboolean allow_absolute_form;
} EinsoraHttpHeadLimits;

#define EINSORA_HTTP_MAX_TARGET_BYTES (8 * 1024)
#define EINSORA_HTTP_MAX_HEAD_BYTES (64 * 1024)
#define EINSORA_HTTP_MAX_HEADER_LINES 128

/* The defaults above. */
const EinsoraHttpHeadLimits *einsora_http_head_limits_default(void);

typedef struct {
    gchar *method;
    gchar *target;
    guint minor_version; /* HTTP/1.0 or HTTP/1.1 */
    EinsoraHttpBody body;
    guint64 content_length;
    gboolean keep_alive; /* what the client asks for */
    gboolean upgrade;    /* Connection names upgrade and an Upgrade header is there */
    gsize length;        /* of the head in bytes, the blank line included */
    gsize skipped;       /* of those, the empty lines before the request line */
} EinsoraHttpRequestHead;

void einsora_http_request_head_free(EinsoraHttpRequestHead *head);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraHttpRequestHead, einsora_http_request_head_free)

typedef enum {
    EINSORA_HTTP_HEAD_INCOMPLETE, /* read on */
    EINSORA_HTTP_HEAD_COMPLETE,
    EINSORA_HTTP_HEAD_REFUSED, /* answer *status, close */
} EinsoraHttpHeadScan;

/* Looks at what has arrived of a request: a complete head is parsed into
 * @head; a head that breaks a rule, or that can no longer fit the
 * limits, is refused with the status to answer (400, 405, 414, 431, 501
 * or 505) and a short reason for the page and the log (a fixed text, with
 * nothing of the request in it). Empty lines before the request line are
 * skipped, as RFC 9112 §2.2 allows, and counted in @head's skipped: what
 * goes on to libsoup leaves them out, since it reads a third empty line as
 * the end of a head. */
EinsoraHttpHeadScan einsora_http_request_head_scan(const guint8 *data, gsize length,
                                                   const EinsoraHttpHeadLimits *limits,
                                                   EinsoraHttpRequestHead **head, guint *status,
                                                   const char **reason);

/* The end of a chunked body, found as it passes. */
typedef struct {
    guint state;
    guint64 remaining; /* of the chunk's data */
    guint line_bytes;  /* of the size line or trailer so far */
    guint trailer_bytes;
} EinsoraHttpChunked;

#define EINSORA_HTTP_CHUNKED_INIT                                                                  \
    {                                                                                              \
        0                                                                                          \
    }

/* Feeds @length bytes of a chunked body: returns how many of them belong
 * to it (fewer than @length once its end is reached, with *@done set),
 * or -1 when it is malformed. */
gssize einsora_http_chunked_feed(EinsoraHttpChunked *chunked, const guint8 *data, gsize length,
                                 gboolean *done);

/* The same, decoding: the data of the chunks read from @data is moved to
 * its start (*@data_length bytes of it). Returns how many bytes of @data
 * belong to the body, or -1 when it is malformed. */
gssize einsora_http_chunked_decode(EinsoraHttpChunked *chunked, guint8 *data, gsize length,
                                   gsize *data_length, gboolean *done);

/* An answer's head as it goes out. */
typedef struct {
    guint status;
    EinsoraHttpBody body;
    guint64 content_length;
} EinsoraHttpResponseHead;

/* Rewrites the head libsoup wrote (@data, @length: up to and including
 * its blank line) for the connection: its Connection headers go, and
 * one says whether it stays open; Transfer-Encoding (and, for 1xx and
 * 204, Content-Length) go where no body can follow (1xx, 204, 304, an
 * answer to HEAD). *@keep_alive says whether the connection may stay
 * open, and is cleared when the answer isn't framed so that it can.
 * Returns NULL for a head that can't be parsed. */
GString *einsora_http_response_head_rewrite(const char *data, gsize length, gboolean head_request,
                                            guint request_minor_version, gboolean *keep_alive,
                                            EinsoraHttpResponseHead *out);

/* The offset just past the first blank line ("\r\n\r\n") in @data, or 0. */
gsize einsora_http_head_end(const guint8 *data, gsize length);

G_END_DECLS
