/* A client of the daemon's /v1 API (docs/openapi.json), shared by the CLI
 * and the desktop app. Each call answers the parsed JSON and, when asked,
 * the response body exactly as the server sent it; a failure is an
 * EINSORA_CLIENT_ERROR carrying the API's code, message and request ID.
 * The plain calls block, which suits a command-line tool; a UI uses the
 * _async ones, which answer on the thread-default main context and map
 * answers and errors exactly as the plain ones do. Use one client from
 * one thread. */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "einsora-client-error.h"
#include "einsora-event-feed.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_CLIENT (einsora_client_get_type())
G_DECLARE_FINAL_TYPE(EinsoraClient, einsora_client, EINSORA, CLIENT, GObject)

/* @base_url: "http://127.0.0.1:8080" (a final slash is ignored).
 * @token: (nullable): an API token, sent as a bearer token and never logged. */
EinsoraClient *einsora_client_new(const char *base_url, const char *token);
/* @url without its final slashes, as the client and the event feed keep
 * a base URL (paths are appended with their own "/"). */
gchar *einsora_client_base_url_new(const char *url);
/* Whether @server (a URL) names this machine (localhost or a loopback
 * address): a local daemon's token file is sent only to such a server. */
gboolean einsora_client_server_is_local(const char *server);
const char *einsora_client_get_base_url(EinsoraClient *self);
/* The API token it sends (NULL: none), for a call outside /v1 to the same
 * server's endpoints. */
const char *einsora_client_get_token(EinsoraClient *self);
/* TLS accepts the certificate whose fingerprint is @fingerprint ("SHA256:"
 * and hex, as einsora-daemon prints it), or one the system's CAs vouch
 * for; NULL: those only. A refused certificate fails the call with
 * EINSORA_CLIENT_ERROR_UNTRUSTED_CERTIFICATE, naming both fingerprints. */
void einsora_client_set_pinned_certificate(EinsoraClient *self, const char *fingerprint);
/* What its sessions trust, for another session to the same server. */
GTlsDatabase *einsora_client_get_tls_database(EinsoraClient *self);
/* The change feed of this client's server, with its token (not started). */
EinsoraEventFeed *einsora_client_new_event_feed(EinsoraClient *self);

/* Any /v1 call. @path: starts with "/" and is already escaped. @body:
 * (nullable): sent as JSON. @idempotency_key: (nullable): sent as
 * Idempotency-Key; with one, a request that broke in transit is sent once
 * more with the same key, which the server answers only once.
 * @raw: (out) (optional): the response body as received. Returns the parsed
 * body, or NULL with @error set; a success without a body (204) answers a
 * JSON null node. */
JsonNode *einsora_client_request(EinsoraClient *self, const char *method, const char *path,
                                 JsonNode *body, const char *idempotency_key, GBytes **raw,
                                 GError **error);

/* einsora_client_request() without blocking: @callback runs on the
 * thread-default main context of the calling thread, and calls
 * einsora_client_request_finish() for the answer. The same retries with
 * an @idempotency_key. A cancelled call fails with G_IO_ERROR_CANCELLED
 * (not an EINSORA_CLIENT_ERROR), as GIO's own calls do; @cancellable:
 * (nullable). */
void einsora_client_request_async(EinsoraClient *self, const char *method, const char *path,
                                  JsonNode *body, const char *idempotency_key,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data);
/* Finishes einsora_client_request_async() and every other _async call of
 * this client; answers as einsora_client_request() does. */
JsonNode *einsora_client_request_finish(EinsoraClient *self, GAsyncResult *result, GBytes **raw,
                                        GError **error);

JsonNode *einsora_client_get_me(EinsoraClient *self, GBytes **raw, GError **error);

/* Signs in to this client's server with @email and @password (a session,
 * POST /v1/login), makes an API token named @token_name with it (POST
 * /v1/tokens) and ends the session (POST /v1/logout): the password is
 * sent once and kept nowhere, and what a client keeps is a token, listed
 * and revoked as any other (docs/adr/0054). A password an admin reset
 * fails with the API's "password_change_required" unless @new_password
 * is given: it is changed first (POST /v1/me/password, which ends every
 * session) and the sign-in made again with it. Returns the token's
 * secret. Blocks; call it from one thread, on a client of that thread. */
gchar *einsora_client_sign_in(EinsoraClient *self, const char *email, const char *password,
                              const char *new_password, const char *token_name, GError **error);

/* The lists (workloads, a workload's events, tokens) are read whole,
 * following next_cursor page by page; more than one page comes back as
 * one object of the same shape, {"<member>": [...], "next_cursor": null}. */
JsonNode *einsora_client_list_workloads(EinsoraClient *self, gboolean include_deleted, GBytes **raw,
                                        GError **error);
JsonNode *einsora_client_get_workload(EinsoraClient *self, const char *id, gboolean include_deleted,
                                      GBytes **raw, GError **error);
/* @name, @region, @idempotency_key: (nullable). */
JsonNode *einsora_client_create_workload(EinsoraClient *self, const char *kind, const char *name,
                                         const char *gpu_class, const char *image,
                                         const char *region, const char *idempotency_key,
                                         GBytes **raw, GError **error);
JsonNode *einsora_client_start_workload(EinsoraClient *self, const char *id, GBytes **raw,
                                        GError **error);
JsonNode *einsora_client_stop_workload(EinsoraClient *self, const char *id, GBytes **raw,
                                       GError **error);
JsonNode *einsora_client_delete_workload(EinsoraClient *self, const char *id, GBytes **raw,
                                         GError **error);
/* A one-time link that opens a running notebook in a browser. */
JsonNode *einsora_client_open_workload(EinsoraClient *self, const char *id, GBytes **raw,
                                       GError **error);
JsonNode *einsora_client_list_events(EinsoraClient *self, const char *id, GBytes **raw,
                                     GError **error);
JsonNode *einsora_client_export_workload(EinsoraClient *self, const char *id, GBytes **raw,
                                         GError **error);

JsonNode *einsora_client_list_machines(EinsoraClient *self, GBytes **raw, GError **error);
/* A one-time enrolment token for another machine of the caller's
 * (POST /v1/machines/enrolments): the answer holds the token and the one
 * command to run there, shown once. @name, @region: (nullable): the
 * server's defaults. Only a daemon over TLS gives one (else CONFLICT). */
JsonNode *einsora_client_enrol_machine(EinsoraClient *self, const char *name, const char *region,
                                       GBytes **raw, GError **error);
/* Its agent's certificate works no more (POST /v1/machines/{id}/revoke):
 * the machine as it is now. A machine without one is CONFLICT. */
JsonNode *einsora_client_revoke_machine(EinsoraClient *self, const char *id, GBytes **raw,
                                        GError **error);

/* What a workload may ask for (regions, kinds, classes, images) and the
 * caller's tenant's GPU quota per class. */
JsonNode *einsora_client_get_catalog(EinsoraClient *self, GBytes **raw, GError **error);

/* The caller's tenant's usage (GET /v1/usage). @query: (nullable): the
 * query string without its "?" (from=, to=, group_by=), escaped. */
JsonNode *einsora_client_get_usage(EinsoraClient *self, const char *query, GBytes **raw,
                                   GError **error);

JsonNode *einsora_client_list_tokens(EinsoraClient *self, GBytes **raw, GError **error);
/* The answer holds the new token's secret: shown once, stored nowhere. */
JsonNode *einsora_client_create_token(EinsoraClient *self, const char *name, GBytes **raw,
                                      GError **error);
gboolean einsora_client_revoke_token(EinsoraClient *self, const char *id, GError **error);

/* The same calls without blocking, for the desktop app: each sends what
 * its plain form sends, and finishes with einsora_client_request_finish(),
 * whose answer is the same JSON object. */
void einsora_client_list_workloads_async(EinsoraClient *self, gboolean include_deleted,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data);
void einsora_client_get_workload_async(EinsoraClient *self, const char *id,
                                       gboolean include_deleted, GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data);
void einsora_client_create_workload_async(EinsoraClient *self, const char *kind, const char *name,
                                          const char *gpu_class, const char *image,
                                          const char *region, const char *idempotency_key,
                                          GCancellable *cancellable, GAsyncReadyCallback callback,
                                          gpointer user_data);
/* An endpoint serving @model (a name in the model store): no image, so
 * the server picks the one that runs endpoints on @gpu_class.
 * @name, @region, @idempotency_key: (nullable). */
void einsora_client_create_endpoint_async(EinsoraClient *self, const char *name,
                                          const char *gpu_class, const char *model,
                                          const char *region, const char *idempotency_key,
                                          GCancellable *cancellable, GAsyncReadyCallback callback,
                                          gpointer user_data);
void einsora_client_start_workload_async(EinsoraClient *self, const char *id,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data);
void einsora_client_stop_workload_async(EinsoraClient *self, const char *id,
                                        GCancellable *cancellable, GAsyncReadyCallback callback,
                                        gpointer user_data);
void einsora_client_delete_workload_async(EinsoraClient *self, const char *id,
                                          GCancellable *cancellable, GAsyncReadyCallback callback,
                                          gpointer user_data);
void einsora_client_open_workload_async(EinsoraClient *self, const char *id,
                                        GCancellable *cancellable, GAsyncReadyCallback callback,
                                        gpointer user_data);
void einsora_client_list_events_async(EinsoraClient *self, const char *id,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data);
void einsora_client_list_machines_async(EinsoraClient *self, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data);
void einsora_client_enrol_machine_async(EinsoraClient *self, const char *name, const char *region,
                                        GCancellable *cancellable, GAsyncReadyCallback callback,
                                        gpointer user_data);
void einsora_client_revoke_machine_async(EinsoraClient *self, const char *id,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data);
void einsora_client_get_catalog_async(EinsoraClient *self, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data);
void einsora_client_get_usage_async(EinsoraClient *self, const char *query,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data);

/* A workload's logs (GET /v1/workloads/{id}/logs), as text: @query is
 * the query already escaped ("tail=20&follow=true"; NULL: none), and
 * each piece of text goes to @on_text as it arrives, until the answer
 * ends (with follow=true: when the attempt does, or @cancellable says).
 * No I/O timeout: a followed log may be quiet for hours. */
typedef void (*EinsoraClientTextFunc)(const char *text, gsize length, gpointer user_data);
gboolean einsora_client_read_logs(EinsoraClient *self, const char *id, const char *query,
                                  EinsoraClientTextFunc on_text, gpointer user_data,
                                  GCancellable *cancellable, GError **error);
void einsora_client_read_logs_async(EinsoraClient *self, const char *id, const char *query,
                                    EinsoraClientTextFunc on_text, gpointer text_data,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data);
gboolean einsora_client_read_logs_finish(EinsoraClient *self, GAsyncResult *result, GError **error);

G_END_DECLS
