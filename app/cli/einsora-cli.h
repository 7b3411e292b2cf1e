/* What the `einsora` commands share: the global options, the command
 * table, option parsing with usage errors, the connection (server and
 * token), short-ID resolution and output. */
#pragma once

#include <glib.h>

#include "einsora-client.h"

G_BEGIN_DECLS

#define EINSORA_CLI_ERROR (einsora_cli_error_quark())

typedef enum {
    /* The command line is wrong: exit status 2. */
    EINSORA_CLI_ERROR_USAGE,
    /* Something here, not the API, failed (no token, stdout): exit status 1. */
    EINSORA_CLI_ERROR_FAILED,
    /* `einsora __complete`: the candidates are found, stop (never shown). */
    EINSORA_CLI_ERROR_COMPLETED,
} EinsoraCliError;

GQuark einsora_cli_error_quark(void);

#define EINSORA_CLI_EXIT_OK 0
#define EINSORA_CLI_EXIT_FAILED 1
#define EINSORA_CLI_EXIT_USAGE 2

#define EINSORA_CLI_DEFAULT_SERVER "http://127.0.0.1:8080"

/* The options every command takes, before or after its name. */
typedef struct {
    gchar *server;
    gchar *token;
    gchar *data_dir;
    gboolean json;
} EinsoraCliOptions;

typedef struct _EinsoraCliCompletion EinsoraCliCompletion;

typedef struct {
    EinsoraCliOptions options;
    EinsoraClient *client; /* made on first use */
    /* Set by `einsora __complete`: einsora_cli_parse() then collects what
     * may come next instead of parsing, and stops the command. */
    EinsoraCliCompletion *completion;
} EinsoraCli;

typedef struct _EinsoraCliCommand EinsoraCliCommand;

/* What a command's first argument is, for completing it. */
typedef enum {
    EINSORA_CLI_ARGUMENT_NONE,
    EINSORA_CLI_ARGUMENT_WORKLOAD, /* one of the caller's workloads: ID or name */
    EINSORA_CLI_ARGUMENT_SHELL,    /* bash, zsh or fish */
} EinsoraCliArgument;

/* @argv[0] is the command's name; its options are not parsed yet. */
typedef gboolean (*EinsoraCliRunFunc)(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                                      char **argv, GError **error);

struct _EinsoraCliCommand {
    const char *name;
    const char *parameters; /* N_(): what follows the options in the usage line */
    const char *summary;    /* N_(): one line for `--help` and the command list */
    EinsoraCliRunFunc run;
    EinsoraCliArgument argument;
};

void einsora_cli_clear(EinsoraCli *cli);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(EinsoraCli, einsora_cli_clear)

/* Runs the command @argv[0] names among @commands (a NULL-named entry ends
 * the table); @parent is the prefix of their names ("einsora", "einsora
 * tokens"). */
gboolean einsora_cli_dispatch(EinsoraCli *cli, const char *parent,
                              const EinsoraCliCommand *commands, int argc, char **argv,
                              GError **error);
/* "Commands:" and one line each, for a --help description. */
gchar *einsora_cli_describe_commands(const EinsoraCliCommand *commands);

/* Parses @command's own @entries (nullable) and the global options;
 * `--help` prints the usage and exits 0. @strict stops at the first
 * argument that isn't an option (for a command with subcommands). Leaves
 * the arguments in @argv (argv[0] the command). @description: (nullable). */
gboolean einsora_cli_parse(EinsoraCli *cli, const EinsoraCliCommand *command,
                           const GOptionEntry *entries, const char *description, gboolean strict,
                           int *argc, char ***argv, GError **error);
/* einsora_cli_parse() for a command whose first argument is one of
 * @subcommands: strict, and completing offers their names. */
gboolean einsora_cli_parse_group(EinsoraCli *cli, const EinsoraCliCommand *command,
                                 const GOptionEntry *entries, const EinsoraCliCommand *subcommands,
                                 const char *description, int *argc, char ***argv, GError **error);
/* Exactly @count arguments after the command's name, or a usage error. */
gboolean einsora_cli_expect_arguments(const EinsoraCliCommand *command, int argc, char **argv,
                                      guint count, GError **error);

/* The client for the chosen server and token: --server, EINSORA_SERVER,
 * else the local daemon; --token, EINSORA_TOKEN, else the token file in
 * --data-dir, EINSORA_DATA_DIR, or the user's data directory. */
EinsoraClient *einsora_cli_get_client(EinsoraCli *cli, GError **error);
/* Whether @server is an http:// or https:// URL (a usage error if not). */
gboolean einsora_cli_check_server(const char *server, GError **error);
/* @client trusts what the user pinned for its server (einsora login). */
gboolean einsora_cli_apply_pin(EinsoraClient *client, GError **error);

/* The ID of the caller's workload that @text names: a whole ID, a prefix
 * that matches exactly one, or the name of exactly one (a live one before
 * a deleted one). */
gchar *einsora_cli_resolve_workload(EinsoraCli *cli, const char *text, GError **error);
/* The ID of the caller's API token that @text names: a whole ID, or a
 * prefix that matches exactly one. */
gchar *einsora_cli_resolve_token(EinsoraCli *cli, const char *text, GError **error);
/* The short form of each ID in @objects' "id" members, as a table shows it. */
guint einsora_cli_short_id_length(JsonArray *objects);

/* The body exactly as received; with @newline, one newline after it. */
gboolean einsora_cli_write_raw(GBytes *bytes, gboolean newline, GError **error);
/* Human text (already translated) to stdout. */
gboolean einsora_cli_write_text(const char *text, GError **error);

/* Member helpers that tolerate absent members and nulls (NULL then). */
const char *einsora_cli_get_string(JsonObject *object, const char *member);
gchar *einsora_cli_get_integer(JsonObject *object, const char *member);
/* A string member as it may reach a terminal: cleaned, "-" when absent. */
gchar *einsora_cli_shown(JsonObject *object, const char *member);
JsonArray *einsora_cli_get_array(JsonNode *root, const char *member, GError **error);
/* An API time ("2026-01-02T03:04:05.123456Z") as local "2026-01-02 03:04:05". */
gchar *einsora_cli_format_time(const char *timestamp);

/* The commands, one file each group. */
gboolean einsora_cli_workloads(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                               char **argv, GError **error);
gboolean einsora_cli_launch(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                            char **argv, GError **error);
gboolean einsora_cli_start(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_stop(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                          GError **error);
gboolean einsora_cli_delete(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                            char **argv, GError **error);
gboolean einsora_cli_chat(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                          GError **error);
gboolean einsora_cli_events(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                            char **argv, GError **error);
gboolean einsora_cli_open(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                          GError **error);
gboolean einsora_cli_logs(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                          GError **error);
gboolean einsora_cli_export(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                            char **argv, GError **error);
gboolean einsora_cli_usage(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_machines(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                              char **argv, GError **error);
gboolean einsora_cli_watch(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_models(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                            char **argv, GError **error);
gboolean einsora_cli_catalog(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                             char **argv, GError **error);
gboolean einsora_cli_admin(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_share(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_password(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                              char **argv, GError **error);
gboolean einsora_cli_audit(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_login(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                           GError **error);
gboolean einsora_cli_me(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                        GError **error);
gboolean einsora_cli_completion(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                                char **argv, GError **error);
gboolean einsora_cli_tokens(EinsoraCli *cli, const EinsoraCliCommand *command, int argc,
                            char **argv, GError **error);

G_END_DECLS
