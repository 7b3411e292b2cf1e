/* `einsora chat ID PROMPT`: one answer from a running endpoint, streamed
 * to the terminal as it arrives, through the endpoint's base URL (the
 * access proxy) with the caller's own API token. */
#define G_LOG_DOMAIN "einsora-cli"

#include <glib/gi18n.h>
#include <stdio.h>

#include "einsora-cli.h"
#include "einsora-endpoint-chat.h"
#include "einsora-table.h"

/* A model's text may hold control characters; a terminal gets them
 * cleaned, except the newlines and tabs that shape an answer. */
static void
write_piece(const char *text, gpointer user_data)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (guint i = 0; lines[i] != NULL; i++) {
        g_auto(GStrv) cells = g_strsplit(lines[i], "\t", -1);

        if (i > 0)
            fputc('\n', stdout);
        for (guint j = 0; cells[j] != NULL; j++) {
            g_autofree gchar *clean = einsora_table_clean(cells[j]);

            if (j > 0)
                fputc('\t', stdout);
            fputs(clean, stdout);
        }
    }
    fflush(stdout);
    *(gboolean *)user_data = TRUE;
}

gboolean
einsora_cli_chat(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                 GError **error)
{
    gboolean show_usage = FALSE;
    GOptionEntry entries[] = {
        {"usage", 'u', 0, G_OPTION_ARG_NONE, &show_usage,
         N_("Afterwards, print the tokens counted and the time taken to standard error"), NULL},
        {NULL},
    };
    g_autofree gchar *id = NULL;
    g_autoptr(JsonNode) grant = NULL;
    EinsoraClient *client;
    EinsoraChatUsage usage = {0};
    gboolean wrote = FALSE;
    const char *base_url;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 2, error))
        return FALSE;
    id = einsora_cli_resolve_workload(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    /* An endpoint's access grant is its base URL: no ticket, no expiry. */
    grant = einsora_client_open_workload(client, id, NULL, error);
    if (grant == NULL)
        return FALSE;
    base_url = JSON_NODE_HOLDS_OBJECT(grant) ? json_object_get_string_member_with_default(
                                                   json_node_get_object(grant), "base_url", NULL)
                                             : NULL;
    if (base_url == NULL) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                            _("the server gave no base URL: is this workload an endpoint?"));
        return FALSE;
    }
    if (!einsora_endpoint_chat(base_url, einsora_client_get_token(client),
                               einsora_client_get_tls_database(client), NULL, argv[2], write_piece,
                               &wrote, &usage, error))
        return FALSE;
    if (wrote)
        fputc('\n', stdout);
    if (show_usage) {
        /* Each count a phrase of its own, so that each takes its own
         * plural form; long long because xgettext can't read
         * G_GINT64_FORMAT in a message. */
        g_autofree gchar *prompt =
            g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%lld prompt token", "%lld prompt tokens",
                                        (gulong)MAX(usage.prompt_tokens, 0)),
                            (long long)usage.prompt_tokens);
        g_autofree gchar *answered =
            /* TRANSLATORS: tokens the model answered with */
            g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%lld answered", "%lld answered",
                                        (gulong)MAX(usage.completion_tokens, 0)),
                            (long long)usage.completion_tokens);

        /* TRANSLATORS: the prompt's tokens ("12 prompt tokens"), the
         * answer's ("34 answered"), then seconds to the first piece and
         * to the last */
        g_printerr(_("%s, %s; first after %.3f s, all after %.3f s\n"), prompt, answered,
                   usage.first_piece_us / (double)G_USEC_PER_SEC,
                   usage.total_us / (double)G_USEC_PER_SEC);
    }
    return TRUE;
}
