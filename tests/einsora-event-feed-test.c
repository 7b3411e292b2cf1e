/* The SSE parser that EinsoraEventFeed reads the change feed with, table
 * by table: each stream is split into lines by a GDataInputStream the way
 * the feed splits it (CR, LF or CRLF), and the events dispatched, the
 * last event ID and the retry time are compared. */
#include <gio/gio.h>

#include "einsora-sse-parser.h"

#define MAX_EVENTS 4

typedef struct {
    const char *type;
    const char *data;
    const char *id; /* NULL: the event has no ID */
} Expected;

typedef struct {
    const char *name;
    const char *start_id; /* the parser's starting last event ID */
    const char *stream;
    Expected events[MAX_EVENTS]; /* ends at the first NULL type */
    const char *last_id;
    gint64 retry_ms;
} Case;

static const Case cases[] = {
    {"one event",
     NULL,
     "id: 1\nevent: workload\ndata: {\"seq\":1}\n\n",
     {{"workload", "{\"seq\":1}", "1"}},
     "1",
     -1},
    {"what Einsora's feed sends",
     NULL,
     ": connected\nid: 41\n\nid: 42\nevent: workload\ndata: {}\n\n: keep-alive\n\n",
     {{"workload", "{}", "42"}},
     "42",
     -1},
    {"no blank line: the last event is never dispatched",
     NULL,
     "data: a\n\ndata: b\n",
     {{"message", "a", NULL}},
     NULL,
     -1},
    {"data lines join with newlines",
     NULL,
     "data: first\ndata: second\ndata:\ndata: fourth\n\n",
     {{"message", "first\nsecond\n\nfourth", NULL}},
     NULL,
     -1},
    {"comments are ignored",
     NULL,
     ": connected\n\n:\n: keep-alive\ndata: x\n\n",
     {{"message", "x", NULL}},
     NULL,
     -1},
    {"CRLF line ends", NULL, "id: 5\r\ndata: x\r\n\r\n", {{"message", "x", "5"}}, "5", -1},
    {"CR line ends", NULL, "id: 6\rdata: y\r\r", {{"message", "y", "6"}}, "6", -1},
    {"mixed line ends",
     NULL,
     "data: a\r\ndata: b\rdata: c\n\r\n",
     {{"message", "a\nb\nc", NULL}},
     NULL,
     -1},
    {"one space after the colon is dropped, only one",
     NULL,
     "data:x\n\ndata:  y\n\n",
     {{"message", "x", NULL}, {"message", " y", NULL}},
     NULL,
     -1},
    {"a field without a colon has an empty value",
     NULL,
     "data\n\n",
     {{"message", "", NULL}},
     NULL,
     -1},
    {"a value may hold colons",
     NULL,
     "data: a: b: c\n\n",
     {{"message", "a: b: c", NULL}},
     NULL,
     -1},
    {"an ID alone moves the last ID and dispatches nothing", NULL, "id: 7\n\n", {{NULL}}, "7", -1},
    {"an ID not followed by a blank line doesn't count", "3", "id: 9\n", {{NULL}}, "3", -1},
    {"the ID carries over to later events",
     NULL,
     "id: 3\ndata: a\n\ndata: b\n\n",
     {{"message", "a", "3"}, {"message", "b", "3"}},
     "3",
     -1},
    {"an empty ID clears it",
     NULL,
     "id: 3\ndata: a\n\nid\ndata: b\n\n",
     {{"message", "a", "3"}, {"message", "b", NULL}},
     NULL,
     -1},
    {"the starting ID until the server sends one",
     "41",
     "data: x\n\nid: 50\ndata: y\n\n",
     {{"message", "x", "41"}, {"message", "y", "50"}},
     "50",
     -1},
    {"the event type resets after each dispatch",
     NULL,
     "event: workload\ndata: 1\n\ndata: 2\n\n",
     {{"workload", "1", NULL}, {"message", "2", NULL}},
     NULL,
     -1},
    {"an empty event type is a message",
     NULL,
     "event:\ndata: 1\n\n",
     {{"message", "1", NULL}},
     NULL,
     -1},
    {"an event type without data is forgotten",
     NULL,
     "event: workload\n\ndata: 1\n\n",
     {{"message", "1", NULL}},
     NULL,
     -1},
    {"unknown fields are ignored",
     NULL,
     "foo: bar\nDATA: no\ndata: yes\n\n",
     {{"message", "yes", NULL}},
     NULL,
     -1},
    {"a byte order mark begins the stream",
     NULL,
     "\xEF\xBB\xBF"
     "data: x\n\n",
     {{"message", "x", NULL}},
     NULL,
     -1},
    {"retry in milliseconds", NULL, "retry: 1500\n\n", {{NULL}}, NULL, 1500},
    {"retry that isn't all digits is ignored",
     NULL,
     "retry: 1.5\nretry: -1\nretry:  2\n\n",
     {{NULL}},
     NULL,
     -1},
    {"blank lines alone dispatch nothing", NULL, "\n\n\n", {{NULL}}, NULL, -1},
    {"invalid UTF-8 is replaced",
     NULL,
     "data: a\xFF"
     "b\n\n",
     {{"message",
       "a\xEF\xBF\xBD"
       "b",
       NULL}},
     NULL,
     -1},
};

/* Runs @stream through a parser, line by line as a GDataInputStream
 * splits it; @events gets what was dispatched. */
static EinsoraSseParser *
parse_stream(const char *start_id, const char *stream, gsize length, GPtrArray *events,
             GError **error)
{
    g_autoptr(GInputStream) memory = g_memory_input_stream_new_from_data(stream, length, NULL);
    g_autoptr(GDataInputStream) lines = g_data_input_stream_new(memory);
    g_autoptr(EinsoraSseParser) parser = einsora_sse_parser_new(start_id);

    g_data_input_stream_set_newline_type(lines, G_DATA_STREAM_NEWLINE_TYPE_ANY);
    for (;;) {
        gsize line_length = 0;
        g_autoptr(GError) read_error = NULL;
        g_autofree gchar *line =
            g_data_input_stream_read_line(lines, &line_length, NULL, &read_error);
        EinsoraSseEvent *event = NULL;

        g_assert_no_error(read_error);
        if (line == NULL)
            break;
        if (!einsora_sse_parser_push_line(parser, line, line_length, &event, error))
            return NULL;
        if (event != NULL)
            g_ptr_array_add(events, event);
    }
    return g_steal_pointer(&parser);
}

static void
test_table(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const Case *c = &cases[i];
        g_autoptr(GPtrArray) events =
            g_ptr_array_new_with_free_func((GDestroyNotify)einsora_sse_event_free);
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraSseParser) parser = NULL;
        guint expected = 0;

        g_test_message("case %u: %s", i, c->name);
        parser = parse_stream(c->start_id, c->stream, strlen(c->stream), events, &error);
        g_assert_no_error(error);
        g_assert_nonnull(parser);
        while (expected < MAX_EVENTS && c->events[expected].type != NULL)
            expected++;
        g_assert_cmpuint(events->len, ==, expected);
        for (guint e = 0; e < events->len; e++) {
            const EinsoraSseEvent *event = g_ptr_array_index(events, e);
            g_assert_cmpstr(event->type, ==, c->events[e].type);
            g_assert_cmpstr(event->data, ==, c->events[e].data);
            g_assert_cmpstr(event->id, ==, c->events[e].id);
        }
        g_assert_cmpstr(einsora_sse_parser_get_last_event_id(parser), ==, c->last_id);
        g_assert_cmpint(einsora_sse_parser_get_retry_ms(parser), ==, c->retry_ms);
    }
}

/* An ID holding a NUL is ignored, as the standard says. */
static void
test_id_with_nul(void)
{
    static const char stream[] = "id: 4\n\nid: 5\0x\ndata: d\n\n";
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_sse_event_free);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSseParser) parser =
        parse_stream(NULL, stream, sizeof(stream) - 1, events, &error);

    g_assert_no_error(error);
    g_assert_cmpuint(events->len, ==, 1);
    g_assert_cmpstr(((EinsoraSseEvent *)g_ptr_array_index(events, 0))->id, ==, "4");
    g_assert_cmpstr(einsora_sse_parser_get_last_event_id(parser), ==, "4");
}

/* A stream that never ends an event can't make the reader grow without
 * end: past the limit, it is an error. */
static void
test_event_too_large(void)
{
    g_autoptr(GString) stream = g_string_new(NULL);
    g_autofree gchar *line = g_strnfill(64 * 1024, 'x');
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_sse_event_free);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSseParser) parser = NULL;

    for (guint i = 0; i < EINSORA_SSE_MAX_EVENT_BYTES / (64 * 1024) + 1; i++)
        g_string_append_printf(stream, "data: %s\n", line);
    g_string_append(stream, "\n");
    parser = parse_stream(NULL, stream->str, stream->len, events, &error);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE);
    g_assert_null(parser);
    g_assert_cmpuint(events->len, ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sse/parser/table", test_table);
    g_test_add_func("/sse/parser/id-with-nul-ignored", test_id_with_nul);
    g_test_add_func("/sse/parser/event-too-large", test_event_too_large);
    return g_test_run();
}
