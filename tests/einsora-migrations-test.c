/* Databases that older einsora-daemons left (tests/fixtures/migrations/
 * sqlite-vN.db, made by make.sh there from rows-0000N.sql) migrate to the
 * current schema with every row intact, as fwupd's history_v1.db does.
 * Each fixture is copied, opened with the real store and migrated with the
 * built-in migrations; then every row is compared with the one it was, and
 * read back through the store's own readers. */
#define G_LOG_DOMAIN "einsora-store"

#include <gio/gio.h>

#include "einsora-sqlite-private.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-timestamp.h"

/* When the test migrates: 2026-12-01T00:00:00Z. */
#define MIGRATED_US G_GINT64_CONSTANT(1796083200000000)
#define MIGRATED_AT "2026-12-01T00:00:00.000000Z"

/* The fixtures' rows (rows-00001.sql, rows-00002.sql). */
#define ID(tail) "01936a10-2b00-7000-8000-" tail
#define ACME ID("000000000001")
#define NORTH ID("000000000002")
#define ANN ID("0000000000a1")
#define BOB ID("0000000000a2")
#define CAROL ID("0000000000a3")
#define RACK ID("0000000000d1")
#define MACBOOK ID("0000000000d2")
#define ANALYSIS ID("0000000000e1")
#define SERVE ID("0000000000e2")
#define SCRATCH ID("0000000000e3")
#define TRAIN ID("0000000000e4")
#define OLD ID("0000000000e5")
#define CAROL_VM ID("0000000000e6")
#define EVENT(n) ID("000000000f" n)
#define MIGRATED_HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

#define ANN_HASH                                                                                   \
    "$argon2id$v=19$m=65536,t=3,p=1$xTvIxAUO36t2YIlECtuNXQ$"                                       \
    "ZSXOS+kxq8QvV1xzzyD2kf530N895KbVe48uGBFMeI8"
#define CAROL_HASH                                                                                 \
    "$argon2id$v=19$m=65536,t=3,p=1$57uVGe6yl1P6iJJuBcovzg$"                                       \
    "I28/wvyP7sLDJCNrToLyXsl69gVrKxOlfncO2eyKnpw"
#define RACK_INVENTORY                                                                             \
    "{\"os\":\"linux\",\"arch\":\"x86_64\",\"cpus\":64,\"memory_mib\":515072,\"gpus\":["           \
    "{\"vendor\":\"nvidia\",\"model\":\"NVIDIA H100 80GB HBM3\",\"memory_mib\":81559},"            \
    "{\"vendor\":\"nvidia\",\"model\":\"NVIDIA H100 80GB HBM3\",\"memory_mib\":81559}],"           \
    "\"drivers\":[\"linux-native\",\"docker\",\"libvirt\"]}"
#define TICKET_SHA256 "f185c46159ee7b882839de193f309a7bd4e66831dfa7f53d8eedfdd593b9748a"

typedef struct {
    const char *id;
    const char *name;
    gboolean trusted;
    const char *created_at;
} Tenant;

static const Tenant tenants[] = {
    {ACME, "acme", FALSE, "2026-11-10T09:00:00.000000Z"},
    {NORTH, "north-lab", TRUE, "2026-11-10T09:05:00.000000Z"},
};

typedef struct {
    const char *id;
    const char *tenant_id;
    const char *email;
    const char *display_name;
    const char *password_hash;
    const char *role;
    const char *created_at;
    const char *disabled_at;
} User;

static const User users[] = {
    {ANN, ACME, "ann@acme.example", "Ann Example", ANN_HASH, "owner", "2026-11-10T09:00:01.000000Z",
     NULL},
    {BOB, ACME, "bob@acme.example", "Bob Example", NULL, "member", "2026-11-10T09:30:00.000000Z",
     "2026-11-11T17:00:00.000000Z"},
    {CAROL, NORTH, "carol@north-lab.example", "Carol Exämple", CAROL_HASH, "owner",
     "2026-11-10T09:05:01.000000Z", NULL},
};

typedef struct {
    const char *id;
    const char *tenant_id;
    const char *user_id;
    const char *name;
    const char *prefix;
    const char *token_sha256;
    const char *created_at;
    const char *last_used_at;
    const char *expires_at;
    const char *revoked_at;
} ApiToken;

/* Ann's, in the order list_api_tokens gives them. */
static const ApiToken api_tokens[] = {
    {ID("0000000000b1"), ACME, ANN, "laptop", "tsk_QWFG",
     "3f12c85a825854f150891e25fdc48fdbc27543db3419f23c339da34349deb3a4",
     "2026-11-10T10:00:00.000000Z", "2026-11-12T08:15:42.123456Z", NULL, NULL},
    {ID("0000000000b2"), ACME, ANN, "ci", "tsk_ssNM",
     "8fee63b9433b8fc9b58c86740598dc143e8e67c6e4cbd6dc7ddc6dcf58fc19fe",
     "2026-11-10T11:00:00.000000Z", NULL, "2026-12-10T11:00:00.000000Z",
     "2026-11-11T12:00:00.000000Z"},
};

typedef struct {
    const char *id;
    const char *tenant_id;
    const char *user_id;
    const char *session_sha256;
    const char *csrf_sha256;
    const char *created_at;
    const char *expires_at;
    const char *revoked_at;
} Session;

static const Session sessions[] = {
    {ID("0000000000c1"), ACME, ANN,
     "17b6b72d9c256cc01adea4c380ba18b57d8112b7e5fe27d52ccfa8f74b08440b",
     "993813544fc35d476713fa7de61fd935207504b53999c1e2ad55220ff798abfb",
     "2026-11-12T08:00:00.000000Z", "2026-11-19T08:00:00.000000Z", NULL},
    {ID("0000000000c2"), NORTH, CAROL,
     "0d735103cc33d115a83fff3020b1627b7d8ac0f306860032cffd1c4cca04c152",
     "af16b88318bae94070f7e2978a826ddcf96641e17146927cb324e6653072d70d",
     "2026-11-11T09:00:00.000000Z", "2026-11-18T09:00:00.000000Z", "2026-11-11T18:00:00.000000Z"},
};

/* Their updated_at has no reader: raw_rows has it. */
typedef struct {
    const char *tenant_id;
    const char *gpu_class;
    gint64 gpus;
} Quota;

static const Quota quotas[] = {
    {ACME, "cpu-2c-4g", 4},
    {ACME, "h100-80gb", 2},
    {NORTH, "nvidia-l4-24gb", 1},
};

typedef struct {
    const char *id;
    const char *tenant_id;
    const char *name;
    const char *region;
    const char *os;
    gint64 cpus;
    gint64 memory_mib;
    const char *sharing;
    const char *inventory;
    const char *last_seen_at;
    const char *created_at;
} Machine;

/* In created_at order, as the lists give them. */
static const Machine machines[] = {
    {RACK, NORTH, "rack-1", "local", "linux", 64, 515072, "community", RACK_INVENTORY,
     "2026-11-12T08:29:55.000000Z", "2026-11-10T09:06:00.000000Z"},
    {MACBOOK, ACME, "ann-macbook", "local", "darwin", 10, 32768, "private", NULL, NULL,
     "2026-11-10T09:20:00.000000Z"},
};

typedef struct {
    const char *id;
    const char *tenant_id;
    const char *kind;
    const char *name;
    const char *state;
    const char *region;
    const char *gpu_class;
    const char *placed_class;
    const char *image;
    gint64 gpus;
    const char *machine_id;
    const char *driver;
    gint64 attempt;
    gint64 version;
    const char *created_by;
    const char *created_at;
    const char *updated_at;
} Workload;

/* In created_at order, as the lists give them. */
static const Workload workloads[] = {
    {OLD, ACME, "notebook", "old", "deleted", "local", "cpu-2c-4g", "cpu-2c-4g", "jupyter-linux", 0,
     RACK, "linux-native", 1, 4, ANN, "2026-11-10T11:00:00.000000Z", "2026-11-10T11:45:00.000000Z"},
    {SCRATCH, ACME, "notebook", "scratch", "stopped", "local", "cpu-2c-4g", "cpu-2c-4g",
     "jupyter-linux", 0, RACK, "linux-native", 2, 6, BOB, "2026-11-10T12:00:00.000000Z",
     "2026-11-10T14:30:00.000000Z"},
    {TRAIN, ACME, "notebook", "train-bad", "failed", "local", "h100-80gb", "h100-80gb",
     "jupyter-linux", 1, RACK, "linux-native", 1, 2, ANN, "2026-11-10T15:00:00.000000Z",
     "2026-11-10T15:05:01.000000Z"},
    {ANALYSIS, ACME, "notebook", "analysis", "running", "local", "h100-80gb", "h100-80gb",
     "jupyter-linux", 1, RACK, "linux-native", 1, 3, ANN, "2026-11-11T10:00:00.000000Z",
     "2026-11-11T10:02:10.000000Z"},
    {SERVE, ACME, "endpoint", "serve-llm", "queued", "local", "h100-80gb", NULL, "vllm", 1, NULL,
     NULL, 0, 1, ANN, "2026-11-11T10:05:00.000000Z", "2026-11-11T10:05:00.500000Z"},
    {CAROL_VM, NORTH, "vm", "carol-vm", "pending", "local", "nvidia-l4-24gb", NULL, "ubuntu-24.04",
     1, NULL, NULL, 0, 0, CAROL, "2026-11-12T08:25:00.000000Z", "2026-11-12T08:25:00.000000Z"},
};

typedef struct {
    gint64 since; /* the first fixture version that has it */
    gint64 seq;
    const char *id;
    const char *tenant_id;
    const char *workload_id;
    const char *from_state; /* NULL for the creation row */
    const char *to_state;
    const char *reason;
    gint64 attempt;
    const char *created_at;
} Event;

#define CREATED_BY_ANN "created by " ANN
#define ON_RACK(class) "admitted: 1 × " class " on rack-1 with linux-native"
#define NOT_ENOUGH_H100                                                                            \
    "waiting for h100-80gb capacity: requested 1 GPU(s), not enough free right now"

/* In seq order. */
static const Event events[] = {
    {1, 1, EVENT("01"), ACME, OLD, NULL, "pending", CREATED_BY_ANN, 0,
     "2026-11-10T11:00:00.000000Z"},
    {1, 2, EVENT("02"), ACME, OLD, "pending", "provisioning", ON_RACK("cpu-2c-4g"), 1,
     "2026-11-10T11:00:01.000000Z"},
    {1, 3, EVENT("03"), ACME, OLD, "provisioning", "running", "ready", 1,
     "2026-11-10T11:00:09.000000Z"},
    {1, 4, EVENT("04"), ACME, OLD, "running", "deleting", "delete requested by " ANN, 1,
     "2026-11-10T11:44:50.000000Z"},
    {1, 5, EVENT("05"), ACME, OLD, "deleting", "deleted", "gone: everything it stored was deleted",
     1, "2026-11-10T11:45:00.000000Z"},
    {1, 6, EVENT("06"), ACME, SCRATCH, NULL, "pending", "created by " BOB, 0,
     "2026-11-10T12:00:00.000000Z"},
    {1, 7, EVENT("07"), ACME, SCRATCH, "pending", "provisioning", ON_RACK("cpu-2c-4g"), 1,
     "2026-11-10T12:00:01.000000Z"},
    {1, 8, EVENT("08"), ACME, SCRATCH, "provisioning", "failed",
     "it didn't become ready within 300s", 1, "2026-11-10T12:05:01.000000Z"},
    {1, 9, EVENT("09"), ACME, SCRATCH, "failed", "provisioning", ON_RACK("cpu-2c-4g"), 2,
     "2026-11-10T13:00:00.000000Z"},
    {1, 10, EVENT("10"), ACME, SCRATCH, "provisioning", "running", "ready", 2,
     "2026-11-10T13:00:08.000000Z"},
    {1, 11, EVENT("11"), ACME, SCRATCH, "running", "stopping",
     "stop requested by " BOB " (API token \"ci\" (tsk_ssNM…))", 2, "2026-11-10T14:29:55.000000Z"},
    {1, 12, EVENT("12"), ACME, SCRATCH, "stopping", "stopped", "resources released", 2,
     "2026-11-10T14:30:00.000000Z"},
    {1, 13, EVENT("13"), ACME, TRAIN, NULL, "pending", CREATED_BY_ANN, 0,
     "2026-11-10T15:00:00.000000Z"},
    {1, 14, EVENT("14"), ACME, TRAIN, "pending", "provisioning", ON_RACK("h100-80gb"), 1,
     "2026-11-10T15:00:01.000000Z"},
    {1, 15, EVENT("15"), ACME, TRAIN, "provisioning", "provisioning",
     "couldn't start it on the runtime; retrying. The operator's log has the details under this "
     "workload's ID.",
     1, "2026-11-10T15:00:30.000000Z"},
    {1, 16, EVENT("16"), ACME, TRAIN, "provisioning", "failed",
     "it didn't become ready within 300s", 1, "2026-11-10T15:05:01.000000Z"},
    {1, 17, EVENT("17"), ACME, ANALYSIS, NULL, "pending", CREATED_BY_ANN, 0,
     "2026-11-11T10:00:00.000000Z"},
    {1, 18, EVENT("18"), ACME, ANALYSIS, "pending", "queued", NOT_ENOUGH_H100, 0,
     "2026-11-11T10:00:00.200000Z"},
    {1, 19, EVENT("19"), ACME, ANALYSIS, "queued", "provisioning", ON_RACK("h100-80gb"), 1,
     "2026-11-11T10:02:00.000000Z"},
    {1, 20, EVENT("20"), ACME, ANALYSIS, "provisioning", "running", "ready", 1,
     "2026-11-11T10:02:10.000000Z"},
    {1, 21, EVENT("21"), ACME, SERVE, NULL, "pending", CREATED_BY_ANN, 0,
     "2026-11-11T10:05:00.000000Z"},
    {1, 22, EVENT("22"), ACME, SERVE, "pending", "queued", NOT_ENOUGH_H100, 0,
     "2026-11-11T10:05:00.500000Z"},
    {1, 23, EVENT("23"), NORTH, CAROL_VM, NULL, "pending", "created by " CAROL, 0,
     "2026-11-12T08:25:00.000000Z"},
    {2, 24, EVENT("24"), ACME, ANALYSIS, "running", "running",
     "open in a browser requested by " ANN " (web session)", 1, "2026-11-12T08:20:00.000000Z"},
};

/* Tables the store has no reader for, row by row, read with SQL. */
typedef struct {
    const char *sql;
    const char *const rows[4]; /* each row's columns joined with "|" */
} RawRows;

static const RawRows raw_rows[] = {
    {"SELECT id, tenant_id, workload_id, region, gpu_class, hour_start, seconds, gpu_seconds, "
     "created_at FROM usage_records ORDER BY id",
     {ID("000000000701") "|" ACME "|" SCRATCH "|local|cpu-2c-4g|2026-11-10T13:00:00.000000Z|3592|0|"
                         "2026-11-10T14:00:05.000000Z",
      ID("000000000702") "|" ACME "|" SCRATCH "|local|cpu-2c-4g|2026-11-10T14:00:00.000000Z|1800|0|"
                         "2026-11-10T15:00:05.000000Z",
      ID("000000000703") "|" ACME "|" ANALYSIS "|local|h100-80gb|2026-11-11T10:00:00.000000Z|3470|"
                         "3470|2026-11-11T11:00:05.000000Z",
      NULL}},
    {"SELECT name, holder, acquired_at, expires_at FROM leases ORDER BY name",
     {"controller:local|" RACK "|2026-11-10T09:06:00.000000Z|2026-11-12T08:30:30.000000Z", NULL}},
    {"SELECT tenant_id, gpu_class, gpus, updated_at FROM quotas ORDER BY tenant_id, gpu_class",
     {ACME "|cpu-2c-4g|4|2026-11-10T09:10:01.000000Z",
      ACME "|h100-80gb|2|2026-11-10T09:10:00.000000Z",
      NORTH "|nvidia-l4-24gb|1|2026-11-10T09:11:00.000000Z", NULL}},
};

typedef struct {
    gchar *dir;
    gchar *path;
    EinsoraSqliteStore *store;
} Fixture;

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->path = g_build_filename(f->dir, "einsora.db", NULL);
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

static EinsoraStore *
store(Fixture *f)
{
    return EINSORA_STORE(f->store);
}

static sqlite3 *
handle(Fixture *f)
{
    return einsora_sqlite_store_get_handle(f->store);
}

static GPtrArray *
builtin_migrations(void)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *builtin = einsora_migrations_load_builtin(&error);

    g_assert_no_error(error);
    return builtin;
}

static gchar *
fixture_source(gint64 version)
{
    const char *source_root = g_getenv("EINSORA_SOURCE_ROOT");
    g_autofree gchar *name = g_strdup_printf("sqlite-v%" G_GINT64_FORMAT ".db", version);

    g_assert_nonnull(source_root);
    return g_build_filename(source_root, "tests", "fixtures", "migrations", name, NULL);
}

static void
open_store(Fixture *f)
{
    g_autoptr(GError) error = NULL;

    f->store = einsora_sqlite_store_open(f->path, &error);
    g_assert_no_error(error);
    g_assert_nonnull(f->store);
}

static void
close_store(Fixture *f)
{
    g_assert_finalize_object(g_steal_pointer(&f->store));
}

/* Through the store, as the daemon does at start. */
static void
migrate(EinsoraSqliteStore *s, gint64 now_us)
{
    g_autoptr(GError) error = NULL;
    gboolean ok = einsora_sqlite_store_migrate(s, now_us, &error);

    g_assert_no_error(error);
    g_assert_true(ok);
}

static gint64
schema_version(sqlite3 *db)
{
    g_autoptr(GError) error = NULL;
    gint64 version = einsora_migrations_get_version(db, &error);

    g_assert_no_error(error);
    return version;
}

/* Every row of a query, its columns joined with "|" ("NULL" for NULL). */
static GStrv
query_rows(sqlite3 *db, const char *sql)
{
    g_autoptr(sqlite3_stmt) stmt = NULL;
    g_autoptr(GStrvBuilder) rows = g_strv_builder_new();
    int rc;

    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        g_autoptr(GString) row = g_string_new(NULL);
        for (int i = 0; i < sqlite3_column_count(stmt); i++) {
            const char *text = (const char *)sqlite3_column_text(stmt, i);
            g_string_append_printf(row, "%s%s", i > 0 ? "|" : "", text != NULL ? text : "NULL");
        }
        g_strv_builder_add(rows, row->str);
    }
    g_assert_cmpint(rc, ==, SQLITE_DONE);
    return g_strv_builder_end(rows);
}

static gchar *
query_joined(sqlite3 *db, const char *sql)
{
    g_auto(GStrv) rows = query_rows(db, sql);
    return g_strjoinv("\n", rows);
}

/* A snapshot of every table: each row by its primary key, each value as its
 * storage class and text, so that a changed type shows as much as a
 * changed value. */

typedef struct {
    GPtrArray *columns; /* gchar *, in table order */
    GHashTable *rows;   /* primary key text -> GHashTable (column -> value text) */
} TableRows;

static void
table_rows_free(TableRows *table)
{
    g_ptr_array_unref(table->columns);
    g_hash_table_unref(table->rows);
    g_free(table);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(TableRows, table_rows_free)

static gchar *
value_text(sqlite3_stmt *stmt, int column)
{
    switch (sqlite3_column_type(stmt, column)) {
    case SQLITE_NULL:
        return g_strdup("NULL");
    case SQLITE_INTEGER:
        return g_strdup_printf("integer %" G_GINT64_FORMAT,
                               (gint64)sqlite3_column_int64(stmt, column));
    case SQLITE_FLOAT:
        return g_strdup_printf("real %.17g", sqlite3_column_double(stmt, column));
    case SQLITE_TEXT:
        return g_strdup_printf("text '%s'", (const char *)sqlite3_column_text(stmt, column));
    default: {
        const guint8 *blob = sqlite3_column_blob(stmt, column);
        int size = sqlite3_column_bytes(stmt, column);
        g_autoptr(GString) hex = g_string_new("blob x'");
        for (int i = 0; i < size; i++)
            g_string_append_printf(hex, "%02x", blob[i]);
        g_string_append_c(hex, '\'');
        return g_string_free(g_steal_pointer(&hex), FALSE);
    }
    }
}

static GPtrArray *
primary_key(sqlite3 *db, const char *table)
{
    g_auto(GStrv) names = NULL;
    g_autoptr(sqlite3_stmt) stmt = NULL;
    GPtrArray *columns = g_ptr_array_new_with_free_func(g_free);
    int rc;

    g_assert_cmpint(sqlite3_prepare_v2(db,
                                       "SELECT name FROM pragma_table_info(?1) WHERE pk > 0 "
                                       "ORDER BY pk",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        g_ptr_array_add(columns, g_strdup((const char *)sqlite3_column_text(stmt, 0)));
    g_assert_cmpint(rc, ==, SQLITE_DONE);
    /* Rows are matched by key; every Einsora table has one. */
    if (columns->len == 0)
        g_error("table %s has no primary key to match its rows by", table);
    return columns;
}

static TableRows *
table_rows_take(sqlite3 *db, const char *table)
{
    g_autoptr(TableRows) rows = g_new0(TableRows, 1);
    g_autoptr(GPtrArray) key_columns = primary_key(db, table);
    g_autoptr(sqlite3_stmt) stmt = NULL;
    /* %w quotes an identifier; the name comes from sqlite_schema. */
    char *sql = sqlite3_mprintf("SELECT * FROM \"%w\"", table);
    int rc;

    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
    sqlite3_free(sql);
    rows->columns = g_ptr_array_new_with_free_func(g_free);
    rows->rows =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_hash_table_unref);
    for (int i = 0; i < sqlite3_column_count(stmt); i++)
        g_ptr_array_add(rows->columns, g_strdup(sqlite3_column_name(stmt, i)));
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        g_autoptr(GHashTable) row = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GString) key = g_string_new(NULL);

        for (int i = 0; i < sqlite3_column_count(stmt); i++)
            g_hash_table_insert(row, g_strdup(sqlite3_column_name(stmt, i)), value_text(stmt, i));
        for (guint i = 0; i < key_columns->len; i++)
            g_string_append_printf(key, "%s%s = %s", i > 0 ? ", " : "",
                                   (const char *)key_columns->pdata[i],
                                   (const char *)g_hash_table_lookup(row, key_columns->pdata[i]));
        g_assert_true(g_hash_table_insert(rows->rows, g_string_free(g_steal_pointer(&key), FALSE),
                                          g_steal_pointer(&row)));
    }
    g_assert_cmpint(rc, ==, SQLITE_DONE);
    return g_steal_pointer(&rows);
}

/* Table name -> TableRows, for every table but SQLite's own. */
static GHashTable *
snapshot_take(sqlite3 *db)
{
    g_auto(GStrv) tables =
        query_rows(db, "SELECT name FROM sqlite_schema WHERE type = 'table' "
                       "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
    GHashTable *snapshot =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)table_rows_free);

    for (guint i = 0; tables[i] != NULL; i++)
        g_hash_table_insert(snapshot, g_strdup(tables[i]), table_rows_take(db, tables[i]));
    return snapshot;
}

/* New columns a migration fills from others, for the rows that get
 * something other than the default. */
static const struct {
    const char *table;
    const char *column;
    const char *key;
    const char *value;
} filled_columns[] = {
    /* 00008: the first owner of a trusted tenant is the first admin. */
    {"users", "admin", "id = text '" CAROL "'", "integer 1"},
};

/* What a column added to an existing table must hold in the rows it found:
 * its DEFAULT, or NULL, unless filled_columns says otherwise. */
static gchar *
column_default(sqlite3 *db, const char *table, const char *column, const char *key)
{
    g_autoptr(sqlite3_stmt) stmt = NULL;
    g_autoptr(sqlite3_stmt) value = NULL;
    char *sql;

    for (guint i = 0; i < G_N_ELEMENTS(filled_columns); i++) {
        if (g_str_equal(filled_columns[i].table, table) &&
            g_str_equal(filled_columns[i].column, column) &&
            g_str_equal(filled_columns[i].key, key))
            return g_strdup(filled_columns[i].value);
    }
    g_assert_cmpint(sqlite3_prepare_v2(db,
                                       "SELECT dflt_value FROM pragma_table_info(?1) "
                                       "WHERE name = ?2",
                                       -1, &stmt, NULL),
                    ==, SQLITE_OK);
    sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, column, -1, SQLITE_TRANSIENT);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    if (sqlite3_column_type(stmt, 0) == SQLITE_NULL)
        return g_strdup("NULL");
    /* The expression is the schema's own text. */
    sql = sqlite3_mprintf("SELECT %s", (const char *)sqlite3_column_text(stmt, 0));
    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &value, NULL), ==, SQLITE_OK);
    sqlite3_free(sql);
    g_assert_cmpint(sqlite3_step(value), ==, SQLITE_ROW);
    return value_text(value, 0);
}

static gboolean
has_column(const TableRows *table, const char *column)
{
    return g_ptr_array_find_with_equal_func(table->columns, column, g_str_equal, NULL);
}

/* Every table the old schema had is still there with every row it held,
 * each column with the same type and value; a new column holds its
 * default. Only schema_migrations gains rows. Failures name the table, row
 * and column. */
static void
assert_rows_kept(GHashTable *before, GHashTable *after, sqlite3 *db)
{
    GHashTableIter tables;
    gpointer name;
    gpointer value;
    guint compared = 0;

    g_hash_table_iter_init(&tables, before);
    while (g_hash_table_iter_next(&tables, &name, &value)) {
        const TableRows *was = value;
        const TableRows *now = g_hash_table_lookup(after, name);
        GHashTableIter rows;
        gpointer key;
        gpointer old_row;

        if (now == NULL)
            g_error("table %s is gone after migrating", (const char *)name);
        g_hash_table_iter_init(&rows, was->rows);
        while (g_hash_table_iter_next(&rows, &key, &old_row)) {
            GHashTable *new_row = g_hash_table_lookup(now->rows, key);

            for (guint i = 0; i < was->columns->len; i++) {
                const char *column = was->columns->pdata[i];
                g_autofree gchar *want =
                    g_strdup_printf("%s [%s] %s: %s", (const char *)name, (const char *)key, column,
                                    (const char *)g_hash_table_lookup(old_row, column));
                g_autofree gchar *got =
                    g_strdup_printf("%s [%s] %s: %s", (const char *)name, (const char *)key, column,
                                    new_row == NULL ? "(row gone)"
                                    : !has_column(now, column)
                                        ? "(column gone)"
                                        : (const char *)g_hash_table_lookup(new_row, column));
                g_assert_cmpstr(got, ==, want);
                compared++;
            }
            for (guint i = 0; i < now->columns->len; i++) {
                const char *column = now->columns->pdata[i];
                g_autofree gchar *fill = NULL;
                g_autofree gchar *want = NULL;
                g_autofree gchar *got = NULL;

                if (has_column(was, column))
                    continue;
                fill = column_default(db, name, column, key);
                want = g_strdup_printf("%s [%s] new %s: %s", (const char *)name, (const char *)key,
                                       column, fill);
                got = g_strdup_printf("%s [%s] new %s: %s", (const char *)name, (const char *)key,
                                      column, (const char *)g_hash_table_lookup(new_row, column));
                g_assert_cmpstr(got, ==, want);
            }
        }
        if (g_strcmp0(name, "schema_migrations") != 0) {
            g_test_message("%s: %u rows kept", (const char *)name, g_hash_table_size(was->rows));
            g_assert_cmpuint(g_hash_table_size(now->rows), ==, g_hash_table_size(was->rows));
        }
    }
    /* The fixture is not empty: something was compared. */
    g_assert_cmpuint(compared, >, 100);
}

/* The schema is exactly what a new database gets from the same migrations. */
static void
assert_schema_is_fresh(Fixture *f)
{
    const char *sql = "SELECT type, name, tbl_name, sql FROM sqlite_schema "
                      "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name";
    g_autofree gchar *path = g_build_filename(f->dir, "fresh.db", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraSqliteStore) fresh = einsora_sqlite_store_open(path, &error);
    g_autofree gchar *want = NULL;
    g_autofree gchar *got = NULL;

    g_assert_no_error(error);
    migrate(fresh, MIGRATED_US);
    want = query_joined(einsora_sqlite_store_get_handle(fresh), sql);
    got = query_joined(handle(f), sql);
    g_assert_cmpstr(got, ==, want);
}

static void
assert_intact(sqlite3 *db)
{
    g_autofree gchar *integrity = query_joined(db, "PRAGMA integrity_check");
    g_autofree gchar *foreign_keys = query_joined(db, "PRAGMA foreign_key_check");

    g_assert_cmpstr(integrity, ==, "ok");
    g_assert_cmpstr(foreign_keys, ==, "");
}

/* The fixture's rows of schema_migrations stay as make.sh wrote them (it
 * applies version k on 2026-10-01 plus k days); the rest are this run's. */
static void
assert_bookkeeping(sqlite3 *db, GPtrArray *builtin, gint64 from)
{
    g_auto(GStrv) rows =
        query_rows(db, "SELECT version, name, sha256, applied_at FROM schema_migrations "
                       "ORDER BY version");

    g_assert_cmpuint(g_strv_length(rows), ==, builtin->len);
    for (guint i = 0; i < builtin->len; i++) {
        const EinsoraMigration *m = g_ptr_array_index(builtin, i);
        g_autofree gchar *applied_at =
            m->version <= from
                ? g_strdup_printf("2026-10-%02" G_GINT64_FORMAT "T08:00:00.000000Z", 1 + m->version)
                : g_strdup(MIGRATED_AT);
        g_autofree gchar *want = g_strdup_printf("%" G_GINT64_FORMAT "|%s|%s|%s", m->version,
                                                 m->name, m->sha256, applied_at);
        g_assert_cmpstr(rows[i], ==, want);
    }
}

/* The rows read back through the store */

static void
assert_tenants(EinsoraStore *s)
{
    for (guint i = 0; i < G_N_ELEMENTS(tenants); i++) {
        const Tenant *want = &tenants[i];
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraTenant) got = einsora_store_get_tenant(s, want->id, &error);
        g_autoptr(EinsoraTenant) by_name = NULL;

        g_assert_no_error(error);
        g_assert_cmpstr(got->id, ==, want->id);
        g_assert_cmpstr(got->name, ==, want->name);
        g_assert_cmpint(got->trusted, ==, want->trusted);
        g_assert_cmpstr(got->created_at, ==, want->created_at);
        by_name = einsora_store_find_tenant_by_name(s, want->name, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(by_name->id, ==, want->id);
    }
}

static void
assert_user(const EinsoraUser *got, const User *want)
{
    g_assert_cmpstr(got->id, ==, want->id);
    g_assert_cmpstr(got->tenant_id, ==, want->tenant_id);
    g_assert_cmpstr(got->email, ==, want->email);
    g_assert_cmpstr(got->display_name, ==, want->display_name);
    g_assert_cmpstr(got->password_hash, ==, want->password_hash);
    g_assert_cmpstr(got->role, ==, want->role);
    g_assert_cmpstr(got->created_at, ==, want->created_at);
    g_assert_cmpstr(got->disabled_at, ==, want->disabled_at);
}

static void
assert_users(EinsoraStore *s)
{
    g_autoptr(GError) error = NULL;
    gint64 count = 0;

    for (guint i = 0; i < G_N_ELEMENTS(users); i++) {
        g_autoptr(EinsoraUser) got =
            einsora_store_get_user(s, users[i].tenant_id, users[i].id, &error);
        g_autoptr(EinsoraUser) by_email = NULL;

        g_assert_no_error(error);
        assert_user(got, &users[i]);
        by_email = einsora_store_find_user_by_email(s, users[i].email, &error);
        g_assert_no_error(error);
        assert_user(by_email, &users[i]);
    }
    g_assert_true(einsora_store_count_users(s, &count, &error));
    g_assert_no_error(error);
    g_assert_cmpint(count, ==, G_N_ELEMENTS(users));
}

static void
assert_api_token(const EinsoraApiToken *got, const ApiToken *want)
{
    g_assert_cmpstr(got->id, ==, want->id);
    g_assert_cmpstr(got->tenant_id, ==, want->tenant_id);
    g_assert_cmpstr(got->user_id, ==, want->user_id);
    g_assert_cmpstr(got->name, ==, want->name);
    g_assert_cmpstr(got->prefix, ==, want->prefix);
    g_assert_cmpstr(got->token_sha256, ==, want->token_sha256);
    g_assert_cmpstr(got->created_at, ==, want->created_at);
    g_assert_cmpstr(got->last_used_at, ==, want->last_used_at);
    g_assert_cmpstr(got->expires_at, ==, want->expires_at);
    g_assert_cmpstr(got->revoked_at, ==, want->revoked_at);
}

static void
assert_api_tokens(EinsoraStore *s)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) listed = einsora_store_list_api_tokens(s, ACME, ANN, &error);

    g_assert_no_error(error);
    g_assert_cmpuint(listed->len, ==, G_N_ELEMENTS(api_tokens));
    for (guint i = 0; i < G_N_ELEMENTS(api_tokens); i++) {
        g_autoptr(EinsoraApiToken) found =
            einsora_store_find_api_token(s, api_tokens[i].token_sha256, &error);

        g_assert_no_error(error);
        assert_api_token(found, &api_tokens[i]);
        assert_api_token(g_ptr_array_index(listed, i), &api_tokens[i]);
    }
}

static void
assert_sessions(EinsoraStore *s)
{
    for (guint i = 0; i < G_N_ELEMENTS(sessions); i++) {
        const Session *want = &sessions[i];
        g_autoptr(GError) error = NULL;
        g_autoptr(EinsoraSession) got = einsora_store_find_session(s, want->session_sha256, &error);

        g_assert_no_error(error);
        g_assert_cmpstr(got->id, ==, want->id);
        g_assert_cmpstr(got->tenant_id, ==, want->tenant_id);
        g_assert_cmpstr(got->user_id, ==, want->user_id);
        g_assert_cmpstr(got->session_sha256, ==, want->session_sha256);
        g_assert_cmpstr(got->csrf_sha256, ==, want->csrf_sha256);
        g_assert_cmpstr(got->created_at, ==, want->created_at);
        g_assert_cmpstr(got->expires_at, ==, want->expires_at);
        g_assert_cmpstr(got->revoked_at, ==, want->revoked_at);
    }
}

static void
assert_quotas(EinsoraStore *s)
{
    g_autoptr(GError) error = NULL;
    gint64 sums[EINSORA_WORKLOAD_STATE_COUNT];

    for (guint i = 0; i < G_N_ELEMENTS(quotas); i++) {
        gint64 gpus = -1;

        g_assert_true(
            einsora_store_get_quota(s, quotas[i].tenant_id, quotas[i].gpu_class, &gpus, &error));
        g_assert_no_error(error);
        g_assert_cmpint(gpus, ==, quotas[i].gpus);
    }
    /* What quota admission adds up: one GPU each running, queued, failed. */
    g_assert_true(einsora_store_gpus_by_state(s, ACME, "h100-80gb", sums, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < EINSORA_WORKLOAD_STATE_COUNT; i++) {
        gboolean held = i == EINSORA_WORKLOAD_STATE_RUNNING || i == EINSORA_WORKLOAD_STATE_QUEUED ||
                        i == EINSORA_WORKLOAD_STATE_FAILED;
        g_assert_cmpint(sums[i], ==, held ? 1 : 0);
    }
}

static void
assert_machine(const EinsoraMachine *got, const Machine *want)
{
    g_assert_cmpstr(got->id, ==, want->id);
    g_assert_cmpstr(got->tenant_id, ==, want->tenant_id);
    g_assert_cmpstr(got->name, ==, want->name);
    g_assert_cmpstr(got->region, ==, want->region);
    g_assert_cmpstr(got->os, ==, want->os);
    g_assert_cmpint(got->cpus, ==, want->cpus);
    g_assert_cmpint(got->memory_mib, ==, want->memory_mib);
    g_assert_cmpstr(einsora_sharing_to_string(got->sharing), ==, want->sharing);
    g_assert_cmpstr(got->inventory, ==, want->inventory);
    g_assert_cmpstr(got->last_seen_at, ==, want->last_seen_at);
    g_assert_cmpstr(got->created_at, ==, want->created_at);
    /* No agent had said its version or clock before 00011. */
    g_assert_null(got->agent_version);
    g_assert_false(got->has_clock_offset);
}

static void
assert_machines(EinsoraStore *s)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) in_region = einsora_store_list_region_machines(s, "local", &error);

    g_assert_no_error(error);
    g_assert_cmpuint(in_region->len, ==, G_N_ELEMENTS(machines));
    for (guint i = 0; i < G_N_ELEMENTS(machines); i++) {
        const Machine *want = &machines[i];
        g_autoptr(EinsoraMachine) got =
            einsora_store_get_machine(s, want->tenant_id, want->id, &error);
        g_autoptr(EinsoraMachine) found = NULL;
        g_autoptr(GPtrArray) owned = NULL;

        g_assert_no_error(error);
        assert_machine(got, want);
        found = einsora_store_find_machine(s, want->id, &error);
        g_assert_no_error(error);
        assert_machine(found, want);
        owned = einsora_store_list_machines(s, want->tenant_id, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(owned->len, ==, 1);
        assert_machine(g_ptr_array_index(owned, 0), want);
        assert_machine(g_ptr_array_index(in_region, i), want);
    }
}

static void
assert_workload(const EinsoraWorkload *got, const Workload *want)
{
    g_assert_cmpstr(got->id, ==, want->id);
    g_assert_cmpstr(got->tenant_id, ==, want->tenant_id);
    g_assert_cmpstr(einsora_workload_kind_to_string(got->kind), ==, want->kind);
    g_assert_cmpstr(got->name, ==, want->name);
    g_assert_cmpstr(einsora_workload_state_to_string(got->state), ==, want->state);
    g_assert_cmpstr(got->region, ==, want->region);
    g_assert_cmpstr(got->gpu_class, ==, want->gpu_class);
    g_assert_cmpstr(got->placed_class, ==, want->placed_class);
    g_assert_cmpstr(got->image, ==, want->image);
    g_assert_cmpint(got->gpus, ==, want->gpus);
    g_assert_cmpstr(got->machine_id, ==, want->machine_id);
    g_assert_cmpstr(got->driver, ==, want->driver);
    g_assert_cmpint(got->attempt, ==, want->attempt);
    g_assert_cmpint(got->version, ==, want->version);
    g_assert_cmpstr(got->created_by, ==, want->created_by);
    g_assert_cmpstr(got->created_at, ==, want->created_at);
    g_assert_cmpstr(got->updated_at, ==, want->updated_at);
}

/* @list holds, in order, the workloads @ids name. */
static void
assert_workload_list(GPtrArray *list, const char *const *ids)
{
    guint n = 0;

    for (guint i = 0; i < G_N_ELEMENTS(workloads); i++) {
        if (!g_strv_contains(ids, workloads[i].id))
            continue;
        g_assert_cmpuint(n, <, list->len);
        assert_workload(g_ptr_array_index(list, n), &workloads[i]);
        n++;
    }
    g_assert_cmpuint(list->len, ==, n);
    g_assert_cmpuint(n, ==, g_strv_length((GStrv)ids));
}

static void
assert_workloads(EinsoraStore *s)
{
    const char *const all_acme[] = {OLD, SCRATCH, TRAIN, ANALYSIS, SERVE, NULL};
    const char *const live_acme[] = {SCRATCH, TRAIN, ANALYSIS, SERVE, NULL};
    const char *const active_in_region[] = {ANALYSIS, SERVE, CAROL_VM, NULL};
    const char *const on_rack[] = {SCRATCH, TRAIN, ANALYSIS, NULL};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) list = NULL;

    for (guint i = 0; i < G_N_ELEMENTS(workloads); i++) {
        g_autoptr(EinsoraWorkload) got =
            einsora_store_get_workload(s, workloads[i].tenant_id, workloads[i].id, &error);
        g_assert_no_error(error);
        assert_workload(got, &workloads[i]);
        /* Made before endpoints named a model (00004): none has one. */
        g_assert_null(got->model);
        g_assert_null(got->model_digest);
    }
    {
        gint64 serving = -1;

        g_assert_true(einsora_store_count_workloads_with_model(s, "tiny", &serving, &error));
        g_assert_no_error(error);
        g_assert_cmpint(serving, ==, 0);
    }
    list = einsora_store_list_workloads(s, ACME, TRUE, &error);
    g_assert_no_error(error);
    assert_workload_list(list, all_acme);
    g_clear_pointer(&list, g_ptr_array_unref);
    list = einsora_store_list_workloads(s, ACME, FALSE, &error);
    g_assert_no_error(error);
    assert_workload_list(list, live_acme);
    g_clear_pointer(&list, g_ptr_array_unref);
    list = einsora_store_list_region_workloads(s, "local", &error);
    g_assert_no_error(error);
    assert_workload_list(list, active_in_region);
    g_clear_pointer(&list, g_ptr_array_unref);
    list = einsora_store_list_machine_workloads(s, RACK, &error);
    g_assert_no_error(error);
    assert_workload_list(list, on_rack);
}

static void
assert_event(const EinsoraWorkloadEvent *got, const Event *want)
{
    g_assert_cmpint(got->seq, ==, want->seq);
    g_assert_cmpstr(got->id, ==, want->id);
    g_assert_cmpstr(got->tenant_id, ==, want->tenant_id);
    g_assert_cmpstr(got->workload_id, ==, want->workload_id);
    g_assert_cmpstr(got->has_from_state ? einsora_workload_state_to_string(got->from_state) : NULL,
                    ==, want->from_state);
    g_assert_cmpstr(einsora_workload_state_to_string(got->to_state), ==, want->to_state);
    g_assert_cmpstr(got->reason, ==, want->reason);
    g_assert_cmpint(got->attempt, ==, want->attempt);
    g_assert_cmpstr(got->created_at, ==, want->created_at);
}

/* @list holds, in order, the events of @version's fixture that @tenant_id
 * (and @workload_id, unless NULL) has. */
static void
assert_event_list(GPtrArray *list, gint64 version, const char *tenant_id, const char *workload_id)
{
    guint n = 0;

    for (guint i = 0; i < G_N_ELEMENTS(events); i++) {
        const Event *want = &events[i];
        if (want->since > version || g_strcmp0(want->tenant_id, tenant_id) != 0 ||
            (workload_id != NULL && g_strcmp0(want->workload_id, workload_id) != 0))
            continue;
        g_assert_cmpuint(n, <, list->len);
        assert_event(g_ptr_array_index(list, n), want);
        n++;
    }
    g_assert_cmpuint(list->len, ==, n);
}

static gint64
last_seq(gint64 version)
{
    gint64 seq = 0;

    for (guint i = 0; i < G_N_ELEMENTS(events); i++) {
        if (events[i].since <= version)
            seq = MAX(seq, events[i].seq);
    }
    return seq;
}

static void
assert_events(EinsoraStore *s, gint64 version)
{
    g_autoptr(GError) error = NULL;

    for (guint i = 0; i < G_N_ELEMENTS(workloads); i++) {
        g_autoptr(GPtrArray) list =
            einsora_store_list_events(s, workloads[i].tenant_id, workloads[i].id, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(list->len, >, 0);
        assert_event_list(list, version, workloads[i].tenant_id, workloads[i].id);
    }
    for (guint i = 0; i < G_N_ELEMENTS(tenants); i++) {
        g_autoptr(GPtrArray) feed =
            einsora_store_list_tenant_events(s, tenants[i].id, 0, 100, &error);
        gint64 seq = 0;

        g_assert_no_error(error);
        assert_event_list(feed, version, tenants[i].id, NULL);
        g_assert_true(einsora_store_last_event_seq(s, tenants[i].id, &seq, &error));
        g_assert_no_error(error);
        g_assert_cmpint(seq, ==,
                        ((EinsoraWorkloadEvent *)g_ptr_array_index(feed, feed->len - 1))->seq);
    }
}

static void
assert_idempotency_record(EinsoraStore *s)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraIdempotencyRecord) got =
        einsora_store_get_idempotency_record(s, ACME, "Um4U37w2-create-serve-llm", &error);

    g_assert_no_error(error);
    g_assert_cmpstr(got->tenant_id, ==, ACME);
    g_assert_cmpstr(got->key, ==, "Um4U37w2-create-serve-llm");
    g_assert_cmpstr(got->request_sha256, ==,
                    "a8d4fb43f34e95083e6cfc68e835f0ceeb147d8d98ebdcc5f8dff6de972cf957");
    g_assert_cmpint(got->response_status, ==, 201);
    g_assert_cmpstr(got->response_body, ==,
                    "{\"id\":\"" SERVE "\",\"kind\":\"endpoint\",\"name\":\"serve-llm\","
                    "\"state\":\"pending\",\"region\":\"local\",\"gpu_class\":\"h100-80gb\","
                    "\"image\":\"vllm\"}");
    g_assert_cmpstr(got->created_at, ==, "2026-11-11T10:05:00.000000Z");
    g_assert_cmpstr(got->expires_at, ==, "2026-11-12T10:05:00.000000Z");
}

/* The lease still binds: another holder can't take it before it expires. */
static void
assert_lease(EinsoraStore *s)
{
    g_autoptr(GError) error = NULL;
    gboolean held = TRUE;

    g_assert_true(einsora_store_acquire_lease(s, "controller:local", MACBOOK,
                                              "2026-11-12T08:30:00.000000Z",
                                              "2026-11-12T08:30:45.000000Z", &held, &error));
    g_assert_no_error(error);
    g_assert_false(held);
}

static void
assert_raw_rows(sqlite3 *db)
{
    for (guint i = 0; i < G_N_ELEMENTS(raw_rows); i++) {
        g_auto(GStrv) got = query_rows(db, raw_rows[i].sql);
        g_autofree gchar *got_text = g_strjoinv("\n", got);
        g_autofree gchar *want_text = g_strjoinv("\n", (GStrv)raw_rows[i].rows);

        g_assert_cmpstr(got_text, ==, want_text);
    }
}

/* From version 2: Ann's unused ticket, still good until 08:21. The v1
 * table nothing wrote is replaced empty. Taking it reads and removes it. */
static void
assert_access_ticket(EinsoraStore *s, sqlite3 *db, gint64 version)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraAccessTicket) got = NULL;

    if (version < 2) {
        g_autofree gchar *rows = query_joined(db, "SELECT * FROM access_tickets");
        g_assert_cmpstr(rows, ==, "");
        return;
    }
    got = einsora_store_take_access_ticket(s, TICKET_SHA256, "2026-11-12T08:20:30.000000Z", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(got->hash, ==, TICKET_SHA256);
    g_assert_cmpstr(got->tenant_id, ==, ACME);
    g_assert_cmpstr(got->workload_id, ==, ANALYSIS);
    g_assert_cmpint(got->attempt, ==, 1);
    g_assert_cmpstr(got->created_by, ==, ANN);
    g_assert_cmpstr(got->created_at, ==, "2026-11-12T08:20:00.000000Z");
    g_assert_cmpstr(got->expires_at, ==, "2026-11-12T08:21:00.000000Z");
}

/* The migrated database takes new rows as a new one does: the timeline
 * goes on after its last seq, and a ticket of today's shape fits. */
static void
assert_takes_new_rows(EinsoraStore *s, gint64 version)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkloadEvent) event = einsora_workload_event_new();
    g_autoptr(EinsoraAccessTicket) ticket = einsora_access_ticket_new();
    g_autoptr(EinsoraAccessTicket) taken = NULL;
    g_autoptr(GPtrArray) feed = NULL;
    gint64 seq = 0;

    event->id = g_strdup(EVENT("99"));
    event->tenant_id = g_strdup(ACME);
    event->workload_id = g_strdup(ANALYSIS);
    event->has_from_state = TRUE;
    event->from_state = EINSORA_WORKLOAD_STATE_RUNNING;
    event->to_state = EINSORA_WORKLOAD_STATE_RUNNING;
    event->reason = g_strdup("open in a browser requested by " ANN " (web session)");
    event->attempt = 1;
    event->created_at = g_strdup(MIGRATED_AT);
    g_assert_true(einsora_store_append_event(s, event, &error));
    g_assert_no_error(error);
    g_assert_true(einsora_store_last_event_seq(s, ACME, &seq, &error));
    g_assert_no_error(error);
    g_assert_cmpint(seq, ==, last_seq(version) + 1);
    feed = einsora_store_list_tenant_events(s, ACME, last_seq(version), 10, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(feed->len, ==, 1);
    g_assert_cmpstr(((EinsoraWorkloadEvent *)g_ptr_array_index(feed, 0))->id, ==, EVENT("99"));

    ticket->hash = g_strdup("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    ticket->tenant_id = g_strdup(ACME);
    ticket->workload_id = g_strdup(ANALYSIS);
    ticket->attempt = 1;
    ticket->created_by = g_strdup(ANN);
    ticket->created_at = g_strdup(MIGRATED_AT);
    ticket->expires_at = g_strdup("2026-12-01T00:01:00.000000Z");
    g_assert_true(einsora_store_insert_access_ticket(s, ticket, &error));
    g_assert_no_error(error);
    taken = einsora_store_take_access_ticket(s, ticket->hash, MIGRATED_AT, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(taken->workload_id, ==, ANALYSIS);

    /* A migrated machine's agent says its version and clock (00011). */
    {
        const gint64 offset_ms = -250;
        g_autoptr(EinsoraMachine) got = NULL;

        g_assert_true(einsora_store_record_machine_seen(s, RACK, MIGRATED_AT, NULL, "0.1.0",
                                                        &offset_ms, &error));
        g_assert_no_error(error);
        got = einsora_store_find_machine(s, RACK, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(got->agent_version, ==, "0.1.0");
        g_assert_true(got->has_clock_offset);
        g_assert_cmpint(got->clock_offset_ms, ==, offset_ms);
        g_assert_cmpstr(got->inventory, ==, RACK_INVENTORY);
    }

    /* An endpoint made after the migration names its model (00004). */
    {
        g_autoptr(EinsoraWorkload) endpoint = einsora_workload_new();
        g_autoptr(EinsoraWorkload) got = NULL;
        gint64 serving = -1;

        endpoint->id = g_strdup(ID("0000000000e9"));
        endpoint->tenant_id = g_strdup(ACME);
        endpoint->kind = EINSORA_WORKLOAD_KIND_ENDPOINT;
        endpoint->name = g_strdup("chat");
        endpoint->state = EINSORA_WORKLOAD_STATE_PENDING;
        endpoint->region = g_strdup("local");
        endpoint->gpu_class = g_strdup("cpu-2c-4g");
        endpoint->image = g_strdup("llama-cpp");
        endpoint->model = g_strdup("tiny");
        endpoint->model_digest = g_strdup("sha256:" MIGRATED_HEX);
        endpoint->created_by = g_strdup(ANN);
        endpoint->created_at = g_strdup(MIGRATED_AT);
        endpoint->updated_at = g_strdup(MIGRATED_AT);
        g_assert_true(einsora_store_insert_workload(s, endpoint, &error));
        g_assert_no_error(error);
        got = einsora_store_get_workload(s, ACME, endpoint->id, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(got->model, ==, "tiny");
        g_assert_cmpstr(got->model_digest, ==, endpoint->model_digest);
        g_assert_true(einsora_store_count_workloads_with_model(s, "tiny", &serving, &error));
        g_assert_no_error(error);
        g_assert_cmpint(serving, ==, 1);
    }
}

#define SEQUENCES_SQL "SELECT name, seq FROM sqlite_sequence ORDER BY name"

static void
test_migrate_fixture(Fixture *f, gconstpointer data)
{
    gint64 version = GPOINTER_TO_UINT(data);
    g_autofree gchar *source = fixture_source(version);
    g_autoptr(GPtrArray) builtin = builtin_migrations();
    g_autoptr(GHashTable) before = NULL;
    g_autoptr(GHashTable) after = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *contents = NULL;
    g_autofree gchar *sequences = NULL;
    g_autofree gchar *sequences_after = NULL;
    gsize size = 0;

    if (!g_file_get_contents(source, &contents, &size, NULL)) {
        g_test_fail_printf("%s is missing: run tests/fixtures/migrations/make.sh %" G_GINT64_FORMAT
                           " and commit it",
                           source, version);
        return;
    }
    /* As the daemon made it: private to its user. */
    g_assert_true(g_file_set_contents_full(f->path, contents, size, G_FILE_SET_CONTENTS_CONSISTENT,
                                           0600, &error));
    g_assert_no_error(error);

    open_store(f);
    g_assert_cmpint(schema_version(handle(f)), ==, version);
    g_assert_false(einsora_store_check_ready(store(f), &error));
    g_clear_error(&error);
    before = snapshot_take(handle(f));
    sequences = query_joined(handle(f), SEQUENCES_SQL);
    migrate(f->store, MIGRATED_US);
    g_assert_cmpint(schema_version(handle(f)), ==, builtin->len);

    /* Everything below reads what a restarted daemon reads. */
    close_store(f);
    open_store(f);
    migrate(f->store, MIGRATED_US + G_USEC_PER_SEC);
    g_assert_true(einsora_store_check_ready(store(f), &error));
    g_assert_no_error(error);
    assert_intact(handle(f));
    assert_schema_is_fresh(f);
    assert_bookkeeping(handle(f), builtin, version);
    after = snapshot_take(handle(f));
    assert_rows_kept(before, after, handle(f));
    /* AUTOINCREMENT's high-water marks: a seq is never given twice. */
    sequences_after = query_joined(handle(f), SEQUENCES_SQL);
    g_assert_cmpstr(sequences_after, ==, sequences);

    assert_tenants(store(f));
    assert_users(store(f));
    assert_api_tokens(store(f));
    assert_sessions(store(f));
    assert_quotas(store(f));
    assert_machines(store(f));
    assert_workloads(store(f));
    assert_events(store(f), version);
    assert_idempotency_record(store(f));
    assert_raw_rows(handle(f));
    assert_lease(store(f));
    assert_access_ticket(store(f), handle(f), version);
    assert_takes_new_rows(store(f), version);
    assert_intact(handle(f));
}

int
main(int argc, char **argv)
{
    g_autoptr(GPtrArray) builtin = NULL;

    g_test_init(&argc, &argv, NULL);

    /* One test per version older than this binary's: a new migration needs
     * the fixture of the version before it. */
    builtin = builtin_migrations();
    for (guint v = 1; v < builtin->len; v++) {
        g_autofree gchar *path = g_strdup_printf("/migrations/sqlite/from-v%u/keeps-every-row", v);
        g_test_add(path, Fixture, GUINT_TO_POINTER(v), fixture_set_up, test_migrate_fixture,
                   fixture_tear_down);
    }

    return g_test_run();
}
