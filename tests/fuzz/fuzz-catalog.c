/* The catalog loader on any bytes, as EINSORA_CATALOG's file would hold
 * them: refused with an error, or a catalog whose lookups work. */
#include <stdio.h>
#include <string.h>

#include "einsora-catalog.h"
#include "einsora-fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autofree gchar *text = einsora_fuzz_text(data, size);
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog =
        einsora_catalog_new_from_data(text, (gssize)size, "fuzz", &error);

    if (catalog == NULL) {
        EINSORA_FUZZ_CHECK(error != NULL);
        return 0;
    }
    EINSORA_FUZZ_CHECK(error == NULL);
    /* What the daemon does with a loaded catalog: look its entries up. */
    GPtrArray *classes = einsora_catalog_get_classes(catalog);
    for (guint i = 0; i < classes->len; i++) {
        const EinsoraComputeClass *klass = g_ptr_array_index(classes, i);
        EINSORA_FUZZ_CHECK(einsora_catalog_lookup_class(catalog, klass->name) != NULL);
    }
    GPtrArray *images = einsora_catalog_get_images(catalog);
    for (guint i = 0; i < images->len; i++) {
        const EinsoraImage *image = g_ptr_array_index(images, i);
        EINSORA_FUZZ_CHECK(einsora_catalog_lookup_image(catalog, image->name) != NULL);
    }
    GPtrArray *models = einsora_catalog_get_gpu_models(catalog);
    for (guint i = 0; i < models->len; i++) {
        const EinsoraGpuModel *model = g_ptr_array_index(models, i);
        einsora_catalog_class_for_gpu(catalog, einsora_catalog_get_default_region(catalog),
                                      model->vendor, model->model, model->memory_mib);
    }
    return 0;
}
