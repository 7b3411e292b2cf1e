/* A named lease in the store (controller:<region>), so that one
 * controller at a time reconciles a region while others stand by. Leases
 * use this process's clock: controllers sharing a store need synchronized
 * clocks. */
#pragma once

#include "einsora-store.h"
#include "einsora-timestamp.h"

G_BEGIN_DECLS

#define EINSORA_LEASE_MIN_DURATION_US (G_GINT64_CONSTANT(30) * G_USEC_PER_SEC)

#define EINSORA_TYPE_LEASE (einsora_lease_get_type())
G_DECLARE_FINAL_TYPE(EinsoraLease, einsora_lease, EINSORA, LEASE, GObject)

EinsoraLease *einsora_lease_new(EinsoraStore *store, const char *name, gint64 duration_us,
                                EinsoraNowFunc now, gpointer now_data);
const char *einsora_lease_get_holder(EinsoraLease *self);
/* A holder that outlives the process (this machine's ID, when a host lock
 * keeps it to one daemon): a restart after a crash then takes its own
 * lease back at once instead of waiting for it to lapse. */
void einsora_lease_set_holder(EinsoraLease *self, const char *holder);
gint64 einsora_lease_get_duration(EinsoraLease *self);
/* Takes or renews the lease; TRUE when this holder has it now. */
gboolean einsora_lease_hold(EinsoraLease *self, GError **error);
/* Whether this holder may still act: it holds the lease and has not gone
 * two thirds of its time without renewing it. */
gboolean einsora_lease_is_held(EinsoraLease *self);
void einsora_lease_release(EinsoraLease *self);

G_END_DECLS
