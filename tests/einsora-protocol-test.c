#include <json-glib/json-glib.h>

#include "einsora-error.h"
#include "einsora-protocol.h"
#include "einsora-reason.h"

#define MACHINE_ID "0190b5d2-7c4e-7abc-8def-0123456789ab"
#define TENANT_ID "0190b5d2-7c4e-7abc-8def-00000000000a"
#define WORKLOAD_1 "0190b5d2-7c4e-7abc-8def-000000000001"
#define WORKLOAD_2 "0190b5d2-7c4e-7abc-8def-000000000002"

/* Both messages as they travel: text through the real generator and parser. */
static const char *const report_json =
    "{\"machine_id\": \"" MACHINE_ID "\", \"applied_generation\": 7,"
    " \"statuses\": ["
    "  {\"workload_id\": \"" WORKLOAD_1 "\", \"attempt\": 2, \"mode\": \"run\","
    "   \"code\": \"running\", \"applied_generation\": 7,"
    "   \"activity\": {\"busy_kernels\": 2, \"last_active_ms\": 1764406000123}},"
    "  {\"workload_id\": \"" WORKLOAD_2 "\", \"attempt\": 0, \"mode\": \"park\","
    "   \"code\": \"starting\", \"applied_generation\": 6,"
    "   \"pull\": {\"layers_done\": 1, \"layers\": 3, \"bytes_done\": 5, \"bytes_total\": 9}}],"
    " \"inventory\": {\"os\": \"linux\", \"arch\": \"x86_64\", \"cpus\": 16,"
    "  \"memory_mib\": 65536,"
    "  \"gpus\": [{\"vendor\": \"nvidia\", \"model\": \"L40S\", \"memory_mib\": 46068}],"
    "  \"drivers\": [\"linux-native\", \"docker\", \"sim\"]},"
    " \"agent_version\": \"0.2.0~rc1+git5\", \"sent_at\": \"2026-11-29T09:06:36.123456Z\"}";

#define MODEL_DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char *const desired_json =
    "{\"machine_id\": \"" MACHINE_ID "\", \"generation\": 12,"
    " \"workloads\": ["
    "  {\"workload_id\": \"" WORKLOAD_1 "\", \"tenant_id\": \"" TENANT_ID "\","
    "   \"mode\": \"run\", \"attempt\": 3, \"kind\": \"notebook\", \"driver\": \"linux-native\","
    "   \"placed_class\": \"cpu-4c-16g\", \"image\": \"jupyter-scipy\","
    "   \"runtime_reference\": \"debian:jupyter-notebook\", \"server\": \"jupyter\", \"cpus\": 4,"
    "   \"memory_mib\": 16384, \"devices\": 0},"
    "  {\"workload_id\": \"" WORKLOAD_2 "\", \"tenant_id\": \"" TENANT_ID "\","
    "   \"mode\": \"remove\", \"attempt\": 1, \"kind\": \"endpoint\", \"driver\": \"docker\","
    "   \"placed_class\": \"l40s-48gb\", \"cpus\": 8, \"memory_mib\": 32768,"
    "   \"devices\": 1, \"gpu_indexes\": [2], \"model\": \"tiny:1m\","
    "   \"model_digest\": \"" MODEL_DIGEST "\"}]}";

static JsonNode *
parse(const char *text)
{
    g_autoptr(GError) error = NULL;
    JsonNode *node = json_from_string(text, &error);

    g_assert_no_error(error);
    g_assert_nonnull(node);
    return node;
}

static gchar *
to_text(JsonNode *node)
{
    return json_to_string(node, FALSE);
}

static void
test_status_codes(void)
{
    static const struct {
        const char *name;
        EinsoraStatusCode code;
        const char *reason; /* NULL: only checked to be there */
    } table[] = {
        {"starting", EINSORA_STATUS_CODE_STARTING, "starting on its machine"},
        {"running", EINSORA_STATUS_CODE_RUNNING, NULL},
        {"stopping", EINSORA_STATUS_CODE_STOPPING, NULL},
        {"stopped", EINSORA_STATUS_CODE_STOPPED, NULL},
        {"removing", EINSORA_STATUS_CODE_REMOVING, NULL},
        {"removed", EINSORA_STATUS_CODE_REMOVED, NULL},
        {"failed_to_start", EINSORA_STATUS_CODE_FAILED_TO_START, NULL},
        {"out_of_memory", EINSORA_STATUS_CODE_OUT_OF_MEMORY, "it ran out of memory"},
        {"gpu_busy", EINSORA_STATUS_CODE_GPU_BUSY, "waiting for its machine's GPU to be free"},
        {"driver_missing", EINSORA_STATUS_CODE_DRIVER_MISSING, "its machine has no driver for it"},
        {"isolation_refused", EINSORA_STATUS_CODE_ISOLATION_REFUSED, NULL},
        {"move_refused", EINSORA_STATUS_CODE_MOVE_REFUSED, NULL},
        {"image_missing", EINSORA_STATUS_CODE_IMAGE_MISSING, NULL},
        {"exited", EINSORA_STATUS_CODE_EXITED, "it stopped by itself"},
        {"sandbox_changed", EINSORA_STATUS_CODE_SANDBOX_CHANGED, NULL},
        {"runtime_unreachable", EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE,
         "its machine's container engine doesn't answer; waiting for it"},
        {"pull_failed", EINSORA_STATUS_CODE_PULL_FAILED,
         "couldn't pull its image: it doesn't exist or this machine can't reach the registry"},
    };
    g_autoptr(GHashTable) reasons = g_hash_table_new(g_str_hash, g_str_equal);
    gchar *cleaned = NULL;

    G_STATIC_ASSERT(G_N_ELEMENTS(table) == EINSORA_STATUS_CODE_COUNT - 1);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        const char *reason = einsora_status_code_reason(table[i].code);

        g_test_message("code %s", table[i].name);
        g_assert_cmpint(einsora_status_code_from_string(table[i].name), ==, table[i].code);
        g_assert_cmpstr(einsora_status_code_to_string(table[i].code), ==, table[i].name);
        g_assert_nonnull(reason);
        if (table[i].reason != NULL)
            g_assert_cmpstr(reason, ==, table[i].reason);
        /* Each code says something of its own, and a clean reason at that. */
        g_assert_true(g_hash_table_add(reasons, (gpointer)reason));
        cleaned = einsora_reason_clean(reason);
        g_assert_cmpstr(cleaned, ==, reason);
        g_clear_pointer(&cleaned, g_free);
    }
}

/* An agent can't write text into a timeline: any code outside the
 * vocabulary reads as the one fixed reason. */
static void
test_unknown_codes(void)
{
    static const char *const unknown[] = {
        "weird_thing", "", "RUNNING", "running ", "unknown", "its machine exploded",
    };

    for (guint i = 0; i < G_N_ELEMENTS(unknown); i++) {
        EinsoraStatusCode code = einsora_status_code_from_string(unknown[i]);

        g_assert_cmpint(code, ==, EINSORA_STATUS_CODE_UNKNOWN);
        g_assert_cmpstr(einsora_status_code_reason(code), ==, "its machine reported a problem");
    }
    g_assert_cmpint(einsora_status_code_from_string(NULL), ==, EINSORA_STATUS_CODE_UNKNOWN);
    g_assert_cmpstr(einsora_status_code_reason(EINSORA_STATUS_CODE_UNKNOWN), ==,
                    einsora_reason_machine_reported_problem());
    g_assert_cmpstr(einsora_status_code_reason((EinsoraStatusCode)999), ==,
                    einsora_reason_machine_reported_problem());
    g_assert_cmpstr(einsora_status_code_to_string((EinsoraStatusCode)999), ==, "unknown");
}

/* Active is exactly "something is under way on its machine"; a workload
 * waiting for a GPU, failed, exited or settled is not. Every code is
 * listed, so a new one has to be decided here. */
static void
test_active_codes(void)
{
    static const struct {
        EinsoraStatusCode code;
        gboolean active;
    } table[] = {
        {EINSORA_STATUS_CODE_UNKNOWN, FALSE},
        {EINSORA_STATUS_CODE_STARTING, TRUE},
        {EINSORA_STATUS_CODE_RUNNING, TRUE},
        {EINSORA_STATUS_CODE_STOPPING, TRUE},
        {EINSORA_STATUS_CODE_STOPPED, FALSE},
        {EINSORA_STATUS_CODE_REMOVING, TRUE},
        {EINSORA_STATUS_CODE_REMOVED, FALSE},
        {EINSORA_STATUS_CODE_FAILED_TO_START, FALSE},
        {EINSORA_STATUS_CODE_OUT_OF_MEMORY, FALSE},
        {EINSORA_STATUS_CODE_GPU_BUSY, FALSE},
        {EINSORA_STATUS_CODE_DRIVER_MISSING, FALSE},
        {EINSORA_STATUS_CODE_ISOLATION_REFUSED, FALSE},
        {EINSORA_STATUS_CODE_MOVE_REFUSED, FALSE},
        {EINSORA_STATUS_CODE_IMAGE_MISSING, FALSE},
        {EINSORA_STATUS_CODE_EXITED, FALSE},
        {EINSORA_STATUS_CODE_SANDBOX_CHANGED, FALSE},
        /* It may still run: nothing else may start in its place. */
        {EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE, TRUE},
        {EINSORA_STATUS_CODE_PULL_FAILED, FALSE},
    };

    G_STATIC_ASSERT(G_N_ELEMENTS(table) == EINSORA_STATUS_CODE_COUNT);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_test_message("code %s", einsora_status_code_to_string(table[i].code));
        g_assert_cmpint(einsora_status_code_is_active(table[i].code), ==, table[i].active);
    }
    g_assert_false(einsora_status_code_is_active((EinsoraStatusCode)999));
}

static void
test_unknown_code_in_report(void)
{
    g_autoptr(JsonNode) node = parse(report_json);
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(GError) error = NULL;
    JsonObject *status = json_array_get_object_element(
        json_object_get_array_member(json_node_get_object(node), "statuses"), 1);
    const EinsoraWorkloadStatus *parsed;

    json_object_set_string_member(status, "code", "weird_thing");
    report = einsora_sync_report_from_json(node, &error);
    g_assert_no_error(error);
    parsed = report->statuses->pdata[1];
    g_assert_cmpint(parsed->code, ==, EINSORA_STATUS_CODE_UNKNOWN);
    g_assert_cmpstr(einsora_status_code_reason(parsed->code), ==, "its machine reported a problem");
}

static void
test_workload_modes(void)
{
    EinsoraWorkloadMode mode = EINSORA_WORKLOAD_MODE_RUN;

    for (guint i = 0; i < EINSORA_WORKLOAD_MODE_COUNT; i++) {
        g_assert_true(einsora_workload_mode_from_string(
            einsora_workload_mode_to_string((EinsoraWorkloadMode)i), &mode));
        g_assert_cmpint(mode, ==, i);
    }
    g_assert_cmpstr(einsora_workload_mode_to_string(EINSORA_WORKLOAD_MODE_PARK), ==, "park");
    g_assert_false(einsora_workload_mode_from_string("delete", &mode));
    g_assert_false(einsora_workload_mode_from_string(NULL, &mode));
    g_assert_null(einsora_workload_mode_to_string((EinsoraWorkloadMode)3));
}

static void
test_report_round_trip(void)
{
    g_autoptr(JsonNode) node = parse(report_json);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_from_json(node, &error);
    g_autoptr(EinsoraSyncReport) copy = NULL;
    g_autoptr(EinsoraSyncReport) again = NULL;
    g_autoptr(JsonNode) written = NULL;
    g_autoptr(JsonNode) reread = NULL;
    g_autoptr(JsonNode) copied = NULL;
    g_autofree gchar *written_text = NULL;
    g_autofree gchar *reread_text = NULL;
    g_autofree gchar *copied_text = NULL;
    const EinsoraWorkloadStatus *status;
    const EinsoraInventoryGpu *gpu;

    g_assert_no_error(error);
    g_assert_cmpstr(report->machine_id, ==, MACHINE_ID);
    g_assert_cmpint(report->applied_generation, ==, 7);
    g_assert_cmpuint(report->statuses->len, ==, 2);
    status = report->statuses->pdata[0];
    g_assert_cmpstr(status->workload_id, ==, WORKLOAD_1);
    g_assert_cmpint(status->attempt, ==, 2);
    g_assert_cmpint(status->mode, ==, EINSORA_WORKLOAD_MODE_RUN);
    g_assert_cmpint(status->code, ==, EINSORA_STATUS_CODE_RUNNING);
    g_assert_cmpint(status->applied_generation, ==, 7);
    g_assert_cmpint(status->pull.layers, ==, 0);
    g_assert_cmpint(status->activity.busy_kernels, ==, 2);
    g_assert_cmpint(status->activity.last_active_ms, ==, G_GINT64_CONSTANT(1764406000123));
    status = report->statuses->pdata[1];
    g_assert_cmpint(status->activity.busy_kernels, ==, 0);
    g_assert_cmpint(status->activity.last_active_ms, ==, 0);
    g_assert_cmpint(status->pull.layers_done, ==, 1);
    g_assert_cmpint(status->pull.layers, ==, 3);
    g_assert_cmpint(status->pull.bytes_done, ==, 5);
    g_assert_cmpint(status->pull.bytes_total, ==, 9);
    g_assert_nonnull(report->inventory);
    g_assert_cmpstr(report->inventory->os, ==, "linux");
    g_assert_cmpint(report->inventory->cpus, ==, 16);
    g_assert_cmpuint(g_strv_length(report->inventory->drivers), ==, 3);
    gpu = report->inventory->gpus->pdata[0];
    g_assert_cmpstr(gpu->vendor, ==, "nvidia");
    g_assert_cmpint(gpu->memory_mib, ==, 46068);
    g_assert_cmpstr(report->agent_version, ==, "0.2.0~rc1+git5");
    g_assert_cmpstr(report->sent_at, ==, "2026-11-29T09:06:36.123456Z");

    /* to_json then from_json gives the same message, through text too. */
    written = einsora_sync_report_to_json(report);
    written_text = to_text(written);
    reread = parse(written_text);
    again = einsora_sync_report_from_json(reread, &error);
    g_assert_no_error(error);
    g_clear_pointer(&reread, json_node_unref);
    reread = einsora_sync_report_to_json(again);
    reread_text = to_text(reread);
    g_assert_cmpstr(reread_text, ==, written_text);
    g_assert_true(json_node_equal(written, node));

    copy = einsora_sync_report_copy(report);
    copied = einsora_sync_report_to_json(copy);
    copied_text = to_text(copied);
    g_assert_cmpstr(copied_text, ==, written_text);
}

/* Inventory is sent only when it changed: absent, and absent again. */
static void
test_report_without_inventory(void)
{
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_new();
    g_autoptr(EinsoraSyncReport) again = NULL;
    g_autoptr(EinsoraSyncReport) copy = NULL;
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(GError) error = NULL;

    report->machine_id = g_strdup(MACHINE_ID);
    node = einsora_sync_report_to_json(report);
    g_assert_false(json_object_has_member(json_node_get_object(node), "inventory"));
    again = einsora_sync_report_from_json(node, &error);
    g_assert_no_error(error);
    g_assert_null(again->inventory);
    g_assert_cmpuint(again->statuses->len, ==, 0);
    copy = einsora_sync_report_copy(again);
    g_assert_null(copy->inventory);
}

/* An agent from before docs/adr/0057 sends neither its version nor its
 * clock: its report is read, and nothing is made up for it. */
static void
test_report_from_older_agent(void)
{
    g_autoptr(JsonNode) node = parse(report_json);
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(JsonNode) written = NULL;
    g_autoptr(GError) error = NULL;

    json_object_remove_member(json_node_get_object(node), "agent_version");
    json_object_remove_member(json_node_get_object(node), "sent_at");
    report = einsora_sync_report_from_json(node, &error);
    g_assert_no_error(error);
    g_assert_null(report->agent_version);
    g_assert_null(report->sent_at);
    g_assert_cmpuint(report->statuses->len, ==, 2);
    written = einsora_sync_report_to_json(report);
    g_assert_false(json_object_has_member(json_node_get_object(written), "agent_version"));
    g_assert_false(json_object_has_member(json_node_get_object(written), "sent_at"));
}

static void
test_desired_round_trip(void)
{
    g_autoptr(JsonNode) node = parse(desired_json);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraDesiredState) state = einsora_desired_state_from_json(node, &error);
    g_autoptr(EinsoraDesiredState) copy = NULL;
    g_autoptr(EinsoraDesiredState) again = NULL;
    g_autoptr(JsonNode) written = NULL;
    g_autoptr(JsonNode) reread = NULL;
    g_autoptr(JsonNode) copied = NULL;
    g_autofree gchar *written_text = NULL;
    g_autofree gchar *reread_text = NULL;
    g_autofree gchar *copied_text = NULL;
    const EinsoraDesiredWorkload *run;
    const EinsoraDesiredWorkload *removal;

    g_assert_no_error(error);
    g_assert_cmpstr(state->machine_id, ==, MACHINE_ID);
    g_assert_cmpint(state->generation, ==, 12);
    g_assert_cmpuint(state->workloads->len, ==, 2);
    run = state->workloads->pdata[0];
    g_assert_cmpstr(run->workload_id, ==, WORKLOAD_1);
    g_assert_cmpstr(run->tenant_id, ==, TENANT_ID);
    g_assert_cmpint(run->mode, ==, EINSORA_WORKLOAD_MODE_RUN);
    g_assert_cmpint(run->attempt, ==, 3);
    g_assert_cmpint(run->kind, ==, EINSORA_WORKLOAD_KIND_NOTEBOOK);
    g_assert_cmpstr(run->driver, ==, "linux-native");
    g_assert_cmpstr(run->placed_class, ==, "cpu-4c-16g");
    g_assert_cmpstr(run->image, ==, "jupyter-scipy");
    g_assert_cmpstr(run->runtime_reference, ==, "debian:jupyter-notebook");
    g_assert_cmpint(run->cpus, ==, 4);
    g_assert_cmpint(run->memory_mib, ==, 16384);
    g_assert_cmpint(run->devices, ==, 0);
    /* Removing needs only the ID: no image, no runtime. */
    removal = state->workloads->pdata[1];
    g_assert_cmpint(removal->mode, ==, EINSORA_WORKLOAD_MODE_REMOVE);
    g_assert_cmpint(removal->kind, ==, EINSORA_WORKLOAD_KIND_ENDPOINT);
    g_assert_null(removal->image);
    g_assert_null(removal->runtime_reference);
    g_assert_cmpint(removal->devices, ==, 1);
    g_assert_cmphex(removal->gpu_mask, ==, 0x4);
    g_assert_cmphex(run->gpu_mask, ==, 0);
    g_assert_cmpstr(run->server, ==, "jupyter");
    g_assert_null(removal->server);
    g_assert_cmpstr(removal->model, ==, "tiny:1m");
    g_assert_cmpstr(removal->model_digest, ==, MODEL_DIGEST);
    g_assert_null(run->model);
    g_assert_null(run->model_digest);

    written = einsora_desired_state_to_json(state);
    written_text = to_text(written);
    reread = parse(written_text);
    again = einsora_desired_state_from_json(reread, &error);
    g_assert_no_error(error);
    g_clear_pointer(&reread, json_node_unref);
    reread = einsora_desired_state_to_json(again);
    reread_text = to_text(reread);
    g_assert_cmpstr(reread_text, ==, written_text);
    g_assert_true(json_node_equal(written, node));

    copy = einsora_desired_state_copy(state);
    copied = einsora_desired_state_to_json(copy);
    copied_text = to_text(copied);
    g_assert_cmpstr(copied_text, ==, written_text);
}

/* Replaces, adds (@value JSON) or removes (@value NULL) the member or
 * element at @path ("statuses.0.attempt"). */
static void
mutate(JsonNode *root, const char *path, const char *value)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    guint n = g_strv_length(parts);
    JsonNode *parent = root;
    JsonNode *replacement = NULL;

    for (guint i = 0; i + 1 < n; i++) {
        if (JSON_NODE_HOLDS_ARRAY(parent))
            parent = json_array_get_element(json_node_get_array(parent),
                                            (guint)g_ascii_strtoull(parts[i], NULL, 10));
        else
            parent = json_object_get_member(json_node_get_object(parent), parts[i]);
        g_assert_nonnull(parent);
    }
    if (value != NULL)
        replacement = parse(value);
    if (JSON_NODE_HOLDS_OBJECT(parent)) {
        JsonObject *object = json_node_get_object(parent);
        if (replacement == NULL)
            json_object_remove_member(object, parts[n - 1]);
        else
            json_object_set_member(object, parts[n - 1], replacement);
        return;
    }
    {
        /* Arrays have no setter: rebuild with the element replaced. */
        JsonArray *array = json_node_get_array(parent);
        g_autoptr(JsonArray) rebuilt = json_array_new();
        guint index = (guint)g_ascii_strtoull(parts[n - 1], NULL, 10);

        g_assert_nonnull(replacement);
        for (guint i = 0; i < json_array_get_length(array); i++) {
            if (i == index)
                json_array_add_element(rebuilt, json_node_ref(replacement));
            else
                json_array_add_element(rebuilt, json_node_copy(json_array_get_element(array, i)));
        }
        json_node_set_array(parent, rebuilt);
        json_node_unref(replacement);
    }
}

typedef struct {
    const char *path;  /* NULL: the whole message is @value */
    const char *value; /* JSON; NULL removes the member */
    const char *message;
} Refusal;

static void
check_refusals(const char *base, const Refusal *table, guint n, gboolean report)
{
    for (guint i = 0; i < n; i++) {
        g_autoptr(JsonNode) node = table[i].path != NULL ? parse(base) : parse(table[i].value);
        g_autoptr(GError) error = NULL;
        gpointer parsed;

        if (table[i].path != NULL)
            mutate(node, table[i].path, table[i].value);
        g_test_message("case %u: %s = %s", i, table[i].path, table[i].value);
        if (report)
            parsed = einsora_sync_report_from_json(node, &error);
        else
            parsed = einsora_desired_state_from_json(node, &error);
        g_assert_null(parsed);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_test_message("refused: %s", error->message);
        g_assert_nonnull(strstr(error->message, table[i].message));
    }
}

static void
test_report_refusals(void)
{
    static const Refusal table[] = {
        {NULL, "[]", "a sync report must be a JSON object"},
        {NULL, "\"report\"", "a sync report must be a JSON object"},
        {"extra", "1", "unknown member \"extra\""},
        {"machine_id", NULL, "missing member \"machine_id\""},
        {"machine_id", "5", "\"machine_id\" must be a string"},
        {"machine_id", "\"studio\"", "\"machine_id\" is not a valid UUID"},
        {"machine_id", "\"0190B5D2-7C4E-7ABC-8DEF-0123456789AB\"", "\"machine_id\" is not a valid"},
        {"applied_generation", "-1", "\"applied_generation\" must not be negative"},
        {"applied_generation", "\"7\"", "\"applied_generation\" must be a whole number"},
        {"applied_generation", "7.5", "\"applied_generation\" must be a whole number"},
        {"applied_generation", "1e30", "\"applied_generation\" must be a whole number"},
        {"applied_generation", "true", "\"applied_generation\" must be a whole number"},
        {"applied_generation", "null", "\"applied_generation\" must be a whole number"},
        {"statuses", NULL, "missing member \"statuses\""},
        {"statuses", "{}", "\"statuses\" must be a list"},
        {"statuses.0", "\"running\"", "statuses[0]: a workload status must be a JSON object"},
        {"statuses.0.extra", "1", "statuses[0]: unknown member \"extra\""},
        {"statuses.1.message", "\"it broke\"", "statuses[1]: unknown member \"message\""},
        {"statuses.0.workload_id", NULL, "statuses[0]: missing member \"workload_id\""},
        {"statuses.0.workload_id", "\"w-1\"", "statuses[0]: \"workload_id\" is not a valid UUID"},
        {"statuses.1.workload_id", "\"" WORKLOAD_1 "\"",
         "statuses[1]: \"workload_id\" " WORKLOAD_1 " is listed twice"},
        {"statuses.0.attempt", "-1", "statuses[0]: \"attempt\" must not be negative"},
        {"statuses.0.attempt", "\"2\"", "statuses[0]: \"attempt\" must be a whole number"},
        {"statuses.0.mode", "\"fly\"", "statuses[0]: \"mode\" must be run, park or remove"},
        {"statuses.0.mode", NULL, "statuses[0]: missing member \"mode\""},
        {"statuses.0.code", "7", "statuses[0]: \"code\" must be a string"},
        {"statuses.0.code", "\"\"", "statuses[0]: \"code\" is empty"},
        {"statuses.0.code", "[\"running\"]", "statuses[0]: \"code\" must be a string"},
        {"statuses.0.code", "\"a\\u0001b\"", "statuses[0]: \"code\" contains a control character"},
        {"statuses.0.code", "\"a\\nb\"", "statuses[0]: \"code\" contains a control character"},
        {"statuses.0.applied_generation", "-3",
         "statuses[0]: \"applied_generation\" must not be negative"},
        /* A workload's activity is numbers only, and bounded. */
        {"statuses.0.activity", "{\"busy_kernels\": 4097, \"last_active_ms\": 0}",
         "statuses[0]: \"busy_kernels\" must be between 0 and 4096"},
        {"statuses.0.activity", "{\"busy_kernels\": 0, \"last_active_ms\": -1}",
         "statuses[0]: \"last_active_ms\" must not be negative"},
        {"statuses.0.activity", "{\"busy_kernels\": 0, \"last_active_ms\": 1, \"who\": \"x\"}",
         "statuses[0]: unknown member \"who\""},
        /* A pull's progress is numbers only, and bounded. */
        {"statuses.0.pull", "[]", "statuses[0]: a pull's progress must be a JSON object"},
        {"statuses.0.pull",
         "{\"layers\": 2, \"layers_done\": 1, \"bytes_done\": 0, \"bytes_total\": 0, "
         "\"status\": \"Downloading\"}",
         "statuses[0]: unknown member \"status\""},
        {"statuses.0.pull",
         "{\"layers\": 2, \"layers_done\": 3, \"bytes_done\": 0, \"bytes_total\": 0}",
         "statuses[0]: \"layers_done\" must be between 0 and 2"},
        {"statuses.0.pull",
         "{\"layers\": 4097, \"layers_done\": 0, \"bytes_done\": 0, \"bytes_total\": 0}",
         "statuses[0]: \"layers\" must be between 0 and 4096"},
        {"statuses.0.pull",
         "{\"layers\": 1, \"layers_done\": 0, \"bytes_done\": 9, \"bytes_total\": 8}",
         "statuses[0]: \"bytes_done\" must be between 0 and 8"},
        {"statuses.0.pull", "{\"layers\": 1, \"layers_done\": 0, \"bytes_total\": 8}",
         "statuses[0]: missing member \"bytes_done\""},
        {"inventory", "null", "inventory: an inventory must be a JSON object"},
        {"inventory.extra", "{}", "inventory: unknown member \"extra\""},
        {"inventory.os", "\"windows\"", "inventory: \"os\" must be linux or darwin"},
        {"inventory.os", NULL, "inventory: missing member \"os\""},
        {"inventory.arch", NULL, "inventory: missing member \"arch\""},
        {"inventory.cpus", "4097", "inventory: \"cpus\" must be between 0 and 4096"},
        {"inventory.cpus", "-1", "inventory: \"cpus\" must be between 0 and 4096"},
        {"inventory.memory_mib", "67108865", "inventory: \"memory_mib\" must be between 0 and"},
        {"inventory.gpus", "{}", "inventory: \"gpus\" must be a list"},
        {"inventory.gpus", NULL, "inventory: missing member \"gpus\""},
        {"inventory.gpus.0", "5", "inventory: gpus[0]: a GPU must be a JSON object"},
        {"inventory.gpus.0.serial", "\"X1\"", "inventory: gpus[0]: unknown member \"serial\""},
        {"inventory.gpus.0.vendor", "\"\"", "inventory: gpus[0]: \"vendor\" is empty"},
        {"inventory.gpus.0.model", "false", "inventory: gpus[0]: \"model\" must be a string"},
        {"inventory.gpus.0.memory_mib", "-5", "inventory: gpus[0]: \"memory_mib\" must be between"},
        {"inventory.drivers", "\"sim\"", "inventory: \"drivers\" must be a list"},
        {"inventory.drivers.1", "5", "inventory: \"drivers[1]\" must be a string"},
        {"inventory.drivers.0", "\"\"", "inventory: \"drivers[0]\" is empty"},
        /* The agent's version: plain, short, printable; its clock: one
         * timestamp form, the store's. */
        {"agent_version", "\"\"", "\"agent_version\" is empty"},
        {"agent_version", "1", "\"agent_version\" must be a string"},
        {"agent_version", "null", "\"agent_version\" must be a string"},
        {"agent_version", "\"0.1.0 beta\"", "\"agent_version\" may hold only printable ASCII"},
        {"agent_version", "\"0.1.0\\u00e9\"", "\"agent_version\" may hold only printable ASCII"},
        {"agent_version", "\"0.1\\u001b[31m\"", "\"agent_version\" contains a control character"},
        {"agent_version", "\"0123456789012345678901234567890123456789012345678901234567890123x\"",
         "\"agent_version\" is longer than 64 bytes"},
        {"sent_at", "1764406000123", "\"sent_at\" must be a string"},
        {"sent_at", "\"2026-11-29T09:06:36Z\"", "\"sent_at\" is not a timestamp"},
        {"sent_at", "\"2026-11-29T09:06:36.123456+01:00\"", "\"sent_at\" is not a timestamp"},
        {"sent_at", "\"2026-13-29T09:06:36.123456Z\"", "\"sent_at\" is not a timestamp"},
        {"sent_at", "\"yesterday\"", "\"sent_at\" is not a timestamp"},
    };

    check_refusals(report_json, table, G_N_ELEMENTS(table), TRUE);
}

#define STATUS_OF(id, code)                                                                        \
    "{\"workload_id\":\"" id "\",\"attempt\":1,\"mode\":\"run\",\"code\":\"" code                  \
    "\",\"applied_generation\":3}"

static EinsoraSyncReport *
report_with_replay(const char *replay, GError **error)
{
    g_autofree gchar *text = g_strdup_printf(
        "{\"machine_id\":\"" MACHINE_ID "\",\"applied_generation\":3,\"statuses\":[]%s%s}",
        replay != NULL ? ",\"replay\":" : "", replay != NULL ? replay : "");
    g_autoptr(JsonNode) node = parse(text);

    return einsora_sync_report_from_json(node, error);
}

/* A networked agent's outbox rides in its reports: numbered changes, in
 * order, bounded; the hub's answer says how far it has them. */
static void
test_report_replay(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSyncReport) report = report_with_replay(
        "[{\"seq\":4,\"status\":" STATUS_OF(
            WORKLOAD_1, "starting") "},"
                                    "{\"seq\":9,\"status\":" STATUS_OF(WORKLOAD_1, "running") "}]",
        &error);
    g_autoptr(EinsoraSyncReport) copy = NULL;
    g_autoptr(JsonNode) written = NULL;
    g_autoptr(JsonNode) copied = NULL;
    g_autofree gchar *written_text = NULL;
    g_autofree gchar *copied_text = NULL;
    const EinsoraReplayedStatus *replayed;

    g_assert_no_error(error);
    g_assert_cmpuint(report->replay->len, ==, 2);
    replayed = report->replay->pdata[0];
    g_assert_cmpint(replayed->seq, ==, 4);
    g_assert_cmpint(replayed->status->code, ==, EINSORA_STATUS_CODE_STARTING);
    replayed = report->replay->pdata[1];
    g_assert_cmpint(replayed->seq, ==, 9);
    g_assert_cmpstr(replayed->status->workload_id, ==, WORKLOAD_1);
    g_assert_cmpint(replayed->status->code, ==, EINSORA_STATUS_CODE_RUNNING);
    /* Written and copied as read. */
    written = einsora_sync_report_to_json(report);
    written_text = json_to_string(written, FALSE);
    g_assert_nonnull(strstr(written_text, "\"replay\":[{\"seq\":4,\"status\":{"));
    copy = einsora_sync_report_copy(report);
    copied = einsora_sync_report_to_json(copy);
    copied_text = json_to_string(copied, FALSE);
    g_assert_cmpstr(copied_text, ==, written_text);
    /* Nothing kept: no member at all, as an in-process agent sends. */
    {
        g_autoptr(EinsoraSyncReport) plain = report_with_replay(NULL, &error);
        g_autoptr(JsonNode) node = NULL;
        g_autofree gchar *text = NULL;

        g_assert_no_error(error);
        g_assert_cmpuint(plain->replay->len, ==, 0);
        node = einsora_sync_report_to_json(plain);
        text = json_to_string(node, FALSE);
        g_assert_null(strstr(text, "replay"));
    }
    /* Refused: out of order, unnumbered, malformed, too many. */
    {
        static const struct {
            const char *replay;
            const char *message;
        } refusals[] = {
            {"{}", "\"replay\" must be a list"},
            {"[{\"seq\":4,\"status\":" STATUS_OF(
                 WORKLOAD_1, "running") "},"
                                        "{\"seq\":4,\"status\":" STATUS_OF(WORKLOAD_1,
                                                                           "running") "}]",
             "replay[1]: \"seq\" 4 doesn't follow 4"},
            {"[{\"seq\":0,\"status\":" STATUS_OF(WORKLOAD_1, "running") "}]",
             "replay[0]: \"seq\" 0 doesn't follow 0"},
            {"[{\"seq\":-2,\"status\":" STATUS_OF(WORKLOAD_1, "running") "}]",
             "replay[0]: \"seq\" must not be negative"},
            {"[{\"status\":" STATUS_OF(WORKLOAD_1, "running") "}]",
             "replay[0]: missing member \"seq\""},
            {"[{\"seq\":1}]", "replay[0].status: a workload status must be a JSON object"},
            {"[{\"seq\":1,\"status\":{}}]", "replay[0].status: missing member"},
            {"[{\"seq\":1,\"at\":2,\"status\":" STATUS_OF(WORKLOAD_1, "running") "}]",
             "replay[0]: unknown member \"at\""},
            {"[5]", "replay[0]: a replayed status must be a JSON object"},
        };

        for (guint i = 0; i < G_N_ELEMENTS(refusals); i++) {
            g_autoptr(EinsoraSyncReport) refused = report_with_replay(refusals[i].replay, &error);

            g_assert_null(refused);
            g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
            if (strstr(error->message, refusals[i].message) == NULL)
                g_error("%s: \"%s\" says nothing of \"%s\"", refusals[i].replay, error->message,
                        refusals[i].message);
            g_clear_error(&error);
        }
    }
    {
        g_autoptr(GString) many = g_string_new("[");
        g_autoptr(EinsoraSyncReport) refused = NULL;

        for (guint i = 1; i <= EINSORA_PROTOCOL_MAX_REPLAY + 1; i++)
            g_string_append_printf(many,
                                   "%s{\"seq\":%u,\"status\":" STATUS_OF(WORKLOAD_1, "running") "}",
                                   i > 1 ? "," : "", i);
        g_string_append_c(many, ']');
        refused = report_with_replay(many->str, &error);
        g_assert_null(refused);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_clear_error(&error);
    }
    /* The answer's acknowledgement: kept through a round trip, left out
     * at 0, never negative. */
    {
        g_autoptr(JsonNode) node =
            parse("{\"machine_id\":\"" MACHINE_ID "\",\"generation\":5,\"workloads\":[],"
                  "\"replayed_through\":9}");
        g_autoptr(EinsoraDesiredState) state = einsora_desired_state_from_json(node, &error);
        g_autoptr(EinsoraDesiredState) state_copy = NULL;
        g_autoptr(JsonNode) again = NULL;
        g_autofree gchar *text = NULL;

        g_assert_no_error(error);
        g_assert_cmpint(state->replayed_through, ==, 9);
        state_copy = einsora_desired_state_copy(state);
        g_assert_cmpint(state_copy->replayed_through, ==, 9);
        again = einsora_desired_state_to_json(state);
        text = json_to_string(again, FALSE);
        g_assert_nonnull(strstr(text, "\"replayed_through\":9"));
        state->replayed_through = 0;
        g_clear_pointer(&again, json_node_unref);
        g_clear_pointer(&text, g_free);
        again = einsora_desired_state_to_json(state);
        text = json_to_string(again, FALSE);
        g_assert_null(strstr(text, "replayed_through"));
    }
    {
        g_autoptr(JsonNode) node =
            parse("{\"machine_id\":\"" MACHINE_ID "\",\"generation\":5,\"workloads\":[],"
                  "\"replayed_through\":-1}");
        g_autoptr(EinsoraDesiredState) state = einsora_desired_state_from_json(node, &error);

        g_assert_null(state);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
}

/* Tunnel streams (docs/adr/0059): the report says the agent opens them
 * when asked (a boolean, left out when false), the answer asks for some
 * (1 to EINSORA_PROTOCOL_MAX_OPEN_TUNNELS, left out at 0). */
static void
test_tunnels(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSyncReport) report = einsora_sync_report_new();
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(EinsoraSyncReport) back = NULL;
    g_autofree gchar *text = NULL;

    report->machine_id = g_strdup(MACHINE_ID);
    node = einsora_sync_report_to_json(report);
    text = json_to_string(node, FALSE);
    g_assert_null(strstr(text, "tunnels"));
    report->tunnels = TRUE;
    g_clear_pointer(&node, json_node_unref);
    node = einsora_sync_report_to_json(report);
    back = einsora_sync_report_from_json(node, &error);
    g_assert_no_error(error);
    g_assert_true(back->tunnels);
    {
        g_autoptr(JsonNode) wrong =
            parse("{\"machine_id\":\"" MACHINE_ID "\",\"applied_generation\":0,"
                  "\"statuses\":[],\"tunnels\":1}");
        g_autoptr(EinsoraSyncReport) refused = einsora_sync_report_from_json(wrong, &error);

        g_assert_null(refused);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_nonnull(strstr(error->message, "tunnels"));
        g_clear_error(&error);
    }
    {
        g_autoptr(JsonNode) asked =
            parse("{\"machine_id\":\"" MACHINE_ID "\",\"generation\":5,\"workloads\":[],"
                  "\"open_tunnels\":3}");
        g_autoptr(EinsoraDesiredState) state = einsora_desired_state_from_json(asked, &error);
        g_autoptr(JsonNode) again = NULL;
        g_autofree gchar *again_text = NULL;

        g_assert_no_error(error);
        g_assert_cmpint(state->open_tunnels, ==, 3);
        state->open_tunnels = 0;
        again = einsora_desired_state_to_json(state);
        again_text = json_to_string(again, FALSE);
        g_assert_null(strstr(again_text, "open_tunnels"));
    }
    {
        g_autofree gchar *json =
            g_strdup_printf("{\"machine_id\":\"" MACHINE_ID "\",\"generation\":5,\"workloads\":[],"
                            "\"open_tunnels\":%d}",
                            EINSORA_PROTOCOL_MAX_OPEN_TUNNELS + 1);
        g_autoptr(JsonNode) many = parse(json);
        g_autoptr(EinsoraDesiredState) refused = einsora_desired_state_from_json(many, &error);

        g_assert_null(refused);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
}

static void
test_desired_refusals(void)
{
    static const Refusal table[] = {
        {NULL, "null", "a desired state must be a JSON object"},
        {"extra", "1", "unknown member \"extra\""},
        {"machine_id", "\"\"", "\"machine_id\" is empty"},
        {"machine_id", "\"0190b5d2-7c4e-4abc-8def-0123456789ab\"",
         "\"machine_id\" is not a valid UUID"},
        {"generation", "-1", "\"generation\" must not be negative"},
        {"generation", "\"12\"", "\"generation\" must be a whole number"},
        {"generation", NULL, "missing member \"generation\""},
        {"workloads", NULL, "missing member \"workloads\""},
        {"workloads", "{}", "\"workloads\" must be a list"},
        {"workloads.0", "[]", "workloads[0]: a desired workload must be a JSON object"},
        {"workloads.0.extra", "1", "workloads[0]: unknown member \"extra\""},
        {"workloads.0.workload_id", "\"x\"", "workloads[0]: \"workload_id\" is not a valid UUID"},
        {"workloads.1.workload_id", "\"" WORKLOAD_1 "\"", "workloads[1]: \"workload_id\" "},
        {"workloads.0.tenant_id", "\"acme\"", "workloads[0]: \"tenant_id\" is not a valid UUID"},
        {"workloads.0.tenant_id", NULL, "workloads[0]: missing member \"tenant_id\""},
        {"workloads.0.mode", "\"start\"", "workloads[0]: \"mode\" must be run, park or remove"},
        {"workloads.0.attempt", "-2", "workloads[0]: \"attempt\" must not be negative"},
        {"workloads.0.attempt", "2.0", "workloads[0]: \"attempt\" must be a whole number"},
        {"workloads.0.kind", "\"container\"",
         "workloads[0]: \"kind\" must be notebook, endpoint or vm"},
        {"workloads.0.driver", "\"\"", "workloads[0]: \"driver\" is empty"},
        {"workloads.0.driver", NULL, "workloads[0]: missing member \"driver\""},
        {"workloads.0.placed_class", NULL, "workloads[0]: missing member \"placed_class\""},
        {"workloads.0.image", NULL, "workloads[0]: missing member \"image\", which running needs"},
        {"workloads.0.runtime_reference", NULL,
         "workloads[0]: missing member \"runtime_reference\", which running needs"},
        {"workloads.1.image", "3", "workloads[1]: \"image\" must be a string"},
        {"workloads.0.cpus", "4097", "workloads[0]: \"cpus\" must be between 0 and 4096"},
        {"workloads.0.memory_mib", "4611686018427387904",
         "workloads[0]: \"memory_mib\" must be between 0 and 67108864"},
        {"workloads.0.devices", "65", "workloads[0]: \"devices\" must be between 0 and 64"},
        {"workloads.0.devices", "-1", "workloads[0]: \"devices\" must be between 0 and 64"},
        {"workloads.0.server", "\"tgi\"",
         "workloads[0]: \"server\" must be jupyter, llama-server or vllm"},
        {"workloads.0.server", "1", "workloads[0]: \"server\" must be a string"},
        {"workloads.1.gpu_indexes", "[0, 1]",
         "workloads[1]: \"gpu_indexes\" must name as many GPUs as \"devices\""},
        {"workloads.0.gpu_indexes", "[]",
         "workloads[0]: \"gpu_indexes\" must name as many GPUs as \"devices\""},
        {"workloads.1.gpu_indexes", "[64]",
         "workloads[1]: \"gpu_indexes\" must rise, each below 64"},
        {"workloads.1.gpu_indexes", "[-1]",
         "workloads[1]: \"gpu_indexes\" must rise, each below 64"},
        {"workloads.1.gpu_indexes", "[\"0\"]",
         "workloads[1]: \"gpu_indexes\" must hold whole numbers"},
        {"workloads.1.gpu_indexes", "3", "workloads[1]: \"gpu_indexes\" must be a list"},
        {"workloads.1.model", "\"\"", "workloads[1]: \"model\" is empty"},
        {"workloads.1.model_digest", "\"sha256:ABC\"",
         "workloads[1]: \"model_digest\" must be sha256: and 64 hex digits"},
        {"workloads.1.model_digest",
         "\"md5:0000000000000000000000000000000000000000000000000000000000000000\"",
         "workloads[1]: \"model_digest\" must be sha256: and 64 hex digits"},
    };

    check_refusals(desired_json, table, G_N_ELEMENTS(table), FALSE);
}

static gchar *
repeat(char c, gsize n)
{
    gchar *text = g_malloc(n + 1);

    memset(text, c, n);
    text[n] = '\0';
    return text;
}

/* Strings: at most 256 bytes, valid UTF-8; a hostile member name comes
 * back escaped and cut short. */
static void
test_string_bounds(void)
{
    g_autofree gchar *longest = repeat('a', EINSORA_PROTOCOL_MAX_STRING_BYTES);
    g_autofree gchar *too_long = repeat('a', EINSORA_PROTOCOL_MAX_STRING_BYTES + 1);
    g_autofree gchar *long_name = repeat('m', 500);
    g_autoptr(JsonNode) node = parse(desired_json);
    JsonObject *workload = json_array_get_object_element(
        json_object_get_array_member(json_node_get_object(node), "workloads"), 0);
    g_autoptr(EinsoraDesiredState) state = NULL;
    g_autoptr(GError) error = NULL;

    json_object_set_string_member(workload, "placed_class", longest);
    state = einsora_desired_state_from_json(node, &error);
    g_assert_no_error(error);
    g_clear_pointer(&state, einsora_desired_state_free);

    json_object_set_string_member(workload, "placed_class", too_long);
    state = einsora_desired_state_from_json(node, &error);
    g_assert_null(state);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(error->message, ==, "workloads[0]: \"placed_class\" is longer than 256 bytes");
    g_clear_error(&error);

    /* The parser only takes valid UTF-8; a node built in code may not be. */
    json_object_set_string_member(workload, "placed_class", "cpu-\xff\xfe");
    state = einsora_desired_state_from_json(node, &error);
    g_assert_null(state);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(error->message, ==, "workloads[0]: \"placed_class\" is not valid UTF-8");
    g_clear_error(&error);
    json_object_set_string_member(workload, "placed_class", "cpu-4c-16g");

    json_object_set_int_member(workload, long_name, 1);
    state = einsora_desired_state_from_json(node, &error);
    g_assert_null(state);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_true(g_str_has_prefix(error->message, "workloads[0]: unknown member \"mmmm"));
    g_assert_true(g_str_has_suffix(error->message, "…\""));
    g_assert_cmpuint(strlen(error->message), <, 120);
    g_clear_error(&error);
    json_object_remove_member(workload, long_name);

    json_object_set_int_member(workload, "bad\n\x01name", 1);
    state = einsora_desired_state_from_json(node, &error);
    g_assert_null(state);
    g_assert_cmpstr(error->message, ==, "workloads[0]: unknown member \"bad\\n\\001name\"");
}

static JsonNode *
report_with_statuses(guint n)
{
    JsonNode *node = parse("{\"machine_id\": \"" MACHINE_ID "\", \"applied_generation\": 1}");
    JsonArray *statuses = json_array_sized_new(n);

    for (guint i = 0; i < n; i++) {
        g_autoptr(EinsoraWorkloadStatus) status = einsora_workload_status_new();
        status->workload_id = g_strdup_printf("0190b5d2-7c4e-7abc-8def-%012x", i);
        status->code = EINSORA_STATUS_CODE_RUNNING;
        json_array_add_element(statuses, einsora_workload_status_to_json(status));
    }
    json_object_set_array_member(json_node_get_object(node), "statuses", statuses);
    return node;
}

static void
add_strings(JsonNode *root, const char *path, const char *member, guint n, const char *value)
{
    JsonObject *object = json_object_get_object_member(json_node_get_object(root), path);
    JsonArray *array = json_array_new();

    for (guint i = 0; i < n; i++) {
        if (value != NULL) {
            json_array_add_string_element(array, value);
        } else {
            JsonObject *gpu = json_object_new();
            json_object_set_string_member(gpu, "vendor", "nvidia");
            json_object_set_string_member(gpu, "model", "L40S");
            json_object_set_int_member(gpu, "memory_mib", 46068);
            json_array_add_object_element(array, gpu);
        }
    }
    json_object_set_array_member(object, member, array);
}

/* At most 10,000 statuses or workloads, 64 GPUs and 32 drivers. */
static void
test_list_bounds(void)
{
    static const struct {
        const char *member;
        guint n;
        const char *message; /* NULL: accepted */
    } table[] = {
        {"statuses", EINSORA_PROTOCOL_MAX_WORKLOADS, NULL},
        {"statuses", EINSORA_PROTOCOL_MAX_WORKLOADS + 1,
         "\"statuses\" has more than 10000 entries"},
        {"gpus", EINSORA_PROTOCOL_MAX_GPUS, NULL},
        {"gpus", EINSORA_PROTOCOL_MAX_GPUS + 1, "inventory: \"gpus\" has more than 64 entries"},
        {"drivers", EINSORA_PROTOCOL_MAX_DRIVERS, NULL},
        {"drivers", EINSORA_PROTOCOL_MAX_DRIVERS + 1,
         "inventory: \"drivers\" has more than 32 entries"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(JsonNode) node = NULL;
        g_autoptr(EinsoraSyncReport) report = NULL;
        g_autoptr(GError) error = NULL;

        g_test_message("case %u: %u %s", i, table[i].n, table[i].member);
        if (g_str_equal(table[i].member, "statuses")) {
            node = report_with_statuses(table[i].n);
        } else {
            node = parse(report_json);
            add_strings(node, "inventory", table[i].member, table[i].n,
                        g_str_equal(table[i].member, "drivers") ? "sim" : NULL);
        }
        report = einsora_sync_report_from_json(node, &error);
        if (table[i].message == NULL) {
            g_assert_no_error(error);
            g_assert_nonnull(report);
            continue;
        }
        g_assert_null(report);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_cmpstr(error->message, ==, table[i].message);
    }
}

static void
test_desired_workload_bounds(void)
{
    g_autoptr(EinsoraDesiredState) state = einsora_desired_state_new();
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(EinsoraDesiredState) parsed = NULL;
    g_autoptr(GError) error = NULL;

    state->machine_id = g_strdup(MACHINE_ID);
    for (guint i = 0; i <= EINSORA_PROTOCOL_MAX_WORKLOADS; i++) {
        EinsoraDesiredWorkload *workload = einsora_desired_workload_new();
        workload->workload_id = g_strdup_printf("0190b5d2-7c4e-7abc-8def-%012x", i);
        workload->tenant_id = g_strdup(TENANT_ID);
        workload->mode = EINSORA_WORKLOAD_MODE_PARK;
        workload->driver = g_strdup("sim");
        workload->placed_class = g_strdup("cpu-4c-16g");
        g_ptr_array_add(state->workloads, workload);
    }
    node = einsora_desired_state_to_json(state);
    parsed = einsora_desired_state_from_json(node, &error);
    g_assert_null(parsed);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(error->message, ==, "\"workloads\" has more than 10000 entries");
    g_clear_error(&error);

    g_ptr_array_remove_index(state->workloads, state->workloads->len - 1);
    g_clear_pointer(&node, json_node_unref);
    node = einsora_desired_state_to_json(state);
    parsed = einsora_desired_state_from_json(node, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(parsed->workloads->len, ==, EINSORA_PROTOCOL_MAX_WORKLOADS);
}

/* A record missing a required member writes JSON that says which. */
static void
test_incomplete_record(void)
{
    g_autoptr(EinsoraDesiredWorkload) workload = einsora_desired_workload_new();
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(EinsoraDesiredWorkload) parsed = NULL;
    g_autoptr(GError) error = NULL;

    workload->workload_id = g_strdup(WORKLOAD_1);
    node = einsora_desired_workload_to_json(workload);
    g_assert_false(json_object_has_member(json_node_get_object(node), "tenant_id"));
    parsed = einsora_desired_workload_from_json(node, &error);
    g_assert_null(parsed);
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(error->message, ==, "missing member \"tenant_id\"");
}

static EinsoraInventory *
inventory_new(const char *os, const char *arch, const char *drivers, const char *gpus)
{
    EinsoraInventory *inventory = einsora_inventory_new();
    g_auto(GStrv) gpu_specs = g_strsplit(gpus, ",", -1);

    inventory->os = g_strdup(os);
    inventory->arch = g_strdup(arch);
    inventory->cpus = 8;
    inventory->memory_mib = 32768;
    g_strfreev(inventory->drivers);
    inventory->drivers = *drivers != '\0' ? g_strsplit(drivers, ",", -1) : g_new0(gchar *, 1);
    for (guint i = 0; *gpus != '\0' && gpu_specs[i] != NULL; i++) {
        g_auto(GStrv) parts = g_strsplit(gpu_specs[i], ":", 2);
        EinsoraInventoryGpu *gpu = einsora_inventory_gpu_new();
        gpu->vendor = g_strdup(parts[0]);
        gpu->model = g_strdup(parts[1]);
        gpu->memory_mib = 16384;
        g_ptr_array_add(inventory->gpus, gpu);
    }
    return inventory;
}

static void
test_inventory_validation(void)
{
    static const struct {
        const char *machine_os;
        const char *os;
        const char *arch;
        const char *drivers;
        const char *gpus;
        const char *message; /* NULL: accepted */
    } table[] = {
        {"linux", "linux", "x86_64", "linux-native,docker,libvirt,sim", "nvidia:L40S,amd:MI210",
         NULL},
        {NULL, "linux", "aarch64", "linux-native", "", NULL},
        {"darwin", "darwin", "arm64", "macos-native,macos-vz,macos-container,sim", "apple:M2 Max",
         NULL},
        {"darwin", "darwin", "x86_64", "macos-vz", "amd:Radeon Pro 5500M", NULL},
        {"darwin", "darwin", "arm64", "docker", "",
         "\"drivers[0]\": the docker driver runs only on linux, and this machine is darwin"},
        {"linux", "linux", "x86_64", "sim,macos-native", "",
         "\"drivers[1]\": the macos-native driver runs only on darwin"},
        {"linux", "linux", "x86_64", "kubernetes", "", "\"drivers[0]\": unknown driver"},
        {"linux", "linux", "x86_64", "sim,sim", "", "\"drivers[1]\": sim is listed twice"},
        {"linux", "linux", "aarch64", "linux-native", "apple:M2",
         "\"gpus[0].vendor\": an Apple GPU is only in a Mac with Apple Silicon"},
        {"darwin", "darwin", "x86_64", "", "apple:M2",
         "\"gpus[0].vendor\": an Apple GPU is only in a Mac with Apple Silicon"},
        {"darwin", "darwin", "arm64", "", "apple:M2 Ultra,apple:M2 Ultra",
         "\"gpus[1].vendor\": a Mac has only one Apple GPU"},
        {"linux", "linux", "x86_64", "", "intel:Arc A770",
         "\"gpus[0].vendor\" must be nvidia, amd or apple"},
        {"linux", "linux", "x86_64", "", "NVIDIA:L40S",
         "\"gpus[0].vendor\" must be nvidia, amd or apple"},
        {"darwin", "linux", "x86_64", "", "",
         "\"os\" says linux, but this machine registered as darwin"},
        {"linux", "windows", "x86_64", "", "", "\"os\" must be linux or darwin"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(EinsoraInventory) inventory =
            inventory_new(table[i].os, table[i].arch, table[i].drivers, table[i].gpus);
        g_autoptr(GError) error = NULL;
        gboolean ok = einsora_inventory_validate(inventory, table[i].machine_os, &error);

        g_test_message("case %u: %s/%s drivers %s gpus %s", i, table[i].os, table[i].arch,
                       table[i].drivers, table[i].gpus);
        if (table[i].message == NULL) {
            g_assert_no_error(error);
            g_assert_true(ok);
            continue;
        }
        g_assert_false(ok);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_test_message("refused: %s", error->message);
        g_assert_true(g_str_has_prefix(error->message, table[i].message));
    }
}

/* Bounds hold for an inventory made in code, not only for parsed ones. */
static void
test_inventory_validation_bounds(void)
{
    g_autoptr(EinsoraInventory) inventory = inventory_new("linux", "x86_64", "linux-native", "");
    g_autoptr(GError) error = NULL;

    inventory->cpus = EINSORA_PROTOCOL_MAX_CPUS + 1;
    g_assert_false(einsora_inventory_validate(inventory, "linux", &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    g_assert_cmpstr(error->message, ==, "\"cpus\" must be between 0 and 4096");
    g_clear_error(&error);

    inventory->cpus = 8;
    g_free(inventory->arch);
    inventory->arch = NULL;
    g_assert_false(einsora_inventory_validate(inventory, "linux", &error));
    g_assert_cmpstr(error->message, ==, "missing member \"arch\"");
}

/* The hub advances a machine's generation when, and only when, its
 * desired state's content changes: every member counts. */
static void
test_desired_same_content(void)
{
    g_autoptr(EinsoraDesiredState) a = einsora_desired_state_new();
    g_autoptr(EinsoraDesiredState) b = NULL;
    EinsoraDesiredWorkload *workload = einsora_desired_workload_new();
    EinsoraDesiredWorkload *other;

    a->machine_id = g_strdup("m1");
    a->generation = 1;
    workload->workload_id = g_strdup("w1");
    workload->tenant_id = g_strdup("t1");
    workload->driver = g_strdup("sim");
    workload->placed_class = g_strdup("cpu-2c-4g");
    workload->image = g_strdup("jupyter");
    workload->cpus = 2;
    workload->memory_mib = 4096;
    g_ptr_array_add(a->workloads, workload);

    b = einsora_desired_state_copy(a);
    b->generation = 2;
    g_assert_true(einsora_desired_state_same_content(a, b));
    other = g_ptr_array_index(b->workloads, 0);
    other->attempt = 1;
    g_assert_false(einsora_desired_state_same_content(a, b));
    other->attempt = 0;
    g_clear_pointer(&other->runtime_reference, g_free);
    other->runtime_reference = g_strdup("ref");
    g_assert_false(einsora_desired_state_same_content(a, b));
    g_clear_pointer(&other->runtime_reference, g_free);
    other->devices = 1;
    g_assert_false(einsora_desired_state_same_content(a, b));
    other->devices = 0;
    other->model = g_strdup("tiny");
    g_assert_false(einsora_desired_state_same_content(a, b));
    g_clear_pointer(&other->model, g_free);
    other->model_digest = g_strdup("sha256:00");
    g_assert_false(einsora_desired_state_same_content(a, b));
    g_clear_pointer(&other->model_digest, g_free);
    g_assert_true(einsora_desired_state_same_content(a, b));
    g_ptr_array_set_size(b->workloads, 0);
    g_assert_false(einsora_desired_state_same_content(a, b));
}

/* Running an endpoint needs its model; removing one doesn't. */
static void
test_endpoint_needs_model(void)
{
    static const char *const removal =
        "{\"workload_id\": \"" WORKLOAD_2 "\", \"tenant_id\": \"" TENANT_ID "\","
        " \"mode\": \"%s\", \"attempt\": 1, \"kind\": \"endpoint\", \"driver\": \"linux-native\","
        " \"placed_class\": \"cpu-2c-4g\", \"image\": \"llama-cpp\","
        " \"runtime_reference\": \"llama-server\", \"cpus\": 2, \"memory_mib\": 4096,"
        " \"devices\": 0%s}";
    const char *const modes[] = {"remove", "run"};

    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_autofree gchar *bare = g_strdup_printf(removal, modes[i], "");
        g_autofree gchar *with_model = g_strdup_printf(
            removal, modes[i], ", \"model\": \"tiny\", \"model_digest\": \"" MODEL_DIGEST "\"");
        g_autoptr(JsonNode) bare_node = parse(bare);
        g_autoptr(JsonNode) model_node = parse(with_model);
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraDesiredWorkload) a = einsora_desired_workload_from_json(bare_node, &error);
        g_autoptr(EinsoraDesiredWorkload) b = NULL;

        if (i == 0) {
            g_assert_no_error(error);
            g_assert_nonnull(a);
        } else {
            g_assert_null(a);
            g_assert_cmpstr(error->message, ==,
                            "an endpoint needs \"model\" and \"model_digest\" to run");
            g_clear_error(&error);
        }
        b = einsora_desired_workload_from_json(model_node, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(b->model_digest, ==, MODEL_DIGEST);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/protocol/status-code/vocabulary-and-fixed-reasons", test_status_codes);
    g_test_add_func("/protocol/status-code/unknown-reads-machine-reported-problem",
                    test_unknown_codes);
    g_test_add_func("/protocol/status-code/unknown-in-report-is-not-an-error",
                    test_unknown_code_in_report);
    g_test_add_func("/protocol/status-code/active-while-something-is-under-way", test_active_codes);
    g_test_add_func("/protocol/workload-mode/names", test_workload_modes);
    g_test_add_func("/protocol/desired-state/same-content", test_desired_same_content);
    g_test_add_func("/protocol/sync-report/round-trip", test_report_round_trip);
    g_test_add_func("/protocol/sync-report/inventory-only-when-changed",
                    test_report_without_inventory);
    g_test_add_func("/protocol/sync-report/older-agent-without-version-or-clock",
                    test_report_from_older_agent);
    g_test_add_func("/protocol/desired-state/round-trip", test_desired_round_trip);
    g_test_add_func("/protocol/sync-report/refusals-name-the-member", test_report_refusals);
    g_test_add_func("/protocol/sync-report/replay-and-its-acknowledgement", test_report_replay);
    g_test_add_func("/protocol/desired-state/refusals-name-the-member", test_desired_refusals);
    g_test_add_func("/protocol/tunnels/asked-and-offered", test_tunnels);
    g_test_add_func("/protocol/strings/bounded-and-valid", test_string_bounds);
    g_test_add_func("/protocol/sync-report/list-bounds", test_list_bounds);
    g_test_add_func("/protocol/desired-state/workload-bound", test_desired_workload_bounds);
    g_test_add_func("/protocol/desired-workload/incomplete-record", test_incomplete_record);
    g_test_add_func("/protocol/desired-workload/endpoint-needs-its-model",
                    test_endpoint_needs_model);
    g_test_add_func("/protocol/inventory/fits-the-machine", test_inventory_validation);
    g_test_add_func("/protocol/inventory/bounds-in-code", test_inventory_validation_bounds);
    return g_test_run();
}
