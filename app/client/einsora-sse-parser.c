/* The event stream interpretation of the HTML standard
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html),
 * line by line. */
#define G_LOG_DOMAIN "einsora-client"

#include "einsora-sse-parser.h"

#include <gio/gio.h>
#include <string.h>

struct _EinsoraSseParser {
    GString *data;    /* the data buffer */
    gchar *type;      /* the event type buffer; NULL: none */
    gchar *id_buffer; /* the last event ID buffer; "" or NULL: none */
    gchar *last_id;   /* as of the last dispatch */
    gint64 retry_ms;  /* -1 until the server says */
    gboolean started; /* a first line was read (a BOM may begin it) */
};

void
einsora_sse_event_free(EinsoraSseEvent *event)
{
    if (event == NULL)
        return;
    g_free(event->type);
    g_free(event->data);
    g_free(event->id);
    g_free(event);
}

EinsoraSseParser *
einsora_sse_parser_new(const char *last_event_id)
{
    EinsoraSseParser *self = g_new0(EinsoraSseParser, 1);

    self->data = g_string_new(NULL);
    self->id_buffer = g_strdup(last_event_id);
    self->last_id = g_strdup(last_event_id);
    self->retry_ms = -1;
    return self;
}

void
einsora_sse_parser_free(EinsoraSseParser *self)
{
    if (self == NULL)
        return;
    g_string_free(self->data, TRUE);
    g_free(self->type);
    g_free(self->id_buffer);
    g_free(self->last_id);
    g_free(self);
}

const char *
einsora_sse_parser_get_last_event_id(EinsoraSseParser *self)
{
    return self->last_id;
}

gint64
einsora_sse_parser_get_retry_ms(EinsoraSseParser *self)
{
    return self->retry_ms;
}

static EinsoraSseEvent *
dispatch(EinsoraSseParser *self)
{
    EinsoraSseEvent *event;

    /* The ID moves even when nothing is dispatched: an "id:" alone says
     * where the reader stands. */
    g_free(self->last_id);
    self->last_id =
        self->id_buffer != NULL && *self->id_buffer != '\0' ? g_strdup(self->id_buffer) : NULL;
    if (self->data->len == 0) {
        g_clear_pointer(&self->type, g_free);
        return NULL;
    }
    /* The last data line's newline is not part of the data. */
    g_string_truncate(self->data, self->data->len - 1);
    event = g_new0(EinsoraSseEvent, 1);
    event->type = self->type != NULL && *self->type != '\0' ? g_steal_pointer(&self->type)
                                                            : g_strdup("message");
    g_clear_pointer(&self->type, g_free);
    event->data = g_strndup(self->data->str, self->data->len);
    event->id = g_strdup(self->last_id);
    g_string_truncate(self->data, 0);
    return event;
}

static gboolean
is_digits(const char *text)
{
    return *text != '\0' && strspn(text, "0123456789") == strlen(text);
}

gboolean
einsora_sse_parser_push_line(EinsoraSseParser *self, const char *line, gsize length,
                             EinsoraSseEvent **event, GError **error)
{
    g_autofree gchar *text = NULL;
    const char *field;
    const char *value;
    gsize text_length;
    g_autofree gchar *name = NULL;
    const char *colon;

    *event = NULL;
    /* CR ends a line in SSE, so none is ever part of one; a reader that
     * split on LF only (or met a CR at the very end) leaves one here. */
    if (length > 0 && line[length - 1] == '\r')
        length--;
    text = g_utf8_make_valid(line, (gssize)length);
    field = text;
    /* make_valid keeps NULs; the field and value end at the first. */
    text_length = strlen(text);
    if (!self->started) {
        self->started = TRUE;
        if (g_str_has_prefix(text, "\xEF\xBB\xBF")) {
            field += 3;
            text_length -= 3;
        }
    }
    if (text_length == 0) {
        *event = dispatch(self);
        return TRUE;
    }
    if (*field == ':')
        return TRUE; /* a comment */
    colon = strchr(field, ':');
    if (colon != NULL) {
        name = g_strndup(field, (gsize)(colon - field));
        value = colon + 1;
        if (*value == ' ')
            value++;
    } else {
        name = g_strdup(field);
        value = "";
    }

    if (g_str_equal(name, "event")) {
        g_free(self->type);
        self->type = g_strdup(value);
    } else if (g_str_equal(name, "data")) {
        if (self->data->len + strlen(value) + 1 > EINSORA_SSE_MAX_EVENT_BYTES) {
            g_string_truncate(self->data, 0);
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                        "an event in the stream is larger than %d bytes",
                        EINSORA_SSE_MAX_EVENT_BYTES);
            return FALSE;
        }
        g_string_append(self->data, value);
        g_string_append_c(self->data, '\n');
    } else if (g_str_equal(name, "id")) {
        /* An ID holding a NUL is ignored (the line went on past it). */
        if (memchr(line, '\0', length) == NULL) {
            g_free(self->id_buffer);
            self->id_buffer = g_strdup(value);
        }
    } else if (g_str_equal(name, "retry")) {
        guint64 ms = 0;
        if (is_digits(value) && g_ascii_string_to_unsigned(value, 10, 0, G_MAXINT64, &ms, NULL))
            self->retry_ms = (gint64)ms;
    }
    /* Any other field is ignored. */
    return TRUE;
}
