#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store.h"

#include "einsora-sqlite-store-private.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-error.h"

#define BUSY_TIMEOUT_MS 15000
#define PRIVATE_FILE_MODE 0600

static void einsora_sqlite_store_iface_init(EinsoraStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraSqliteStore, einsora_sqlite_store, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_STORE,
                                                    einsora_sqlite_store_iface_init))

/* Opening: the file must stay private. */

static gboolean
check_path_form(const char *path, GError **error)
{
    if (path == NULL || path[0] == '\0') {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "refusing to use an empty database path");
        return FALSE;
    }
    /* SQLite would read these as something other than the file we check. */
    if (g_strcmp0(path, ":memory:") == 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "refusing to use %s: the store needs a private file", path);
        return FALSE;
    }
    if (g_str_has_prefix(path, "file:")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "refusing to use %s: SQLite URIs are not accepted; give a file path", path);
        return FALSE;
    }
    return TRUE;
}

static gboolean
check_directory(const char *path, GError **error)
{
    g_autofree gchar *dir = g_path_get_dirname(path);
    struct stat st;

    if (stat(dir, &st) != 0) {
        int saved_errno = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno),
                    "refusing to use %s: its directory %s: %s", path, dir, g_strerror(saved_errno));
        return FALSE;
    }
    if (!S_ISDIR(st.st_mode)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_DIRECTORY,
                    "refusing to use %s: %s is not a directory", path, dir);
        return FALSE;
    }
    /* Whoever can write the directory can swap the files in it. */
    if ((st.st_mode & 022) != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                    "refusing to use %s: its directory %s is writable by group or others "
                    "(mode %04o), who could swap the database; only its owner may write to it "
                    "(chmod go-w %s)",
                    path, dir, (guint)(st.st_mode & 07777), dir);
        return FALSE;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                    "refusing to use %s: its directory %s is owned by uid %u; it must be "
                    "owned by this user (uid %u) or root",
                    path, dir, (guint)st.st_uid, (guint)geteuid());
        return FALSE;
    }
    return TRUE;
}

/* lstat, so that a symbolic link is refused rather than followed. */
static gboolean
check_private_file(const char *file, gboolean *exists, GError **error)
{
    struct stat st;

    if (lstat(file, &st) != 0) {
        int saved_errno = errno;
        if (saved_errno == ENOENT) {
            *exists = FALSE;
            return TRUE;
        }
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno), "refusing to use %s: %s",
                    file, g_strerror(saved_errno));
        return FALSE;
    }
    *exists = TRUE;
    if (S_ISLNK(st.st_mode)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE,
                    "refusing to use %s: it is a symbolic link; it must be a regular file", file);
        return FALSE;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE,
                    "refusing to use %s: it is not a regular file", file);
        return FALSE;
    }
    if (st.st_uid != geteuid()) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                    "refusing to use %s: it is owned by uid %u; it must be owned by this "
                    "user (uid %u)",
                    file, (guint)st.st_uid, (guint)geteuid());
        return FALSE;
    }
    if ((st.st_mode & 07777) != PRIVATE_FILE_MODE) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                    "refusing to use %s: its mode is %04o; it must be %04o", file,
                    (guint)(st.st_mode & 07777), (guint)PRIVATE_FILE_MODE);
        return FALSE;
    }
    return TRUE;
}

/* The database and every file SQLite keeps beside it. */
static gboolean
check_private_files(const char *path, gboolean *db_exists, GError **error)
{
    const char *const suffixes[] = {"-wal", "-shm", "-journal"};

    if (!check_private_file(path, db_exists, error))
        return FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *file = g_strconcat(path, suffixes[i], NULL);
        gboolean exists = FALSE;
        if (!check_private_file(file, &exists, error))
            return FALSE;
    }
    return TRUE;
}

/* Einsora's databases are WAL and never leave a rollback journal: one
 * beside the file is another program's (a crash mid-transaction), and
 * SQLite would replay it into the file at the first read. */
static gboolean
check_no_rollback_journal(const char *path, GError **error)
{
    g_autofree gchar *journal = g_strconcat(path, "-journal", NULL);
    gboolean exists = FALSE;

    if (!check_private_file(journal, &exists, error))
        return FALSE;
    if (exists) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                    "refusing to use %s: %s is a rollback journal another program left; SQLite "
                    "would replay it into %s; open the database with that program first, or "
                    "move both away",
                    path, journal, path);
        return FALSE;
    }
    return TRUE;
}

static gboolean
create_private_file(const char *path, GError **error)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, PRIVATE_FILE_MODE);

    if (fd < 0) {
        int saved_errno = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno),
                    "refusing to use %s: cannot create it: %s", path, g_strerror(saved_errno));
        return FALSE;
    }
    /* The umask may have removed bits; say exactly what is meant. */
    if (fchmod(fd, PRIVATE_FILE_MODE) != 0) {
        int saved_errno = errno;
        close(fd);
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno),
                    "refusing to use %s: cannot set its mode: %s", path, g_strerror(saved_errno));
        return FALSE;
    }
    close(fd);
    return TRUE;
}

/* SQL helpers; the parts use those einsora-sqlite-store-private.h declares. */

static gboolean
exec_sql(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    return einsora_sqlite_exec(self->db, sql, error);
}

gboolean
einsora_sqlite_store_step_write(EinsoraSqliteStore *self, sqlite3_stmt *stmt,
                                const char *conflict_message, const char *missing_message,
                                GError **error)
{
    int rc = sqlite3_step(stmt);

    switch (rc) {
    case SQLITE_DONE:
        return TRUE;
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
    /* workload_events refuses a colliding insert in a trigger (so REPLACE
     * can't rewrite the timeline): the same conflict as a duplicate key. */
    case SQLITE_CONSTRAINT_TRIGGER:
        if (conflict_message == NULL)
            return set_sqlite_error(self, error);
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT, conflict_message);
        return FALSE;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
        if (missing_message == NULL)
            return set_sqlite_error(self, error);
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, missing_message);
        return FALSE;
    default:
        return set_sqlite_error(self, error);
    }
}

gboolean
einsora_sqlite_store_step_one(EinsoraSqliteStore *self, sqlite3_stmt *stmt, const char *missing,
                              GError **error)
{
    int rc = sqlite3_step(stmt);

    if (rc == SQLITE_ROW)
        return TRUE;
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, missing);
    else
        set_sqlite_error(self, error);
    return FALSE;
}

/* Whether the path still leads to the file opened, and this user may
 * still read and write it. The file itself is never opened here: closing
 * a second descriptor would drop SQLite's POSIX locks on it. */
static gboolean
check_in_place(EinsoraSqliteStore *self, GError **error)
{
    struct stat st;

    if (lstat(self->path, &st) != 0) {
        int saved_errno = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno),
                    "the database file %s is gone since the daemon opened it (moved or "
                    "removed?): %s",
                    self->path, g_strerror(saved_errno));
        return FALSE;
    }
    if (st.st_dev != self->dev || st.st_ino != self->ino) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                    "the database file %s was replaced since the daemon opened it; restart "
                    "einsora-daemon to use the new one",
                    self->path);
        return FALSE;
    }
    if (access(self->path, R_OK | W_OK) != 0) {
        int saved_errno = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved_errno),
                    "the database file %s can't be read and written: %s", self->path,
                    g_strerror(saved_errno));
        return FALSE;
    }
    return TRUE;
}

/* Before BEGIN, and before a write outside a transaction (which is its
 * own transaction). */
static gboolean
check_writable(EinsoraSqliteStore *self, GError **error)
{
    g_autoptr(GError) local_error = NULL;

    /* A change written to a file no longer at its path may be lost (a
     * removed file is gone at close): nothing is acknowledged until it
     * is back. */
    if (!check_in_place(self, &local_error)) {
        g_message("storage failed: %s", local_error->message);
        einsora_sqlite_set_unavailable(FALSE, error);
        return FALSE;
    }
    /* One SQLite still holds after ROLLBACK failed twice (see rollback)
     * would make BEGIN fail for good, and swallow a lone write: end it. */
    if (!sqlite3_get_autocommit(self->db) && !exec_sql(self, "ROLLBACK", error))
        return FALSE;
    return TRUE;
}

sqlite3_stmt *
einsora_sqlite_store_prepare_write(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    if (!self->in_transaction && !check_writable(self, error))
        return NULL;
    return prepare(self, sql, error);
}

/* Transactions */

static gboolean
einsora_sqlite_store_begin(EinsoraStore *store, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);

    /* One connection has one transaction; a nested begin is a bug in the
     * caller, and SQLite would refuse it anyway. */
    if (self->in_transaction) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "a transaction is already open on this store; transactions "
                            "never nest");
        return FALSE;
    }
    if (!check_writable(self, error))
        return FALSE;
    /* IMMEDIATE takes the write lock now, so reads inside are never stale
     * and another process waits here rather than failing at commit. */
    self->began_us = g_get_monotonic_time();
    if (!exec_sql(self, "BEGIN IMMEDIATE", error)) {
        self->began_us = 0;
        return FALSE;
    }
    self->in_transaction = TRUE;
    return TRUE;
}

static void
transaction_ended(EinsoraSqliteStore *self, const char *outcome)
{
    if (self->began_us == 0)
        return;
    einsora_metric_observe(self->transactions, (const char *const[]){outcome, NULL},
                           einsora_metrics_seconds(self->began_us, g_get_monotonic_time()));
    self->began_us = 0;
}

static gboolean
einsora_sqlite_store_commit(EinsoraStore *store, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);

    if (!self->in_transaction) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "no transaction is open on this store");
        return FALSE;
    }
    if (!exec_sql(self, "COMMIT", error)) {
        /* Still open unless SQLite rolled it back itself; the caller rolls
         * back. */
        self->in_transaction = !sqlite3_get_autocommit(self->db);
        return FALSE;
    }
    self->in_transaction = FALSE;
    transaction_ended(self, "commit");
    return TRUE;
}

static void
einsora_sqlite_store_rollback(EinsoraStore *store)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);

    /* A failed ROLLBACK leaves SQLite in the transaction: try once more. */
    for (guint tries = 0; tries < 2 && !sqlite3_get_autocommit(self->db); tries++) {
        g_autoptr(GError) error = NULL;
        if (!exec_sql(self, "ROLLBACK", &error))
            g_message("rolling back: %s", error->message);
    }
    /* The caller's transaction is over either way (it will begin anew, not
     * commit): what SQLite may still hold, check_writable ends before the
     * next write. */
    self->in_transaction = FALSE;
    transaction_ended(self, "rollback");
}

static gboolean
einsora_sqlite_store_check_ready(EinsoraStore *store, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(GPtrArray) builtin = einsora_migrations_load_builtin(error);
    gint64 version;

    if (builtin == NULL)
        return FALSE;
    if (!check_in_place(self, error))
        return FALSE;
    version = einsora_migrations_get_version(self->db, error);
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
einsora_sqlite_store_iface_init(EinsoraStoreInterface *iface)
{
    iface->begin = einsora_sqlite_store_begin;
    iface->commit = einsora_sqlite_store_commit;
    iface->rollback = einsora_sqlite_store_rollback;
    iface->check_ready = einsora_sqlite_store_check_ready;
    iface->insert_tenant = einsora_sqlite_store_insert_tenant;
    iface->get_tenant = einsora_sqlite_store_get_tenant;
    iface->find_tenant_by_name = einsora_sqlite_store_find_tenant_by_name;
    iface->set_quota = einsora_sqlite_store_set_quota;
    iface->get_quota = einsora_sqlite_store_get_quota;
    iface->gpus_by_state = einsora_sqlite_store_gpus_by_state;
    iface->insert_machine = einsora_sqlite_store_insert_machine;
    iface->get_machine = einsora_sqlite_store_get_machine;
    iface->list_machines = einsora_sqlite_store_list_machines;
    iface->insert_workload = einsora_sqlite_store_insert_workload;
    iface->get_workload = einsora_sqlite_store_get_workload;
    iface->list_workloads = einsora_sqlite_store_list_workloads;
    iface->list_region_workloads = einsora_sqlite_store_list_region_workloads;
    iface->acquire_lease = einsora_sqlite_store_acquire_lease;
    iface->find_machine = einsora_sqlite_store_find_machine;
    iface->find_machine_by_certificate = einsora_sqlite_store_find_machine_by_certificate;
    iface->list_region_machines = einsora_sqlite_store_list_region_machines;
    iface->record_machine_seen = einsora_sqlite_store_record_machine_seen;
    iface->list_machine_workloads = einsora_sqlite_store_list_machine_workloads;
    iface->release_lease = einsora_sqlite_store_release_lease;
    iface->update_workload_state = einsora_sqlite_store_update_workload_state;
    iface->append_event = einsora_sqlite_store_append_event;
    iface->list_events = einsora_sqlite_store_list_events;
    iface->list_tenant_events = einsora_sqlite_store_list_tenant_events;
    iface->last_event_seq = einsora_sqlite_store_last_event_seq;
    iface->insert_user = einsora_sqlite_store_insert_user;
    iface->get_user = einsora_sqlite_store_get_user;
    iface->find_user_by_email = einsora_sqlite_store_find_user_by_email;
    iface->count_users = einsora_sqlite_store_count_users;
    iface->list_users = einsora_sqlite_store_list_users;
    iface->revoke_user_sessions = einsora_sqlite_store_revoke_user_sessions;
    iface->set_machine_sharing = einsora_sqlite_store_set_machine_sharing;
    iface->clear_machine_certificate = einsora_sqlite_store_clear_machine_certificate;
    iface->set_user_disabled = einsora_sqlite_store_set_user_disabled;
    iface->set_user_password = einsora_sqlite_store_set_user_password;
    iface->list_tenants = einsora_sqlite_store_list_tenants;
    iface->insert_audit_event = einsora_sqlite_store_insert_audit_event;
    iface->list_audit_events = einsora_sqlite_store_list_audit_events;
    iface->count_workloads_with_model = einsora_sqlite_store_count_workloads_with_model;
    iface->count_workloads = einsora_sqlite_store_count_workloads;
    iface->insert_api_token = einsora_sqlite_store_insert_api_token;
    iface->find_api_token = einsora_sqlite_store_find_api_token;
    iface->list_api_tokens = einsora_sqlite_store_list_api_tokens;
    iface->revoke_api_token = einsora_sqlite_store_revoke_api_token;
    iface->touch_api_token = einsora_sqlite_store_touch_api_token;
    iface->insert_session = einsora_sqlite_store_insert_session;
    iface->find_session = einsora_sqlite_store_find_session;
    iface->revoke_session = einsora_sqlite_store_revoke_session;
    iface->get_idempotency_record = einsora_sqlite_store_get_idempotency_record;
    iface->insert_idempotency_record = einsora_sqlite_store_insert_idempotency_record;
    iface->delete_expired_idempotency_records =
        einsora_sqlite_store_delete_expired_idempotency_records;
    iface->insert_access_ticket = einsora_sqlite_store_insert_access_ticket;
    iface->take_access_ticket = einsora_sqlite_store_take_access_ticket;
    iface->insert_enrolment = einsora_sqlite_store_insert_enrolment;
    iface->take_enrolment = einsora_sqlite_store_take_enrolment;
    iface->list_workloads_with_events_after = einsora_sqlite_store_list_workloads_with_events_after;
    iface->list_workloads_in_state = einsora_sqlite_store_list_workloads_in_state;
    iface->replace_usage_records = einsora_sqlite_store_replace_usage_records;
    iface->list_usage_records = einsora_sqlite_store_list_usage_records;
    iface->get_metering_cursor = einsora_sqlite_store_get_metering_cursor;
    iface->set_metering_cursor = einsora_sqlite_store_set_metering_cursor;
}

EinsoraSqliteCachedStmt *
einsora_sqlite_store_prepare_cached(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    sqlite3_stmt *stmt = g_hash_table_lookup(self->statements, sql);

    if (stmt != NULL)
        return stmt;
    stmt = prepare(self, sql, error);
    if (stmt != NULL)
        g_hash_table_insert(self->statements, g_strdup(sql), stmt);
    return stmt;
}

EinsoraSqliteCachedStmt *
einsora_sqlite_store_prepare_cached_write(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    if (!self->in_transaction && !check_writable(self, error))
        return NULL;
    return einsora_sqlite_store_prepare_cached(self, sql, error);
}

static void
einsora_sqlite_store_finalize(GObject *object)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(object);

    /* Finalized before the connection closes. */
    g_hash_table_unref(self->statements);
    if (self->db != NULL) {
        if (!sqlite3_get_autocommit(self->db))
            sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close_v2(self->db);
    }
    g_free(self->path);
    g_clear_object(&self->metrics);
    G_OBJECT_CLASS(einsora_sqlite_store_parent_class)->finalize(object);
}

static void
einsora_sqlite_store_class_init(EinsoraSqliteStoreClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_sqlite_store_finalize;
}

static void
finalize_statement(gpointer stmt)
{
    sqlite3_finalize(stmt);
}

static void
einsora_sqlite_store_init(EinsoraSqliteStore *self)
{
    self->now = einsora_now_real;
    self->statements = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, finalize_statement);
}

static gboolean
query_text(EinsoraSqliteStore *self, const char *sql, gchar **value, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt = prepare(self, sql, error);

    if (stmt == NULL)
        return FALSE;
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return set_sqlite_error(self, error);
    *value = column_strdup(stmt, 0);
    return TRUE;
}

/* A file SQLite can't read as a database, or finds damaged: said in words
 * an operator can act on. */
static gboolean
refuse_unreadable(EinsoraSqliteStore *self, GError **error)
{
    int code = sqlite3_extended_errcode(self->db) & 0xff;

    if (code == SQLITE_NOTADB) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s is not a database (SQLite: %s): it is corrupt, or another kind of file; "
                    "restore it from a backup, or move it away to start afresh",
                    self->path, sqlite3_errmsg(self->db));
        return FALSE;
    }
    if (code == SQLITE_CORRUPT) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s is corrupt (SQLite: %s); restore it from a backup, or move it away to "
                    "start afresh",
                    self->path, sqlite3_errmsg(self->db));
        return FALSE;
    }
    set_sqlite_error(self, error);
    g_prefix_error(error, "refusing to use %s: ", self->path);
    return FALSE;
}

/* Before anything is written (WAL mode alone rewrites the header), the
 * file must be new (no tables) or an Einsora database SQLite finds intact;
 * one refused here is left exactly as it was. */
static gboolean
check_contents(EinsoraSqliteStore *self, GError **error)
{
    g_autoptr(sqlite3_stmt) tables = NULL;
    g_autoptr(sqlite3_stmt) check = NULL;
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_auto(GStrv) names = NULL;
    guint count = 0;
    gboolean ours = FALSE;
    int rc;

    if (sqlite3_prepare_v2(self->db,
                           "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND "
                           "name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
                           -1, &tables, NULL) != SQLITE_OK)
        return refuse_unreadable(self, error);
    while ((rc = sqlite3_step(tables)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        if (g_strcmp0(name, "schema_migrations") == 0)
            ours = TRUE;
        /* A few names say whose it is; all of them would be noise. */
        if (count++ < 5)
            g_strv_builder_add(builder, name);
    }
    if (rc != SQLITE_DONE)
        return refuse_unreadable(self, error);
    names = g_strv_builder_end(builder);
    if (names[0] == NULL)
        return TRUE;
    if (!ours) {
        g_autofree gchar *list = g_strjoinv(", ", names);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s is not an Einsora database: it has tables (%s%s) but no "
                    "schema_migrations; nothing was changed in it; give einsora-daemon a data "
                    "directory of its own",
                    self->path, list, count > 5 ? ", ..." : "");
        return FALSE;
    }
    /* quick_check reads every page but skips the slow index cross-checks:
     * a damaged file is found at start, not by some later request. */
    if (sqlite3_prepare_v2(self->db, "PRAGMA quick_check(1)", -1, &check, NULL) != SQLITE_OK ||
        sqlite3_step(check) != SQLITE_ROW)
        return refuse_unreadable(self, error);
    if (g_strcmp0((const char *)sqlite3_column_text(check, 0), "ok") != 0) {
        /* One line: the report may run over several. */
        g_autofree gchar *report = g_strdelimit(column_strdup(check, 0), "\r\n", ' ');
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s is corrupt (SQLite's quick_check: %s); restore it from a backup, or move "
                    "it away to start afresh",
                    self->path, report);
        return FALSE;
    }
    return TRUE;
}

/* Connection settings every store relies on; each is read back, since
 * SQLite ignores a pragma it cannot honour. */
static gboolean
configure_connection(EinsoraSqliteStore *self, GError **error)
{
    g_autofree gchar *journal_mode = NULL;
    g_autofree gchar *foreign_keys = NULL;

    if (!query_text(self, "PRAGMA journal_mode = WAL", &journal_mode, error))
        return FALSE;
    if (g_ascii_strcasecmp(journal_mode, "wal") != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                    "SQLite kept journal mode %s instead of WAL", journal_mode);
        return FALSE;
    }
    if (!exec_sql(self, "PRAGMA foreign_keys = ON", error) ||
        !query_text(self, "PRAGMA foreign_keys", &foreign_keys, error))
        return FALSE;
    if (g_strcmp0(foreign_keys, "1") != 0) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            "this SQLite does not enforce foreign keys");
        return FALSE;
    }
    return exec_sql(self, "PRAGMA synchronous = FULL", error);
}

EinsoraSqliteStore *
einsora_sqlite_store_open(const char *path, GError **error)
{
    g_autoptr(EinsoraSqliteStore) self = NULL;
    g_autofree gchar *absolute = NULL;
    g_autofree gchar *wal = NULL;
    gboolean exists = FALSE;
    gboolean had_wal;
    struct stat st;
    int rc;

    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    if (!check_path_form(path, error))
        return NULL;
    absolute = g_canonicalize_filename(path, NULL);
    if (!check_directory(absolute, error))
        return NULL;
    if (!check_private_files(absolute, &exists, error))
        return NULL;
    if (!check_no_rollback_journal(absolute, error))
        return NULL;
    if (!exists && !create_private_file(absolute, error))
        return NULL;

    self = g_object_new(EINSORA_TYPE_SQLITE_STORE, NULL);
    self->path = g_steal_pointer(&absolute);
    wal = g_strconcat(self->path, "-wal", NULL);
    had_wal = g_file_test(wal, G_FILE_TEST_EXISTS);
    rc = sqlite3_open_v2(self->path, &self->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                             SQLITE_OPEN_EXRESCODE,
                         NULL);
    if (rc != SQLITE_OK) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot open %s: sqlite: %s", self->path,
                    self->db != NULL ? sqlite3_errmsg(self->db) : sqlite3_errstr(rc));
        return NULL;
    }
    if (sqlite3_busy_timeout(self->db, BUSY_TIMEOUT_MS) != SQLITE_OK) {
        set_sqlite_error(self, error);
        return NULL;
    }
    /* Closing the last connection checkpoints the WAL into the file and
     * removes -wal and -shm. A WAL another program left may hold what its
     * file doesn't yet, and a refused file must stay as it was: no
     * checkpoint while one is there. (One SQLite makes while reading here
     * is empty; removing it leaves the file as found.) Checkpoints return
     * once the file is accepted, so that shutdown makes one. */
    if (sqlite3_db_config(self->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, had_wal ? 1 : 0, NULL) !=
        SQLITE_OK) {
        set_sqlite_error(self, error);
        return NULL;
    }
    if (!check_contents(self, error))
        return NULL;
    if (!configure_connection(self, error)) {
        g_prefix_error(error, "refusing to use %s: ", self->path);
        return NULL;
    }
    /* WAL mode brings -wal and -shm files: check what SQLite made. */
    if (!check_private_files(self->path, &exists, error))
        return NULL;
    if (!exists || lstat(self->path, &st) != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "refusing to use %s: it disappeared while opening", self->path);
        return NULL;
    }
    self->dev = st.st_dev;
    self->ino = st.st_ino;
    if (sqlite3_db_config(self->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL) != SQLITE_OK) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&self);
}

gboolean
einsora_sqlite_store_migrate_with(EinsoraSqliteStore *self, GPtrArray *migrations, gint64 now_us,
                                  GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SQLITE_STORE(self), FALSE);
    g_return_val_if_fail(migrations != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (self->in_transaction) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "migrations cannot run inside a transaction");
        return FALSE;
    }
    if (!einsora_migrations_apply(self->db, migrations, now_us, error)) {
        g_prefix_error(error, "%s: ", self->path);
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_sqlite_store_migrate(EinsoraSqliteStore *self, gint64 now_us, GError **error)
{
    g_autoptr(GPtrArray) migrations = NULL;

    g_return_val_if_fail(EINSORA_IS_SQLITE_STORE(self), FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    migrations = einsora_migrations_load_builtin(error);
    if (migrations == NULL)
        return FALSE;
    return einsora_sqlite_store_migrate_with(self, migrations, now_us, error);
}

void
einsora_sqlite_store_set_clock(EinsoraSqliteStore *self, EinsoraNowFunc now, gpointer now_data)
{
    g_return_if_fail(EINSORA_IS_SQLITE_STORE(self));
    g_return_if_fail(now != NULL);

    self->now = now;
    self->now_data = now_data;
}

void
einsora_sqlite_store_set_metrics(EinsoraSqliteStore *self, EinsoraMetrics *metrics)
{
    g_return_if_fail(EINSORA_IS_SQLITE_STORE(self));
    g_return_if_fail(EINSORA_IS_METRICS(metrics));
    g_set_object(&self->metrics, metrics);
    self->transactions = einsora_store_transactions_metric(metrics);
}

const char *
einsora_sqlite_store_get_path(EinsoraSqliteStore *self)
{
    g_return_val_if_fail(EINSORA_IS_SQLITE_STORE(self), NULL);
    return self->path;
}

sqlite3 *
einsora_sqlite_store_get_handle(EinsoraSqliteStore *self)
{
    g_return_val_if_fail(EINSORA_IS_SQLITE_STORE(self), NULL);
    return self->db;
}
