#define G_LOG_DOMAIN "einsora-backend"

#include "einsora-backend.h"

G_DEFINE_INTERFACE(EinsoraBackend, einsora_backend, G_TYPE_OBJECT)

static void
einsora_backend_default_init(EinsoraBackendInterface *iface)
{
}

EinsoraCapacity *
einsora_backend_capacity(EinsoraBackend *self, const char *region, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_BACKEND(self), NULL);
    return EINSORA_BACKEND_GET_IFACE(self)->capacity(self, region, error);
}

gboolean
einsora_backend_run(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_BACKEND(self), FALSE);
    return EINSORA_BACKEND_GET_IFACE(self)->run(self, spec, error);
}

gboolean
einsora_backend_park(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_BACKEND(self), FALSE);
    return EINSORA_BACKEND_GET_IFACE(self)->park(self, spec, error);
}

gboolean
einsora_backend_observe(EinsoraBackend *self, const EinsoraWorkloadSpec *spec,
                        EinsoraObservation *observation, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_BACKEND(self), FALSE);
    return EINSORA_BACKEND_GET_IFACE(self)->observe(self, spec, observation, error);
}

gboolean
einsora_backend_remove(EinsoraBackend *self, const EinsoraWorkloadSpec *spec, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_BACKEND(self), FALSE);
    return EINSORA_BACKEND_GET_IFACE(self)->remove(self, spec, error);
}
