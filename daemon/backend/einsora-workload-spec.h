/* What a backend runs: the placed workload with its class, image and
 * runtime, and on agents its machine and driver. Built by the controller
 * from the store and the catalog; a backend turns it into what its
 * runtime needs. */
#pragma once

#include <glib-object.h>

#include "einsora-workload-state.h"

G_BEGIN_DECLS

typedef struct {
    gchar *workload_id;
    gchar *tenant_id;
    gchar *region;
    EinsoraWorkloadKind kind;
    gchar *placed_class;
    gchar *image;
    gchar *runtime_reference; /* the image's runtime for the class's accelerator */
    gchar *machine_id;        /* NULL on backends that pick the node */
    gchar *driver;            /* NULL on backends that pick the node */
    gint64 attempt;
} EinsoraWorkloadSpec;

#define EINSORA_TYPE_WORKLOAD_SPEC (einsora_workload_spec_get_type())
GType einsora_workload_spec_get_type(void);

EinsoraWorkloadSpec *einsora_workload_spec_new(void);
EinsoraWorkloadSpec *einsora_workload_spec_copy(const EinsoraWorkloadSpec *spec);
void einsora_workload_spec_free(EinsoraWorkloadSpec *spec);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraWorkloadSpec, einsora_workload_spec_free)

G_END_DECLS
