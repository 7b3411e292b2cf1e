/* The fixed vocabulary an agent reports per workload, and the fixed
 * reason each code becomes. What an agent reports reaches a timeline only
 * as these reasons; a code outside the vocabulary reads "its machine
 * reported a problem", so a newer or hostile agent can't write text. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    /* Anything outside the vocabulary; zero, so a cleared record reads it. */
    EINSORA_STATUS_CODE_UNKNOWN,
    EINSORA_STATUS_CODE_STARTING,
    EINSORA_STATUS_CODE_RUNNING,
    EINSORA_STATUS_CODE_STOPPING,
    EINSORA_STATUS_CODE_STOPPED,
    EINSORA_STATUS_CODE_REMOVING,
    EINSORA_STATUS_CODE_REMOVED,
    EINSORA_STATUS_CODE_FAILED_TO_START,
    EINSORA_STATUS_CODE_OUT_OF_MEMORY,
    /* Waiting for its machine's GPU to be free. */
    EINSORA_STATUS_CODE_GPU_BUSY,
    EINSORA_STATUS_CODE_DRIVER_MISSING,
    EINSORA_STATUS_CODE_ISOLATION_REFUSED,
    /* Asked to move to another driver while it holds data. */
    EINSORA_STATUS_CODE_MOVE_REFUSED,
    EINSORA_STATUS_CODE_IMAGE_MISSING,
    /* It was running and stopped by itself. */
    EINSORA_STATUS_CODE_EXITED,
    EINSORA_STATUS_CODE_SANDBOX_CHANGED,
    /* Its runtime (the Docker Engine) doesn't answer: what runs is
     * unknown, and nothing is decided until it answers again. */
    EINSORA_STATUS_CODE_RUNTIME_UNREACHABLE,
    /* Its image couldn't be pulled: it doesn't exist, or no registry can
     * be reached. */
    EINSORA_STATUS_CODE_PULL_FAILED,
} EinsoraStatusCode;

#define EINSORA_STATUS_CODE_COUNT 18

EinsoraStatusCode einsora_status_code_from_string(const char *str);
const char *einsora_status_code_to_string(EinsoraStatusCode code);
const char *einsora_status_code_reason(EinsoraStatusCode code);
gboolean einsora_status_code_is_active(EinsoraStatusCode code);

G_END_DECLS
