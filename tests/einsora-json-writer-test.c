/* Lists are written as text, row by row (einsora-json-writer.h); each row
 * must read exactly as json-glib writes the same object, and be JSON. */
#include <json-glib/json-glib.h>

#include "einsora-json-writer.h"
#include "einsora-workload-json.h"

/* Strings a name or a reason might hold. */
static const char *const awkward[] = {
    "plain",
    "",
    "quote \" backslash \\ slash /",
    "line\nfeed\r\ttab\b\f",
    "\x01 start of heading, \x7f delete",
    "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80",
    "</script><script>alert(1)</script>",
};

static gchar *
node_text(JsonNode *node)
{
    return json_to_string(node, FALSE);
}

static void
test_workload_matches_json_glib(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(awkward); i++) {
        g_autoptr(EinsoraWorkload) workload = einsora_workload_new();
        g_autoptr(GString) out = g_string_new(NULL);
        g_autoptr(JsonNode) node = NULL;
        g_autofree gchar *expected = NULL;

        workload->id = g_strdup("0190b5d2-7c4e-7abc-8def-000000000001");
        workload->tenant_id = g_strdup("0190b5d2-7c4e-7abc-8def-000000000002");
        workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
        workload->name = g_strdup(awkward[i]);
        workload->state = EINSORA_WORKLOAD_STATE_RUNNING;
        workload->region = g_strdup("local");
        workload->gpu_class = g_strdup("cpu-2c-4g");
        /* placed_class, machine_id, driver: NULL on even rows. */
        if (i % 2 == 1) {
            workload->placed_class = g_strdup("cpu-2c-4g");
            workload->machine_id = g_strdup("0190b5d2-7c4e-7abc-8def-000000000003");
            workload->driver = g_strdup("sim");
        }
        workload->image = g_strdup(awkward[G_N_ELEMENTS(awkward) - 1 - i]);
        workload->gpus = i;
        workload->attempt = -(gint64)i;
        workload->version = G_MAXINT64 - i;
        workload->created_by = g_strdup("user");
        workload->created_at = g_strdup("2026-01-01T00:00:00.000000Z");
        workload->updated_at = g_strdup("2026-01-01T00:00:01.000000Z");

        node = einsora_workload_to_json(workload);
        expected = node_text(node);
        einsora_workload_append_json(out, workload);
        g_assert_cmpstr(out->str, ==, expected);
    }
}

static void
test_event_matches_json_glib(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(awkward); i++) {
        g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();
        g_autoptr(GString) out = g_string_new(NULL);
        g_autoptr(GString) with_seq = g_string_new(NULL);
        g_autoptr(JsonNode) node = NULL;
        g_autofree gchar *expected = NULL;
        g_autofree gchar *expected_with_seq = NULL;

        event->id = g_strdup("0190b5d2-7c4e-7abc-8def-000000000004");
        event->workload_id = g_strdup("0190b5d2-7c4e-7abc-8def-000000000001");
        event->has_from_state = i % 2 == 0;
        event->from_state = EINSORA_WORKLOAD_STATE_PENDING;
        event->to_state =
            i % 3 == 0 ? EINSORA_WORKLOAD_STATE_PENDING : EINSORA_WORKLOAD_STATE_QUEUED;
        event->reason = i == 1 ? NULL : g_strdup(awkward[i]);
        event->attempt = i;
        event->created_at = g_strdup("2026-01-01T00:00:00.000000Z");
        event->seq = 1000 + i;

        node = einsora_workload_event_to_json(event);
        expected = node_text(node);
        einsora_workload_event_append_json(out, event, FALSE);
        g_assert_cmpstr(out->str, ==, expected);

        json_object_set_int_member(json_node_get_object(node), "seq", event->seq);
        expected_with_seq = node_text(node);
        einsora_workload_event_append_json(with_seq, event, TRUE);
        g_assert_cmpstr(with_seq->str, ==, expected_with_seq);
    }
}

/* Every control character comes back as itself: json-glib 1.6 writes
 * 0x1f raw, which JSON forbids, so here the writer must not copy it. */
static void
test_control_characters_round_trip(void)
{
    for (guint c = 1; c < 0x20; c++) {
        gchar text[] = {'a', (gchar)c, 'b', '\0'};
        g_autoptr(GString) out = g_string_new(NULL);
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(GError) error = NULL;

        einsora_json_append_string(out, text);
        for (gsize i = 0; i < out->len; i++)
            g_assert_cmpuint((guchar)out->str[i], >=, 0x20);
        g_assert_true(json_parser_load_from_data(parser, out->str, -1, &error));
        g_assert_no_error(error);
        g_assert_cmpstr(json_node_get_string(json_parser_get_root(parser)), ==, text);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/json-writer/workload-matches-json-glib", test_workload_matches_json_glib);
    g_test_add_func("/json-writer/event-matches-json-glib", test_event_matches_json_glib);
    g_test_add_func("/json-writer/control-characters-round-trip",
                    test_control_characters_round_trip);
    return g_test_run();
}
