/* The timeline: each workload's events, and the tenant's change feed. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns event_from_row reads, in its order. */
#define EVENT_INSERT_COLUMNS                                                                       \
    "id, tenant_id, workload_id, from_state, to_state, reason, attempt, created_at, placed_class"
/* seq is the store's to give: read back, never inserted. */
#define EVENT_COLUMNS EVENT_INSERT_COLUMNS ", seq"

static EinsoraWorkloadEvent *
event_from_row(const PGresult *res, int row, GError **error)
{
    g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();

    event->id = pg_column_strdup(res, row, 0);
    event->tenant_id = pg_column_strdup(res, row, 1);
    event->workload_id = pg_column_strdup(res, row, 2);
    event->has_from_state = !PQgetisnull(res, row, 3);
    if (event->has_from_state &&
        !einsora_workload_state_from_string(pg_column_text(res, row, 3), &event->from_state)) {
        pg_invalid_row("workload_events", "from_state", error);
        return NULL;
    }
    if (!einsora_workload_state_from_string(pg_column_text(res, row, 4), &event->to_state)) {
        pg_invalid_row("workload_events", "to_state", error);
        return NULL;
    }
    event->reason = pg_column_strdup(res, row, 5);
    event->attempt = pg_column_int64(res, row, 6);
    event->created_at = pg_column_strdup(res, row, 7);
    event->placed_class = pg_column_strdup(res, row, 8);
    event->seq = pg_column_int64(res, row, 9);
    return g_steal_pointer(&event);
}

static GPtrArray *
events_from_result(const PGresult *res, GError **error)
{
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);

    for (int i = 0; i < PQntuples(res); i++) {
        EinsoraWorkloadEvent *event = event_from_row(res, i, error);
        if (event == NULL)
            return NULL;
        g_ptr_array_add(events, event);
    }
    return g_steal_pointer(&events);
}

gboolean
einsora_pg_store_append_event(EinsoraStore *store, const EinsoraWorkloadEvent *event,
                              GError **error)
{
    g_autofree gchar *attempt = pg_int64_param(event->attempt);
    const char *const params[] = {
        event->id,
        event->tenant_id,
        event->workload_id,
        event->has_from_state ? einsora_workload_state_to_string(event->from_state) : NULL,
        einsora_workload_state_to_string(event->to_state),
        event->reason,
        attempt,
        event->created_at,
        event->placed_class,
    };

    /* The foreign key is (tenant_id, workload_id): another tenant's
     * workload is not found. The store's lock, taken before seq is drawn
     * (and held by begin already inside a transaction), makes seq order
     * commit order across processes: a sequence alone doesn't, and the
     * change feed, which reads after the last seq it saw, would skip an
     * event committed late with a smaller seq. The notification goes out
     * at commit, to every process sharing the database (the same one
     * twice in a transaction is sent once). */
    return einsora_pg_store_write(
        EINSORA_PG_STORE(store),
        "INSERT INTO workload_events (" EVENT_INSERT_COLUMNS ") "
        "SELECT $1, $2, $3, $4, $5, $6, $7::bigint, $8, $9 "
        "FROM (SELECT pg_advisory_xact_lock(" EINSORA_PG_STORE_LOCK "), "
        "pg_notify('" EINSORA_PG_STORE_EVENTS_CHANNEL "', $2)) AS store_lock",
        G_N_ELEMENTS(params), params, "an event with this ID already exists", "no such workload",
        NULL, error);
}

GPtrArray *
einsora_pg_store_list_events(EinsoraStore *store, const char *tenant_id, const char *workload_id,
                             gint64 after_seq, guint limit, GError **error)
{
    EinsoraPgStore *self = EINSORA_PG_STORE(store);
    g_autofree gchar *after_seq_text = pg_int64_param(after_seq);
    g_autofree gchar *limit_text = pg_int64_param(limit);
    const char *const params[] = {tenant_id, workload_id, after_seq_text, limit_text};
    g_autoptr(PGresult) res = NULL;
    gboolean exists = FALSE;

    /* An empty list would say the workload exists. */
    if (!einsora_pg_store_workload_exists(self, tenant_id, workload_id, &exists, error))
        return NULL;
    if (!exists) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    res = einsora_pg_store_query(self,
                                 "SELECT " EVENT_COLUMNS " FROM workload_events "
                                 "WHERE tenant_id = $1 AND workload_id = $2 "
                                 "AND seq > $3 ORDER BY seq LIMIT $4",
                                 G_N_ELEMENTS(params), params, error);
    return res != NULL ? events_from_result(res, error) : NULL;
}

GPtrArray *
einsora_pg_store_list_tenant_events(EinsoraStore *store, const char *tenant_id, gint64 after_seq,
                                    guint limit, GError **error)
{
    g_autofree gchar *after_seq_text = pg_int64_param(after_seq);
    g_autofree gchar *limit_text = pg_int64_param(limit);
    const char *const params[] = {tenant_id, after_seq_text, limit_text};
    /* The index on (tenant_id, seq) serves both the filter and the order. */
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT " EVENT_COLUMNS " FROM workload_events "
                               "WHERE tenant_id = $1 AND seq > $2 "
                               "ORDER BY seq LIMIT $3",
                               G_N_ELEMENTS(params), params, error);

    return res != NULL ? events_from_result(res, error) : NULL;
}

gboolean
einsora_pg_store_last_event_seq(EinsoraStore *store, const char *tenant_id, gint64 *seq,
                                GError **error)
{
    const char *const params[] = {tenant_id};
    /* An aggregate: always one row. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT coalesce(max(seq), 0) FROM workload_events WHERE tenant_id = $1",
        G_N_ELEMENTS(params), params, error);

    if (res == NULL)
        return FALSE;
    *seq = pg_column_int64(res, 0, 0);
    return TRUE;
}
