/* The hub: the agent backend of ADR-0016. Agents call Sync on it
 * (EinsoraSyncTransport; the in-process agent directly, networked agents
 * later through POST /agent/v1/sync), and the controller drives it as its
 * EinsoraBackend.
 *
 * A machine's desired state is computed from the store on every sync and
 * never lives only in memory, so a restart changes nothing an agent does.
 * What the hub keeps in memory is what agents told it since it started:
 * when each machine last synced, whether its inventory was refused, and
 * the statuses it reported. run, park and remove only wake the machine's
 * waiting sync. Time comes from the injected clock; see
 * docs/adr/0011-hub-generations.md for how generations grow. */
#pragma once

#include "einsora-backend.h"
#include "einsora-catalog.h"
#include "einsora-metrics.h"
#include "einsora-store.h"
#include "einsora-access-source.h"
#include "einsora-workload-access.h"
#include "einsora-workload-logs.h"
#include "einsora-sync-transport.h"
#include "einsora-timestamp.h"

G_BEGIN_DECLS

/* A machine that hasn't synced for this long is not offered for placement,
 * and its workloads' status is unknown (the placeable window of
 * einsora-machine.h; /v1/machines still says online for 3 minutes). */
#define EINSORA_HUB_OFFLINE_AFTER_US EINSORA_MACHINE_PLACEABLE_WINDOW_US
/* A machine away this long has its workloads reported failed. */
#define EINSORA_HUB_AWAY_TOO_LONG_US (G_GINT64_CONSTANT(600) * G_USEC_PER_SEC)
/* Right after the hub starts, it settles until every machine of its
 * region has synced, at most this long. */
#define EINSORA_HUB_SETTLING_US EINSORA_HUB_OFFLINE_AFTER_US

#define EINSORA_TYPE_HUB (einsora_hub_get_type())
G_DECLARE_FINAL_TYPE(EinsoraHub, einsora_hub, EINSORA, HUB, GObject)

EinsoraHub *einsora_hub_new(EinsoraStore *store, EinsoraCatalog *catalog, const char *region,
                            EinsoraNowFunc now, gpointer now_data);

/* Tests only: shorter offline and away-too-long limits (settling lasts
 * as long as the first). */
void einsora_hub_set_offline_limits(EinsoraHub *self, gint64 offline_after_us,
                                    gint64 away_too_long_us);

/* How long a sync with nothing new is held before it is answered anyway:
 * EINSORA_SYNC_LONG_POLL_US unless a test shortens it. It is a real
 * main-loop timer, not the injected clock, and applies to syncs held
 * from now on. */
void einsora_hub_set_long_poll(EinsoraHub *self, gint64 long_poll_us);

/* Whether other processes' hubs hold syncs of this region's machines too
 * (several controller processes on one Postgres, docs/adr/0062). Then a
 * machine another hub synced with since this one started, within the
 * placeable window (the store says when), isn't waited for while
 * settling: it is offline here, since its reports reach the other hub.
 * Off by default: one hub holds every sync. */
void einsora_hub_set_shared(EinsoraHub *self, gboolean shared);

/* Another process changed what runs on @machine_id: its waiting sync, if
 * this hub holds it, is answered with the new desired state now rather
 * than at the end of its long poll. */
void einsora_hub_wake_machine(EinsoraHub *self, const char *machine_id);

/* Counts into @metrics (docs/adr/0043-metrics.md): the syncs held open
 * now (einsora_hub_syncs_held) and the syncs answered, by how
 * (einsora_hub_syncs_answered_total). */
void einsora_hub_set_metrics(EinsoraHub *self, EinsoraMetrics *metrics);

/* The access proxy waits for @count tunnel streams from @machine_id's
 * networked agent (docs/adr/0059): its held sync is answered now asking
 * it to open them (or its next sync is). FALSE when that agent doesn't
 * open streams when asked (its reports don't say it does). */
gboolean einsora_hub_want_tunnels(EinsoraHub *self, const char *machine_id, guint count);

/* The agent in this process, for its machine: the only way the hub gets
 * a workload's socket and token (held weakly; never over a Sync). */
void einsora_hub_set_access_source(EinsoraHub *self, const char *machine_id,
                                   EinsoraAccessSource *source);
/* The way into @tenant_id's workload: its Unix socket and its own token,
 * only while the store has it running on the machine whose agent is in
 * this process, for the attempt that agent runs. EINSORA_ERROR_NOT_FOUND
 * otherwise (another tenant's included). The caller wipes @token. */
gboolean einsora_hub_lookup_access(EinsoraHub *self, const char *tenant_id, const char *workload_id,
                                   gint64 *attempt, gchar **socket_path, gchar **token,
                                   GError **error);

/* EinsoraHub::runtime-changed is emitted when a sync tells something a
 * controller pass would act on: a machine came online, its inventory or
 * a workload's status changed. The daemon wakes the controller on it, so
 * that running is seen when the agent says so, not a tick later. */

/* How many times a machine's desired state was read from the store
 * since the hub started (tests: a controller pass reads it once per
 * machine, not once per workload). */
guint64 einsora_hub_count_desired_reads(EinsoraHub *self);

G_END_DECLS
