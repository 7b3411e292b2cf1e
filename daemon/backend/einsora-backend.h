/* The runtime-neutral backend: all runtime access goes through it.
 * Capacity, run(spec), park(spec), observe(spec) and delete(spec). The
 * fake backend serves tests; the hub (agents) and, later, Kubernetes
 * implement it. Calls are short: run, park and delete record intent or
 * wake a machine, and never wait for the runtime. */
#pragma once

#include <glib-object.h>

#include "einsora-capacity.h"
#include "einsora-observation.h"
#include "einsora-workload-spec.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_BACKEND (einsora_backend_get_type())
G_DECLARE_INTERFACE(EinsoraBackend, einsora_backend, EINSORA, BACKEND, GObject)

struct _EinsoraBackendInterface {
    GTypeInterface parent_iface;

    EinsoraCapacity *(*capacity)(EinsoraBackend *self, const char *region, GError **error);
    gboolean (*run)(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error);
    gboolean (*park)(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error);
    gboolean (*observe)(EinsoraBackend *self, const EinsoraWorkloadSpec *spec,
                        EinsoraObservation *observation, GError **error);
    gboolean (*remove)(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error);
};

EinsoraCapacity *einsora_backend_capacity(EinsoraBackend *self, const char *region, GError **error);
gboolean einsora_backend_run(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error);
gboolean einsora_backend_park(EinsoraBackend *self, const EinsoraWorkloadSpec *spec,
                              GError **error);
gboolean einsora_backend_observe(EinsoraBackend *self, const EinsoraWorkloadSpec *spec,
                                 EinsoraObservation *observation, GError **error);
gboolean einsora_backend_remove(EinsoraBackend *self, const EinsoraWorkloadSpec *spec,
                                GError **error);

G_END_DECLS
