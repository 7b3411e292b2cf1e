/* The Sync protocol's parsers, both directions: a report as the hub reads
 * it from an agent, desired state as an agent reads it from the hub. What
 * either accepts must write back to JSON that it accepts again. */
#include <stdio.h>
#include <string.h>

#include "einsora-fuzz.h"
#include "einsora-json-text.h"
#include "einsora-protocol.h"

static void
check_report(JsonNode *node)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_from_json(node, &error);

    if (report == NULL) {
        EINSORA_FUZZ_CHECK(error != NULL);
        return;
    }
    g_autoptr(JsonNode) again = einsora_sync_report_to_json(report);
    g_autoptr(EinsoraSyncReport) reread = einsora_sync_report_from_json(again, NULL);
    EINSORA_FUZZ_CHECK(reread != NULL);
}

static void
check_desired(JsonNode *node)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraDesiredState) state = einsora_desired_state_from_json(node, &error);

    if (state == NULL) {
        EINSORA_FUZZ_CHECK(error != NULL);
        return;
    }
    g_autoptr(JsonNode) again = einsora_desired_state_to_json(state);
    g_autoptr(EinsoraDesiredState) reread = einsora_desired_state_from_json(again, NULL);
    EINSORA_FUZZ_CHECK(reread != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    JsonNode *root;

    /* As the network transport will: text of several values never reaches
     * json-glib (einsora-json-text.h). */
    if (!einsora_json_text_is_one_value(text, size) ||
        !json_parser_load_from_data(parser, text, (gssize)size, NULL))
        return 0;
    root = json_parser_get_root(parser);
    if (root == NULL)
        return 0;
    check_report(root);
    check_desired(root);
    return 0;
}
