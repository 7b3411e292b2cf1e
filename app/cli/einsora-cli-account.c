/* einsora me, and einsora tokens [list | create NAME | revoke ID]. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>

#include "einsora-table.h"

gboolean
einsora_cli_me(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
               GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonObject *me;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_get_me(client, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    me = json_node_get_object(root);
    table = einsora_table_new(2, NULL);
    einsora_table_append_row(
        table, (const char *const[]){_("Subject:"), einsora_cli_get_string(me, "subject")});
    einsora_table_append_row(
        table, (const char *const[]){_("User:"), einsora_cli_get_string(me, "user_id")});
    einsora_table_append_row(
        table, (const char *const[]){_("Tenant:"), einsora_cli_get_string(me, "tenant_id")});
    einsora_table_append_row(
        table, (const char *const[]){_("Signed in with:"), einsora_cli_get_string(me, "via")});
    einsora_table_append_row(
        table, (const char *const[]){_("Server:"), einsora_client_get_base_url(client)});
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

/* "active", "revoked" or "expired", from the token's own times. */
static const char *
token_status(JsonObject *token)
{
    const char *expires = einsora_cli_get_string(token, "expires_at");

    if (einsora_cli_get_string(token, "revoked_at") != NULL)
        return _("revoked");
    if (expires != NULL) {
        g_autoptr(GDateTime) at = g_date_time_new_from_iso8601(expires, NULL);
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        if (at != NULL && g_date_time_compare(at, now) <= 0)
            return _("expired");
    }
    return _("active");
}

static gboolean
tokens_list(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
            GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *tokens;
    guint id_length;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_list_tokens(client, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    tokens = einsora_cli_get_array(root, "tokens", error);
    if (tokens == NULL)
        return FALSE;
    if (json_array_get_length(tokens) == 0)
        return einsora_cli_write_text(_("No API tokens.\n"), error);

    id_length = einsora_cli_short_id_length(tokens);
    table =
        einsora_table_new(7, (const char *const[]){_("ID"), _("NAME"), _("PREFIX"), _("CREATED"),
                                                   _("LAST USED"), _("EXPIRES"), _("STATUS")});
    for (guint i = 0; i < json_array_get_length(tokens); i++) {
        JsonObject *token = json_array_get_object_element(tokens, i);
        g_autofree gchar *id = NULL;
        g_autofree gchar *created = NULL;
        g_autofree gchar *used = NULL;
        g_autofree gchar *expires = NULL;

        if (token == NULL)
            continue;
        id = g_strndup(einsora_cli_get_string(token, "id"), id_length);
        created = einsora_cli_format_time(einsora_cli_get_string(token, "created_at"));
        used = einsora_cli_format_time(einsora_cli_get_string(token, "last_used_at"));
        expires = einsora_cli_format_time(einsora_cli_get_string(token, "expires_at"));
        /* The prefix is the token's public name tag, never its secret. */
        einsora_table_append_row(table, (const char *const[]){
                                            id,
                                            einsora_cli_get_string(token, "name"),
                                            einsora_cli_get_string(token, "prefix"),
                                            created,
                                            used != NULL ? used : _("never"),
                                            expires != NULL ? expires : _("never"),
                                            token_status(token),
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

static gboolean
tokens_create(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
              GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *shown_name = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *text = NULL;
    JsonObject *answer;
    JsonNode *token;
    const char *secret;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    /* Arguments come in the locale's encoding; the API takes UTF-8. */
    name = g_locale_to_utf8(argv[1], -1, NULL, NULL, NULL);
    if (name == NULL || !g_utf8_validate(name, -1, NULL)) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("the token's name is not text in this locale's encoding"));
        return FALSE;
    }
    root = einsora_client_create_token(client, name, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    answer = json_node_get_object(root);
    token = json_object_get_member(answer, "token");
    secret = einsora_cli_get_string(answer, "secret");
    if (token == NULL || !JSON_NODE_HOLDS_OBJECT(token) || secret == NULL) {
        g_propagate_error(error,
                          einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 0,
                                                   _("the server's answer has no new token")));
        return FALSE;
    }
    shown_name = einsora_cli_shown(json_node_get_object(token), "name");
    id = einsora_cli_shown(json_node_get_object(token), "id");
    /* The secret is printed here, once; the server keeps only its hash. */
    text = g_strdup_printf(_("Created API token “%s” (%s). Its secret is shown only this once; "
                             "keep it somewhere safe:\n%s\n"),
                           shown_name, id, secret);
    return einsora_cli_write_text(text, error);
}

static gboolean
tokens_revoke(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
              GError **error)
{
    g_autofree gchar *id = NULL;
    g_autofree gchar *text = NULL;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    id = einsora_cli_resolve_token(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    if (!einsora_client_revoke_token(einsora_cli_get_client(cli, NULL), id, error))
        return FALSE;
    /* The API answers 204 without a body: for --json, the exit status says
     * it all. */
    if (cli->options.json)
        return TRUE;
    text = g_strdup_printf(_("Revoked API token %s\n"), id);
    return einsora_cli_write_text(text, error);
}

static const EinsoraCliCommand token_commands[] = {
    {"list", NULL, N_("List your API tokens, revoked ones included"), tokens_list},
    {"create", N_("NAME"), N_("Create an API token and print its secret, once"), tokens_create},
    {"revoke", N_("ID"), N_("Revoke one of your API tokens"), tokens_revoke},
    {NULL},
};

gboolean
einsora_cli_tokens(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                   GError **error)
{
    g_autofree gchar *description = einsora_cli_describe_commands(token_commands);
    g_autofree gchar *parent = g_strdup(g_get_prgname());

    /* Options up to the subcommand's name are the global ones. */
    if (!einsora_cli_parse_group(cli, command, NULL, token_commands, description, &argc, &argv,
                                 error))
        return FALSE;
    if (argc < 2)
        return tokens_list(cli, &token_commands[0], argc, argv, error);
    return einsora_cli_dispatch(cli, parent, token_commands, argc - 1, argv + 1, error);
}
