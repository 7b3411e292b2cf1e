#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-status-code.h"

#include "einsora-reason.h"

typedef struct {
    const char *name;
    const char *reason; /* NULL: taken from the domain's vocabulary */
} StatusCodeInfo;

static const StatusCodeInfo codes[] = {
    [EINSORA_STATUS_CODE_UNKNOWN] = {"unknown", NULL},
    [EINSORA_STATUS_CODE_STARTING] = {"starting", "starting on its machine"},
    [EINSORA_STATUS_CODE_RUNNING] = {"running", "running on its machine"},
    [EINSORA_STATUS_CODE_STOPPING] = {"stopping", "stopping on its machine"},
    [EINSORA_STATUS_CODE_STOPPED] = {"stopped", "stopped on its machine, keeping its data"},
    [EINSORA_STATUS_CODE_REMOVING] = {"removing", "deleting its data on its machine"},
    [EINSORA_STATUS_CODE_REMOVED] = {"removed", "its data was deleted from its machine"},
    [EINSORA_STATUS_CODE_FAILED_TO_START] = {"failed_to_start", "it couldn't start on its machine"},
    [EINSORA_STATUS_CODE_OUT_OF_MEMORY] = {"out_of_memory", "it ran out of memory"},
    [EINSORA_STATUS_CODE_GPU_BUSY] = {"gpu_busy", "waiting for its machine's GPU to be free"},
    [EINSORA_STATUS_CODE_DRIVER_MISSING] = {"driver_missing", "its machine has no driver for it"},
    [EINSORA_STATUS_CODE_ISOLATION_REFUSED] = {"isolation_refused",
                                               "its machine refused it: its driver doesn't "
                                               "isolate it strongly enough"},
    [EINSORA_STATUS_CODE_MOVE_REFUSED] = {"move_refused",
                                          "its machine refused to move it to another driver "
                                          "while that driver holds its data"},
    [EINSORA_STATUS_CODE_IMAGE_MISSING] = {"image_missing",
                                           "its image isn't available on its machine"},
    [EINSORA_STATUS_CODE_EXITED] = {"exited", NULL},
    [EINSORA_STATUS_CODE_SANDBOX_CHANGED] = {"sandbox_changed",
                                             "its sandbox changed: start it again to use its "
                                             "saved data under the new one"},
    [EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE] = {"runtime_unreachable",
                                                 "its machine's container engine doesn't answer; "
                                                 "waiting for it"},
    [EINSORA_STATUS_CODE_PULL_FAILED] = {"pull_failed",
                                         "couldn't pull its image: it doesn't exist or this "
                                         "machine can't reach the registry"},
};

G_STATIC_ASSERT(G_N_ELEMENTS(codes) == EINSORA_STATUS_CODE_COUNT);

/* Never an error: a code this side doesn't know is UNKNOWN, which has a
 * fixed reason of its own. */
EinsoraStatusCode
einsora_status_code_from_string(const char *str)
{
    for (guint i = EINSORA_STATUS_CODE_UNKNOWN + 1; str != NULL && i < G_N_ELEMENTS(codes); i++) {
        if (g_str_equal(codes[i].name, str))
            return (EinsoraStatusCode)i;
    }
    return EINSORA_STATUS_CODE_UNKNOWN;
}

const char *
einsora_status_code_to_string(EinsoraStatusCode code)
{
    if ((guint)code >= G_N_ELEMENTS(codes))
        code = EINSORA_STATUS_CODE_UNKNOWN;
    return codes[code].name;
}

const char *
einsora_status_code_reason(EinsoraStatusCode code)
{
    if ((guint)code >= G_N_ELEMENTS(codes))
        code = EINSORA_STATUS_CODE_UNKNOWN;
    /* These two have one writer in the domain's reason vocabulary. */
    if (code == EINSORA_STATUS_CODE_EXITED)
        return einsora_reason_stopped_by_itself();
    if (code == EINSORA_STATUS_CODE_UNKNOWN)
        return einsora_reason_machine_reported_problem();
    return codes[code].reason;
}

/* Whether something is under way for the workload on its machine: it is
 * starting, running, stopping, its data is being deleted, or its runtime
 * can't be asked (it may still be running). While it is,
 * its driver is busy with it (another attempt, a move or a GPU must wait
 * for it to end); every other code, GPU_BUSY included, means nothing runs
 * for it there. The agent and every driver read it from here, so they
 * agree on when a workload has settled. */
gboolean
einsora_status_code_is_active(EinsoraStatusCode code)
{
    return code == EINSORA_STATUS_CODE_STARTING || code == EINSORA_STATUS_CODE_RUNNING ||
           code == EINSORA_STATUS_CODE_STOPPING || code == EINSORA_STATUS_CODE_REMOVING ||
           code == EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE;
}
