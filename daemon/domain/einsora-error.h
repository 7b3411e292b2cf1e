/* The project's GError domain: its codes are the /v1 API error codes. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_ERROR (einsora_error_quark())

typedef enum {
    EINSORA_ERROR_INVALID_REQUEST,
    EINSORA_ERROR_UNAUTHENTICATED,
    EINSORA_ERROR_FORBIDDEN,
    EINSORA_ERROR_NOT_FOUND,
    EINSORA_ERROR_CONFLICT,
    EINSORA_ERROR_QUOTA_EXCEEDED,
    EINSORA_ERROR_INVALID_TRANSITION,
    /* The store can't be written or read now (disk full, I/O error, file
     * gone): nothing was changed, and the same request may work later. */
    EINSORA_ERROR_UNAVAILABLE,
} EinsoraError;

#define EINSORA_ERROR_LAST EINSORA_ERROR_UNAVAILABLE

GQuark einsora_error_quark(void);
const char *einsora_error_code_to_string(EinsoraError code);
guint einsora_error_http_status(EinsoraError code);

G_END_DECLS
