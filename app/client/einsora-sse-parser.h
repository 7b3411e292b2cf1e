/* Server-sent events, as the HTML standard's "event stream
 * interpretation" reads them, one line at a time (the line's terminator,
 * CR, LF or CRLF, already taken off): "field: value" lines build an
 * event, a blank line dispatches it, ":" lines are comments. Pure: no I/O,
 * so it is tested on its own (tests/einsora-event-feed-test.c); the
 * stream's reader is EinsoraEventFeed. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The largest event (its data) the parser keeps; a bigger one is an
 * error, so a broken server can't make the client grow without end. */
#define EINSORA_SSE_MAX_EVENT_BYTES (1024 * 1024)

typedef struct {
    gchar *type; /* "message" when the stream named none */
    gchar *data; /* the data lines joined with "\n" */
    gchar *id;   /* the last event ID when it was dispatched; NULL if none yet */
} EinsoraSseEvent;

void einsora_sse_event_free(EinsoraSseEvent *event);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraSseEvent, einsora_sse_event_free)

typedef struct _EinsoraSseParser EinsoraSseParser;

/* @last_event_id: (nullable): where a reconnecting reader stands. */
EinsoraSseParser *einsora_sse_parser_new(const char *last_event_id);
void einsora_sse_parser_free(EinsoraSseParser *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraSseParser, einsora_sse_parser_free)

/* Reads one line of @length bytes (it may hold NULs; invalid UTF-8 is
 * replaced). When the line dispatched an event, *@event is set to it
 * (owned); a blank line with no data dispatches nothing, but an "id"
 * before it still moves the last event ID. FALSE and @error
 * (G_IO_ERROR_MESSAGE_TOO_LARGE) when an event grows past
 * EINSORA_SSE_MAX_EVENT_BYTES: the stream should be dropped. */
gboolean einsora_sse_parser_push_line(EinsoraSseParser *self, const char *line, gsize length,
                                      EinsoraSseEvent **event, GError **error);

/* The last event ID as of the last dispatch (what Last-Event-ID says on
 * reconnecting), or NULL. */
const char *einsora_sse_parser_get_last_event_id(EinsoraSseParser *self);
/* The reconnection time the server asked for ("retry:"), or -1. */
gint64 einsora_sse_parser_get_retry_ms(EinsoraSseParser *self);

G_END_DECLS
