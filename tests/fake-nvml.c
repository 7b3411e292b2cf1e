/* A stand-in for libnvidia-ml.so.1, loaded by the inventory the same way
 * (dlopen). What it reports comes from the environment:
 *   FAKE_NVML_GPUS="NVIDIA H200:143771,NVIDIA L4:23034"  name:memory MiB
 *   FAKE_NVML_INIT_FAIL=1   nvmlInit_v2 fails
 *   FAKE_NVML_LOST=N        the GPU at index N can't be reached
 *   FAKE_NVML_MINORS="5,2"  each GPU's device minor (/dev/nvidiaN), by
 *                           index; unset: its index
 * It counts nvmlInit_v2 and nvmlShutdown calls, so a test holding the
 * module open can check that every init was shut down. Plain C, no GLib:
 * it stands for a vendor library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15
#define FAKE_MAX_GPUS 16

struct nvmlDevice_st {
    char name[96];
    unsigned long long memory_mib;
};

static struct nvmlDevice_st devices[FAKE_MAX_GPUS];
static unsigned int device_count;
static int initialized;
static int init_calls;
static int shutdown_calls;

/* Exported, so declared here to keep -Wmissing-prototypes quiet. */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor);
const char *nvmlErrorString(nvmlReturn_t result);
int fake_nvml_init_calls(void);
int fake_nvml_shutdown_calls(void);

static void
parse_gpus(const char *spec)
{
    char *copy = strdup(spec);
    char *saveptr = NULL;

    device_count = 0;
    for (char *item = strtok_r(copy, ",", &saveptr); item != NULL && device_count < FAKE_MAX_GPUS;
         item = strtok_r(NULL, ",", &saveptr)) {
        char *colon = strrchr(item, ':');
        struct nvmlDevice_st *device = &devices[device_count++];

        if (colon != NULL)
            *colon = '\0';
        snprintf(device->name, sizeof(device->name), "%s", item);
        device->memory_mib = colon != NULL ? strtoull(colon + 1, NULL, 10) : 0;
    }
    free(copy);
}

nvmlReturn_t
nvmlInit_v2(void)
{
    const char *fail = getenv("FAKE_NVML_INIT_FAIL");
    const char *gpus = getenv("FAKE_NVML_GPUS");

    init_calls++;
    if (fail != NULL && strcmp(fail, "1") == 0)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    parse_gpus(gpus != NULL ? gpus : "");
    initialized = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t
nvmlShutdown(void)
{
    shutdown_calls++;
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    initialized = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    *count = device_count;
    return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    const char *lost = getenv("FAKE_NVML_LOST");

    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= device_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (lost != NULL && strtoul(lost, NULL, 10) == index)
        return NVML_ERROR_GPU_IS_LOST;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (strlen(device->name) >= length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(name, device->name, strlen(device->name) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    memory->total = device->memory_mib * 1024 * 1024;
    memory->used = memory->total / 4;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}

nvmlReturn_t
nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor)
{
    const char *minors = getenv("FAKE_NVML_MINORS");
    unsigned int index = (unsigned int)(device - devices);

    if (!initialized)
        return NVML_ERROR_UNINITIALIZED;
    *minor = index;
    if (minors != NULL) {
        const char *at = minors;
        for (unsigned int i = 0; i < index && at != NULL; i++) {
            at = strchr(at, ',');
            if (at != NULL)
                at++;
        }
        if (at == NULL || *at == '\0')
            return NVML_ERROR_INVALID_ARGUMENT;
        *minor = (unsigned int)strtoul(at, NULL, 10);
    }
    return NVML_SUCCESS;
}

const char *
nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

int
fake_nvml_init_calls(void)
{
    return init_calls;
}

int
fake_nvml_shutdown_calls(void)
{
    return shutdown_calls;
}
