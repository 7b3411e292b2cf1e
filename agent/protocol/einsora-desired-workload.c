#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-desired-workload.h"

#include "einsora-digest.h"
#include "einsora-gpu-mask.h"
#include "einsora-json-read.h"
#include "einsora-protocol.h"

#include <string.h>

G_DEFINE_BOXED_TYPE(EinsoraDesiredWorkload, einsora_desired_workload, einsora_desired_workload_copy,
                    einsora_desired_workload_free)

EinsoraDesiredWorkload *
einsora_desired_workload_new(void)
{
    return g_new0(EinsoraDesiredWorkload, 1);
}

EinsoraDesiredWorkload *
einsora_desired_workload_copy(const EinsoraDesiredWorkload *workload)
{
    EinsoraDesiredWorkload *copy = g_new0(EinsoraDesiredWorkload, 1);

    *copy = *workload;
    copy->workload_id = g_strdup(workload->workload_id);
    copy->tenant_id = g_strdup(workload->tenant_id);
    copy->driver = g_strdup(workload->driver);
    copy->placed_class = g_strdup(workload->placed_class);
    copy->image = g_strdup(workload->image);
    copy->runtime_reference = g_strdup(workload->runtime_reference);
    copy->server = g_strdup(workload->server);
    copy->model = g_strdup(workload->model);
    copy->model_digest = g_strdup(workload->model_digest);
    return copy;
}

gboolean
einsora_desired_workload_equal(const EinsoraDesiredWorkload *a, const EinsoraDesiredWorkload *b)
{
    return g_strcmp0(a->workload_id, b->workload_id) == 0 &&
           g_strcmp0(a->tenant_id, b->tenant_id) == 0 && a->mode == b->mode &&
           a->attempt == b->attempt && a->kind == b->kind && g_strcmp0(a->driver, b->driver) == 0 &&
           g_strcmp0(a->placed_class, b->placed_class) == 0 && g_strcmp0(a->image, b->image) == 0 &&
           g_strcmp0(a->runtime_reference, b->runtime_reference) == 0 &&
           g_strcmp0(a->server, b->server) == 0 && a->cpus == b->cpus &&
           a->memory_mib == b->memory_mib && a->devices == b->devices &&
           a->gpu_mask == b->gpu_mask && g_strcmp0(a->model, b->model) == 0 &&
           g_strcmp0(a->model_digest, b->model_digest) == 0;
}

void
einsora_desired_workload_free(EinsoraDesiredWorkload *workload)
{
    if (workload == NULL)
        return;
    g_free(workload->workload_id);
    g_free(workload->tenant_id);
    g_free(workload->driver);
    g_free(workload->placed_class);
    g_free(workload->image);
    g_free(workload->runtime_reference);
    g_free(workload->server);
    g_free(workload->model);
    g_free(workload->model_digest);
    g_free(workload);
}

gboolean
einsora_desired_workload_digest_is_valid(const char *digest)
{
    return einsora_digest_is_valid(digest);
}

JsonNode *
einsora_desired_workload_to_json(const EinsoraDesiredWorkload *workload)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "workload_id", workload->workload_id);
    einsora_json_add_string(builder, "tenant_id", workload->tenant_id);
    einsora_json_add_string(builder, "mode", einsora_workload_mode_to_string(workload->mode));
    einsora_json_add_int(builder, "attempt", workload->attempt);
    einsora_json_add_string(builder, "kind", einsora_workload_kind_to_string(workload->kind));
    einsora_json_add_string(builder, "driver", workload->driver);
    einsora_json_add_string(builder, "placed_class", workload->placed_class);
    einsora_json_add_string(builder, "image", workload->image);
    einsora_json_add_string(builder, "runtime_reference", workload->runtime_reference);
    if (workload->server != NULL)
        einsora_json_add_string(builder, "server", workload->server);
    einsora_json_add_int(builder, "cpus", workload->cpus);
    einsora_json_add_int(builder, "memory_mib", workload->memory_mib);
    einsora_json_add_int(builder, "devices", workload->devices);
    if (workload->gpu_mask != 0) {
        json_builder_set_member_name(builder, "gpu_indexes");
        json_builder_begin_array(builder);
        for (guint i = 0; i < EINSORA_GPU_MASK_BITS; i++) {
            if ((workload->gpu_mask & (G_GUINT64_CONSTANT(1) << i)) != 0)
                json_builder_add_int_value(builder, i);
        }
        json_builder_end_array(builder);
    }
    if (workload->model != NULL)
        einsora_json_add_string(builder, "model", workload->model);
    if (workload->model_digest != NULL)
        einsora_json_add_string(builder, "model_digest", workload->model_digest);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

/* Rising, each below 64, as many as the class's devices: one spelling
 * for each choice. */
static gboolean
read_gpu_indexes(JsonObject *object, gint64 devices, guint64 *mask, GError **error)
{
    JsonArray *indexes = NULL;
    gint64 last = -1;

    *mask = 0;
    if (!einsora_json_read_array(object, "gpu_indexes", EINSORA_GPU_MASK_BITS, &indexes, error))
        return FALSE;
    if ((gint64)json_array_get_length(indexes) != devices || devices == 0)
        return einsora_json_invalid(error, "\"gpu_indexes\" must name as many GPUs as \"devices\"");
    for (guint i = 0; i < json_array_get_length(indexes); i++) {
        JsonNode *node = json_array_get_element(indexes, i);
        gint64 index;

        if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64)
            return einsora_json_invalid(error, "\"gpu_indexes\" must hold whole numbers");
        index = json_node_get_int(node);
        if (index <= last || index >= EINSORA_GPU_MASK_BITS)
            return einsora_json_invalid(error, "\"gpu_indexes\" must rise, each below %d",
                                        EINSORA_GPU_MASK_BITS);
        *mask |= G_GUINT64_CONSTANT(1) << index;
        last = index;
    }
    return TRUE;
}

/* The driver is only bounded here: a hub may name a driver this agent
 * lacks, which the agent reports as driver_missing rather than refusing
 * the machine's whole desired state. */
EinsoraDesiredWorkload *
einsora_desired_workload_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {
        "workload_id", "tenant_id",    "mode",  "attempt",           "kind",
        "driver",      "placed_class", "image", "runtime_reference", "cpus",
        "memory_mib",  "devices",      "model", "model_digest",      "gpu_indexes",
        "server",      NULL,
    };
    g_autoptr(EinsoraDesiredWorkload) workload = einsora_desired_workload_new();
    g_autofree gchar *mode = NULL;
    g_autofree gchar *kind = NULL;
    JsonObject *object;

    if (!einsora_json_read_object(node, "a desired workload", members, &object, error) ||
        !einsora_json_read_uuid(object, "workload_id", &workload->workload_id, error) ||
        !einsora_json_read_uuid(object, "tenant_id", &workload->tenant_id, error) ||
        !einsora_json_read_string(object, "mode", TRUE, &mode, error))
        return NULL;
    if (!einsora_workload_mode_from_string(mode, &workload->mode)) {
        einsora_json_invalid(error, "\"mode\" must be run, park or remove");
        return NULL;
    }
    if (!einsora_json_read_int(object, "attempt", G_MAXINT64, &workload->attempt, error) ||
        !einsora_json_read_string(object, "kind", TRUE, &kind, error))
        return NULL;
    if (!einsora_workload_kind_from_string(kind, &workload->kind)) {
        einsora_json_invalid(error, "\"kind\" must be notebook, endpoint or vm");
        return NULL;
    }
    if (!einsora_json_read_string(object, "driver", TRUE, &workload->driver, error) ||
        !einsora_json_read_string(object, "placed_class", TRUE, &workload->placed_class, error) ||
        !einsora_json_read_string(object, "image", FALSE, &workload->image, error) ||
        !einsora_json_read_string(object, "runtime_reference", FALSE, &workload->runtime_reference,
                                  error) ||
        !einsora_json_read_int(object, "cpus", EINSORA_PROTOCOL_MAX_CPUS, &workload->cpus, error) ||
        !einsora_json_read_int(object, "memory_mib", EINSORA_PROTOCOL_MAX_MEMORY_MIB,
                               &workload->memory_mib, error) ||
        !einsora_json_read_int(object, "devices", EINSORA_PROTOCOL_MAX_GPUS, &workload->devices,
                               error) ||
        !einsora_json_read_string(object, "model", FALSE, &workload->model, error) ||
        !einsora_json_read_string(object, "model_digest", FALSE, &workload->model_digest, error))
        return NULL;
    if (!einsora_json_read_string(object, "server", FALSE, &workload->server, error))
        return NULL;
    if (workload->server != NULL && !g_str_equal(workload->server, "jupyter") &&
        !g_str_equal(workload->server, "llama-server") && !g_str_equal(workload->server, "vllm")) {
        einsora_json_invalid(error, "\"server\" must be jupyter, llama-server or vllm");
        return NULL;
    }
    if (json_object_has_member(object, "gpu_indexes") &&
        !read_gpu_indexes(object, workload->devices, &workload->gpu_mask, error))
        return NULL;
    if (workload->model != NULL && strlen(workload->model) > EINSORA_PROTOCOL_MAX_MODEL_NAME) {
        einsora_json_invalid(error, "\"model\" must be a model name of at most %d bytes",
                             EINSORA_PROTOCOL_MAX_MODEL_NAME);
        return NULL;
    }
    if (workload->model_digest != NULL &&
        !einsora_desired_workload_digest_is_valid(workload->model_digest)) {
        einsora_json_invalid(error, "\"model_digest\" must be sha256: and 64 hex digits");
        return NULL;
    }
    /* An endpoint runs its one model: the agent loads the file it names. */
    if (workload->mode == EINSORA_WORKLOAD_MODE_RUN &&
        workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT &&
        (workload->model == NULL || workload->model_digest == NULL)) {
        einsora_json_invalid(error, "an endpoint needs \"model\" and \"model_digest\" to run");
        return NULL;
    }
    /* Running needs what to run; parking and removing need only the ID. */
    if (workload->mode == EINSORA_WORKLOAD_MODE_RUN && workload->image == NULL) {
        einsora_json_invalid(error, "missing member \"image\", which running needs");
        return NULL;
    }
    if (workload->mode == EINSORA_WORKLOAD_MODE_RUN && workload->runtime_reference == NULL) {
        einsora_json_invalid(error, "missing member \"runtime_reference\", which running needs");
        return NULL;
    }
    return g_steal_pointer(&workload);
}
