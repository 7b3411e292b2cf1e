/* einsora: the command-line client of an Einsora daemon's /v1 API.
 * Exit status: 0 done, 1 the API or the connection failed, 2 the command
 * line is wrong. */
#define G_LOG_DOMAIN "einsora-cli"

#include <glib/gi18n.h>
#include <locale.h>
#include <stdlib.h>

#include "einsora-cli-complete.h"
#include "einsora-cli.h"

static const EinsoraCliCommand commands[] = {
    {"workloads", NULL, N_("List your workloads"), einsora_cli_workloads},
    {"launch", NULL, N_("Create a workload"), einsora_cli_launch},
    {"start", N_("ID"), N_("Start a stopped or failed workload"), einsora_cli_start,
     EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"stop", N_("ID"), N_("Stop a provisioning or running workload"), einsora_cli_stop,
     EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"delete", N_("ID"), N_("Delete a workload and everything it stored"), einsora_cli_delete,
     EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"open", N_("ID"),
     N_("Print a one-time link that opens a running notebook (--browser: open it), or a "
        "running endpoint's base URL; for a server elsewhere, relay them from this machine's "
        "loopback until Ctrl-C"),
     einsora_cli_open, EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"chat", N_("ID PROMPT"), N_("Stream a running endpoint's answer to PROMPT"), einsora_cli_chat,
     EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"events", N_("ID"), N_("Show a workload's timeline"), einsora_cli_events,
     EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"logs", N_("ID"),
     N_("Print a workload's output (-f: follow it while the attempt runs; --tail N, --attempt N, "
        "--since WHEN)"),
     einsora_cli_logs, EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"watch", N_("[ID]"), N_("Print events as they happen, of all your workloads or of one"),
     einsora_cli_watch, EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"export", N_("ID"), N_("Print a workload's complete record and timeline, as the API gives it"),
     einsora_cli_export, EINSORA_CLI_ARGUMENT_WORKLOAD},
    {"machines", N_("[list | add]"),
     N_("List your machines; add: print the one command that enrols another"),
     einsora_cli_machines},
    {"share", N_("MACHINE private|community"),
     N_("Choose who may run on one of your machines: your tenant, or the Lab's too"),
     einsora_cli_share},
    {"models", N_("[list | add NAME SOURCE | found | remove NAME]"),
     N_("List, add and remove the models endpoints serve"), einsora_cli_models},
    {"catalog", NULL, N_("List the classes, with your GPU quota, and the images you can launch"),
     einsora_cli_catalog},
    {"usage", NULL,
     N_("Show the hours your workloads ran, by class, workload or day (--from, --to, --by)"),
     einsora_cli_usage},
    {"tokens", N_("[list | create NAME | revoke ID]"), N_("List, create and revoke API tokens"),
     einsora_cli_tokens},
    {"me", NULL, N_("Show whom the token belongs to"), einsora_cli_me},
    {"password", NULL, N_("Change your password (read from the terminal or standard input)"),
     einsora_cli_password},
    {"audit", NULL, N_("Show your tenant's audit trail: what admins changed"), einsora_cli_audit},
    {"admin", N_("accounts | tenants | quota"),
     N_("A Lab admin's commands: accounts, tenants and GPU quotas"), einsora_cli_admin},
    {"login", N_("URL"),
     N_("Trust a server's TLS certificate: check its fingerprint and pin it (--fingerprint "
        "SHA256:… for scripts)"),
     einsora_cli_login},
    {"completion", N_("bash|zsh|fish"),
     N_("Print the shell's completion script (the package installs them already)"),
     einsora_cli_completion, EINSORA_CLI_ARGUMENT_SHELL},
    {NULL},
};

static int
report(const GError *error)
{
    if (error->domain == EINSORA_CLIENT_ERROR) {
        const char *code = einsora_client_error_get_code(error);
        const char *request_id = einsora_client_error_get_request_id(error);

        if (code == NULL)
            code = EINSORA_CLIENT_CODE_BAD_RESPONSE;
        if (request_id != NULL)
            /* TRANSLATORS: code, message, the server's request ID */
            g_printerr(_("einsora: %s: %s (request %s)\n"), code, error->message, request_id);
        else
            g_printerr(_("einsora: %s: %s\n"), code, error->message);
        return EINSORA_CLI_EXIT_FAILED;
    }
    g_printerr(_("einsora: %s\n"), error->message);
    if (g_error_matches(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE)) {
        g_printerr(_("Try “%s --help” for more information.\n"), g_get_prgname());
        return EINSORA_CLI_EXIT_USAGE;
    }
    return EINSORA_CLI_EXIT_FAILED;
}

/* einsora __complete WORD…: the words after "einsora" up to the cursor's
 * (the last, maybe empty); prints what may go there, one a line. Never an
 * error: a shell is asking, not a person. */
static int
complete(const EinsoraCliCommand *root, const GOptionEntry *entries, int count, char **words)
{
    g_auto(EinsoraCli) cli = {0};
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    int args_count;
    char **args_vector;

    cli.completion = einsora_cli_completion_new(count > 0 ? words[count - 1] : "");
    g_ptr_array_add(args, "einsora");
    for (int i = 0; i + 1 < count; i++)
        g_ptr_array_add(args, words[i]);
    g_ptr_array_add(args, NULL);
    args_count = (int)args->len - 1;
    args_vector = (char **)args->pdata;
    if (einsora_cli_parse_group(&cli, root, entries, commands, NULL, &args_count, &args_vector,
                                &error))
        einsora_cli_dispatch(&cli, "einsora", commands, args_count - 1, args_vector + 1, &error);
    einsora_cli_completion_print(cli.completion);
    return EINSORA_CLI_EXIT_OK;
}

int
main(int argc, char **argv)
{
    static const EinsoraCliCommand root = {
        "einsora", N_("COMMAND [ARGUMENTS…]"),
        N_("The command-line client of an Einsora daemon: workloads, their timelines, machines "
           "and API tokens."),
        NULL};
    g_auto(EinsoraCli) cli = {0};
    g_autoptr(GError) error = NULL;
    g_autofree gchar *list = NULL;
    g_autofree gchar *description = NULL;
    gboolean version = FALSE;
    const GOptionEntry entries[] = {
        {"version", 0, 0, G_OPTION_ARG_NONE, &version, N_("Print the version and exit"), NULL},
        {NULL},
    };

    setlocale(LC_ALL, "");
    bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
    bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
    textdomain(GETTEXT_PACKAGE);
    g_set_prgname("einsora");
    if (argc >= 2 && g_str_equal(argv[1], "__complete"))
        return complete(&root, entries, argc - 2, argv + 2);

    list = einsora_cli_describe_commands(commands);
    description = g_strdup_printf("%s\n\n%s", list,
                                  _("Run “einsora COMMAND --help” for the options of a command."));
    /* Global options may come before the command's name (and after it). */
    if (!einsora_cli_parse(&cli, &root, entries, description, TRUE, &argc, &argv, &error))
        return report(error);
    if (version) {
        g_print("einsora %s\n", EINSORA_VERSION);
        return EINSORA_CLI_EXIT_OK;
    }
    if (argc < 2) {
        g_set_error_literal(&error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("no command given"));
        return report(error);
    }
    if (!einsora_cli_dispatch(&cli, "einsora", commands, argc - 1, argv + 1, &error))
        return report(error);
    return EINSORA_CLI_EXIT_OK;
}
