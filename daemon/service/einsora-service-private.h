/* What the parts of EinsoraService share: the instance, and the few
 * helpers more than one part calls, by the file that holds them. The
 * service is einsora-service.c and one einsora-service-<concern>.c per
 * concern. Private to daemon/service. */
#pragma once

#include "einsora-service.h"

G_BEGIN_DECLS

struct _EinsoraService {
    GObject parent_instance;
    EinsoraStore *store;
    EinsoraCatalog *catalog;
    EinsoraNowFunc now;
    gpointer now_data;
    /* While a group is open (einsora-service-group.c): the tenants whose
     * timelines it grew, told once it commits; NULL otherwise. */
    GHashTable *group_tenants;
    /* A write in the open group failed after it may have written part of
     * itself: the group can only roll back. */
    gboolean group_failed;
    /* And the machines its placements were checked against, read once a
     * group (machine ID -> EinsoraMachine). */
    GHashTable *group_machines;
    /* NULL until einsora_service_set_model_store(). */
    EinsoraModelStore *models;
    gchar *models_owner;
    /* NULL until einsora_service_set_workload_logs(). */
    EinsoraWorkloadLogs *logs;
    /* NULL until einsora_service_set_metrics(). */
    EinsoraMetrics *metrics;
    gchar *metrics_reader;
    EinsoraMetric *workloads_gauge;
    gint64 default_idle_timeout_s;
    GHashTable *activity; /* workload ID -> last proxied activity (gint64 µs, boxed) */
};

/* einsora-service.c */
gint64 einsora_service_now(EinsoraService *self);
void einsora_service_events_added(EinsoraService *self, const char *tenant_id);
/* After a user's create or action has committed. */
void einsora_service_intent_changed(EinsoraService *self, const char *workload_id);

/* einsora-service-events.c */
EinsoraWorkloadEvent *einsora_service_event_new(EinsoraService *self,
                                                const EinsoraWorkload *workload,
                                                gboolean has_from_state, EinsoraWorkloadState from,
                                                const char *reason, gint64 now_us);

/* einsora-service-group.c: runs @func in the open group's transaction,
 * or in one of its own when no group is open, and tells @tenant_id's
 * readers once it is committed. @func sets *@partial when it fails after
 * writing part of itself (SQLite undoes only the failed statement), which
 * dooms the group. */
gboolean einsora_service_write(EinsoraService *self, const char *tenant_id,
                               EinsoraStoreTransactionFunc func, gpointer user_data,
                               const gboolean *partial, GError **error);

/* The machine @machine_id (NOT_FOUND when there is none), from the store,
 * or within an open group from what the group read already: a pass admits
 * many workloads onto few machines, and on Postgres each read is a round
 * trip. A group reads each machine once, as a pass reads the workloads
 * once at its start. */
EinsoraMachine *einsora_service_find_machine(EinsoraService *self, const char *machine_id,
                                             GError **error);

/* einsora-service-transition.c */
gboolean einsora_service_transition_in_tx(EinsoraService *self, const EinsoraWorkload *workload,
                                          EinsoraWorkloadState to, const char *reason,
                                          const EinsoraPlacement *placement, EinsoraWorkload **out,
                                          GError **error);

/* einsora-service-quota.c */
gboolean einsora_service_check_quota_in_tx(EinsoraService *self, const char *tenant_id,
                                           const char *gpu_class, gint64 requested, GError **error);

/* einsora-service-idempotency.c */
EinsoraIdempotencyRecord *einsora_service_idempotency_record_new(const char *tenant_id,
                                                                 const char *key,
                                                                 const char *request_sha256,
                                                                 guint status, const char *body,
                                                                 gint64 now_us);

G_END_DECLS
