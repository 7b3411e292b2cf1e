/* The store: where Einsora's business state lives (tenants, quotas,
 * machines, workload intent, the timeline). An interface, so that a
 * Postgres implementation can join later and pass the same conformance
 * suite (tests/einsora-store-conformance.c).
 *
 * Every tenant-scoped method takes the tenant ID and filters by it: another
 * tenant's object is EINSORA_ERROR_NOT_FOUND, never a different error. The
 * few global look-ups (a user by email, a token or session by its hash)
 * exist because the caller does not know the tenant yet: they are how a
 * request finds its tenant.
 * Transactions: einsora_store_in_transaction(); never nest them, and never
 * wait on anything else while one is open. */
#pragma once

#include <glib-object.h>

#include "einsora-access-ticket.h"
#include "einsora-api-token.h"
#include "einsora-idempotency-record.h"
#include "einsora-machine.h"
#include "einsora-metrics.h"
#include "einsora-session.h"
#include "einsora-audit-event.h"
#include "einsora-enrolment.h"
#include "einsora-tenant.h"
#include "einsora-usage-record.h"
#include "einsora-user.h"
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
    /* For operators' settings (EINSORA_MACHINE_OWNER), never for requests. */
    EinsoraTenant *(*find_tenant_by_name)(EinsoraStore *self, const char *name, GError **error);

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

    /* Not tenant-scoped, for the hub and placement checks: one machine by
     * its ID, whoever owns it. NOT_FOUND when there is none. */
    EinsoraMachine *(*find_machine)(EinsoraStore *self, const char *machine_id, GError **error);
    /* Not tenant-scoped, for a networked agent's sync: the machine whose
     * agent holds the client certificate with @fingerprint. NOT_FOUND
     * when none does (never enrolled, or revoked). */
    EinsoraMachine *(*find_machine_by_certificate)(EinsoraStore *self, const char *fingerprint,
                                                   GError **error);
    /* Not tenant-scoped, for the hub: every machine in @region. */
    GPtrArray *(*list_region_machines)(EinsoraStore *self, const char *region, GError **error);
    /* Its agent synced: when, and its inventory (JSON) when it sent one
     * (NULL keeps the last); and what its agent said of itself this
     * time, its version and its clock's offset in ms (NULL: not said),
     * which replace the last either way. An unknown machine is
     * NOT_FOUND. */
    gboolean (*record_machine_seen)(EinsoraStore *self, const char *machine_id,
                                    const char *last_seen_at, const char *inventory,
                                    const char *agent_version, const gint64 *clock_offset_ms,
                                    GError **error);
    /* Its owner's choice of who may run on it. NOT_FOUND unless the
     * machine is the tenant's. */
    gboolean (*set_machine_sharing)(EinsoraStore *self, const char *tenant_id,
                                    const char *machine_id, EinsoraSharing sharing, GError **error);
    /* Revocation: the machine's agent certificate no longer finds it (its
     * fingerprint is cleared). NOT_FOUND unless the machine is the
     * tenant's and has one. */
    gboolean (*clear_machine_certificate)(EinsoraStore *self, const char *tenant_id,
                                          const char *machine_id, GError **error);
    /* Not tenant-scoped, for the hub: what is placed on the machine and
     * not deleted, oldest first; its desired state is computed from it. */
    GPtrArray *(*list_machine_workloads)(EinsoraStore *self, const char *machine_id,
                                         GError **error);

    gboolean (*insert_workload)(EinsoraStore *self, const EinsoraWorkload *workload,
                                GError **error);
    /* Deleted workloads are found too; callers decide whether to show them. */
    EinsoraWorkload *(*get_workload)(EinsoraStore *self, const char *tenant_id,
                                     const char *workload_id, GError **error);
    /* Oldest first (by created_at, then ID), and a keyset page of that
     * order: the rows after (@after_created_at, @after_id), both NULL for
     * the first page, at most @limit. A row inserted or deleted meanwhile
     * never moves another across a page's edge. */
    GPtrArray *(*list_workloads)(EinsoraStore *self, const char *tenant_id,
                                 gboolean include_deleted, const char *after_created_at,
                                 const char *after_id, guint limit, GError **error);
    /* Not tenant-scoped, for the controller of @region only: every
     * workload there that has something to reconcile (not stopped, failed
     * or deleted), oldest first. */
    GPtrArray *(*list_region_workloads)(EinsoraStore *self, const char *region, GError **error);
    /* Compare-and-swap: writes @workload's state, placement (placed_class,
     * machine_id, driver), attempt and updated_at, and sets version to
     * expected_version + 1, only if the row still has expected_state and
     * expected_version. A lost race is EINSORA_ERROR_CONFLICT; a row that
     * does not exist for this tenant is EINSORA_ERROR_NOT_FOUND. Only
     * einsora_service_transition() calls this. */
    gboolean (*update_workload_state)(EinsoraStore *self, const EinsoraWorkload *workload,
                                      EinsoraWorkloadState expected_state, gint64 expected_version,
                                      GError **error);

    /* Named leases (controller:<region>): takes or renews @name for
     * @holder until @expires_at when it is free, expired at @now, or
     * already @holder's; *held says whether @holder has it now. */
    gboolean (*acquire_lease)(EinsoraStore *self, const char *name, const char *holder,
                              const char *now, const char *expires_at, gboolean *held,
                              GError **error);
    /* Gives @name up if @holder has it. */
    gboolean (*release_lease)(EinsoraStore *self, const char *name, const char *holder,
                              GError **error);

    /* The timeline is append-only. */
    gboolean (*append_event)(EinsoraStore *self, const EinsoraWorkloadEvent *event, GError **error);
    /* In the order they were appended (seq), those whose seq is above
     * @after_seq, at most @limit. An unknown workload is NOT_FOUND. */
    GPtrArray *(*list_events)(EinsoraStore *self, const char *tenant_id, const char *workload_id,
                              gint64 after_seq, guint limit, GError **error);
    /* The change feed: the tenant's events (of every workload, deleted
     * ones included) whose seq is above @after_seq, in seq order, at most
     * @limit. seq is one sequence for the whole store, so it only grows,
     * and a tenant's events have gaps where other tenants' are. */
    GPtrArray *(*list_tenant_events)(EinsoraStore *self, const char *tenant_id, gint64 after_seq,
                                     guint limit, GError **error);
    /* The seq of the tenant's latest event; 0 when it has none. */
    gboolean (*last_event_seq)(EinsoraStore *self, const char *tenant_id, gint64 *seq,
                               GError **error);

    /* Accounts. An email is unique across tenants (CONFLICT); an unknown
     * tenant is NOT_FOUND. */
    gboolean (*insert_user)(EinsoraStore *self, const EinsoraUser *user, GError **error);
    EinsoraUser *(*get_user)(EinsoraStore *self, const char *tenant_id, const char *user_id,
                             GError **error);
    /* Global: sign-in does not know the tenant. Exact match; callers
     * normalise. */
    EinsoraUser *(*find_user_by_email)(EinsoraStore *self, const char *email, GError **error);
    gboolean (*count_users)(EinsoraStore *self, gint64 *count, GError **error);
    /* Global, for a Lab's admins: every account, by email. */
    GPtrArray *(*list_users)(EinsoraStore *self, GError **error);
    /* @disabled_at NULL enables the account; disabling twice keeps the
     * first time. NOT_FOUND unless the user is in the tenant. */
    gboolean (*set_user_disabled)(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                  const char *disabled_at, GError **error);
    /* A new password hash (NULL: no password sign-in) and whether it must
     * be changed at the next sign-in. NOT_FOUND unless the user is in the
     * tenant. */
    gboolean (*set_user_password)(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                  const char *password_hash, gboolean must_change, GError **error);
    /* Global, for a Lab's admins: every tenant, by name. */
    GPtrArray *(*list_tenants)(EinsoraStore *self, GError **error);
    /* The audit trail (EinsoraAuditEvent): an event for an unknown tenant
     * is NOT_FOUND; a list is the tenant's latest @limit, oldest first. */
    gboolean (*insert_audit_event)(EinsoraStore *self, const EinsoraAuditEvent *event,
                                   GError **error);
    GPtrArray *(*list_audit_events)(EinsoraStore *self, const char *tenant_id, guint limit,
                                    GError **error);
    /* Global: the model store is the installation's. Workloads of any
     * tenant, not deleted, that serve the model named @model. */
    gboolean (*count_workloads_with_model)(EinsoraStore *self, const char *model, gint64 *count,
                                           GError **error);
    /* Global, for /metrics (the machine's operator): every tenant's
     * workloads that aren't deleted, counted into @counts by kind and
     * state (the deleted column stays 0). */
    gboolean (*count_workloads)(
        EinsoraStore *self,
        gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT], GError **error);

    /* API tokens, stored by the SHA-256 of their secret. A token for a user
     * that is not in that tenant is NOT_FOUND. */
    gboolean (*insert_api_token)(EinsoraStore *self, const EinsoraApiToken *token, GError **error);
    /* Global, and revoked or expired tokens are found too: callers check. */
    EinsoraApiToken *(*find_api_token)(EinsoraStore *self, const char *token_sha256,
                                       GError **error);
    /* One user's tokens, oldest first (by created_at, then ID), revoked
     * ones included; paged as list_workloads is. */
    GPtrArray *(*list_api_tokens)(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                  const char *after_created_at, const char *after_id, guint limit,
                                  GError **error);
    /* NOT_FOUND unless the token is this user's. Revoking twice succeeds
     * and keeps the first revoked_at. */
    gboolean (*revoke_api_token)(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                 const char *token_id, const char *revoked_at, GError **error);
    gboolean (*touch_api_token)(EinsoraStore *self, const char *token_id, const char *last_used_at,
                                GError **error);

    /* Browser sessions, stored by the SHA-256 of the cookie's value. */
    gboolean (*insert_session)(EinsoraStore *self, const EinsoraSession *session, GError **error);
    /* Global, and revoked or expired sessions are found too: callers
     * check. */
    EinsoraSession *(*find_session)(EinsoraStore *self, const char *session_sha256, GError **error);
    /* Revoking twice succeeds and keeps the first revoked_at. */
    gboolean (*revoke_session)(EinsoraStore *self, const char *tenant_id, const char *session_id,
                               const char *revoked_at, GError **error);
    /* Every session of the user not revoked yet, revoked at @revoked_at. */
    gboolean (*revoke_user_sessions)(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                     const char *revoked_at, GError **error);

    /* Idempotency-Key replays. get finds expired records too (callers
     * compare expires_at). insert is CONFLICT while a record for the key
     * lives, and replaces one that expired by the new record's created_at. */
    EinsoraIdempotencyRecord *(*get_idempotency_record)(EinsoraStore *self, const char *tenant_id,
                                                        const char *key, GError **error);
    gboolean (*insert_idempotency_record)(EinsoraStore *self,
                                          const EinsoraIdempotencyRecord *record, GError **error);
    /* Deletes the records whose expires_at is at or before @now. */
    gboolean (*delete_expired_idempotency_records)(EinsoraStore *self, const char *now,
                                                   GError **error);

    /* One-time access tickets, stored by the SHA-256 of their secret. A
     * ticket for a workload that is not in its tenant is NOT_FOUND; a hash
     * already stored is CONFLICT. */
    gboolean (*insert_access_ticket)(EinsoraStore *self, const EinsoraAccessTicket *ticket,
                                     GError **error);
    /* Global: the proxy knows only the hash. Deletes the ticket and
     * returns it if it expires after @now; an unknown or expired one is
     * NOT_FOUND. Every ticket expired at @now is deleted too, in the same
     * write, so the DELETE itself decides which of two racing takes gets
     * the ticket. */
    EinsoraAccessTicket *(*take_access_ticket)(EinsoraStore *self, const char *ticket_sha256,
                                               const char *now, GError **error);

    /* Machine enrolments (docs/adr/0055), stored by the SHA-256 of their
     * secret. One for another tenant is NOT_FOUND; a hash already stored
     * is CONFLICT. */
    gboolean (*insert_enrolment)(EinsoraStore *self, const EinsoraEnrolment *enrolment,
                                 GError **error);
    /* Global: the agent knows only the token. Marks the enrolment used at
     * @now by @machine_id and returns it, if it is unused and expires
     * after @now; an unknown, used or expired one is NOT_FOUND. The
     * machine named need not exist yet: make it in the same transaction
     * (the reference is checked at commit). */
    EinsoraEnrolment *(*take_enrolment)(EinsoraStore *self, const char *token_sha256,
                                        const char *now, const char *machine_id, GError **error);

    /* Usage accounting (docs/adr/0042). Not tenant-scoped, for the
     * metering step: every workload, deleted ones included, that has an
     * event whose seq is above @after_seq; and every workload in @state,
     * in every region. Oldest first. */
    GPtrArray *(*list_workloads_with_events_after)(EinsoraStore *self, gint64 after_seq,
                                                   GError **error);
    GPtrArray *(*list_workloads_in_state)(EinsoraStore *self, EinsoraWorkloadState state,
                                          GError **error);
    /* Makes @records (EinsoraUsageRecord, each of this workload) the
     * workload's whole usage: a record of a class and hour already stored
     * keeps its ID and created_at and takes the new seconds; a new one is
     * inserted as given; a stored one not in @records is deleted. So a
     * pass that writes what the last one did changes nothing. A workload
     * not in the tenant is NOT_FOUND. */
    gboolean (*replace_usage_records)(EinsoraStore *self, const char *tenant_id,
                                      const char *workload_id, GPtrArray *records, GError **error);
    /* The tenant's records whose hour starts at or after @from and before
     * @to, by hour, then workload and class. */
    GPtrArray *(*list_usage_records)(EinsoraStore *self, const char *tenant_id, const char *from,
                                     const char *to, GError **error);
    /* Where the metering step named @name got to in the timeline: the
     * last seq it has metered, 0 before its first pass. */
    gboolean (*get_metering_cursor)(EinsoraStore *self, const char *name, gint64 *last_seq,
                                    GError **error);
    gboolean (*set_metering_cursor)(EinsoraStore *self, const char *name, gint64 last_seq,
                                    const char *updated_at, GError **error);
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

EinsoraTenant *einsora_store_find_tenant_by_name(EinsoraStore *self, const char *name,
                                                 GError **error);

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

EinsoraMachine *einsora_store_find_machine(EinsoraStore *self, const char *machine_id,
                                           GError **error);
EinsoraMachine *einsora_store_find_machine_by_certificate(EinsoraStore *self,
                                                          const char *fingerprint, GError **error);
GPtrArray *einsora_store_list_region_machines(EinsoraStore *self, const char *region,
                                              GError **error);
gboolean einsora_store_record_machine_seen(EinsoraStore *self, const char *machine_id,
                                           const char *last_seen_at, const char *inventory,
                                           const char *agent_version, const gint64 *clock_offset_ms,
                                           GError **error);
GPtrArray *einsora_store_list_machine_workloads(EinsoraStore *self, const char *machine_id,
                                                GError **error);
gboolean einsora_store_set_machine_sharing(EinsoraStore *self, const char *tenant_id,
                                           const char *machine_id, EinsoraSharing sharing,
                                           GError **error);
gboolean einsora_store_clear_machine_certificate(EinsoraStore *self, const char *tenant_id,
                                                 const char *machine_id, GError **error);

gboolean einsora_store_insert_workload(EinsoraStore *self, const EinsoraWorkload *workload,
                                       GError **error);
EinsoraWorkload *einsora_store_get_workload(EinsoraStore *self, const char *tenant_id,
                                            const char *workload_id, GError **error);
/* The whole list, for the daemon's own use; requests read pages. */
GPtrArray *einsora_store_list_workloads(EinsoraStore *self, const char *tenant_id,
                                        gboolean include_deleted, GError **error);
GPtrArray *einsora_store_list_workloads_page(EinsoraStore *self, const char *tenant_id,
                                             gboolean include_deleted, const char *after_created_at,
                                             const char *after_id, guint limit, GError **error);
GPtrArray *einsora_store_list_region_workloads(EinsoraStore *self, const char *region,
                                               GError **error);
gboolean einsora_store_update_workload_state(EinsoraStore *self, const EinsoraWorkload *workload,
                                             EinsoraWorkloadState expected_state,
                                             gint64 expected_version, GError **error);

gboolean einsora_store_acquire_lease(EinsoraStore *self, const char *name, const char *holder,
                                     const char *now, const char *expires_at, gboolean *held,
                                     GError **error);
gboolean einsora_store_release_lease(EinsoraStore *self, const char *name, const char *holder,
                                     GError **error);

gboolean einsora_store_append_event(EinsoraStore *self, const EinsoraWorkloadEvent *event,
                                    GError **error);
GPtrArray *einsora_store_list_events(EinsoraStore *self, const char *tenant_id,
                                     const char *workload_id, GError **error);
GPtrArray *einsora_store_list_events_page(EinsoraStore *self, const char *tenant_id,
                                          const char *workload_id, gint64 after_seq, guint limit,
                                          GError **error);
GPtrArray *einsora_store_list_tenant_events(EinsoraStore *self, const char *tenant_id,
                                            gint64 after_seq, guint limit, GError **error);
gboolean einsora_store_last_event_seq(EinsoraStore *self, const char *tenant_id, gint64 *seq,
                                      GError **error);

gboolean einsora_store_insert_user(EinsoraStore *self, const EinsoraUser *user, GError **error);
EinsoraUser *einsora_store_get_user(EinsoraStore *self, const char *tenant_id, const char *user_id,
                                    GError **error);
EinsoraUser *einsora_store_find_user_by_email(EinsoraStore *self, const char *email,
                                              GError **error);
gboolean einsora_store_count_users(EinsoraStore *self, gint64 *count, GError **error);
GPtrArray *einsora_store_list_users(EinsoraStore *self, GError **error);
gboolean einsora_store_set_user_disabled(EinsoraStore *self, const char *tenant_id,
                                         const char *user_id, const char *disabled_at,
                                         GError **error);
gboolean einsora_store_set_user_password(EinsoraStore *self, const char *tenant_id,
                                         const char *user_id, const char *password_hash,
                                         gboolean must_change, GError **error);
GPtrArray *einsora_store_list_tenants(EinsoraStore *self, GError **error);
gboolean einsora_store_insert_audit_event(EinsoraStore *self, const EinsoraAuditEvent *event,
                                          GError **error);
GPtrArray *einsora_store_list_audit_events(EinsoraStore *self, const char *tenant_id, guint limit,
                                           GError **error);
gboolean einsora_store_count_workloads_with_model(EinsoraStore *self, const char *model,
                                                  gint64 *count, GError **error);
gboolean einsora_store_count_workloads(
    EinsoraStore *self, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error);

gboolean einsora_store_insert_api_token(EinsoraStore *self, const EinsoraApiToken *token,
                                        GError **error);
EinsoraApiToken *einsora_store_find_api_token(EinsoraStore *self, const char *token_sha256,
                                              GError **error);
GPtrArray *einsora_store_list_api_tokens(EinsoraStore *self, const char *tenant_id,
                                         const char *user_id, GError **error);
GPtrArray *einsora_store_list_api_tokens_page(EinsoraStore *self, const char *tenant_id,
                                              const char *user_id, const char *after_created_at,
                                              const char *after_id, guint limit, GError **error);
gboolean einsora_store_revoke_api_token(EinsoraStore *self, const char *tenant_id,
                                        const char *user_id, const char *token_id,
                                        const char *revoked_at, GError **error);
gboolean einsora_store_touch_api_token(EinsoraStore *self, const char *token_id,
                                       const char *last_used_at, GError **error);

gboolean einsora_store_insert_session(EinsoraStore *self, const EinsoraSession *session,
                                      GError **error);
EinsoraSession *einsora_store_find_session(EinsoraStore *self, const char *session_sha256,
                                           GError **error);
gboolean einsora_store_revoke_user_sessions(EinsoraStore *self, const char *tenant_id,
                                            const char *user_id, const char *revoked_at,
                                            GError **error);
gboolean einsora_store_revoke_session(EinsoraStore *self, const char *tenant_id,
                                      const char *session_id, const char *revoked_at,
                                      GError **error);

EinsoraIdempotencyRecord *einsora_store_get_idempotency_record(EinsoraStore *self,
                                                               const char *tenant_id,
                                                               const char *key, GError **error);
gboolean einsora_store_insert_idempotency_record(EinsoraStore *self,
                                                 const EinsoraIdempotencyRecord *record,
                                                 GError **error);
gboolean einsora_store_delete_expired_idempotency_records(EinsoraStore *self, const char *now,
                                                          GError **error);

gboolean einsora_store_insert_access_ticket(EinsoraStore *self, const EinsoraAccessTicket *ticket,
                                            GError **error);
EinsoraAccessTicket *einsora_store_take_access_ticket(EinsoraStore *self, const char *ticket_sha256,
                                                      const char *now, GError **error);

gboolean einsora_store_insert_enrolment(EinsoraStore *self, const EinsoraEnrolment *enrolment,
                                        GError **error);
EinsoraEnrolment *einsora_store_take_enrolment(EinsoraStore *self, const char *token_sha256,
                                               const char *now, const char *machine_id,
                                               GError **error);

GPtrArray *einsora_store_list_workloads_with_events_after(EinsoraStore *self, gint64 after_seq,
                                                          GError **error);
GPtrArray *einsora_store_list_workloads_in_state(EinsoraStore *self, EinsoraWorkloadState state,
                                                 GError **error);
gboolean einsora_store_replace_usage_records(EinsoraStore *self, const char *tenant_id,
                                             const char *workload_id, GPtrArray *records,
                                             GError **error);
GPtrArray *einsora_store_list_usage_records(EinsoraStore *self, const char *tenant_id,
                                            const char *from, const char *to, GError **error);
gboolean einsora_store_get_metering_cursor(EinsoraStore *self, const char *name, gint64 *last_seq,
                                           GError **error);
gboolean einsora_store_set_metering_cursor(EinsoraStore *self, const char *name, gint64 last_seq,
                                           const char *updated_at, GError **error);

/* The histogram both stores count each transaction's time in, by outcome
 * (commit or rollback; docs/adr/0043-metrics.md), registered in @metrics,
 * which owns it. */
EinsoraMetric *einsora_store_transactions_metric(EinsoraMetrics *metrics);

G_END_DECLS
