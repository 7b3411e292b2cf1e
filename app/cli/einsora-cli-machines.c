/* einsora machines [list | add]: the caller's own machines, and a
 * one-time command that enrols another (docs/adr/0055). */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>

#include "einsora-table.h"

/* Its agent's version, and how far its clock is off when that is past
 * what the server allows (docs/adr/0057); NULL (shown "-") when its
 * agent never said. */
static gchar *
agent_cell(JsonObject *machine)
{
    JsonNode *node = json_object_get_member(machine, "agent");
    JsonObject *agent;
    JsonNode *offset;
    const char *version;
    g_autofree gchar *seconds = NULL;
    gint64 ms;
    guint64 magnitude;

    if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
        return NULL;
    agent = json_node_get_object(node);
    version = einsora_cli_get_string(agent, "version");
    if (version == NULL)
        version = _("unknown version");
    offset = json_object_get_member(agent, "clock_offset_ms");
    if (!json_object_get_boolean_member_with_default(agent, "clock_skewed", FALSE) ||
        offset == NULL || !JSON_NODE_HOLDS_VALUE(offset) ||
        json_node_get_value_type(offset) != G_TYPE_INT64)
        return g_strdup(version);
    /* Whole seconds, either way: which way is in --json. Unsigned, so
     * that no offset a server sends overflows. */
    ms = json_node_get_int(offset);
    magnitude = ms < 0 ? (guint64)0 - (guint64)ms : (guint64)ms;
    magnitude = magnitude / 1000 + (magnitude % 1000 >= 500);
    seconds = g_strdup_printf("%" G_GUINT64_FORMAT, magnitude);
    /* TRANSLATORS: the agent's version, then seconds its clock is off by */
    return g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%s, clock off by %ss",
                                       "%s, clock off by %ss", (gulong)magnitude),
                           version, seconds);
}

static gboolean
machines_list(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
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
    table =
        einsora_table_new(10, (const char *const[]){_("ID"), _("NAME"), _("REGION"), _("STATUS"),
                                                    _("SYSTEM"), _("CPUS"), _("MEMORY"),
                                                    _("WORKLOADS"), _("LAST SEEN"), _("AGENT")});
    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = json_array_get_object_element(machines, i);
        JsonNode *memory_node;
        g_autofree gchar *id = NULL;
        g_autofree gchar *cpus = NULL;
        g_autofree gchar *memory = NULL;
        g_autofree gchar *workloads = NULL;
        g_autofree gchar *seen = NULL;
        g_autofree gchar *agent = NULL;

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
        agent = agent_cell(machine);
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
                                            agent,
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

/* einsora share MACHINE private|community: who may run on one of your
 * machines (docs/adr/0050). MACHINE is an ID or the start of one. */
/* The token is printed once, inside the command to run on the other
 * machine; the server keeps its SHA-256 only. */
static gboolean
machines_add(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
             GError **error)
{
    g_autofree gchar *name = NULL;
    g_autofree gchar *region = NULL;
    const GOptionEntry entries[] = {
        {"name", 0, 0, G_OPTION_ARG_STRING, &name,
         N_("The machine's name (default: made from its ID)"), N_("NAME")},
        {"region", 0, 0, G_OPTION_ARG_STRING, &region, N_("Its region (default: the server's)"),
         N_("REGION")},
        {NULL},
    };
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autofree gchar *text = NULL;
    g_autofree gchar *until = NULL;
    EinsoraClient *client;
    JsonObject *answer;
    JsonObject *enrolment;

    if (!einsora_cli_parse(cli, command, entries,
                           _("Prints the one command that enrols another machine as an agent of "
                             "this server: run it there within the hour. It works once."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    json_builder_begin_object(builder);
    if (name != NULL) {
        json_builder_set_member_name(builder, "name");
        json_builder_add_string_value(builder, name);
    }
    if (region != NULL) {
        json_builder_set_member_name(builder, "region");
        json_builder_add_string_value(builder, region);
    }
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    root =
        einsora_client_request(client, "POST", "/v1/machines/enrolments", body, NULL, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    answer = json_node_get_object(root);
    enrolment = json_object_get_object_member(answer, "enrolment");
    if (enrolment == NULL) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                            _("the server's answer has no enrolment"));
        return FALSE;
    }
    until = einsora_cli_format_time(einsora_cli_get_string(enrolment, "expires_at"));
    text = g_strdup_printf(_("On the other machine, run this once, before %s (it works only "
                             "once, and only from there to this server):\n\n  %s\n"),
                           until, einsora_cli_get_string(answer, "command"));
    return einsora_cli_write_text(text, error);
}

/* The one machine of the caller's whose ID starts with @prefix. */
static gchar *
resolve_machine(EinsoraClient *client, const char *prefix, GError **error)
{
    g_autoptr(JsonNode) list = einsora_client_list_machines(client, NULL, error);
    g_autofree gchar *id = NULL;
    JsonArray *machines;
    guint matches = 0;

    if (list == NULL || (machines = einsora_cli_get_array(list, "machines", error)) == NULL)
        return NULL;
    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = json_array_get_object_element(machines, i);
        const char *machine_id = machine != NULL ? einsora_cli_get_string(machine, "id") : NULL;
        if (machine_id != NULL && g_str_has_prefix(machine_id, prefix)) {
            g_free(id);
            id = g_strdup(machine_id);
            matches++;
        }
    }
    if (matches != 1) {
        g_set_error(error, EINSORA_CLI_ERROR,
                    matches == 0 ? EINSORA_CLI_ERROR_FAILED : EINSORA_CLI_ERROR_USAGE,
                    matches == 0 ? _("no machine of yours starts with “%s”")
                                 : _("“%s” is the start of several machines' IDs: give more of it"),
                    prefix);
        return NULL;
    }
    return g_steal_pointer(&id);
}

/* einsora machines revoke ID: its agent's certificate works no more. */
static gboolean
machines_revoke(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                GError **error)
{
    EinsoraClient *client;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;

    if (!einsora_cli_parse(cli, command, NULL,
                           _("Its agent's next sync, and any it holds now, is refused; its "
                             "workloads then count as on a machine gone offline. To use it "
                             "again, enrol it again (einsora machines add)."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL || (id = resolve_machine(client, argv[1], error)) == NULL)
        return FALSE;
    path = g_strdup_printf("/v1/machines/%s/revoke", id);
    root = einsora_client_request(client, "POST", path, NULL, NULL, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    text = g_strdup_printf(_("%s is revoked: its agent can't sync any more\n"),
                           einsora_cli_get_string(json_node_get_object(root), "name"));
    return einsora_cli_write_text(text, error);
}

static const EinsoraCliCommand machines_commands[] = {
    {"list", NULL, N_("List your machines (the default)"), machines_list},
    {"add", NULL, N_("Print the one command that enrols another machine (--name, --region)"),
     machines_add},
    {"revoke", N_("ID"), N_("Revoke a machine's agent certificate: it can't sync any more"),
     machines_revoke},
    {NULL},
};

gboolean
einsora_cli_machines(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                     GError **error)
{
    g_autofree gchar *parent = g_strdup(g_get_prgname());

    /* Completing the word after "machines": its commands. */
    if (cli->completion != NULL && argc < 2)
        return einsora_cli_parse_group(cli, command, NULL, machines_commands, NULL, &argc, &argv,
                                       error);
    /* Without a command: the list, as before there were commands. */
    for (guint i = 0; machines_commands[i].name != NULL; i++) {
        if (argc >= 2 && g_strcmp0(argv[1], machines_commands[i].name) == 0)
            return einsora_cli_dispatch(cli, parent, machines_commands, argc - 1, argv + 1, error);
    }
    return machines_list(cli, command, argc, argv, error);
}

gboolean
einsora_cli_share(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    EinsoraClient *client;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr(GBytes) raw = NULL;

    if (!einsora_cli_parse(cli, command, NULL,
                           _("private: your tenant's workloads only. community: the Lab's other "
                             "tenants may run here too, in bubblewrap's sandbox or a VM, never "
                             "with docker; you see what they hold, never what it is."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 2, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL || (id = resolve_machine(client, argv[1], error)) == NULL)
        return FALSE;
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "sharing");
    json_builder_add_string_value(builder, argv[2]);
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    path = g_strdup_printf("/v1/machines/%s/sharing", id);
    root = einsora_client_request(client, "PUT", path, body, NULL, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    text = g_strdup_printf(_("%s is now %s\n"),
                           einsora_cli_get_string(json_node_get_object(root), "name"),
                           einsora_cli_get_string(json_node_get_object(root), "sharing"));
    return einsora_cli_write_text(text, error);
}
