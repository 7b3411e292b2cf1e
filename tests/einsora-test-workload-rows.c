#include "einsora-test-workload-rows.h"

#include <sqlite3.h>

void
einsora_test_insert_workloads(const char *data_dir, const char *tenant_id, guint count,
                              const char *prefix)
{
    g_autofree gchar *db = g_build_filename(data_dir, "einsora.db", NULL);
    g_autofree gchar *tag = NULL;
    g_autofree gchar *sql = NULL;
    sqlite3 *handle = NULL;

    g_assert_cmpuint(strlen(prefix), <=, 8);
    g_assert_cmpuint(count, >, 0);
    /* Eight hex digits of the prefix's hash make the IDs' fourth group. */
    tag = g_compute_checksum_for_string(G_CHECKSUM_SHA256, prefix, -1);
    tag[4] = '\0';
    sql = g_strdup_printf(
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %u) "
        "INSERT INTO workloads (id, tenant_id, kind, name, state, region, gpu_class, "
        "placed_class, image, gpus, machine_id, driver, attempt, version, created_by, "
        "created_at, updated_at) "
        "SELECT printf('0190b5d2-7c4e-7abc-8%.3s-%%012d', i), '%s', 'notebook', "
        "printf('%s-%%05d', i), 'stopped', 'local', 'cpu-2c-4g', 'cpu-2c-4g', "
        "'jupyter-notebook', 0, NULL, 'sim', 1, 3, 'loader', "
        "printf('2026-01-01T00:00:00.%%06dZ', i), printf('2026-01-01T00:00:00.%%06dZ', i) "
        "FROM n",
        count - 1, tag, tenant_id, prefix);
    g_assert_cmpint(sqlite3_open(db, &handle), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    g_assert_cmpint(sqlite3_exec(handle, sql, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(handle);
}
