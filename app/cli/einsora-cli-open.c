/* einsora open: a notebook's one-time link or an endpoint's base URL. For
 * a server whose access proxy is on another machine (TLS), a relay on
 * this machine's loopback carries the browser's connections to it while
 * the command runs (docs/adr/0053). */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib-unix.h>
#include <glib/gi18n.h>

#include "einsora-access-relay.h"

/* Ctrl-C or SIGTERM, whenever it comes: before the loop runs (while a
 * browser is starting) as well as during it. */
typedef struct {
    GMainLoop *loop;
    gboolean signalled;
} RelayWait;

static gboolean
quit_on_signal(gpointer user_data)
{
    RelayWait *wait = user_data;

    wait->signalled = TRUE;
    g_main_loop_quit(wait->loop);
    return G_SOURCE_CONTINUE;
}

static void
on_relay_failed(EinsoraAccessRelay *relay, const GError *error, gpointer user_data)
{
    g_printerr(_("einsora: relay: %s\n"), error->message);
}

static void
on_browser_exited(GObject *source, GAsyncResult *result, gpointer user_data)
{
    gint *outcome = user_data;

    /* Cancelled (a signal came): not opened, and no other is tried. */
    *outcome = g_subprocess_wait_check_finish(G_SUBPROCESS(source), result, NULL) ? 1 : 0;
    g_main_context_wakeup(NULL);
}

/* $BROWSER's commands in turn, as xdg-open and Python read it: each runs
 * until it exits ("%s" becomes @url, or @url goes last); one that exits 0
 * has opened it. The main loop runs meanwhile: a terminal browser, or the
 * first Firefox, exits only when it is closed, and a relay on the loop
 * must answer it before that. */
static gboolean
run_browser_variable(const char *variable, const char *url, RelayWait *wait)
{
    g_auto(GStrv) commands = g_strsplit(variable, ":", -1);

    for (guint i = 0; commands[i] != NULL && !wait->signalled; i++) {
        g_auto(GStrv) words = NULL;
        g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GSubprocess) browser = NULL;
        g_autoptr(GCancellable) cancellable = g_cancellable_new();
        gboolean substituted = FALSE;
        gint outcome = -1;

        if (*g_strstrip(commands[i]) == '\0' ||
            !g_shell_parse_argv(commands[i], NULL, &words, NULL))
            continue;
        for (guint w = 0; words[w] != NULL; w++) {
            g_auto(GStrv) parts = g_strsplit(words[w], "%s", -1);
            substituted = substituted || g_strv_length(parts) > 1;
            g_ptr_array_add(argv, g_strjoinv(url, parts));
        }
        if (!substituted)
            g_ptr_array_add(argv, g_strdup(url));
        g_ptr_array_add(argv, NULL);
        browser = g_subprocess_newv((const gchar *const *)argv->pdata,
                                    G_SUBPROCESS_FLAGS_STDIN_INHERIT, NULL);
        if (browser == NULL)
            continue;
        g_subprocess_wait_check_async(browser, cancellable, on_browser_exited, &outcome);
        /* A signal ends the wait (a first Firefox may run for hours); the
         * browser, the person's own, is left running. The cancelled
         * wait's callback runs before @outcome goes. */
        while (outcome < 0) {
            if (wait->signalled)
                g_cancellable_cancel(cancellable);
            g_main_context_iteration(NULL, TRUE);
        }
        if (outcome == 1)
            return TRUE;
    }
    /* Interrupted: the person ended it, which is no failure to report. */
    return wait->signalled;
}

/* Hands @url to a browser, or says why none could start: a link opened
 * nowhere must not look like success. */
static gboolean
open_in_browser(const char *url, RelayWait *wait, GError **error)
{
    const char *variable = g_getenv("BROWSER");
    g_autoptr(GError) local_error = NULL;

    if (variable != NULL && *variable != '\0') {
        if (run_browser_variable(variable, url, wait))
            return TRUE;
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("no browser could be started: each command in BROWSER (%s) failed; run "
                      "einsora open without --browser to print the link"),
                    variable);
        return FALSE;
    }
#if !defined(__APPLE__)
    /* The desktop's browser needs the desktop: without one, GIO would
     * start it only to see it die. */
    if (g_getenv("DISPLAY") == NULL && g_getenv("WAYLAND_DISPLAY") == NULL) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                            _("no browser could be started: there is no graphical session "
                              "(DISPLAY or WAYLAND_DISPLAY) and BROWSER isn't set; run einsora "
                              "open without --browser to print the link"));
        return FALSE;
    }
#endif
    if (!g_app_info_launch_default_for_uri(url, NULL, &local_error)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("no browser could be started: %s; run einsora open without --browser to "
                      "print the link"),
                    local_error->message);
        return FALSE;
    }
    return TRUE;
}

/* The link as this machine reaches it: @url itself, or through a relay
 * that runs until a signal. */
static gboolean
relay_and_wait(EinsoraCli *cli, const char *url, guint local_port, gboolean browser,
               JsonObject *proxy, GError **error)
{
    EinsoraClient *client = einsora_cli_get_client(cli, NULL);
    g_autoptr(GUri) server =
        g_uri_parse(einsora_client_get_base_url(client), G_URI_FLAGS_NONE, NULL);
    gint64 port = json_object_get_int_member_with_default(proxy, "port", 0);
    g_autoptr(EinsoraAccessRelay) relay = NULL;
    g_autofree gchar *local = NULL;
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    RelayWait wait = {loop, FALSE};
    guint sigint = 0;
    guint sigterm = 0;
    gboolean relayed = FALSE;

    if (server == NULL || g_uri_get_host(server) == NULL || port <= 0 || port > G_MAXUINT16) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            _("the server's answer doesn't say where its access proxy is"));
        return FALSE;
    }
    relay = einsora_access_relay_new(g_uri_get_host(server), (guint)port,
                                     einsora_client_get_tls_database(client));
    if (!einsora_access_relay_listen(relay, local_port, error))
        return FALSE;
    g_signal_connect(relay, "failed", G_CALLBACK(on_relay_failed), NULL);
    local = einsora_access_relay_local_url(relay, url);
    if (local == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            _("the server's answer has no link"));
        return FALSE;
    }
    /* Handled before anyone sees the link: a signal that comes the
     * moment it is printed must end the relay, not kill the process. */
    sigint = g_unix_signal_add(SIGINT, quit_on_signal, &wait);
    sigterm = g_unix_signal_add(SIGTERM, quit_on_signal, &wait);
    if (browser) {
        relayed = open_in_browser(local, &wait, error);
    } else {
        g_autofree gchar *line = g_strdup_printf("%s\n", local);
        relayed = einsora_cli_write_text(line, error);
    }
    if (relayed && !wait.signalled) {
        g_printerr(_("Relaying 127.0.0.1:%u to %s:%u over TLS; Ctrl-C ends it.\n"),
                   einsora_access_relay_get_port(relay), g_uri_get_host(server), (guint)port);
        g_main_loop_run(loop);
    }
    g_source_remove(sigint);
    g_source_remove(sigterm);
    einsora_access_relay_close(relay);
    return relayed;
}

/* The link works once, for a minute: printed for the person, or handed
 * to the desktop's browser with --browser (never both, never logged). */
gboolean
einsora_cli_open(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                 GError **error)
{
    gboolean browser = FALSE;
    gint port = 0;
    GOptionEntry entries[] = {
        {"browser", 'b', 0, G_OPTION_ARG_NONE, &browser,
         N_("Open the link in the desktop's web browser instead of printing it"), NULL},
        {"port", 'p', 0, G_OPTION_ARG_INT, &port,
         N_("The relay's port on this machine's loopback, for a server elsewhere (default: any "
            "free one)"),
         N_("PORT")},
        {NULL},
    };
    g_autofree gchar *id = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    JsonObject *object;
    JsonObject *proxy = NULL;
    const char *url;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    if (port < 0 || port > G_MAXUINT16) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    _("--port %d is not a port (1 to 65535)"), port);
        return FALSE;
    }
    id = einsora_cli_resolve_workload(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    root = einsora_client_open_workload(einsora_cli_get_client(cli, NULL), id, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    object = json_node_get_object(root);
    url = json_object_get_string_member_with_default(object, "url", NULL);
    /* An endpoint's grant is its base URL, for an OpenAI client. */
    if (url == NULL)
        url = json_object_get_string_member_with_default(object, "base_url", NULL);
    if (url == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            _("the server's answer has no link"));
        return FALSE;
    }
    if (json_object_has_member(object, "proxy") &&
        JSON_NODE_HOLDS_OBJECT(json_object_get_member(object, "proxy")))
        proxy = json_object_get_object_member(object, "proxy");
    if (proxy != NULL && json_object_get_boolean_member_with_default(proxy, "tls", FALSE))
        return relay_and_wait(cli, url, (guint)port, browser, proxy, error);
    if (!einsora_client_server_is_local(
            einsora_client_get_base_url(einsora_cli_get_client(cli, NULL)))) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            _("the server's access proxy listens on its own loopback only, so "
                              "this machine can't reach it: its operator sets "
                              "--access-listen to an address people reach (it then speaks TLS)"));
        return FALSE;
    }
    if (browser) {
        /* No relay to end: a signal ends the command as it would any. */
        RelayWait unhandled = {NULL, FALSE};

        return open_in_browser(url, &unhandled, error);
    }
    {
        g_autofree gchar *line = g_strdup_printf("%s\n", url);
        return einsora_cli_write_text(line, error);
    }
}
