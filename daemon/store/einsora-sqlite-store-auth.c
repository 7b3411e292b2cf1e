/* Who a request is: accounts, API tokens and browser sessions. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store-private.h"

#include "einsora-error.h"

/* The columns each row mapper reads, in its order. */
#define USER_COLUMNS                                                                               \
    "id, tenant_id, email, display_name, password_hash, role, created_at, disabled_at, admin, "    \
    "password_must_change"
#define API_TOKEN_COLUMNS                                                                          \
    "id, tenant_id, user_id, name, prefix, token_sha256, created_at, last_used_at, expires_at, "   \
    "revoked_at"
#define SESSION_COLUMNS                                                                            \
    "id, tenant_id, user_id, session_sha256, csrf_sha256, created_at, expires_at, revoked_at"

/* Row mappers: one per record, reading the *_COLUMNS above. */

static EinsoraUser *
user_from_row(sqlite3_stmt *stmt)
{
    EinsoraUser *user = einsora_user_new();

    user->id = column_strdup(stmt, 0);
    user->tenant_id = column_strdup(stmt, 1);
    user->email = column_strdup(stmt, 2);
    user->display_name = column_strdup(stmt, 3);
    user->password_hash = column_strdup(stmt, 4);
    user->role = column_strdup(stmt, 5);
    user->created_at = column_strdup(stmt, 6);
    user->disabled_at = column_strdup(stmt, 7);
    user->admin = sqlite3_column_int64(stmt, 8) != 0;
    user->password_must_change = sqlite3_column_int64(stmt, 9) != 0;
    return user;
}

static EinsoraApiToken *
api_token_from_row(sqlite3_stmt *stmt)
{
    EinsoraApiToken *token = einsora_api_token_new();

    token->id = column_strdup(stmt, 0);
    token->tenant_id = column_strdup(stmt, 1);
    token->user_id = column_strdup(stmt, 2);
    token->name = column_strdup(stmt, 3);
    token->prefix = column_strdup(stmt, 4);
    token->token_sha256 = column_strdup(stmt, 5);
    token->created_at = column_strdup(stmt, 6);
    token->last_used_at = column_strdup(stmt, 7);
    token->expires_at = column_strdup(stmt, 8);
    token->revoked_at = column_strdup(stmt, 9);
    return token;
}

static EinsoraSession *
session_from_row(sqlite3_stmt *stmt)
{
    EinsoraSession *session = einsora_session_new();

    session->id = column_strdup(stmt, 0);
    session->tenant_id = column_strdup(stmt, 1);
    session->user_id = column_strdup(stmt, 2);
    session->session_sha256 = column_strdup(stmt, 3);
    session->csrf_sha256 = column_strdup(stmt, 4);
    session->created_at = column_strdup(stmt, 5);
    session->expires_at = column_strdup(stmt, 6);
    session->revoked_at = column_strdup(stmt, 7);
    return session;
}

/* Accounts */

gboolean
einsora_sqlite_store_insert_user(EinsoraStore *store, const EinsoraUser *user, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "INSERT INTO users (" USER_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, user->id);
    bind_text(stmt, 2, user->tenant_id);
    bind_text(stmt, 3, user->email);
    bind_text(stmt, 4, user->display_name);
    bind_text(stmt, 5, user->password_hash);
    bind_text(stmt, 6, user->role);
    bind_text(stmt, 7, user->created_at);
    bind_text(stmt, 8, user->disabled_at);
    sqlite3_bind_int(stmt, 9, user->admin ? 1 : 0);
    sqlite3_bind_int(stmt, 10, user->password_must_change ? 1 : 0);
    return einsora_sqlite_store_step_write(
        self, stmt, "a user with this ID or email already exists", "no such tenant", error);
}

EinsoraUser *
einsora_sqlite_store_get_user(EinsoraStore *store, const char *tenant_id, const char *user_id,
                              GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " USER_COLUMNS " FROM users WHERE tenant_id = ?1 AND id = ?2", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    if (!einsora_sqlite_store_step_one(self, stmt, "no such user", error))
        return NULL;
    return user_from_row(stmt);
}

EinsoraUser *
einsora_sqlite_store_find_user_by_email(EinsoraStore *store, const char *email, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " USER_COLUMNS " FROM users WHERE email = ?1", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, email);
    if (!einsora_sqlite_store_step_one(self, stmt, "no such user", error))
        return NULL;
    return user_from_row(stmt);
}

gboolean
einsora_sqlite_store_count_users(EinsoraStore *store, gint64 *count, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self, "SELECT count(*) FROM users", error);

    if (stmt == NULL)
        return FALSE;
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return set_sqlite_error(self, error);
    *count = sqlite3_column_int64(stmt, 0);
    return TRUE;
}

GPtrArray *
einsora_sqlite_store_list_users(EinsoraStore *store, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* users_email serves the order. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " USER_COLUMNS " FROM users ORDER BY email", error);
    g_autoptr(GPtrArray) users = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_user_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(users, user_from_row(stmt));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&users);
}

gboolean
einsora_sqlite_store_set_user_disabled(EinsoraStore *store, const char *tenant_id,
                                       const char *user_id, const char *disabled_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* coalesce: disabling twice keeps the first time; NULL enables. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE users SET disabled_at = CASE WHEN ?3 IS NULL THEN NULL "
        "ELSE coalesce(disabled_at, ?3) END WHERE tenant_id = ?1 AND id = ?2",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    bind_text(stmt, 3, disabled_at);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such user");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_sqlite_store_set_user_password(EinsoraStore *store, const char *tenant_id,
                                       const char *user_id, const char *password_hash,
                                       gboolean must_change, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE users SET password_hash = ?3, password_must_change = ?4 "
        "WHERE tenant_id = ?1 AND id = ?2",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    bind_text(stmt, 3, password_hash);
    sqlite3_bind_int(stmt, 4, must_change ? 1 : 0);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such user");
        return FALSE;
    }
    return TRUE;
}

/* API tokens */

gboolean
einsora_sqlite_store_insert_api_token(EinsoraStore *store, const EinsoraApiToken *token,
                                      GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        einsora_sqlite_store_prepare_write(self,
                                           "INSERT INTO api_tokens (" API_TOKEN_COLUMNS ") "
                                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                           error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, token->id);
    bind_text(stmt, 2, token->tenant_id);
    bind_text(stmt, 3, token->user_id);
    bind_text(stmt, 4, token->name);
    bind_text(stmt, 5, token->prefix);
    bind_text(stmt, 6, token->token_sha256);
    bind_text(stmt, 7, token->created_at);
    bind_text(stmt, 8, token->last_used_at);
    bind_text(stmt, 9, token->expires_at);
    bind_text(stmt, 10, token->revoked_at);
    /* The foreign key is (tenant_id, user_id): another tenant's user is not
     * found. */
    return einsora_sqlite_store_step_write(
        self, stmt, "an API token with this ID or hash already exists", "no such user", error);
}

EinsoraApiToken *
einsora_sqlite_store_find_api_token(EinsoraStore *store, const char *token_sha256, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " API_TOKEN_COLUMNS " FROM api_tokens WHERE token_sha256 = ?1", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, token_sha256);
    if (!einsora_sqlite_store_step_one(self, stmt, "no such API token", error))
        return NULL;
    return api_token_from_row(stmt);
}

GPtrArray *
einsora_sqlite_store_list_api_tokens(EinsoraStore *store, const char *tenant_id,
                                     const char *user_id, const char *after_created_at,
                                     const char *after_id, guint limit, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* "" sorts before every real time and ID: the first page. */
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " API_TOKEN_COLUMNS " FROM api_tokens "
                                           "WHERE tenant_id = ?1 AND user_id = ?2 "
                                           "AND (created_at, id) > (?3, ?4) "
                                           "ORDER BY created_at, id LIMIT ?5",
                                           error);
    g_autoptr(GPtrArray) tokens =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_api_token_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    bind_text(stmt, 3, after_created_at != NULL ? after_created_at : "");
    bind_text(stmt, 4, after_id != NULL ? after_id : "");
    sqlite3_bind_int64(stmt, 5, limit);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(tokens, api_token_from_row(stmt));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&tokens);
}

gboolean
einsora_sqlite_store_revoke_api_token(EinsoraStore *store, const char *tenant_id,
                                      const char *user_id, const char *token_id,
                                      const char *revoked_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* coalesce: the first revocation is the one that counts. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?4) "
        "WHERE tenant_id = ?1 AND user_id = ?2 AND id = ?3",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    bind_text(stmt, 3, token_id);
    bind_text(stmt, 4, revoked_at);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_sqlite_store_touch_api_token(EinsoraStore *store, const char *token_id,
                                     const char *last_used_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* Never backwards, whichever of two racing requests writes last. */
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE api_tokens SET last_used_at = CASE "
        "WHEN last_used_at IS NULL OR last_used_at < ?2 THEN ?2 ELSE last_used_at END "
        "WHERE id = ?1",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, token_id);
    bind_text(stmt, 2, last_used_at);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    return TRUE;
}

/* Browser sessions */

gboolean
einsora_sqlite_store_insert_session(EinsoraStore *store, const EinsoraSession *session,
                                    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        einsora_sqlite_store_prepare_write(self,
                                           "INSERT INTO sessions (" SESSION_COLUMNS ") "
                                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                           error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, session->id);
    bind_text(stmt, 2, session->tenant_id);
    bind_text(stmt, 3, session->user_id);
    bind_text(stmt, 4, session->session_sha256);
    bind_text(stmt, 5, session->csrf_sha256);
    bind_text(stmt, 6, session->created_at);
    bind_text(stmt, 7, session->expires_at);
    bind_text(stmt, 8, session->revoked_at);
    return einsora_sqlite_store_step_write(
        self, stmt, "a session with this ID or hash already exists", "no such user", error);
}

EinsoraSession *
einsora_sqlite_store_find_session(EinsoraStore *store, const char *session_sha256, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " SESSION_COLUMNS " FROM sessions WHERE session_sha256 = ?1", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, session_sha256);
    if (!einsora_sqlite_store_step_one(self, stmt, "no such session", error))
        return NULL;
    return session_from_row(stmt);
}

gboolean
einsora_sqlite_store_revoke_user_sessions(EinsoraStore *store, const char *tenant_id,
                                          const char *user_id, const char *revoked_at,
                                          GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_store_prepare_write(
        self,
        "UPDATE sessions SET revoked_at = ?3 "
        "WHERE tenant_id = ?1 AND user_id = ?2 AND revoked_at IS NULL",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    bind_text(stmt, 3, revoked_at);
    return einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error);
}

gboolean
einsora_sqlite_store_revoke_session(EinsoraStore *store, const char *tenant_id,
                                    const char *session_id, const char *revoked_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        einsora_sqlite_store_prepare_write(self,
                                           "UPDATE sessions SET revoked_at = coalesce(revoked_at, "
                                           "?3) WHERE tenant_id = ?1 AND id = ?2",
                                           error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, session_id);
    bind_text(stmt, 3, revoked_at);
    if (!einsora_sqlite_store_step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such session");
        return FALSE;
    }
    return TRUE;
}
