/* The client's extended GError domain: code string, request ID and HTTP
 * status travel with the error and survive g_error_copy(). */
#define G_LOG_DOMAIN "einsora-client"

#include "einsora-client-error.h"

typedef struct {
    gchar *code;
    gchar *request_id;
    guint status;
} EinsoraClientErrorPrivate;

/* G_DEFINE_EXTENDED_ERROR's lookup can answer NULL (for an error of
 * another domain), so each of these checks. */
static void
einsora_client_error_private_init(EinsoraClientErrorPrivate *priv)
{
    if (priv == NULL)
        return;
    priv->code = NULL;
    priv->request_id = NULL;
    priv->status = 0;
}

static void
einsora_client_error_private_copy(const EinsoraClientErrorPrivate *src,
                                  EinsoraClientErrorPrivate *dest)
{
    if (src == NULL || dest == NULL)
        return;
    dest->code = g_strdup(src->code);
    dest->request_id = g_strdup(src->request_id);
    dest->status = src->status;
}

static void
einsora_client_error_private_clear(EinsoraClientErrorPrivate *priv)
{
    if (priv == NULL)
        return;
    g_clear_pointer(&priv->code, g_free);
    g_clear_pointer(&priv->request_id, g_free);
}

/* GLib's macro casts a byte pointer back to the private struct, which it
 * allocated aligned; clang's -Wcast-align (the fuzz tree) can't tell. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-align"
G_DEFINE_EXTENDED_ERROR(EinsoraClientError, einsora_client_error)
#pragma GCC diagnostic pop

static const struct {
    const char *code;
    EinsoraClientError value;
} known_codes[] = {
    {"invalid_request", EINSORA_CLIENT_ERROR_INVALID_REQUEST},
    {"unauthenticated", EINSORA_CLIENT_ERROR_UNAUTHENTICATED},
    {"forbidden", EINSORA_CLIENT_ERROR_FORBIDDEN},
    {"not_found", EINSORA_CLIENT_ERROR_NOT_FOUND},
    {"conflict", EINSORA_CLIENT_ERROR_CONFLICT},
    {"quota_exceeded", EINSORA_CLIENT_ERROR_QUOTA_EXCEEDED},
    {"invalid_transition", EINSORA_CLIENT_ERROR_INVALID_TRANSITION},
    {"internal", EINSORA_CLIENT_ERROR_INTERNAL},
    {EINSORA_CLIENT_CODE_UNREACHABLE, EINSORA_CLIENT_ERROR_UNREACHABLE},
    {EINSORA_CLIENT_CODE_BAD_RESPONSE, EINSORA_CLIENT_ERROR_BAD_RESPONSE},
    {EINSORA_CLIENT_CODE_UNTRUSTED_CERTIFICATE, EINSORA_CLIENT_ERROR_UNTRUSTED_CERTIFICATE},
};

GError *
einsora_client_error_new(const char *code, const char *request_id, guint status,
                         const char *message)
{
    EinsoraClientError value = EINSORA_CLIENT_ERROR_OTHER;
    EinsoraClientErrorPrivate *priv;
    GError *error;

    g_return_val_if_fail(code != NULL, NULL);
    g_return_val_if_fail(message != NULL, NULL);

    for (guint i = 0; i < G_N_ELEMENTS(known_codes); i++) {
        if (g_str_equal(known_codes[i].code, code))
            value = known_codes[i].value;
    }
    error = g_error_new_literal(EINSORA_CLIENT_ERROR, value, message);
    priv = einsora_client_error_get_private(error);
    if (priv != NULL) {
        priv->code = g_strdup(code);
        priv->request_id = g_strdup(request_id);
        priv->status = status;
    }
    return error;
}

const char *
einsora_client_error_get_code(const GError *error)
{
    EinsoraClientErrorPrivate *priv = einsora_client_error_get_private(error);
    return priv != NULL ? priv->code : NULL;
}

const char *
einsora_client_error_get_request_id(const GError *error)
{
    EinsoraClientErrorPrivate *priv = einsora_client_error_get_private(error);
    return priv != NULL ? priv->request_id : NULL;
}

guint
einsora_client_error_get_status(const GError *error)
{
    EinsoraClientErrorPrivate *priv = einsora_client_error_get_private(error);
    return priv != NULL ? priv->status : 0;
}
