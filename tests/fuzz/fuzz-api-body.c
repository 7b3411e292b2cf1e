/* The /v1 request body parser (einsora_api_parse_body()) with the member
 * tables of the handlers that read a body: POST /v1/workloads, POST
 * /v1/session and POST /v1/tokens. The tables are copies: keep them in
 * step with daemon/api. What it accepts holds only those members, each of
 * its type, and every required one. */
#include <stdio.h>
#include <string.h>

#include "einsora-api-request.h"
#include "einsora-fuzz.h"

static const EinsoraApiField create_workload[] = {
    {"kind", G_TYPE_STRING, TRUE},      {"name", G_TYPE_STRING, FALSE},
    {"gpu_class", G_TYPE_STRING, TRUE}, {"image", G_TYPE_STRING, TRUE},
    {"region", G_TYPE_STRING, FALSE},   {NULL},
};
static const EinsoraApiField login[] = {
    {"email", G_TYPE_STRING, TRUE},
    {"password", G_TYPE_STRING, TRUE},
    {NULL},
};
static const EinsoraApiField create_token[] = {{"name", G_TYPE_STRING, TRUE}, {NULL}};
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

    check(text, size, create_workload);
    check(text, size, login);
    check(text, size, create_token);
    check(text, size, every_type);
    return 0;
}
