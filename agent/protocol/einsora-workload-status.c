#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-workload-status.h"

#include "einsora-json-read.h"
#include "einsora-protocol.h"

G_DEFINE_BOXED_TYPE(EinsoraWorkloadStatus, einsora_workload_status, einsora_workload_status_copy,
                    einsora_workload_status_free)

EinsoraWorkloadStatus *
einsora_workload_status_new(void)
{
    return g_new0(EinsoraWorkloadStatus, 1);
}

EinsoraWorkloadStatus *
einsora_workload_status_copy(const EinsoraWorkloadStatus *status)
{
    EinsoraWorkloadStatus *copy = g_new0(EinsoraWorkloadStatus, 1);

    *copy = *status;
    copy->workload_id = g_strdup(status->workload_id);
    return copy;
}

void
einsora_workload_status_free(EinsoraWorkloadStatus *status)
{
    if (status == NULL)
        return;
    g_free(status->workload_id);
    g_free(status);
}

JsonNode *
einsora_workload_status_to_json(const EinsoraWorkloadStatus *status)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "workload_id", status->workload_id);
    einsora_json_add_int(builder, "attempt", status->attempt);
    einsora_json_add_string(builder, "mode", einsora_workload_mode_to_string(status->mode));
    einsora_json_add_string(builder, "code", einsora_status_code_to_string(status->code));
    einsora_json_add_int(builder, "applied_generation", status->applied_generation);
    if (status->pull.layers > 0) {
        json_builder_set_member_name(builder, "pull");
        json_builder_begin_object(builder);
        einsora_json_add_int(builder, "layers_done", status->pull.layers_done);
        einsora_json_add_int(builder, "layers", status->pull.layers);
        einsora_json_add_int(builder, "bytes_done", status->pull.bytes_done);
        einsora_json_add_int(builder, "bytes_total", status->pull.bytes_total);
        json_builder_end_object(builder);
    }
    if (status->activity.busy_kernels > 0 || status->activity.last_active_ms > 0) {
        json_builder_set_member_name(builder, "activity");
        json_builder_begin_object(builder);
        einsora_json_add_int(builder, "busy_kernels", status->activity.busy_kernels);
        einsora_json_add_int(builder, "last_active_ms", status->activity.last_active_ms);
        json_builder_end_object(builder);
    }
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

EinsoraWorkloadStatus *
einsora_workload_status_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {
        "workload_id", "attempt", "mode", "code", "applied_generation", "pull", "activity", NULL,
    };
    static const char *const activity_members[] = {"busy_kernels", "last_active_ms", NULL};
    static const char *const pull_members[] = {
        "layers_done", "layers", "bytes_done", "bytes_total", NULL,
    };
    g_autoptr(EinsoraWorkloadStatus) status = einsora_workload_status_new();
    g_autofree gchar *mode = NULL;
    g_autofree gchar *code = NULL;
    JsonObject *object;

    if (!einsora_json_read_object(node, "a workload status", members, &object, error) ||
        !einsora_json_read_uuid(object, "workload_id", &status->workload_id, error) ||
        !einsora_json_read_int(object, "attempt", G_MAXINT64, &status->attempt, error) ||
        !einsora_json_read_string(object, "mode", TRUE, &mode, error) ||
        !einsora_json_read_string(object, "code", TRUE, &code, error) ||
        !einsora_json_read_int(object, "applied_generation", G_MAXINT64,
                               &status->applied_generation, error))
        return NULL;
    if (!einsora_workload_mode_from_string(mode, &status->mode)) {
        einsora_json_invalid(error, "\"mode\" must be run, park or remove");
        return NULL;
    }
    /* A code outside the vocabulary is UNKNOWN, not an error: it reads
     * "its machine reported a problem". */
    status->code = einsora_status_code_from_string(code);
    if (json_object_has_member(object, "pull")) {
        EinsoraPullProgress *pull = &status->pull;
        JsonObject *progress;

        if (!einsora_json_read_object(json_object_get_member(object, "pull"), "a pull's progress",
                                      pull_members, &progress, error) ||
            !einsora_json_read_int(progress, "layers", EINSORA_PULL_MAX_LAYERS, &pull->layers,
                                   error) ||
            !einsora_json_read_int(progress, "layers_done", pull->layers, &pull->layers_done,
                                   error) ||
            !einsora_json_read_int(progress, "bytes_total", G_GINT64_CONSTANT(1) << 50,
                                   &pull->bytes_total, error) ||
            !einsora_json_read_int(progress, "bytes_done", pull->bytes_total, &pull->bytes_done,
                                   error))
            return NULL;
    }
    if (json_object_has_member(object, "activity")) {
        JsonObject *activity;

        if (!einsora_json_read_object(json_object_get_member(object, "activity"),
                                      "a workload's activity", activity_members, &activity,
                                      error) ||
            !einsora_json_read_int(activity, "busy_kernels", EINSORA_ACTIVITY_MAX_KERNELS,
                                   &status->activity.busy_kernels, error) ||
            !einsora_json_read_int(activity, "last_active_ms", G_MAXINT64,
                                   &status->activity.last_active_ms, error))
            return NULL;
    }
    return g_steal_pointer(&status);
}
