/* The store: where Einsora's business state lives (tenants, quotas,
 * machines, workload intent, the timeline). An interface, so that a
 * Postgres implementation can join later and pass the same conformance
 * suite (tests/einsora-store-conformance.c).
 *
 * Every tenant-scoped method takes the tenant ID and filters by it: another
 * tenant's object is EINSORA_ERROR_NOT_FOUND, never a different error.
 * Transactions: einsora_store_in_transaction(); never nest them, and never
 * wait on anything else while one is open. */
#pragma once

#include <glib-object.h>

#include "einsora-machine.h"
#include "einsora-tenant.h"
#include "einsora-workload-event.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_STORE (einsora_store_get_type())
G_DECLARE_INTERFACE(EinsoraStore, einsora_store, EINSORA, STORE, GObject)

struct _EinsoraStoreInterface {
    GTypeInterface parent_iface;

    /* Transactions. begin takes the write lock at once (BEGIN IMMEDIATE in
     * SQLite), so a read-then-write inside one is never stale. */
    gboolean (*begin)(EinsoraStore *self, GError **error);
    gboolean (*commit)(EinsoraStore *self, GError **error);
    void (*rollback)(EinsoraStore *self);

    /* Whether the store is reachable and fully migrated (for /readyz). */
    gboolean (*check_ready)(EinsoraStore *self, GError **error);

    gboolean (*insert_tenant)(EinsoraStore *self, const EinsoraTenant *tenant, GError **error);
    EinsoraTenant *(*get_tenant)(EinsoraStore *self, const char *tenant_id, GError **error);

    /* Quotas: GPUs a tenant may hold of one class. A class without a row
     * allows none. */
    gboolean (*set_quota)(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                          gint64 gpus, GError **error);
    gboolean (*get_quota)(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                          gint64 *gpus, GError **error);
    /* GPUs of requested class @gpu_class that the tenant's workloads hold,
     * summed per state into @sums (indexed by EinsoraWorkloadState): the
     * store counts, the domain decides which states hold quota. */
    gboolean (*gpus_by_state)(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                              gint64 sums[EINSORA_WORKLOAD_STATE_COUNT], GError **error);

    gboolean (*insert_machine)(EinsoraStore *self, const EinsoraMachine *machine, GError **error);
    EinsoraMachine *(*get_machine)(EinsoraStore *self, const char *tenant_id,
                                   const char *machine_id, GError **error);
    GPtrArray *(*list_machines)(EinsoraStore *self, const char *tenant_id, GError **error);

    gboolean (*insert_workload)(EinsoraStore *self, const EinsoraWorkload *workload,
                                GError **error);
    /* Deleted workloads are found too; callers decide whether to show them. */
    EinsoraWorkload *(*get_workload)(EinsoraStore *self, const char *tenant_id,
                                     const char *workload_id, GError **error);
    /* Oldest first (by created_at, then ID). */
    GPtrArray *(*list_workloads)(EinsoraStore *self, const char *tenant_id,
                                 gboolean include_deleted, GError **error);
    /* Compare-and-swap: writes @workload's state, placement (placed_class,
     * machine_id, driver), attempt and updated_at, and sets version to
     * expected_version + 1, only if the row still has expected_state and
     * expected_version. A lost race is EINSORA_ERROR_CONFLICT; a row that
     * does not exist for this tenant is EINSORA_ERROR_NOT_FOUND. Only
     * einsora_service_transition() calls this. */
    gboolean (*update_workload_state)(EinsoraStore *self, const EinsoraWorkload *workload,
                                      EinsoraWorkloadState expected_state, gint64 expected_version,
                                      GError **error);

    /* The timeline is append-only. */
    gboolean (*append_event)(EinsoraStore *self, const EinsoraWorkloadEvent *event, GError **error);
    /* In the order they were appended. An unknown workload is NOT_FOUND. */
    GPtrArray *(*list_events)(EinsoraStore *self, const char *tenant_id, const char *workload_id,
                              GError **error);
};

typedef gboolean (*EinsoraStoreTransactionFunc)(EinsoraStore *store, gpointer user_data,
                                                GError **error);

gboolean einsora_store_in_transaction(EinsoraStore *self, EinsoraStoreTransactionFunc func,
                                      gpointer user_data, GError **error);

gboolean einsora_store_begin(EinsoraStore *self, GError **error);
gboolean einsora_store_commit(EinsoraStore *self, GError **error);
void einsora_store_rollback(EinsoraStore *self);
gboolean einsora_store_check_ready(EinsoraStore *self, GError **error);

gboolean einsora_store_insert_tenant(EinsoraStore *self, const EinsoraTenant *tenant,
                                     GError **error);
EinsoraTenant *einsora_store_get_tenant(EinsoraStore *self, const char *tenant_id, GError **error);

gboolean einsora_store_set_quota(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                                 gint64 gpus, GError **error);
gboolean einsora_store_get_quota(EinsoraStore *self, const char *tenant_id, const char *gpu_class,
                                 gint64 *gpus, GError **error);
gboolean einsora_store_gpus_by_state(EinsoraStore *self, const char *tenant_id,
                                     const char *gpu_class,
                                     gint64 sums[EINSORA_WORKLOAD_STATE_COUNT], GError **error);

gboolean einsora_store_insert_machine(EinsoraStore *self, const EinsoraMachine *machine,
                                      GError **error);
EinsoraMachine *einsora_store_get_machine(EinsoraStore *self, const char *tenant_id,
                                          const char *machine_id, GError **error);
GPtrArray *einsora_store_list_machines(EinsoraStore *self, const char *tenant_id, GError **error);

gboolean einsora_store_insert_workload(EinsoraStore *self, const EinsoraWorkload *workload,
                                       GError **error);
EinsoraWorkload *einsora_store_get_workload(EinsoraStore *self, const char *tenant_id,
                                            const char *workload_id, GError **error);
GPtrArray *einsora_store_list_workloads(EinsoraStore *self, const char *tenant_id,
                                        gboolean include_deleted, GError **error);
gboolean einsora_store_update_workload_state(EinsoraStore *self, const EinsoraWorkload *workload,
                                             EinsoraWorkloadState expected_state,
                                             gint64 expected_version, GError **error);

gboolean einsora_store_append_event(EinsoraStore *self, const EinsoraWorkloadEvent *event,
                                    GError **error);
GPtrArray *einsora_store_list_events(EinsoraStore *self, const char *tenant_id,
                                     const char *workload_id, GError **error);

G_END_DECLS
