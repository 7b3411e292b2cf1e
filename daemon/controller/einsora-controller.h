/* The controller of one region: reconciles the store (intent) with the
 * backend (the runtime). Each pass admits pending and queued workloads,
 * observes provisioning and running ones, parks stopping ones and removes
 * deleting ones; every decision becomes a transition or a note with a
 * reason from the vocabulary. Time comes from the injected clock. */
#pragma once

#include "einsora-backend.h"
#include "einsora-catalog.h"
#include "einsora-metrics.h"
#include "einsora-service.h"
#include "einsora-store.h"

G_BEGIN_DECLS

#define EINSORA_PROVISIONING_TIMEOUT_DEFAULT_US (G_GINT64_CONSTANT(600) * G_USEC_PER_SEC)

#define EINSORA_TYPE_CONTROLLER (einsora_controller_get_type())
G_DECLARE_FINAL_TYPE(EinsoraController, einsora_controller, EINSORA, CONTROLLER, GObject)

EinsoraController *einsora_controller_new(EinsoraService *service, EinsoraStore *store,
                                          EinsoraCatalog *catalog, EinsoraBackend *backend,
                                          const char *region, EinsoraNowFunc now,
                                          gpointer now_data);
void einsora_controller_set_provisioning_timeout(EinsoraController *self, gint64 timeout_us);
/* Aging (docs/adr/0051): a waiting request older than @aging_us that
 * doesn't fit keeps younger requests for the same kind of capacity (CPU
 * classes, or GPUs of its accelerator) from backfilling ahead of it;
 * 0 turns it off. EINSORA_CONTROLLER_AGING_DEFAULT_US until set. */
#define EINSORA_CONTROLLER_AGING_DEFAULT_US (G_GINT64_CONSTANT(600) * G_USEC_PER_SEC)
void einsora_controller_set_aging(EinsoraController *self, gint64 aging_us);
/* Counts into @metrics (docs/adr/0043-metrics.md): each pass's duration
 * (einsora_controller_pass_duration_seconds), admissions by kind once
 * their group commits (einsora_admissions_total), and how long each
 * admitted workload waited since it became pending, by the injected
 * clock (einsora_admission_wait_seconds). */
void einsora_controller_set_metrics(EinsoraController *self, EinsoraMetrics *metrics);

/* One pass over the region. Fails only when the store can't be read;
 * a runtime that can't be reached is noted on the workloads it affects. */
gboolean einsora_controller_reconcile_once(EinsoraController *self, GError **error);

/* What the timer does: holds (or renews) the region's lease and, while
 * it leads, reconciles once. Returns whether it reconciled. */
gboolean einsora_controller_tick(EinsoraController *self);
gboolean einsora_controller_is_leading(EinsoraController *self);

/* Sets the lease holder (see einsora_lease_set_holder()); before start. */
void einsora_controller_set_lease_holder(EinsoraController *self, const char *holder);

/* Runs a tick every @interval_us on the main loop until stopped; the
 * lease (controller:<region>) lasts three intervals, at least 30 s, and
 * is renewed every third of that. */
void einsora_controller_start(EinsoraController *self, gint64 interval_us);
/* Stops, and releases the lease so a standby takes over at once. */
void einsora_controller_stop(EinsoraController *self);

/* Asks for a pass now rather than at the next tick (a user created or
 * stopped something, an agent reported a change; the daemon connects it
 * to the service's intent-changed and the hub's runtime-changed): it runs once the main
 * loop has nothing more urgent, and every wake until then shares it.
 * After a pass, the next woken one waits at least twice as long as that
 * pass took (EINSORA_CONTROLLER_WAKE_GAP_MIN_US at least), so a flood of
 * creates leaves most of the loop to requests. Only while started and
 * leading; a standby waits for its tick. See docs/adr/0029. */
#define EINSORA_CONTROLLER_WAKE_GAP_MIN_US (G_GINT64_CONSTANT(5) * 1000)
void einsora_controller_wake(EinsoraController *self);
/* Passes run since it was made, by tick or wake (tests count them). */
guint64 einsora_controller_count_passes(EinsoraController *self);

G_END_DECLS
