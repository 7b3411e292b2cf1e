/* The endpoint routes the access proxy serves (docs/adr/0034): which
 * paths are an endpoint's OpenAI-compatible base URL, which of them reach
 * the worker, and the checks and answers the proxy makes itself (the
 * error shape OpenAI clients parse, the tenant-wide model list). Kept
 * apart from the forwarding so it can be tested alone. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A JSON request body past this is refused (413) before it is read. */
#define EINSORA_ENDPOINT_MAX_BODY_BYTES (G_GINT64_CONSTANT(4) * 1024 * 1024)
#define EINSORA_ENDPOINT_PATH_PREFIX "/endpoints/"

typedef struct {
    gchar *workload_id; /* lower case; NULL: the tenant-wide base URL (/v1) */
    gchar *route;       /* what the worker would be asked: "/v1/chat/completions" */
    gboolean allowed;   /* an inference route, with its method */
    gboolean has_body;  /* a POST: a JSON body, checked before it goes on */
} EinsoraEndpointRoute;

void einsora_endpoint_route_free(EinsoraEndpointRoute *route);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraEndpointRoute, einsora_endpoint_route_free)

/* /endpoints/<uuid>/v1[/...] or /v1[/...]: the route, allowed or not
 * (what isn't is answered 404 by the proxy); NULL for any other path,
 * including /endpoints/ with something that isn't a UUID. */
EinsoraEndpointRoute *einsora_endpoint_route_parse(const char *method, const char *path);

/* A client's X-Request-ID that may be echoed and logged: 1 to 64 of
 * A-Z a-z 0-9 . _ : -, as the control API's Idempotency-Key. */
gboolean einsora_endpoint_request_id_is_sane(const char *id);

/* {"error": {"message", "type", "code"}}: OpenAI's error shape. */
gchar *einsora_endpoint_error_json(const char *message, const char *type, const char *code);

/* A request body: a JSON object. @model (may be NULL): its "model"
 * member when that is a non-empty string, else NULL. FALSE with @error
 * (G_IO_ERROR_INVALID_DATA, a message fit for the client) otherwise. */
gboolean einsora_endpoint_body_check(const char *data, gsize length, gchar **model, GError **error);

/* GET /v1/models on the tenant-wide base URL: @names (with @created_unix
 * for each, seconds) in OpenAI's list shape. */
gchar *einsora_endpoint_models_json(const char *const *names, const gint64 *created_unix,
                                    guint count);

G_END_DECLS
