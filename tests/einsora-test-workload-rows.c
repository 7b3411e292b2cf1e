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

void
einsora_test_insert_history(const char *data_dir, const char *tenant_id, const char *workload_id,
                            const char *name, const char *gpu_class, const char *const *steps)
{
    g_autofree gchar *db = g_build_filename(data_dir, "einsora.db", NULL);
    g_autoptr(GString) sql = g_string_new("BEGIN IMMEDIATE;");
    g_auto(GStrv) first = g_strsplit(steps[0], " ", 2);
    g_auto(GStrv) last = g_strsplit(steps[g_strv_length((GStrv)steps) - 1], " ", 2);
    g_autofree gchar *from = NULL;
    gboolean placed = FALSE;
    char *text;
    sqlite3 *handle = NULL;

    /* Values from the test itself, never from outside: %Q quotes them. */
    text = sqlite3_mprintf(
        "INSERT INTO workloads (id, tenant_id, kind, name, state, region, gpu_class, "
        "placed_class, image, gpus, machine_id, driver, attempt, version, created_by, "
        "created_at, updated_at) VALUES (%Q, %Q, 'notebook', %Q, %Q, 'local', %Q, %Q, "
        "'jupyter-notebook', 0, NULL, 'sim', 1, %d, 'loader', %Q, %Q);",
        workload_id, tenant_id, name, last[0], gpu_class, gpu_class,
        (int)g_strv_length((GStrv)steps), first[1], last[1]);
    g_string_append(sql, text);
    sqlite3_free(text);
    for (guint i = 0; steps[i] != NULL; i++) {
        g_auto(GStrv) step = g_strsplit(steps[i], " ", 2);
        /* The workload's ID with the step in its first group: unique. */
        g_autofree gchar *id = g_strdup_printf("%08x%s", i + 1, workload_id + 8);

        placed = placed || g_str_equal(step[0], "provisioning");
        text = sqlite3_mprintf("INSERT INTO workload_events (id, tenant_id, workload_id, "
                               "from_state, to_state, reason, attempt, created_at, placed_class) "
                               "VALUES (%Q, %Q, %Q, %Q, %Q, 'a step', %d, %Q, %Q);",
                               id, tenant_id, workload_id, from, step[0], placed ? 1 : 0, step[1],
                               placed ? gpu_class : NULL);
        g_string_append(sql, text);
        sqlite3_free(text);
        g_free(from);
        from = g_strdup(step[0]);
    }
    g_string_append(sql, "COMMIT;");
    g_assert_cmpint(sqlite3_open(db, &handle), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    g_assert_cmpint(sqlite3_exec(handle, sql->str, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(handle);
}
