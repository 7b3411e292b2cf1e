/* `einsora logs ID [-f] [--tail N] [--attempt N] [--since WHEN]`: a
 * workload's output, as the daemon keeps it and redacts it. With -f it
 * goes on printing lines as they are written, until the attempt ends
 * (or Ctrl-C). */
#define G_LOG_DOMAIN "einsora-cli"

#include <glib/gi18n.h>
#include <stdio.h>

#include "einsora-cli.h"
#include "einsora-table.h"

/* A workload's output may hold terminal escapes: each line is cleaned
 * before it reaches the terminal, so lines are put together first. */
typedef struct {
    GString *line;
} Printer;

static void
print_line(const char *line, gsize length)
{
    g_autofree gchar *text = g_strndup(line, length);
    g_auto(GStrv) cells = g_strsplit(text, "\t", -1);

    for (guint i = 0; cells[i] != NULL; i++) {
        g_autofree gchar *clean = einsora_table_clean(cells[i]);
        if (i > 0)
            fputc('\t', stdout);
        fputs(clean, stdout);
    }
    fputc('\n', stdout);
}

static void
on_text(const char *text, gsize length, gpointer user_data)
{
    Printer *printer = user_data;

    for (gsize i = 0; i < length; i++) {
        if (text[i] != '\n') {
            g_string_append_c(printer->line, text[i]);
            continue;
        }
        print_line(printer->line->str, printer->line->len);
        g_string_truncate(printer->line, 0);
    }
    fflush(stdout);
}

gboolean
einsora_cli_logs(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                 GError **error)
{
    gboolean follow = FALSE;
    gint64 tail = 0;
    gint64 attempt = 0;
    g_autofree gchar *since = NULL;
    GOptionEntry entries[] = {
        {"follow", 'f', 0, G_OPTION_ARG_NONE, &follow,
         N_("Go on printing lines as they are written, until the attempt ends"), NULL},
        {"tail", 'n', 0, G_OPTION_ARG_INT64, &tail, N_("Only the last N lines"), N_("N")},
        {"attempt", 'a', 0, G_OPTION_ARG_INT64, &attempt,
         N_("The output of attempt N (the latest unless given)"), N_("N")},
        {"since", 's', 0, G_OPTION_ARG_STRING, &since,
         N_("Only what was written since WHEN: a time (2026-12-03T14:02:00Z) or a span (10m, 2h)"),
         N_("WHEN")},
        {NULL},
    };
    g_autoptr(GString) query = g_string_new(NULL);
    g_autofree gchar *id = NULL;
    Printer printer = {0};
    EinsoraClient *client;
    gboolean ok;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    if (tail < 0 || attempt < 0) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("--tail and --attempt take a positive number"));
        return FALSE;
    }
    id = einsora_cli_resolve_workload(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    if (follow)
        g_string_append(query, "follow=true&");
    if (tail > 0)
        g_string_append_printf(query, "tail=%" G_GINT64_FORMAT "&", tail);
    if (attempt > 0)
        g_string_append_printf(query, "attempt=%" G_GINT64_FORMAT "&", attempt);
    if (since != NULL) {
        g_autofree gchar *escaped = g_uri_escape_string(since, NULL, FALSE);
        g_string_append_printf(query, "since=%s&", escaped);
    }
    if (query->len > 0)
        g_string_truncate(query, query->len - 1);
    printer.line = g_string_new(NULL);
    ok = einsora_client_read_logs(client, id, query->str, on_text, &printer, NULL, error);
    if (printer.line->len > 0)
        print_line(printer.line->str, printer.line->len);
    fflush(stdout);
    g_string_free(printer.line, TRUE);
    return ok;
}
