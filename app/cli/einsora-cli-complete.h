/* `einsora __complete WORD…`: what may follow the words before the
 * cursor, found from the same command tables and GOptionEntry arrays the
 * commands parse, so shell completion can't drift from them. */
#pragma once

#include "einsora-cli.h"

G_BEGIN_DECLS

/* @current: the word at the cursor (maybe empty). */
EinsoraCliCompletion *einsora_cli_completion_new(const char *current);
void einsora_cli_completion_free(EinsoraCliCompletion *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraCliCompletion, einsora_cli_completion_free)

/* einsora_cli_parse() while completing: walks the words in @argv over
 * @entries (the command's and the global ones). Returns TRUE, @argv
 * starting at the subcommand, where a strict command's subcommand is
 * already named; else collects the candidates for the cursor's word and
 * fails with EINSORA_CLI_ERROR_COMPLETED. @subcommands: (nullable). */
gboolean einsora_cli_completion_parse(EinsoraCli *cli, const EinsoraCliCommand *command,
                                      const GOptionEntry *entries,
                                      const EinsoraCliCommand *subcommands, gboolean strict,
                                      int *argc, char ***argv, GError **error);

/* The candidates that start with the cursor's word, one a line. */
void einsora_cli_completion_print(EinsoraCliCompletion *self);

G_END_DECLS
