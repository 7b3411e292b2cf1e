#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#define AUTH EINSORA_API_AUTH_REQUIRED
#define OPEN EINSORA_API_AUTH_NONE

static const char *const with_deleted[] = {"include_deleted", NULL};
static const char *const paged_with_deleted[] = {"include_deleted", "limit", "cursor", NULL};
static const char *const paged[] = {"limit", "cursor", NULL};
static const char *const event_feed[] = {"follow", "after", "limit", NULL};
static const char *const log_query[] = {"follow", "attempt", "tail", "since", NULL};
static const char *const usage_query[] = {"from", "to", "group_by", NULL};

static const EinsoraApiRoute routes[] = {
    {"GET", "/healthz", OPEN, FALSE, FALSE, NULL, einsora_api_health_live},
    {"GET", "/readyz", OPEN, FALSE, FALSE, NULL, einsora_api_health_ready},
    /* It authenticates itself: EINSORA_METRICS_OPEN=loopback may let a
     * local scraper in without credentials. */
    {"GET", "/metrics", OPEN, FALSE, FALSE, NULL, einsora_api_metrics_get},
    {"POST", "/v1/login", OPEN, FALSE, TRUE, NULL, einsora_api_session_login},
    {"POST", "/v1/logout", AUTH, FALSE, FALSE, NULL, einsora_api_session_logout},
    {"GET", "/v1/me", AUTH, FALSE, FALSE, NULL, einsora_api_session_me},
    {"POST", "/v1/workloads", AUTH, TRUE, TRUE, NULL, einsora_api_workloads_create},
    {"GET", "/v1/workloads", AUTH, FALSE, FALSE, paged_with_deleted, einsora_api_workloads_list},
    {"GET", "/v1/workloads/{id}", AUTH, FALSE, FALSE, with_deleted, einsora_api_workloads_get},
    {"DELETE", "/v1/workloads/{id}", AUTH, FALSE, FALSE, NULL, einsora_api_workloads_delete},
    {"POST", "/v1/workloads/{id}/start", AUTH, TRUE, FALSE, NULL, einsora_api_workloads_start},
    {"POST", "/v1/workloads/{id}/stop", AUTH, TRUE, FALSE, NULL, einsora_api_workloads_stop},
    {"GET", "/v1/workloads/{id}/events", AUTH, FALSE, FALSE, paged, einsora_api_workloads_events},
    {"GET", "/v1/workloads/{id}/export", AUTH, FALSE, FALSE, NULL, einsora_api_workloads_export},
    {"GET", "/v1/workloads/{id}/logs", AUTH, FALSE, FALSE, log_query, einsora_api_workloads_logs},
    {"GET", "/v1/events", AUTH, FALSE, FALSE, event_feed, einsora_api_events_feed},
    /* Its answer holds a ticket's secret: no Idempotency-Key replay. */
    {"POST", "/v1/workloads/{id}/access", AUTH, FALSE, FALSE, NULL, einsora_api_workloads_access},
    {"GET", "/v1/machines", AUTH, FALSE, FALSE, NULL, einsora_api_machines_list},
    {"GET", "/v1/machines/{id}", AUTH, FALSE, FALSE, NULL, einsora_api_machines_get},
    {"PUT", "/v1/machines/{id}/sharing", AUTH, FALSE, TRUE, NULL, einsora_api_machines_set_sharing},
    {"POST", "/v1/machines/{id}/revoke", AUTH, FALSE, FALSE, NULL, einsora_api_machines_revoke},
    /* Its answer holds the token's secret: no Idempotency-Key replay. */
    {"POST", "/v1/machines/enrolments", AUTH, FALSE, TRUE, NULL, einsora_api_enrolments_create},
    /* The token is the credential (docs/adr/0055). */
    {"POST", "/agent/v1/enroll", OPEN, FALSE, TRUE, NULL, einsora_api_agent_enroll},
    /* Authenticated by the client certificate, not a token. */
    {"POST", EINSORA_API_AGENT_SYNC_PATH, OPEN, FALSE, TRUE, NULL, einsora_api_agent_sync},
    {"GET", "/agent/v1/tunnel", OPEN, FALSE, FALSE, NULL, einsora_api_agent_tunnel},
    {"GET", "/v1/catalog", AUTH, FALSE, FALSE, NULL, einsora_api_catalog_get},
    {"GET", "/v1/usage", AUTH, FALSE, FALSE, usage_query, einsora_api_usage_get},
    {"GET", "/v1/model-store", AUTH, FALSE, FALSE, NULL, einsora_api_models_list},
    {"POST", "/v1/model-store", AUTH, FALSE, TRUE, NULL, einsora_api_models_import},
    {"GET", "/v1/model-store/imports/{id}", AUTH, FALSE, FALSE, NULL,
     einsora_api_models_import_get},
    {"GET", "/v1/model-store/{id}", AUTH, FALSE, FALSE, NULL, einsora_api_models_get},
    {"DELETE", "/v1/model-store/{id}", AUTH, FALSE, FALSE, NULL, einsora_api_models_remove},
    {"GET", "/v1/local-models", AUTH, FALSE, FALSE, NULL, einsora_api_models_found},
    /* A token's answer holds its secret, which must never be stored: no
     * Idempotency-Key replay for it. */
    {"POST", "/v1/tokens", AUTH, FALSE, TRUE, NULL, einsora_api_tokens_create},
    {"GET", "/v1/tokens", AUTH, FALSE, FALSE, paged, einsora_api_tokens_list},
    {"DELETE", "/v1/tokens/{id}", AUTH, FALSE, FALSE, NULL, einsora_api_tokens_revoke},
    {"GET", "/v1/audit", AUTH, FALSE, FALSE, NULL, einsora_api_audit_list},
    {"POST", "/v1/me/password", AUTH, FALSE, TRUE, NULL, einsora_api_password_change},
    {"POST", "/v1/admin/accounts/{id}/reset-password", AUTH, FALSE, FALSE, NULL,
     einsora_api_admin_reset_password},
    {"GET", "/v1/admin/accounts", AUTH, FALSE, FALSE, NULL, einsora_api_admin_accounts_list},
    {"POST", "/v1/admin/accounts", AUTH, FALSE, TRUE, NULL, einsora_api_admin_accounts_create},
    {"POST", "/v1/admin/accounts/{id}/disable", AUTH, FALSE, FALSE, NULL,
     einsora_api_admin_accounts_disable},
    {"POST", "/v1/admin/accounts/{id}/enable", AUTH, FALSE, FALSE, NULL,
     einsora_api_admin_accounts_enable},
    {"GET", "/v1/admin/tenants", AUTH, FALSE, FALSE, NULL, einsora_api_admin_tenants_list},
    {"PUT", "/v1/admin/tenants/{id}/quotas/{class}", AUTH, FALSE, TRUE, NULL,
     einsora_api_admin_quota_set},
};

#undef AUTH
#undef OPEN

const EinsoraApiRoute *
einsora_api_routes(guint *n_routes)
{
    *n_routes = G_N_ELEMENTS(routes);
    return routes;
}

static gboolean
pattern_matches(const char *pattern, const char *path, GStrv *params)
{
    g_auto(GStrv) want = g_strsplit(pattern, "/", -1);
    g_auto(GStrv) have = g_strsplit(path, "/", -1);
    g_autoptr(GStrvBuilder) found = g_strv_builder_new();

    if (g_strv_length(want) != g_strv_length(have))
        return FALSE;
    for (guint i = 0; want[i] != NULL; i++) {
        /* "{id}", "{class}": any one segment. */
        if (want[i][0] == '{' && g_str_has_suffix(want[i], "}")) {
            if (*have[i] == '\0')
                return FALSE;
            g_strv_builder_add(found, have[i]);
        } else if (g_strcmp0(want[i], have[i]) != 0) {
            return FALSE;
        }
    }
    if (params != NULL)
        *params = g_strv_builder_end(found);
    return TRUE;
}

const EinsoraApiRoute *
einsora_api_route_match(const char *method, const char *path, GStrv *params, gboolean *path_known)
{
    *path_known = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(routes); i++) {
        if (!pattern_matches(routes[i].pattern, path, NULL))
            continue;
        *path_known = TRUE;
        if (g_strcmp0(routes[i].method, method) == 0) {
            pattern_matches(routes[i].pattern, path, params);
            return &routes[i];
        }
    }
    return NULL;
}
