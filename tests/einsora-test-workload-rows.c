#include "einsora-test-workload-rows.h"

#include "einsora-test-daemon-sql.h"

/* A literal from the test's own values, never from outside; NULL is SQL
 * NULL. */
static void
append_literal(GString *sql, const char *value)
{
    if (value == NULL) {
        g_string_append(sql, "NULL");
        return;
    }
    g_string_append_c(sql, '\'');
    for (const char *c = value; *c != '\0'; c++) {
        if (*c == '\'')
            g_string_append_c(sql, '\'');
        g_string_append_c(sql, *c);
    }
    g_string_append_c(sql, '\'');
}

void
einsora_test_insert_workloads(EinsoraTestDaemon *daemon, const char *tenant_id, guint count,
                              const char *prefix)
{
    g_autoptr(GString) sql =
        g_string_new("INSERT INTO workloads (id, tenant_id, kind, name, state, region, gpu_class, "
                     "placed_class, image, gpus, machine_id, driver, attempt, version, created_by, "
                     "created_at, updated_at) VALUES ");
    g_autofree gchar *tag = NULL;

    g_assert_cmpuint(strlen(prefix), <=, 8);
    g_assert_cmpuint(count, >, 0);
    /* Eight hex digits of the prefix's hash make the IDs' fourth group. */
    tag = g_compute_checksum_for_string(G_CHECKSUM_SHA256, prefix, -1);
    tag[4] = '\0';
    for (guint i = 0; i < count; i++) {
        g_autofree gchar *id = g_strdup_printf("0190b5d2-7c4e-7abc-8%.3s-%012u", tag, i);
        g_autofree gchar *name = g_strdup_printf("%s-%05u", prefix, i);
        g_autofree gchar *at = g_strdup_printf("2026-01-01T00:00:00.%06uZ", i);

        g_string_append(sql, i == 0 ? "(" : ", (");
        append_literal(sql, id);
        g_string_append(sql, ", ");
        append_literal(sql, tenant_id);
        g_string_append(sql, ", 'notebook', ");
        append_literal(sql, name);
        g_string_append(sql, ", 'stopped', 'local', 'cpu-2c-4g', 'cpu-2c-4g', "
                             "'jupyter-notebook', 0, NULL, 'sim', 1, 3, 'loader', ");
        append_literal(sql, at);
        g_string_append(sql, ", ");
        append_literal(sql, at);
        g_string_append(sql, ")");
    }
    einsora_test_daemon_exec_sql(daemon, sql->str);
}

void
einsora_test_insert_history(const char *data_dir, const char *database_url, const char *tenant_id,
                            const char *workload_id, const char *name, const char *gpu_class,
                            const char *const *steps)
{
    g_autoptr(GString) sql = g_string_new("BEGIN; ");
    g_auto(GStrv) first = g_strsplit(steps[0], " ", 2);
    g_auto(GStrv) last = g_strsplit(steps[g_strv_length((GStrv)steps) - 1], " ", 2);
    g_autofree gchar *from = NULL;
    gboolean placed = FALSE;

    g_string_append(sql, "INSERT INTO workloads (id, tenant_id, kind, name, state, region, "
                         "gpu_class, placed_class, image, gpus, machine_id, driver, attempt, "
                         "version, created_by, created_at, updated_at) VALUES (");
    append_literal(sql, workload_id);
    g_string_append(sql, ", ");
    append_literal(sql, tenant_id);
    g_string_append(sql, ", 'notebook', ");
    append_literal(sql, name);
    g_string_append(sql, ", ");
    append_literal(sql, last[0]);
    g_string_append(sql, ", 'local', ");
    append_literal(sql, gpu_class);
    g_string_append(sql, ", ");
    append_literal(sql, gpu_class);
    g_string_append_printf(sql, ", 'jupyter-notebook', 0, NULL, 'sim', 1, %u, 'loader', ",
                           g_strv_length((GStrv)steps));
    append_literal(sql, first[1]);
    g_string_append(sql, ", ");
    append_literal(sql, last[1]);
    g_string_append(sql, "); ");
    for (guint i = 0; steps[i] != NULL; i++) {
        g_auto(GStrv) step = g_strsplit(steps[i], " ", 2);
        /* The workload's ID with the step in its first group: unique. */
        g_autofree gchar *id = g_strdup_printf("%08x%s", i + 1, workload_id + 8);

        placed = placed || g_str_equal(step[0], "provisioning");
        g_string_append(sql, "INSERT INTO workload_events (id, tenant_id, workload_id, "
                             "from_state, to_state, reason, attempt, created_at, placed_class) "
                             "VALUES (");
        append_literal(sql, id);
        g_string_append(sql, ", ");
        append_literal(sql, tenant_id);
        g_string_append(sql, ", ");
        append_literal(sql, workload_id);
        g_string_append(sql, ", ");
        append_literal(sql, from);
        g_string_append(sql, ", ");
        append_literal(sql, step[0]);
        g_string_append_printf(sql, ", 'a step', %d, ", placed ? 1 : 0);
        append_literal(sql, step[1]);
        g_string_append(sql, ", ");
        append_literal(sql, placed ? gpu_class : NULL);
        g_string_append(sql, "); ");
        g_free(from);
        from = g_strdup(step[0]);
    }
    g_string_append(sql, "COMMIT;");
    einsora_test_store_exec_sql(data_dir, database_url, sql->str);
}
