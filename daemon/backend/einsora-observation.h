/* What a backend says about one workload on its runtime. Its reason is
 * fixed text from the backend's vocabulary, never a runtime's own words;
 * raw errors go to the operator's log. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    /* The runtime can't be asked now (machine offline, API down): decides
     * nothing, not even a timeout. */
    EINSORA_RUNTIME_UNKNOWN,
    /* Not on the runtime at all (never run, or lost). */
    EINSORA_RUNTIME_ABSENT,
    /* Being started, parked or removed; not there yet. */
    EINSORA_RUNTIME_PROGRESSING,
    EINSORA_RUNTIME_READY,
    /* Parked: its resources released, its disk kept. */
    EINSORA_RUNTIME_PARKED,
    /* Removed with everything it stored. */
    EINSORA_RUNTIME_REMOVED,
    /* Failed with a fixed reason. */
    EINSORA_RUNTIME_FAILED,
    /* It was running and stopped by itself. */
    EINSORA_RUNTIME_EXITED,
} EinsoraRuntimeStatus;

typedef struct {
    EinsoraRuntimeStatus status;
    gint64 attempt;     /* the attempt the status is about */
    const char *reason; /* static, from the vocabulary; NULL when none */
    /* While progressing: how far its image's pull is (layers complete of
     * those seen, bytes); all zero when none. */
    gint64 pull_layers_done;
    gint64 pull_layers;
    gint64 pull_bytes_done;
    gint64 pull_bytes_total;
    /* While ready: kernels executing now, and when its server was last
     * active (Unix µs; 0: unknown), for idle auto-stop. */
    gint64 busy_kernels;
    gint64 last_active_us;
} EinsoraObservation;

const char *einsora_runtime_status_to_string(EinsoraRuntimeStatus status);

G_END_DECLS
