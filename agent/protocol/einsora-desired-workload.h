/* One workload in a machine's desired state: what the hub asks of it
 * (run, park or remove), for which attempt, with which driver, and what it
 * needs to run. The agent checks it can honour it before applying it. */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "einsora-workload-mode.h"
#include "einsora-workload-state.h"

G_BEGIN_DECLS

typedef struct {
    gchar *workload_id;
    gchar *tenant_id;
    EinsoraWorkloadMode mode;
    gint64 attempt;
    EinsoraWorkloadKind kind;
    gchar *driver;
    gchar *placed_class;
    /* Needed to run; NULL when parking or removing a workload whose image
     * the catalog no longer offers. */
    gchar *image;
    gchar *runtime_reference;
    /* The program its image serves with, as the catalog says ("jupyter",
     * "llama-server", "vllm"); NULL: the kind's own. */
    gchar *server;
    gint64 cpus;
    gint64 memory_mib;
    gint64 devices; /* GPUs; 0 for CPU classes */
    /* Which of the machine's GPUs, as many as @devices (einsora-gpu-mask.h:
     * a bit per inventory index; "gpu_indexes" in JSON); 0 when placement
     * chose none and the runtime picks. */
    guint64 gpu_mask;
    /* An endpoint's model: its name in the model store and the digest of
     * its file ("sha256:<64 hex>"), which names the file the agent
     * loads; NULL for other kinds. */
    gchar *model;
    gchar *model_digest;
} EinsoraDesiredWorkload;

#define EINSORA_TYPE_DESIRED_WORKLOAD (einsora_desired_workload_get_type())
GType einsora_desired_workload_get_type(void);

EinsoraDesiredWorkload *einsora_desired_workload_new(void);
EinsoraDesiredWorkload *einsora_desired_workload_copy(const EinsoraDesiredWorkload *workload);
void einsora_desired_workload_free(EinsoraDesiredWorkload *workload);
/* Whether @a and @b ask the same of the machine: every member. */
gboolean einsora_desired_workload_equal(const EinsoraDesiredWorkload *a,
                                        const EinsoraDesiredWorkload *b);

JsonNode *einsora_desired_workload_to_json(const EinsoraDesiredWorkload *workload);
EinsoraDesiredWorkload *einsora_desired_workload_from_json(JsonNode *node, GError **error);

/* Whether @digest is "sha256:" and 64 lower-case hex digits. */
gboolean einsora_desired_workload_digest_is_valid(const char *digest);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraDesiredWorkload, einsora_desired_workload_free)

G_END_DECLS
