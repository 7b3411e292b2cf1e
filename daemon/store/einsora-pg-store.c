#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store.h"

#include "einsora-pg-store-private.h"

#include <glib-unix.h>

#include "einsora-error.h"
#include "einsora-migrations.h"
#include "einsora-pg-migrations.h"

/* How long a statement may wait for a lock (the transaction lock
 * included), as SQLite's busy timeout; and how long one may run. */
#define LOCK_TIMEOUT "15s"
#define STATEMENT_TIMEOUT "60s"
#define CONNECT_TIMEOUT_SECONDS 10
#define CONNECT_TIMEOUT_S G_STRINGIFY(CONNECT_TIMEOUT_SECONDS)

#define LISTEN_RETRY_MAX_S 30

enum {
    SIGNAL_EVENTS_APPENDED,
    SIGNAL_MACHINE_CHANGED,
    N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void einsora_pg_store_iface_init(EinsoraStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraPgStore, einsora_pg_store, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_STORE,
                                                    einsora_pg_store_iface_init))

/* Connecting */

/* One line of libpq's text, which may run over several. It names the
 * server and user, never the password. */
static gchar *
connection_message(PGconn *conn)
{
    /* NULL: never made (libpq out of memory) or dropped (leave_pipeline). */
    const char *message = conn != NULL ? PQerrorMessage(conn) : "no connection";

    return g_strstrip(g_strdelimit(g_strdup(message), "\r\n", ' '));
}

/* Settings every session relies on: the lock and statement timeouts, UTF-8
 * text, and no surprise from the server's default search path. */
static gboolean
configure_session(PGconn *conn, GError **error)
{
    g_autoptr(PGresult) res = PQexec(conn, "SET lock_timeout = '" LOCK_TIMEOUT "'; "
                                           "SET statement_timeout = '" STATEMENT_TIMEOUT "'; "
                                           "SET client_encoding = 'UTF8'; "
                                           "SET client_min_messages = 'warning'");

    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        g_autofree gchar *message = connection_message(conn);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "postgres: %s", message);
        return FALSE;
    }
    return TRUE;
}

static PGconn *
connect_to(const char *conninfo, GError **error)
{
    /* connect_timeout bounds a server that doesn't answer; the caller's
     * own settings win over these defaults. */
    const char *const keywords[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *const values[] = {CONNECT_TIMEOUT_S, "einsora-daemon", conninfo, NULL};
    PGconn *conn = PQconnectdbParams(keywords, values, TRUE);

    if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
        g_autofree gchar *message = connection_message(conn);
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                    "can't connect to PostgreSQL: %s", message);
        PQfinish(conn);
        return NULL;
    }
    if (PQserverVersion(conn) < 150000) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                    "PostgreSQL %d.%d is too old: einsora-daemon needs 15 or newer",
                    PQserverVersion(conn) / 10000, PQserverVersion(conn) % 10000);
        PQfinish(conn);
        return NULL;
    }
    if (!configure_session(conn, error)) {
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

/* Outside a transaction, a connection the server dropped is made again:
 * the daemon comes back by itself once PostgreSQL does. Inside one, the
 * transaction is lost: the caller rolls back and tries anew. */
static gboolean
ensure_connected(EinsoraPgStore *self, GError **error)
{
    g_autoptr(GError) local_error = NULL;
    PGconn *conn;

    if (self->conn != NULL && PQstatus(self->conn) == CONNECTION_OK)
        return TRUE;
    if (self->in_transaction) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                            "the store is unavailable: the connection to PostgreSQL was lost");
        return FALSE;
    }
    conn = connect_to(self->conninfo, &local_error);
    if (conn == NULL) {
        g_message("store unavailable: %s", local_error->message);
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                            "the store is unavailable: PostgreSQL can't be reached");
        return FALSE;
    }
    g_clear_pointer(&self->conn, PQfinish);
    self->conn = conn;
    g_message("connected to PostgreSQL again");
    return TRUE;
}

/* Queries */

static gboolean
set_result_error(EinsoraPgStore *self, const PGresult *res, GError **error)
{
    const char *primary = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

    /* Class 08 (connection), 57P0x (the server shutting down or this
     * backend terminated), 53 (out of resources): the store, not the
     * statement. */
    if (PQstatus(self->conn) != CONNECTION_OK || state == NULL || g_str_has_prefix(state, "08") ||
        g_str_has_prefix(state, "57P") || g_str_has_prefix(state, "53")) {
        g_autofree gchar *message =
            primary != NULL ? g_strdup(primary) : connection_message(self->conn);
        g_message("store unavailable: postgres: %s", message);
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                            "the store is unavailable: the connection to PostgreSQL failed");
        return FALSE;
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "postgres: %s (%s)", primary, state);
    return FALSE;
}

static PGresult *
run(EinsoraPgStore *self, const char *sql, int n_params, const char *const *params)
{
    return PQexecParams(self->conn, sql, n_params, NULL, params, NULL, NULL, 0);
}

PGresult *
einsora_pg_store_query(EinsoraPgStore *self, const char *sql, int n_params,
                       const char *const *params, GError **error)
{
    g_autoptr(PGresult) res = NULL;
    ExecStatusType status;

    if (!ensure_connected(self, error))
        return NULL;
    res = run(self, sql, n_params, params);
    status = PQresultStatus(res);
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
        return g_steal_pointer(&res);
    set_result_error(self, res, error);
    return NULL;
}

PGresult *
einsora_pg_store_query_one(EinsoraPgStore *self, const char *sql, int n_params,
                           const char *const *params, const char *missing, GError **error)
{
    g_autoptr(PGresult) res = einsora_pg_store_query(self, sql, n_params, params, error);

    if (res == NULL)
        return NULL;
    if (PQntuples(res) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, missing);
        return NULL;
    }
    return g_steal_pointer(&res);
}

static void
leave_pipeline(EinsoraPgStore *self)
{
    /* A connection left in pipeline mode refuses every later synchronous
     * call while libpq still calls it OK. Results that can't be drained
     * mean the session is unusable: it goes, and the next call outside a
     * transaction connects anew. */
    if (!PQexitPipelineMode(self->conn)) {
        g_message("store: dropping a PostgreSQL session stuck in pipeline mode");
        g_clear_pointer(&self->conn, PQfinish);
    }
}

/* Inside a transaction, a statement PostgreSQL refuses aborts the whole
 * transaction, where SQLite refuses the statement alone and goes on; a
 * caller that hears CONFLICT may go on (a controller pass's group does).
 * So the statement runs between SAVEPOINT and RELEASE, the three sent in
 * one pipeline (one round trip); a refused one is rolled back to the
 * savepoint. Returns the statement's result; NULL only when the
 * connection failed. */
static PGresult *
run_in_savepoint(EinsoraPgStore *self, const char *sql, int n_params, const char *const *params)
{
    PGresult *statement = NULL;
    gboolean refused = FALSE;

    if (!PQenterPipelineMode(self->conn))
        return NULL;
    if (!PQsendQueryParams(self->conn, "SAVEPOINT einsora_write", 0, NULL, NULL, NULL, NULL, 0) ||
        !PQsendQueryParams(self->conn, sql, n_params, NULL, params, NULL, NULL, 0) ||
        !PQsendQueryParams(self->conn, "RELEASE SAVEPOINT einsora_write", 0, NULL, NULL, NULL, NULL,
                           0) ||
        !PQpipelineSync(self->conn)) {
        leave_pipeline(self);
        return NULL;
    }
    /* Three results, each followed by NULL, then the sync. */
    for (guint i = 0; i < 3; i++) {
        PGresult *res = PQgetResult(self->conn);

        if (res == NULL) {
            g_clear_pointer(&statement, PQclear);
            leave_pipeline(self); /* the connection broke */
            return NULL;
        }
        if (i == 1)
            statement = res;
        else
            PQclear(res);
        while ((res = PQgetResult(self->conn)) != NULL)
            PQclear(res);
    }
    {
        g_autoptr(PGresult) sync = PQgetResult(self->conn);
        if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC) {
            g_clear_pointer(&statement, PQclear);
            leave_pipeline(self);
            return NULL;
        }
    }
    leave_pipeline(self);
    if (self->conn == NULL) {
        g_clear_pointer(&statement, PQclear);
        return NULL;
    }
    refused = PQresultStatus(statement) != PGRES_COMMAND_OK &&
              PQresultStatus(statement) != PGRES_TUPLES_OK;
    if (refused) {
        g_autoptr(PGresult) undo = PQexec(self->conn, "ROLLBACK TO SAVEPOINT einsora_write; "
                                                      "RELEASE SAVEPOINT einsora_write");
        if (PQresultStatus(undo) != PGRES_COMMAND_OK)
            g_message("rolling back a refused statement: postgres: %s",
                      PQresultErrorField(undo, PG_DIAG_MESSAGE_PRIMARY));
    }
    return statement;
}

gboolean
einsora_pg_store_write(EinsoraPgStore *self, const char *sql, int n_params,
                       const char *const *params, const char *conflict_message,
                       const char *missing_message, gint64 *rows, GError **error)
{
    g_autoptr(PGresult) res = NULL;
    const char *state;

    if (!ensure_connected(self, error))
        return FALSE;
    if (self->in_transaction && (conflict_message != NULL || missing_message != NULL))
        res = run_in_savepoint(self, sql, n_params, params);
    else
        res = run(self, sql, n_params, params);
    if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK) {
        if (rows != NULL)
            *rows = g_ascii_strtoll(PQcmdTuples(res), NULL, 10);
        return TRUE;
    }
    state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    /* 23505 a unique key; P0001 the timeline's trigger refusing a
     * rewrite; 23503 a foreign key. */
    if (conflict_message != NULL &&
        (g_strcmp0(state, "23505") == 0 || g_strcmp0(state, "P0001") == 0)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT, conflict_message);
        return FALSE;
    }
    if (missing_message != NULL && g_strcmp0(state, "23503") == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, missing_message);
        return FALSE;
    }
    return set_result_error(self, res, error);
}

gchar *
einsora_pg_store_now(EinsoraPgStore *self)
{
    return einsora_timestamp_format(self->now(self->now_data));
}

/* Transactions */

static gboolean
einsora_pg_store_begin(EinsoraStore *store, GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autoptr(PGresult) res = NULL;

    if (self->in_transaction) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "a transaction is already open on this store; transactions "
                            "never nest");
        return FALSE;
    }
    self->began_us = g_get_monotonic_time();
    /* The lock makes every transaction see what the one before it
     * committed, whichever process ran it: a read-then-write inside one
     * is never stale, and two creates can't both find quota free. */
    res = einsora_pg_store_query(self, "BEGIN", 0, NULL, error);
    if (res == NULL) {
        self->began_us = 0;
        return FALSE;
    }
    self->in_transaction = TRUE;
    g_clear_pointer(&res, PQclear);
    res = einsora_pg_store_query(self, "SELECT pg_advisory_xact_lock(" EINSORA_PG_STORE_LOCK ")", 0,
                                 NULL, error);
    if (res == NULL) {
        einsora_store_rollback(store);
        return FALSE;
    }
    return TRUE;
}

static void
transaction_ended(EinsoraPgStore *self, const char *outcome)
{
    if (self->began_us == 0)
        return;
    if (self->transactions != NULL)
        einsora_metric_observe(self->transactions, (const char *const[]){outcome, NULL},
                               einsora_metrics_seconds(self->began_us, g_get_monotonic_time()));
    self->began_us = 0;
}

static gboolean
einsora_pg_store_commit(EinsoraStore *store, GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autoptr(PGresult) res = NULL;

    if (!self->in_transaction) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "no transaction is open on this store");
        return FALSE;
    }
    res = einsora_pg_store_query(self, "COMMIT", 0, NULL, error);
    if (res == NULL)
        return FALSE; /* the caller rolls back */
    /* A COMMIT of a transaction that had failed answers ROLLBACK. */
    if (g_strcmp0(PQcmdStatus(res), "ROLLBACK") == 0) {
        self->in_transaction = FALSE;
        transaction_ended(self, "rollback");
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "postgres rolled the transaction back at commit");
        return FALSE;
    }
    self->in_transaction = FALSE;
    transaction_ended(self, "commit");
    return TRUE;
}

static void
einsora_pg_store_rollback(EinsoraStore *store)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);

    if (self->conn != NULL && PQstatus(self->conn) == CONNECTION_OK &&
        PQtransactionStatus(self->conn) != PQTRANS_IDLE) {
        g_autoptr(PGresult) res = PQexec(self->conn, "ROLLBACK");
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            g_autofree gchar *message = connection_message(self->conn);
            g_message("rolling back: postgres: %s", message);
        }
    }
    self->in_transaction = FALSE;
    transaction_ended(self, "rollback");
}

static gboolean
einsora_pg_store_check_ready(EinsoraStore *store, GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autoptr(GPtrArray) builtin = einsora_migrations_load_builtin_dialect("postgres", error);
    gint64 version;

    if (builtin == NULL)
        return FALSE;
    if (!self->in_transaction && !ensure_connected(self, error))
        return FALSE;
    version = einsora_pg_migrations_get_version(self->conn, error);
    if (version < 0)
        return FALSE;
    if (version != (gint64)builtin->len) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                    "the database schema is at version %" G_GINT64_FORMAT "; this "
                    "einsora-daemon needs version %u",
                    version, builtin->len);
        return FALSE;
    }
    return TRUE;
}

/* The object */

static void
einsora_pg_store_iface_init(EinsoraStoreInterface *iface)
{
    iface->begin = einsora_pg_store_begin;
    iface->commit = einsora_pg_store_commit;
    iface->rollback = einsora_pg_store_rollback;
    iface->check_ready = einsora_pg_store_check_ready;
    iface->insert_tenant = einsora_pg_store_insert_tenant;
    iface->get_tenant = einsora_pg_store_get_tenant;
    iface->find_tenant_by_name = einsora_pg_store_find_tenant_by_name;
    iface->set_quota = einsora_pg_store_set_quota;
    iface->get_quota = einsora_pg_store_get_quota;
    iface->gpus_by_state = einsora_pg_store_gpus_by_state;
    iface->insert_machine = einsora_pg_store_insert_machine;
    iface->get_machine = einsora_pg_store_get_machine;
    iface->list_machines = einsora_pg_store_list_machines;
    iface->insert_workload = einsora_pg_store_insert_workload;
    iface->get_workload = einsora_pg_store_get_workload;
    iface->list_workloads = einsora_pg_store_list_workloads;
    iface->list_region_workloads = einsora_pg_store_list_region_workloads;
    iface->acquire_lease = einsora_pg_store_acquire_lease;
    iface->find_machine = einsora_pg_store_find_machine;
    iface->find_machine_by_certificate = einsora_pg_store_find_machine_by_certificate;
    iface->list_region_machines = einsora_pg_store_list_region_machines;
    iface->record_machine_seen = einsora_pg_store_record_machine_seen;
    iface->list_machine_workloads = einsora_pg_store_list_machine_workloads;
    iface->release_lease = einsora_pg_store_release_lease;
    iface->update_workload_state = einsora_pg_store_update_workload_state;
    iface->append_event = einsora_pg_store_append_event;
    iface->list_events = einsora_pg_store_list_events;
    iface->list_tenant_events = einsora_pg_store_list_tenant_events;
    iface->last_event_seq = einsora_pg_store_last_event_seq;
    iface->insert_user = einsora_pg_store_insert_user;
    iface->get_user = einsora_pg_store_get_user;
    iface->find_user_by_email = einsora_pg_store_find_user_by_email;
    iface->count_users = einsora_pg_store_count_users;
    iface->list_users = einsora_pg_store_list_users;
    iface->revoke_user_sessions = einsora_pg_store_revoke_user_sessions;
    iface->set_machine_sharing = einsora_pg_store_set_machine_sharing;
    iface->clear_machine_certificate = einsora_pg_store_clear_machine_certificate;
    iface->set_user_disabled = einsora_pg_store_set_user_disabled;
    iface->set_user_password = einsora_pg_store_set_user_password;
    iface->list_tenants = einsora_pg_store_list_tenants;
    iface->insert_audit_event = einsora_pg_store_insert_audit_event;
    iface->list_audit_events = einsora_pg_store_list_audit_events;
    iface->count_workloads_with_model = einsora_pg_store_count_workloads_with_model;
    iface->count_workloads = einsora_pg_store_count_workloads;
    iface->insert_api_token = einsora_pg_store_insert_api_token;
    iface->find_api_token = einsora_pg_store_find_api_token;
    iface->list_api_tokens = einsora_pg_store_list_api_tokens;
    iface->revoke_api_token = einsora_pg_store_revoke_api_token;
    iface->touch_api_token = einsora_pg_store_touch_api_token;
    iface->insert_session = einsora_pg_store_insert_session;
    iface->find_session = einsora_pg_store_find_session;
    iface->revoke_session = einsora_pg_store_revoke_session;
    iface->get_idempotency_record = einsora_pg_store_get_idempotency_record;
    iface->insert_idempotency_record = einsora_pg_store_insert_idempotency_record;
    iface->delete_expired_idempotency_records = einsora_pg_store_delete_expired_idempotency_records;
    iface->insert_access_ticket = einsora_pg_store_insert_access_ticket;
    iface->take_access_ticket = einsora_pg_store_take_access_ticket;
    iface->insert_enrolment = einsora_pg_store_insert_enrolment;
    iface->take_enrolment = einsora_pg_store_take_enrolment;
    iface->list_workloads_with_events_after = einsora_pg_store_list_workloads_with_events_after;
    iface->list_workloads_in_state = einsora_pg_store_list_workloads_in_state;
    iface->replace_usage_records = einsora_pg_store_replace_usage_records;
    iface->list_usage_records = einsora_pg_store_list_usage_records;
    iface->get_metering_cursor = einsora_pg_store_get_metering_cursor;
    iface->set_metering_cursor = einsora_pg_store_set_metering_cursor;
}

/* Listening */

static void listener_stop(EinsoraPgStore *self);
static gboolean listener_start(EinsoraPgStore *self, GError **error);
static gboolean on_listener_readable(gint fd, GIOCondition condition, gpointer user_data);
static gboolean retry_listening(gpointer user_data);

/* The listener's socket watched for @condition, calling @func; the socket
 * may change while libpq connects (another address), so each step makes
 * its own source. */
static void
listener_watch(EinsoraPgStore *self, GIOCondition condition, GUnixFDSourceFunc func)
{
    if (self->listener_source != NULL) {
        g_source_destroy(self->listener_source);
        g_clear_pointer(&self->listener_source, g_source_unref);
    }
    self->listener_source = g_unix_fd_source_new(PQsocket(self->listener), condition);
    g_source_set_callback(self->listener_source, G_SOURCE_FUNC(func), self, NULL);
    g_source_attach(self->listener_source, g_main_context_get_thread_default());
}

static void
retry_later(EinsoraPgStore *self, const char *why)
{
    g_message("listening for other processes' events: %s; again in %u s", why,
              self->listener_backoff_s);
    listener_stop(self);
    self->listener_retry_id =
        g_timeout_add_seconds(self->listener_backoff_s, retry_listening, self);
    self->listener_backoff_s = MIN(self->listener_backoff_s * 2, LISTEN_RETRY_MAX_S);
}

static void
retry_after_failure(EinsoraPgStore *self)
{
    g_autofree gchar *message = connection_message(self->listener);

    retry_later(self, message);
}

static gboolean
on_listening_deadline(gpointer user_data)
{
    EinsoraPgStore *self = user_data;

    self->listener_deadline_id = 0;
    retry_later(self, "PostgreSQL didn't answer within " CONNECT_TIMEOUT_S " s");
    return G_SOURCE_REMOVE;
}

/* LISTEN was sent on the new connection: once both are answered, the
 * listener is back. */
static gboolean
on_listen_answered(gint fd, GIOCondition condition, gpointer user_data)
{
    EinsoraPgStore *self = user_data;
    PGresult *res;

    if (condition & G_IO_OUT) {
        int flushed = PQflush(self->listener);

        if (flushed > 0)
            return G_SOURCE_CONTINUE; /* more to send */
        if (flushed < 0) {
            retry_after_failure(self);
            return G_SOURCE_REMOVE;
        }
    }
    if (!PQconsumeInput(self->listener)) {
        retry_after_failure(self);
        return G_SOURCE_REMOVE;
    }
    /* Each result as it is whole: PQgetResult() would wait for the next. */
    while (!PQisBusy(self->listener) && (res = PQgetResult(self->listener)) != NULL) {
        gboolean listening = PQresultStatus(res) == PGRES_COMMAND_OK;

        PQclear(res);
        if (!listening) {
            retry_after_failure(self);
            return G_SOURCE_REMOVE;
        }
    }
    if (PQisBusy(self->listener)) {
        /* Sent: from now on, only the answers. */
        if (condition & G_IO_OUT)
            listener_watch(self, G_IO_IN, on_listen_answered);
        return G_SOURCE_CONTINUE;
    }
    g_clear_handle_id(&self->listener_deadline_id, g_source_remove);
    listener_watch(self, G_IO_IN, on_listener_readable);
    g_message("listening for other processes' events again");
    /* What was appended while nobody listened is unknown. */
    g_signal_emit(self, signals[SIGNAL_EVENTS_APPENDED], 0, NULL);
    return G_SOURCE_REMOVE;
}

/* One step of libpq's non-blocking connect, each time the socket is ready
 * for what it waits on. */
static gboolean
on_listener_connecting(gint fd, GIOCondition condition, gpointer user_data)
{
    EinsoraPgStore *self = user_data;

    switch (PQconnectPoll(self->listener)) {
    case PGRES_POLLING_READING:
        listener_watch(self, G_IO_IN, on_listener_connecting);
        break;
    case PGRES_POLLING_WRITING:
        listener_watch(self, G_IO_OUT, on_listener_connecting);
        break;
    case PGRES_POLLING_OK:
        if (!PQsendQuery(self->listener, "LISTEN " EINSORA_PG_STORE_EVENTS_CHANNEL
                                         "; LISTEN " EINSORA_PG_STORE_MACHINES_CHANNEL)) {
            retry_after_failure(self);
            break;
        }
        listener_watch(self, G_IO_IN | G_IO_OUT, on_listen_answered);
        break;
    case PGRES_POLLING_FAILED:
    default:
        retry_after_failure(self);
        break;
    }
    return G_SOURCE_REMOVE;
}

/* Reconnecting never blocks the loop, whatever the server does (down,
 * or accepting and never answering): libpq's non-blocking connect driven
 * by the socket, LISTEN sent without waiting, and a deadline over both,
 * as connect_timeout bounds the blocking connect. */
static gboolean
retry_listening(gpointer user_data)
{
    EinsoraPgStore *self = user_data;
    const char *const keywords[] = {"application_name", "dbname", NULL};
    const char *const values[] = {"einsora-daemon", self->conninfo, NULL};

    self->listener_retry_id = 0;
    self->listener = PQconnectStartParams(keywords, values, TRUE);
    if (self->listener == NULL || PQstatus(self->listener) == CONNECTION_BAD ||
        PQsetnonblocking(self->listener, 1) != 0) {
        retry_after_failure(self);
        return G_SOURCE_REMOVE;
    }
    self->listener_deadline_id =
        g_timeout_add_seconds(CONNECT_TIMEOUT_SECONDS, on_listening_deadline, self);
    /* libpq: after PQconnectStart, poll as if told "writing". */
    listener_watch(self, G_IO_OUT, on_listener_connecting);
    return G_SOURCE_REMOVE;
}

static void
listener_lost(EinsoraPgStore *self)
{
    g_message("the connection listening for other processes' events was lost; trying again");
    listener_stop(self);
    self->listener_backoff_s = 1;
    self->listener_retry_id = g_timeout_add_seconds(1, retry_listening, self);
}

static gboolean
on_listener_readable(gint fd, GIOCondition condition, gpointer user_data)
{
    EinsoraPgStore *self = user_data;
    int own_pid = self->conn != NULL ? PQbackendPID(self->conn) : 0;
    PGnotify *notify;

    if (!PQconsumeInput(self->listener) || PQstatus(self->listener) != CONNECTION_OK) {
        listener_lost(self);
        return G_SOURCE_REMOVE;
    }
    while ((notify = PQnotifies(self->listener)) != NULL) {
        /* This store's own appends: the service said so already. */
        if (notify->be_pid == own_pid || notify->extra == NULL || notify->extra[0] == '\0') {
            /* its own, or a move with no machine */
        } else if (g_str_equal(notify->relname, EINSORA_PG_STORE_EVENTS_CHANNEL)) {
            g_signal_emit(self, signals[SIGNAL_EVENTS_APPENDED], 0, notify->extra);
        } else if (g_str_equal(notify->relname, EINSORA_PG_STORE_MACHINES_CHANNEL)) {
            g_signal_emit(self, signals[SIGNAL_MACHINE_CHANGED], 0, notify->extra);
        }
        PQfreemem(notify);
    }
    return G_SOURCE_CONTINUE;
}

static gboolean
listener_start(EinsoraPgStore *self, GError **error)
{
    g_autoptr(PGresult) res = NULL;

    self->listener = connect_to(self->conninfo, error);
    if (self->listener == NULL)
        return FALSE;
    res = PQexec(self->listener, "LISTEN " EINSORA_PG_STORE_EVENTS_CHANNEL
                                 "; LISTEN " EINSORA_PG_STORE_MACHINES_CHANNEL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        g_autofree gchar *message = connection_message(self->listener);
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE, "LISTEN: %s", message);
        g_clear_pointer(&self->listener, PQfinish);
        return FALSE;
    }
    /* Reads happen only when the socket is readable: never blocks the
     * loop. */
    if (PQsetnonblocking(self->listener, 1) != 0) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "can't make the listening connection non-blocking");
        g_clear_pointer(&self->listener, PQfinish);
        return FALSE;
    }
    listener_watch(self, G_IO_IN, on_listener_readable);
    return TRUE;
}

static void
listener_stop(EinsoraPgStore *self)
{
    g_clear_handle_id(&self->listener_deadline_id, g_source_remove);
    if (self->listener_source != NULL) {
        g_source_destroy(self->listener_source);
        g_clear_pointer(&self->listener_source, g_source_unref);
    }
    g_clear_pointer(&self->listener, PQfinish);
}

gboolean
einsora_pg_store_listen(EinsoraPgStore *self, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_PG_STORE(self), FALSE);
    g_return_val_if_fail(self->listener == NULL && self->listener_retry_id == 0, FALSE);

    return listener_start(self, error);
}

static void
einsora_pg_store_finalize(GObject *object)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(object);

    g_clear_handle_id(&self->listener_retry_id, g_source_remove);
    listener_stop(self);
    g_clear_pointer(&self->conn, PQfinish);
    if (self->conninfo != NULL)
        explicit_bzero(self->conninfo, strlen(self->conninfo));
    g_clear_pointer(&self->conninfo, g_free);
    g_clear_object(&self->metrics);
    G_OBJECT_CLASS(einsora_pg_store_parent_class)->finalize(object);
}

static void
einsora_pg_store_class_init(EinsoraPgStoreClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_pg_store_finalize;

    /**
     * EinsoraPgStore::events-appended:
     * @tenant_id: (nullable): whose timeline another process added to;
     * NULL when events may have been missed (listening again after a lost
     * connection)
     *
     * Emitted after the other process's commit, from the main context
     * that was thread-default when einsora_pg_store_listen() was called.
     */
    signals[SIGNAL_EVENTS_APPENDED] =
        g_signal_new("events-appended", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, G_TYPE_STRING);

    /**
     * EinsoraPgStore::machine-changed:
     * @machine_id: a machine another process moved a workload onto or off
     *
     * Emitted after the other process's commit, as ::events-appended is.
     */
    signals[SIGNAL_MACHINE_CHANGED] =
        g_signal_new("machine-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
einsora_pg_store_init(EinsoraPgStore *self)
{
    self->now = einsora_now_real;
}

/* A database with tables but no schema_migrations is another program's:
 * refused before anything is written to it. */
static gboolean
check_contents(EinsoraPgStore *self, GError **error)
{
    g_autoptr(PGresult) res = einsora_pg_store_query(
        self,
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
        "ORDER BY tablename COLLATE \"C\"",
        0, NULL, error);
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_auto(GStrv) names = NULL;
    gboolean ours = FALSE;
    int count;

    if (res == NULL)
        return FALSE;
    count = PQntuples(res);
    for (int i = 0; i < count; i++) {
        if (g_strcmp0(pg_column_text(res, i, 0), "schema_migrations") == 0)
            ours = TRUE;
        if (i < 5)
            g_strv_builder_add(builder, pg_column_text(res, i, 0));
    }
    if (count == 0 || ours)
        return TRUE;
    names = g_strv_builder_end(builder);
    {
        g_autofree gchar *list = g_strjoinv(", ", names);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "this PostgreSQL database is not Einsora's: it has tables (%s%s) but no "
                    "schema_migrations; nothing was changed in it; give einsora-daemon a "
                    "database of its own",
                    list, count > 5 ? ", ..." : "");
    }
    return FALSE;
}

EinsoraPgStore *
einsora_pg_store_open(const char *conninfo, GError **error)
{
    g_autoptr(EinsoraPgStore) self = NULL;

    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (conninfo == NULL || conninfo[0] == '\0') {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "refusing an empty PostgreSQL connection string");
        return NULL;
    }
    self = g_object_new(EINSORA_TYPE_PG_STORE, NULL);
    self->conninfo = g_strdup(conninfo);
    self->conn = connect_to(conninfo, error);
    if (self->conn == NULL)
        return NULL;
    if (!check_contents(self, error))
        return NULL;
    return g_steal_pointer(&self);
}

gboolean
einsora_pg_store_migrate_with(EinsoraPgStore *self, GPtrArray *migrations, gint64 now_us,
                              GError **error)
{
    g_return_val_if_fail(EINSORA_IS_PG_STORE(self), FALSE);
    g_return_val_if_fail(migrations != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (self->in_transaction) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "migrations cannot run inside a transaction");
        return FALSE;
    }
    if (!ensure_connected(self, error))
        return FALSE;
    return einsora_pg_migrations_apply(self->conn, migrations, now_us, error);
}

gboolean
einsora_pg_store_migrate(EinsoraPgStore *self, gint64 now_us, GError **error)
{
    g_autoptr(GPtrArray) migrations = NULL;

    g_return_val_if_fail(EINSORA_IS_PG_STORE(self), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    migrations = einsora_migrations_load_builtin_dialect("postgres", error);
    if (migrations == NULL)
        return FALSE;
    return einsora_pg_store_migrate_with(self, migrations, now_us, error);
}

void
einsora_pg_store_set_clock(EinsoraPgStore *self, EinsoraNowFunc now, gpointer now_data)
{
    g_return_if_fail(EINSORA_IS_PG_STORE(self));
    g_return_if_fail(now != NULL);

    self->now = now;
    self->now_data = now_data;
}

void
einsora_pg_store_set_metrics(EinsoraPgStore *self, EinsoraMetrics *metrics)
{
    g_return_if_fail(EINSORA_IS_PG_STORE(self));
    g_return_if_fail(EINSORA_IS_METRICS(metrics));
    g_set_object(&self->metrics, metrics);
    self->transactions = einsora_store_transactions_metric(metrics);
}

PGconn *
einsora_pg_store_get_connection(EinsoraPgStore *self)
{
    g_return_val_if_fail(EINSORA_IS_PG_STORE(self), NULL);
    return self->conn;
}
