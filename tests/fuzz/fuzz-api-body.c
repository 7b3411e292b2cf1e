/* The /v1 request body parser (einsora_api_parse_body()) with the member
 * tables of the handlers that read a body, their own: POST /v1/workloads,
 * POST /v1/login, POST /v1/tokens and POST /v1/model-store. What it accepts holds only those
 * members, each of its type, and every required one. */
#include <stdio.h>
#include <string.h>

#include "einsora-api-routes.h"
#include "einsora-fuzz.h"

/* Every type the parser knows, none required. */
static const EinsoraApiField every_type[] = {
    {"s", G_TYPE_STRING, FALSE},
    {"b", G_TYPE_BOOLEAN, FALSE},
    {"i", G_TYPE_INT64, FALSE},
    {NULL},
};

static void
check(const char *text, gsize size, const EinsoraApiField *fields)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body = einsora_api_parse_body(text, size, fields, &error);

    if (body == NULL) {
        EINSORA_FUZZ_CHECK(error != NULL);
        return;
    }
    EINSORA_FUZZ_CHECK(error == NULL);
    for (guint i = 0; fields[i].name != NULL; i++) {
        JsonNode *node = json_object_get_member(body, fields[i].name);
        if (node == NULL) {
            EINSORA_FUZZ_CHECK(!fields[i].required);
            continue;
        }
        EINSORA_FUZZ_CHECK(JSON_NODE_HOLDS_VALUE(node));
        EINSORA_FUZZ_CHECK(json_node_get_value_type(node) == fields[i].type);
        if (fields[i].type == G_TYPE_STRING)
            EINSORA_FUZZ_CHECK(json_node_get_string(node) != NULL);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);

    check(text, size, einsora_api_workloads_create_fields);
    check(text, size, einsora_api_session_login_fields);
    check(text, size, einsora_api_tokens_create_fields);
    check(text, size, einsora_api_models_import_fields);
    check(text, size, einsora_api_admin_accounts_create_fields);
    check(text, size, einsora_api_admin_quota_set_fields);
    check(text, size, einsora_api_password_change_fields);
    check(text, size, einsora_api_machines_sharing_fields);
    check(text, size, einsora_api_enrolments_create_fields);
    check(text, size, einsora_api_agent_enroll_fields);
    check(text, size, every_type);
    return 0;
}
