/* einsora workloads, launch, start, stop, delete, events, export. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>
#include <string.h>

#include "einsora-table.h"

typedef JsonNode *(*WorkloadCall)(EinsoraClient *client, const char *id, GBytes **raw,
                                  GError **error);

gboolean
einsora_cli_workloads(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                      GError **error)
{
    gboolean all = FALSE;
    const GOptionEntry entries[] = {
        {"all", 'a', 0, G_OPTION_ARG_NONE, &all, N_("Include deleted workloads"), NULL},
        {NULL},
    };
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(JsonNode) everything = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *workloads;
    JsonArray *known;
    guint id_length;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_list_workloads(client, all, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    workloads = einsora_cli_get_array(root, "workloads", error);
    if (workloads == NULL)
        return FALSE;
    if (json_array_get_length(workloads) == 0)
        return einsora_cli_write_text(_("No workloads.\n"), error);

    /* The short IDs shown must resolve, and resolving sees deleted
     * workloads too: they must be told apart from those as well. */
    known = workloads;
    if (!all) {
        everything = einsora_client_list_workloads(client, TRUE, NULL, error);
        if (everything == NULL)
            return FALSE;
        known = einsora_cli_get_array(everything, "workloads", error);
        if (known == NULL)
            return FALSE;
    }
    id_length = einsora_cli_short_id_length(known);

    table = einsora_table_new(8, (const char *const[]){_("ID"), _("NAME"), _("KIND"), _("STATE"),
                                                       _("CLASS"), _("IMAGE"), _("REGION"),
                                                       _("CREATED")});
    for (guint i = 0; i < json_array_get_length(workloads); i++) {
        JsonObject *workload = json_array_get_object_element(workloads, i);
        g_autofree gchar *id = NULL;
        g_autofree gchar *created = NULL;

        if (workload == NULL)
            continue;
        id = g_strndup(einsora_cli_get_string(workload, "id"), id_length);
        created = einsora_cli_format_time(einsora_cli_get_string(workload, "created_at"));
        einsora_table_append_row(table, (const char *const[]){
                                            id,
                                            einsora_cli_get_string(workload, "name"),
                                            einsora_cli_get_string(workload, "kind"),
                                            einsora_cli_get_string(workload, "state"),
                                            einsora_cli_get_string(workload, "gpu_class"),
                                            einsora_cli_get_string(workload, "image"),
                                            einsora_cli_get_string(workload, "region"),
                                            created,
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

/* "off" (0: never), or a number of seconds, minutes, hours or days:
 * "45s", "30m", "2h", "1d". */
static gboolean
parse_duration_option(const char *option, const char *text, gint64 *seconds, GError **error)
{
    static const struct {
        char unit;
        gint64 seconds;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
    gsize length = strlen(text);

    if (g_str_equal(text, "off")) {
        *seconds = 0;
        return TRUE;
    }
    if (length >= 2 && strspn(text, "0123456789") == length - 1) {
        g_autofree gchar *number = g_strndup(text, length - 1);
        guint64 count = 0;

        for (guint i = 0; i < G_N_ELEMENTS(units); i++) {
            if (text[length - 1] == units[i].unit &&
                g_ascii_string_to_unsigned(number, 10, 1, G_MAXINT32, &count, NULL)) {
                *seconds = (gint64)count * units[i].seconds;
                return TRUE;
            }
        }
    }
    g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                _("--%s takes off or a duration like 30m, 2h or 1d, not “%s”"), option, text);
    return FALSE;
}

/* The names in @root's @list, or NULL when @name is one of them. */
static GPtrArray *
names_without(JsonNode *root, const char *list, const char *name)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    JsonNode *node = root != NULL && JSON_NODE_HOLDS_OBJECT(root)
                         ? json_object_get_member(json_node_get_object(root), list)
                         : NULL;
    JsonArray *array;

    if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
        return NULL;
    array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonObject *object = json_array_get_object_element(array, i);
        const char *offered = object != NULL ? einsora_cli_get_string(object, "name") : NULL;

        if (offered == NULL)
            continue;
        if (g_str_equal(offered, name))
            return NULL;
        g_ptr_array_add(names, (gpointer)offered);
    }
    g_ptr_array_add(names, NULL);
    return g_steal_pointer(&names);
}

/* The daemon refuses a class, image or model it doesn't know with a plain
 * invalid_request; what it offers is one request away, and a typo is
 * fixed faster when the message lists it. */
static void
explain_refusal(EinsoraClient *client, const char *gpu_class, const char *image, const char *model,
                GError **error)
{
    g_autoptr(JsonNode) catalog = NULL;
    g_autoptr(JsonNode) models = NULL;
    g_autoptr(GPtrArray) offered = NULL;
    g_autofree gchar *list = NULL;
    g_autofree gchar *message = NULL;
    GError *refusal = error != NULL ? *error : NULL;

    if (refusal == NULL || refusal->domain != EINSORA_CLIENT_ERROR ||
        g_strcmp0(einsora_client_error_get_code(refusal), "invalid_request") != 0)
        return;
    catalog = einsora_client_get_catalog(client, NULL, NULL);
    if ((offered = names_without(catalog, "classes", gpu_class)) != NULL) {
        list = g_strjoinv(", ", (gchar **)offered->pdata);
        /* TRANSLATORS: the class given, then the classes offered */
        message = g_strdup_printf(_("unknown class “%s”; classes offered: %s (einsora catalog "
                                    "lists them with your quota)"),
                                  gpu_class, list);
    } else if (image != NULL && (offered = names_without(catalog, "images", image)) != NULL) {
        list = g_strjoinv(", ", (gchar **)offered->pdata);
        /* TRANSLATORS: the image given, then the images offered */
        message = g_strdup_printf(
            _("unknown image “%s”; images offered: %s (einsora catalog lists them)"), image, list);
    } else if (model != NULL &&
               (models = einsora_client_request(client, "GET", "/v1/models", NULL, NULL, NULL,
                                                NULL)) != NULL &&
               (offered = names_without(models, "models", model)) != NULL && offered->len > 1) {
        list = g_strjoinv(", ", (gchar **)offered->pdata);
        /* TRANSLATORS: the model given, then the models in the store */
        message = g_strdup_printf(
            _("unknown model “%s”; models in the store: %s (einsora models lists them)"), model,
            list);
    }
    if (message == NULL)
        return;
    *error =
        einsora_client_error_new("invalid_request", einsora_client_error_get_request_id(refusal),
                                 einsora_client_error_get_status(refusal), message);
    g_error_free(refusal);
}

gboolean
einsora_cli_launch(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                   GError **error)
{
    g_autofree gchar *kind = NULL;
    g_autofree gchar *gpu_class = NULL;
    g_autofree gchar *image = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *region = NULL;
    g_autofree gchar *model = NULL;
    g_autofree gchar *idle = NULL;
    g_autofree gchar *fallback = NULL;
    g_autofree gchar *fallback_after = NULL;
    gint64 idle_seconds = -1;
    gint64 fallback_seconds = 0;
    const GOptionEntry entries[] = {
        {"kind", 0, 0, G_OPTION_ARG_STRING, &kind,
         N_("What to run: notebook or endpoint (required)"), N_("KIND")},
        {"class", 0, 0, G_OPTION_ARG_STRING, &gpu_class,
         N_("The machine class, as in the catalog: cpu-2c-4g, l40s-48gb, … (required)"),
         N_("CLASS")},
        {"image", 0, 0, G_OPTION_ARG_STRING, &image,
         N_("The image, as in the catalog: jupyter-linux, jupyter-notebook, … (required for a "
            "notebook)"),
         N_("IMAGE")},
        {"model", 0, 0, G_OPTION_ARG_STRING, &model,
         N_("An endpoint's model, by its name in the model store (required for an endpoint)"),
         N_("MODEL")},
        {"name", 0, 0, G_OPTION_ARG_STRING, &name,
         N_("A name to know it by (default: made from its ID)"), N_("NAME")},
        {"region", 0, 0, G_OPTION_ARG_STRING, &region,
         N_("Where to run it (default: the server's region)"), N_("REGION")},
        {"idle-timeout", 0, 0, G_OPTION_ARG_STRING, &idle,
         N_("Stop it after this long idle: 30m, 2h, 1d (off: never; default: the server's)"),
         N_("DURATION")},
        {"fallback", 0, 0, G_OPTION_ARG_STRING, &fallback,
         N_("Classes it may run on instead, in order, comma-separated (cpu: a CPU class as big "
            "as --class)"),
         N_("CLASS,…")},
        {"fallback-after", 0, 0, G_OPTION_ARG_STRING, &fallback_after,
         N_("How long it waits for --class before falling back: 10m, 1h (default: not at all)"),
         N_("DURATION")},
        {NULL},
    };
    static const char *const required[] = {"kind", "class"};
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *uuid = g_uuid_string_random();
    g_autofree gchar *key = NULL;
    g_autofree gchar *shown_name = NULL;
    g_autofree gchar *heading = NULL;
    g_autofree gchar *text = NULL;
    JsonObject *workload;

    if (!einsora_cli_parse(cli, command, entries, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    {
        const char *values[] = {kind, gpu_class};
        for (guint i = 0; i < G_N_ELEMENTS(required); i++) {
            if (values[i] == NULL) {
                g_set_error(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE, _("missing --%s"),
                            required[i]);
                return FALSE;
            }
        }
    }
    if (idle != NULL && !parse_duration_option("idle-timeout", idle, &idle_seconds, error))
        return FALSE;
    if (fallback_after != NULL &&
        (fallback == NULL ||
         !parse_duration_option("fallback-after", fallback_after, &fallback_seconds, error))) {
        if (fallback == NULL)
            g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                                _("--fallback-after goes with --fallback"));
        return FALSE;
    }
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    /* One key per invocation: if the request is sent again after it broke
     * in transit, the server creates the workload only once. */
    key = g_strconcat("einsora-cli-", uuid, NULL);
    if (model == NULL && image == NULL) {
        g_set_error_literal(error, EINSORA_CLI_ERROR, EINSORA_CLI_ERROR_USAGE,
                            _("missing --image (a notebook's) or --model (an endpoint's)"));
        return FALSE;
    }
    {
        g_autoptr(JsonBuilder) builder = json_builder_new();
        g_autoptr(JsonNode) body = NULL;
        const char *members[][2] = {{"kind", kind},   {"name", name},     {"gpu_class", gpu_class},
                                    {"image", image}, {"region", region}, {"model", model}};

        json_builder_begin_object(builder);
        for (guint i = 0; i < G_N_ELEMENTS(members); i++) {
            if (members[i][1] == NULL)
                continue;
            json_builder_set_member_name(builder, members[i][0]);
            json_builder_add_string_value(builder, members[i][1]);
        }
        if (idle_seconds >= 0) {
            json_builder_set_member_name(builder, "idle_timeout");
            json_builder_add_int_value(builder, idle_seconds);
        }
        if (fallback != NULL) {
            g_auto(GStrv) classes = g_strsplit(fallback, ",", -1);
            json_builder_set_member_name(builder, "fallback");
            json_builder_begin_array(builder);
            for (guint i = 0; classes[i] != NULL; i++)
                json_builder_add_string_value(builder, g_strstrip(classes[i]));
            json_builder_end_array(builder);
            json_builder_set_member_name(builder, "fallback_after");
            json_builder_add_int_value(builder, fallback_seconds);
        }
        json_builder_end_object(builder);
        body = json_builder_get_root(builder);
        root = einsora_client_request(client, "POST", "/v1/workloads", body, key, &raw, error);
    }
    if (root == NULL) {
        explain_refusal(client, gpu_class, image, model, error);
        return FALSE;
    }
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);

    workload = json_node_get_object(root);
    shown_name = einsora_cli_shown(workload, "name");
    heading = g_strdup_printf(_("Created workload “%s”\n"), shown_name);
    table = einsora_table_new(2, NULL);
    einsora_table_append_row(
        table, (const char *const[]){_("ID:"), einsora_cli_get_string(workload, "id")});
    einsora_table_append_row(
        table, (const char *const[]){_("State:"), einsora_cli_get_string(workload, "state")});
    einsora_table_append_row(
        table, (const char *const[]){_("Class:"), einsora_cli_get_string(workload, "gpu_class")});
    einsora_table_append_row(
        table, (const char *const[]){_("Image:"), einsora_cli_get_string(workload, "image")});
    if (einsora_cli_get_string(workload, "model") != NULL)
        einsora_table_append_row(
            table, (const char *const[]){_("Model:"), einsora_cli_get_string(workload, "model")});
    einsora_table_append_row(
        table, (const char *const[]){_("Region:"), einsora_cli_get_string(workload, "region")});
    if (json_object_has_member(workload, "idle_timeout")) {
        gint64 idle_limit = json_object_get_int_member(workload, "idle_timeout");
        g_autofree gchar *span =
            /* TRANSLATORS: the idle limit, in seconds */
            g_strdup_printf(g_dngettext(GETTEXT_PACKAGE, "stopped after %llds idle",
                                        "stopped after %llds idle", (gulong)MAX(idle_limit, 0)),
                            (long long)idle_limit);
        einsora_table_append_row(table, (const char *const[]){_("Idle:"), span});
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(heading, error) && einsora_cli_write_text(text, error);
}

/* start, stop and delete: one ID in, the workload's state now out. */
static gboolean
workload_action(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                WorkloadCall call, GError **error)
{
    g_autofree gchar *id = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *name = NULL;
    g_autofree gchar *state = NULL;
    g_autofree gchar *text = NULL;
    JsonObject *workload;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    id = einsora_cli_resolve_workload(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    root = call(einsora_cli_get_client(cli, NULL), id, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    workload = json_node_get_object(root);
    /* TRANSLATORS: name, ID, state: Workload “lab-1” (01a2…) is stopping */
    name = einsora_cli_shown(workload, "name");
    state = einsora_cli_shown(workload, "state");
    text = g_strdup_printf(_("Workload “%s” (%s) is %s\n"), name, id, state);
    return einsora_cli_write_text(text, error);
}

gboolean
einsora_cli_start(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                  GError **error)
{
    return workload_action(cli, command, argc, argv, einsora_client_start_workload, error);
}

gboolean
einsora_cli_stop(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                 GError **error)
{
    return workload_action(cli, command, argc, argv, einsora_client_stop_workload, error);
}

gboolean
einsora_cli_delete(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                   GError **error)
{
    return workload_action(cli, command, argc, argv, einsora_client_delete_workload, error);
}

gboolean
einsora_cli_events(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                   GError **error)
{
    g_autofree gchar *id = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(EinsoraTable) table = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *events;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    id = einsora_cli_resolve_workload(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    root = einsora_client_list_events(einsora_cli_get_client(cli, NULL), id, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    events = einsora_cli_get_array(root, "events", error);
    if (events == NULL)
        return FALSE;
    if (json_array_get_length(events) == 0)
        return einsora_cli_write_text(_("No events.\n"), error);

    table = einsora_table_new(4, (const char *const[]){_("TIME"), _("FROM"), _("TO"), _("REASON")});
    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonObject *event = json_array_get_object_element(events, i);
        g_autofree gchar *time = NULL;

        if (event == NULL)
            continue;
        time = einsora_cli_format_time(einsora_cli_get_string(event, "created_at"));
        einsora_table_append_row(table, (const char *const[]){
                                            time,
                                            einsora_cli_get_string(event, "from_state"),
                                            einsora_cli_get_string(event, "to_state"),
                                            einsora_cli_get_string(event, "reason"),
                                        });
    }
    text = einsora_table_render(table);
    return einsora_cli_write_text(text, error);
}

gboolean
einsora_cli_export(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                   GError **error)
{
    g_autofree gchar *id = NULL;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;

    if (!einsora_cli_parse(cli, command, NULL, NULL, FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 1, error))
        return FALSE;
    id = einsora_cli_resolve_workload(cli, argv[1], error);
    if (id == NULL)
        return FALSE;
    root = einsora_client_export_workload(einsora_cli_get_client(cli, NULL), id, &raw, error);
    if (root == NULL)
        return FALSE;
    /* The record exactly as the server wrote it, --json or not: nothing
     * added, nothing reformatted. */
    return einsora_cli_write_raw(raw, FALSE, error);
}
