/* `einsora models`: the installation's model store (/v1/model-store):
 * list, add a GGUF file on the daemon's machine (watching the import to
 * its end), remove one no endpoint uses. */
#define G_LOG_DOMAIN "einsora-cli"

#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>

#include "einsora-cli.h"
#include "einsora-table.h"

/* How often an import is asked how far it got. */
#define IMPORT_POLL_US (200 * 1000)

static gchar *
format_size(JsonObject *object, const char *member)
{
    JsonNode *node = json_object_get_member(object, member);

    if (node == NULL || json_node_get_value_type(node) != G_TYPE_INT64)
        return g_strdup("-");
    return g_format_size((guint64)MAX(json_node_get_int(node), 0));
}

static gboolean
models_list(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
            GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *models;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_request(client, "GET", "/v1/model-store", NULL, NULL, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    models = einsora_cli_get_array(root, "models", error);
    if (models == NULL)
        return FALSE;
    if (json_array_get_length(models) == 0)
        return einsora_cli_write_text(_("No models. Add one with “einsora models add NAME "
                                        "PATH”.\n"),
                                      error);
    table = einsora_table_new(
        5, (const char *const[]){_("NAME"), _("SIZE"), _("ARCHITECTURE"), _("DIGEST"), _("ADDED")});
    for (guint i = 0; i < json_array_get_length(models); i++) {
        JsonObject *model = json_array_get_object_element(models, i);
        g_autofree gchar *name = NULL;
        g_autofree gchar *size = NULL;
        g_autofree gchar *architecture = NULL;
        g_autofree gchar *digest = NULL;
        g_autofree gchar *added = NULL;
        const char *full;

        if (model == NULL)
            continue;
        name = einsora_cli_shown(model, "name");
        size = format_size(model, "size");
        architecture = einsora_cli_shown(model, "architecture");
        full = einsora_cli_get_string(model, "digest");
        /* "sha256:" and the first 12 digits, as Ollama shows an ID. */
        digest = full != NULL ? g_strndup(full + MIN(strlen(full), 7), 12) : g_strdup("-");
        added = einsora_cli_format_time(einsora_cli_get_string(model, "added_at"));
        einsora_table_append_row(table, (const char *const[]){name, size, architecture, digest,
                                                              added != NULL ? added : "-"});
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

static gboolean
models_add(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv, GError **error)
{
    EinsoraClient *client;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) import = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autofree gchar *source = NULL;
    g_autofree gchar *watch = NULL;
    const char *state;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 2, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    /* A path is the daemon's to read: made absolute here, as a user means
     * it. Another tool's model goes as it is named. */
    if (g_str_has_prefix(argv[2], "ollama:") || g_str_has_prefix(argv[2], "lmstudio:") ||
        strstr(argv[2], "://") != NULL)
        source = g_strdup(argv[2]);
    else
        source = g_canonicalize_filename(argv[2], NULL);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, argv[1]);
    json_builder_set_member_name(builder, "source");
    json_builder_add_string_value(builder, source);
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    import = einsora_client_request(client, "POST", "/v1/model-store", body, NULL, NULL, error);
    if (import == NULL)
        return FALSE;
    watch = g_strdup_printf("/v1/model-store/imports/%s",
                            einsora_cli_get_string(json_node_get_object(import), "id"));
    for (;;) {
        JsonObject *object = json_node_get_object(import);
        g_autofree gchar *done = format_size(object, "bytes_done");
        g_autofree gchar *total = format_size(object, "bytes_total");

        state = einsora_cli_get_string(object, "state");
        if (g_strcmp0(state, "importing") != 0)
            break;
        /* The \r out of the message: translators never see it. */
        g_printerr("\r");
        /* TRANSLATORS: bytes read so far, of how many */
        g_printerr(_("importing: %s of %s"), done, total);
        g_usleep(IMPORT_POLL_US);
        g_clear_pointer(&import, json_node_unref);
        g_clear_pointer(&raw, g_bytes_unref);
        import = einsora_client_request(client, "GET", watch, NULL, NULL, &raw, error);
        if (import == NULL)
            return FALSE;
    }
    g_printerr("\r");
    if (g_strcmp0(state, "done") != 0) {
        g_autofree gchar *why = einsora_cli_shown(json_node_get_object(import), "error");
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("couldn't add model %s: %s"), argv[1], why);
        return FALSE;
    }
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    {
        g_autofree gchar *digest = einsora_cli_shown(json_node_get_object(import), "digest");
        g_autofree gchar *text = g_strdup_printf(_("Added model %s (%s)\n"), argv[1], digest);
        return einsora_cli_write_text(text, error);
    }
}

static gboolean
models_found(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
             GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *models;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_request(client, "GET", "/v1/local-models", NULL, NULL, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    models = einsora_cli_get_array(root, "models", error);
    if (models == NULL)
        return FALSE;
    if (json_array_get_length(models) == 0)
        return einsora_cli_write_text(_("No Ollama or LM Studio models on the daemon's "
                                        "machine.\n"),
                                      error);
    table = einsora_table_new(2, (const char *const[]){_("SOURCE"), _("SIZE")});
    for (guint i = 0; i < json_array_get_length(models); i++) {
        JsonObject *model = json_array_get_object_element(models, i);
        g_autofree gchar *source = NULL;
        g_autofree gchar *size = NULL;

        if (model == NULL)
            continue;
        source = einsora_cli_shown(model, "source");
        size = format_size(model, "size");
        einsora_table_append_row(table, (const char *const[]){source, size});
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

static gboolean
models_remove(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
              GError **error)
{
    EinsoraClient *client;
    g_autofree gchar *escaped = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr(JsonNode) answer = NULL;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    escaped = g_uri_escape_string(argv[1], NULL, FALSE);
    path = g_strdup_printf("/v1/model-store/%s", escaped);
    answer = einsora_client_request(client, "DELETE", path, NULL, NULL, NULL, error);
    if (answer == NULL)
        return FALSE;
    if (cli->options.json)
        return TRUE;
    text = g_strdup_printf(_("Removed model %s\n"), argv[1]);
    return einsora_cli_write_text(text, error);
}

static const EinsoraCliCommand model_commands[] = {
    {"list", NULL, N_("List the models in the daemon's model store"), models_list},
    {"add", N_("NAME SOURCE"),
     N_("Add a GGUF model as NAME, checked and hashed: a path on the daemon's machine, an "
        "http(s) URL, ollama:NAME[:TAG] or lmstudio:PUBLISHER/REPO/FILE.gguf"),
     models_add},
    {"found", NULL, N_("List the Ollama and LM Studio models on the daemon's machine"),
     models_found},
    {"remove", N_("NAME"), N_("Remove a model no endpoint uses"), models_remove},
    {NULL},
};

gboolean
einsora_cli_models(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                   GError **error)
{
    g_autofree gchar *description = einsora_cli_describe_commands(model_commands);
    g_autofree gchar *parent = g_strdup(g_get_prgname());

    /* Options up to the subcommand's name are the global ones. */
    if (!einsora_cli_parse_group(cli, command, NULL, model_commands, description, &argc, &argv,
                                 error))
        return FALSE;
    if (argc < 2)
        return models_list(cli, &model_commands[0], argc, argv, error);
    return einsora_cli_dispatch(cli, parent, model_commands, argc - 1, argv + 1, error);
}
