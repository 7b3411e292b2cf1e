/* The driver table: which drivers exist, what they run, and how strongly
 * they isolate a workload. A driver's isolation always comes from here,
 * never from what an agent or a catalog file claims. */
#pragma once

#include <glib.h>

#include "einsora-accelerator.h"
#include "einsora-workload-state.h"

G_BEGIN_DECLS

typedef enum {
    /* Runs with the machine owner's rights or more (a plain process, a
     * rootful container engine): only for the owner's own workloads. */
    EINSORA_ISOLATION_WEAK,
    /* The owner's user in unprivileged namespaces with its own file
     * system view, no network unless the owner allows it and no way to
     * gain privileges (bubblewrap): a Lab's guests may run here once the
     * owner shares the machine (docs/adr/0050). */
    EINSORA_ISOLATION_SANDBOX,
    /* Its own kernel (a VM): safe for other tenants' workloads. */
    EINSORA_ISOLATION_STRONG,
} EinsoraIsolation;

/* Whether another tenant's workload may run with @isolation. */
gboolean einsora_isolation_hosts_guests(EinsoraIsolation isolation);

typedef struct {
    const char *name;
    guint kinds;        /* bit per EinsoraWorkloadKind */
    guint accelerators; /* bit per EinsoraAccelerator */
    EinsoraIsolation isolation;
    guint per_machine_limit; /* 0: no limit beyond capacity */
    const char *os;          /* "linux", "darwin", or NULL for any */
} EinsoraDriverInfo;

const EinsoraDriverInfo *einsora_driver_lookup(const char *name);
const EinsoraDriverInfo *einsora_driver_table(guint *n_drivers);
gboolean einsora_driver_runs(const EinsoraDriverInfo *driver, EinsoraWorkloadKind kind,
                             EinsoraAccelerator accelerator);
const char *einsora_isolation_to_string(EinsoraIsolation isolation);
gboolean einsora_isolation_from_string(const char *str, EinsoraIsolation *isolation);

G_END_DECLS
