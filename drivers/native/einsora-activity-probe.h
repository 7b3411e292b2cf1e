/* How a running notebook is used, asked of its Jupyter over its socket
 * every so often (docs/adr/0044): GET /api/status (its last_activity)
 * and GET /api/kernels?no_track_activity=1 (each kernel's execution_state and
 * last_activity). The native and docker drivers keep one per running
 * notebook and report what it last read in the workload's status; the
 * controller's idle auto-stop decides on it. A failed read keeps what
 * was read before. */
#pragma once

#include <glib.h>

#include "einsora-sandbox-server.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

#define EINSORA_ACTIVITY_INTERVAL_MS_DEFAULT 30000
/* Tests only: a shorter interval, in milliseconds. */
#define EINSORA_ACTIVITY_INTERVAL_VARIABLE "EINSORA_TEST_ACTIVITY_INTERVAL_MS"

typedef struct _EinsoraActivityProbe EinsoraActivityProbe;

/* Called on the main context when what it read differs from before. */
typedef void (*EinsoraActivityChanged)(gpointer user_data);

/* Starts asking @server (referenced) at once, then every interval. */
EinsoraActivityProbe *einsora_activity_probe_new(EinsoraSandboxServer *server,
                                                 EinsoraActivityChanged changed,
                                                 gpointer user_data);
void einsora_activity_probe_free(EinsoraActivityProbe *probe);
/* What it read last; all zero before the first answer. */
EinsoraWorkloadActivity einsora_activity_probe_get(EinsoraActivityProbe *probe);

/* Jupyter's answers to GET /api/status and GET /api/kernels, read into
 * @activity; FALSE when either isn't what Jupyter answers. */
gboolean einsora_activity_parse_jupyter(GBytes *status, GBytes *kernels,
                                        EinsoraWorkloadActivity *activity, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraActivityProbe, einsora_activity_probe_free)

G_END_DECLS
