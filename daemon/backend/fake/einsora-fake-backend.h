/* An in-memory backend for tests and development: units per class (or
 * machines, for placement), and a runtime whose answers tests set. With
 * auto-complete on, run is ready, park is parked and remove is removed at
 * once. */
#pragma once

#include "einsora-backend.h"

G_BEGIN_DECLS

typedef enum {
    EINSORA_FAKE_CALL_CAPACITY,
    EINSORA_FAKE_CALL_RUN,
    EINSORA_FAKE_CALL_PARK,
    EINSORA_FAKE_CALL_OBSERVE,
    EINSORA_FAKE_CALL_REMOVE,
} EinsoraFakeCall;

#define EINSORA_FAKE_CALL_COUNT 5

#define EINSORA_TYPE_FAKE_BACKEND (einsora_fake_backend_get_type())
G_DECLARE_FINAL_TYPE(EinsoraFakeBackend, einsora_fake_backend, EINSORA, FAKE_BACKEND, GObject)

EinsoraFakeBackend *einsora_fake_backend_new(void);

void einsora_fake_backend_set_units(EinsoraFakeBackend *self, const char *gpu_class, gint64 units);
/* Switches to machine capacity; takes @capacity. */
void einsora_fake_backend_add_machine(EinsoraFakeBackend *self, EinsoraMachineCapacity *capacity);
void einsora_fake_backend_set_settling(EinsoraFakeBackend *self, gboolean settling);
void einsora_fake_backend_set_auto_complete(EinsoraFakeBackend *self, gboolean auto_complete);
/* The next @call fails as an unreachable runtime would. */
void einsora_fake_backend_fail_next(EinsoraFakeBackend *self, EinsoraFakeCall call);
/* What observe answers for the workload from now on. @reason is static. */
void einsora_fake_backend_set_status(EinsoraFakeBackend *self, const char *workload_id,
                                     EinsoraRuntimeStatus status, const char *reason);
/* What observe says of its use while ready (it must be known). */
void einsora_fake_backend_set_activity(EinsoraFakeBackend *self, const char *workload_id,
                                       gint64 busy_kernels, gint64 last_active_us);
EinsoraRuntimeStatus einsora_fake_backend_get_status(EinsoraFakeBackend *self,
                                                     const char *workload_id);
guint einsora_fake_backend_count_calls(EinsoraFakeBackend *self, EinsoraFakeCall call);
/* The spec of the workload's last run, or NULL. */
const EinsoraWorkloadSpec *einsora_fake_backend_get_spec(EinsoraFakeBackend *self,
                                                         const char *workload_id);

G_END_DECLS
