/* einsora completion bash|zsh|fish: a small script for each shell that
 * asks `einsora __complete` for the candidates, so what completes is
 * always what this einsora's own tables and options say. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>

/* bash splits "--class=x" at "=" (COMP_WORDBREAKS): the word at the
 * cursor is then "=" or what follows it, and the answer must replace just
 * that word. */
static const char bash_script[] =
    "# bash completion for einsora; made by `einsora completion bash`\n"
    "_einsora()\n"
    "{\n"
    "    local IFS=$'\\n' cur=${COMP_WORDS[COMP_CWORD]}\n"
    "    local -a words=(\"${COMP_WORDS[@]:1:COMP_CWORD}\")\n"
    "    local prefix=\n"
    "    if [[ $cur == = ]]; then\n"
    "        words+=('')\n"
    "        prefix==\n"
    "    fi\n"
    "    COMPREPLY=($(command einsora __complete \"${words[@]}\" 2>/dev/null))\n"
    "    if [[ -n $prefix ]]; then\n"
    "        COMPREPLY=(\"${COMPREPLY[@]/#/$prefix}\")\n"
    "    fi\n"
    "}\n"
    "complete -o default -F _einsora einsora\n";

static const char zsh_script[] =
    "#compdef einsora\n"
    "# zsh completion for einsora; made by `einsora completion zsh`\n"
    "_einsora() {\n"
    "    local -a candidates\n"
    "    candidates=(\"${(@f)$(command einsora __complete \"${(@)words[2,CURRENT]}\" "
    "2>/dev/null)}\")\n"
    "    candidates=(${candidates:#})\n"
    "    (( ${#candidates} )) || return 1\n"
    "    compadd -- \"${candidates[@]}\"\n"
    "}\n"
    "if [[ ${funcstack[1]} == _einsora ]]; then\n"
    "    _einsora \"$@\"\n"
    "else\n"
    "    compdef _einsora einsora\n"
    "fi\n";

static const char fish_script[] =
    "# fish completion for einsora; made by `einsora completion fish`\n"
    "function __einsora_complete\n"
    "    set -l words (commandline -opc) (commandline -ct)\n"
    "    command einsora __complete $words[2..-1] 2>/dev/null\n"
    "end\n"
    "complete -c einsora -f -a '(__einsora_complete)'\n";

gboolean
einsora_cli_completion(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                       GError **error)
{
    static const struct {
        const char *shell;
        const char *script;
    } scripts[] = {{"bash", bash_script}, {"zsh", zsh_script}, {"fish", fish_script}};

    if (!einsora_cli_parse(cli, command, NULL,
                           _("bash: source it, or put it in "
                             "~/.local/share/bash-completion/completions/einsora. zsh: put it "
                             "in a directory of $fpath as _einsora. fish: put it in "
                             "~/.config/fish/completions/einsora.fish."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(scripts); i++) {
        if (g_str_equal(argv[1], scripts[i].shell))
            return einsora_cli_write_text(scripts[i].script, error);
    }
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                _("unknown shell “%s”: bash, zsh or fish"), argv[1]);
    return FALSE;
}
