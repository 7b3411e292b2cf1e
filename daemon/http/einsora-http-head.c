#include "einsora-http-head.h"

#include <string.h>

/* RFC 9110 §5.6.2: the characters of a token (header names, methods). */
static gboolean
is_tchar(guint8 c)
{
    return g_ascii_isalnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A field value's characters: visible ASCII, obs-text, space and tab;
 * never NUL, CR, LF, another control character or DEL. */
static gboolean
is_field_char(guint8 c)
{
    return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f);
}

/* What a Host may hold (RFC 3986's reg-name, IP literals, a port). */
static gboolean
is_host_char(guint8 c)
{
    return g_ascii_isalnum(c) || (c != '\0' && strchr("-._~!$&'()*+,;=%:[]", c) != NULL);
}

const EinsoraHttpHeadLimits *
einsora_http_head_limits_default(void)
{
    static const EinsoraHttpHeadLimits limits = {
        .max_target_bytes = EINSORA_HTTP_MAX_TARGET_BYTES,
        .max_head_bytes = EINSORA_HTTP_MAX_HEAD_BYTES,
        .max_header_lines = EINSORA_HTTP_MAX_HEADER_LINES,
        .allow_absolute_form = FALSE,
    };
    return &limits;
}

void
einsora_http_request_head_free(EinsoraHttpRequestHead *head)
{
    if (head == NULL)
        return;
    g_free(head->method);
    g_free(head->target);
    g_free(head);
}

gsize
einsora_http_head_end(const guint8 *data, gsize length)
{
    const guint8 *end = length >= 4 ? memmem(data, length, "\r\n\r\n", 4) : NULL;

    return end != NULL ? (gsize)(end - data) + 4 : 0;
}

static EinsoraHttpHeadScan
refuse(guint code, const char *why, guint *status, const char **reason)
{
    *status = code;
    *reason = why;
    return EINSORA_HTTP_HEAD_REFUSED;
}

/* Whether @value (trimmed) lists @token, comma-separated, any case. */
static gboolean
lists_token(const char *value, gsize length, const char *token)
{
    gsize token_length = strlen(token);
    gsize i = 0;

    while (i < length) {
        gsize start, end;
        while (i < length && (value[i] == ' ' || value[i] == '\t' || value[i] == ','))
            i++;
        start = i;
        while (i < length && value[i] != ',')
            i++;
        end = i;
        while (end > start && (value[end - 1] == ' ' || value[end - 1] == '\t'))
            end--;
        if (end - start == token_length &&
            g_ascii_strncasecmp(value + start, token, end - start) == 0)
            return TRUE;
    }
    return FALSE;
}

static gboolean
name_is(const guint8 *name, gsize length, const char *expected)
{
    return length == strlen(expected) &&
           g_ascii_strncasecmp((const char *)name, expected, length) == 0;
}

typedef struct {
    guint hosts;
    guint lengths;
    guint codings;
    gboolean chunked;
    gboolean close;
    gboolean keep_alive;
    gboolean upgrade_token;
    gboolean upgrade_header;
    guint64 content_length;
} Fields;

/* One header line, CRLF excluded. Returns 0 or the status to refuse with. */
static guint
read_field(const guint8 *line, gsize length, Fields *fields, const char **reason)
{
    gsize colon = 0;
    gsize start, end;
    const char *value;

    if (length > 0 && (line[0] == ' ' || line[0] == '\t')) {
        *reason = "a header continued on a folded line (obs-fold)";
        return 400;
    }
    while (colon < length && is_tchar(line[colon]))
        colon++;
    if (colon == 0 || colon == length || line[colon] != ':') {
        *reason = colon < length && (line[colon] == ' ' || line[colon] == '\t')
                      ? "whitespace between a header's name and its colon"
                      : "a header line that isn't a name, a colon and a value";
        return 400;
    }
    for (gsize i = colon + 1; i < length; i++) {
        if (!is_field_char(line[i])) {
            *reason = "a control character in a header's value";
            return 400;
        }
    }
    start = colon + 1;
    end = length;
    while (start < end && (line[start] == ' ' || line[start] == '\t'))
        start++;
    while (end > start && (line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    value = (const char *)line + start;

    if (name_is(line, colon, "Host")) {
        fields->hosts++;
        if (end == start) {
            *reason = "an empty Host";
            return 400;
        }
        for (gsize i = start; i < end; i++) {
            if (!is_host_char(line[i])) {
                *reason = "a Host that isn't a host name or address and a port";
                return 400;
            }
        }
    } else if (name_is(line, colon, "Content-Length")) {
        guint64 parsed = 0;
        fields->lengths++;
        if (end == start || end - start > 18) {
            *reason = "a Content-Length that isn't a number of bytes";
            return 400;
        }
        for (gsize i = start; i < end; i++) {
            if (!g_ascii_isdigit(line[i])) {
                *reason = "a Content-Length that isn't a number of bytes";
                return 400;
            }
            parsed = parsed * 10 + (guint64)(line[i] - '0');
        }
        fields->content_length = parsed;
    } else if (name_is(line, colon, "Transfer-Encoding")) {
        fields->codings++;
        if (end - start != strlen("chunked") || g_ascii_strncasecmp(value, "chunked", 7) != 0) {
            *reason = "a transfer coding other than a single chunked";
            return 400;
        }
        fields->chunked = TRUE;
    } else if (name_is(line, colon, "Connection")) {
        fields->close |= lists_token(value, end - start, "close");
        fields->keep_alive |= lists_token(value, end - start, "keep-alive");
        fields->upgrade_token |= lists_token(value, end - start, "upgrade");
    } else if (name_is(line, colon, "Upgrade")) {
        fields->upgrade_header = TRUE;
    }
    return 0;
}

/* The request line, CRLF excluded. */
static guint
read_request_line(const guint8 *line, gsize length, const EinsoraHttpHeadLimits *limits,
                  EinsoraHttpRequestHead *head, const char **reason)
{
    static const char *const allowed[] = {"GET",    "HEAD",  "POST",   "PUT",
                                          "DELETE", "PATCH", "OPTIONS"};
    gsize method_end = 0;
    gsize target_end;
    const guint8 *version;
    gboolean known = FALSE;

    while (method_end < length && is_tchar(line[method_end]))
        method_end++;
    if (method_end == 0 || method_end == length || line[method_end] != ' ') {
        *reason = "a request line that isn't a method, a target and a version";
        return 400;
    }
    target_end = method_end + 1;
    while (target_end < length && line[target_end] > 0x20 && line[target_end] < 0x7f)
        target_end++;
    if (target_end - method_end - 1 > limits->max_target_bytes) {
        *reason = "the request's target is too long";
        return 414;
    }
    if (target_end == method_end + 1 || target_end == length || line[target_end] != ' ') {
        *reason = "a request line that isn't a method, a target and a version";
        return 400;
    }
    version = line + target_end + 1;
    if (length - target_end - 1 != 8 || memcmp(version, "HTTP/", 5) != 0 ||
        !g_ascii_isdigit(version[5]) || version[6] != '.' || !g_ascii_isdigit(version[7])) {
        *reason = "a request line that isn't a method, a target and a version";
        return 400;
    }
    if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
        *reason = "only HTTP/1.1 and HTTP/1.0 are spoken here";
        return 505;
    }
    head->minor_version = (guint)(version[7] - '0');
    head->method = g_strndup((const char *)line, method_end);
    head->target = g_strndup((const char *)line + method_end + 1, target_end - method_end - 1);

    if (g_str_equal(head->method, "CONNECT") || g_str_equal(head->method, "TRACE")) {
        *reason = "this method is not allowed here";
        return 405;
    }
    for (guint i = 0; i < G_N_ELEMENTS(allowed); i++)
        known |= g_str_equal(head->method, allowed[i]);
    if (!known) {
        *reason = "an unknown method";
        return 501;
    }
    if (strchr(head->target, '#') != NULL) {
        *reason = "a fragment (#) in the request's target";
        return 400;
    }
    if (head->target[0] != '/') {
        gboolean absolute = g_ascii_strncasecmp(head->target, "http://", 7) == 0 ||
                            g_ascii_strncasecmp(head->target, "https://", 8) == 0;
        if (!absolute || !limits->allow_absolute_form) {
            *reason = absolute ? "an absolute-form target: send the path, and the host in Host"
                               : "a target that isn't a path";
            return 400;
        }
    }
    return 0;
}

/* What can be said of a head before it is complete: a request line that
 * can't be one, or a head past the limits. */
static guint
check_partial(const guint8 *data, gsize length, const EinsoraHttpHeadLimits *limits,
              const char **reason)
{
    const guint8 *line_end = memchr(data, '\n', length);
    gsize line_length = line_end != NULL ? (gsize)(line_end - data) : length;
    gsize i = 0;

    while (i < line_length && is_tchar(data[i]))
        i++;
    if (i < line_length && data[i] != ' ') {
        *reason = "a request line that isn't a method, a target and a version";
        return 400;
    }
    /* Method, target, version and their spaces: 32 bytes besides the target. */
    if (line_end == NULL && length > (gsize)limits->max_target_bytes + 32) {
        *reason = "the request's target is too long";
        return 414;
    }
    if (length >= limits->max_head_bytes) {
        *reason = "the request's headers are too large";
        return 431;
    }
    return 0;
}

EinsoraHttpHeadScan
einsora_http_request_head_scan(const guint8 *data, gsize length,
                               const EinsoraHttpHeadLimits *limits, EinsoraHttpRequestHead **out,
                               guint *status, const char **reason)
{
    g_autoptr(EinsoraHttpRequestHead) head = NULL;
    gsize skipped = 0;
    gsize end;
    gsize at;
    guint code;
    guint lines = 0;
    Fields fields = {0};

    *out = NULL;
    *status = 0;
    *reason = NULL;
    while (length - skipped >= 2 && data[skipped] == '\r' && data[skipped + 1] == '\n')
        skipped++, skipped++;
    if (skipped > 64)
        return refuse(400, "empty lines before the request", status, reason);
    if (length - skipped > 0 && data[skipped] == '\n')
        return refuse(400, "a line ended by a bare LF", status, reason);
    end =
        einsora_http_head_end(data + skipped, MIN(length - skipped, (gsize)limits->max_head_bytes));
    if (end == 0) {
        code = check_partial(data + skipped, length - skipped, limits, reason);
        if (code != 0)
            return refuse(code, *reason, status, reason);
        return EINSORA_HTTP_HEAD_INCOMPLETE;
    }

    head = g_new0(EinsoraHttpRequestHead, 1);
    head->length = skipped + end;
    head->skipped = skipped;
    at = skipped;
    end += skipped;
    for (;;) {
        const guint8 *crlf = memmem(data + at, end - at, "\r\n", 2);
        gsize line_length = (gsize)(crlf - (data + at));

        /* A CR or LF alone inside a line. */
        if (memchr(data + at, '\r', line_length) != NULL || memchr(data + at, '\n', line_length))
            return refuse(400, "a line ended by a bare CR or LF", status, reason);
        if (lines == 0) {
            code = read_request_line(data + at, line_length, limits, head, reason);
        } else if (line_length == 0) {
            break;
        } else if (lines > limits->max_header_lines) {
            return refuse(431, "the request has too many headers", status, reason);
        } else {
            code = read_field(data + at, line_length, &fields, reason);
        }
        if (code != 0)
            return refuse(code, *reason, status, reason);
        lines++;
        at += line_length + 2;
    }

    if (fields.hosts > 1)
        return refuse(400, "more than one Host", status, reason);
    if (fields.hosts == 0 && head->minor_version == 1)
        return refuse(400, "no Host", status, reason);
    if (fields.lengths > 1)
        return refuse(400, "more than one Content-Length", status, reason);
    if (fields.codings > 1)
        return refuse(400, "more than one Transfer-Encoding", status, reason);
    if (fields.codings > 0 && fields.lengths > 0)
        return refuse(400, "both Content-Length and Transfer-Encoding", status, reason);
    if (fields.codings > 0 && head->minor_version == 0)
        return refuse(400, "Transfer-Encoding in an HTTP/1.0 request", status, reason);

    if (fields.chunked) {
        head->body = EINSORA_HTTP_BODY_CHUNKED;
    } else if (fields.lengths > 0 && fields.content_length > 0) {
        head->body = EINSORA_HTTP_BODY_LENGTH;
        head->content_length = fields.content_length;
    }
    head->keep_alive =
        head->minor_version == 1 ? !fields.close : fields.keep_alive && !fields.close;
    head->upgrade = fields.upgrade_token && fields.upgrade_header;
    *out = g_steal_pointer(&head);
    return EINSORA_HTTP_HEAD_COMPLETE;
}

/* Chunked bodies (RFC 9112 §7.1) */

enum {
    CHUNK_SIZE_START,
    CHUNK_SIZE,
    CHUNK_EXTENSION,
    CHUNK_SIZE_LF,
    CHUNK_DATA,
    CHUNK_DATA_CR,
    CHUNK_DATA_LF,
    CHUNK_TRAILER_START,
    CHUNK_TRAILER,
    CHUNK_TRAILER_LF,
    CHUNK_FINAL_LF,
    CHUNK_DONE,
};

#define CHUNK_SIZE_DIGITS 15
/* A chunk's size line with its extensions: libsoup reads it into a buffer
 * of 128 bytes, so a longer one would be refused there, unanswered. */
#define CHUNK_LINE_MAX 100
#define CHUNK_TRAILERS_MAX (16 * 1024)

gssize
einsora_http_chunked_feed(EinsoraHttpChunked *chunked, const guint8 *data, gsize length,
                          gboolean *done)
{
    gsize i = 0;

    *done = chunked->state == CHUNK_DONE;
    while (i < length && chunked->state != CHUNK_DONE) {
        guint8 c = data[i];

        switch (chunked->state) {
        case CHUNK_SIZE_START:
        case CHUNK_SIZE:
            if (g_ascii_isxdigit(c)) {
                if (++chunked->line_bytes > CHUNK_SIZE_DIGITS)
                    return -1;
                chunked->remaining = chunked->remaining * 16 + (guint64)g_ascii_xdigit_value(c);
                chunked->state = CHUNK_SIZE;
            } else if (chunked->state == CHUNK_SIZE && (c == ';' || c == ' ' || c == '\t')) {
                chunked->state = CHUNK_EXTENSION;
            } else if (chunked->state == CHUNK_SIZE && c == '\r') {
                chunked->state = CHUNK_SIZE_LF;
            } else {
                return -1;
            }
            i++;
            break;
        case CHUNK_EXTENSION:
            if (c == '\r')
                chunked->state = CHUNK_SIZE_LF;
            else if ((c < 0x20 && c != '\t') || c == 0x7f || ++chunked->line_bytes > CHUNK_LINE_MAX)
                return -1;
            i++;
            break;
        case CHUNK_SIZE_LF:
            if (c != '\n')
                return -1;
            chunked->line_bytes = 0;
            chunked->state = chunked->remaining == 0 ? CHUNK_TRAILER_START : CHUNK_DATA;
            i++;
            break;
        case CHUNK_DATA: {
            gsize take = (gsize)MIN((guint64)(length - i), chunked->remaining);
            chunked->remaining -= take;
            i += take;
            if (chunked->remaining == 0)
                chunked->state = CHUNK_DATA_CR;
            break;
        }
        case CHUNK_DATA_CR:
            if (c != '\r')
                return -1;
            chunked->state = CHUNK_DATA_LF;
            i++;
            break;
        case CHUNK_DATA_LF:
            if (c != '\n')
                return -1;
            chunked->state = CHUNK_SIZE_START;
            i++;
            break;
        case CHUNK_TRAILER_START:
            chunked->state = c == '\r' ? CHUNK_FINAL_LF : CHUNK_TRAILER;
            if (c != '\r' && !is_tchar(c))
                return -1;
            chunked->trailer_bytes++;
            i++;
            break;
        case CHUNK_TRAILER:
            if (c == '\r')
                chunked->state = CHUNK_TRAILER_LF;
            else if (!is_field_char(c) && c != ':')
                return -1;
            if (++chunked->trailer_bytes > CHUNK_TRAILERS_MAX)
                return -1;
            i++;
            break;
        case CHUNK_TRAILER_LF:
            if (c != '\n')
                return -1;
            chunked->state = CHUNK_TRAILER_START;
            i++;
            break;
        case CHUNK_FINAL_LF:
            if (c != '\n')
                return -1;
            chunked->state = CHUNK_DONE;
            i++;
            break;
        default:
            g_assert_not_reached();
        }
    }
    *done = chunked->state == CHUNK_DONE;
    return (gssize)i;
}

gssize
einsora_http_chunked_decode(EinsoraHttpChunked *chunked, guint8 *data, gsize length,
                            gsize *data_length, gboolean *done)
{
    gsize read = 0;

    *data_length = 0;
    *done = chunked->state == CHUNK_DONE;
    while (read < length && !*done) {
        /* A chunk's data moves down over the framing before it; the
         * framing goes through the parser a byte at a time. */
        gsize take = chunked->state == CHUNK_DATA
                         ? (gsize)MIN((guint64)(length - read), chunked->remaining)
                         : 1;
        gboolean was_data = chunked->state == CHUNK_DATA;

        if (einsora_http_chunked_feed(chunked, data + read, take, done) != (gssize)take)
            return -1;
        if (was_data) {
            memmove(data + *data_length, data + read, take);
            *data_length += take;
        }
        read += take;
    }
    return (gssize)read;
}

/* Answers */

static gboolean
status_has_body(guint status)
{
    return status >= 200 && status != 204 && status != 304;
}

GString *
einsora_http_response_head_rewrite(const char *data, gsize length, gboolean head_request,
                                   guint request_minor_version, gboolean *keep_alive,
                                   EinsoraHttpResponseHead *out)
{
    g_autoptr(GString) head = NULL;
    const char *line_end = memmem(data, length, "\r\n", 2);
    const char *at;
    const char *end = data + length;
    gboolean chunked = FALSE;
    gboolean has_length = FALSE;
    guint64 content_length = 0;
    gboolean no_body;
    gboolean strip_length;

    memset(out, 0, sizeof *out);
    /* What libsoup writes carries what a workload said: a NUL, or a CR or
     * LF that doesn't end a line, would make a head a client reads
     * otherwise. Refused, as at the way in. */
    if (memchr(data, '\0', length) != NULL)
        return NULL;
    if (line_end == NULL || line_end - data < 12 || memcmp(data, "HTTP/1.", 7) != 0 ||
        data[8] != ' ' || !g_ascii_isdigit(data[9]) || !g_ascii_isdigit(data[10]) ||
        !g_ascii_isdigit(data[11]))
        return NULL;
    out->status = (guint)((data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0'));
    /* A switch of protocols is the tunnel's business: as it is. */
    if (out->status == 101) {
        out->body = EINSORA_HTTP_BODY_UNTIL_CLOSE;
        return g_string_new_len(data, (gssize)length);
    }
    no_body = head_request || !status_has_body(out->status);
    strip_length = out->status < 200 || out->status == 204;

    head = g_string_sized_new(length + 32);
    g_string_append_len(head, data, line_end - data + 2);
    at = line_end + 2;
    while (at < end) {
        const char *next = memmem(at, (gsize)(end - at), "\r\n", 2);
        const char *colon;
        gsize name_length;

        if (next == NULL)
            return NULL;
        if (next == at)
            break;
        if (memchr(at, '\r', (gsize)(next - at)) != NULL ||
            memchr(at, '\n', (gsize)(next - at)) != NULL)
            return NULL;
        colon = memchr(at, ':', (gsize)(next - at));
        if (colon == NULL)
            return NULL;
        name_length = (gsize)(colon - at);
        if ((name_length == 10 && g_ascii_strncasecmp(at, "Connection", 10) == 0) ||
            (name_length == 10 && g_ascii_strncasecmp(at, "Keep-Alive", 10) == 0)) {
            at = next + 2;
            continue;
        }
        if (name_length == 17 && g_ascii_strncasecmp(at, "Transfer-Encoding", 17) == 0) {
            const char *value = colon + 1;
            gsize value_length = (gsize)(next - value);
            if (no_body) {
                at = next + 2;
                continue;
            }
            chunked = lists_token(value, value_length, "chunked");
        } else if (name_length == 14 && g_ascii_strncasecmp(at, "Content-Length", 14) == 0) {
            if (strip_length) {
                at = next + 2;
                continue;
            }
            {
                g_autofree gchar *value = g_strndup(colon + 1, (gsize)(next - colon - 1));
                has_length = g_ascii_string_to_unsigned(g_strstrip(value), 10, 0, G_MAXINT64,
                                                        &content_length, NULL);
            }
        }
        g_string_append_len(head, at, next - at + 2);
        at = next + 2;
    }

    if (out->status < 200) {
        /* An interim answer (100 Continue): the real one follows. */
        out->body = EINSORA_HTTP_BODY_NONE;
        g_string_append(head, "\r\n");
        return g_steal_pointer(&head);
    }
    if (no_body) {
        out->body = EINSORA_HTTP_BODY_NONE;
    } else if (chunked) {
        out->body = EINSORA_HTTP_BODY_CHUNKED;
    } else if (has_length) {
        out->body = content_length > 0 ? EINSORA_HTTP_BODY_LENGTH : EINSORA_HTTP_BODY_NONE;
        out->content_length = content_length;
    } else {
        out->body = EINSORA_HTTP_BODY_UNTIL_CLOSE;
    }
    if (out->body == EINSORA_HTTP_BODY_UNTIL_CLOSE ||
        (request_minor_version == 0 && out->body == EINSORA_HTTP_BODY_CHUNKED))
        *keep_alive = FALSE;
    if (!*keep_alive)
        g_string_append(head, "Connection: close\r\n");
    else if (request_minor_version == 0)
        g_string_append(head, "Connection: keep-alive\r\n");
    g_string_append(head, "\r\n");
    return g_steal_pointer(&head);
}
