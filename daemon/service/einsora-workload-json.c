#define G_LOG_DOMAIN "einsora-service"

#include "einsora-workload-json.h"

#include "einsora-json-writer.h"

static void
add_nullable_string(JsonBuilder *builder, const char *member, const char *value)
{
    json_builder_set_member_name(builder, member);
    if (value != NULL)
        json_builder_add_string_value(builder, value);
    else
        json_builder_add_null_value(builder);
}

JsonNode *
einsora_workload_to_json(const EinsoraWorkload *workload)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    add_nullable_string(builder, "id", workload->id);
    add_nullable_string(builder, "tenant_id", workload->tenant_id);
    add_nullable_string(builder, "kind", einsora_workload_kind_to_string(workload->kind));
    add_nullable_string(builder, "name", workload->name);
    add_nullable_string(builder, "state", einsora_workload_state_to_string(workload->state));
    add_nullable_string(builder, "region", workload->region);
    add_nullable_string(builder, "gpu_class", workload->gpu_class);
    add_nullable_string(builder, "placed_class", workload->placed_class);
    add_nullable_string(builder, "image", workload->image);
    json_builder_set_member_name(builder, "gpus");
    json_builder_add_int_value(builder, workload->gpus);
    add_nullable_string(builder, "machine_id", workload->machine_id);
    add_nullable_string(builder, "driver", workload->driver);
    json_builder_set_member_name(builder, "attempt");
    json_builder_add_int_value(builder, workload->attempt);
    json_builder_set_member_name(builder, "version");
    json_builder_add_int_value(builder, workload->version);
    add_nullable_string(builder, "created_by", workload->created_by);
    add_nullable_string(builder, "created_at", workload->created_at);
    add_nullable_string(builder, "updated_at", workload->updated_at);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

JsonNode *
einsora_workload_event_to_json(const EinsoraWorkloadEvent *event)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    add_nullable_string(builder, "id", event->id);
    add_nullable_string(builder, "workload_id", event->workload_id);
    add_nullable_string(builder, "from_state",
                        event->has_from_state ? einsora_workload_state_to_string(event->from_state)
                                              : NULL);
    add_nullable_string(builder, "to_state", einsora_workload_state_to_string(event->to_state));
    json_builder_set_member_name(builder, "note");
    json_builder_add_boolean_value(builder, einsora_workload_event_is_note(event));
    add_nullable_string(builder, "reason", event->reason);
    json_builder_set_member_name(builder, "attempt");
    json_builder_add_int_value(builder, event->attempt);
    add_nullable_string(builder, "created_at", event->created_at);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

/* Keep in step with einsora_workload_to_json(): same members, same order. */
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
    einsora_json_append_member_int(out, "gpus", workload->gpus, FALSE);
    einsora_json_append_member_string(out, "machine_id", workload->machine_id, FALSE);
    einsora_json_append_member_string(out, "driver", workload->driver, FALSE);
    einsora_json_append_member_int(out, "attempt", workload->attempt, FALSE);
    einsora_json_append_member_int(out, "version", workload->version, FALSE);
    einsora_json_append_member_string(out, "created_by", workload->created_by, FALSE);
    einsora_json_append_member_string(out, "created_at", workload->created_at, FALSE);
    einsora_json_append_member_string(out, "updated_at", workload->updated_at, FALSE);
    g_string_append_c(out, '}');
}

/* Keep in step with einsora_workload_event_to_json(). */
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
