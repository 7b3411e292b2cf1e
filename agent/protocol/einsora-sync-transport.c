#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-sync-transport.h"

G_DEFINE_INTERFACE(EinsoraSyncTransport, einsora_sync_transport, G_TYPE_OBJECT)

static void
einsora_sync_transport_default_init(EinsoraSyncTransportInterface *iface)
{
}

void
einsora_sync_transport_sync_async(EinsoraSyncTransport *self, const EinsoraSyncReport *report,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data)
{
    g_return_if_fail(EINSORA_IS_SYNC_TRANSPORT(self));
    EINSORA_SYNC_TRANSPORT_GET_IFACE(self)->sync_async(self, report, cancellable, callback,
                                                       user_data);
}

EinsoraDesiredState *
einsora_sync_transport_sync_finish(EinsoraSyncTransport *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SYNC_TRANSPORT(self), NULL);
    return EINSORA_SYNC_TRANSPORT_GET_IFACE(self)->sync_finish(self, result, error);
}
