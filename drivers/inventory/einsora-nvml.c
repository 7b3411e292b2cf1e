#define G_LOG_DOMAIN "einsora-inventory"

#include "einsora-nvml.h"

#include <dlfcn.h>

#include "einsora-inventory-gpu.h"
#include "einsora-protocol.h"

/* The few NVML types used, declared here so that building needs no NVIDIA
 * header: the ABI of these calls is stable across driver releases. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

#define NVML_SUCCESS 0
#define NVML_DEVICE_NAME_BUFFER_SIZE 96

typedef struct {
    void *library;
    gboolean initialized;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*get_count)(unsigned int *count);
    nvmlReturn_t (*get_handle)(unsigned int index, nvmlDevice_t *device);
    nvmlReturn_t (*get_name)(nvmlDevice_t device, char *name, unsigned int length);
    nvmlReturn_t (*get_memory)(nvmlDevice_t device, nvmlMemory_t *memory);
    const char *(*error_string)(nvmlReturn_t result);
} Nvml;

/* Whatever was reached is undone: shut down what was initialized, then
 * unload. */
static void
nvml_free(Nvml *nvml)
{
    if (nvml->initialized)
        nvml->shutdown();
    if (nvml->library != NULL)
        dlclose(nvml->library);
    g_free(nvml);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Nvml, nvml_free)

static const char *
nvml_describe(const Nvml *nvml, nvmlReturn_t result)
{
    const char *text = nvml->error_string != NULL ? nvml->error_string(result) : NULL;

    return text != NULL ? text : "unknown error";
}

static gboolean
nvml_resolve(Nvml *nvml, const char *library, const char *symbol, gpointer *out, GError **error)
{
    *out = dlsym(nvml->library, symbol);
    if (*out == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "%s has no %s", library, symbol);
        return FALSE;
    }
    return TRUE;
}

static Nvml *
nvml_open(const char *library, GError **error)
{
    g_autoptr(Nvml) nvml = g_new0(Nvml, 1);

    nvml->library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (nvml->library == NULL) {
        const char *why = dlerror();
        /* dlerror() names the library already. */
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "can't load NVML: %s",
                    why != NULL ? why : library);
        return NULL;
    }
    if (!nvml_resolve(nvml, library, "nvmlInit_v2", (gpointer *)&nvml->init, error) ||
        !nvml_resolve(nvml, library, "nvmlShutdown", (gpointer *)&nvml->shutdown, error) ||
        !nvml_resolve(nvml, library, "nvmlDeviceGetCount_v2", (gpointer *)&nvml->get_count,
                      error) ||
        !nvml_resolve(nvml, library, "nvmlDeviceGetHandleByIndex_v2", (gpointer *)&nvml->get_handle,
                      error) ||
        !nvml_resolve(nvml, library, "nvmlDeviceGetName", (gpointer *)&nvml->get_name, error) ||
        !nvml_resolve(nvml, library, "nvmlDeviceGetMemoryInfo", (gpointer *)&nvml->get_memory,
                      error))
        return NULL;
    /* Only for messages: an NVML without it still works. */
    nvml->error_string = (const char *(*)(nvmlReturn_t))dlsym(nvml->library, "nvmlErrorString");

    nvmlReturn_t result = nvml->init();
    if (result != NVML_SUCCESS) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "nvmlInit failed: %s (%d)",
                    nvml_describe(nvml, result), result);
        return NULL;
    }
    nvml->initialized = TRUE;
    return g_steal_pointer(&nvml);
}

EinsoraInventoryGpu *
einsora_nvml_unreadable_gpu(void)
{
    EinsoraInventoryGpu *gpu = einsora_inventory_gpu_new();

    gpu->vendor = g_strdup("nvidia");
    gpu->model = g_strdup(EINSORA_NVML_UNREADABLE_MODEL);
    gpu->memory_mib = 0;
    return gpu;
}

static gboolean
nvml_count(const Nvml *nvml, unsigned int *count, GError **error)
{
    nvmlReturn_t result = nvml->get_count(count);

    if (result != NVML_SUCCESS) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "NVML can't count GPUs: %s (%d)",
                    nvml_describe(nvml, result), result);
        return FALSE;
    }
    return TRUE;
}

/* A placeholder when NVML can't read the GPU; the reason goes to the log. */
static EinsoraInventoryGpu *
nvml_read_gpu(const Nvml *nvml, unsigned int index)
{
    g_autoptr(EinsoraInventoryGpu) gpu = einsora_inventory_gpu_new();
    nvmlDevice_t device = NULL;
    nvmlMemory_t memory = {0};
    char name[NVML_DEVICE_NAME_BUFFER_SIZE] = {0};

    nvmlReturn_t result = nvml->get_handle(index, &device);
    if (result == NVML_SUCCESS)
        result = nvml->get_name(device, name, sizeof(name));
    if (result == NVML_SUCCESS)
        result = nvml->get_memory(device, &memory);
    if (result != NVML_SUCCESS) {
        g_message("NVIDIA GPU %u offered as nothing: NVML can't read it: %s (%d)", index,
                  nvml_describe(nvml, result), result);
        return einsora_nvml_unreadable_gpu();
    }
    /* A name that fills the buffer has no terminator of its own. */
    name[sizeof(name) - 1] = '\0';
    gpu->vendor = g_strdup("nvidia");
    gpu->model = g_strdup(name);
    gpu->memory_mib = (gint64)MIN(memory.total / (1024 * 1024),
                                  (unsigned long long)EINSORA_PROTOCOL_MAX_MEMORY_MIB);
    return g_steal_pointer(&gpu);
}

GPtrArray *
einsora_nvml_read_gpus(const char *library, GError **error)
{
    g_autoptr(Nvml) nvml = NULL;
    g_autoptr(GPtrArray) gpus =
        g_ptr_array_new_with_free_func((GDestroyNotify)einsora_inventory_gpu_free);
    unsigned int count = 0;

    g_return_val_if_fail(library != NULL, NULL);

    nvml = nvml_open(library, error);
    if (nvml == NULL)
        return NULL;
    if (!nvml_count(nvml, &count, error))
        return NULL;
    /* More than an inventory may hold would only be refused later. */
    for (unsigned int i = 0; i < count && gpus->len < EINSORA_PROTOCOL_MAX_GPUS; i++) {
        g_ptr_array_add(gpus, nvml_read_gpu(nvml, i));
    }
    return g_steal_pointer(&gpus);
}

GArray *
einsora_nvml_read_minors(const char *library, GError **error)
{
    g_autoptr(Nvml) nvml = NULL;
    g_autoptr(GArray) minors = g_array_new(FALSE, FALSE, sizeof(guint));
    nvmlReturn_t (*get_minor)(nvmlDevice_t device, unsigned int *minor) = NULL;
    unsigned int count = 0;

    g_return_val_if_fail(library != NULL, NULL);
    nvml = nvml_open(library, error);
    if (nvml == NULL ||
        !nvml_resolve(nvml, library, "nvmlDeviceGetMinorNumber", (gpointer *)&get_minor, error))
        return NULL;
    if (!nvml_count(nvml, &count, error))
        return NULL;
    for (unsigned int i = 0; i < count && i < EINSORA_PROTOCOL_MAX_GPUS; i++) {
        nvmlDevice_t device = NULL;
        unsigned int minor = 0;
        guint value = G_MAXUINT;

        if (nvml->get_handle(i, &device) == NVML_SUCCESS &&
            get_minor(device, &minor) == NVML_SUCCESS)
            value = minor;
        g_array_append_val(minors, value);
    }
    return g_steal_pointer(&minors);
}
