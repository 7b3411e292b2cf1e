/* einsora machines: the caller's own machines. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>

#include "einsora-table.h"

gboolean
einsora_cli_machines(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                     GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *machines;
    guint id_length;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_list_machines(client, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    machines = einsora_cli_get_array(root, "machines", error);
    if (machines == NULL)
        return FALSE;
    if (json_array_get_length(machines) == 0)
        return einsora_cli_write_text(_("No machines.\n"), error);

    id_length = einsora_cli_short_id_length(machines);
    table = einsora_table_new(9, (const char *const[]){_("ID"), _("NAME"), _("REGION"), _("STATUS"),
                                                       _("SYSTEM"), _("CPUS"), _("MEMORY"),
                                                       _("WORKLOADS"), _("LAST SEEN")});
    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = json_array_get_object_element(machines, i);
        JsonNode *memory_node;
        g_autofree gchar *id = NULL;
        g_autofree gchar *cpus = NULL;
        g_autofree gchar *memory = NULL;
        g_autofree gchar *workloads = NULL;
        g_autofree gchar *seen = NULL;

        if (machine == NULL)
            continue;
        id = g_strndup(einsora_cli_get_string(machine, "id"), id_length);
        cpus = einsora_cli_get_integer(machine, "cpus");
        memory_node = json_object_get_member(machine, "memory_mib");
        if (memory_node != NULL && JSON_NODE_HOLDS_VALUE(memory_node) &&
            json_node_get_value_type(memory_node) == G_TYPE_INT64 &&
            json_node_get_int(memory_node) >= 0)
            memory = g_format_size_full((guint64)json_node_get_int(memory_node) * 1024 * 1024,
                                        G_FORMAT_SIZE_IEC_UNITS);
        workloads = einsora_cli_get_integer(machine, "workloads");
        seen = einsora_cli_format_time(einsora_cli_get_string(machine, "last_seen_at"));
        einsora_table_append_row(table, (const char *const[]){
                                            id,
                                            einsora_cli_get_string(machine, "name"),
                                            einsora_cli_get_string(machine, "region"),
                                            einsora_cli_get_string(machine, "status"),
                                            einsora_cli_get_string(machine, "system"),
                                            cpus,
                                            memory,
                                            workloads,
                                            seen != NULL ? seen : _("never"),
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}
