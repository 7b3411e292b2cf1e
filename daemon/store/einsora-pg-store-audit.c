/* The audit trail: what admins changed, per tenant (docs/adr/0049); the
 * two workload counts (metrics, and which models are in use); API tokens
 * and browser sessions. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns each row mapper reads, in its order. */
#define AUDIT_COLUMNS "id, tenant_id, at, actor, actor_user_id, action, target, detail"
#define API_TOKEN_COLUMNS                                                                          \
    "id, tenant_id, user_id, name, prefix, token_sha256, created_at, last_used_at, expires_at, "   \
    "revoked_at"
#define SESSION_COLUMNS                                                                            \
    "id, tenant_id, user_id, session_sha256, csrf_sha256, created_at, expires_at, revoked_at"

/* Row mappers: one per record, reading the *_COLUMNS above. */

static EinsoraAuditEvent *
audit_event_from_row(const PGresult *res, int row)
{
    EinsoraAuditEvent *event = einsora_audit_event_new();

    event->id = pg_column_strdup(res, row, 0);
    event->tenant_id = pg_column_strdup(res, row, 1);
    event->at = pg_column_strdup(res, row, 2);
    event->actor = pg_column_strdup(res, row, 3);
    event->actor_user_id = pg_column_strdup(res, row, 4);
    event->action = pg_column_strdup(res, row, 5);
    event->target = pg_column_strdup(res, row, 6);
    event->detail = pg_column_strdup(res, row, 7);
    return event;
}

static EinsoraApiToken *
api_token_from_row(const PGresult *res, int row)
{
    EinsoraApiToken *token = einsora_api_token_new();

    token->id = pg_column_strdup(res, row, 0);
    token->tenant_id = pg_column_strdup(res, row, 1);
    token->user_id = pg_column_strdup(res, row, 2);
    token->name = pg_column_strdup(res, row, 3);
    token->prefix = pg_column_strdup(res, row, 4);
    token->token_sha256 = pg_column_strdup(res, row, 5);
    token->created_at = pg_column_strdup(res, row, 6);
    token->last_used_at = pg_column_strdup(res, row, 7);
    token->expires_at = pg_column_strdup(res, row, 8);
    token->revoked_at = pg_column_strdup(res, row, 9);
    return token;
}

static EinsoraSession *
session_from_row(const PGresult *res, int row)
{
    EinsoraSession *session = einsora_session_new();

    session->id = pg_column_strdup(res, row, 0);
    session->tenant_id = pg_column_strdup(res, row, 1);
    session->user_id = pg_column_strdup(res, row, 2);
    session->session_sha256 = pg_column_strdup(res, row, 3);
    session->csrf_sha256 = pg_column_strdup(res, row, 4);
    session->created_at = pg_column_strdup(res, row, 5);
    session->expires_at = pg_column_strdup(res, row, 6);
    session->revoked_at = pg_column_strdup(res, row, 7);
    return session;
}

/* Audit trail */

gboolean
einsora_pg_store_insert_audit_event(EinsoraStore *store, const EinsoraAuditEvent *event,
                                    GError **error)
{
    const char *const params[] = {event->id,     event->tenant_id,     event->at,
                                  event->actor,  event->actor_user_id, event->action,
                                  event->target, event->detail};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO audit_events (" AUDIT_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                                  G_N_ELEMENTS(params), params,
                                  "an audit event with this ID exists", "no such tenant", NULL,
                                  error);
}

GPtrArray *
einsora_pg_store_list_audit_events(EinsoraStore *store, const char *tenant_id, guint limit,
                                   GError **error)
{
    g_autofree gchar *limit_text = pg_int64_param(limit);
    const char *const params[] = {tenant_id, limit_text};
    /* The latest @limit, given back oldest first. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT * FROM (SELECT " AUDIT_COLUMNS " FROM audit_events WHERE tenant_id = $1 "
        "ORDER BY at COLLATE \"C\" DESC, id COLLATE \"C\" DESC LIMIT $2) AS latest "
        "ORDER BY at COLLATE \"C\", id COLLATE \"C\"",
        G_N_ELEMENTS(params), params, error);
    GPtrArray *events;

    if (res == NULL)
        return NULL;
    events = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_audit_event_free);
    for (int i = 0; i < PQntuples(res); i++)
        g_ptr_array_add(events, audit_event_from_row(res, i));
    return events;
}

/* Workload counts */

gboolean
einsora_pg_store_count_workloads_with_model(EinsoraStore *store, const char *model, gint64 *count,
                                            GError **error)
{
    const char *const params[] = {model};
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store),
        "SELECT count(*) FROM workloads WHERE model = $1 AND state != 'deleted'",
        G_N_ELEMENTS(params), params, error);

    if (res == NULL)
        return FALSE;
    *count = pg_column_int64(res, 0, 0);
    return TRUE;
}

gboolean
einsora_pg_store_count_workloads(
    EinsoraStore *store, gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT],
    GError **error)
{
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT kind, state, count(*) FROM workloads "
                               "WHERE state != 'deleted' GROUP BY kind, state",
                               0, NULL, error);

    if (res == NULL)
        return FALSE;
    memset(counts, 0, sizeof(gint64) * EINSORA_WORKLOAD_KIND_COUNT * EINSORA_WORKLOAD_STATE_COUNT);
    for (int i = 0; i < PQntuples(res); i++) {
        EinsoraWorkloadKind kind;
        EinsoraWorkloadState state;

        if (!einsora_workload_kind_from_string(pg_column_text(res, i, 0), &kind))
            return pg_invalid_row("workloads", "kind", error);
        if (!einsora_workload_state_from_string(pg_column_text(res, i, 1), &state))
            return pg_invalid_row("workloads", "state", error);
        counts[kind][state] = pg_column_int64(res, i, 2);
    }
    return TRUE;
}

/* API tokens */

gboolean
einsora_pg_store_insert_api_token(EinsoraStore *store, const EinsoraApiToken *token, GError **error)
{
    const char *const params[] = {token->id,         token->tenant_id,    token->user_id,
                                  token->name,       token->prefix,       token->token_sha256,
                                  token->created_at, token->last_used_at, token->expires_at,
                                  token->revoked_at};

    /* The foreign key is (tenant_id, user_id): another tenant's user is not
     * found. */
    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO api_tokens (" API_TOKEN_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                                  G_N_ELEMENTS(params), params,
                                  "an API token with this ID or hash already exists",
                                  "no such user", NULL, error);
}

EinsoraApiToken *
einsora_pg_store_find_api_token(EinsoraStore *store, const char *token_sha256, GError **error)
{
    const char *const params[] = {token_sha256};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store),
        "SELECT " API_TOKEN_COLUMNS " FROM api_tokens WHERE token_sha256 = $1",
        G_N_ELEMENTS(params), params, "no such API token", error);

    return res != NULL ? api_token_from_row(res, 0) : NULL;
}

GPtrArray *
einsora_pg_store_list_api_tokens(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                 const char *after_created_at, const char *after_id, guint limit,
                                 GError **error)
{
    g_autofree gchar *limit_text = pg_int64_param(limit);
    /* "" sorts before every real time and ID: the first page. */
    const char *const params[] = {tenant_id, user_id,
                                  after_created_at != NULL ? after_created_at : "",
                                  after_id != NULL ? after_id : "", limit_text};
    g_autoptr(PGresult) res =
        einsora_pg_store_query(EINSORA_PG_STORE(store),
                               "SELECT " API_TOKEN_COLUMNS " FROM api_tokens "
                               "WHERE tenant_id = $1 AND user_id = $2 "
                               "AND (created_at COLLATE \"C\", id COLLATE \"C\") > ($3, $4) "
                               "ORDER BY created_at COLLATE \"C\", id COLLATE \"C\" LIMIT $5",
                               G_N_ELEMENTS(params), params, error);
    GPtrArray *tokens;

    if (res == NULL)
        return NULL;
    tokens = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_api_token_free);
    for (int i = 0; i < PQntuples(res); i++)
        g_ptr_array_add(tokens, api_token_from_row(res, i));
    return tokens;
}

gboolean
einsora_pg_store_revoke_api_token(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                  const char *token_id, const char *revoked_at, GError **error)
{
    const char *const params[] = {tenant_id, user_id, token_id, revoked_at};
    gint64 rows = 0;

    /* coalesce: the first revocation is the one that counts. */
    if (!einsora_pg_store_write(EINSORA_PG_STORE(store),
                                "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, $4) "
                                "WHERE tenant_id = $1 AND user_id = $2 AND id = $3",
                                G_N_ELEMENTS(params), params, NULL, NULL, &rows, error))
        return FALSE;
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_pg_store_touch_api_token(EinsoraStore *store, const char *token_id,
                                 const char *last_used_at, GError **error)
{
    const char *const params[] = {token_id, last_used_at};
    gint64 rows = 0;

    /* Never backwards, whichever of two racing requests writes last. */
    if (!einsora_pg_store_write(EINSORA_PG_STORE(store),
                                "UPDATE api_tokens SET last_used_at = CASE "
                                "WHEN last_used_at IS NULL OR last_used_at COLLATE \"C\" < $2 "
                                "THEN $2 ELSE last_used_at END "
                                "WHERE id = $1",
                                G_N_ELEMENTS(params), params, NULL, NULL, &rows, error))
        return FALSE;
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    return TRUE;
}

/* Browser sessions */

gboolean
einsora_pg_store_insert_session(EinsoraStore *store, const EinsoraSession *session, GError **error)
{
    const char *const params[] = {
        session->id,          session->tenant_id,  session->user_id,    session->session_sha256,
        session->csrf_sha256, session->created_at, session->expires_at, session->revoked_at};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "INSERT INTO sessions (" SESSION_COLUMNS ") "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                                  G_N_ELEMENTS(params), params,
                                  "a session with this ID or hash already exists", "no such user",
                                  NULL, error);
}

EinsoraSession *
einsora_pg_store_find_session(EinsoraStore *store, const char *session_sha256, GError **error)
{
    const char *const params[] = {session_sha256};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store),
        "SELECT " SESSION_COLUMNS " FROM sessions WHERE session_sha256 = $1", G_N_ELEMENTS(params),
        params, "no such session", error);

    return res != NULL ? session_from_row(res, 0) : NULL;
}

gboolean
einsora_pg_store_revoke_session(EinsoraStore *store, const char *tenant_id, const char *session_id,
                                const char *revoked_at, GError **error)
{
    const char *const params[] = {tenant_id, session_id, revoked_at};
    gint64 rows = 0;

    if (!einsora_pg_store_write(EINSORA_PG_STORE(store),
                                "UPDATE sessions SET revoked_at = coalesce(revoked_at, $3) "
                                "WHERE tenant_id = $1 AND id = $2",
                                G_N_ELEMENTS(params), params, NULL, NULL, &rows, error))
        return FALSE;
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such session");
        return FALSE;
    }
    return TRUE;
}
