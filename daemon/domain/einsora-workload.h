/* A workload as the store records it: the user's intent and where the
 * controller placed it. */
#pragma once

#include <glib-object.h>

#include "einsora-workload-state.h"

G_BEGIN_DECLS

typedef struct {
    gchar *id;
    gchar *tenant_id;
    EinsoraWorkloadKind kind;
    gchar *name;
    EinsoraWorkloadState state;
    gchar *region;
    gchar *gpu_class;    /* the class requested */
    gchar *placed_class; /* the class it runs on; NULL until admitted */
    gchar *image;
    gint64 gpus;       /* devices the requested class holds, for quota */
    gchar *machine_id; /* NULL until placed on a machine */
    gchar *driver;     /* NULL until placed on a machine */
    /* The machine's GPUs it was placed on, a bit per inventory index
     * (einsora-gpu-mask.h); 0 when placement chose none. */
    guint64 gpu_mask;
    gint64 attempt; /* one more at each admission */
    /* Stopped after this many seconds idle (docs/adr/0044); 0: never. */
    gint64 idle_timeout_s;
    /* Classes it may run on instead, in order, comma-separated (NULL:
     * none), once it waited fallback_after_s for its own (docs/adr/0052). */
    gchar *fallback;
    gint64 fallback_after_s;
    gint64 version;    /* one more at each state change: the CAS token */
    gchar *created_by; /* the user ID that created it */
    /* An endpoint's model: its name in the model store and its file's
     * digest ("sha256:<hex>") when it was launched; NULL for other kinds. */
    gchar *model;
    gchar *model_digest;
    gchar *created_at;
    gchar *updated_at;
} EinsoraWorkload;

#define EINSORA_TYPE_WORKLOAD (einsora_workload_get_type())
GType einsora_workload_get_type(void);

EinsoraWorkload *einsora_workload_new(void);
EinsoraWorkload *einsora_workload_copy(const EinsoraWorkload *workload);
void einsora_workload_free(EinsoraWorkload *workload);

/* The class it runs as: the one it was placed on once admitted, until
 * then the one asked for. */
const char *einsora_workload_get_class(const EinsoraWorkload *workload);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraWorkload, einsora_workload_free)

G_END_DECLS
