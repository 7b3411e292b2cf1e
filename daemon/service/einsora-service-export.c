/* Exporting a workload: its record and whole timeline as one JSON
 * document, with what could hold a secret redacted. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-redact.h"
#include "einsora-uuid.h"
#include "einsora-workload-json.h"

#define EXPORT_FORMAT_VERSION 1

/* Replaces a string member with its redacted form when redaction changed
 * it, and says so in @redactions: data is never dropped silently. */
static void
redact_member(JsonObject *object, const char *member, const char *path, JsonArray *redactions)
{
    const char *value;
    g_autofree gchar *redacted = NULL;
    JsonObject *entry;

    if (!json_object_has_member(object, member) || json_object_get_null_member(object, member))
        return;
    value = json_object_get_string_member(object, member);
    redacted = einsora_redact_secrets(value);
    if (g_strcmp0(redacted, value) == 0)
        return;
    json_object_set_string_member(object, member, redacted);
    entry = json_object_new();
    json_object_set_string_member(entry, "field", path);
    json_object_set_string_member(entry, "reason", "it held what looked like a credential");
    json_array_add_object_element(redactions, entry);
}

typedef struct {
    const char *tenant_id;
    const char *workload_id;
    EinsoraWorkload *workload;
    GPtrArray *events;
} ExportContext;

static gboolean
export_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    ExportContext *ctx = user_data;

    /* One transaction, so the record and its timeline agree. */
    ctx->workload = einsora_store_get_workload(store, ctx->tenant_id, ctx->workload_id, error);
    if (ctx->workload == NULL)
        return FALSE;
    ctx->events = einsora_store_list_events(store, ctx->tenant_id, ctx->workload_id, error);
    return ctx->events != NULL;
}

/* The complete record and timeline of one workload, deleted or not. Fields
 * a user or a runtime could have filled with a secret are redacted, each
 * with an entry in "redactions". */
JsonNode *
einsora_service_export_workload(EinsoraService *self, const char *tenant_id,
                                const char *workload_id, GError **error)
{
    ExportContext ctx = {tenant_id, workload_id, NULL, NULL};
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autofree gchar *exported_at = NULL;
    JsonObject *root;
    JsonObject *record;
    JsonArray *timeline;
    JsonArray *redactions;
    JsonNode *node;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    if (!einsora_store_in_transaction(self->store, export_tx, &ctx, error)) {
        einsora_workload_free(ctx.workload);
        g_clear_pointer(&ctx.events, g_ptr_array_unref);
        return NULL;
    }
    workload = ctx.workload;
    events = ctx.events;

    root = json_object_new();
    redactions = json_array_new();
    json_object_set_int_member(root, "export_version", EXPORT_FORMAT_VERSION);
    exported_at = einsora_timestamp_format(einsora_service_now(self));
    json_object_set_string_member(root, "exported_at", exported_at);

    node = einsora_workload_to_json(workload);
    record = json_node_get_object(node);
    redact_member(record, "name", "workload.name", redactions);
    redact_member(record, "image", "workload.image", redactions);
    json_object_set_member(root, "workload", node);

    timeline = json_array_new();
    for (guint i = 0; i < events->len; i++) {
        g_autofree gchar *path = g_strdup_printf("events[%u].reason", i);
        node = einsora_workload_event_to_json(g_ptr_array_index(events, i));
        redact_member(json_node_get_object(node), "reason", path, redactions);
        json_array_add_element(timeline, node);
    }
    json_object_set_array_member(root, "events", timeline);
    json_object_set_array_member(root, "redactions", redactions);

    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    return node;
}
