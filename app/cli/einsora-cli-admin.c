/* einsora admin (accounts, tenants, quota) for a Lab's admins, and
 * einsora audit for anyone: the tenant's audit trail (docs/adr/0049). */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "einsora-table.h"

/* @method @path with @body, its answer in *@root; --json prints it. */
static gboolean
call(EinsoraCli *cli, const char *method, const char *path, JsonNode *body, JsonNode **root,
     gboolean *printed, GError **error)
{
    EinsoraClient *client = einsora_cli_get_client(cli, error);
    g_autoptr(GBytes) raw = NULL;

    *printed = FALSE;
    if (client == NULL)
        return FALSE;
    *root = einsora_client_request(client, method, path, body, NULL, &raw, error);
    if (*root == NULL)
        return FALSE;
    if (cli->options.json) {
        *printed = TRUE;
        return einsora_cli_write_raw(raw, TRUE, error);
    }
    return TRUE;
}

static JsonArray *
list_of(JsonNode *root, const char *member, GError **error)
{
    return einsora_cli_get_array(root, member, error);
}

static gboolean
accounts_list(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
              GError **error)
{
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *accounts;
    gboolean printed;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error) ||
        !call(cli, "GET", "/v1/admin/accounts", NULL, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    if ((accounts = list_of(root, "accounts", error)) == NULL)
        return FALSE;
    table = einsora_table_new(6, (const char *const[]){_("ID"), _("EMAIL"), _("TENANT"), _("ROLE"),
                                                       _("ADMIN"), _("STATUS")});
    for (guint i = 0; i < json_array_get_length(accounts); i++) {
        JsonObject *account = json_array_get_object_element(accounts, i);
        gboolean admin;

        if (account == NULL)
            continue;
        admin = json_object_get_boolean_member_with_default(account, "admin", FALSE);
        einsora_table_append_row(table, (const char *const[]){
                                            einsora_cli_get_string(account, "id"),
                                            einsora_cli_get_string(account, "email"),
                                            einsora_cli_get_string(account, "tenant"),
                                            einsora_cli_get_string(account, "role"),
                                            admin ? _("yes") : _("no"),
                                            einsora_cli_get_string(account, "disabled_at") != NULL
                                                ? _("disabled")
                                                : _("active"),
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

/* A tenant named @text, or with that ID: its ID. */
static gchar *
resolve_tenant(EinsoraCli *cli, const char *text, GError **error)
{
    g_autoptr(JsonNode) root = NULL;
    JsonArray *tenants;
    EinsoraClient *client = einsora_cli_get_client(cli, error);

    if (client == NULL)
        return NULL;
    root = einsora_client_request(client, "GET", "/v1/admin/tenants", NULL, NULL, NULL, error);
    if (root == NULL || (tenants = list_of(root, "tenants", error)) == NULL)
        return NULL;
    for (guint i = 0; i < json_array_get_length(tenants); i++) {
        JsonObject *tenant = json_array_get_object_element(tenants, i);
        if (tenant != NULL && (g_strcmp0(einsora_cli_get_string(tenant, "name"), text) == 0 ||
                               g_strcmp0(einsora_cli_get_string(tenant, "id"), text) == 0))
            return g_strdup(einsora_cli_get_string(tenant, "id"));
    }
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                _("no tenant named “%s” (einsora admin tenants lists them)"), text);
    return NULL;
}

/* An account with this email or ID: its ID. */
static gchar *
resolve_account(EinsoraCli *cli, const char *text, GError **error)
{
    EinsoraClient *client = einsora_cli_get_client(cli, error);
    g_autoptr(JsonNode) root = NULL;
    JsonArray *accounts;
    g_autofree gchar *lower = g_ascii_strdown(text, -1);

    if (client == NULL)
        return NULL;
    root = einsora_client_request(client, "GET", "/v1/admin/accounts", NULL, NULL, NULL, error);
    if (root == NULL || (accounts = list_of(root, "accounts", error)) == NULL)
        return NULL;
    for (guint i = 0; i < json_array_get_length(accounts); i++) {
        JsonObject *account = json_array_get_object_element(accounts, i);
        if (account != NULL && (g_strcmp0(einsora_cli_get_string(account, "email"), lower) == 0 ||
                                g_strcmp0(einsora_cli_get_string(account, "id"), text) == 0))
            return g_strdup(einsora_cli_get_string(account, "id"));
    }
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_FAILED,
                _("no account “%s” (einsora admin accounts lists them)"), text);
    return NULL;
}

static gboolean
accounts_create(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                GError **error)
{
    g_autofree gchar *join = NULL;
    g_autofree gchar *new_tenant = NULL;
    gboolean admin = FALSE;
    const GOptionEntry entries[] = {
        {"tenant", 0, 0, G_OPTION_ARG_STRING, &join,
         N_("Add the account to this existing tenant (a name or ID), as a member"), N_("TENANT")},
        {"new-tenant", 0, 0, G_OPTION_ARG_STRING, &new_tenant,
         N_("Make a new tenant with this name, the account its owner"), N_("NAME")},
        {"admin", 0, 0, G_OPTION_ARG_NONE, &admin, N_("Make the account a Lab admin"), NULL},
        {NULL},
    };
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *tenant_id = NULL;
    g_autofree gchar *text = NULL;
    JsonObject *account;
    gboolean printed;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    if ((join == NULL) == (new_tenant == NULL)) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("give --tenant (an existing one) or --new-tenant, not both"));
        return FALSE;
    }
    if (join != NULL && (tenant_id = resolve_tenant(cli, join, error)) == NULL)
        return FALSE;
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "email");
    json_builder_add_string_value(builder, argv[1]);
    json_builder_set_member_name(builder, tenant_id != NULL ? "tenant_id" : "new_tenant");
    json_builder_add_string_value(builder, tenant_id != NULL ? tenant_id : new_tenant);
    json_builder_set_member_name(builder, "admin");
    json_builder_add_boolean_value(builder, admin);
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    if (!call(cli, "POST", "/v1/admin/accounts", body, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    account = json_object_get_object_member(json_node_get_object(root), "account");
    /* The secret is printed here, once; the server keeps only its hash. */
    text = g_strdup_printf(_("Created %s in %s (%s). Their first API token, shown only this once; "
                             "give it to them somewhere safe:\n%s\n"),
                           einsora_cli_get_string(account, "email"),
                           einsora_cli_get_string(account, "tenant"),
                           einsora_cli_get_string(account, "role"),
                           einsora_cli_get_string(json_node_get_object(root), "secret"));
    return einsora_cli_write_text(text, error);
}

static gboolean
accounts_set(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
             const char *verb, GError **error)
{
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr(JsonNode) root = NULL;
    gboolean printed;
    JsonObject *account;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error) ||
        (id = resolve_account(cli, argv[1], error)) == NULL)
        return FALSE;
    path = g_strdup_printf("/v1/admin/accounts/%s/%s", id, verb);
    if (!call(cli, "POST", path, NULL, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    account = json_object_get_object_member(json_node_get_object(root), "account");
    text = g_strdup_printf(einsora_cli_get_string(account, "disabled_at") != NULL
                               ? _("%s is disabled: its tokens and sessions no longer work\n")
                               : _("%s is enabled\n"),
                           einsora_cli_get_string(account, "email"));
    return einsora_cli_write_text(text, error);
}

static gboolean
accounts_disable(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                 GError **error)
{
    return accounts_set(cli, command, argc, argv, "disable", error);
}

static gboolean
accounts_enable(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                GError **error)
{
    return accounts_set(cli, command, argc, argv, "enable", error);
}

static gboolean
accounts_reset_password(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                        GError **error)
{
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr(JsonNode) root = NULL;
    gboolean printed;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error) ||
        (id = resolve_account(cli, argv[1], error)) == NULL)
        return FALSE;
    path = g_strdup_printf("/v1/admin/accounts/%s/reset-password", id);
    if (!call(cli, "POST", path, NULL, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    /* Shown here once; the server keeps only its hash. */
    text = g_strdup_printf(_("%s's password is reset. Give them this one somewhere safe; they "
                             "must change it when they next sign in:\n%s\n"),
                           argv[1], einsora_cli_get_string(json_node_get_object(root), "password"));
    return einsora_cli_write_text(text, error);
}

static const EinsoraCliCommand account_commands[] = {
    {"list", NULL, N_("List every account of the Lab"), accounts_list},
    {"create", N_("EMAIL"),
     N_("Create an account (--tenant T or --new-tenant NAME, --admin) and print its first token"),
     accounts_create},
    {"disable", N_("EMAIL|ID"), N_("Disable an account: its tokens and sessions stop at once"),
     accounts_disable},
    {"enable", N_("EMAIL|ID"), N_("Enable a disabled account"), accounts_enable},
    {"reset-password", N_("EMAIL|ID"),
     N_("Reset an account's password and print a temporary one, once"), accounts_reset_password},
    {NULL},
};

static gboolean
admin_accounts(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
               GError **error)
{
    g_autofree gchar *description = einsora_cli_describe_commands(account_commands);
    g_autofree gchar *parent = g_strdup(g_get_prgname());

    if (!einsora_cli_parse_group(cli, command, NULL, account_commands, description, &argc, &argv,
                                 error))
        return FALSE;
    if (argc < 2)
        return accounts_list(cli, &account_commands[0], argc, argv, error);
    return einsora_cli_dispatch(cli, parent, account_commands, argc - 1, argv + 1, error);
}

static gboolean
admin_tenants(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
              GError **error)
{
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *tenants;
    gboolean printed;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error) ||
        !call(cli, "GET", "/v1/admin/tenants", NULL, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    if ((tenants = list_of(root, "tenants", error)) == NULL)
        return FALSE;
    table = einsora_table_new(3, (const char *const[]){_("ID"), _("NAME"), _("GPU QUOTAS")});
    for (guint i = 0; i < json_array_get_length(tenants); i++) {
        JsonObject *tenant = json_array_get_object_element(tenants, i);
        JsonObject *quotas;
        g_autoptr(GString) given = g_string_new(NULL);
        g_autoptr(GList) classes = NULL;

        if (tenant == NULL)
            continue;
        quotas = json_object_get_object_member(tenant, "quotas");
        classes = quotas != NULL ? json_object_get_members(quotas) : NULL;
        for (GList *l = classes; l != NULL; l = l->next) {
            gint64 gpus = json_object_get_int_member(quotas, l->data);
            if (gpus > 0)
                g_string_append_printf(given, "%s%s %" G_GINT64_FORMAT, given->len > 0 ? ", " : "",
                                       (const char *)l->data, gpus);
        }
        einsora_table_append_row(table, (const char *const[]){
                                            einsora_cli_get_string(tenant, "id"),
                                            einsora_cli_get_string(tenant, "name"),
                                            given->len > 0 ? given->str : _("none"),
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

static gboolean
quota_set(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv, GError **error)
{
    g_autofree gchar *tenant_id = NULL;
    g_autofree gchar *escaped = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *text = NULL;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) root = NULL;
    guint64 gpus = 0;
    gboolean printed;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 3, error))
        return FALSE;
    if (!g_ascii_string_to_unsigned(argv[3], 10, 0, G_MAXINT32, &gpus, NULL)) {
        g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                    _("“%s” is not a number of GPUs"), argv[3]);
        return FALSE;
    }
    if ((tenant_id = resolve_tenant(cli, argv[1], error)) == NULL)
        return FALSE;
    escaped = g_uri_escape_string(argv[2], NULL, FALSE);
    path = g_strdup_printf("/v1/admin/tenants/%s/quotas/%s", tenant_id, escaped);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "gpus");
    json_builder_add_int_value(builder, (gint64)gpus);
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    if (!call(cli, "PUT", path, body, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    /* TRANSLATORS: a tenant, how many GPUs, and their class */
    text = g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "%s may now hold %llu GPU of %s\n",
                                       "%s may now hold %llu GPUs of %s\n", (gulong)gpus),
                           argv[1], (unsigned long long)gpus, argv[2]);
    return einsora_cli_write_text(text, error);
}

static gboolean
admin_quota(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
            GError **error)
{
    static const EinsoraCliCommand quota_commands[] = {
        {"set", N_("TENANT CLASS GPUS"), N_("Set the GPUs of a class a tenant may hold"),
         quota_set},
        {NULL},
    };
    g_autofree gchar *description = einsora_cli_describe_commands(quota_commands);
    g_autofree gchar *parent = g_strdup(g_get_prgname());

    if (!einsora_cli_parse_group(cli, command, NULL, quota_commands, description, &argc, &argv,
                                 error))
        return FALSE;
    if (argc < 2) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("missing set TENANT CLASS GPUS"));
        return FALSE;
    }
    return einsora_cli_dispatch(cli, parent, quota_commands, argc - 1, argv + 1, error);
}

static const EinsoraCliCommand admin_commands[] = {
    {"accounts", N_("[list | create EMAIL | disable EMAIL | enable EMAIL | reset-password EMAIL]"),
     N_("List, create, disable and enable the Lab's accounts"), admin_accounts},
    {"tenants", NULL, N_("List the Lab's tenants and their GPU quotas"), admin_tenants},
    {"quota", N_("set TENANT CLASS GPUS"), N_("Give a tenant a quota of a GPU class"), admin_quota},
    {NULL},
};

gboolean
einsora_cli_admin(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    g_autofree gchar *description = einsora_cli_describe_commands(admin_commands);
    g_autofree gchar *parent = g_strdup(g_get_prgname());

    if (!einsora_cli_parse_group(cli, command, NULL, admin_commands, description, &argc, &argv,
                                 error))
        return FALSE;
    if (argc < 2) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("missing accounts, tenants or quota"));
        return FALSE;
    }
    return einsora_cli_dispatch(cli, parent, admin_commands, argc - 1, argv + 1, error);
}

gboolean
einsora_cli_audit(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *events;
    gboolean printed;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error) ||
        !call(cli, "GET", "/v1/audit", NULL, &root, &printed, error))
        return FALSE;
    if (printed)
        return TRUE;
    if ((events = list_of(root, "events", error)) == NULL)
        return FALSE;
    if (json_array_get_length(events) == 0)
        return einsora_cli_write_text(_("Nothing in your tenant's audit trail.\n"), error);
    table = einsora_table_new(
        5, (const char *const[]){_("TIME"), _("BY"), _("ACTION"), _("ON"), _("DETAIL")});
    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonObject *event = json_array_get_object_element(events, i);
        g_autofree gchar *at = NULL;

        if (event == NULL)
            continue;
        at = einsora_cli_format_time(einsora_cli_get_string(event, "at"));
        einsora_table_append_row(table, (const char *const[]){
                                            at,
                                            einsora_cli_get_string(event, "actor"),
                                            einsora_cli_get_string(event, "action"),
                                            einsora_cli_get_string(event, "target"),
                                            einsora_cli_get_string(event, "detail"),
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

/* One line of standard input; at a terminal, asked for without echo. */
static gchar *
read_secret_line(const char *prompt)
{
    gchar line[1100];
    gboolean tty = isatty(STDIN_FILENO);
    struct termios saved, quiet;
    gchar *result = NULL;

    if (tty) {
        g_printerr("%s", prompt);
        tcgetattr(STDIN_FILENO, &saved);
        quiet = saved;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    }
    if (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        result = g_strdup(line);
    }
    explicit_bzero(line, sizeof line);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
        g_printerr("\n");
    }
    return result;
}

gboolean
einsora_cli_password(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                     GError **error)
{
    g_autofree gchar *current = NULL;
    g_autofree gchar *new_password = NULL;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) body = NULL;
    g_autoptr(JsonNode) root = NULL;
    EinsoraClient *client;

    if (!einsora_cli_parse(cli, command, NULL,
                           _("Reads the current password, then the new one (at least 8 "
                             "characters): at a terminal without echo, else one line each from "
                             "standard input. An account with no password yet gives an empty "
                             "current one."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error) ||
        (client = einsora_cli_get_client(cli, error)) == NULL)
        return FALSE;
    current = read_secret_line(_("Current password: "));
    new_password = read_secret_line(_("New password: "));
    if (current == NULL || new_password == NULL) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("give the current password and the new one, a line each"));
        return FALSE;
    }
    json_builder_begin_object(builder);
    if (*current != '\0') {
        json_builder_set_member_name(builder, "current_password");
        json_builder_add_string_value(builder, current);
    }
    json_builder_set_member_name(builder, "new_password");
    json_builder_add_string_value(builder, new_password);
    json_builder_end_object(builder);
    body = json_builder_get_root(builder);
    explicit_bzero(current, strlen(current));
    explicit_bzero(new_password, strlen(new_password));
    /* 204: a JSON null root, not NULL. */
    root = einsora_client_request(client, "POST", "/v1/me/password", body, NULL, NULL, error);
    if (root == NULL)
        return FALSE;
    return einsora_cli_write_text(_("Password changed.\n"), error);
}
