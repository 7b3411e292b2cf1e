/* What the parts of EinsoraSqliteStore share: the instance, the statement
 * helpers, and the EinsoraStore methods by the file that holds them
 * (einsora-sqlite-store.c wires them into the interface). Private to
 * daemon/store. */
#pragma once

#include <sys/types.h>

#include "einsora-sqlite-private.h"
#include "einsora-sqlite-store.h"

G_BEGIN_DECLS

struct _EinsoraSqliteStore {
    GObject parent_instance;
    sqlite3 *db;
    gchar *path;
    /* The file opened, so that one moved, removed or replaced under the
     * daemon is noticed (check_ready, begin). */
    dev_t dev;
    ino_t ino;
    gboolean in_transaction;
    EinsoraNowFunc now;
    gpointer now_data;
    GHashTable *statements; /* SQL -> sqlite3_stmt, see prepare_cached */
    /* How long each transaction held the write lock, from BEGIN (its
     * wait for the lock included) to COMMIT or ROLLBACK. */
    EinsoraMetrics *metrics;
    EinsoraMetric *transactions;
    gint64 began_us; /* monotonic; 0 while none is open */
};

/* SQL helpers. Messages carry SQLite's text, never bound values. */

static inline gboolean
set_sqlite_error(EinsoraSqliteStore *self, GError **error)
{
    return einsora_sqlite_set_error(self->db, error);
}

static inline sqlite3_stmt *
prepare(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    return einsora_sqlite_prepare(self->db, sql, error);
}

static inline void
bind_text(sqlite3_stmt *stmt, int index, const char *value)
{
    /* NULL binds SQL NULL. */
    sqlite3_bind_text(stmt, index, value, -1, SQLITE_TRANSIENT);
}

static inline gchar *
column_strdup(sqlite3_stmt *stmt, int column)
{
    return g_strdup((const char *)sqlite3_column_text(stmt, column));
}

static inline gboolean
invalid_row(const char *table, const char *column, GError **error)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "sqlite: %s.%s holds a value this einsora-daemon does not know", table, column);
    return FALSE;
}

/* Every statement that writes is prepared here, so that one outside a
 * transaction is checked as begin checks. */
sqlite3_stmt *einsora_sqlite_store_prepare_write(EinsoraSqliteStore *self, const char *sql,
                                                 GError **error);
/* The few statements a controller pass runs once per workload, kept
 * prepared for the connection's life rather than compiled at every call
 * (compiling the event INSERT cost more than running it). Borrowed: the
 * scope's cleanup resets it and clears its bindings. Only for a statement
 * nothing runs again while it is being stepped. */
typedef sqlite3_stmt EinsoraSqliteCachedStmt;

static inline void
einsora_sqlite_cached_stmt_release(EinsoraSqliteCachedStmt *stmt)
{
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraSqliteCachedStmt, einsora_sqlite_cached_stmt_release)

EinsoraSqliteCachedStmt *einsora_sqlite_store_prepare_cached(EinsoraSqliteStore *self,
                                                             const char *sql, GError **error);
/* prepare_cached for a write: checked outside a transaction as
 * prepare_write checks. */
EinsoraSqliteCachedStmt *einsora_sqlite_store_prepare_cached_write(EinsoraSqliteStore *self,
                                                                   const char *sql, GError **error);

/* Runs a statement that writes one row, mapping constraint failures to the
 * errors callers act on. */
gboolean einsora_sqlite_store_step_write(EinsoraSqliteStore *self, sqlite3_stmt *stmt,
                                         const char *conflict_message, const char *missing_message,
                                         GError **error);
/* Steps a SELECT that finds at most one row onto it; NOT_FOUND with
 * @missing when there is none. */
gboolean einsora_sqlite_store_step_one(EinsoraSqliteStore *self, sqlite3_stmt *stmt,
                                       const char *missing, GError **error);

/* einsora-sqlite-store-tenants.c: tenants and their quotas. */
gboolean einsora_sqlite_store_insert_tenant(EinsoraStore *store, const EinsoraTenant *tenant,
                                            GError **error);
EinsoraTenant *einsora_sqlite_store_get_tenant(EinsoraStore *store, const char *tenant_id,
                                               GError **error);
EinsoraTenant *einsora_sqlite_store_find_tenant_by_name(EinsoraStore *store, const char *name,
                                                        GError **error);
gboolean einsora_sqlite_store_set_quota(EinsoraStore *store, const char *tenant_id,
                                        const char *gpu_class, gint64 gpus, GError **error);
gboolean einsora_sqlite_store_get_quota(EinsoraStore *store, const char *tenant_id,
                                        const char *gpu_class, gint64 *gpus, GError **error);
gboolean einsora_sqlite_store_gpus_by_state(EinsoraStore *store, const char *tenant_id,
                                            const char *gpu_class,
                                            gint64 sums[EINSORA_WORKLOAD_STATE_COUNT],
                                            GError **error);

/* einsora-sqlite-store-machines.c: machines. */
gboolean einsora_sqlite_store_insert_machine(EinsoraStore *store, const EinsoraMachine *machine,
                                             GError **error);
EinsoraMachine *einsora_sqlite_store_get_machine(EinsoraStore *store, const char *tenant_id,
                                                 const char *machine_id, GError **error);
GPtrArray *einsora_sqlite_store_list_machines(EinsoraStore *store, const char *tenant_id,
                                              GError **error);
EinsoraMachine *einsora_sqlite_store_find_machine_by_certificate(EinsoraStore *store,
                                                                 const char *fingerprint,
                                                                 GError **error);
EinsoraMachine *einsora_sqlite_store_find_machine(EinsoraStore *store, const char *machine_id,
                                                  GError **error);
GPtrArray *einsora_sqlite_store_list_region_machines(EinsoraStore *store, const char *region,
                                                     GError **error);
gboolean einsora_sqlite_store_record_machine_seen(EinsoraStore *store, const char *machine_id,
                                                  const char *last_seen_at, const char *inventory,
                                                  const char *agent_version,
                                                  const gint64 *clock_offset_ms, GError **error);

/* einsora-sqlite-store-workloads.c: workloads and leases. */
/* Whether the tenant has the workload; the timeline asks too. */
gboolean einsora_sqlite_store_workload_exists(EinsoraSqliteStore *self, const char *tenant_id,
                                              const char *workload_id, gboolean *exists,
                                              GError **error);
gboolean einsora_sqlite_store_insert_workload(EinsoraStore *store, const EinsoraWorkload *workload,
                                              GError **error);
EinsoraWorkload *einsora_sqlite_store_get_workload(EinsoraStore *store, const char *tenant_id,
                                                   const char *workload_id, GError **error);
GPtrArray *einsora_sqlite_store_list_workloads(EinsoraStore *store, const char *tenant_id,
                                               gboolean include_deleted,
                                               const char *after_created_at, const char *after_id,
                                               guint limit, GError **error);
GPtrArray *einsora_sqlite_store_list_region_workloads(EinsoraStore *store, const char *region,
                                                      GError **error);
GPtrArray *einsora_sqlite_store_list_machine_workloads(EinsoraStore *store, const char *machine_id,
                                                       GError **error);
GPtrArray *einsora_sqlite_store_list_workloads_with_events_after(EinsoraStore *store,
                                                                 gint64 after_seq, GError **error);
GPtrArray *einsora_sqlite_store_list_workloads_in_state(EinsoraStore *store,
                                                        EinsoraWorkloadState state, GError **error);
gboolean einsora_sqlite_store_update_workload_state(EinsoraStore *store,
                                                    const EinsoraWorkload *workload,
                                                    EinsoraWorkloadState expected_state,
                                                    gint64 expected_version, GError **error);
gboolean einsora_sqlite_store_acquire_lease(EinsoraStore *store, const char *name,
                                            const char *holder, const char *now,
                                            const char *expires_at, gboolean *held, GError **error);
gboolean einsora_sqlite_store_release_lease(EinsoraStore *store, const char *name,
                                            const char *holder, GError **error);

/* einsora-sqlite-store-events.c: the timeline. */
gboolean einsora_sqlite_store_append_event(EinsoraStore *store, const EinsoraWorkloadEvent *event,
                                           GError **error);
GPtrArray *einsora_sqlite_store_list_events(EinsoraStore *store, const char *tenant_id,
                                            const char *workload_id, gint64 after_seq, guint limit,
                                            GError **error);
GPtrArray *einsora_sqlite_store_list_tenant_events(EinsoraStore *store, const char *tenant_id,
                                                   gint64 after_seq, guint limit, GError **error);
gboolean einsora_sqlite_store_last_event_seq(EinsoraStore *store, const char *tenant_id,
                                             gint64 *seq, GError **error);

/* einsora-sqlite-store-auth.c: accounts, API tokens and browser sessions. */
gboolean einsora_sqlite_store_insert_user(EinsoraStore *store, const EinsoraUser *user,
                                          GError **error);
EinsoraUser *einsora_sqlite_store_get_user(EinsoraStore *store, const char *tenant_id,
                                           const char *user_id, GError **error);
EinsoraUser *einsora_sqlite_store_find_user_by_email(EinsoraStore *store, const char *email,
                                                     GError **error);
gboolean einsora_sqlite_store_count_users(EinsoraStore *store, gint64 *count, GError **error);
GPtrArray *einsora_sqlite_store_list_users(EinsoraStore *store, GError **error);
gboolean einsora_sqlite_store_revoke_user_sessions(EinsoraStore *store, const char *tenant_id,
                                                   const char *user_id, const char *revoked_at,
                                                   GError **error);
gboolean einsora_sqlite_store_set_machine_sharing(EinsoraStore *store, const char *tenant_id,
                                                  const char *machine_id, EinsoraSharing sharing,
                                                  GError **error);
gboolean einsora_sqlite_store_clear_machine_certificate(EinsoraStore *store, const char *tenant_id,
                                                        const char *machine_id, GError **error);
gboolean einsora_sqlite_store_set_user_disabled(EinsoraStore *store, const char *tenant_id,
                                                const char *user_id, const char *disabled_at,
                                                GError **error);
gboolean einsora_sqlite_store_set_user_password(EinsoraStore *store, const char *tenant_id,
                                                const char *user_id, const char *password_hash,
                                                gboolean must_change, GError **error);
GPtrArray *einsora_sqlite_store_list_tenants(EinsoraStore *store, GError **error);
/* einsora-sqlite-store-audit.c: the audit trail. */
gboolean einsora_sqlite_store_insert_audit_event(EinsoraStore *store,
                                                 const EinsoraAuditEvent *event, GError **error);
GPtrArray *einsora_sqlite_store_list_audit_events(EinsoraStore *store, const char *tenant_id,
                                                  guint limit, GError **error);
gboolean einsora_sqlite_store_count_workloads_with_model(EinsoraStore *store, const char *model,
                                                         gint64 *count, GError **error);
gboolean einsora_sqlite_store_count_workloads(
    EinsoraStore *store, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error);
gboolean einsora_sqlite_store_insert_api_token(EinsoraStore *store, const EinsoraApiToken *token,
                                               GError **error);
EinsoraApiToken *einsora_sqlite_store_find_api_token(EinsoraStore *store, const char *token_sha256,
                                                     GError **error);
GPtrArray *einsora_sqlite_store_list_api_tokens(EinsoraStore *store, const char *tenant_id,
                                                const char *user_id, const char *after_created_at,
                                                const char *after_id, guint limit, GError **error);
gboolean einsora_sqlite_store_revoke_api_token(EinsoraStore *store, const char *tenant_id,
                                               const char *user_id, const char *token_id,
                                               const char *revoked_at, GError **error);
gboolean einsora_sqlite_store_touch_api_token(EinsoraStore *store, const char *token_id,
                                              const char *last_used_at, GError **error);
gboolean einsora_sqlite_store_insert_session(EinsoraStore *store, const EinsoraSession *session,
                                             GError **error);
EinsoraSession *einsora_sqlite_store_find_session(EinsoraStore *store, const char *session_sha256,
                                                  GError **error);
gboolean einsora_sqlite_store_revoke_session(EinsoraStore *store, const char *tenant_id,
                                             const char *session_id, const char *revoked_at,
                                             GError **error);

/* einsora-sqlite-store-idempotency.c: idempotency keys. */
EinsoraIdempotencyRecord *einsora_sqlite_store_get_idempotency_record(EinsoraStore *store,
                                                                      const char *tenant_id,
                                                                      const char *key,
                                                                      GError **error);
gboolean einsora_sqlite_store_insert_idempotency_record(EinsoraStore *store,
                                                        const EinsoraIdempotencyRecord *record,
                                                        GError **error);
gboolean einsora_sqlite_store_delete_expired_idempotency_records(EinsoraStore *store,
                                                                 const char *now, GError **error);

/* einsora-sqlite-store-access-tickets.c: access tickets. */
gboolean einsora_sqlite_store_insert_access_ticket(EinsoraStore *store,
                                                   const EinsoraAccessTicket *ticket,
                                                   GError **error);
EinsoraAccessTicket *einsora_sqlite_store_take_access_ticket(EinsoraStore *store,
                                                             const char *ticket_sha256,
                                                             const char *now, GError **error);

/* einsora-sqlite-store-enrolments.c: machine enrolments. */
gboolean einsora_sqlite_store_insert_enrolment(EinsoraStore *store,
                                               const EinsoraEnrolment *enrolment, GError **error);
EinsoraEnrolment *einsora_sqlite_store_take_enrolment(EinsoraStore *store, const char *token_sha256,
                                                      const char *now, const char *machine_id,
                                                      GError **error);

/* einsora-sqlite-store-usage.c: usage records and the metering cursor. */
gboolean einsora_sqlite_store_replace_usage_records(EinsoraStore *store, const char *tenant_id,
                                                    const char *workload_id, GPtrArray *records,
                                                    GError **error);
GPtrArray *einsora_sqlite_store_list_usage_records(EinsoraStore *store, const char *tenant_id,
                                                   const char *from, const char *to,
                                                   GError **error);
gboolean einsora_sqlite_store_get_metering_cursor(EinsoraStore *store, const char *name,
                                                  gint64 *last_seq, GError **error);
gboolean einsora_sqlite_store_set_metering_cursor(EinsoraStore *store, const char *name,
                                                  gint64 last_seq, const char *updated_at,
                                                  GError **error);

G_END_DECLS
