#define G_LOG_DOMAIN "einsora-service"

#include "einsora-workload-json.h"

#include "einsora-json-writer.h"

/* The trees are read back from the text, so that the members are listed
 * once: a workload is some 450 bytes, and these serve single answers and
 * the export, not lists. */
static JsonNode *
node_of(GString *text)
{
    g_autoptr(GError) error = NULL;
    JsonNode *node = json_from_string(text->str, &error);

    /* The writer's own output: nothing else can make it unreadable. */
    g_assert_no_error(error);
    g_string_free(text, TRUE);
    return node;
}

JsonNode *
einsora_workload_to_json(const EinsoraWorkload *workload)
{
    GString *text = g_string_sized_new(512);

    einsora_workload_append_json(text, workload);
    return node_of(text);
}

JsonNode *
einsora_workload_event_to_json(const EinsoraWorkloadEvent *event)
{
    GString *text = g_string_sized_new(256);

    einsora_workload_event_append_json(text, event, FALSE);
    return node_of(text);
}

void
einsora_workload_append_json(GString *out, const EinsoraWorkload *workload)
{
    g_string_append_c(out, '{');
    einsora_json_append_member_string(out, "id", workload->id, TRUE);
    einsora_json_append_member_string(out, "tenant_id", workload->tenant_id, FALSE);
    einsora_json_append_member_string(out, "kind", einsora_workload_kind_to_string(workload->kind),
                                      FALSE);
    einsora_json_append_member_string(out, "name", workload->name, FALSE);
    einsora_json_append_member_string(out, "state",
                                      einsora_workload_state_to_string(workload->state), FALSE);
    einsora_json_append_member_string(out, "region", workload->region, FALSE);
    einsora_json_append_member_string(out, "gpu_class", workload->gpu_class, FALSE);
    einsora_json_append_member_string(out, "placed_class", workload->placed_class, FALSE);
    einsora_json_append_member_string(out, "image", workload->image, FALSE);
    /* Only an endpoint has a model: other kinds' JSON is as it was. */
    if (workload->model != NULL) {
        einsora_json_append_member_string(out, "model", workload->model, FALSE);
        einsora_json_append_member_string(out, "model_digest", workload->model_digest, FALSE);
    }
    einsora_json_append_member_int(out, "gpus", workload->gpus, FALSE);
    /* Only a workload given fallback classes says so (docs/adr/0052). */
    if (workload->fallback != NULL) {
        g_auto(GStrv) classes = g_strsplit(workload->fallback, ",", -1);

        einsora_json_append_member(out, "fallback", FALSE);
        g_string_append_c(out, '[');
        for (guint i = 0; classes[i] != NULL; i++) {
            if (i > 0)
                g_string_append_c(out, ',');
            einsora_json_append_string(out, classes[i]);
        }
        g_string_append_c(out, ']');
        einsora_json_append_member_int(out, "fallback_after", workload->fallback_after_s, FALSE);
        einsora_json_append_member_boolean(
            out, "fallback_used",
            workload->placed_class != NULL &&
                g_strcmp0(workload->placed_class, workload->gpu_class) != 0,
            FALSE);
    }
    /* Only a workload given an idle limit says so. */
    if (workload->idle_timeout_s > 0)
        einsora_json_append_member_int(out, "idle_timeout", workload->idle_timeout_s, FALSE);
    einsora_json_append_member_string(out, "machine_id", workload->machine_id, FALSE);
    einsora_json_append_member_string(out, "driver", workload->driver, FALSE);
    einsora_json_append_member_int(out, "attempt", workload->attempt, FALSE);
    einsora_json_append_member_int(out, "version", workload->version, FALSE);
    einsora_json_append_member_string(out, "created_by", workload->created_by, FALSE);
    einsora_json_append_member_string(out, "created_at", workload->created_at, FALSE);
    einsora_json_append_member_string(out, "updated_at", workload->updated_at, FALSE);
    g_string_append_c(out, '}');
}

void
einsora_workload_event_append_json(GString *out, const EinsoraWorkloadEvent *event,
                                   gboolean with_seq)
{
    g_string_append_c(out, '{');
    einsora_json_append_member_string(out, "id", event->id, TRUE);
    einsora_json_append_member_string(out, "workload_id", event->workload_id, FALSE);
    einsora_json_append_member_string(
        out, "from_state",
        event->has_from_state ? einsora_workload_state_to_string(event->from_state) : NULL, FALSE);
    einsora_json_append_member_string(out, "to_state",
                                      einsora_workload_state_to_string(event->to_state), FALSE);
    einsora_json_append_member_boolean(out, "note", einsora_workload_event_is_note(event), FALSE);
    einsora_json_append_member_string(out, "reason", event->reason, FALSE);
    einsora_json_append_member_int(out, "attempt", event->attempt, FALSE);
    einsora_json_append_member_string(out, "created_at", event->created_at, FALSE);
    if (with_seq)
        einsora_json_append_member_int(out, "seq", event->seq, FALSE);
    g_string_append_c(out, '}');
}
