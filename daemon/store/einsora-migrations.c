#define G_LOG_DOMAIN "einsora-store"

#include "einsora-migrations.h"

#include "einsora-sqlite-private.h"

#include <string.h>

#include "einsora-migration-resources.h"
#include "einsora-pg-migration-resources.h"
#include "einsora-timestamp.h"

#define MIGRATIONS_RESOURCE_PATH "/org/einsora/migrations/"
#define MIGRATION_DIGITS 5

EinsoraMigration *
einsora_migration_new(gint64 version, const char *name, const char *sql)
{
    EinsoraMigration *migration;

    g_return_val_if_fail(name != NULL, NULL);
    g_return_val_if_fail(sql != NULL, NULL);

    migration = g_new0(EinsoraMigration, 1);
    migration->version = version;
    migration->name = g_strdup(name);
    migration->sql = g_strdup(sql);
    migration->sha256 = g_compute_checksum_for_string(G_CHECKSUM_SHA256, sql, -1);
    return migration;
}

void
einsora_migration_free(EinsoraMigration *migration)
{
    if (migration == NULL)
        return;
    g_free(migration->name);
    g_free(migration->sql);
    g_free(migration->sha256);
    g_free(migration);
}

static gint
migration_cmp(gconstpointer a, gconstpointer b)
{
    const EinsoraMigration *ma = *(EinsoraMigration *const *)a;
    const EinsoraMigration *mb = *(EinsoraMigration *const *)b;

    if (ma->version != mb->version)
        return ma->version < mb->version ? -1 : 1;
    return g_strcmp0(ma->name, mb->name);
}

GPtrArray *
einsora_migrations_sort(GPtrArray *migrations)
{
    /* A shallow copy, so the caller's order stays; it inherits the free
     * function, which must go. */
    GPtrArray *sorted = g_ptr_array_copy(migrations, NULL, NULL);

    g_ptr_array_set_free_func(sorted, NULL);
    g_ptr_array_sort(sorted, migration_cmp);
    return sorted;
}

/* "00001_initial.sql" -> version 1, name "00001_initial". */
static gboolean
parse_file_name(const char *file_name, gint64 *version, gchar **name)
{
    gsize len = strlen(file_name);
    g_autofree gchar *digits = NULL;

    if (len <= MIGRATION_DIGITS + 1 + strlen(".sql") || !g_str_has_suffix(file_name, ".sql"))
        return FALSE;
    for (guint i = 0; i < MIGRATION_DIGITS; i++) {
        if (!g_ascii_isdigit(file_name[i]))
            return FALSE;
    }
    if (file_name[MIGRATION_DIGITS] != '_')
        return FALSE;
    for (gsize i = MIGRATION_DIGITS + 1; i < len - strlen(".sql"); i++) {
        char c = file_name[i];
        if (!g_ascii_islower(c) && !g_ascii_isdigit(c) && c != '_')
            return FALSE;
    }
    digits = g_strndup(file_name, MIGRATION_DIGITS);
    *version = g_ascii_strtoll(digits, NULL, 10);
    if (*version < 1)
        return FALSE;
    *name = g_strndup(file_name, len - strlen(".sql"));
    return TRUE;
}

GPtrArray *
einsora_migrations_load_builtin(GError **error)
{
    return einsora_migrations_load_builtin_dialect("sqlite", error);
}

GPtrArray *
einsora_migrations_load_builtin_dialect(const char *dialect, GError **error)
{
    /* Calling the generated getter keeps the resource in the static
     * library; relying on its constructor alone would let the linker drop
     * it. */
    GResource *resource = NULL;
    g_autofree gchar *directory = NULL;
    g_auto(GStrv) children = NULL;
    g_autoptr(GPtrArray) migrations =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_migration_free);

    if (g_strcmp0(dialect, "sqlite") == 0)
        resource = einsora_migrations_get_resource();
    else if (g_strcmp0(dialect, "postgres") == 0)
        resource = einsora_pg_migrations_get_resource();
    g_return_val_if_fail(resource != NULL, NULL);
    directory = g_strconcat(MIGRATIONS_RESOURCE_PATH, dialect, "/", NULL);
    children =
        g_resource_enumerate_children(resource, directory, G_RESOURCE_LOOKUP_FLAGS_NONE, error);
    if (children == NULL) {
        g_prefix_error(error, "built-in migrations: ");
        return NULL;
    }
    for (guint i = 0; children[i] != NULL; i++) {
        g_autofree gchar *path = g_strconcat(directory, children[i], NULL);
        g_autofree gchar *name = NULL;
        g_autofree gchar *sql = NULL;
        g_autoptr(GBytes) bytes = NULL;
        const char *data;
        gsize size = 0;
        gint64 version = 0;

        if (!parse_file_name(children[i], &version, &name)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "built-in migration %s: its name must look like 00001_name.sql",
                        children[i]);
            return NULL;
        }
        bytes = g_resource_lookup_data(resource, path, G_RESOURCE_LOOKUP_FLAGS_NONE, error);
        if (bytes == NULL) {
            g_prefix_error(error, "built-in migration %s: ", children[i]);
            return NULL;
        }
        data = g_bytes_get_data(bytes, &size);
        if (size == 0 || memchr(data, '\0', size) != NULL || !g_utf8_validate(data, size, NULL)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "built-in migration %s: it must be non-empty UTF-8 text", children[i]);
            return NULL;
        }
        sql = g_strndup(data, size);
        g_ptr_array_add(migrations, einsora_migration_new(version, name, sql));
    }
    g_ptr_array_sort(migrations, migration_cmp);
    return g_steal_pointer(&migrations);
}

static gboolean
table_exists(sqlite3 *db, const char *table, gboolean *exists, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_prepare(
        db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1", error);

    if (stmt == NULL)
        return FALSE;
    sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return einsora_sqlite_set_error(db, error);
    *exists = sqlite3_column_int64(stmt, 0) > 0;
    return TRUE;
}

static gint64
max_applied_version(sqlite3 *db, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_prepare(
        db, "SELECT coalesce(max(version), 0) FROM schema_migrations", error);

    if (stmt == NULL)
        return -1;
    if (sqlite3_step(stmt) != SQLITE_ROW) {
        einsora_sqlite_set_error(db, error);
        return -1;
    }
    return sqlite3_column_int64(stmt, 0);
}

gint64
einsora_migrations_get_version(sqlite3 *db, GError **error)
{
    gboolean exists = FALSE;

    g_return_val_if_fail(db != NULL, -1);

    if (!table_exists(db, "schema_migrations", &exists, error))
        return -1;
    if (!exists)
        return 0;
    return max_applied_version(db, error);
}

gboolean
einsora_migrations_check_sequence(GPtrArray *sorted, GError **error)
{
    for (guint i = 0; i < sorted->len; i++) {
        const EinsoraMigration *migration = g_ptr_array_index(sorted, i);

        if (i > 0) {
            const EinsoraMigration *previous = g_ptr_array_index(sorted, i - 1);
            if (previous->version == migration->version) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "migrations %s and %s have the same version", previous->name,
                            migration->name);
                return FALSE;
            }
        }
        if (migration->version != (gint64)i + 1) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                        "migration version %u is missing (found %s instead): versions must "
                        "run from 1 without gaps",
                        i + 1, migration->name);
            return FALSE;
        }
    }
    return TRUE;
}

/* Inside a transaction: the applied rows must be 1..k with k <= N, each
 * with the text it has now. Returns k, or -1. */
static gint64
check_applied(sqlite3 *db, GPtrArray *sorted, GError **error)
{
    gint64 newest = max_applied_version(db, error);
    gint64 expected = 1;
    int rc;
    g_autoptr(sqlite3_stmt) stmt = NULL;

    if (newest < 0)
        return -1;
    if (newest > (gint64)sorted->len) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                    "database schema version %" G_GINT64_FORMAT " is newer than this "
                    "einsora-daemon supports (%u): use a newer einsora-daemon",
                    newest, sorted->len);
        return -1;
    }
    stmt = einsora_sqlite_prepare(
        db, "SELECT version, sha256 FROM schema_migrations ORDER BY version", error);
    if (stmt == NULL)
        return -1;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        gint64 version = sqlite3_column_int64(stmt, 0);
        const char *sha256 = (const char *)sqlite3_column_text(stmt, 1);
        const EinsoraMigration *migration;

        if (version != expected) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "schema_migrations is inconsistent: version %" G_GINT64_FORMAT
                        " is missing",
                        expected);
            return -1;
        }
        migration = g_ptr_array_index(sorted, version - 1);
        if (g_strcmp0(sha256, migration->sha256) != 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "migration %s was changed after it was applied", migration->name);
            return -1;
        }
        expected++;
    }
    if (rc != SQLITE_DONE) {
        einsora_sqlite_set_error(db, error);
        return -1;
    }
    return newest;
}

static gint64
check_schema_migrations(sqlite3 *db, GPtrArray *sorted, GError **error)
{
    gint64 applied;

    if (!einsora_sqlite_exec(db, "BEGIN IMMEDIATE", error))
        return -1;
    /* Created in the same transaction, so a refused database is left as it
     * was. */
    if (!einsora_sqlite_exec(
            db,
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, sha256 TEXT NOT NULL, "
            "applied_at TEXT NOT NULL) STRICT",
            error)) {
        einsora_sqlite_rollback(db);
        return -1;
    }
    applied = check_applied(db, sorted, error);
    if (applied < 0) {
        einsora_sqlite_rollback(db);
        return -1;
    }
    if (!einsora_sqlite_exec(db, "COMMIT", error)) {
        einsora_sqlite_rollback(db);
        return -1;
    }
    return applied;
}

/* With foreign keys off (as SQLite's ALTER TABLE procedure needs), check
 * them before the migration commits. */
static gboolean
check_foreign_keys(sqlite3 *db, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_prepare(db, "PRAGMA foreign_key_check", error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "it leaves rows in %s that break a foreign key",
                    (const char *)sqlite3_column_text(stmt, 0));
        return FALSE;
    }
    if (rc != SQLITE_DONE)
        return einsora_sqlite_set_error(db, error);
    return TRUE;
}

static gboolean
apply_one_in_transaction(sqlite3 *db, const EinsoraMigration *migration, const char *applied_at,
                         GError **error)
{
    g_autoptr(sqlite3_stmt) lookup = einsora_sqlite_prepare(
        db, "SELECT sha256 FROM schema_migrations WHERE version = ?1", error);
    g_autoptr(sqlite3_stmt) insert = NULL;
    int rc;

    if (lookup == NULL)
        return FALSE;
    /* Another process may have applied it since we looked. */
    sqlite3_bind_int64(lookup, 1, migration->version);
    rc = sqlite3_step(lookup);
    if (rc == SQLITE_ROW) {
        if (g_strcmp0((const char *)sqlite3_column_text(lookup, 0), migration->sha256) != 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                        "migration %s was changed after it was applied", migration->name);
            return FALSE;
        }
        return TRUE;
    }
    if (rc != SQLITE_DONE)
        return einsora_sqlite_set_error(db, error);

    if (!einsora_sqlite_exec(db, migration->sql, error))
        return FALSE;
    if (sqlite3_get_autocommit(db)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "it ended the transaction itself; a migration must not contain "
                            "BEGIN, COMMIT or ROLLBACK");
        return FALSE;
    }
    if (!check_foreign_keys(db, error))
        return FALSE;

    insert =
        einsora_sqlite_prepare(db,
                               "INSERT INTO schema_migrations (version, name, sha256, applied_at) "
                               "VALUES (?1, ?2, ?3, ?4)",
                               error);
    if (insert == NULL)
        return FALSE;
    sqlite3_bind_int64(insert, 1, migration->version);
    sqlite3_bind_text(insert, 2, migration->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 3, migration->sha256, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 4, applied_at, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(insert) != SQLITE_DONE)
        return einsora_sqlite_set_error(db, error);
    return TRUE;
}

static gboolean
apply_one(sqlite3 *db, const EinsoraMigration *migration, const char *applied_at, GError **error)
{
    if (!einsora_sqlite_exec(db, "BEGIN IMMEDIATE", error) ||
        !apply_one_in_transaction(db, migration, applied_at, error) ||
        !einsora_sqlite_exec(db, "COMMIT", error)) {
        einsora_sqlite_rollback(db);
        g_prefix_error(error, "migration %s: ", migration->name);
        return FALSE;
    }
    return TRUE;
}

static gboolean
get_foreign_keys(sqlite3 *db, gboolean *enabled, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt = einsora_sqlite_prepare(db, "PRAGMA foreign_keys", error);

    if (stmt == NULL)
        return FALSE;
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return einsora_sqlite_set_error(db, error);
    *enabled = sqlite3_column_int(stmt, 0) != 0;
    return TRUE;
}

static gboolean
apply_pending(sqlite3 *db, GPtrArray *sorted, gint64 applied, gint64 now_us, GError **error)
{
    g_autofree gchar *applied_at = einsora_timestamp_format(now_us);

    for (guint i = (guint)applied; i < sorted->len; i++) {
        const EinsoraMigration *migration = g_ptr_array_index(sorted, i);
        if (!apply_one(db, migration, applied_at, error))
            return FALSE;
        g_debug("applied migration %s", migration->name);
    }
    return TRUE;
}

gboolean
einsora_migrations_apply(sqlite3 *db, GPtrArray *migrations, gint64 now_us, GError **error)
{
    g_autoptr(GPtrArray) sorted = NULL;
    gboolean foreign_keys = FALSE;
    gboolean ok;
    gint64 applied;

    g_return_val_if_fail(db != NULL, FALSE);
    g_return_val_if_fail(migrations != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (!sqlite3_get_autocommit(db)) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "migrations cannot run inside a transaction");
        return FALSE;
    }
    sorted = einsora_migrations_sort(migrations);
    if (!einsora_migrations_check_sequence(sorted, error))
        return FALSE;

    applied = check_schema_migrations(db, sorted, error);
    if (applied < 0)
        return FALSE;
    if (applied == (gint64)sorted->len)
        return TRUE;

    /* PRAGMA foreign_keys is a no-op inside a transaction, so it is turned
     * off around them and each migration checks the keys before commit. */
    if (!get_foreign_keys(db, &foreign_keys, error))
        return FALSE;
    if (foreign_keys && !einsora_sqlite_exec(db, "PRAGMA foreign_keys = OFF", error))
        return FALSE;
    ok = apply_pending(db, sorted, applied, now_us, error);
    if (foreign_keys) {
        /* Restore it even after a failure, and report the first error. */
        g_autoptr(GError) error_local = NULL;
        if (!einsora_sqlite_exec(db, "PRAGMA foreign_keys = ON", &error_local)) {
            if (ok)
                g_propagate_error(error, g_steal_pointer(&error_local));
            ok = FALSE;
        }
    }
    return ok;
}
