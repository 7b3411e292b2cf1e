#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-inventory.h"

#include <string.h>

#include "einsora-driver.h"
#include "einsora-json-read.h"
#include "einsora-json-text.h"

G_DEFINE_BOXED_TYPE(EinsoraInventory, einsora_inventory, einsora_inventory_copy,
                    einsora_inventory_free)

EinsoraInventory *
einsora_inventory_new(void)
{
    EinsoraInventory *inventory = g_new0(EinsoraInventory, 1);

    inventory->gpus = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_inventory_gpu_free);
    inventory->drivers = g_new0(gchar *, 1);
    return inventory;
}

EinsoraInventory *
einsora_inventory_copy(const EinsoraInventory *inventory)
{
    EinsoraInventory *copy = g_new0(EinsoraInventory, 1);

    *copy = *inventory;
    copy->os = g_strdup(inventory->os);
    copy->arch = g_strdup(inventory->arch);
    copy->gpus =
        g_ptr_array_new_full(inventory->gpus->len, (GDestroyNotify)einsora_inventory_gpu_free);
    for (guint i = 0; i < inventory->gpus->len; i++)
        g_ptr_array_add(copy->gpus, einsora_inventory_gpu_copy(inventory->gpus->pdata[i]));
    copy->drivers = inventory->drivers != NULL ? g_strdupv(inventory->drivers) : g_new0(gchar *, 1);
    return copy;
}

void
einsora_inventory_free(EinsoraInventory *inventory)
{
    if (inventory == NULL)
        return;
    g_free(inventory->os);
    g_free(inventory->arch);
    g_clear_pointer(&inventory->gpus, g_ptr_array_unref);
    g_strfreev(inventory->drivers);
    g_free(inventory);
}

JsonNode *
einsora_inventory_to_json(const EinsoraInventory *inventory)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    einsora_json_add_string(builder, "os", inventory->os);
    einsora_json_add_string(builder, "arch", inventory->arch);
    einsora_json_add_int(builder, "cpus", inventory->cpus);
    einsora_json_add_int(builder, "memory_mib", inventory->memory_mib);
    json_builder_set_member_name(builder, "gpus");
    json_builder_begin_array(builder);
    for (guint i = 0; i < inventory->gpus->len; i++)
        json_builder_add_value(builder, einsora_inventory_gpu_to_json(inventory->gpus->pdata[i]));
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "drivers");
    json_builder_begin_array(builder);
    for (guint i = 0; inventory->drivers != NULL && inventory->drivers[i] != NULL; i++)
        json_builder_add_string_value(builder, inventory->drivers[i]);
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

static gboolean
read_drivers(JsonObject *object, GStrv *out, GError **error)
{
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    JsonArray *array;

    if (!einsora_json_read_array(object, "drivers", EINSORA_INVENTORY_MAX_DRIVERS, &array, error))
        return FALSE;
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        g_autofree gchar *member = g_strdup_printf("drivers[%u]", i);

        if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
            return einsora_json_invalid(error, "\"%s\" must be a string", member);
        if (!einsora_json_check_string(json_node_get_string(node), member, error))
            return FALSE;
        g_strv_builder_add(builder, json_node_get_string(node));
    }
    *out = g_strv_builder_end(builder);
    return TRUE;
}

/* Parsing bounds the report; whether its drivers and GPUs fit the machine
 * is einsora_inventory_validate()'s to say. */
EinsoraInventory *
einsora_inventory_from_json(JsonNode *node, GError **error)
{
    static const char *const members[] = {
        "os", "arch", "cpus", "memory_mib", "gpus", "drivers", NULL,
    };
    g_autoptr(EinsoraInventory) inventory = einsora_inventory_new();
    JsonObject *object;
    JsonArray *gpus;

    if (!einsora_json_read_object(node, "an inventory", members, &object, error) ||
        !einsora_json_read_string(object, "os", TRUE, &inventory->os, error))
        return NULL;
    if (!g_str_equal(inventory->os, "linux") && !g_str_equal(inventory->os, "darwin")) {
        einsora_json_invalid(error, "\"os\" must be linux or darwin");
        return NULL;
    }
    if (!einsora_json_read_string(object, "arch", TRUE, &inventory->arch, error) ||
        !einsora_json_read_int(object, "cpus", EINSORA_INVENTORY_MAX_CPUS, &inventory->cpus,
                               error) ||
        !einsora_json_read_int(object, "memory_mib", EINSORA_INVENTORY_MAX_MEMORY_MIB,
                               &inventory->memory_mib, error) ||
        !einsora_json_read_array(object, "gpus", EINSORA_INVENTORY_MAX_GPUS, &gpus, error))
        return NULL;
    for (guint i = 0; i < json_array_get_length(gpus); i++) {
        EinsoraInventoryGpu *gpu =
            einsora_inventory_gpu_from_json(json_array_get_element(gpus, i), error);
        if (gpu == NULL) {
            g_prefix_error(error, "gpus[%u]: ", i);
            return NULL;
        }
        g_ptr_array_add(inventory->gpus, gpu);
    }
    g_strfreev(inventory->drivers);
    inventory->drivers = NULL;
    if (!read_drivers(object, &inventory->drivers, error))
        return NULL;
    return g_steal_pointer(&inventory);
}

static gboolean
is_apple_silicon(const EinsoraInventory *inventory)
{
    return g_strcmp0(inventory->os, "darwin") == 0 &&
           (g_strcmp0(inventory->arch, "arm64") == 0 || g_strcmp0(inventory->arch, "aarch64") == 0);
}

static gboolean
validate_drivers(const EinsoraInventory *inventory, GError **error)
{
    guint n = inventory->drivers != NULL ? g_strv_length(inventory->drivers) : 0;

    if (n > EINSORA_INVENTORY_MAX_DRIVERS)
        return einsora_json_invalid(error, "\"drivers\" has more than %d entries",
                                    EINSORA_INVENTORY_MAX_DRIVERS);
    for (guint i = 0; i < n; i++) {
        const char *name = inventory->drivers[i];
        /* The driver table, not the agent, says which OS a driver runs on. */
        const EinsoraDriverInfo *driver = einsora_driver_lookup(name);
        g_autofree gchar *member = g_strdup_printf("drivers[%u]", i);

        if (!einsora_json_check_string(name, member, error))
            return FALSE;
        if (driver == NULL)
            return einsora_json_invalid(error, "\"%s\": unknown driver \"%s\"", member, name);
        if (driver->os != NULL && g_strcmp0(driver->os, inventory->os) != 0)
            return einsora_json_invalid(error,
                                        "\"%s\": the %s driver runs only on %s, and this "
                                        "machine is %s",
                                        member, name, driver->os, inventory->os);
        for (guint j = 0; j < i; j++) {
            if (g_str_equal(inventory->drivers[j], name))
                return einsora_json_invalid(error, "\"%s\": %s is listed twice", member, name);
        }
    }
    return TRUE;
}

static gboolean
validate_gpus(const EinsoraInventory *inventory, GError **error)
{
    guint apple_gpus = 0;

    if (inventory->gpus->len > EINSORA_INVENTORY_MAX_GPUS)
        return einsora_json_invalid(error, "\"gpus\" has more than %d entries",
                                    EINSORA_INVENTORY_MAX_GPUS);
    for (guint i = 0; i < inventory->gpus->len; i++) {
        const EinsoraInventoryGpu *gpu = inventory->gpus->pdata[i];
        g_autofree gchar *member = g_strdup_printf("gpus[%u].vendor", i);
        g_autofree gchar *model_member = g_strdup_printf("gpus[%u].model", i);

        if (g_strcmp0(gpu->vendor, "nvidia") != 0 && g_strcmp0(gpu->vendor, "amd") != 0 &&
            g_strcmp0(gpu->vendor, "apple") != 0)
            return einsora_json_invalid(error, "\"%s\" must be nvidia, amd or apple", member);
        if (gpu->model == NULL)
            return einsora_json_invalid(error, "missing member \"%s\"", model_member);
        if (!einsora_json_check_string(gpu->model, model_member, error))
            return FALSE;
        if (gpu->memory_mib < 0 || gpu->memory_mib > EINSORA_INVENTORY_MAX_MEMORY_MIB)
            return einsora_json_invalid(error, "\"gpus[%u].memory_mib\" is out of range", i);
        if (!g_str_equal(gpu->vendor, "apple"))
            continue;
        /* An Apple GPU is the unified GPU of an Apple Silicon Mac: there
         * is one, and nowhere else. */
        if (!is_apple_silicon(inventory))
            return einsora_json_invalid(error,
                                        "\"%s\": an Apple GPU is only in a Mac with Apple "
                                        "Silicon, and this machine is %s on %s",
                                        member, inventory->os, inventory->arch);
        if (++apple_gpus > 1)
            return einsora_json_invalid(error, "\"%s\": a Mac has only one Apple GPU", member);
    }
    return TRUE;
}

/* An inventory must fit the machine it claims to be: its OS is the one
 * the machine registered with (when known), its drivers run on that OS,
 * and its GPUs are ones such a machine can have. An agent's report is
 * never trusted for policy until this says yes. */
gboolean
einsora_inventory_validate(const EinsoraInventory *inventory, const char *machine_os,
                           GError **error)
{
    g_return_val_if_fail(inventory != NULL, FALSE);

    if (g_strcmp0(inventory->os, "linux") != 0 && g_strcmp0(inventory->os, "darwin") != 0)
        return einsora_json_invalid(error, "\"os\" must be linux or darwin");
    if (machine_os != NULL && !g_str_equal(machine_os, inventory->os))
        return einsora_json_invalid(error, "\"os\" says %s, but this machine registered as %s",
                                    inventory->os, machine_os);
    if (inventory->arch == NULL)
        return einsora_json_invalid(error, "missing member \"arch\"");
    if (!einsora_json_check_string(inventory->arch, "arch", error))
        return FALSE;
    if (inventory->cpus < 0 || inventory->cpus > EINSORA_INVENTORY_MAX_CPUS)
        return einsora_json_invalid(error, "\"cpus\" must be between 0 and %d",
                                    EINSORA_INVENTORY_MAX_CPUS);
    if (inventory->memory_mib < 0 || inventory->memory_mib > EINSORA_INVENTORY_MAX_MEMORY_MIB)
        return einsora_json_invalid(error, "\"memory_mib\" must be between 0 and %" G_GINT64_FORMAT,
                                    EINSORA_INVENTORY_MAX_MEMORY_MIB);
    return validate_drivers(inventory, error) && validate_gpus(inventory, error);
}

/* The machine's inventory as the store keeps it: read as strictly as a
 * report and checked again against the machine, so only an inventory that
 * fits it decides or shows anything (a row written by an older version, or
 * edited behind the daemon's back, does neither). TRUE with *out NULL when
 * its agent hasn't reported one yet; FALSE when the stored one doesn't fit,
 * saying why. */
gboolean
einsora_inventory_read_stored(const EinsoraMachine *machine, EinsoraInventory **out, GError **error)
{
    g_autoptr(JsonParser) parser = NULL;
    g_autoptr(EinsoraInventory) inventory = NULL;

    g_return_val_if_fail(machine != NULL, FALSE);
    g_return_val_if_fail(out != NULL, FALSE);

    *out = NULL;
    if (machine->inventory == NULL)
        return TRUE;
    if (!einsora_json_text_is_one_value(machine->inventory, strlen(machine->inventory)))
        return einsora_json_invalid(error, "an inventory must be one JSON object");
    parser = json_parser_new();
    if (!json_parser_load_from_data(parser, machine->inventory, -1, error))
        return FALSE;
    inventory = einsora_inventory_from_json(json_parser_get_root(parser), error);
    if (inventory == NULL || !einsora_inventory_validate(inventory, machine->os, error))
        return FALSE;
    *out = g_steal_pointer(&inventory);
    return TRUE;
}
