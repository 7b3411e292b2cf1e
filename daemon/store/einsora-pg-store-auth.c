/* Accounts, API tokens and browser sessions. */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

/* The columns user_from_row reads, in its order. */
#define USER_COLUMNS                                                                               \
    "id, tenant_id, email, display_name, password_hash, role, created_at, disabled_at, admin, "    \
    "password_must_change"

static EinsoraUser *
user_from_row(const PGresult *res, int row)
{
    EinsoraUser *user = einsora_user_new();

    user->id = pg_column_strdup(res, row, 0);
    user->tenant_id = pg_column_strdup(res, row, 1);
    user->email = pg_column_strdup(res, row, 2);
    user->display_name = pg_column_strdup(res, row, 3);
    user->password_hash = pg_column_strdup(res, row, 4);
    user->role = pg_column_strdup(res, row, 5);
    user->created_at = pg_column_strdup(res, row, 6);
    user->disabled_at = pg_column_strdup(res, row, 7);
    user->admin = pg_column_int64(res, row, 8) != 0;
    user->password_must_change = pg_column_int64(res, row, 9) != 0;
    return user;
}

/* An UPDATE that must change a row: NOT_FOUND with @missing when it
 * changed none. */
static gboolean
update_one(EinsoraStore *store, const char *sql, int n_params, const char *const *params,
           const char *missing, GError **error)
{
    gint64 rows = 0;

    if (!einsora_pg_store_write(EINSORA_PG_STORE(store), sql, n_params, params, NULL, NULL, &rows,
                                error))
        return FALSE;
    if (rows == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, missing);
        return FALSE;
    }
    return TRUE;
}

/* Accounts */

gboolean
einsora_pg_store_insert_user(EinsoraStore *store, const EinsoraUser *user, GError **error)
{
    const char *const params[] = {user->id,
                                  user->tenant_id,
                                  user->email,
                                  user->display_name,
                                  user->password_hash,
                                  user->role,
                                  user->created_at,
                                  user->disabled_at,
                                  user->admin ? "1" : "0",
                                  user->password_must_change ? "1" : "0"};

    return einsora_pg_store_write(
        EINSORA_PG_STORE(store),
        "INSERT INTO users (" USER_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        G_N_ELEMENTS(params), params, "a user with this ID or email already exists",
        "no such tenant", NULL, error);
}

EinsoraUser *
einsora_pg_store_get_user(EinsoraStore *store, const char *tenant_id, const char *user_id,
                          GError **error)
{
    const char *const params[] = {tenant_id, user_id};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store),
        "SELECT " USER_COLUMNS " FROM users WHERE tenant_id = $1 AND id = $2", G_N_ELEMENTS(params),
        params, "no such user", error);

    return res != NULL ? user_from_row(res, 0) : NULL;
}

EinsoraUser *
einsora_pg_store_find_user_by_email(EinsoraStore *store, const char *email, GError **error)
{
    const char *const params[] = {email};
    g_autoptr(PGresult) res = einsora_pg_store_query_one(
        EINSORA_PG_STORE(store), "SELECT " USER_COLUMNS " FROM users WHERE email = $1",
        G_N_ELEMENTS(params), params, "no such user", error);

    return res != NULL ? user_from_row(res, 0) : NULL;
}

gboolean
einsora_pg_store_count_users(EinsoraStore *store, gint64 *count, GError **error)
{
    /* An aggregate: always one row. */
    g_autoptr(PGresult) res = einsora_pg_store_query(EINSORA_PG_STORE(store),
                                                     "SELECT count(*) FROM users", 0, NULL, error);

    if (res == NULL)
        return FALSE;
    *count = pg_column_int64(res, 0, 0);
    return TRUE;
}

GPtrArray *
einsora_pg_store_list_users(EinsoraStore *store, GError **error)
{
    /* Byte order, as SQLite sorts, whatever the database's collation. */
    g_autoptr(PGresult) res = einsora_pg_store_query(
        EINSORA_PG_STORE(store), "SELECT " USER_COLUMNS " FROM users ORDER BY email COLLATE \"C\"",
        0, NULL, error);
    GPtrArray *users;

    if (res == NULL)
        return NULL;
    users = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_user_free);
    for (int i = 0; i < PQntuples(res); i++)
        g_ptr_array_add(users, user_from_row(res, i));
    return users;
}

gboolean
einsora_pg_store_set_user_disabled(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                   const char *disabled_at, GError **error)
{
    const char *const params[] = {tenant_id, user_id, disabled_at};

    /* coalesce: disabling twice keeps the first time; NULL enables. */
    return update_one(store,
                      "UPDATE users SET disabled_at = CASE WHEN $3::text IS NULL THEN NULL "
                      "ELSE coalesce(disabled_at, $3::text) END WHERE tenant_id = $1 AND id = $2",
                      G_N_ELEMENTS(params), params, "no such user", error);
}

gboolean
einsora_pg_store_set_user_password(EinsoraStore *store, const char *tenant_id, const char *user_id,
                                   const char *password_hash, gboolean must_change, GError **error)
{
    const char *const params[] = {tenant_id, user_id, password_hash, must_change ? "1" : "0"};

    return update_one(store,
                      "UPDATE users SET password_hash = $3, password_must_change = $4 "
                      "WHERE tenant_id = $1 AND id = $2",
                      G_N_ELEMENTS(params), params, "no such user", error);
}

/* Browser sessions */

gboolean
einsora_pg_store_revoke_user_sessions(EinsoraStore *store, const char *tenant_id,
                                      const char *user_id, const char *revoked_at, GError **error)
{
    const char *const params[] = {tenant_id, user_id, revoked_at};

    return einsora_pg_store_write(EINSORA_PG_STORE(store),
                                  "UPDATE sessions SET revoked_at = $3 "
                                  "WHERE tenant_id = $1 AND user_id = $2 AND revoked_at IS NULL",
                                  G_N_ELEMENTS(params), params, NULL, NULL, NULL, error);
}

/* Machines: who may use one, and its agent's certificate */

gboolean
einsora_pg_store_set_machine_sharing(EinsoraStore *store, const char *tenant_id,
                                     const char *machine_id, EinsoraSharing sharing, GError **error)
{
    const char *const params[] = {tenant_id, machine_id, einsora_sharing_to_string(sharing)};

    return update_one(store, "UPDATE machines SET sharing = $3 WHERE tenant_id = $1 AND id = $2",
                      G_N_ELEMENTS(params), params, "no such machine", error);
}

gboolean
einsora_pg_store_clear_machine_certificate(EinsoraStore *store, const char *tenant_id,
                                           const char *machine_id, GError **error)
{
    const char *const params[] = {tenant_id, machine_id};

    return update_one(store,
                      "UPDATE machines SET cert_fingerprint = NULL "
                      "WHERE tenant_id = $1 AND id = $2 AND cert_fingerprint IS NOT NULL",
                      G_N_ELEMENTS(params), params, "no such machine with an agent certificate",
                      error);
}
