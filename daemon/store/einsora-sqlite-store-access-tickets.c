/* One-time access tickets for the access proxy. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns access_ticket_from_row reads, in its order. */
#define ACCESS_TICKET_COLUMNS                                                                      \
    "ticket_sha256, tenant_id, workload_id, attempt, created_by, created_at, expires_at"

static EinsoraAccessTicket *
access_ticket_from_row(sqlite3_stmt *stmt)
{
    EinsoraAccessTicket *ticket = einsora_access_ticket_new();

    ticket->hash = column_strdup(stmt, 0);
    ticket->tenant_id = column_strdup(stmt, 1);
    ticket->workload_id = column_strdup(stmt, 2);
    ticket->attempt = sqlite3_column_int64(stmt, 3);
    ticket->created_by = column_strdup(stmt, 4);
    ticket->created_at = column_strdup(stmt, 5);
    ticket->expires_at = column_strdup(stmt, 6);
    return ticket;
}

gboolean
einsora_sqlite_store_insert_access_ticket(EinsoraStore *store, const EinsoraAccessTicket *ticket,
                                          GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        einsora_sqlite_store_prepare_write(self,
                                           "INSERT INTO access_tickets (" ACCESS_TICKET_COLUMNS ") "
                                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                           error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, ticket->hash);
    bind_text(stmt, 2, ticket->tenant_id);
    bind_text(stmt, 3, ticket->workload_id);
    sqlite3_bind_int64(stmt, 4, ticket->attempt);
    bind_text(stmt, 5, ticket->created_by);
    bind_text(stmt, 6, ticket->created_at);
    bind_text(stmt, 7, ticket->expires_at);
    /* The foreign key is (tenant_id, workload_id): another tenant's
     * workload is not found. */
    return einsora_sqlite_store_step_write(
        self, stmt, "an access ticket with this hash already exists", "no such workload", error);
}

EinsoraAccessTicket *
einsora_sqlite_store_take_access_ticket(EinsoraStore *store, const char *ticket_sha256,
                                        const char *now, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* One statement, so one write whether or not a transaction is open:
     * the ticket and every expired one go together, and of two racing
     * takes only the one whose DELETE returns the row has it. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "DELETE FROM access_tickets WHERE ticket_sha256 = ?1 OR expires_at <= ?2 "
        "RETURNING " ACCESS_TICKET_COLUMNS,
        error);
    g_autoptr(EinsoraAccessTicket) taken = NULL;
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, ticket_sha256);
    bind_text(stmt, 2, now);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        /* Expired rows come back too; only a live match counts. */
        if (g_strcmp0((const char *)sqlite3_column_text(stmt, 0), ticket_sha256) == 0 &&
            g_strcmp0((const char *)sqlite3_column_text(stmt, 6), now) > 0)
            taken = access_ticket_from_row(stmt);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    if (taken == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such access ticket, or it expired or was used");
        return NULL;
    }
    return g_steal_pointer(&taken);
}
