/* einsora catalog: what a workload may ask for (GET /v1/catalog), the
 * classes with the caller's GPU quota, then the images. */
#define G_LOG_DOMAIN "einsora-cli"

#include "einsora-cli.h"

#include <glib/gi18n.h>

#include "einsora-table.h"

/* The strings of @object's array @member joined by ", ", or NULL. */
static gchar *
joined(JsonObject *object, const char *member)
{
    JsonNode *node = json_object_get_member(object, member);
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_auto(GStrv) items = NULL;
    JsonArray *array;

    if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
        return NULL;
    array = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonNode *element = json_array_get_element(array, i);
        if (JSON_NODE_HOLDS_VALUE(element) && json_node_get_value_type(element) == G_TYPE_STRING)
            g_strv_builder_add(builder, json_node_get_string(element));
    }
    items = g_strv_builder_end(builder);
    return g_strjoinv(", ", items);
}

static gchar *
memory_text(JsonObject *object)
{
    JsonNode *node = json_object_get_member(object, "memory_mib");

    if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
        json_node_get_value_type(node) != G_TYPE_INT64 || json_node_get_int(node) < 0)
        return NULL;
    return g_format_size_full((guint64)json_node_get_int(node) * 1024 * 1024,
                              G_FORMAT_SIZE_IEC_UNITS);
}

static gchar *
classes_table(JsonArray *classes)
{
    g_autoptr(EinsoraTable) table = einsora_table_new(
        8, (const char *const[]){_("CLASS"), _("ACCELERATOR"), _("CPUS"), _("MEMORY"), _("GPUS"),
                                 _("REGIONS"), _("GPUS HELD"), _("GPU QUOTA")});

    for (guint i = 0; i < json_array_get_length(classes); i++) {
        JsonObject *klass = json_array_get_object_element(classes, i);
        g_autofree gchar *cpus = NULL;
        g_autofree gchar *memory = NULL;
        g_autofree gchar *gpus = NULL;
        g_autofree gchar *regions = NULL;
        g_autofree gchar *held = NULL;
        g_autofree gchar *quota = NULL;

        if (klass == NULL)
            continue;
        cpus = einsora_cli_get_integer(klass, "cpus");
        memory = memory_text(klass);
        gpus = einsora_cli_get_integer(klass, "gpus");
        regions = joined(klass, "regions");
        /* null for CPU classes, which need no quota: shown as "-". */
        held = einsora_cli_get_integer(klass, "held");
        quota = einsora_cli_get_integer(klass, "quota");
        einsora_table_append_row(table, (const char *const[]){
                                            einsora_cli_get_string(klass, "name"),
                                            einsora_cli_get_string(klass, "accelerator"),
                                            cpus,
                                            memory,
                                            gpus,
                                            regions,
                                            held,
                                            quota,
                                        });
    }
    return einsora_table_render(table);
}

static gchar *
images_table(JsonArray *images)
{
    g_autoptr(EinsoraTable) table =
        einsora_table_new(5, (const char *const[]){_("IMAGE"), _("KINDS"), _("ACCELERATORS"),
                                                   _("DRIVERS"), _("RUNS HERE")});

    for (guint i = 0; i < json_array_get_length(images); i++) {
        JsonObject *image = json_array_get_object_element(images, i);
        g_autofree gchar *kinds = NULL;
        g_autofree gchar *accelerators = NULL;
        g_autofree gchar *drivers = NULL;

        if (image == NULL)
            continue;
        kinds = joined(image, "kinds");
        accelerators = joined(image, "accelerators");
        drivers = joined(image, "drivers");
        /* "no": a launch is created, and waits until a machine can. */
        einsora_table_append_row(
            table,
            (const char *const[]){
                einsora_cli_get_string(image, "name"),
                kinds,
                accelerators,
                drivers,
                json_object_get_boolean_member_with_default(image, "runs_here", FALSE) ? _("yes")
                                                                                       : _("no"),
            });
    }
    return einsora_table_render(table);
}

gboolean
einsora_cli_catalog(EinsoraCli *cli, const EinsoraCliCommand *command, int argc, char **argv,
                    GError **error)
{
    EinsoraClient *client;
    g_autoptr(GBytes) raw = NULL;
    g_autoptr(JsonNode) root = NULL;
    g_autofree gchar *classes_text = NULL;
    g_autofree gchar *images_text = NULL;
    g_autofree gchar *text = NULL;
    JsonArray *classes;
    JsonArray *images;

    if (!einsora_cli_parse(cli, command, NULL,
                           _("GPUS HELD is what your workloads of the class hold now; GPU QUOTA "
                             "what they may hold. CPU classes need no quota."),
                           FALSE, &argc, &argv, error) ||
        !einsora_cli_expect_arguments(command, argc, argv, 0, error))
        return FALSE;
    client = einsora_cli_get_client(cli, error);
    if (client == NULL)
        return FALSE;
    root = einsora_client_get_catalog(client, &raw, error);
    if (root == NULL)
        return FALSE;
    if (cli->options.json)
        return einsora_cli_write_raw(raw, TRUE, error);
    classes = einsora_cli_get_array(root, "classes", error);
    if (classes == NULL)
        return FALSE;
    images = einsora_cli_get_array(root, "images", error);
    if (images == NULL)
        return FALSE;

    classes_text =
        json_array_get_length(classes) > 0 ? classes_table(classes) : g_strdup(_("No classes.\n"));
    images_text =
        json_array_get_length(images) > 0 ? images_table(images) : g_strdup(_("No images.\n"));
    text = g_strconcat(classes_text, "\n", images_text, NULL);
    return einsora_cli_write_text(text, error);
}
