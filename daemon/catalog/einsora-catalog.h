/* The catalog: regions, compute classes, images, drivers and GPU models
 * this installation offers. Built in from catalog/catalog.json through
 * GResource; EINSORA_CATALOG names a file that replaces it. A catalog that
 * does not validate is refused whole, with a message naming the entry. */
#pragma once

#include <glib-object.h>

#include "einsora-accelerator.h"
#include "einsora-driver.h"
#include "einsora-workload-state.h"

G_BEGIN_DECLS

typedef struct {
    gchar *name;
    gchar *description;
} EinsoraRegion;

/* A compute class: what a workload asks for. */
typedef struct {
    gchar *name;
    gint64 cpus;
    gint64 memory_mib;
    gint64 devices; /* GPUs per workload; 0 for CPU classes */
    EinsoraAccelerator accelerator;
    GStrv regions; /* regions that offer it; NULL means every region */
} EinsoraComputeClass;

/* An image has one runtime per accelerator it supports; each runtime
 * lists the drivers that can run it (driver_refs). */
typedef struct {
    EinsoraAccelerator accelerator;
    gchar *reference; /* e.g. a container image or a native environment name */
    GStrv driver_refs;
    /* The program its image serves with: "jupyter", "llama-server" or
     * "vllm"; NULL: the kind's own (Jupyter, or llama-server for an
     * endpoint). Container drivers can't tell it from the reference. */
    gchar *server;
} EinsoraImageRuntime;

typedef struct {
    gchar *name;
    gchar *description;
    guint kinds;         /* bit per EinsoraWorkloadKind */
    GPtrArray *runtimes; /* of EinsoraImageRuntime */
} EinsoraImage;

/* A driver this installation offers; its isolation and limits are the
 * domain table's (einsora_driver_lookup()), which the catalog may only
 * narrow, never widen. */
typedef struct {
    gchar *name;
    guint kinds;        /* subset of the domain driver's */
    guint accelerators; /* subset of the domain driver's */
    const EinsoraDriverInfo *info;
} EinsoraCatalogDriver;

/* A GPU model as an inventory reports it, and the class it serves. */
typedef struct {
    EinsoraAccelerator vendor; /* nvidia, amd or apple */
    gchar *model;              /* e.g. "NVIDIA L40S" */
    gint64 memory_mib;
    gchar *gpu_class;
} EinsoraGpuModel;

#define EINSORA_TYPE_CATALOG (einsora_catalog_get_type())
G_DECLARE_FINAL_TYPE(EinsoraCatalog, einsora_catalog, EINSORA, CATALOG, GObject)

EinsoraCatalog *einsora_catalog_new_builtin(GError **error);
EinsoraCatalog *einsora_catalog_new_from_file(const char *path, GError **error);
EinsoraCatalog *einsora_catalog_new_from_data(const char *data, gssize length, const char *origin,
                                              GError **error);
/* The built-in catalog, or the file @path when it is neither NULL nor
 * empty (an empty EINSORA_CATALOG means "not set"). */
EinsoraCatalog *einsora_catalog_load(const char *path, GError **error);

const char *einsora_catalog_get_origin(EinsoraCatalog *self);

GPtrArray *einsora_catalog_get_regions(EinsoraCatalog *self);    /* of EinsoraRegion, borrowed */
GPtrArray *einsora_catalog_get_classes(EinsoraCatalog *self);    /* of EinsoraComputeClass */
GPtrArray *einsora_catalog_get_images(EinsoraCatalog *self);     /* of EinsoraImage */
GPtrArray *einsora_catalog_get_drivers(EinsoraCatalog *self);    /* of EinsoraCatalogDriver */
GPtrArray *einsora_catalog_get_gpu_models(EinsoraCatalog *self); /* of EinsoraGpuModel */

/* The first region in the catalog. */
const char *einsora_catalog_get_default_region(EinsoraCatalog *self);
const EinsoraRegion *einsora_catalog_lookup_region(EinsoraCatalog *self, const char *name);
const EinsoraComputeClass *einsora_catalog_lookup_class(EinsoraCatalog *self, const char *name);
const EinsoraImage *einsora_catalog_lookup_image(EinsoraCatalog *self, const char *name);
const EinsoraCatalogDriver *einsora_catalog_lookup_driver(EinsoraCatalog *self, const char *name);
/* Whether the driver, as this catalog narrows it, runs @kind on
 * @accelerator. */
gboolean einsora_catalog_driver_runs(const EinsoraCatalogDriver *driver, EinsoraWorkloadKind kind,
                                     EinsoraAccelerator accelerator);

gboolean einsora_catalog_class_offered_in(const EinsoraComputeClass *klass, const char *region);
/* The image's runtime for @accelerator, or NULL when it has none. */
const EinsoraImageRuntime *einsora_image_lookup_runtime(const EinsoraImage *image,
                                                        EinsoraAccelerator accelerator);
gboolean einsora_image_supports_kind(const EinsoraImage *image, EinsoraWorkloadKind kind);
/* The image a workload of @kind gets on @accelerator when it names none:
 * the first the catalog lists that runs that kind there, or NULL. Only
 * endpoints have one (their model says what they serve; a notebook's
 * image is a real choice). */
const EinsoraImage *einsora_catalog_default_image(EinsoraCatalog *self, EinsoraWorkloadKind kind,
                                                  EinsoraAccelerator accelerator);

/* What a workload's class and image names come to in this catalog: the
 * one reading of them along a create, an admission, a placement and the
 * agent's desired state. Each is NULL when withdrawn; the runtime also
 * when the image has none for the class's accelerator. */
typedef struct {
    const EinsoraComputeClass *klass;
    const EinsoraImage *image;
    const EinsoraImageRuntime *runtime;
} EinsoraCatalogResolution;

/* Fills @out; TRUE when the class, the image and its runtime are all there. */
gboolean einsora_catalog_resolve(EinsoraCatalog *self, const char *class_name,
                                 const char *image_name, EinsoraCatalogResolution *out);
/* The class a GPU model serves, or NULL when the catalog does not list it. */
const char *einsora_catalog_class_for_gpu_model(EinsoraCatalog *self, EinsoraAccelerator vendor,
                                                const char *model);
/* The class one GPU of a machine serves in @region: NVIDIA and AMD by the
 * catalog's models; a Mac's GPU, the largest Apple class its unified
 * memory (@machine_memory_mib) holds. NULL: none offered. */
const char *einsora_catalog_class_for_gpu(EinsoraCatalog *self, const char *region,
                                          EinsoraAccelerator vendor, const char *model,
                                          gint64 machine_memory_mib);

/* Whether @server is a server a runtime may name, and the kind it serves. */
gboolean einsora_catalog_server_serves(const char *server, EinsoraWorkloadKind *kind);

G_END_DECLS
