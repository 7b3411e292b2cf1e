#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-error.h"

/* The macro stringifies its first argument: keep the formatter away. */
/* clang-format off */
G_DEFINE_QUARK(einsora-error-quark, einsora_error)
/* clang-format on */

typedef struct {
    const char *code;
    guint http_status;
} EinsoraErrorInfo;

static const EinsoraErrorInfo error_info[] = {
    [EINSORA_ERROR_INVALID_REQUEST] = {"invalid_request", 400},
    [EINSORA_ERROR_UNAUTHENTICATED] = {"unauthenticated", 401},
    [EINSORA_ERROR_FORBIDDEN] = {"forbidden", 403},
    [EINSORA_ERROR_NOT_FOUND] = {"not_found", 404},
    [EINSORA_ERROR_CONFLICT] = {"conflict", 409},
    [EINSORA_ERROR_QUOTA_EXCEEDED] = {"quota_exceeded", 409},
    [EINSORA_ERROR_INVALID_TRANSITION] = {"invalid_transition", 409},
    [EINSORA_ERROR_UNAVAILABLE] = {"unavailable", 503},
};

/* The API code for an Einsora error; NULL for a code outside the domain. */
const char *
einsora_error_code_to_string(EinsoraError code)
{
    if ((guint)code > EINSORA_ERROR_LAST)
        return NULL;
    return error_info[code].code;
}

/* The HTTP status of an Einsora error; 500 for anything unknown. */
guint
einsora_error_http_status(EinsoraError code)
{
    if ((guint)code > EINSORA_ERROR_LAST)
        return 500;
    return error_info[code].http_status;
}
