/* The /v1 route table: the one list of what the API serves. The router
 * dispatches only through it, and tests/einsora-openapi-test.c checks it
 * against docs/openapi.json both ways. */
#pragma once

#include "einsora-api-request.h"
#include "einsora-api-server.h"

G_BEGIN_DECLS

typedef void (*EinsoraApiHandler)(EinsoraApiServer *server, EinsoraApiRequest *request);

typedef enum {
    EINSORA_API_AUTH_NONE,
    EINSORA_API_AUTH_REQUIRED,
} EinsoraApiAuth;

typedef struct {
    const char *method;
    const char *pattern; /* segments; "{id}" (any "{name}") matches one path segment */
    EinsoraApiAuth auth;
    gboolean idempotent_key;  /* honours Idempotency-Key */
    gboolean takes_body;      /* a JSON body; other routes refuse one */
    const char *const *query; /* query parameters it takes; NULL: none */
    EinsoraApiHandler handler;
} EinsoraApiRoute;

const EinsoraApiRoute *einsora_api_routes(guint *n_routes);
/* The route for @method and @path; *params gets the matched {id}s. Sets
 * *path_known when some route has this path with another method. */
const EinsoraApiRoute *einsora_api_route_match(const char *method, const char *path, GStrv *params,
                                               gboolean *path_known);

/* The members each body-taking handler reads, for tests/fuzz/fuzz-api-body.c. */
extern const EinsoraApiField einsora_api_session_login_fields[];
extern const EinsoraApiField einsora_api_workloads_create_fields[];
extern const EinsoraApiField einsora_api_tokens_create_fields[];
extern const EinsoraApiField einsora_api_models_import_fields[];
extern const EinsoraApiField einsora_api_admin_accounts_create_fields[];
extern const EinsoraApiField einsora_api_admin_quota_set_fields[];
extern const EinsoraApiField einsora_api_password_change_fields[];
extern const EinsoraApiField einsora_api_machines_sharing_fields[];
extern const EinsoraApiField einsora_api_enrolments_create_fields[];
extern const EinsoraApiField einsora_api_agent_enroll_fields[];

/* Handlers, by resource. */
void einsora_api_health_live(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_health_ready(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_metrics_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_session_login(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_session_logout(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_session_me(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_create(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_start(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_stop(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_delete(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_events(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_export(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_logs(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_workloads_access(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_events_feed(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_machines_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_machines_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_machines_set_sharing(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_enrolments_create(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_agent_enroll(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_agent_sync(EinsoraApiServer *server, EinsoraApiRequest *request);
/* The machine's certificate was revoked: its held syncs are refused now. */
void einsora_api_agent_sync_revoked(EinsoraApiServer *server, const char *machine_id);
/* GET /agent/v1/tunnel: an agent's stream for the access proxy (docs/adr/0059). */
void einsora_api_agent_tunnel(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_machines_revoke(EinsoraApiServer *server, EinsoraApiRequest *request);
/* Why @message's client certificate doesn't do for an agent's sync: none
 * was sent, or what is wrong with it. */
const char *einsora_api_agent_certificate_problem(SoupServerMessage *message);
void einsora_api_catalog_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_usage_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_models_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_models_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_models_import(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_models_import_get(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_models_remove(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_models_found(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_tokens_create(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_tokens_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_tokens_revoke(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_accounts_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_accounts_create(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_accounts_disable(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_accounts_enable(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_tenants_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_quota_set(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_audit_list(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_password_change(EinsoraApiServer *server, EinsoraApiRequest *request);
void einsora_api_admin_reset_password(EinsoraApiServer *server, EinsoraApiRequest *request);

G_END_DECLS
