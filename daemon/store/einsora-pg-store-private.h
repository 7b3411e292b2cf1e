/* What the parts of EinsoraPgStore share: the instance, the query helpers,
 * and the EinsoraStore methods by the file that holds them
 * (einsora-pg-store.c wires them into the interface). Private to
 * daemon/store. */
#pragma once

#include <gio/gio.h>
#include <string.h>

#include "einsora-pg-store.h"

G_BEGIN_DECLS

struct _EinsoraPgStore {
    GObject parent_instance;
    PGconn *conn;
    gchar *conninfo; /* may hold a password: never logged */
    gboolean in_transaction;
    EinsoraNowFunc now;
    gpointer now_data;
    EinsoraMetrics *metrics;
    EinsoraMetric *transactions;
    gint64 began_us; /* monotonic; 0 while none is open */
    /* What other processes appended (einsora_pg_store_listen). */
    PGconn *listener;
    GSource *listener_source;
    guint listener_retry_id;
    guint listener_deadline_id; /* while reconnecting */
    guint listener_backoff_s;
};

/* The channel every append notifies, its payload the tenant's ID. */
#define EINSORA_PG_STORE_EVENTS_CHANNEL "einsora_events"
/* And the one a workload's move notifies, its payload the machine's ID
 * (the one it leaves and the one it joins). */
#define EINSORA_PG_STORE_MACHINES_CHANNEL "einsora_machines"

/* The advisory lock every transaction takes (begin) and migrations take:
 * "eins" in ASCII. */
#define EINSORA_PG_STORE_LOCK "1701408371"

/* Runs @sql with @n_params text parameters (a NULL one is SQL NULL) and
 * returns its result, or NULL with an error: EINSORA_ERROR_UNAVAILABLE
 * when the connection is lost (it is made again by the next call outside
 * a transaction), else a G_IO_ERROR with PostgreSQL's primary message
 * (never a bound value: the DETAIL, which quotes them, is left out). */
PGresult *einsora_pg_store_query(EinsoraPgStore *self, const char *sql, int n_params,
                                 const char *const *params, GError **error);

/* A query that returns at most one row: NOT_FOUND with @missing when it
 * returns none. */
PGresult *einsora_pg_store_query_one(EinsoraPgStore *self, const char *sql, int n_params,
                                     const char *const *params, const char *missing,
                                     GError **error);

/* A statement that writes: a unique key (or the timeline's append-only
 * trigger) refusing it is CONFLICT with @conflict_message, a foreign key
 * NOT_FOUND with @missing_message (either NULL: PostgreSQL's message as
 * a G_IO_ERROR). *@rows (may be NULL) is how many rows it changed. */
gboolean einsora_pg_store_write(EinsoraPgStore *self, const char *sql, int n_params,
                                const char *const *params, const char *conflict_message,
                                const char *missing_message, gint64 *rows, GError **error);

/* The text of a column, NULL for SQL NULL. */
static inline const char *
pg_column_text(const PGresult *res, int row, int column)
{
    return PQgetisnull(res, row, column) ? NULL : PQgetvalue(res, row, column);
}

static inline gchar *
pg_column_strdup(const PGresult *res, int row, int column)
{
    return g_strdup(pg_column_text(res, row, column));
}

/* A BIGINT column; 0 for NULL. */
static inline gint64
pg_column_int64(const PGresult *res, int row, int column)
{
    return PQgetisnull(res, row, column) ? 0
                                         : g_ascii_strtoll(PQgetvalue(res, row, column), NULL, 10);
}

static inline gboolean
pg_invalid_row(const char *table, const char *column, GError **error)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "postgres: %s.%s holds a value this einsora-daemon does not know", table, column);
    return FALSE;
}

/* An integer as a parameter's text (freed by the caller). */
static inline gchar *
pg_int64_param(gint64 value)
{
    return g_strdup_printf("%" G_GINT64_FORMAT, value);
}

/* The store's clock, as a timestamp (freed by the caller). */
gchar *einsora_pg_store_now(EinsoraPgStore *self);

/* einsora-pg-store-tenants.c: tenants and their quotas. */
gboolean einsora_pg_store_insert_tenant(EinsoraStore *store, const EinsoraTenant *tenant,
                                        GError **error);
EinsoraTenant *einsora_pg_store_get_tenant(EinsoraStore *store, const char *tenant_id,
                                           GError **error);
EinsoraTenant *einsora_pg_store_find_tenant_by_name(EinsoraStore *store, const char *name,
                                                    GError **error);
GPtrArray *einsora_pg_store_list_tenants(EinsoraStore *store, GError **error);
gboolean einsora_pg_store_set_quota(EinsoraStore *store, const char *tenant_id,
                                    const char *gpu_class, gint64 gpus, GError **error);
gboolean einsora_pg_store_get_quota(EinsoraStore *store, const char *tenant_id,
                                    const char *gpu_class, gint64 *gpus, GError **error);
gboolean einsora_pg_store_gpus_by_state(EinsoraStore *store, const char *tenant_id,
                                        const char *gpu_class,
                                        gint64 sums[EINSORA_WORKLOAD_STATE_COUNT], GError **error);
/* einsora-pg-store-machines.c: machines. */
gboolean einsora_pg_store_insert_machine(EinsoraStore *store, const EinsoraMachine *machine,
                                         GError **error);
EinsoraMachine *einsora_pg_store_get_machine(EinsoraStore *store, const char *tenant_id,
                                             const char *machine_id, GError **error);
GPtrArray *einsora_pg_store_list_machines(EinsoraStore *store, const char *tenant_id,
                                          GError **error);
EinsoraMachine *einsora_pg_store_find_machine_by_certificate(EinsoraStore *store,
                                                             const char *fingerprint,
                                                             GError **error);
EinsoraMachine *einsora_pg_store_find_machine(EinsoraStore *store, const char *machine_id,
                                              GError **error);
GPtrArray *einsora_pg_store_list_region_machines(EinsoraStore *store, const char *region,
                                                 GError **error);
gboolean einsora_pg_store_record_machine_seen(EinsoraStore *store, const char *machine_id,
                                              const char *last_seen_at, const char *inventory,
                                              const char *agent_version,
                                              const gint64 *clock_offset_ms, GError **error);

/* einsora-pg-store-workloads.c: workloads and leases. */
/* Whether the tenant has the workload; the timeline asks too. */
gboolean einsora_pg_store_workload_exists(EinsoraPgStore *self, const char *tenant_id,
                                          const char *workload_id, gboolean *exists,
                                          GError **error);
gboolean einsora_pg_store_insert_workload(EinsoraStore *store, const EinsoraWorkload *workload,
                                          GError **error);
EinsoraWorkload *einsora_pg_store_get_workload(EinsoraStore *store, const char *tenant_id,
                                               const char *workload_id, GError **error);
GPtrArray *einsora_pg_store_list_workloads(EinsoraStore *store, const char *tenant_id,
                                           gboolean include_deleted, const char *after_created_at,
                                           const char *after_id, guint limit, GError **error);
GPtrArray *einsora_pg_store_list_region_workloads(EinsoraStore *store, const char *region,
                                                  GError **error);
GPtrArray *einsora_pg_store_list_machine_workloads(EinsoraStore *store, const char *machine_id,
                                                   GError **error);
GPtrArray *einsora_pg_store_list_workloads_with_events_after(EinsoraStore *store, gint64 after_seq,
                                                             GError **error);
GPtrArray *einsora_pg_store_list_workloads_in_state(EinsoraStore *store, EinsoraWorkloadState state,
                                                    GError **error);
gboolean einsora_pg_store_update_workload_state(EinsoraStore *store,
                                                const EinsoraWorkload *workload,
                                                EinsoraWorkloadState expected_state,
                                                gint64 expected_version, GError **error);
gboolean einsora_pg_store_acquire_lease(EinsoraStore *store, const char *name, const char *holder,
                                        const char *now, const char *expires_at, gboolean *held,
                                        GError **error);
gboolean einsora_pg_store_release_lease(EinsoraStore *store, const char *name, const char *holder,
                                        GError **error);

/* einsora-pg-store-events.c: the timeline. */
gboolean einsora_pg_store_append_event(EinsoraStore *store, const EinsoraWorkloadEvent *event,
                                       GError **error);
GPtrArray *einsora_pg_store_list_events(EinsoraStore *store, const char *tenant_id,
                                        const char *workload_id, gint64 after_seq, guint limit,
                                        GError **error);
GPtrArray *einsora_pg_store_list_tenant_events(EinsoraStore *store, const char *tenant_id,
                                               gint64 after_seq, guint limit, GError **error);
gboolean einsora_pg_store_last_event_seq(EinsoraStore *store, const char *tenant_id, gint64 *seq,
                                         GError **error);

/* einsora-pg-store-auth.c: accounts, machine sharing and revocation. */
gboolean einsora_pg_store_insert_user(EinsoraStore *store, const EinsoraUser *user, GError **error);
EinsoraUser *einsora_pg_store_get_user(EinsoraStore *store, const char *tenant_id,
                                       const char *user_id, GError **error);
EinsoraUser *einsora_pg_store_find_user_by_email(EinsoraStore *store, const char *email,
                                                 GError **error);
gboolean einsora_pg_store_count_users(EinsoraStore *store, gint64 *count, GError **error);
GPtrArray *einsora_pg_store_list_users(EinsoraStore *store, GError **error);
gboolean einsora_pg_store_revoke_user_sessions(EinsoraStore *store, const char *tenant_id,
                                               const char *user_id, const char *revoked_at,
                                               GError **error);
gboolean einsora_pg_store_set_machine_sharing(EinsoraStore *store, const char *tenant_id,
                                              const char *machine_id, EinsoraSharing sharing,
                                              GError **error);
gboolean einsora_pg_store_clear_machine_certificate(EinsoraStore *store, const char *tenant_id,
                                                    const char *machine_id, GError **error);
gboolean einsora_pg_store_set_user_disabled(EinsoraStore *store, const char *tenant_id,
                                            const char *user_id, const char *disabled_at,
                                            GError **error);
gboolean einsora_pg_store_set_user_password(EinsoraStore *store, const char *tenant_id,
                                            const char *user_id, const char *password_hash,
                                            gboolean must_change, GError **error);
/* einsora-pg-store-audit.c: the audit trail, workload counts, API tokens and
 * browser sessions. */
gboolean einsora_pg_store_insert_audit_event(EinsoraStore *store, const EinsoraAuditEvent *event,
                                             GError **error);
GPtrArray *einsora_pg_store_list_audit_events(EinsoraStore *store, const char *tenant_id,
                                              guint limit, GError **error);
gboolean einsora_pg_store_count_workloads_with_model(EinsoraStore *store, const char *model,
                                                     gint64 *count, GError **error);
gboolean einsora_pg_store_count_workloads(
    EinsoraStore *store, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error);
gboolean einsora_pg_store_insert_api_token(EinsoraStore *store, const EinsoraApiToken *token,
                                           GError **error);
EinsoraApiToken *einsora_pg_store_find_api_token(EinsoraStore *store, const char *token_sha256,
                                                 GError **error);
GPtrArray *einsora_pg_store_list_api_tokens(EinsoraStore *store, const char *tenant_id,
                                            const char *user_id, const char *after_created_at,
                                            const char *after_id, guint limit, GError **error);
gboolean einsora_pg_store_revoke_api_token(EinsoraStore *store, const char *tenant_id,
                                           const char *user_id, const char *token_id,
                                           const char *revoked_at, GError **error);
gboolean einsora_pg_store_touch_api_token(EinsoraStore *store, const char *token_id,
                                          const char *last_used_at, GError **error);
gboolean einsora_pg_store_insert_session(EinsoraStore *store, const EinsoraSession *session,
                                         GError **error);
EinsoraSession *einsora_pg_store_find_session(EinsoraStore *store, const char *session_sha256,
                                              GError **error);
gboolean einsora_pg_store_revoke_session(EinsoraStore *store, const char *tenant_id,
                                         const char *session_id, const char *revoked_at,
                                         GError **error);

/* einsora-pg-store-idempotency.c: idempotency keys. */
EinsoraIdempotencyRecord *einsora_pg_store_get_idempotency_record(EinsoraStore *store,
                                                                  const char *tenant_id,
                                                                  const char *key, GError **error);
gboolean einsora_pg_store_insert_idempotency_record(EinsoraStore *store,
                                                    const EinsoraIdempotencyRecord *record,
                                                    GError **error);
gboolean einsora_pg_store_delete_expired_idempotency_records(EinsoraStore *store, const char *now,
                                                             GError **error);

/* einsora-pg-store-access-tickets.c: access tickets. */
gboolean einsora_pg_store_insert_access_ticket(EinsoraStore *store,
                                               const EinsoraAccessTicket *ticket, GError **error);
EinsoraAccessTicket *einsora_pg_store_take_access_ticket(EinsoraStore *store,
                                                         const char *ticket_sha256, const char *now,
                                                         GError **error);

/* einsora-pg-store-enrolments.c: machine enrolments. */
gboolean einsora_pg_store_insert_enrolment(EinsoraStore *store, const EinsoraEnrolment *enrolment,
                                           GError **error);
EinsoraEnrolment *einsora_pg_store_take_enrolment(EinsoraStore *store, const char *token_sha256,
                                                  const char *now, const char *machine_id,
                                                  GError **error);

/* einsora-pg-store-usage.c: usage records and the metering cursor. */
gboolean einsora_pg_store_replace_usage_records(EinsoraStore *store, const char *tenant_id,
                                                const char *workload_id, GPtrArray *records,
                                                GError **error);
GPtrArray *einsora_pg_store_list_usage_records(EinsoraStore *store, const char *tenant_id,
                                               const char *from, const char *to, GError **error);
gboolean einsora_pg_store_get_metering_cursor(EinsoraStore *store, const char *name,
                                              gint64 *last_seq, GError **error);
gboolean einsora_pg_store_set_metering_cursor(EinsoraStore *store, const char *name,
                                              gint64 last_seq, const char *updated_at,
                                              GError **error);

G_END_DECLS
