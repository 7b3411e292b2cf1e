#define G_LOG_DOMAIN "einsora-store"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-error.h"
#include "einsora-sqlite-private.h"
#include "einsora-sqlite-store.h"
#include "einsora-store-conformance.h"
#include "einsora-test-dir.h"
#include "einsora-timestamp.h"

/* 2026-01-01T00:00:00Z */
#define BASE_US G_GINT64_CONSTANT(1767225600000000)
#define TEST_DIR_KEY "einsora-test-dir"

/* The harness: each store gets its own private directory, removed when the
 * store is finalized (after it closed its connection). */

static void
test_dir_free(gpointer dir)
{
    einsora_test_dir_remove(dir);
    g_free(dir);
}

static EinsoraStore *
sqlite_open_fresh(gpointer data, GError **error)
{
    g_autofree gchar *dir = einsora_test_dir_new();
    g_autofree gchar *path = g_build_filename(dir, "einsora.db", NULL);
    g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, error);

    if (store == NULL) {
        einsora_test_dir_remove(dir);
        return NULL;
    }
    g_object_set_data_full(G_OBJECT(store), TEST_DIR_KEY, g_steal_pointer(&dir), test_dir_free);
    if (!einsora_sqlite_store_migrate(store, BASE_US, error))
        return NULL;
    return EINSORA_STORE(g_steal_pointer(&store));
}

static gboolean
sqlite_raw_exec(EinsoraStore *store, const char *sql, GError **error)
{
    sqlite3 *db = einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(store));
    char *message = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "sqlite: %s", message);
        sqlite3_free(message);
        return FALSE;
    }
    return TRUE;
}

static GStrv
query_strv(sqlite3 *db, const char *sql, const char *param)
{
    g_autoptr(sqlite3_stmt) stmt = NULL;
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    int rc;

    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
    if (param != NULL)
        sqlite3_bind_text(stmt, 1, param, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_strv_builder_add(builder, (const char *)sqlite3_column_text(stmt, 0));
    g_assert_cmpint(rc, ==, SQLITE_DONE);
    return g_strv_builder_end(builder);
}

static GStrv
sqlite_list_columns(EinsoraStore *store, const char *table)
{
    return query_strv(einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(store)),
                      "SELECT name FROM pragma_table_info(?1)", table);
}

/* Indexes SQLite makes for primary keys (sqlite_autoindex_*) have no SQL;
 * the suite compares the ones the schema names. */
static GStrv
sqlite_list_indexes(EinsoraStore *store)
{
    return query_strv(einsora_sqlite_store_get_handle(EINSORA_SQLITE_STORE(store)),
                      "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL",
                      NULL);
}

static const EinsoraStoreHarness sqlite_harness = {
    .name = "sqlite",
    .open_fresh = sqlite_open_fresh,
    .raw_exec = sqlite_raw_exec,
    .list_columns = sqlite_list_columns,
    .list_indexes = sqlite_list_indexes,
    .data = NULL,
};

/* SQLite-specific tests */

typedef struct {
    gchar *dir;
    gchar *path;
    EinsoraSqliteStore *store; /* opened, not migrated; NULL for open tests */
} Fixture;

static void
fixture_set_up_dir(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->path = g_build_filename(f->dir, "einsora.db", NULL);
}

static void
fixture_set_up_store(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    fixture_set_up_dir(f, data);
    f->store = einsora_sqlite_store_open(f->path, &error);
    g_assert_no_error(error);
    g_assert_nonnull(f->store);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    if (f->store != NULL)
        g_assert_finalize_object(f->store);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
    g_free(f->path);
}

static sqlite3 *
handle(Fixture *f)
{
    return einsora_sqlite_store_get_handle(f->store);
}

static gint64
query_int(sqlite3 *db, const char *sql)
{
    g_autoptr(sqlite3_stmt) stmt = NULL;
    gint64 value;

    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    value = sqlite3_column_int64(stmt, 0);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_DONE);
    return value;
}

static gchar *
query_text(sqlite3 *db, const char *sql)
{
    g_autoptr(sqlite3_stmt) stmt = NULL;

    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    return g_strdup((const char *)sqlite3_column_text(stmt, 0));
}

static gboolean
table_exists(sqlite3 *db, const char *table)
{
    g_autoptr(sqlite3_stmt) stmt = NULL;

    g_assert_cmpint(sqlite3_prepare_v2(db,
                                       "SELECT count(*) FROM sqlite_schema "
                                       "WHERE type = 'table' AND name = ?1",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    return sqlite3_column_int64(stmt, 0) > 0;
}

static void
write_file(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(fchmod(fd, mode), ==, 0);
    g_assert_cmpint(close(fd), ==, 0);
}

static guint
file_mode(const char *path)
{
    struct stat st;

    g_assert_cmpint(lstat(path, &st), ==, 0);
    return st.st_mode & 07777;
}

static void
assert_open_refused(const char *path, gint code, const char *const *needles)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(path, &error);

    g_assert_null(store);
    g_assert_error(error, G_IO_ERROR, code);
    g_test_message("refused: %s", error->message);
    g_assert_true(g_str_has_prefix(error->message, "refusing to use "));
    for (guint i = 0; needles != NULL && needles[i] != NULL; i++)
        g_assert_nonnull(strstr(error->message, needles[i]));
}

/* Opening: the file stays private */

static void
test_open_refuses_memory_and_uris(Fixture *f, gconstpointer data)
{
    const char *const uris[] = {"file:x.db", "file:///tmp/x.db?mode=rwc",
                                "file::memory:?cache=shared"};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = NULL;

    assert_open_refused(":memory:", G_IO_ERROR_INVALID_ARGUMENT,
                        (const char *const[]){":memory:", NULL});
    for (guint i = 0; i < G_N_ELEMENTS(uris); i++)
        assert_open_refused(uris[i], G_IO_ERROR_INVALID_ARGUMENT,
                            (const char *const[]){uris[i], "URI", NULL});
    assert_open_refused("", G_IO_ERROR_INVALID_ARGUMENT, NULL);
    store = einsora_sqlite_store_open(NULL, &error);
    g_assert_null(store);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_false(g_file_test("file:x.db", G_FILE_TEST_EXISTS));
}

static void
test_open_refuses_writable_dir(Fixture *f, gconstpointer data)
{
    const struct {
        mode_t mode;
        const char *text;
    } modes[] = {{0777, "0777"}, {0770, "0770"}, {0720, "0720"}, {0702, "0702"}, {01777, "1777"}};

    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_assert_cmpint(chmod(f->dir, modes[i].mode), ==, 0);
        assert_open_refused(f->path, G_IO_ERROR_PERMISSION_DENIED,
                            (const char *const[]){f->path, f->dir, modes[i].text, NULL});
        /* Refused before anything was created. */
        g_assert_false(g_file_test(f->path, G_FILE_TEST_EXISTS));
    }
}

static void
test_open_refuses_missing_dir(Fixture *f, gconstpointer data)
{
    g_autofree gchar *path = g_build_filename(f->dir, "missing", "einsora.db", NULL);
    g_autofree gchar *not_dir = g_build_filename(f->dir, "plain", NULL);
    g_autofree gchar *below_file = g_build_filename(not_dir, "einsora.db", NULL);

    assert_open_refused(path, G_IO_ERROR_NOT_FOUND, (const char *const[]){path, NULL});
    write_file(not_dir, 0600);
    assert_open_refused(below_file, G_IO_ERROR_NOT_DIRECTORY,
                        (const char *const[]){below_file, NULL});
}

static void
test_open_refuses_file_mode(Fixture *f, gconstpointer data)
{
    const struct {
        mode_t mode;
        const char *text;
    } modes[] = {{0644, "0644"}, {0640, "0640"}, {0660, "0660"}, {0400, "0400"}, {0700, "0700"}};

    write_file(f->path, 0644);
    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_autofree gchar *message = NULL;
        g_assert_cmpint(chmod(f->path, modes[i].mode), ==, 0);
        message = g_strdup_printf("its mode is %s; it must be 0600", modes[i].text);
        assert_open_refused(f->path, G_IO_ERROR_PERMISSION_DENIED,
                            (const char *const[]){f->path, message, NULL});
        /* Refused, not repaired. */
        g_assert_cmpuint(file_mode(f->path), ==, modes[i].mode);
    }
}

static void
test_open_refuses_symlink(Fixture *f, gconstpointer data)
{
    g_autofree gchar *target = g_build_filename(f->dir, "elsewhere.db", NULL);
    g_autofree gchar *dangling = g_build_filename(f->dir, "dangling.db", NULL);
    struct stat st;

    write_file(target, 0600);
    g_assert_cmpint(symlink(target, f->path), ==, 0);
    assert_open_refused(f->path, G_IO_ERROR_NOT_REGULAR_FILE,
                        (const char *const[]){f->path, "symbolic link", NULL});
    g_assert_cmpint(stat(target, &st), ==, 0);
    g_assert_cmpint(st.st_size, ==, 0);

    /* A link to nothing is not followed to create its target either. */
    g_assert_cmpint(unlink(target), ==, 0);
    g_assert_cmpint(symlink(target, dangling), ==, 0);
    assert_open_refused(dangling, G_IO_ERROR_NOT_REGULAR_FILE,
                        (const char *const[]){dangling, "symbolic link", NULL});
    g_assert_false(g_file_test(target, G_FILE_TEST_EXISTS));
}

static void
test_open_refuses_directory(Fixture *f, gconstpointer data)
{
    g_assert_cmpint(mkdir(f->path, 0700), ==, 0);
    assert_open_refused(f->path, G_IO_ERROR_NOT_REGULAR_FILE,
                        (const char *const[]){f->path, "not a regular file", NULL});
}

static void
test_open_refuses_companion_files(Fixture *f, gconstpointer data)
{
    const char *const suffixes[] = {"-wal", "-shm", "-journal"};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = einsora_sqlite_store_open(f->path, &error);

    /* A real database first; closing it removes its -wal and -shm. */
    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(store, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_finalize_object(g_steal_pointer(&store));

    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *companion = g_strconcat(f->path, suffixes[i], NULL);
        g_autofree gchar *target = g_strconcat(f->path, suffixes[i], ".target", NULL);

        g_assert_false(g_file_test(companion, G_FILE_TEST_EXISTS));
        write_file(companion, 0644);
        assert_open_refused(f->path, G_IO_ERROR_PERMISSION_DENIED,
                            (const char *const[]){companion, "its mode is 0644", NULL});
        g_assert_cmpint(unlink(companion), ==, 0);

        write_file(target, 0600);
        g_assert_cmpint(symlink(target, companion), ==, 0);
        assert_open_refused(f->path, G_IO_ERROR_NOT_REGULAR_FILE,
                            (const char *const[]){companion, "symbolic link", NULL});
        g_assert_cmpint(unlink(companion), ==, 0);
        g_assert_cmpint(unlink(target), ==, 0);
    }

    /* With the strays gone it opens again. */
    store = einsora_sqlite_store_open(f->path, &error);
    g_assert_no_error(error);
    g_assert_nonnull(store);
}

static void
assert_private_file(const char *path)
{
    struct stat st;

    g_test_message("checking %s", path);
    g_assert_cmpint(lstat(path, &st), ==, 0);
    g_assert_true(S_ISREG(st.st_mode));
    g_assert_cmpuint(st.st_mode & 07777, ==, 0600);
    g_assert_cmpuint(st.st_uid, ==, geteuid());
}

static void
test_open_creates_private_files(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = NULL;
    g_autofree gchar *wal = g_strconcat(f->path, "-wal", NULL);
    g_autofree gchar *shm = g_strconcat(f->path, "-shm", NULL);
    mode_t old_umask;

    /* Even a careless umask must not widen the files. */
    old_umask = umask(0);
    store = einsora_sqlite_store_open(f->path, &error);
    if (store != NULL)
        einsora_sqlite_store_migrate(store, BASE_US, &error);
    umask(old_umask);
    g_assert_no_error(error);
    g_assert_nonnull(store);

    g_assert_cmpstr(einsora_sqlite_store_get_path(store), ==, f->path);
    assert_private_file(f->path);
    assert_private_file(wal);
    assert_private_file(shm);
}

static void
test_open_resolves_relative_path(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) store = NULL;
    g_autofree gchar *cwd = g_get_current_dir();
    g_autofree gchar *sub = g_build_filename(f->dir, "sub", NULL);

    g_assert_cmpint(mkdir(sub, 0700), ==, 0);
    g_assert_cmpint(chdir(sub), ==, 0);
    store = einsora_sqlite_store_open("../einsora.db", &error);
    g_assert_cmpint(chdir(cwd), ==, 0);
    g_assert_no_error(error);
    g_assert_cmpstr(einsora_sqlite_store_get_path(store), ==, f->path);
    assert_private_file(f->path);
}

/* Connection settings */

static void
test_pragmas(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *journal_mode = NULL;

    /* After migrating too, which turns foreign keys off for a while. */
    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);

    journal_mode = query_text(handle(f), "PRAGMA journal_mode");
    g_assert_cmpstr(journal_mode, ==, "wal");
    g_assert_cmpint(query_int(handle(f), "PRAGMA busy_timeout"), ==, 15000);
    g_assert_cmpint(query_int(handle(f), "PRAGMA foreign_keys"), ==, 1);
    /* FULL */
    g_assert_cmpint(query_int(handle(f), "PRAGMA synchronous"), ==, 2);
}

static void
test_schema_strict(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(sqlite3_stmt) stmt = NULL;
    g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func(g_free);
    const char *const *tables = einsora_store_conformance_tables();
    guint expected = 0;
    int rc;

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);

    g_assert_cmpint(sqlite3_prepare_v2(handle(f),
                                       "SELECT name, strict FROM pragma_table_list "
                                       "WHERE schema = 'main' AND type = 'table' "
                                       "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        g_test_message("table %s", name);
        g_assert_cmpint(sqlite3_column_int(stmt, 1), ==, 1);
        g_ptr_array_add(seen, g_strdup(name));
    }
    g_assert_cmpint(rc, ==, SQLITE_DONE);

    /* Nothing beyond the suite's tables and the migrations ledger. */
    for (guint i = 0; tables[i] != NULL; i++, expected++)
        g_assert_true(g_ptr_array_find_with_equal_func(seen, tables[i], g_str_equal, NULL));
    g_assert_true(g_ptr_array_find_with_equal_func(seen, "schema_migrations", g_str_equal, NULL));
    g_assert_cmpuint(seen->len, ==, expected + 1);
}

/* Migrations */

static GPtrArray *
migration_list_new(void)
{
    return g_ptr_array_new_with_free_func((GDestroyNotify)einsora_migration_free);
}

static gboolean
apply(Fixture *f, GPtrArray *migrations, gint64 now_us, GError **error)
{
    return einsora_sqlite_store_migrate_with(f->store, migrations, now_us, error);
}

static gint64
version(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    gint64 v = einsora_migrations_get_version(handle(f), &error);

    g_assert_no_error(error);
    return v;
}

#define SQL_T1 "CREATE TABLE t1 (x INTEGER NOT NULL) STRICT;"
#define SQL_T1_ROW "INSERT INTO t1 (x) VALUES (1); CREATE TABLE t2 (y TEXT) STRICT;"

static void
test_migrations_in_order(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();
    g_autoptr(sqlite3_stmt) stmt = NULL;
    g_autofree gchar *applied_at = einsora_timestamp_format(BASE_US);

    g_assert_cmpint(version(f), ==, 0);
    /* Given out of order; 2 needs the table 1 creates. */
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_second", SQL_T1_ROW));
    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_first", SQL_T1));
    g_assert_true(apply(f, migrations, BASE_US, &error));
    g_assert_no_error(error);

    g_assert_cmpint(version(f), ==, 2);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM t1"), ==, 1);
    g_assert_true(table_exists(handle(f), "t2"));
    /* The caller's list is left as it was. */
    g_assert_cmpint(((EinsoraMigration *)g_ptr_array_index(migrations, 0))->version, ==, 2);

    g_assert_cmpint(sqlite3_prepare_v2(handle(f),
                                       "SELECT version, name, sha256, applied_at "
                                       "FROM schema_migrations ORDER BY version",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    for (gint64 v = 1; v <= 2; v++) {
        const EinsoraMigration *m = g_ptr_array_index(migrations, 2 - v);
        g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
        g_assert_cmpint(sqlite3_column_int64(stmt, 0), ==, v);
        g_assert_cmpstr((const char *)sqlite3_column_text(stmt, 1), ==, m->name);
        g_assert_cmpstr((const char *)sqlite3_column_text(stmt, 2), ==, m->sha256);
        g_assert_cmpstr((const char *)sqlite3_column_text(stmt, 3), ==, applied_at);
    }
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_DONE);
}

static void
test_migrations_gap_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();

    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_first", SQL_T1));
    g_ptr_array_add(migrations, einsora_migration_new(3, "00003_third", SQL_T1_ROW));
    g_assert_false(apply(f, migrations, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(error->message, "00003_third"));
    g_assert_cmpint(version(f), ==, 0);
    g_assert_false(table_exists(handle(f), "t1"));
    g_clear_error(&error);

    /* Versions start at 1. */
    g_ptr_array_remove_index(migrations, 0);
    g_assert_false(apply(f, migrations, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

static void
test_migrations_duplicate_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();

    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_first", SQL_T1));
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_second", SQL_T1_ROW));
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_other", "SELECT 1;"));
    g_assert_false(apply(f, migrations, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(error->message, "00002_other"));
    g_assert_nonnull(strstr(error->message, "00002_second"));
    g_assert_cmpint(version(f), ==, 0);
    g_assert_false(table_exists(handle(f), "t1"));
}

static void
test_migrations_newer_database_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();
    g_autoptr(GPtrArray) builtin = einsora_migrations_load_builtin(&error);
    g_autofree gchar *expected = NULL;

    g_assert_no_error(error);
    g_assert_true(
        sqlite3_exec(handle(f),
                     "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL, sha256 TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT;"
                     "INSERT INTO schema_migrations VALUES (99, '00099_future', 'x', "
                     "'2030-01-01T00:00:00.000000Z');",
                     NULL, NULL, NULL) == SQLITE_OK);

    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_first", SQL_T1));
    g_assert_false(apply(f, migrations, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
    g_assert_nonnull(strstr(error->message, "database schema version 99 is newer than this "
                                            "einsora-daemon supports (1): use a newer "
                                            "einsora-daemon"));
    g_clear_error(&error);

    /* The daemon's own list says the same with its own count. */
    g_assert_false(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    expected = g_strdup_printf("database schema version 99 is newer than this einsora-daemon "
                               "supports (%u): use a newer einsora-daemon",
                               builtin->len);
    g_assert_nonnull(strstr(error->message, expected));

    g_assert_cmpint(version(f), ==, 99);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM schema_migrations"), ==, 1);
    g_assert_false(table_exists(handle(f), "t1"));
    g_assert_false(table_exists(handle(f), "tenants"));
}

static void
test_migrations_edited_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) original = migration_list_new();
    g_autoptr(GPtrArray) edited = migration_list_new();

    g_ptr_array_add(original, einsora_migration_new(1, "00001_initial", SQL_T1));
    g_assert_true(apply(f, original, BASE_US, &error));
    g_assert_no_error(error);

    g_ptr_array_add(
        edited, einsora_migration_new(1, "00001_initial", "CREATE TABLE t1 (x INTEGER) STRICT;"));
    g_ptr_array_add(edited, einsora_migration_new(2, "00002_second", SQL_T1_ROW));
    g_assert_false(apply(f, edited, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    g_assert_nonnull(strstr(error->message, "migration 00001_initial was changed after it was "
                                            "applied"));
    g_assert_cmpint(version(f), ==, 1);
    g_assert_false(table_exists(handle(f), "t2"));
}

static void
test_migrations_rerun_is_noop(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();
    g_autofree gchar *first_applied = einsora_timestamp_format(BASE_US);
    g_autofree gchar *applied_at = NULL;

    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_first", SQL_T1));
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_second", SQL_T1_ROW));
    g_assert_true(apply(f, migrations, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_true(apply(f, migrations, BASE_US + G_USEC_PER_SEC, &error));
    g_assert_no_error(error);

    g_assert_cmpint(version(f), ==, 2);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM schema_migrations"), ==, 2);
    /* The INSERT in 2 ran once. */
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM t1"), ==, 1);
    applied_at = query_text(handle(f), "SELECT max(applied_at) FROM schema_migrations");
    g_assert_cmpstr(applied_at, ==, first_applied);

    /* A later list with one more applies just that one. */
    g_ptr_array_add(migrations,
                    einsora_migration_new(3, "00003_third", "INSERT INTO t1 (x) VALUES (3);"));
    g_assert_true(apply(f, migrations, BASE_US + 2 * G_USEC_PER_SEC, &error));
    g_assert_no_error(error);
    g_assert_cmpint(version(f), ==, 3);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM t1"), ==, 2);
}

static void
test_migrations_failure_rolls_back(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();

    g_ptr_array_add(migrations, einsora_migration_new(1, "00001_first", SQL_T1));
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_broken",
                                                      "CREATE TABLE t2 (y TEXT) STRICT;"
                                                      "INSERT INTO t1 (x) VALUES (2);"
                                                      "INSERT INTO no_such_table VALUES (1);"));
    g_assert_false(apply(f, migrations, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_nonnull(strstr(error->message, "migration 00002_broken: sqlite: "));

    /* 1 stays applied; nothing of 2 remains. */
    g_assert_cmpint(version(f), ==, 1);
    g_assert_true(table_exists(handle(f), "t1"));
    g_assert_false(table_exists(handle(f), "t2"));
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM t1"), ==, 0);
    g_assert_true(sqlite3_get_autocommit(handle(f)));
    g_assert_cmpint(query_int(handle(f), "PRAGMA foreign_keys"), ==, 1);
}

static void
test_migrations_foreign_key_check(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) migrations = migration_list_new();

    g_ptr_array_add(migrations,
                    einsora_migration_new(1, "00001_first",
                                          "CREATE TABLE parent (id TEXT PRIMARY KEY) STRICT;"
                                          "CREATE TABLE child (parent_id TEXT NOT NULL "
                                          "REFERENCES parent (id)) STRICT;"));
    g_ptr_array_add(migrations, einsora_migration_new(2, "00002_orphan",
                                                      "INSERT INTO child VALUES ('nobody');"));
    g_assert_false(apply(f, migrations, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    g_assert_nonnull(strstr(error->message, "00002_orphan"));
    g_assert_nonnull(strstr(error->message, "child"));
    g_assert_cmpint(version(f), ==, 1);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM child"), ==, 0);
}

static void
test_migrations_refused_in_transaction(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    EinsoraStore *store = EINSORA_STORE(f->store);

    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    g_assert_false(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_clear_error(&error);
    einsora_store_rollback(store);
    g_assert_cmpint(version(f), ==, 0);
}

static void
test_migrations_builtin(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) builtin = einsora_migrations_load_builtin(&error);
    const EinsoraMigration *first;

    g_assert_no_error(error);
    g_assert_nonnull(builtin);
    g_assert_cmpuint(builtin->len, >=, 1);
    for (guint i = 0; i < builtin->len; i++) {
        const EinsoraMigration *m = g_ptr_array_index(builtin, i);
        g_autofree gchar *sha256 = g_compute_checksum_for_string(G_CHECKSUM_SHA256, m->sql, -1);
        g_autofree gchar *prefix = g_strdup_printf("%05u_", i + 1);

        g_assert_cmpint(m->version, ==, (gint64)i + 1);
        g_assert_true(g_str_has_prefix(m->name, prefix));
        g_assert_cmpstr(m->sha256, ==, sha256);
    }
    first = g_ptr_array_index(builtin, 0);
    g_assert_cmpstr(first->name, ==, "00001_initial");

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_cmpint(version(f), ==, builtin->len);
    g_assert_true(table_exists(handle(f), "workload_events"));
    /* Again: a no-op. */
    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_cmpint(version(f), ==, builtin->len);
}

#define V1_TENANT "0190a000-0000-7000-8000-00000000000a"
#define V1_WORKLOAD "0190a000-0000-7000-8000-00000000000b"
#define V1_TIME "2026-01-01T00:00:00.000000Z"

static void
exec_ok(sqlite3 *db, const char *sql)
{
    char *message = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK)
        g_error("%s: %s", sql, message);
}

static void
insert_tenant_and_workload(sqlite3 *db)
{
    exec_ok(db, "INSERT INTO tenants (id, name, trusted, created_at) VALUES "
                "('" V1_TENANT "', 'acme', 0, '" V1_TIME "')");
    exec_ok(db, "INSERT INTO workloads (id, tenant_id, kind, name, state, region, gpu_class, "
                "image, gpus, attempt, version, created_by, created_at, updated_at) VALUES "
                "('" V1_WORKLOAD "', '" V1_TENANT "', 'notebook', 'n', 'running', 'local', "
                "'cpu-1c-2g', 'jupyter-linux', 0, 1, 3, 'ann', '" V1_TIME "', '" V1_TIME "')");
}

/* A database at version 1 (whose access_tickets nothing wrote, but which
 * could hold a row) moves to the ticket shape the proxy takes, keeping
 * everything else. */
static void
test_migrations_access_tickets_from_v1(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) builtin = einsora_migrations_load_builtin(&error);
    g_autoptr(GPtrArray) first = g_ptr_array_new();
    g_auto(GStrv) columns = NULL;
    g_autofree gchar *joined = NULL;

    g_assert_no_error(error);
    g_assert_cmpuint(builtin->len, >=, 2);
    g_ptr_array_add(first, g_ptr_array_index(builtin, 0));
    g_assert_true(apply(f, first, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_cmpint(version(f), ==, 1);
    insert_tenant_and_workload(handle(f));
    exec_ok(handle(f),
            "INSERT INTO access_tickets (ticket_sha256, tenant_id, workload_id, "
            "user_id, created_at, expires_at, used_at) VALUES ("
            "'0000000000000000000000000000000000000000000000000000000000000000', "
            "'" V1_TENANT "', '" V1_WORKLOAD "', 'ann', '" V1_TIME "', '" V1_TIME "', NULL)");

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_cmpint(version(f), ==, builtin->len);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM access_tickets"), ==, 0);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM workloads"), ==, 1);
    columns = query_strv(handle(f), "SELECT name FROM pragma_table_info(?1) ORDER BY name",
                         "access_tickets");
    joined = g_strjoinv(",", columns);
    g_assert_cmpstr(joined, ==,
                    "attempt,created_at,created_by,expires_at,tenant_id,ticket_sha256,workload_id");
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
                                         "AND name = 'access_tickets_expires_at'"),
                    ==, 1);
}

static void
test_check_ready(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    EinsoraStore *store = EINSORA_STORE(f->store);

    g_assert_false(einsora_store_check_ready(store, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_check_ready(store, &error));
    g_assert_no_error(error);
}

/* Each transaction's time is counted once, by how it ended; a rollback
 * with none open (after a failed commit) counts nothing. */
static gboolean
write_tenant(EinsoraStore *store, gpointer user_data, GError **error)
{
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(
        "0190a000-0000-7000-8000-0000000000aa", user_data, FALSE, "2026-01-01T00:00:00.000000Z");
    return einsora_store_insert_tenant(store, tenant, error);
}

static void
test_transaction_metrics(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMetrics) metrics = einsora_metrics_new();
    EinsoraStore *store = EINSORA_STORE(f->store);
    const char *const commit[] = {"commit", NULL};
    const char *const rollback[] = {"rollback", NULL};
    EinsoraMetric *transactions;
    g_autoptr(GString) text = NULL;

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    einsora_sqlite_store_set_metrics(f->store, metrics);
    transactions = einsora_metrics_histogram(metrics, "einsora_store_transaction_duration_seconds",
                                             "", (const char *const[]){"outcome", NULL}, NULL, 0);
    g_assert_nonnull(transactions);
    g_assert_cmpfloat(einsora_metric_get(transactions, commit), ==, 0);

    g_assert_true(einsora_store_in_transaction(store, write_tenant, "acme", &error));
    g_assert_no_error(error);
    g_assert_cmpfloat(einsora_metric_get(transactions, commit), ==, 1);
    /* The same ID again: the insert fails and the transaction rolls back. */
    g_assert_false(einsora_store_in_transaction(store, write_tenant, "acme", &error));
    g_clear_error(&error);
    g_assert_cmpfloat(einsora_metric_get(transactions, commit), ==, 1);
    g_assert_cmpfloat(einsora_metric_get(transactions, rollback), ==, 1);
    einsora_store_rollback(store);
    g_assert_cmpfloat(einsora_metric_get(transactions, rollback), ==, 1);
    g_assert_cmpfloat(einsora_metric_get_sum(transactions, commit), >=, 0);
    text = einsora_metrics_render(metrics);
    g_assert_nonnull(strstr(text->str, "einsora_store_transaction_duration_seconds_count{outcome="
                                       "\"commit\"} 1\n"));
}

/* The database file moved away under the store */

#define V1_USER "0190a000-0000-7000-8000-00000000000c"
#define V1_TOKEN "0190a000-0000-7000-8000-00000000000d"

static gchar *
token_revoked_at(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *hash = g_strnfill(64, 'a');
    g_autoptr(EinsoraApiToken) token =
        einsora_store_find_api_token(EINSORA_STORE(f->store), hash, &error);

    g_assert_no_error(error);
    return g_strdup(token->revoked_at);
}

/* A write that is its own transaction is checked as begin is: one answered
 * while the file is away would go to the orphan and be lost (a revoked
 * token revived) when the file returns. */
static void
test_moved_away_single_writes_refused(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *away = g_strconcat(f->path, ".away", NULL);
    g_autofree gchar *revoked_at = NULL;
    EinsoraStore *store = EINSORA_STORE(f->store);
    gboolean held = FALSE;

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    insert_tenant_and_workload(handle(f));
    exec_ok(handle(f), "INSERT INTO users (id, tenant_id, email, display_name, role, created_at) "
                       "VALUES ('" V1_USER "', '" V1_TENANT "', 'ann@example.com', 'Ann', "
                       "'owner', '" V1_TIME "')");
    exec_ok(handle(f), "INSERT INTO api_tokens (id, tenant_id, user_id, name, prefix, "
                       "token_sha256, created_at) VALUES ('" V1_TOKEN "', '" V1_TENANT
                       "', '" V1_USER "', 'cli', 'tsk_aaaa', printf('%.64c', 'a'), '" V1_TIME "')");

    g_assert_cmpint(rename(f->path, away), ==, 0);
    g_assert_false(
        einsora_store_revoke_api_token(store, V1_TENANT, V1_USER, V1_TOKEN, V1_TIME, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_clear_error(&error);
    g_assert_false(
        einsora_store_acquire_lease(store, "controller", "me", V1_TIME, V1_TIME, &held, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_clear_error(&error);
    g_assert_false(einsora_store_begin(store, &error));
    g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE);
    g_clear_error(&error);
    /* Reads go on. */
    revoked_at = token_revoked_at(f);
    g_assert_null(revoked_at);

    g_assert_cmpint(rename(away, f->path), ==, 0);
    g_assert_true(
        einsora_store_revoke_api_token(store, V1_TENANT, V1_USER, V1_TOKEN, V1_TIME, &error));
    g_assert_no_error(error);
    revoked_at = token_revoked_at(f);
    g_assert_cmpstr(revoked_at, ==, V1_TIME);
    g_assert_true(
        einsora_store_acquire_lease(store, "controller", "me", V1_TIME, V1_TIME, &held, &error));
    g_assert_no_error(error);
    g_assert_true(held);
}

/* A failed ROLLBACK */

/* Refuses ROLLBACK as many times as it is told: SQLite stays in the
 * transaction, as when ROLLBACK fails for real. */
static int
deny_rollback(void *data, int action, const char *arg1, const char *arg2, const char *database,
              const char *trigger)
{
    gint *denials = data;

    if (action == SQLITE_TRANSACTION && g_strcmp0(arg1, "ROLLBACK") == 0 && *denials > 0) {
        (*denials)--;
        return SQLITE_DENY;
    }
    return SQLITE_OK;
}

static void
insert_tenant(EinsoraStore *store, const char *id, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(id, name, FALSE, V1_TIME);

    g_assert_true(einsora_store_insert_tenant(store, tenant, &error));
    g_assert_no_error(error);
}

/* Once SQLite is still in a transaction the store thought ended, every
 * later BEGIN would fail, and a lone write would never be committed. */
static void
test_failed_rollback_recovers(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    EinsoraStore *store = EINSORA_STORE(f->store);
    gint denials = 0;

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    g_assert_cmpint(sqlite3_set_authorizer(handle(f), deny_rollback, &denials), ==, SQLITE_OK);

    /* Refused once: tried again at once. */
    denials = 1;
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    insert_tenant(store, V1_TENANT, "rolled-back");
    einsora_store_rollback(store);
    g_assert_cmpint(denials, ==, 0);
    g_assert_true(sqlite3_get_autocommit(handle(f)));
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM tenants"), ==, 0);

    /* Refused twice: ended before the next write. */
    denials = 2;
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    insert_tenant(store, V1_TENANT, "rolled-back");
    einsora_store_rollback(store);
    g_assert_cmpint(denials, ==, 0);
    g_assert_false(sqlite3_get_autocommit(handle(f)));
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM tenants"), ==, 0);
    insert_tenant(store, V1_TENANT, "committed");
    g_assert_true(einsora_store_commit(store, &error));
    g_assert_no_error(error);

    /* And a lone write, outside any transaction, is committed. */
    denials = 2;
    g_assert_true(einsora_store_begin(store, &error));
    g_assert_no_error(error);
    einsora_store_rollback(store);
    g_assert_false(sqlite3_get_autocommit(handle(f)));
    insert_tenant(store, "0190a000-0000-7000-8000-0000000000aa", "lone");
    g_assert_true(sqlite3_get_autocommit(handle(f)));
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM tenants"), ==, 2);
    g_assert_cmpint(sqlite3_set_authorizer(handle(f), NULL, NULL), ==, SQLITE_OK);
}

/* Two stores on one file: one writer at a time */

static EinsoraSqliteStore *
open_second(Fixture *f)
{
    g_autoptr(GError) error = NULL;
    EinsoraSqliteStore *second = NULL;

    g_assert_true(einsora_sqlite_store_migrate(f->store, BASE_US, &error));
    g_assert_no_error(error);
    second = einsora_sqlite_store_open(f->path, &error);
    g_assert_no_error(error);
    g_assert_nonnull(second);
    return second;
}

static void
test_two_stores_busy(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) second = open_second(f);
    gint64 started;
    gint64 waited;

    g_assert_true(einsora_store_begin(EINSORA_STORE(f->store), &error));
    g_assert_no_error(error);

    /* A short timeout proves the second begin waits on the lock and then
     * gets SQLITE_BUSY, without spending the real 15 s. */
    g_assert_cmpint(sqlite3_busy_timeout(einsora_sqlite_store_get_handle(second), 200), ==,
                    SQLITE_OK);
    started = g_get_monotonic_time();
    g_assert_false(einsora_store_begin(EINSORA_STORE(second), &error));
    waited = g_get_monotonic_time() - started;
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_cmpint(sqlite3_extended_errcode(einsora_sqlite_store_get_handle(second)), ==,
                    SQLITE_BUSY);
    g_assert_cmpint(waited, >=, 150 * 1000);
    g_assert_cmpint(waited, <, 5 * G_USEC_PER_SEC);
    g_clear_error(&error);

    /* Once the first lets go, the second gets in. */
    einsora_store_rollback(EINSORA_STORE(f->store));
    g_assert_true(einsora_store_begin(EINSORA_STORE(second), &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_commit(EINSORA_STORE(second), &error));
    g_assert_no_error(error);
}

static gpointer
release_later(gpointer data)
{
    g_autoptr(GError) error = NULL;
    EinsoraStore *store = data;

    g_usleep(300 * 1000);
    g_assert_true(einsora_store_commit(store, &error));
    g_assert_no_error(error);
    return NULL;
}

static void
test_two_stores_wait(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) second = open_second(f);
    g_autoptr(GThread) thread = NULL;
    gint64 started;
    gint64 waited;

    g_assert_true(einsora_store_begin(EINSORA_STORE(f->store), &error));
    g_assert_no_error(error);
    thread = g_thread_new("release-later", release_later, f->store);

    /* With the real timeout, the second begin waits for the commit. */
    started = g_get_monotonic_time();
    g_assert_true(einsora_store_begin(EINSORA_STORE(second), &error));
    waited = g_get_monotonic_time() - started;
    g_assert_no_error(error);
    g_assert_cmpint(waited, >=, 200 * 1000);
    g_assert_true(einsora_store_commit(EINSORA_STORE(second), &error));
    g_assert_no_error(error);
    g_thread_join(g_steal_pointer(&thread));
}

/* Two connections race to take the same tickets, from both ends: each is
 * taken exactly once, whichever connection's DELETE gets it. */

#define RACE_TICKETS 300

typedef struct {
    EinsoraStore *store;
    GPtrArray *hashes;
    const char *now;
    gint *gate;       /* both start when it opens */
    gboolean reverse; /* the racers meet in the middle */
    GPtrArray *taken; /* borrowed from hashes */
} TicketRacer;

static gpointer
take_every_ticket(gpointer data)
{
    TicketRacer *racer = data;

    while (!g_atomic_int_get(racer->gate))
        g_thread_yield();
    for (guint i = 0; i < racer->hashes->len; i++) {
        g_autoptr(GError) error = NULL;
        const char *hash =
            g_ptr_array_index(racer->hashes, racer->reverse ? racer->hashes->len - 1 - i : i);
        g_autoptr(EinsoraAccessTicket) ticket =
            einsora_store_take_access_ticket(racer->store, hash, racer->now, &error);
        if (ticket != NULL) {
            g_assert_cmpstr(ticket->hash, ==, hash);
            g_ptr_array_add(racer->taken, (gpointer)hash);
        } else {
            g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND);
        }
        /* Room for the other connection, whose busy handler backs off:
         * without it one racer takes everything before the other wakes. */
        g_usleep(500);
    }
    return NULL;
}

static void
test_two_stores_take_ticket_once(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraSqliteStore) second = open_second(f);
    g_autoptr(GPtrArray) hashes = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    g_autofree gchar *now = einsora_timestamp_format(BASE_US + G_USEC_PER_SEC);
    g_autofree gchar *expires_at = einsora_timestamp_format(BASE_US + 60 * G_USEC_PER_SEC);
    gint gate = 0;
    TicketRacer racers[2] = {
        {EINSORA_STORE(f->store), hashes, now, &gate, FALSE, g_ptr_array_new()},
        {EINSORA_STORE(second), hashes, now, &gate, TRUE, g_ptr_array_new()},
    };
    GThread *threads[2];

    insert_tenant_and_workload(handle(f));
    for (guint i = 0; i < RACE_TICKETS; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraAccessTicket) ticket = einsora_access_ticket_new();
        g_autofree gchar *secret = g_strdup_printf("tkt_race_%u", i);

        ticket->hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, secret, -1);
        ticket->tenant_id = g_strdup(V1_TENANT);
        ticket->workload_id = g_strdup(V1_WORKLOAD);
        ticket->attempt = 1;
        ticket->created_by = g_strdup("ann");
        ticket->created_at = einsora_timestamp_format(BASE_US);
        ticket->expires_at = g_strdup(expires_at);
        g_assert_true(einsora_store_insert_access_ticket(EINSORA_STORE(f->store), ticket, &error));
        g_assert_no_error(error);
        g_ptr_array_add(hashes, g_steal_pointer(&ticket->hash));
    }

    for (guint i = 0; i < G_N_ELEMENTS(racers); i++)
        threads[i] = g_thread_new("ticket-racer", take_every_ticket, &racers[i]);
    g_atomic_int_set(&gate, 1);
    for (guint i = 0; i < G_N_ELEMENTS(racers); i++)
        g_thread_join(threads[i]);

    g_test_message("taken: %u and %u", racers[0].taken->len, racers[1].taken->len);
    g_assert_cmpuint(racers[0].taken->len + racers[1].taken->len, ==, RACE_TICKETS);
    for (guint r = 0; r < G_N_ELEMENTS(racers); r++) {
        for (guint i = 0; i < racers[r].taken->len; i++)
            g_assert_true(g_hash_table_add(seen, g_ptr_array_index(racers[r].taken, i)));
        g_ptr_array_unref(racers[r].taken);
    }
    g_assert_cmpint(query_int(handle(f), "SELECT count(*) FROM access_tickets"), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    einsora_store_conformance_add_tests(&sqlite_harness);

    g_test_add("/sqlite/open/refuses-memory-and-uris", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_memory_and_uris, fixture_tear_down);
    g_test_add("/sqlite/open/refuses-writable-directory", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_writable_dir, fixture_tear_down);
    g_test_add("/sqlite/open/refuses-missing-directory", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_missing_dir, fixture_tear_down);
    g_test_add("/sqlite/open/refuses-file-mode", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_file_mode, fixture_tear_down);
    g_test_add("/sqlite/open/refuses-symlink", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_symlink, fixture_tear_down);
    g_test_add("/sqlite/open/refuses-directory", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_directory, fixture_tear_down);
    g_test_add("/sqlite/open/refuses-companion-files", Fixture, NULL, fixture_set_up_dir,
               test_open_refuses_companion_files, fixture_tear_down);
    g_test_add("/sqlite/open/creates-private-files", Fixture, NULL, fixture_set_up_dir,
               test_open_creates_private_files, fixture_tear_down);
    g_test_add("/sqlite/open/resolves-relative-path", Fixture, NULL, fixture_set_up_dir,
               test_open_resolves_relative_path, fixture_tear_down);
    g_test_add("/sqlite/pragmas", Fixture, NULL, fixture_set_up_store, test_pragmas,
               fixture_tear_down);
    g_test_add("/sqlite/schema/strict", Fixture, NULL, fixture_set_up_store, test_schema_strict,
               fixture_tear_down);
    g_test_add("/sqlite/migrations/in-order", Fixture, NULL, fixture_set_up_store,
               test_migrations_in_order, fixture_tear_down);
    g_test_add("/sqlite/migrations/gap-refused", Fixture, NULL, fixture_set_up_store,
               test_migrations_gap_refused, fixture_tear_down);
    g_test_add("/sqlite/migrations/duplicate-refused", Fixture, NULL, fixture_set_up_store,
               test_migrations_duplicate_refused, fixture_tear_down);
    g_test_add("/sqlite/migrations/newer-database-refused", Fixture, NULL, fixture_set_up_store,
               test_migrations_newer_database_refused, fixture_tear_down);
    g_test_add("/sqlite/migrations/edited-refused", Fixture, NULL, fixture_set_up_store,
               test_migrations_edited_refused, fixture_tear_down);
    g_test_add("/sqlite/migrations/rerun-is-noop", Fixture, NULL, fixture_set_up_store,
               test_migrations_rerun_is_noop, fixture_tear_down);
    g_test_add("/sqlite/migrations/failure-rolls-back", Fixture, NULL, fixture_set_up_store,
               test_migrations_failure_rolls_back, fixture_tear_down);
    g_test_add("/sqlite/migrations/foreign-key-check", Fixture, NULL, fixture_set_up_store,
               test_migrations_foreign_key_check, fixture_tear_down);
    g_test_add("/sqlite/migrations/refused-in-transaction", Fixture, NULL, fixture_set_up_store,
               test_migrations_refused_in_transaction, fixture_tear_down);
    g_test_add("/sqlite/migrations/builtin", Fixture, NULL, fixture_set_up_store,
               test_migrations_builtin, fixture_tear_down);
    g_test_add("/sqlite/migrations/00002-replaces-access-tickets", Fixture, NULL,
               fixture_set_up_store, test_migrations_access_tickets_from_v1, fixture_tear_down);
    g_test_add("/sqlite/check-ready", Fixture, NULL, fixture_set_up_store, test_check_ready,
               fixture_tear_down);
    g_test_add("/sqlite/moved-away/single-statement-writes-refused", Fixture, NULL,
               fixture_set_up_store, test_moved_away_single_writes_refused, fixture_tear_down);
    g_test_add("/sqlite/transactions/failed-rollback-recovers", Fixture, NULL, fixture_set_up_store,
               test_failed_rollback_recovers, fixture_tear_down);
    g_test_add("/sqlite/transactions/counted-in-metrics", Fixture, NULL, fixture_set_up_store,
               test_transaction_metrics, fixture_tear_down);
    g_test_add("/sqlite/two-stores/busy", Fixture, NULL, fixture_set_up_store, test_two_stores_busy,
               fixture_tear_down);
    g_test_add("/sqlite/two-stores/wait", Fixture, NULL, fixture_set_up_store, test_two_stores_wait,
               fixture_tear_down);
    g_test_add("/sqlite/two-stores/ticket-taken-once", Fixture, NULL, fixture_set_up_store,
               test_two_stores_take_ticket_once, fixture_tear_down);

    return g_test_run();
}
