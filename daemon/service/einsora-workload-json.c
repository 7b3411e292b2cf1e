#define G_LOG_DOMAIN "einsora-service"

#include "einsora-workload-json.h"

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
