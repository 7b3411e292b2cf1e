/* `einsora usage [--from WHEN] [--to WHEN] [--by class|workload|day]`:
 * the hours the caller's tenant's workloads spent running, from the
 * daemon's hourly usage records (GET /v1/usage). Usage, never money. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>

#include "einsora-short-id.h"
#include "einsora-table.h"

/* Hours to two decimals from whole seconds, without the locale's decimal
 * mark (a table read by scripts as well as people). */
static gchar *
format_hours(JsonObject *object, const char *member)
{
    JsonNode *node = json_object_get_member(object, member);
    gint64 seconds;
    gint64 hundredths;

    if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
        json_node_get_value_type(node) != G_TYPE_INT64 || json_node_get_int(node) < 0)
        return NULL;
    seconds = json_node_get_int(node);
    hundredths = (seconds + 18) / 36;
    return g_strdup_printf("%" G_GINT64_FORMAT ".%02" G_GINT64_FORMAT, hundredths / 100,
                           hundredths % 100);
}

static void
append_query(GString *query, const char *name, const char *value)
{
    g_autofree gchar *escaped = NULL;

    if (value == NULL)
        return;
    escaped = g_uri_escape_string(value, NULL, FALSE);
    g_string_append_printf(query, "%s%s=%s", query->len > 0 ? "&" : "", name, escaped);
}

gboolean
einsora_cli_usage(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    g_autofree gchar *from = NULL;
    g_autofree gchar *to = NULL;
    g_autofree gchar *by = NULL;
    GOptionEntry entries[] = {
        {"from", 0, 0, G_OPTION_ARG_STRING, &from,
         N_("From WHEN: a day (2026-12-01) or a time (2026-12-01T14:00:00Z); default 30 days "
            "before --to"),
         N_("WHEN")},
        {"to", 0, 0, G_OPTION_ARG_STRING, &to, N_("Until WHEN (default now)"), N_("WHEN")},
        {"by", 0, 0, G_OPTION_ARG_STRING, &by, N_("Sum by class (default), workload or day (UTC)"),
         N_("class|workload|day")},
        {NULL},
    };
    g_autoptr(GString) query = g_string_new(NULL);
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    g_autofree gchar *total_hours = NULL;
    g_autofree gchar *total_gpu_hours = NULL;
    EinsoraClient *client;
    JsonArray *groups;
    JsonObject *total;
    gboolean by_workload;
    guint id_length = 0;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    if (by != NULL && !g_str_equal(by, "class") && !g_str_equal(by, "workload") &&
        !g_str_equal(by, "day")) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("--by takes class, workload or day, not \"%s\""), by);
        return FALSE;
    }
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    append_query(query, "from", from);
    append_query(query, "to", to);
    append_query(query, "group_by", by);
    root = einsora_client_get_usage(client, query->str, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    groups = einsora_cli_get_array(root, "groups", error);
    if (groups == NULL)
        return FALSE;
    if (json_array_get_length(groups) == 0)
        return einsora_cli_write_text(_("No usage in that time.\n"), error);

    by_workload = g_strcmp0(by, "workload") == 0;
    if (by_workload) {
        /* As short as tells them apart, as other tables do. */
        g_autoptr(GPtrArray) ids = g_ptr_array_new();
        for (guint i = 0; i < json_array_get_length(groups); i++) {
            JsonObject *group = json_array_get_object_element(groups, i);
            const char *id = group != NULL ? einsora_cli_get_string(group, "workload_id") : NULL;
            if (id != NULL)
                g_ptr_array_add(ids, (gpointer)id);
        }
        id_length = einsora_short_id_length(ids);
    }
    if (by_workload)
        table = einsora_table_new(
            5, (const char *const[]){_("NAME"), _("ID"), _("KIND"), _("HOURS"), _("GPU HOURS")});
    else
        table = einsora_table_new(
            3, (const char *const[]){g_strcmp0(by, "day") == 0 ? _("DAY") : _("CLASS"), _("HOURS"),
                                     _("GPU HOURS")});
    for (guint i = 0; i < json_array_get_length(groups); i++) {
        JsonObject *group = json_array_get_object_element(groups, i);
        g_autofree gchar *hours = NULL;
        g_autofree gchar *gpu_hours = NULL;

        if (group == NULL)
            continue;
        hours = format_hours(group, "seconds");
        gpu_hours = format_hours(group, "gpu_seconds");
        if (by_workload) {
            const char *id = einsora_cli_get_string(group, "workload_id");
            g_autofree gchar *short_id = id != NULL ? g_strndup(id, id_length) : NULL;

            einsora_table_append_row(table, (const char *const[]){
                                                einsora_cli_get_string(group, "name"),
                                                short_id,
                                                einsora_cli_get_string(group, "kind"),
                                                hours,
                                                gpu_hours,
                                            });
        } else {
            const char *key =
                einsora_cli_get_string(group, g_strcmp0(by, "day") == 0 ? "day" : "gpu_class");
            einsora_table_append_row(table, (const char *const[]){key, hours, gpu_hours});
        }
    }
    total = json_object_get_object_member(json_node_get_object(root), "total");
    if (total != NULL) {
        total_hours = format_hours(total, "seconds");
        total_gpu_hours = format_hours(total, "gpu_seconds");
        if (by_workload)
            einsora_table_append_row(
                table, (const char *const[]){_("TOTAL"), "", "", total_hours, total_gpu_hours});
        else
            einsora_table_append_row(
                table, (const char *const[]){_("TOTAL"), total_hours, total_gpu_hours});
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}
