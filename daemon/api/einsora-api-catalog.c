/* GET /v1/catalog: what the caller may ask for when creating a workload
 * (regions, kinds, classes, images), from this installation's catalog,
 * with the caller's tenant's GPU quota per class. Only the parts a tenant
 * needs: no driver, runtime reference, GPU model table or isolation
 * setting (docs/adr/0017-catalog-endpoint.md). */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

/* A description the catalog left out is "" (as the catalog keeps it). */
static void
add_description(JsonBuilder *builder, const char *value)
{
    json_builder_set_member_name(builder, "description");
    json_builder_add_string_value(builder, value != NULL ? value : "");
}

static void
add_regions(JsonBuilder *builder, EinsoraCatalog *catalog)
{
    GPtrArray *regions = einsora_catalog_get_regions(catalog);
    const char *default_region = einsora_catalog_get_default_region(catalog);

    json_builder_set_member_name(builder, "regions");
    json_builder_begin_array(builder);
    for (guint i = 0; i < regions->len; i++) {
        const EinsoraRegion *region = g_ptr_array_index(regions, i);
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "name");
        json_builder_add_string_value(builder, region->name);
        add_description(builder, region->description);
        json_builder_set_member_name(builder, "default");
        json_builder_add_boolean_value(builder, g_strcmp0(region->name, default_region) == 0);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
}

/* The kinds that some image serves: the ones a create can succeed with. */
static void
add_kinds(JsonBuilder *builder, EinsoraCatalog *catalog)
{
    GPtrArray *images = einsora_catalog_get_images(catalog);

    json_builder_set_member_name(builder, "kinds");
    json_builder_begin_array(builder);
    for (guint kind = 0; kind < EINSORA_WORKLOAD_KIND_COUNT; kind++) {
        for (guint i = 0; i < images->len; i++) {
            if (einsora_image_supports_kind(g_ptr_array_index(images, i),
                                            (EinsoraWorkloadKind)kind)) {
                json_builder_add_string_value(
                    builder, einsora_workload_kind_to_string((EinsoraWorkloadKind)kind));
                break;
            }
        }
    }
    json_builder_end_array(builder);
}

static gboolean
add_class(JsonBuilder *builder, EinsoraService *service, const char *tenant_id,
          const EinsoraComputeClass *klass, GError **error)
{
    EinsoraCatalog *catalog = einsora_service_get_catalog(service);
    GPtrArray *regions = einsora_catalog_get_regions(catalog);
    GPtrArray *models = einsora_catalog_get_gpu_models(catalog);
    gint64 quota = 0;
    gint64 held = 0;

    if (klass->devices > 0 &&
        !einsora_service_get_gpu_quota(service, tenant_id, klass->name, &quota, &held, error))
        return FALSE;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, klass->name);
    json_builder_set_member_name(builder, "accelerator");
    json_builder_add_string_value(builder, einsora_accelerator_to_string(klass->accelerator));
    json_builder_set_member_name(builder, "cpus");
    json_builder_add_int_value(builder, klass->cpus);
    json_builder_set_member_name(builder, "memory_mib");
    json_builder_add_int_value(builder, klass->memory_mib);
    json_builder_set_member_name(builder, "gpus");
    json_builder_add_int_value(builder, klass->devices);
    /* What a workload of this class runs on, as machines report it; the
     * table's vendor, memory and matching stay the operator's. */
    json_builder_set_member_name(builder, "gpu_models");
    json_builder_begin_array(builder);
    for (guint i = 0; i < models->len; i++) {
        const EinsoraGpuModel *model = g_ptr_array_index(models, i);
        if (g_strcmp0(model->gpu_class, klass->name) == 0)
            json_builder_add_string_value(builder, model->model);
    }
    json_builder_end_array(builder);
    /* Every region by name, so that a client need not know what a
     * catalog's missing list means. */
    json_builder_set_member_name(builder, "regions");
    json_builder_begin_array(builder);
    for (guint i = 0; i < regions->len; i++) {
        const EinsoraRegion *region = g_ptr_array_index(regions, i);
        if (einsora_catalog_class_offered_in(klass, region->name))
            json_builder_add_string_value(builder, region->name);
    }
    json_builder_end_array(builder);
    /* CPU classes hold no GPUs and need no quota: null, not 0, which
     * would read as "none allowed". */
    json_builder_set_member_name(builder, "quota");
    if (klass->devices > 0)
        json_builder_add_int_value(builder, quota);
    else
        json_builder_add_null_value(builder);
    json_builder_set_member_name(builder, "held");
    if (klass->devices > 0)
        json_builder_add_int_value(builder, held);
    else
        json_builder_add_null_value(builder);
    json_builder_end_object(builder);
    return TRUE;
}

/* Which drivers run it, and whether one of the tenant's machines offers
 * one now. */
static void
add_image_drivers(JsonBuilder *builder, EinsoraService *service, const char *tenant_id,
                  const EinsoraImage *image)
{
    g_auto(GStrv) drivers = einsora_service_image_drivers(service, image->name);

    json_builder_set_member_name(builder, "drivers");
    json_builder_begin_array(builder);
    for (guint i = 0; drivers[i] != NULL; i++)
        json_builder_add_string_value(builder, drivers[i]);
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "runs_here");
    json_builder_add_boolean_value(builder,
                                   einsora_service_image_runs_now(service, tenant_id, image->name));
}

static void
add_image(JsonBuilder *builder, EinsoraService *service, const char *tenant_id,
          const EinsoraImage *image)
{
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, image->name);
    add_description(builder, image->description);
    json_builder_set_member_name(builder, "kinds");
    json_builder_begin_array(builder);
    for (guint kind = 0; kind < EINSORA_WORKLOAD_KIND_COUNT; kind++) {
        if (einsora_image_supports_kind(image, (EinsoraWorkloadKind)kind))
            json_builder_add_string_value(
                builder, einsora_workload_kind_to_string((EinsoraWorkloadKind)kind));
    }
    json_builder_end_array(builder);
    /* The accelerators it has a runtime for, never the runtime itself
     * (what the drivers pull or run). */
    json_builder_set_member_name(builder, "accelerators");
    json_builder_begin_array(builder);
    for (guint i = 0; i < image->runtimes->len; i++) {
        const EinsoraImageRuntime *runtime = g_ptr_array_index(image->runtimes, i);
        json_builder_add_string_value(builder, einsora_accelerator_to_string(runtime->accelerator));
    }
    json_builder_end_array(builder);
    add_image_drivers(builder, service, tenant_id, image);
    json_builder_end_object(builder);
}

void
einsora_api_catalog_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    EinsoraService *service = einsora_api_server_get_service(server);
    EinsoraCatalog *catalog = einsora_service_get_catalog(service);
    const char *tenant_id = einsora_api_request_get_actor(request)->tenant_id;
    GPtrArray *classes = einsora_catalog_get_classes(catalog);
    GPtrArray *images = einsora_catalog_get_images(catalog);
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) node = NULL;
    g_autoptr(GError) error = NULL;

    json_builder_begin_object(builder);
    add_regions(builder, catalog);
    add_kinds(builder, catalog);
    json_builder_set_member_name(builder, "classes");
    json_builder_begin_array(builder);
    for (guint i = 0; i < classes->len; i++) {
        if (!add_class(builder, service, tenant_id, g_ptr_array_index(classes, i), &error)) {
            einsora_api_request_respond_error(request, error);
            return;
        }
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "images");
    json_builder_begin_array(builder);
    for (guint i = 0; i < images->len; i++)
        add_image(builder, service, tenant_id, g_ptr_array_index(images, i));
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    node = json_builder_get_root(builder);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
