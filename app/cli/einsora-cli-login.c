/* einsora login URL [--fingerprint SHA256:…]: trust a server's TLS
 * certificate the way SSH trusts a host key (docs/adr/0047). A
 * certificate the system's CAs vouch for needs nothing; another is shown
 * by its fingerprint, checked against the one given or confirmed at a
 * terminal, and pinned; a pinned one that changed is refused until the
 * new fingerprint is given. Nothing secret is sent while checking. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>
#include <libsoup/soup.h>
#include <stdio.h>
#include <unistd.h>

#include "einsora-pinned-database.h"
#include "einsora-server-pins.h"

#define PROBE_TIMEOUT_SECONDS 20

/* The certificate @server presents: its fingerprint, and whether the
 * system's CAs vouch for it. No token goes with the probe. */
static gchar *
probe_certificate(const char *server, gboolean *system_trusted, GError **error)
{
    g_autoptr(EinsoraPinnedDatabase) trust = einsora_pinned_database_new(NULL);
    g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", PROBE_TIMEOUT_SECONDS,
                                                                   "tls-database", trust, NULL);
    g_autofree gchar *base = einsora_client_base_url_new(server);
    g_autofree gchar *url = g_strconcat(base, "/healthz", NULL);
    g_autoptr(SoupMessage) message = soup_message_new("GET", url);
    g_autoptr(GBytes) body = NULL;
    g_autoptr(GError) local_error = NULL;
    g_autofree gchar *refused = NULL;

    *system_trusted = FALSE;
    if (message == NULL) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("“%s” is not an https:// URL"), server);
        return NULL;
    }
    body = soup_session_send_and_read(session, message, NULL, &local_error);
    if (body != NULL && soup_message_get_tls_peer_certificate(message) != NULL) {
        *system_trusted = TRUE;
        return einsora_certificate_fingerprint(soup_message_get_tls_peer_certificate(message));
    }
    refused = einsora_pinned_database_dup_refused(trust);
    if (body == NULL && g_error_matches(local_error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE) &&
        refused != NULL)
        return g_steal_pointer(&refused);
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED, _("can't reach %s: %s"), base,
                body == NULL ? local_error->message : _("it answered without TLS"));
    return NULL;
}

/* At a terminal: the person compares and says yes. */
static gboolean
confirmed_at_terminal(const char *server, const char *fingerprint)
{
    gchar answer[16] = "";

    g_printerr(_("%s presents a certificate this machine doesn't trust.\n"
                 "Its fingerprint: %s\n"
                 "Is it the one einsora-daemon info prints on the server? Type yes to pin it: "),
               server, fingerprint);
    if (fgets(answer, sizeof answer, stdin) == NULL)
        return FALSE;
    g_strstrip(answer);
    return g_ascii_strcasecmp(answer, "yes") == 0;
}

gboolean
einsora_cli_login(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    g_autofree gchar *given_text = NULL;
    const GOptionEntry entries[] = {
        {"fingerprint", 0, 0, G_OPTION_ARG_STRING, &given_text,
         N_("The fingerprint the server's admin gave you (einsora-daemon info prints it): pin "
            "the certificate only if it is this one"),
         N_("SHA256:HEX")},
        {NULL},
    };
    g_autoptr(EinsoraServerPins) pins = NULL;
    g_autofree gchar *server = NULL;
    g_autofree gchar *given = NULL;
    g_autofree gchar *presented = NULL;
    const char *pinned;
    gboolean system_trusted;

    if (!einsora_cli_parse(cli, command, entries,
                           _("A server whose certificate no system CA vouches for (an Einsora "
                             "Lab's own, made on its first start) is trusted by its fingerprint, "
                             "pinned in ~/.config/einsora/servers.json. Then give the server as "
                             "--server or EINSORA_SERVER."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error) ||
        !einsora_cli_check_server(argv[1], error))
        return FALSE;
    server = einsora_client_base_url_new(argv[1]);
    if (given_text != NULL && (given = einsora_fingerprint_normalize(given_text)) == NULL) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("--fingerprint: “%s” is not a fingerprint like SHA256: and 64 hex digits"),
                    given_text);
        return FALSE;
    }
    if (g_ascii_strncasecmp(server, "https:", strlen("https:")) != 0) {
        if (einsora_client_server_is_local(server)) {
            g_print(_("%s is this machine's daemon over loopback: there is no certificate to "
                      "pin\n"),
                    server);
            return TRUE;
        }
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("%s is plain HTTP: a token sent there crosses the network in clear; ask "
                      "its admin for its https:// address"),
                    server);
        return FALSE;
    }
    pins = einsora_server_pins_load(NULL, error);
    if (pins == NULL)
        return FALSE;
    presented = probe_certificate(server, &system_trusted, error);
    if (presented == NULL)
        return FALSE;
    pinned = einsora_server_pins_lookup(pins, server);
    if (system_trusted) {
        g_print(_("%s presents a certificate this machine's CAs vouch for (%s): no pin is "
                  "needed\n"),
                server, presented);
        return TRUE;
    }
    if (given != NULL && !g_str_equal(given, presented)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("%s presents %s, not the fingerprint given (%s): nothing pinned. Ask the "
                      "server's admin which is right before going on"),
                    server, presented, given);
        return FALSE;
    }
    if (given == NULL) {
        if (g_strcmp0(pinned, presented) == 0) {
            g_print(_("%s: its certificate %s is pinned already\n"), server, presented);
            return TRUE;
        }
        if (pinned != NULL) {
            g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                        _("%s presents a certificate other than the one you pinned: pinned %s, "
                          "now %s. If its admin renewed it, check the new fingerprint with them, "
                          "then: einsora login %s --fingerprint %s"),
                        server, pinned, presented, server, presented);
            return FALSE;
        }
        if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
            g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                        _("%s presents a certificate this machine doesn't trust, fingerprint %s; "
                          "nothing pinned. Check it with the server's admin (einsora-daemon info "
                          "on the server prints it), then: einsora login %s --fingerprint %s"),
                        server, presented, server, presented);
            return FALSE;
        }
        if (!confirmed_at_terminal(server, presented)) {
            g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                                _("nothing pinned"));
            return FALSE;
        }
    }
    if (!einsora_server_pins_save(pins, server, presented, error))
        return FALSE;
    g_print(_("%s: pinned its certificate %s in %s\n"), server, presented,
            einsora_server_pins_get_path(pins));
    return TRUE;
}
