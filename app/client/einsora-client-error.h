/* Errors of the /v1 client. An error the API answered keeps the API's own
 * code string ("not_found"), its message and its request ID, so a user can
 * quote the ID to the operator; the enum only groups the codes this client
 * knows. Failures before an answer (no connection, an answer that isn't the
 * API's) have codes of their own. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_CLIENT_ERROR (einsora_client_error_quark())

typedef enum {
    EINSORA_CLIENT_ERROR_INVALID_REQUEST,
    EINSORA_CLIENT_ERROR_UNAUTHENTICATED,
    EINSORA_CLIENT_ERROR_FORBIDDEN,
    EINSORA_CLIENT_ERROR_NOT_FOUND,
    EINSORA_CLIENT_ERROR_CONFLICT,
    EINSORA_CLIENT_ERROR_QUOTA_EXCEEDED,
    EINSORA_CLIENT_ERROR_INVALID_TRANSITION,
    EINSORA_CLIENT_ERROR_INTERNAL,
    /* An API error code this client doesn't know yet; its string is kept. */
    EINSORA_CLIENT_ERROR_OTHER,
    /* No answer: the server couldn't be reached or the exchange broke. */
    EINSORA_CLIENT_ERROR_UNREACHABLE,
    /* An answer, but not one the API gives (not JSON, wrong shape). */
    EINSORA_CLIENT_ERROR_BAD_RESPONSE,
    /* The server's TLS certificate is neither pinned nor one the system's
     * CAs vouch for: nothing was sent. */
    EINSORA_CLIENT_ERROR_UNTRUSTED_CERTIFICATE,
} EinsoraClientError;

/* The code strings of the errors that aren't the API's. */
#define EINSORA_CLIENT_CODE_UNREACHABLE "unreachable"
#define EINSORA_CLIENT_CODE_BAD_RESPONSE "bad_response"
#define EINSORA_CLIENT_CODE_UNTRUSTED_CERTIFICATE "untrusted_certificate"

GQuark einsora_client_error_quark(void);

/* @code: the API's code string, or one of EINSORA_CLIENT_CODE_*.
 * @request_id: (nullable): the server's X-Request-ID. @status: the HTTP
 * status, 0 when there was no answer. */
GError *einsora_client_error_new(const char *code, const char *request_id, guint status,
                                 const char *message);
/* These take an error of the EINSORA_CLIENT_ERROR domain. */
const char *einsora_client_error_get_code(const GError *error);
const char *einsora_client_error_get_request_id(const GError *error);
guint einsora_client_error_get_status(const GError *error);

G_END_DECLS
