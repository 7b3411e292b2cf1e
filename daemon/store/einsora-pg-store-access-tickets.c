/* One-time access tickets for the access proxy. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns access_ticket_from_row reads, in its order. */
#define ACCESS_TICKET_COLUMNS                                                                      \
    "ticket_sha256, tenant_id, workload_id, attempt, created_by, created_at, expires_at"

static EinsoraAccessTicket *
access_ticket_from_row(const PGresult *res, int row)
{
    EinsoraAccessTicket *ticket = einsora_access_ticket_new();

    ticket->hash = pg_column_strdup(res, row, 0);
    ticket->tenant_id = pg_column_strdup(res, row, 1);
    ticket->workload_id = pg_column_strdup(res, row, 2);
    ticket->attempt = pg_column_int64(res, row, 3);
    ticket->created_by = pg_column_strdup(res, row, 4);
    ticket->created_at = pg_column_strdup(res, row, 5);
    ticket->expires_at = pg_column_strdup(res, row, 6);
    return ticket;
}

gboolean
einsora_pg_store_insert_access_ticket(EinsoraStore *store, const EinsoraAccessTicket *ticket,
                                      GError **error)
{
    g_autofree gchar *attempt = pg_int64_param(ticket->attempt);
    const char *const params[] = {ticket->hash,      ticket->tenant_id,  ticket->workload_id,
                                  attempt,           ticket->created_by, ticket->created_at,
                                  ticket->expires_at};

    /* The foreign key is (tenant_id, workload_id): another tenant's
     * workload is not found. */
    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO access_tickets (" ACCESS_TICKET_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                                  G_N_ELEMENTS(params), params,
                                  "an access ticket with this hash already exists",
                                  "no such workload", NULL, error);
}

EinsoraAccessTicket *
einsora_pg_store_take_access_ticket(EinsoraStore *store, const char *ticket_sha256, const char *now,
                                    GError **error)
{
    const char *const params[] = {ticket_sha256, now};
    /* One statement, so one write whether or not a transaction is open:
     * the ticket and every expired one go together, and of two racing
     * takes only the one whose DELETE returns the row has it. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "DELETE FROM access_tickets "
        "WHERE ticket_sha256 = $1::text OR expires_at COLLATE \"C\" <= $2::text "
        "RETURNING " ACCESS_TICKET_COLUMNS,
        G_N_ELEMENTS(params), params, error);
    g_autoptr(EinsoraAccessTicket) taken = NULL;

    if (res == NULL)
        return NULL;
    for (int i = 0; i < PQntuples(res); i++) {
        /* Expired rows come back too; only a live match counts. */
        if (g_strcmp0(pg_column_text(res, i, 0), ticket_sha256) == 0 &&
            g_strcmp0(pg_column_text(res, i, 6), now) > 0) {
            g_clear_pointer(&taken, einsora_access_ticket_free);
            taken = access_ticket_from_row(res, i);
        }
    }
    if (taken == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such access ticket, or it expired or was used");
        return NULL;
    }
    return g_steal_pointer(&taken);
}
