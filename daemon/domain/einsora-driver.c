#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-driver.h"

#define K(x) (1u << EINSORA_WORKLOAD_KIND_##x)
#define A(x) (1u << EINSORA_ACCELERATOR_##x)

static const EinsoraDriverInfo drivers[] = {
    /* Runs nothing: development and tests only. */
    {"sim", K(NOTEBOOK) | K(ENDPOINT) | K(VM), A(CPU) | A(APPLE) | A(NVIDIA) | A(AMD),
     EINSORA_ISOLATION_WEAK, 0, NULL},
    /* Jupyter, or llama.cpp's llama-server, as the owner's user in
     * bubblewrap, on a Unix socket. */
    {"linux-native", K(NOTEBOOK) | K(ENDPOINT), A(CPU) | A(NVIDIA), EINSORA_ISOLATION_SANDBOX, 0,
     "linux"},
    {"macos-native", K(NOTEBOOK) | K(ENDPOINT), A(CPU) | A(APPLE), EINSORA_ISOLATION_WEAK, 0,
     "darwin"},
    /* A local rootful Docker Engine without a VM boundary. */
    {"docker", K(NOTEBOOK) | K(ENDPOINT), A(CPU) | A(NVIDIA), EINSORA_ISOLATION_WEAK, 0, "linux"},
    {"macos-container", K(NOTEBOOK), A(CPU), EINSORA_ISOLATION_STRONG, 0, "darwin"},
    /* Apple's licence allows two macOS guests per Mac. */
    {"macos-vz", K(VM), A(CPU) | A(APPLE), EINSORA_ISOLATION_STRONG, 2, "darwin"},
    {"libvirt", K(VM), A(CPU) | A(NVIDIA) | A(AMD), EINSORA_ISOLATION_STRONG, 0, "linux"},
};

#undef K
#undef A

const EinsoraDriverInfo *
einsora_driver_lookup(const char *name)
{
    for (guint i = 0; name != NULL && i < G_N_ELEMENTS(drivers); i++) {
        if (g_strcmp0(drivers[i].name, name) == 0)
            return &drivers[i];
    }
    return NULL;
}

const EinsoraDriverInfo *
einsora_driver_table(guint *n_drivers)
{
    *n_drivers = G_N_ELEMENTS(drivers);
    return drivers;
}

gboolean
einsora_driver_runs(const EinsoraDriverInfo *driver, EinsoraWorkloadKind kind,
                    EinsoraAccelerator accelerator)
{
    if (driver == NULL || (guint)kind >= EINSORA_WORKLOAD_KIND_COUNT ||
        (guint)accelerator >= EINSORA_ACCELERATOR_COUNT)
        return FALSE;
    return (driver->kinds & (1u << kind)) != 0 && (driver->accelerators & (1u << accelerator)) != 0;
}

const char *
einsora_isolation_to_string(EinsoraIsolation isolation)
{
    switch (isolation) {
    case EINSORA_ISOLATION_WEAK:
        return "weak";
    case EINSORA_ISOLATION_SANDBOX:
        return "sandbox";
    case EINSORA_ISOLATION_STRONG:
        return "strong";
    default:
        return NULL;
    }
}

gboolean
einsora_isolation_from_string(const char *str, EinsoraIsolation *isolation)
{
    if (g_strcmp0(str, "weak") == 0) {
        *isolation = EINSORA_ISOLATION_WEAK;
        return TRUE;
    }
    if (g_strcmp0(str, "sandbox") == 0) {
        *isolation = EINSORA_ISOLATION_SANDBOX;
        return TRUE;
    }
    if (g_strcmp0(str, "strong") == 0) {
        *isolation = EINSORA_ISOLATION_STRONG;
        return TRUE;
    }
    return FALSE;
}

gboolean
einsora_isolation_hosts_guests(EinsoraIsolation isolation)
{
    return isolation == EINSORA_ISOLATION_SANDBOX || isolation == EINSORA_ISOLATION_STRONG;
}
