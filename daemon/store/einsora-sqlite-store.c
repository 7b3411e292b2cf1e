#define G_LOG_DOMAIN "einsora-store"

#include "einsora-sqlite-store.h"

#include "einsora-sqlite-private.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-error.h"

#define BUSY_TIMEOUT_MS 15000
#define PRIVATE_FILE_MODE 0600

struct _EinsoraSqliteStore {
    GObject parent_instance;
    sqlite3 *db;
    gchar *path;
    /* The file opened, so that one moved, removed or replaced under the
     * daemon is noticed (check_ready, begin). */
    dev_t dev;
    ino_t ino;
    gboolean in_transaction;
    EinsoraNowFunc now;
    gpointer now_data;
};

static void einsora_sqlite_store_iface_init(EinsoraStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraSqliteStore, einsora_sqlite_store, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_STORE,
                                                    einsora_sqlite_store_iface_init))

/* The columns each row mapper reads, in its order. */
#define TENANT_COLUMNS "id, name, trusted, created_at"
#define MACHINE_COLUMNS                                                                            \
    "id, tenant_id, name, region, os, cpus, memory_mib, sharing, last_seen_at, created_at, "       \
    "inventory"
#define WORKLOAD_COLUMNS                                                                           \
    "id, tenant_id, kind, name, state, region, gpu_class, placed_class, image, gpus, "             \
    "machine_id, driver, attempt, version, created_by, created_at, updated_at"
#define EVENT_INSERT_COLUMNS                                                                       \
    "id, tenant_id, workload_id, from_state, to_state, reason, attempt, created_at"
/* seq is the store's to give: read back, never inserted. */
#define EVENT_COLUMNS EVENT_INSERT_COLUMNS ", seq"
#define USER_COLUMNS                                                                               \
    "id, tenant_id, email, display_name, password_hash, role, created_at, disabled_at"
#define API_TOKEN_COLUMNS                                                                          \
    "id, tenant_id, user_id, name, prefix, token_sha256, created_at, last_used_at, expires_at, "   \
    "revoked_at"
#define SESSION_COLUMNS                                                                            \
    "id, tenant_id, user_id, session_sha256, csrf_sha256, created_at, expires_at, revoked_at"
#define IDEMPOTENCY_COLUMNS                                                                        \
    "tenant_id, key, request_sha256, response_status, response_body, created_at, expires_at"
#define ACCESS_TICKET_COLUMNS                                                                      \
    "ticket_sha256, tenant_id, workload_id, attempt, created_by, created_at, expires_at"

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

/* SQL helpers. Messages carry SQLite's text, never bound values. */

static gboolean
set_sqlite_error(EinsoraSqliteStore *self, GError **error)
{
    return einsora_sqlite_set_error(self->db, error);
}

static gboolean
exec_sql(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    return einsora_sqlite_exec(self->db, sql, error);
}

static sqlite3_stmt *
prepare(EinsoraSqliteStore *self, const char *sql, GError **error)
{
    return einsora_sqlite_prepare(self->db, sql, error);
}

static void
bind_text(sqlite3_stmt *stmt, int index, const char *value)
{
    /* NULL binds SQL NULL. */
    sqlite3_bind_text(stmt, index, value, -1, SQLITE_TRANSIENT);
}

static gchar *
column_strdup(sqlite3_stmt *stmt, int column)
{
    return g_strdup((const char *)sqlite3_column_text(stmt, column));
}

/* Runs a statement that writes one row, mapping constraint failures to the
 * errors callers act on. */
static gboolean
step_write(EinsoraSqliteStore *self, sqlite3_stmt *stmt, const char *conflict_message,
           const char *missing_message, GError **error)
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

static gboolean
invalid_row(const char *table, const char *column, GError **error)
{
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "sqlite: %s.%s holds a value this einsora-daemon does not know", table, column);
    return FALSE;
}

/* Row mappers: one per record, reading the *_COLUMNS above. */

static EinsoraTenant *
tenant_from_row(sqlite3_stmt *stmt)
{
    return einsora_tenant_new(
        (const char *)sqlite3_column_text(stmt, 0), (const char *)sqlite3_column_text(stmt, 1),
        sqlite3_column_int64(stmt, 2) != 0, (const char *)sqlite3_column_text(stmt, 3));
}

static EinsoraMachine *
machine_from_row(sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();

    machine->id = column_strdup(stmt, 0);
    machine->tenant_id = column_strdup(stmt, 1);
    machine->name = column_strdup(stmt, 2);
    machine->region = column_strdup(stmt, 3);
    machine->os = column_strdup(stmt, 4);
    machine->cpus = sqlite3_column_int64(stmt, 5);
    machine->memory_mib = sqlite3_column_int64(stmt, 6);
    if (!einsora_sharing_from_string((const char *)sqlite3_column_text(stmt, 7),
                                     &machine->sharing)) {
        invalid_row("machines", "sharing", error);
        return NULL;
    }
    machine->last_seen_at = column_strdup(stmt, 8);
    machine->created_at = column_strdup(stmt, 9);
    machine->inventory = column_strdup(stmt, 10);
    return g_steal_pointer(&machine);
}

static EinsoraWorkload *
workload_from_row(sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = einsora_workload_new();

    workload->id = column_strdup(stmt, 0);
    workload->tenant_id = column_strdup(stmt, 1);
    if (!einsora_workload_kind_from_string((const char *)sqlite3_column_text(stmt, 2),
                                           &workload->kind)) {
        invalid_row("workloads", "kind", error);
        return NULL;
    }
    workload->name = column_strdup(stmt, 3);
    if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 4),
                                            &workload->state)) {
        invalid_row("workloads", "state", error);
        return NULL;
    }
    workload->region = column_strdup(stmt, 5);
    workload->gpu_class = column_strdup(stmt, 6);
    workload->placed_class = column_strdup(stmt, 7);
    workload->image = column_strdup(stmt, 8);
    workload->gpus = sqlite3_column_int64(stmt, 9);
    workload->machine_id = column_strdup(stmt, 10);
    workload->driver = column_strdup(stmt, 11);
    workload->attempt = sqlite3_column_int64(stmt, 12);
    workload->version = sqlite3_column_int64(stmt, 13);
    workload->created_by = column_strdup(stmt, 14);
    workload->created_at = column_strdup(stmt, 15);
    workload->updated_at = column_strdup(stmt, 16);
    return g_steal_pointer(&workload);
}

static EinsoraWorkloadEvent *
event_from_row(sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();

    event->id = column_strdup(stmt, 0);
    event->tenant_id = column_strdup(stmt, 1);
    event->workload_id = column_strdup(stmt, 2);
    event->has_from_state = sqlite3_column_type(stmt, 3) != SQLITE_NULL;
    if (event->has_from_state &&
        !einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 3),
                                            &event->from_state)) {
        invalid_row("workload_events", "from_state", error);
        return NULL;
    }
    if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 4),
                                            &event->to_state)) {
        invalid_row("workload_events", "to_state", error);
        return NULL;
    }
    event->reason = column_strdup(stmt, 5);
    event->attempt = sqlite3_column_int64(stmt, 6);
    event->created_at = column_strdup(stmt, 7);
    event->seq = sqlite3_column_int64(stmt, 8);
    return g_steal_pointer(&event);
}

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

static EinsoraIdempotencyRecord *
idempotency_record_from_row(sqlite3_stmt *stmt)
{
    EinsoraIdempotencyRecord *record = einsora_idempotency_record_new();

    record->tenant_id = column_strdup(stmt, 0);
    record->key = column_strdup(stmt, 1);
    record->request_sha256 = column_strdup(stmt, 2);
    record->response_status = sqlite3_column_int64(stmt, 3);
    record->response_body = column_strdup(stmt, 4);
    record->created_at = column_strdup(stmt, 5);
    record->expires_at = column_strdup(stmt, 6);
    return record;
}

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

/* Every statement that writes is prepared here, so that one outside a
 * transaction is checked as begin checks. */
static sqlite3_stmt *
prepare_write(EinsoraSqliteStore *self, const char *sql, GError **error)
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
    if (!exec_sql(self, "BEGIN IMMEDIATE", error))
        return FALSE;
    self->in_transaction = TRUE;
    return TRUE;
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

/* Tenants */

static gboolean
einsora_sqlite_store_insert_tenant(EinsoraStore *store, const EinsoraTenant *tenant, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare_write(
        self, "INSERT INTO tenants (" TENANT_COLUMNS ") VALUES (?1, ?2, ?3, ?4)", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant->id);
    bind_text(stmt, 2, tenant->name);
    sqlite3_bind_int(stmt, 3, tenant->trusted ? 1 : 0);
    bind_text(stmt, 4, tenant->created_at);
    return step_write(self, stmt, "a tenant with this ID or name already exists", NULL, error);
}

static EinsoraTenant *
einsora_sqlite_store_get_tenant(EinsoraStore *store, const char *tenant_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " TENANT_COLUMNS " FROM tenants WHERE id = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return tenant_from_row(stmt);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such tenant");
    else
        set_sqlite_error(self, error);
    return NULL;
}

static EinsoraTenant *
einsora_sqlite_store_find_tenant_by_name(EinsoraStore *store, const char *name, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " TENANT_COLUMNS " FROM tenants WHERE name = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, name);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return tenant_from_row(stmt);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such tenant");
    else
        set_sqlite_error(self, error);
    return NULL;
}

/* Quotas */

static gboolean
einsora_sqlite_store_set_quota(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                               gint64 gpus, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autofree gchar *updated_at = NULL;
    g_autoptr(sqlite3_stmt) stmt = NULL;

    if (gpus < 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "a quota cannot be negative");
        return FALSE;
    }
    stmt = prepare_write(self,
                         "INSERT INTO quotas (tenant_id, gpu_class, gpus, updated_at) "
                         "VALUES (?1, ?2, ?3, ?4) "
                         "ON CONFLICT (tenant_id, gpu_class) "
                         "DO UPDATE SET gpus = excluded.gpus, updated_at = excluded.updated_at",
                         error);
    if (stmt == NULL)
        return FALSE;
    updated_at = einsora_timestamp_format(self->now(self->now_data));
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, gpu_class);
    sqlite3_bind_int64(stmt, 3, gpus);
    bind_text(stmt, 4, updated_at);
    return step_write(self, stmt, NULL, "no such tenant", error);
}

static gboolean
einsora_sqlite_store_get_quota(EinsoraStore *store, const char *tenant_id, const char *gpu_class,
                               gint64 *gpus, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT gpus FROM quotas WHERE tenant_id = ?1 AND gpu_class = ?2", error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, gpu_class);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        *gpus = sqlite3_column_int64(stmt, 0);
        return TRUE;
    }
    if (rc == SQLITE_DONE) {
        /* No row allows none. */
        *gpus = 0;
        return TRUE;
    }
    return set_sqlite_error(self, error);
}

static gboolean
einsora_sqlite_store_gpus_by_state(EinsoraStore *store, const char *tenant_id,
                                   const char *gpu_class, gint64 sums[EINSORA_WORKLOAD_STATE_COUNT],
                                   GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT state, sum(gpus) FROM workloads "
                                           "WHERE tenant_id = ?1 AND gpu_class = ?2 "
                                           "GROUP BY state",
                                           error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++)
        sums[i] = 0;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, gpu_class);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadState state;
        if (!einsora_workload_state_from_string((const char *)sqlite3_column_text(stmt, 0), &state))
            return invalid_row("workloads", "state", error);
        sums[state] = sqlite3_column_int64(stmt, 1);
    }
    if (rc != SQLITE_DONE)
        return set_sqlite_error(self, error);
    return TRUE;
}

/* Machines */

static gboolean
einsora_sqlite_store_insert_machine(EinsoraStore *store, const EinsoraMachine *machine,
                                    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "INSERT INTO machines (" MACHINE_COLUMNS ") "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                      error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 11, machine->inventory);
    bind_text(stmt, 1, machine->id);
    bind_text(stmt, 2, machine->tenant_id);
    bind_text(stmt, 3, machine->name);
    bind_text(stmt, 4, machine->region);
    bind_text(stmt, 5, machine->os);
    sqlite3_bind_int64(stmt, 6, machine->cpus);
    sqlite3_bind_int64(stmt, 7, machine->memory_mib);
    bind_text(stmt, 8, einsora_sharing_to_string(machine->sharing));
    bind_text(stmt, 9, machine->last_seen_at);
    bind_text(stmt, 10, machine->created_at);
    return step_write(self, stmt, "a machine with this ID already exists", "no such tenant", error);
}

static EinsoraMachine *
einsora_sqlite_store_get_machine(EinsoraStore *store, const char *tenant_id, const char *machine_id,
                                 GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE tenant_id = ?1 AND id = ?2", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, machine_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return machine_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
    else
        set_sqlite_error(self, error);
    return NULL;
}

static GPtrArray *
einsora_sqlite_store_list_machines(EinsoraStore *store, const char *tenant_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " MACHINE_COLUMNS " FROM machines "
                                           "WHERE tenant_id = ?1 ORDER BY created_at, id",
                                           error);
    g_autoptr(GPtrArray) machines =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraMachine *machine = machine_from_row(stmt, error);
        if (machine == NULL)
            return NULL;
        g_ptr_array_add(machines, machine);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&machines);
}

/* Workloads */

static gboolean
workload_exists(EinsoraSqliteStore *self, const char *tenant_id, const char *workload_id,
                gboolean *exists, GError **error)
{
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT 1 FROM workloads WHERE tenant_id = ?1 AND id = ?2", error);
    int rc;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return set_sqlite_error(self, error);
    *exists = rc == SQLITE_ROW;
    return TRUE;
}

static gboolean
einsora_sqlite_store_insert_workload(EinsoraStore *store, const EinsoraWorkload *workload,
                                     GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare_write(self,
                                                 "INSERT INTO workloads (" WORKLOAD_COLUMNS ") "
                                                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                                                 "?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                                                 error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, workload->id);
    bind_text(stmt, 2, workload->tenant_id);
    bind_text(stmt, 3, einsora_workload_kind_to_string(workload->kind));
    bind_text(stmt, 4, workload->name);
    bind_text(stmt, 5, einsora_workload_state_to_string(workload->state));
    bind_text(stmt, 6, workload->region);
    bind_text(stmt, 7, workload->gpu_class);
    bind_text(stmt, 8, workload->placed_class);
    bind_text(stmt, 9, workload->image);
    sqlite3_bind_int64(stmt, 10, workload->gpus);
    bind_text(stmt, 11, workload->machine_id);
    bind_text(stmt, 12, workload->driver);
    sqlite3_bind_int64(stmt, 13, workload->attempt);
    sqlite3_bind_int64(stmt, 14, workload->version);
    bind_text(stmt, 15, workload->created_by);
    bind_text(stmt, 16, workload->created_at);
    bind_text(stmt, 17, workload->updated_at);
    return step_write(self, stmt, "a workload with this ID already exists",
                      "no such tenant or machine", error);
}

static EinsoraWorkload *
einsora_sqlite_store_get_workload(EinsoraStore *store, const char *tenant_id,
                                  const char *workload_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " WORKLOAD_COLUMNS " FROM workloads WHERE tenant_id = ?1 AND id = ?2", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return workload_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
    else
        set_sqlite_error(self, error);
    return NULL;
}

/* Every row of a workload query, oldest first as the query orders them. */
static GPtrArray *
workloads_from(EinsoraSqliteStore *self, sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(GPtrArray) workloads =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_free);
    int rc;

    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkload *workload = workload_from_row(stmt, error);
        if (workload == NULL)
            return NULL;
        g_ptr_array_add(workloads, workload);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&workloads);
}

static GPtrArray *
einsora_sqlite_store_list_workloads(EinsoraStore *store, const char *tenant_id,
                                    gboolean include_deleted, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                                           "WHERE tenant_id = ?1 "
                                           "AND (?2 = 1 OR state <> 'deleted') "
                                           "ORDER BY created_at, id",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    sqlite3_bind_int(stmt, 2, include_deleted ? 1 : 0);
    return workloads_from(self, stmt, error);
}

static GPtrArray *
einsora_sqlite_store_list_region_workloads(EinsoraStore *store, const char *region, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self,
                "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                "WHERE region = ?1 AND state NOT IN ('stopped', 'failed', 'deleted') "
                "ORDER BY created_at, id",
                error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, region);
    return workloads_from(self, stmt, error);
}

static gboolean
einsora_sqlite_store_acquire_lease(EinsoraStore *store, const char *name, const char *holder,
                                   const char *now, const char *expires_at, gboolean *held,
                                   GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* One statement: insert, or take over only what is ours or expired. */
    g_autoptr(sqlite3_stmt) stmt = prepare_write(
        self,
        "INSERT INTO leases (name, holder, acquired_at, expires_at) "
        "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET "
        "acquired_at = CASE WHEN leases.holder = excluded.holder "
        "THEN leases.acquired_at ELSE excluded.acquired_at END, "
        "holder = excluded.holder, expires_at = excluded.expires_at "
        "WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.acquired_at",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, name);
    bind_text(stmt, 2, holder);
    bind_text(stmt, 3, now);
    bind_text(stmt, 4, expires_at);
    if (sqlite3_step(stmt) != SQLITE_DONE)
        return set_sqlite_error(self, error);
    *held = sqlite3_changes(self->db) == 1;
    return TRUE;
}

static gboolean
einsora_sqlite_store_release_lease(EinsoraStore *store, const char *name, const char *holder,
                                   GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self, "DELETE FROM leases WHERE name = ?1 AND holder = ?2", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, name);
    bind_text(stmt, 2, holder);
    if (sqlite3_step(stmt) != SQLITE_DONE)
        return set_sqlite_error(self, error);
    return TRUE;
}

static GPtrArray *
machines_from(EinsoraSqliteStore *self, sqlite3_stmt *stmt, GError **error)
{
    g_autoptr(GPtrArray) machines =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_free);
    int rc;

    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraMachine *machine = machine_from_row(stmt, error);
        if (machine == NULL)
            return NULL;
        g_ptr_array_add(machines, machine);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&machines);
}

static EinsoraMachine *
einsora_sqlite_store_find_machine(EinsoraStore *store, const char *machine_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE id = ?1", error);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, machine_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        return machine_from_row(stmt, error);
    if (rc == SQLITE_DONE)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
    else
        set_sqlite_error(self, error);
    return NULL;
}

static GPtrArray *
einsora_sqlite_store_list_region_machines(EinsoraStore *store, const char *region, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " MACHINE_COLUMNS " FROM machines WHERE region = ?1 ORDER BY created_at, id",
        error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, region);
    return machines_from(self, stmt, error);
}

static gboolean
einsora_sqlite_store_record_machine_seen(EinsoraStore *store, const char *machine_id,
                                         const char *last_seen_at, const char *inventory,
                                         GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* A report without an inventory keeps the last one. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "UPDATE machines SET last_seen_at = ?2, "
                      "inventory = coalesce(?3, inventory) WHERE id = ?1",
                      error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, machine_id);
    bind_text(stmt, 2, last_seen_at);
    bind_text(stmt, 3, inventory);
    if (!step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such machine");
        return FALSE;
    }
    return TRUE;
}

static GPtrArray *
einsora_sqlite_store_list_machine_workloads(EinsoraStore *store, const char *machine_id,
                                            GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " WORKLOAD_COLUMNS " FROM workloads "
                                           "WHERE machine_id = ?1 AND state <> 'deleted' "
                                           "ORDER BY created_at, id",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, machine_id);
    return workloads_from(self, stmt, error);
}

static gboolean
einsora_sqlite_store_update_workload_state(EinsoraStore *store, const EinsoraWorkload *workload,
                                           EinsoraWorkloadState expected_state,
                                           gint64 expected_version, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "UPDATE workloads SET state = ?1, placed_class = ?2, machine_id = ?3, "
                      "driver = ?4, attempt = ?5, updated_at = ?6, version = version + 1 "
                      "WHERE tenant_id = ?7 AND id = ?8 AND state = ?9 AND version = ?10",
                      error);
    gboolean exists = FALSE;

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, einsora_workload_state_to_string(workload->state));
    bind_text(stmt, 2, workload->placed_class);
    bind_text(stmt, 3, workload->machine_id);
    bind_text(stmt, 4, workload->driver);
    sqlite3_bind_int64(stmt, 5, workload->attempt);
    bind_text(stmt, 6, workload->updated_at);
    bind_text(stmt, 7, workload->tenant_id);
    bind_text(stmt, 8, workload->id);
    bind_text(stmt, 9, einsora_workload_state_to_string(expected_state));
    sqlite3_bind_int64(stmt, 10, expected_version);
    if (!step_write(self, stmt, NULL, "no such machine", error))
        return FALSE;
    if (sqlite3_changes(self->db) == 1)
        return TRUE;

    /* Nothing matched: either someone else changed it first, or it is not
     * this tenant's. */
    if (!workload_exists(self, workload->tenant_id, workload->id, &exists, error))
        return FALSE;
    if (exists)
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "the workload changed while this request was handled; try again");
    else
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
    return FALSE;
}

/* The timeline */

static gboolean
einsora_sqlite_store_append_event(EinsoraStore *store, const EinsoraWorkloadEvent *event,
                                  GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "INSERT INTO workload_events (" EVENT_INSERT_COLUMNS ") "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                      error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, event->id);
    bind_text(stmt, 2, event->tenant_id);
    bind_text(stmt, 3, event->workload_id);
    bind_text(stmt, 4,
              event->has_from_state ? einsora_workload_state_to_string(event->from_state) : NULL);
    bind_text(stmt, 5, einsora_workload_state_to_string(event->to_state));
    bind_text(stmt, 6, event->reason);
    sqlite3_bind_int64(stmt, 7, event->attempt);
    bind_text(stmt, 8, event->created_at);
    /* The foreign key is (tenant_id, workload_id): another tenant's
     * workload is not found. */
    return step_write(self, stmt, "an event with this ID already exists", "no such workload",
                      error);
}

static GPtrArray *
einsora_sqlite_store_list_events(EinsoraStore *store, const char *tenant_id,
                                 const char *workload_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " EVENT_COLUMNS " FROM workload_events "
                                           "WHERE tenant_id = ?1 AND workload_id = ?2 "
                                           "ORDER BY seq",
                                           error);
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    gboolean exists = FALSE;
    int rc;

    if (stmt == NULL)
        return NULL;
    /* An empty list would say the workload exists. */
    if (!workload_exists(self, tenant_id, workload_id, &exists, error))
        return NULL;
    if (!exists) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, workload_id);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadEvent *event = event_from_row(stmt, error);
        if (event == NULL)
            return NULL;
        g_ptr_array_add(events, event);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&events);
}

static GPtrArray *
einsora_sqlite_store_list_tenant_events(EinsoraStore *store, const char *tenant_id,
                                        gint64 after_seq, guint limit, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* The index on (tenant_id, seq) serves both the filter and the order. */
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " EVENT_COLUMNS " FROM workload_events "
                                           "WHERE tenant_id = ?1 AND seq > ?2 "
                                           "ORDER BY seq LIMIT ?3",
                                           error);
    g_autoptr(GPtrArray) events =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    sqlite3_bind_int64(stmt, 2, after_seq);
    sqlite3_bind_int64(stmt, 3, limit);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        EinsoraWorkloadEvent *event = event_from_row(stmt, error);
        if (event == NULL)
            return NULL;
        g_ptr_array_add(events, event);
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&events);
}

static gboolean
einsora_sqlite_store_last_event_seq(EinsoraStore *store, const char *tenant_id, gint64 *seq,
                                    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT coalesce(max(seq), 0) FROM workload_events WHERE tenant_id = ?1", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    if (sqlite3_step(stmt) != SQLITE_ROW)
        return set_sqlite_error(self, error);
    *seq = sqlite3_column_int64(stmt, 0);
    return TRUE;
}

/* Accounts */

static gboolean
einsora_sqlite_store_insert_user(EinsoraStore *store, const EinsoraUser *user, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare_write(
        self, "INSERT INTO users (" USER_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
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
    return step_write(self, stmt, "a user with this ID or email already exists", "no such tenant",
                      error);
}

/* Steps a SELECT that finds at most one row onto it; NOT_FOUND with
 * @missing when there is none. */
static gboolean
step_one(EinsoraSqliteStore *self, sqlite3_stmt *stmt, const char *missing, GError **error)
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

static EinsoraUser *
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
    if (!step_one(self, stmt, "no such user", error))
        return NULL;
    return user_from_row(stmt);
}

static EinsoraUser *
einsora_sqlite_store_find_user_by_email(EinsoraStore *store, const char *email, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " USER_COLUMNS " FROM users WHERE email = ?1", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, email);
    if (!step_one(self, stmt, "no such user", error))
        return NULL;
    return user_from_row(stmt);
}

static gboolean
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

/* API tokens */

static gboolean
einsora_sqlite_store_insert_api_token(EinsoraStore *store, const EinsoraApiToken *token,
                                      GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare_write(self,
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
    return step_write(self, stmt, "an API token with this ID or hash already exists",
                      "no such user", error);
}

static EinsoraApiToken *
einsora_sqlite_store_find_api_token(EinsoraStore *store, const char *token_sha256, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(
        self, "SELECT " API_TOKEN_COLUMNS " FROM api_tokens WHERE token_sha256 = ?1", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, token_sha256);
    if (!step_one(self, stmt, "no such API token", error))
        return NULL;
    return api_token_from_row(stmt);
}

static GPtrArray *
einsora_sqlite_store_list_api_tokens(EinsoraStore *store, const char *tenant_id,
                                     const char *user_id, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " API_TOKEN_COLUMNS " FROM api_tokens "
                                           "WHERE tenant_id = ?1 AND user_id = ?2 "
                                           "ORDER BY created_at, id",
                                           error);
    g_autoptr(GPtrArray) tokens =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_api_token_free);
    int rc;

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(tokens, api_token_from_row(stmt));
    if (rc != SQLITE_DONE) {
        set_sqlite_error(self, error);
        return NULL;
    }
    return g_steal_pointer(&tokens);
}

static gboolean
einsora_sqlite_store_revoke_api_token(EinsoraStore *store, const char *tenant_id,
                                      const char *user_id, const char *token_id,
                                      const char *revoked_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* coalesce: the first revocation is the one that counts. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?4) "
                      "WHERE tenant_id = ?1 AND user_id = ?2 AND id = ?3",
                      error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, user_id);
    bind_text(stmt, 3, token_id);
    bind_text(stmt, 4, revoked_at);
    if (!step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    return TRUE;
}

static gboolean
einsora_sqlite_store_touch_api_token(EinsoraStore *store, const char *token_id,
                                     const char *last_used_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* Never backwards, whichever of two racing requests writes last. */
    g_autoptr(sqlite3_stmt) stmt = prepare_write(
        self,
        "UPDATE api_tokens SET last_used_at = CASE "
        "WHEN last_used_at IS NULL OR last_used_at < ?2 THEN ?2 ELSE last_used_at END "
        "WHERE id = ?1",
        error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, token_id);
    bind_text(stmt, 2, last_used_at);
    if (!step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such API token");
        return FALSE;
    }
    return TRUE;
}

/* Browser sessions */

static gboolean
einsora_sqlite_store_insert_session(EinsoraStore *store, const EinsoraSession *session,
                                    GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare_write(self,
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
    return step_write(self, stmt, "a session with this ID or hash already exists", "no such user",
                      error);
}

static EinsoraSession *
einsora_sqlite_store_find_session(EinsoraStore *store, const char *session_sha256, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare(self, "SELECT " SESSION_COLUMNS " FROM sessions WHERE session_sha256 = ?1", error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, session_sha256);
    if (!step_one(self, stmt, "no such session", error))
        return NULL;
    return session_from_row(stmt);
}

static gboolean
einsora_sqlite_store_revoke_session(EinsoraStore *store, const char *tenant_id,
                                    const char *session_id, const char *revoked_at, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "UPDATE sessions SET revoked_at = coalesce(revoked_at, "
                      "?3) WHERE tenant_id = ?1 AND id = ?2",
                      error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, session_id);
    bind_text(stmt, 3, revoked_at);
    if (!step_write(self, stmt, NULL, NULL, error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such session");
        return FALSE;
    }
    return TRUE;
}

/* Idempotency keys */

static EinsoraIdempotencyRecord *
einsora_sqlite_store_get_idempotency_record(EinsoraStore *store, const char *tenant_id,
                                            const char *key, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt = prepare(self,
                                           "SELECT " IDEMPOTENCY_COLUMNS " FROM idempotency_keys "
                                           "WHERE tenant_id = ?1 AND key = ?2",
                                           error);

    if (stmt == NULL)
        return NULL;
    bind_text(stmt, 1, tenant_id);
    bind_text(stmt, 2, key);
    if (!step_one(self, stmt, "no such idempotency key", error))
        return NULL;
    return idempotency_record_from_row(stmt);
}

static gboolean
einsora_sqlite_store_insert_idempotency_record(EinsoraStore *store,
                                               const EinsoraIdempotencyRecord *record,
                                               GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* A record that expired by now is replaced rather than blocking the key
     * until the next clean-up; a live one is left alone. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
                      "INSERT INTO idempotency_keys (" IDEMPOTENCY_COLUMNS ") "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                      "ON CONFLICT (tenant_id, key) DO UPDATE SET "
                      "request_sha256 = excluded.request_sha256, "
                      "response_status = excluded.response_status, "
                      "response_body = excluded.response_body, created_at = excluded.created_at, "
                      "expires_at = excluded.expires_at "
                      "WHERE idempotency_keys.expires_at <= excluded.created_at",
                      error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, record->tenant_id);
    bind_text(stmt, 2, record->key);
    bind_text(stmt, 3, record->request_sha256);
    sqlite3_bind_int64(stmt, 4, record->response_status);
    bind_text(stmt, 5, record->response_body);
    bind_text(stmt, 6, record->created_at);
    bind_text(stmt, 7, record->expires_at);
    if (!step_write(self, stmt, NULL, "no such tenant", error))
        return FALSE;
    if (sqlite3_changes(self->db) == 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                            "this Idempotency-Key was already used");
        return FALSE;
    }
    return TRUE;
}

static gboolean
einsora_sqlite_store_delete_expired_idempotency_records(EinsoraStore *store, const char *now,
                                                        GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self, "DELETE FROM idempotency_keys WHERE expires_at <= ?1", error);

    if (stmt == NULL)
        return FALSE;
    bind_text(stmt, 1, now);
    return step_write(self, stmt, NULL, NULL, error);
}

/* Access tickets */

static gboolean
einsora_sqlite_store_insert_access_ticket(EinsoraStore *store, const EinsoraAccessTicket *ticket,
                                          GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
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
    return step_write(self, stmt, "an access ticket with this hash already exists",
                      "no such workload", error);
}

static EinsoraAccessTicket *
einsora_sqlite_store_take_access_ticket(EinsoraStore *store, const char *ticket_sha256,
                                        const char *now, GError **error)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(store);
    /* One statement, so one write whether or not a transaction is open:
     * the ticket and every expired one go together, and of two racing
     * takes only the one whose DELETE returns the row has it. */
    g_autoptr(sqlite3_stmt) stmt =
        prepare_write(self,
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
}

static void
einsora_sqlite_store_finalize(GObject *object)
{
    EinsoraSqliteStore *self = EINSORA_SQLITE_STORE(object);

    if (self->db != NULL) {
        if (!sqlite3_get_autocommit(self->db))
            sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close_v2(self->db);
    }
    g_free(self->path);
    G_OBJECT_CLASS(einsora_sqlite_store_parent_class)->finalize(object);
}

static void
einsora_sqlite_store_class_init(EinsoraSqliteStoreClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_sqlite_store_finalize;
}

static void
einsora_sqlite_store_init(EinsoraSqliteStore *self)
{
    self->now = einsora_now_real;
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
