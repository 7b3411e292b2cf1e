/* The machinery every `einsora` command shares. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <stdio.h>

#include "einsora-cli-complete.h"
#include "einsora-server-pins.h"
#include "einsora-short-id.h"
#include "einsora-table.h"

/* The macro stringifies its first argument: keep the formatter away. */
/* clang-format off */
G_DEFINE_QUARK(einsora-cli-error-quark, einsora_cli_error)
/* clang-format on */

static void
options_clear(EinsoraCliOptions *options)
{
    g_clear_pointer(&options->server, g_free);
    g_clear_pointer(&options->token, g_free);
    g_clear_pointer(&options->data_dir, g_free);
    options->json = FALSE;
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(EinsoraCliOptions, options_clear)

void
einsora_cli_clear(EinsoraCli *cli)
{
    options_clear(&cli->options);
    g_clear_object(&cli->client);
    g_clear_pointer(&cli->completion, einsora_cli_completion_free);
}

/* A value given later on the command line wins, as with any one option
 * given twice. */
static void
options_merge(EinsoraCliOptions *into, EinsoraCliOptions *later)
{
    gchar **pairs[][2] = {
        {&into->server, &later->server},
        {&into->token, &later->token},
        {&into->data_dir, &later->data_dir},
    };

    for (guint i = 0; i < G_N_ELEMENTS(pairs); i++) {
        if (*pairs[i][1] != NULL) {
            g_free(*pairs[i][0]);
            *pairs[i][0] = g_steal_pointer(pairs[i][1]);
        }
    }
    into->json = into->json || later->json;
}

gchar *
einsora_cli_describe_commands(const EinsoraCliCommand *commands)
{
    GString *text = g_string_new(_("Commands:"));
    guint width = 0;

    for (const EinsoraCliCommand *c = commands; c->name != NULL; c++)
        width = MAX(width, (guint)strlen(c->name));
    for (const EinsoraCliCommand *c = commands; c->name != NULL; c++)
        g_string_append_printf(text, "\n  %-*s  %s", (int)width, c->name, _(c->summary));
    return g_string_free(text, FALSE);
}

gboolean
einsora_cli_dispatch(EinsoraCli *cli, const char *parent, const EinsoraCliCommand *commands,
                     int argc, char **argv, GError **error)
{
    for (const EinsoraCliCommand *c = commands; c->name != NULL; c++) {
        if (g_str_equal(c->name, argv[0])) {
            g_autofree gchar *prgname = g_strdup_printf("%s %s", parent, c->name);

            /* GOption's usage line and every "Try ..." hint name the
             * command, as flatpak does. */
            g_set_prgname(prgname);
            return c->run(cli, c, argc, argv, error);
        }
    }
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE, _("unknown command “%s”"),
                argv[0]);
    return FALSE;
}

static gboolean
parse_options(EinsoraCli *cli, const EinsoraCliCommand *command, const GOptionEntry *entries,
              const EinsoraCliCommand *subcommands, const char *description, gboolean strict,
              int *argc, char ***argv, GError **error)
{
    g_auto(EinsoraCliOptions) later = {0};
    const GOptionEntry globals[] = {
        {"server", 0, 0, G_OPTION_ARG_STRING, &later.server,
         N_("The daemon's URL (EINSORA_SERVER; default http://127.0.0.1:8080)"), N_("URL")},
        {"token", 0, 0, G_OPTION_ARG_STRING, &later.token,
         N_("An API token (EINSORA_TOKEN; default: the token file in the data directory)"),
         N_("TOKEN")},
        {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &later.data_dir,
         N_("The local daemon's data directory, where its token file is (EINSORA_DATA_DIR)"),
         N_("DIR")},
        {"json", 0, 0, G_OPTION_ARG_NONE, &later.json, N_("Print the API's JSON, for scripts"),
         NULL},
    };
    g_autoptr(GOptionContext) context =
        g_option_context_new(command->parameters != NULL ? _(command->parameters) : NULL);
    g_autoptr(GArray) all = g_array_new(TRUE, TRUE, sizeof(GOptionEntry));
    g_autoptr(GError) local_error = NULL;

    /* One list, the command's options first: plain --help shows them all. */
    for (const GOptionEntry *e = entries; e != NULL && e->long_name != NULL; e++)
        g_array_append_val(all, *e);
    g_array_append_vals(all, globals, G_N_ELEMENTS(globals));
    if (cli->completion != NULL)
        return einsora_cli_completion_parse(cli, command, (const GOptionEntry *)(gpointer)all->data,
                                            subcommands, strict, argc, argv, error);
    g_option_context_set_translation_domain(context, GETTEXT_PACKAGE);
    g_option_context_add_main_entries(context, (const GOptionEntry *)(gpointer)all->data,
                                      GETTEXT_PACKAGE);
    g_option_context_set_summary(context, _(command->summary));
    if (description != NULL)
        g_option_context_set_description(context, description);
    g_option_context_set_strict_posix(context, strict);
    if (!g_option_context_parse(context, argc, argv, &local_error)) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            local_error->message);
        return FALSE;
    }
    options_merge(&cli->options, &later);
    return TRUE;
}

gboolean
einsora_cli_parse(EinsoraCli *cli, const EinsoraCliCommand *command, const GOptionEntry *entries,
                  const char *description, gboolean strict, int *argc, char ***argv, GError **error)
{
    return parse_options(cli, command, entries, NULL, description, strict, argc, argv, error);
}

gboolean
einsora_cli_parse_group(EinsoraCli *cli, const EinsoraCliCommand *command,
                        const GOptionEntry *entries, const EinsoraCliCommand *subcommands,
                        const char *description, int *argc, char ***argv, GError **error)
{
    return parse_options(cli, command, entries, subcommands, description, TRUE, argc, argv, error);
}

gboolean
einsora_cli_expect_arguments(const EinsoraCliCommand *command, int argc, char **argv, guint count,
                             GError **error)
{
    guint given = argc > 0 ? (guint)argc - 1 : 0;

    if (given < count) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE, _("missing %s"),
                    command->parameters != NULL ? _(command->parameters) : "");
        return FALSE;
    }
    if (given > count) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("unexpected argument “%s”"), argv[count + 1]);
        return FALSE;
    }
    return TRUE;
}

/* An option wins over its variable; an empty value is a mistake, not a
 * request for the default (as in einsora-daemon). */
static gboolean
resolve_setting(const char *option_value, const char *variable, const char *option,
                const char **value, GError **error)
{
    *value = option_value != NULL ? option_value : g_getenv(variable);
    if (*value != NULL && **value == '\0') {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE, _("%s (%s) is empty"),
                    variable, option);
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_cli_check_server(const char *server, GError **error)
{
    g_autoptr(GUri) uri = g_uri_parse(server, G_URI_FLAGS_NONE, NULL);
    const char *scheme = uri != NULL ? g_uri_get_scheme(uri) : NULL;

    if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0' ||
        (g_ascii_strcasecmp(scheme, "http") != 0 && g_ascii_strcasecmp(scheme, "https") != 0)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("EINSORA_SERVER (--server): “%s” is not an http:// or https:// URL"), server);
        return FALSE;
    }
    return TRUE;
}

/* A token is one printable ASCII word. Its value is never part of a
 * message. */
static gboolean
token_is_wellformed(const char *token)
{
    if (*token == '\0')
        return FALSE;
    for (const char *p = token; *p != '\0'; p++) {
        if (*p < 0x21 || *p > 0x7e)
            return FALSE;
    }
    return TRUE;
}

static gchar *
read_token_file(EinsoraCli *cli, GError **error)
{
    const char *data_dir = NULL;
    g_autofree gchar *default_dir = g_build_filename(g_get_user_data_dir(), "einsora", NULL);
    g_autofree gchar *path = NULL;
    g_autofree gchar *contents = NULL;
    g_autoptr(GError) local_error = NULL;

    if (!resolve_setting(cli->options.data_dir, "EINSORA_DATA_DIR", "--data-dir", &data_dir, error))
        return NULL;
    path = g_build_filename(data_dir != NULL ? data_dir : default_dir, "token", NULL);
    if (!g_file_get_contents(path, &contents, NULL, &local_error)) {
        if (g_error_matches(local_error, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                        _("no API token: pass --token or set EINSORA_TOKEN, or run einsora-daemon "
                          "once to create %s"),
                        path);
            return NULL;
        }
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("can't read the token file: %s"), local_error->message);
        return NULL;
    }
    g_strstrip(contents);
    if (!token_is_wellformed(contents)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("the token file %s doesn't hold an API token"), path);
        return NULL;
    }
    return g_steal_pointer(&contents);
}

EinsoraClient *
einsora_cli_get_client(EinsoraCli *cli, GError **error)
{
    const char *server = NULL;
    const char *token = NULL;
    g_autofree gchar *file_token = NULL;

    if (cli->client != NULL)
        return cli->client;
    if (!resolve_setting(cli->options.server, "EINSORA_SERVER", "--server", &server, error))
        return NULL;
    if (server == NULL)
        server = EINSORA_CLI_DEFAULT_SERVER;
    if (!einsora_cli_check_server(server, error))
        return NULL;
    if (!resolve_setting(cli->options.token, "EINSORA_TOKEN", "--token", &token, error))
        return NULL;
    /* The local token file belongs to the local daemon: it is sent only to a
     * server on this machine, never to one named elsewhere. */
    if (token == NULL && !einsora_client_server_is_local(server)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("no API token for %s: the local token file is only for this machine's "
                      "daemon; set EINSORA_TOKEN or --token"),
                    server);
        return NULL;
    }
    if (token == NULL) {
        file_token = read_token_file(cli, error);
        if (file_token == NULL)
            return NULL;
        token = file_token;
    } else if (!token_is_wellformed(token)) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("EINSORA_TOKEN (--token) is not an API token"));
        return NULL;
    }
    cli->client = einsora_client_new(server, token);
    if (!einsora_cli_apply_pin(cli->client, error)) {
        g_clear_object(&cli->client);
        return NULL;
    }
    return cli->client;
}

gboolean
einsora_cli_apply_pin(EinsoraClient *client, GError **error)
{
    g_autoptr(EinsoraServerPins) pins = NULL;
    const char *server = einsora_client_get_base_url(client);

    if (g_ascii_strncasecmp(server, "https:", strlen("https:")) != 0)
        return TRUE;
    pins = einsora_server_pins_load(NULL, error);
    if (pins == NULL)
        return FALSE;
    einsora_client_set_pinned_certificate(client, einsora_server_pins_lookup(pins, server));
    return TRUE;
}

guint
einsora_cli_short_id_length(JsonArray *objects)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new();

    for (guint i = 0; i < json_array_get_length(objects); i++) {
        JsonObject *object = json_array_get_object_element(objects, i);
        const char *id = object != NULL ? einsora_cli_get_string(object, "id") : NULL;
        if (id != NULL)
            g_ptr_array_add(ids, (gpointer)id);
    }
    return einsora_short_id_length(ids);
}

/* The "id" members in @objects that start with @prefix. */
static GPtrArray *
find_by_prefix(JsonArray *objects, const char *prefix)
{
    GPtrArray *matches = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < json_array_get_length(objects); i++) {
        JsonObject *object = json_array_get_object_element(objects, i);
        const char *id = object != NULL ? einsora_cli_get_string(object, "id") : NULL;
        if (id != NULL && einsora_short_id_matches(id, prefix))
            g_ptr_array_add(matches, g_strdup(id));
    }
    return matches;
}

static gchar *
join_matches(GPtrArray *matches)
{
    g_autoptr(GString) text = g_string_new(NULL);

    for (guint i = 0; i < matches->len; i++) {
        if (i > 0)
            g_string_append(text, ", ");
        g_string_append(text, g_ptr_array_index(matches, i));
    }
    return g_strdup(text->str);
}

static gboolean
check_id_text(const char *text, GError **error)
{
    if (einsora_short_id_is_prefix(text))
        return TRUE;
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                g_dngettext(GETTEXT_PACKAGE,
                            "“%s” is neither an ID nor an ID prefix of at least %d hex digit",
                            "“%s” is neither an ID nor an ID prefix of at least %d hex digits",
                            EINSORA_SHORT_ID_MIN_DIGITS),
                text, EINSORA_SHORT_ID_MIN_DIGITS);
    return FALSE;
}

static gboolean
workload_is_gone(JsonObject *workload)
{
    const char *state = einsora_cli_get_string(workload, "state");
    return g_strcmp0(state, "deleted") == 0 || g_strcmp0(state, "deleting") == 0;
}

/* The IDs of the workloads named exactly @name: the live ones, or when
 * none is, the deleted ones. */
static GPtrArray *
find_by_name(JsonArray *workloads, const char *name)
{
    GPtrArray *live = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) gone = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < json_array_get_length(workloads); i++) {
        JsonObject *workload = json_array_get_object_element(workloads, i);
        const char *id = workload != NULL ? einsora_cli_get_string(workload, "id") : NULL;

        if (id == NULL || g_strcmp0(einsora_cli_get_string(workload, "name"), name) != 0)
            continue;
        g_ptr_array_add(workload_is_gone(workload) ? gone : live, g_strdup(id));
    }
    if (live->len > 0)
        return live;
    g_ptr_array_unref(live);
    return g_steal_pointer(&gone);
}

gchar *
einsora_cli_resolve_workload(EinsoraCli *cli, const char *text, GError **error)
{
    EinsoraClient *client = einsora_cli_get_client(cli, error);
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GPtrArray) named = NULL;
    g_autoptr(GPtrArray) matches = NULL;
    JsonArray *workloads;

    if (client == NULL)
        return NULL;
    /* A whole ID goes to the server as it is: another tenant's is its 404. */
    if (einsora_short_id_is_full(text))
        return g_ascii_strdown(text, -1);
    /* Deleted workloads keep their history, so their IDs still count. */
    root = einsora_client_list_workloads(client, TRUE, NULL, error);
    if (root == NULL)
        return NULL;
    workloads = einsora_cli_get_array(root, "workloads", error);
    if (workloads == NULL)
        return NULL;
    /* Names aren't unique: one name may be two workloads' (the API allows
     * it), and a name may look like an ID prefix. */
    named = find_by_name(workloads, text);
    if (named->len > 1) {
        g_autofree gchar *list = join_matches(named);
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    g_dngettext(GETTEXT_PACKAGE, "“%s” is the name of %u workload: %s; give its ID",
                                "“%s” is the name of %u workloads: %s; give one's ID", named->len),
                    text, named->len, list);
        return NULL;
    }
    matches = einsora_short_id_is_prefix(text) ? find_by_prefix(workloads, text)
                                               : g_ptr_array_new_with_free_func(g_free);
    if (named->len == 1) {
        const char *id = g_ptr_array_index(named, 0);

        for (guint i = 0; i < matches->len; i++) {
            const char *other = g_ptr_array_index(matches, i);
            if (!g_str_equal(other, id)) {
                g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("“%s” is the name of %s and the start of the ID %s; give the "
                              "whole ID"),
                            text, id, other);
                return NULL;
            }
        }
        return g_strdup(id);
    }
    if (!einsora_short_id_is_prefix(text)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    g_dngettext(GETTEXT_PACKAGE,
                                "“%s” is neither the name of one of your workloads nor an ID "
                                "prefix of at least %d hex digit",
                                "“%s” is neither the name of one of your workloads nor an ID "
                                "prefix of at least %d hex digits",
                                EINSORA_SHORT_ID_MIN_DIGITS),
                    text, EINSORA_SHORT_ID_MIN_DIGITS);
        return NULL;
    }
    if (matches->len == 0) {
        g_autofree gchar *message = g_strdup_printf(
            _("none of your workloads is named “%s” or has an ID that starts with it"), text);
        g_propagate_error(error, einsora_client_error_new("not_found", NULL, 0, message));
        return NULL;
    }
    if (matches->len > 1) {
        g_autofree gchar *list = join_matches(matches);
        g_set_error(
            error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
            g_dngettext(GETTEXT_PACKAGE, "ambiguous ID prefix “%s”: it matches %u workload: %s",
                        "ambiguous ID prefix “%s”: it matches %u workloads: %s", matches->len),
            text, matches->len, list);
        return NULL;
    }
    return g_strdup(g_ptr_array_index(matches, 0));
}

gchar *
einsora_cli_resolve_token(EinsoraCli *cli, const char *text, GError **error)
{
    EinsoraClient *client = einsora_cli_get_client(cli, error);
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GPtrArray) matches = NULL;
    JsonArray *tokens;

    if (client == NULL)
        return NULL;
    if (einsora_short_id_is_full(text))
        return g_ascii_strdown(text, -1);
    if (!check_id_text(text, error))
        return NULL;
    root = einsora_client_list_tokens(client, NULL, error);
    if (root == NULL)
        return NULL;
    tokens = einsora_cli_get_array(root, "tokens", error);
    if (tokens == NULL)
        return NULL;
    matches = find_by_prefix(tokens, text);
    if (matches->len == 0) {
        g_autofree gchar *message =
            g_strdup_printf(_("none of your API tokens has an ID that starts with “%s”"), text);
        g_propagate_error(error, einsora_client_error_new("not_found", NULL, 0, message));
        return NULL;
    }
    if (matches->len > 1) {
        g_autofree gchar *list = join_matches(matches);
        g_set_error(
            error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
            g_dngettext(GETTEXT_PACKAGE, "ambiguous ID prefix “%s”: it matches %u API token: %s",
                        "ambiguous ID prefix “%s”: it matches %u API tokens: %s", matches->len),
            text, matches->len, list);
        return NULL;
    }
    return g_strdup(g_ptr_array_index(matches, 0));
}

static gboolean
flush_stdout(GError **error)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int saved = errno;
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                    _("can't write to standard output: %s"), g_strerror(saved));
        return FALSE;
    }
    return TRUE;
}

gboolean
einsora_cli_write_raw(GBytes *bytes, gboolean newline, GError **error)
{
    gsize size = 0;
    const void *data = g_bytes_get_data(bytes, &size);

    /* fwrite, not g_print: no charset conversion may touch the bytes. */
    if (size > 0 && fwrite(data, 1, size, stdout) != size)
        return flush_stdout(error);
    if (newline)
        fputc('\n', stdout);
    return flush_stdout(error);
}

gboolean
einsora_cli_write_text(const char *text, GError **error)
{
    g_print("%s", text);
    return flush_stdout(error);
}

const char *
einsora_cli_get_string(JsonObject *object, const char *member)
{
    JsonNode *node = json_object_get_member(object, member);

    if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
        json_node_get_value_type(node) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(node);
}

gchar *
einsora_cli_shown(JsonObject *object, const char *member)
{
    const char *value = einsora_cli_get_string(object, member);
    return einsora_table_clean(value != NULL ? value : "-");
}

gchar *
einsora_cli_get_integer(JsonObject *object, const char *member)
{
    JsonNode *node = json_object_get_member(object, member);

    if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
        json_node_get_value_type(node) != G_TYPE_INT64)
        return NULL;
    return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(node));
}

JsonArray *
einsora_cli_get_array(JsonNode *root, const char *member, GError **error)
{
    JsonNode *node = JSON_NODE_HOLDS_OBJECT(root)
                         ? json_object_get_member(json_node_get_object(root), member)
                         : NULL;

    if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node)) {
        g_autofree gchar *message =
            g_strdup_printf(_("the server's answer has no “%s” list"), member);
        g_propagate_error(
            error, einsora_client_error_new(EINSORA_CLIENT_CODE_BAD_RESPONSE, NULL, 0, message));
        return NULL;
    }
    return json_node_get_array(node);
}

gchar *
einsora_cli_format_time(const char *timestamp)
{
    g_autoptr(GDateTime) utc = NULL;
    g_autoptr(GDateTime) local = NULL;

    if (timestamp == NULL)
        return NULL;
    utc = g_date_time_new_from_iso8601(timestamp, NULL);
    if (utc == NULL)
        return g_strdup(timestamp);
    local = g_date_time_to_local(utc);
    return g_date_time_format(local, "%Y-%m-%d %H:%M:%S");
}
