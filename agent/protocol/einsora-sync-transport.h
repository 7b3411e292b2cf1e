/* How an agent reaches its hub: one call, Sync. In Solo the hub itself
 * implements it as an async function call on the same main loop; over the
 * network (a later issue) it is POST /agent/v1/sync. The call completes
 * with the machine's complete desired state as soon as that changes, or
 * after the long-poll timeout; cancelling it (to report something new at
 * once) completes it with G_IO_ERROR_CANCELLED. */
#pragma once

#include <gio/gio.h>

#include "einsora-desired-state.h"
#include "einsora-sync-report.h"

G_BEGIN_DECLS

#define EINSORA_SYNC_LONG_POLL_US (G_GINT64_CONSTANT(20) * G_USEC_PER_SEC)

#define EINSORA_TYPE_SYNC_TRANSPORT (einsora_sync_transport_get_type())
G_DECLARE_INTERFACE(EinsoraSyncTransport, einsora_sync_transport, EINSORA, SYNC_TRANSPORT, GObject)

struct _EinsoraSyncTransportInterface {
    GTypeInterface parent_iface;

    void (*sync_async)(EinsoraSyncTransport *self, const EinsoraSyncReport *report,
                       GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data);
    EinsoraDesiredState *(*sync_finish)(EinsoraSyncTransport *self, GAsyncResult *result,
                                        GError **error);
};

void einsora_sync_transport_sync_async(EinsoraSyncTransport *self, const EinsoraSyncReport *report,
                                       GCancellable *cancellable, GAsyncReadyCallback callback,
                                       gpointer user_data);
EinsoraDesiredState *einsora_sync_transport_sync_finish(EinsoraSyncTransport *self,
                                                        GAsyncResult *result, GError **error);

G_END_DECLS
