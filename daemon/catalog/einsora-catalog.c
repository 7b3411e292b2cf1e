#define G_LOG_DOMAIN "einsora-catalog"

#include "einsora-catalog.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <stdarg.h>
#include <string.h>

#include "einsora-catalog-resources.h"
#include "einsora-error.h"
#include "einsora-json-text.h"

#define BUILTIN_PATH "/org/einsora/catalog/catalog.json"
#define BUILTIN_ORIGIN "resource://" BUILTIN_PATH
#define CATALOG_VERSION 1
#define NAME_MAX_LENGTH 63

struct _EinsoraCatalog {
    GObject parent_instance;

    gchar *origin;
    GPtrArray *regions;    /* of EinsoraRegion */
    GPtrArray *classes;    /* of EinsoraComputeClass */
    GPtrArray *images;     /* of EinsoraImage */
    GPtrArray *drivers;    /* of EinsoraCatalogDriver */
    GPtrArray *gpu_models; /* of EinsoraGpuModel */
};

G_DEFINE_TYPE(EinsoraCatalog, einsora_catalog, G_TYPE_OBJECT)

/* Records: the catalog owns them all; callers only borrow. */

static void
region_free(EinsoraRegion *region)
{
    if (region == NULL)
        return;
    g_free(region->name);
    g_free(region->description);
    g_free(region);
}

static void
compute_class_free(EinsoraComputeClass *klass)
{
    if (klass == NULL)
        return;
    g_free(klass->name);
    g_strfreev(klass->regions);
    g_free(klass);
}

static void
image_runtime_free(EinsoraImageRuntime *runtime)
{
    if (runtime == NULL)
        return;
    g_free(runtime->reference);
    g_strfreev(runtime->driver_refs);
    g_free(runtime->server);
    g_free(runtime);
}

static void
image_free(EinsoraImage *image)
{
    if (image == NULL)
        return;
    g_free(image->name);
    g_free(image->description);
    g_clear_pointer(&image->runtimes, g_ptr_array_unref);
    g_free(image);
}

static void
catalog_driver_free(EinsoraCatalogDriver *driver)
{
    if (driver == NULL)
        return;
    g_free(driver->name);
    g_free(driver);
}

static void
gpu_model_free(EinsoraGpuModel *model)
{
    if (model == NULL)
        return;
    g_free(model->model);
    g_free(model->gpu_class);
    g_free(model);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraRegion, region_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraComputeClass, compute_class_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraImageRuntime, image_runtime_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraImage, image_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraCatalogDriver, catalog_driver_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraGpuModel, gpu_model_free)

static void
einsora_catalog_finalize(GObject *object)
{
    EinsoraCatalog *self = EINSORA_CATALOG(object);

    g_free(self->origin);
    g_ptr_array_unref(self->regions);
    g_ptr_array_unref(self->classes);
    g_ptr_array_unref(self->images);
    g_ptr_array_unref(self->drivers);
    g_ptr_array_unref(self->gpu_models);
    G_OBJECT_CLASS(einsora_catalog_parent_class)->finalize(object);
}

static void
einsora_catalog_class_init(EinsoraCatalogClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_catalog_finalize;
}

static void
einsora_catalog_init(EinsoraCatalog *self)
{
    self->regions = g_ptr_array_new_with_free_func((GDestroyNotify)region_free);
    self->classes = g_ptr_array_new_with_free_func((GDestroyNotify)compute_class_free);
    self->images = g_ptr_array_new_with_free_func((GDestroyNotify)image_free);
    self->drivers = g_ptr_array_new_with_free_func((GDestroyNotify)catalog_driver_free);
    self->gpu_models = g_ptr_array_new_with_free_func((GDestroyNotify)gpu_model_free);
}

/* Reading JSON. Every error here is an invalid_request whose message the
 * callers prefix with where it happened, so the operator sees the entry. */

static gboolean invalid(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

static gboolean
invalid(GError **error, const char *format, ...)
{
    g_autofree gchar *message = NULL;
    va_list args;

    va_start(args, format);
    message = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST, message);
    return FALSE;
}

/* Strings are printed back in messages and logs; refusing control
 * characters keeps those one clean line. */
static gboolean
is_printable(const char *str)
{
    for (const char *p = str; *p != '\0'; p++) {
        if ((guchar)*p < 0x20 || *p == 0x7f)
            return FALSE;
    }
    return TRUE;
}

/* ^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$: safe in URLs, file names and
 * runtime object names. */
static gboolean
is_valid_name(const char *name)
{
    gsize length = strlen(name);

    if (length == 0 || length > NAME_MAX_LENGTH)
        return FALSE;
    for (gsize i = 0; i < length; i++) {
        char c = name[i];
        if (g_ascii_islower(c) || g_ascii_isdigit(c))
            continue;
        if ((c == '-' || c == '.') && i != 0 && i != length - 1)
            continue;
        return FALSE;
    }
    return TRUE;
}

/* Unknown fields are refused so that a typo is an error, not a silently
 * missing setting. */
static gboolean
check_fields(JsonObject *object, const char *const *allowed, GError **error)
{
    g_autoptr(GList) members = json_object_get_members(object);

    for (GList *l = members; l != NULL; l = l->next) {
        if (!g_strv_contains(allowed, l->data)) {
            g_autofree gchar *escaped = g_strescape(l->data, NULL);
            return invalid(error, "unknown field \"%s\"", escaped);
        }
    }
    return TRUE;
}

/* *out is borrowed from @object, and NULL when an optional field is
 * absent. */
static gboolean
read_string(JsonObject *object, const char *member, gboolean required, const char **out,
            GError **error)
{
    JsonNode *node = json_object_get_member(object, member);
    const char *value;

    *out = NULL;
    if (node == NULL) {
        if (required)
            return invalid(error, "missing field \"%s\"", member);
        return TRUE;
    }
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
        return invalid(error, "\"%s\" must be a string", member);
    value = json_node_get_string(node);
    if (required && *value == '\0')
        return invalid(error, "\"%s\" is empty", member);
    if (!is_printable(value))
        return invalid(error, "\"%s\" contains a control character", member);
    *out = value;
    return TRUE;
}

static gboolean
read_name(JsonObject *object, const char *member, const char **out, GError **error)
{
    if (!read_string(object, member, TRUE, out, error))
        return FALSE;
    if (!is_valid_name(*out)) {
        return invalid(error,
                       "invalid %s \"%s\": use lowercase letters, digits, \".\" and \"-\", at "
                       "most 63 characters, starting and ending with a letter or digit",
                       member, *out);
    }
    return TRUE;
}

static gboolean
read_int(JsonObject *object, const char *member, gboolean required, gint64 fallback, gint64 *out,
         GError **error)
{
    JsonNode *node = json_object_get_member(object, member);

    *out = fallback;
    if (node == NULL) {
        if (required)
            return invalid(error, "missing field \"%s\"", member);
        return TRUE;
    }
    if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64)
        return invalid(error, "\"%s\" must be a whole number", member);
    *out = json_node_get_int(node);
    return TRUE;
}

/* *out is borrowed, and NULL when an optional field is absent. */
static gboolean
read_array(JsonObject *object, const char *member, gboolean required, JsonArray **out,
           GError **error)
{
    JsonNode *node = json_object_get_member(object, member);

    *out = NULL;
    if (node == NULL) {
        if (required)
            return invalid(error, "missing field \"%s\"", member);
        return TRUE;
    }
    if (!JSON_NODE_HOLDS_ARRAY(node))
        return invalid(error, "\"%s\" must be a list", member);
    *out = json_node_get_array(node);
    return TRUE;
}

/* A list of distinct, non-empty strings; an empty list is refused because
 * it always means a mistake (an entry that can never be used). */
static gboolean
read_strings(JsonObject *object, const char *member, gboolean required, GStrv *out, GError **error)
{
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_autoptr(GPtrArray) seen = g_ptr_array_new();
    JsonArray *array;

    *out = NULL;
    if (!read_array(object, member, required, &array, error))
        return FALSE;
    if (array == NULL)
        return TRUE;
    if (json_array_get_length(array) == 0)
        return invalid(error, "\"%s\" is empty", member);
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        const char *value;

        if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
            return invalid(error, "\"%s\"[%u] must be a string", member, i);
        value = json_node_get_string(node);
        if (*value == '\0' || !is_printable(value))
            return invalid(error, "\"%s\"[%u] is empty or contains a control character", member, i);
        if (g_ptr_array_find_with_equal_func(seen, value, g_str_equal, NULL))
            return invalid(error, "\"%s\" lists \"%s\" twice", member, value);
        g_ptr_array_add(seen, (gpointer)value);
        g_strv_builder_add(builder, value);
    }
    *out = g_strv_builder_end(builder);
    return TRUE;
}

static gboolean
read_kinds(JsonObject *object, guint *kinds, GError **error)
{
    g_auto(GStrv) names = NULL;

    *kinds = 0;
    if (!read_strings(object, "kinds", TRUE, &names, error))
        return FALSE;
    for (guint i = 0; names[i] != NULL; i++) {
        EinsoraWorkloadKind kind;
        if (!einsora_workload_kind_from_string(names[i], &kind))
            return invalid(error, "unknown kind \"%s\"", names[i]);
        *kinds |= 1u << kind;
    }
    return TRUE;
}

static gboolean
read_accelerators(JsonObject *object, guint *accelerators, GError **error)
{
    g_auto(GStrv) names = NULL;

    *accelerators = 0;
    if (!read_strings(object, "accelerators", TRUE, &names, error))
        return FALSE;
    for (guint i = 0; names[i] != NULL; i++) {
        EinsoraAccelerator accelerator;
        if (!einsora_accelerator_from_string(names[i], &accelerator))
            return invalid(error, "unknown accelerator \"%s\"", names[i]);
        *accelerators |= 1u << accelerator;
    }
    return TRUE;
}

/* "notebook, endpoint": for messages. */
static gchar *
kinds_to_string(guint kinds)
{
    g_autoptr(GString) str = g_string_new(NULL);

    for (guint i = 0; i < EINSORA_WORKLOAD_KIND_COUNT; i++) {
        if ((kinds & (1u << i)) == 0)
            continue;
        if (str->len > 0)
            g_string_append(str, ", ");
        g_string_append(str, einsora_workload_kind_to_string((EinsoraWorkloadKind)i));
    }
    return g_string_free(g_steal_pointer(&str), FALSE);
}

static gchar *
known_drivers_to_string(void)
{
    g_autoptr(GString) str = g_string_new(NULL);
    guint n_drivers;
    const EinsoraDriverInfo *table = einsora_driver_table(&n_drivers);

    for (guint i = 0; i < n_drivers; i++)
        g_string_append_printf(str, "%s%s", i > 0 ? ", " : "", table[i].name);
    return g_string_free(g_steal_pointer(&str), FALSE);
}

/* Entries. Each parser appends one record to the catalog, checking it
 * against what is already there; sections are read in dependency order. */

typedef gboolean (*EntryParser)(EinsoraCatalog *self, JsonObject *object, GError **error);

static gboolean
parse_region(EinsoraCatalog *self, JsonObject *object, GError **error)
{
    static const char *const fields[] = {"name", "description", NULL};
    g_autoptr(EinsoraRegion) region = NULL;
    const char *name;
    const char *description;

    if (!check_fields(object, fields, error) || !read_name(object, "name", &name, error) ||
        !read_string(object, "description", FALSE, &description, error))
        return FALSE;
    if (einsora_catalog_lookup_region(self, name) != NULL)
        return invalid(error, "another region is already called \"%s\"", name);

    region = g_new0(EinsoraRegion, 1);
    region->name = g_strdup(name);
    region->description = g_strdup(description != NULL ? description : "");
    g_ptr_array_add(self->regions, g_steal_pointer(&region));
    return TRUE;
}

static gboolean
parse_driver(EinsoraCatalog *self, JsonObject *object, GError **error)
{
    static const char *const fields[] = {"name", "kinds", "accelerators", "isolation", NULL};
    g_autoptr(EinsoraCatalogDriver) driver = NULL;
    const EinsoraDriverInfo *info;
    const char *name;
    const char *isolation_name;
    guint kinds;
    guint accelerators;

    if (!check_fields(object, fields, error) || !read_name(object, "name", &name, error))
        return FALSE;
    info = einsora_driver_lookup(name);
    if (info == NULL) {
        g_autofree gchar *known = known_drivers_to_string();
        return invalid(error, "unknown driver \"%s\"; this daemon has %s", name, known);
    }
    if (einsora_catalog_lookup_driver(self, name) != NULL)
        return invalid(error, "driver \"%s\" is listed twice", name);
    if (!read_kinds(object, &kinds, error) || !read_accelerators(object, &accelerators, error))
        return FALSE;
    /* A catalog may only narrow what a driver runs, never widen it. */
    if ((kinds & ~info->kinds) != 0) {
        g_autofree gchar *extra = kinds_to_string(kinds & ~info->kinds);
        return invalid(error, "driver \"%s\" cannot run %s", name, extra);
    }
    for (guint i = 0; i < EINSORA_ACCELERATOR_COUNT; i++) {
        if ((accelerators & ~info->accelerators & (1u << i)) != 0) {
            return invalid(error, "driver \"%s\" cannot run on %s", name,
                           einsora_accelerator_to_string((EinsoraAccelerator)i));
        }
    }
    /* Isolation decides who may run on a machine: it is the domain
     * table's alone, so a catalog may state it but never change it. */
    if (!read_string(object, "isolation", FALSE, &isolation_name, error))
        return FALSE;
    if (isolation_name != NULL) {
        EinsoraIsolation isolation;
        if (!einsora_isolation_from_string(isolation_name, &isolation))
            return invalid(error, "unknown isolation \"%s\"", isolation_name);
        if (isolation != info->isolation) {
            return invalid(error, "driver \"%s\" has %s isolation; a catalog cannot change it",
                           name, einsora_isolation_to_string(info->isolation));
        }
    }

    driver = g_new0(EinsoraCatalogDriver, 1);
    driver->name = g_strdup(name);
    driver->kinds = kinds;
    driver->accelerators = accelerators;
    driver->info = info;
    g_ptr_array_add(self->drivers, g_steal_pointer(&driver));
    return TRUE;
}

static gboolean
parse_class(EinsoraCatalog *self, JsonObject *object, GError **error)
{
    static const char *const fields[] = {"name",        "cpus",    "memory_mib", "devices",
                                         "accelerator", "regions", NULL};
    g_autoptr(EinsoraComputeClass) klass = g_new0(EinsoraComputeClass, 1);
    const char *name;
    const char *accelerator_name;

    if (!check_fields(object, fields, error) || !read_name(object, "name", &name, error))
        return FALSE;
    if (einsora_catalog_lookup_class(self, name) != NULL)
        return invalid(error, "another class is already called \"%s\"", name);
    if (!read_int(object, "cpus", TRUE, 0, &klass->cpus, error) ||
        !read_int(object, "memory_mib", TRUE, 0, &klass->memory_mib, error) ||
        !read_int(object, "devices", FALSE, 0, &klass->devices, error) ||
        !read_string(object, "accelerator", TRUE, &accelerator_name, error) ||
        !read_strings(object, "regions", FALSE, &klass->regions, error))
        return FALSE;
    if (klass->cpus <= 0)
        return invalid(error, "\"cpus\" must be at least 1");
    if (klass->memory_mib <= 0)
        return invalid(error, "\"memory_mib\" must be at least 1");
    if (klass->devices < 0)
        return invalid(error, "\"devices\" must not be negative");
    if (!einsora_accelerator_from_string(accelerator_name, &klass->accelerator))
        return invalid(error, "unknown accelerator \"%s\"", accelerator_name);
    if (klass->accelerator == EINSORA_ACCELERATOR_CPU && klass->devices != 0)
        return invalid(error, "a cpu class has no devices; \"devices\" must be 0");
    if (klass->accelerator != EINSORA_ACCELERATOR_CPU && klass->devices == 0) {
        return invalid(error, "an %s class needs \"devices\" of at least 1",
                       einsora_accelerator_to_string(klass->accelerator));
    }
    /* A Mac has one GPU, so more could never be placed. */
    if (klass->accelerator == EINSORA_ACCELERATOR_APPLE && klass->devices != 1)
        return invalid(error, "an apple class has exactly one device");
    for (guint i = 0; klass->regions != NULL && klass->regions[i] != NULL; i++) {
        if (einsora_catalog_lookup_region(self, klass->regions[i]) == NULL)
            return invalid(error, "unknown region \"%s\"", klass->regions[i]);
    }

    klass->name = g_strdup(name);
    g_ptr_array_add(self->classes, g_steal_pointer(&klass));
    return TRUE;
}

/* Every driver a runtime names must be in this catalog and run the
 * runtime's accelerator with at least one of the image's kinds: placement
 * trusts driver_refs, so a reference that could never run is a mistake. */
static gboolean
parse_runtime(EinsoraCatalog *self, const EinsoraImage *image, EinsoraAccelerator accelerator,
              JsonNode *node, EinsoraImageRuntime **out, GError **error)
{
    static const char *const fields[] = {"reference", "driver_refs", "server", NULL};
    g_autoptr(EinsoraImageRuntime) runtime = g_new0(EinsoraImageRuntime, 1);
    const char *accelerator_name = einsora_accelerator_to_string(accelerator);
    JsonObject *object;
    const char *reference;

    if (!JSON_NODE_HOLDS_OBJECT(node))
        return invalid(error, "must be an object");
    object = json_node_get_object(node);
    if (!check_fields(object, fields, error) ||
        !read_string(object, "reference", TRUE, &reference, error) ||
        !read_strings(object, "driver_refs", TRUE, &runtime->driver_refs, error))
        return FALSE;
    for (guint i = 0; runtime->driver_refs[i] != NULL; i++) {
        const char *ref = runtime->driver_refs[i];
        const EinsoraCatalogDriver *driver = einsora_catalog_lookup_driver(self, ref);
        gboolean runs = FALSE;

        if (driver == NULL)
            return invalid(error, "driver \"%s\" is not in the catalog's drivers", ref);
        if ((driver->accelerators & (1u << accelerator)) == 0)
            return invalid(error, "driver \"%s\" does not run on %s", ref, accelerator_name);
        for (guint k = 0; k < EINSORA_WORKLOAD_KIND_COUNT; k++) {
            if ((image->kinds & (1u << k)) != 0)
                runs |= einsora_catalog_driver_runs(driver, (EinsoraWorkloadKind)k, accelerator);
        }
        if (!runs) {
            g_autofree gchar *kinds = kinds_to_string(image->kinds);
            return invalid(error, "driver \"%s\" runs none of the image's kinds (%s)", ref, kinds);
        }
    }

    if (json_object_has_member(object, "server")) {
        const char *server;
        EinsoraWorkloadKind serves;

        if (!read_string(object, "server", TRUE, &server, error))
            return FALSE;
        if (!einsora_catalog_server_serves(server, &serves))
            return invalid(error, "unknown server \"%s\"; one of jupyter, llama-server, vllm",
                           server);
        if ((image->kinds & (1u << serves)) == 0)
            return invalid(error, "server \"%s\" serves %ss, and the image runs none", server,
                           einsora_workload_kind_to_string(serves));
        runtime->server = g_strdup(server);
    }

    runtime->accelerator = accelerator;
    runtime->reference = g_strdup(reference);
    *out = g_steal_pointer(&runtime);
    return TRUE;
}

static gboolean
parse_image(EinsoraCatalog *self, JsonObject *object, GError **error)
{
    static const char *const fields[] = {"name", "description", "kinds", "runtimes", NULL};
    g_autoptr(EinsoraImage) image = g_new0(EinsoraImage, 1);
    g_autoptr(GList) members = NULL;
    JsonNode *runtimes_node;
    const char *name;
    const char *description;

    if (!check_fields(object, fields, error) || !read_name(object, "name", &name, error))
        return FALSE;
    if (einsora_catalog_lookup_image(self, name) != NULL)
        return invalid(error, "another image is already called \"%s\"", name);
    if (!read_string(object, "description", FALSE, &description, error) ||
        !read_kinds(object, &image->kinds, error))
        return FALSE;

    runtimes_node = json_object_get_member(object, "runtimes");
    if (runtimes_node == NULL)
        return invalid(error, "missing field \"runtimes\"");
    if (!JSON_NODE_HOLDS_OBJECT(runtimes_node))
        return invalid(error, "\"runtimes\" must be an object keyed by accelerator");
    members = json_object_get_members(json_node_get_object(runtimes_node));
    if (members == NULL)
        return invalid(error, "\"runtimes\" is empty");

    image->runtimes = g_ptr_array_new_with_free_func((GDestroyNotify)image_runtime_free);
    for (GList *l = members; l != NULL; l = l->next) {
        const char *key = l->data;
        JsonNode *node = json_object_get_member(json_node_get_object(runtimes_node), key);
        EinsoraImageRuntime *runtime = NULL;
        EinsoraAccelerator accelerator;

        if (!einsora_accelerator_from_string(key, &accelerator)) {
            g_autofree gchar *escaped = g_strescape(key, NULL);
            return invalid(error, "\"runtimes\": unknown accelerator \"%s\"", escaped);
        }
        if (!parse_runtime(self, image, accelerator, node, &runtime, error)) {
            g_prefix_error(error, "runtimes.%s: ", key);
            return FALSE;
        }
        g_ptr_array_add(image->runtimes, runtime);
    }

    image->name = g_strdup(name);
    image->description = g_strdup(description != NULL ? description : "");
    g_ptr_array_add(self->images, g_steal_pointer(&image));
    return TRUE;
}

static gboolean
parse_gpu_model(EinsoraCatalog *self, JsonObject *object, GError **error)
{
    static const char *const fields[] = {"vendor", "model", "memory_mib", "class", NULL};
    g_autoptr(EinsoraGpuModel) model = g_new0(EinsoraGpuModel, 1);
    const EinsoraComputeClass *klass;
    const char *vendor_name;
    const char *model_name;
    const char *class_name;

    if (!check_fields(object, fields, error) ||
        !read_string(object, "vendor", TRUE, &vendor_name, error) ||
        !read_string(object, "model", TRUE, &model_name, error) ||
        !read_int(object, "memory_mib", TRUE, 0, &model->memory_mib, error) ||
        !read_string(object, "class", TRUE, &class_name, error))
        return FALSE;
    if (!einsora_accelerator_from_string(vendor_name, &model->vendor))
        return invalid(error, "unknown vendor \"%s\"", vendor_name);
    if (model->vendor == EINSORA_ACCELERATOR_CPU)
        return invalid(error, "\"cpu\" is not a GPU vendor");
    if (einsora_catalog_class_for_gpu_model(self, model->vendor, model_name) != NULL)
        return invalid(error, "%s model \"%s\" is listed twice", vendor_name, model_name);
    if (model->memory_mib <= 0)
        return invalid(error, "\"memory_mib\" must be at least 1");
    klass = einsora_catalog_lookup_class(self, class_name);
    if (klass == NULL)
        return invalid(error, "unknown class \"%s\"", class_name);
    if (klass->accelerator != model->vendor) {
        return invalid(error, "class \"%s\" runs on %s, not %s", class_name,
                       einsora_accelerator_to_string(klass->accelerator), vendor_name);
    }

    model->model = g_strdup(model_name);
    model->gpu_class = g_strdup(class_name);
    g_ptr_array_add(self->gpu_models, g_steal_pointer(&model));
    return TRUE;
}

/* "classes[2] \"gpu-x\"": the entry's place, and its name when it has
 * one, so a message points at the line to fix. */
static gchar *
entry_label(const char *section, guint index, const char *key, JsonNode *node)
{
    JsonNode *name = NULL;

    if (JSON_NODE_HOLDS_OBJECT(node))
        name = json_object_get_member(json_node_get_object(node), key);
    if (name != NULL && JSON_NODE_HOLDS_VALUE(name) &&
        json_node_get_value_type(name) == G_TYPE_STRING && *json_node_get_string(name) != '\0') {
        g_autofree gchar *escaped = g_strescape(json_node_get_string(name), NULL);
        return g_strdup_printf("%s[%u] \"%s\"", section, index, escaped);
    }
    return g_strdup_printf("%s[%u]", section, index);
}

static gboolean
parse_section(EinsoraCatalog *self, JsonObject *root, const char *section, gboolean required,
              const char *key, EntryParser parse, GError **error)
{
    JsonArray *array;

    if (!read_array(root, section, required, &array, error))
        return FALSE;
    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++) {
        JsonNode *node = json_array_get_element(array, i);
        g_autofree gchar *label = entry_label(section, i, key, node);

        if (!JSON_NODE_HOLDS_OBJECT(node))
            return invalid(error, "%s: must be an object", label);
        if (!parse(self, json_node_get_object(node), error)) {
            g_prefix_error(error, "%s: ", label);
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean
parse_catalog(EinsoraCatalog *self, JsonNode *root_node, GError **error)
{
    static const char *const fields[] = {"version", "regions",    "classes", "images",
                                         "drivers", "gpu_models", NULL};
    JsonObject *root;
    gint64 version;

    if (root_node == NULL || !JSON_NODE_HOLDS_OBJECT(root_node))
        return invalid(error, "not a JSON object");
    root = json_node_get_object(root_node);
    if (!check_fields(root, fields, error) || !read_int(root, "version", TRUE, 0, &version, error))
        return FALSE;
    if (version != CATALOG_VERSION) {
        return invalid(error, "unsupported version %" G_GINT64_FORMAT "; this daemon reads %d",
                       version, CATALOG_VERSION);
    }
    /* Dependency order: classes name regions, images name drivers, GPU
     * models name classes. */
    if (!parse_section(self, root, "regions", TRUE, "name", parse_region, error))
        return FALSE;
    /* The first region is the default, so there has to be one. */
    if (self->regions->len == 0)
        return invalid(error, "\"regions\" is empty; a catalog needs at least one region");
    if (!parse_section(self, root, "drivers", TRUE, "name", parse_driver, error) ||
        !parse_section(self, root, "classes", TRUE, "name", parse_class, error) ||
        !parse_section(self, root, "images", TRUE, "name", parse_image, error) ||
        !parse_section(self, root, "gpu_models", FALSE, "model", parse_gpu_model, error))
        return FALSE;
    return TRUE;
}

/* Construction */

/* json-glib keeps the last of a repeated key; a catalog that says one
 * thing twice is a mistake to refuse, not to resolve silently. */
typedef struct {
    GHashTable *members; /* JsonObject -> members seen */
    gchar *duplicate;
} DuplicateKeys;

static void
on_object_member(JsonParser *parser, JsonObject *object, const char *name, gpointer user_data)
{
    DuplicateKeys *keys = user_data;
    guint seen = GPOINTER_TO_UINT(g_hash_table_lookup(keys->members, object)) + 1;

    g_hash_table_insert(keys->members, object, GUINT_TO_POINTER(seen));
    if (seen > json_object_get_size(object) && keys->duplicate == NULL)
        keys->duplicate = g_strdup(name);
}

EinsoraCatalog *
einsora_catalog_new_from_data(const char *data, gssize length, const char *origin, GError **error)
{
    g_autoptr(EinsoraCatalog) self = g_object_new(EINSORA_TYPE_CATALOG, NULL);
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) parse_error = NULL;
    g_autoptr(GHashTable) members = g_hash_table_new(NULL, NULL);
    g_autofree gchar *duplicate = NULL;
    DuplicateKeys keys = {members, NULL};
    gboolean parsed;

    g_return_val_if_fail(data != NULL, NULL);

    self->origin = g_strdup(origin != NULL ? origin : "(data)");
    if (!einsora_json_text_is_one_value(data, length < 0 ? strlen(data) : (gsize)length)) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "catalog %s: not valid JSON: more than one value", self->origin);
        return NULL;
    }
    g_signal_connect(parser, "object-member", G_CALLBACK(on_object_member), &keys);
    parsed = json_parser_load_from_data(parser, data, length, &parse_error);
    duplicate = keys.duplicate;
    if (!parsed) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "catalog %s: not valid JSON: %s", self->origin, parse_error->message);
        return NULL;
    }
    if (duplicate != NULL) {
        g_autofree gchar *shown = g_strescape(duplicate, NULL);
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "catalog %s: the key \"%s\" appears twice in one object", self->origin, shown);
        return NULL;
    }
    if (!parse_catalog(self, json_parser_get_root(parser), error)) {
        g_prefix_error(error, "catalog %s: ", self->origin);
        return NULL;
    }
    return g_steal_pointer(&self);
}

EinsoraCatalog *
einsora_catalog_new_from_file(const char *path, GError **error)
{
    g_autofree gchar *contents = NULL;
    gsize length;

    g_return_val_if_fail(path != NULL, NULL);

    /* A file that can't be read keeps its GFileError code; its message
     * already names the path, but the prefix keeps every catalog error
     * looking alike. */
    if (!g_file_get_contents(path, &contents, &length, error)) {
        g_prefix_error(error, "catalog %s: ", path);
        return NULL;
    }
    return einsora_catalog_new_from_data(contents, (gssize)length, path, error);
}

EinsoraCatalog *
einsora_catalog_new_builtin(GError **error)
{
    g_autoptr(GBytes) bytes = NULL;
    gsize length;
    const char *data;

    /* Naming the resource keeps its object file linked in from the static
     * library, where nothing else would pull it. */
    bytes = g_resource_lookup_data(einsora_catalog_get_resource(), BUILTIN_PATH,
                                   G_RESOURCE_LOOKUP_FLAGS_NONE, error);
    if (bytes == NULL) {
        g_prefix_error(error, "catalog %s: ", BUILTIN_ORIGIN);
        return NULL;
    }
    data = g_bytes_get_data(bytes, &length);
    return einsora_catalog_new_from_data(data, (gssize)length, BUILTIN_ORIGIN, error);
}

EinsoraCatalog *
einsora_catalog_load(const char *path, GError **error)
{
    if (path == NULL || *path == '\0')
        return einsora_catalog_new_builtin(error);
    return einsora_catalog_new_from_file(path, error);
}

/* Reading */

const char *
einsora_catalog_get_origin(EinsoraCatalog *self)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    return self->origin;
}

GPtrArray *
einsora_catalog_get_regions(EinsoraCatalog *self)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    return self->regions;
}

GPtrArray *
einsora_catalog_get_classes(EinsoraCatalog *self)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    return self->classes;
}

GPtrArray *
einsora_catalog_get_images(EinsoraCatalog *self)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    return self->images;
}

GPtrArray *
einsora_catalog_get_drivers(EinsoraCatalog *self)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    return self->drivers;
}

GPtrArray *
einsora_catalog_get_gpu_models(EinsoraCatalog *self)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    return self->gpu_models;
}

const char *
einsora_catalog_get_default_region(EinsoraCatalog *self)
{
    const EinsoraRegion *region;

    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    /* Never empty: parse_catalog() refuses a catalog without regions. */
    region = g_ptr_array_index(self->regions, 0);
    return region->name;
}

const EinsoraRegion *
einsora_catalog_lookup_region(EinsoraCatalog *self, const char *name)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    for (guint i = 0; name != NULL && i < self->regions->len; i++) {
        const EinsoraRegion *region = g_ptr_array_index(self->regions, i);
        if (g_strcmp0(region->name, name) == 0)
            return region;
    }
    return NULL;
}

const EinsoraComputeClass *
einsora_catalog_lookup_class(EinsoraCatalog *self, const char *name)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    for (guint i = 0; name != NULL && i < self->classes->len; i++) {
        const EinsoraComputeClass *klass = g_ptr_array_index(self->classes, i);
        if (g_strcmp0(klass->name, name) == 0)
            return klass;
    }
    return NULL;
}

const EinsoraImage *
einsora_catalog_default_image(EinsoraCatalog *self, EinsoraWorkloadKind kind,
                              EinsoraAccelerator accelerator)
{
    GPtrArray *images = einsora_catalog_get_images(self);

    if (kind != EINSORA_WORKLOAD_KIND_ENDPOINT)
        return NULL;
    for (guint i = 0; i < images->len; i++) {
        const EinsoraImage *image = images->pdata[i];
        if (einsora_image_supports_kind(image, kind) &&
            einsora_image_lookup_runtime(image, accelerator) != NULL)
            return image;
    }
    return NULL;
}

const EinsoraImage *
einsora_catalog_lookup_image(EinsoraCatalog *self, const char *name)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    for (guint i = 0; name != NULL && i < self->images->len; i++) {
        const EinsoraImage *image = g_ptr_array_index(self->images, i);
        if (g_strcmp0(image->name, name) == 0)
            return image;
    }
    return NULL;
}

const EinsoraCatalogDriver *
einsora_catalog_lookup_driver(EinsoraCatalog *self, const char *name)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    for (guint i = 0; name != NULL && i < self->drivers->len; i++) {
        const EinsoraCatalogDriver *driver = g_ptr_array_index(self->drivers, i);
        if (g_strcmp0(driver->name, name) == 0)
            return driver;
    }
    return NULL;
}

gboolean
einsora_catalog_driver_runs(const EinsoraCatalogDriver *driver, EinsoraWorkloadKind kind,
                            EinsoraAccelerator accelerator)
{
    EinsoraDriverInfo narrowed;

    if (driver == NULL || driver->info == NULL)
        return FALSE;
    narrowed = *driver->info;
    narrowed.kinds = driver->kinds;
    narrowed.accelerators = driver->accelerators;
    return einsora_driver_runs(&narrowed, kind, accelerator);
}

gboolean
einsora_catalog_class_offered_in(const EinsoraComputeClass *klass, const char *region)
{
    if (klass == NULL || region == NULL)
        return FALSE;
    if (klass->regions == NULL)
        return TRUE;
    return g_strv_contains((const gchar *const *)klass->regions, region);
}

const EinsoraImageRuntime *
einsora_image_lookup_runtime(const EinsoraImage *image, EinsoraAccelerator accelerator)
{
    for (guint i = 0; image != NULL && i < image->runtimes->len; i++) {
        const EinsoraImageRuntime *runtime = g_ptr_array_index(image->runtimes, i);
        if (runtime->accelerator == accelerator)
            return runtime;
    }
    return NULL;
}

gboolean
einsora_catalog_resolve(EinsoraCatalog *self, const char *class_name, const char *image_name,
                        EinsoraCatalogResolution *out)
{
    out->klass = class_name != NULL ? einsora_catalog_lookup_class(self, class_name) : NULL;
    out->image = image_name != NULL ? einsora_catalog_lookup_image(self, image_name) : NULL;
    out->runtime = out->klass != NULL && out->image != NULL
                       ? einsora_image_lookup_runtime(out->image, out->klass->accelerator)
                       : NULL;
    return out->runtime != NULL;
}

gboolean
einsora_image_supports_kind(const EinsoraImage *image, EinsoraWorkloadKind kind)
{
    if (image == NULL || (guint)kind >= EINSORA_WORKLOAD_KIND_COUNT)
        return FALSE;
    return (image->kinds & (1u << kind)) != 0;
}

const char *
einsora_catalog_class_for_gpu_model(EinsoraCatalog *self, EinsoraAccelerator vendor,
                                    const char *model)
{
    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    for (guint i = 0; model != NULL && i < self->gpu_models->len; i++) {
        const EinsoraGpuModel *entry = g_ptr_array_index(self->gpu_models, i);
        if (entry->vendor == vendor && g_strcmp0(entry->model, model) == 0)
            return entry->gpu_class;
    }
    return NULL;
}

const char *
einsora_catalog_class_for_gpu(EinsoraCatalog *self, const char *region, EinsoraAccelerator vendor,
                              const char *model, gint64 machine_memory_mib)
{
    const EinsoraComputeClass *best = NULL;

    g_return_val_if_fail(EINSORA_IS_CATALOG(self), NULL);
    if (vendor != EINSORA_ACCELERATOR_APPLE)
        return einsora_catalog_class_for_gpu_model(self, vendor, model);
    for (guint i = 0; i < self->classes->len; i++) {
        const EinsoraComputeClass *klass = g_ptr_array_index(self->classes, i);

        if (klass->accelerator != EINSORA_ACCELERATOR_APPLE ||
            klass->memory_mib > machine_memory_mib ||
            !einsora_catalog_class_offered_in(klass, region))
            continue;
        if (best == NULL || klass->memory_mib > best->memory_mib)
            best = klass;
    }
    return best != NULL ? best->name : NULL;
}

gboolean
einsora_catalog_server_serves(const char *server, EinsoraWorkloadKind *kind)
{
    static const struct {
        const char *name;
        EinsoraWorkloadKind kind;
    } servers[] = {
        {"jupyter", EINSORA_WORKLOAD_KIND_NOTEBOOK},
        {"llama-server", EINSORA_WORKLOAD_KIND_ENDPOINT},
        {"vllm", EINSORA_WORKLOAD_KIND_ENDPOINT},
    };

    for (guint i = 0; server != NULL && i < G_N_ELEMENTS(servers); i++) {
        if (g_str_equal(server, servers[i].name)) {
            *kind = servers[i].kind;
            return TRUE;
        }
    }
    return FALSE;
}
