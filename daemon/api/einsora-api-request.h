/* One /v1 request as the API sees it: the message, the request ID that
 * every log line of it carries, and who made it once authenticated. */
#pragma once

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "einsora-actor.h"

G_BEGIN_DECLS

/* The largest request body accepted; larger ones are answered 413. */
#define EINSORA_API_MAX_BODY_BYTES (64 * 1024)
/* An enrolled agent's report, the one larger body: every status of up to
 * EINSORA_PROTOCOL_MAX_WORKLOADS workloads (docs/adr/0056). */
#define EINSORA_API_AGENT_SYNC_PATH "/agent/v1/sync"
#define EINSORA_API_MAX_AGENT_BODY_BYTES (4 * 1024 * 1024)

/* A field that is a list of strings (GLib's G_TYPE_STRV isn't a constant). */
#define EINSORA_API_TYPE_STRINGS G_TYPE_POINTER

/* A JSON member a handler accepts; anything else in the body is refused. */
typedef struct {
    const char *name;
    GType type; /* G_TYPE_STRING, G_TYPE_BOOLEAN, G_TYPE_INT64 or EINSORA_API_TYPE_STRINGS */
    gboolean required;
} EinsoraApiField;

#define EINSORA_TYPE_API_REQUEST (einsora_api_request_get_type())
G_DECLARE_FINAL_TYPE(EinsoraApiRequest, einsora_api_request, EINSORA, API_REQUEST, GObject)

EinsoraApiRequest *einsora_api_request_new(SoupServerMessage *message, const char *request_id,
                                           gint64 started_us);

SoupServerMessage *einsora_api_request_get_message(EinsoraApiRequest *self);
const char *einsora_api_request_get_id(EinsoraApiRequest *self);
const char *einsora_api_request_get_method(EinsoraApiRequest *self);
const char *einsora_api_request_get_path(EinsoraApiRequest *self);
/* Path parameters ({id}) matched by the router, in order. */
const char *einsora_api_request_get_param(EinsoraApiRequest *self, guint index);
void einsora_api_request_set_params(EinsoraApiRequest *self, GStrv params);

/* The value of the cookie @name the request carries, or NULL. */
gchar *einsora_api_request_get_cookie(EinsoraApiRequest *self, const char *name);

const EinsoraActor *einsora_api_request_get_actor(EinsoraApiRequest *self);
void einsora_api_request_set_actor(EinsoraApiRequest *self, EinsoraActor *actor);
/* The request's Idempotency-Key and the SHA-256 of what it asks, when it
 * has one: a handler that commits can save the answer in the same
 * transaction (a create), so a crash between the two can't lose it. */
void einsora_api_request_set_idempotency(EinsoraApiRequest *self, const char *key,
                                         const char *request_sha256);
const char *einsora_api_request_get_idempotency_key(EinsoraApiRequest *self);
const char *einsora_api_request_get_request_sha256(EinsoraApiRequest *self);

gboolean einsora_api_request_is_finished(EinsoraApiRequest *self);
guint einsora_api_request_get_status(EinsoraApiRequest *self);

/* Reads the body as one JSON object whose members are all in @fields. */
JsonObject *einsora_api_request_parse_body(EinsoraApiRequest *self, const EinsoraApiField *fields,
                                           GError **error);
/* The same, from the body's bytes (tests/fuzz/fuzz-api-body.c). */
JsonObject *einsora_api_parse_body(const char *data, gsize length, const EinsoraApiField *fields,
                                   GError **error);
/* Refuses a query with a parameter not in @allowed, one given twice, or
 * a malformed escape. */
gboolean einsora_api_request_check_query(EinsoraApiRequest *self, const char *const *allowed,
                                         GError **error);
/* Reads a boolean query parameter ("true" or "false"; absent is FALSE). */
gboolean einsora_api_request_query_flag(EinsoraApiRequest *self, const char *name, gboolean *value,
                                        GError **error);
/* The query's text, or NULL. */
const char *einsora_api_request_get_query(EinsoraApiRequest *self);
/* The same two, from the query's text (tests/fuzz/fuzz-api-query.c). */
gboolean einsora_api_query_check(const char *query, const char *const *allowed, GError **error);
gboolean einsora_api_query_flag(const char *query, const char *name, gboolean *value,
                                GError **error);

void einsora_api_request_respond_json(EinsoraApiRequest *self, guint status, JsonNode *node);
/* @body is JSON text already (an Idempotency-Key replay). */
void einsora_api_request_respond_raw(EinsoraApiRequest *self, guint status, const char *body);
/* @body is JSON text the handler wrote (a list's page); taken. */
void einsora_api_request_respond_text(EinsoraApiRequest *self, guint status, GString *body);
void einsora_api_request_respond_empty(EinsoraApiRequest *self, guint status);
void einsora_api_request_respond_error(EinsoraApiRequest *self, const GError *error);
void einsora_api_request_respond_problem(EinsoraApiRequest *self, guint status, const char *code,
                                         const char *message);

/* Logs a line carrying the request ID, and tenant and subject once known.
 * Never pass a secret. */
void einsora_api_request_log(EinsoraApiRequest *self, GLogLevelFlags level, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

G_END_DECLS
