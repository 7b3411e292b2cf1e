#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-desired-state.h"

#include "einsora-json-read.h"
#include "einsora-protocol.h"

G_DEFINE_BOXED_TYPE(EinsoraDesiredState, einsora_desired_state, einsora_desired_state_copy,
                    einsora_desired_state_free)

EinsoraDesiredState *
einsora_desired_state_new(void)
{
    EinsoraDesiredState *state = g_new0(EinsoraDesiredState, 1);

    state->workloads =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_desired_workload_free);
    return state;
}

EinsoraDesiredState *
einsora_desired_state_copy(const EinsoraDesiredState *state)
{
    EinsoraDesiredState *copy = g_new0(EinsoraDesiredState, 1);

    *copy = *state;
    copy->machine_id = g_strdup(state->machine_id);
    copy->workloads =
        g_ptr_array_new_full(state->workloads->len, (GDestroyNotify)einsora_desired_workload_free);
    for (guint i = 0; i < state->workloads->len; i++)
        g_ptr_array_add(copy->workloads, einsora_desired_workload_copy(state->workloads->pdata[i]));
    return copy;
}

gboolean
einsora_desired_state_same_content(const EinsoraDesiredState *a, const EinsoraDesiredState *b)
{
    if (g_strcmp0(a->machine_id, b->machine_id) != 0 || a->workloads->len != b->workloads->len)
        return FALSE;
    for (guint i = 0; i < a->workloads->len; i++) {
        if (!einsora_desired_workload_equal(g_ptr_array_index(a->workloads, i),
                                            g_ptr_array_index(b->workloads, i)))
            return FALSE;
    }
    return TRUE;
}

void
einsora_desired_state_free(EinsoraDesiredState *state)
{
    if (state == NULL)
        return;
    g_free(state->machine_id);
    g_clear_pointer(&state->workloads, g_ptr_array_unref);
    g_free(state);
}

JsonNode *
einsora_desired_state_to_json(const EinsoraDesiredState *state)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "machine_id", state->machine_id);
    einsora_json_add_int(builder, "generation", state->generation);
    if (state->replayed_through > 0)
        einsora_json_add_int(builder, "replayed_through", state->replayed_through);
    if (state->open_tunnels > 0)
        einsora_json_add_int(builder, "open_tunnels", state->open_tunnels);
    json_builder_set_member_name(builder, "workloads");
    json_builder_begin_array(builder);
    for (guint i = 0; i < state->workloads->len; i++)
        json_builder_add_value(builder,
                               einsora_desired_workload_to_json(state->workloads->pdata[i]));
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

static gboolean
read_workloads(JsonObject *object, GPtrArray *workloads, GError **error)
{
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    JsonArray *array;

    if (!einsora_json_read_array(object, "workloads", EINSORA_PROTOCOL_MAX_WORKLOADS, &array,
                                 error))
        return FALSE;
    for (guint i = 0; i < json_array_get_length(array); i++) {
        EinsoraDesiredWorkload *workload =
            einsora_desired_workload_from_json(json_array_get_element(array, i), error);

        if (workload == NULL) {
            g_prefix_error(error, "workloads[%u]: ", i);
            return FALSE;
        }
        g_ptr_array_add(workloads, workload);
        /* One workload asked two things at once has no right answer. */
        if (!g_hash_table_add(seen, workload->workload_id))
            return einsora_json_invalid(error, "workloads[%u]: \"workload_id\" %s is listed twice",
                                        i, workload->workload_id);
    }
    return TRUE;
}

EinsoraDesiredState *
einsora_desired_state_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {"machine_id",       "generation",   "workloads",
                                          "replayed_through", "open_tunnels", NULL};
    g_autoptr(EinsoraDesiredState) state = einsora_desired_state_new();
    JsonObject *object;

    if (!einsora_json_read_object(node, "a desired state", members, &object, error) ||
        !einsora_json_read_uuid(object, "machine_id", &state->machine_id, error) ||
        !einsora_json_read_int(object, "generation", G_MAXINT64, &state->generation, error) ||
        !read_workloads(object, state->workloads, error) ||
        (json_object_has_member(object, "replayed_through") &&
         !einsora_json_read_int(object, "replayed_through", G_MAXINT64, &state->replayed_through,
                                error)) ||
        (json_object_has_member(object, "open_tunnels") &&
         !einsora_json_read_int(object, "open_tunnels", EINSORA_PROTOCOL_MAX_OPEN_TUNNELS,
                                &state->open_tunnels, error)))
        return NULL;
    return g_steal_pointer(&state);
}
