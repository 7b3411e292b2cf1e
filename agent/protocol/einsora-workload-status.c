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
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

EinsoraWorkloadStatus *
einsora_workload_status_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {
        "workload_id", "attempt", "mode", "code", "applied_generation", NULL,
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
    return g_steal_pointer(&status);
}
