/* Access tickets: granting a one-time link that opens a running notebook
 * in a browser, and taking it when the link is followed. The service sees
 * only the secret's SHA-256. An endpoint needs no ticket: its base URL
 * takes API tokens. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-reason.h"
#include "einsora-uuid.h"

static gboolean
is_sha256_hex(const char *text)
{
    if (text == NULL || strlen(text) != 64)
        return FALSE;
    for (const char *p = text; *p != '\0'; p++) {
        if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
            return FALSE;
    }
    return TRUE;
}

/* Only a running notebook on one of our machines has a server the proxy
 * can reach: its agent reports the socket for that run. */
static gboolean
check_openable(const EinsoraWorkload *workload, GError **error)
{
    if (workload->kind != EINSORA_WORKLOAD_KIND_NOTEBOOK) {
        const char *kind = einsora_workload_kind_to_string(workload->kind);
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s is %s %s; only a running notebook can be opened in a browser",
                    workload->id, strchr("aeiou", kind[0]) != NULL ? "an" : "a", kind);
        return FALSE;
    }
    if (workload->state != EINSORA_WORKLOAD_STATE_RUNNING) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s is %s; only a running notebook can be opened", workload->id,
                    einsora_workload_state_to_string(workload->state));
        return FALSE;
    }
    if (workload->machine_id == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s doesn't run on a machine of this installation; it can't be "
                    "opened in a browser",
                    workload->id);
        return FALSE;
    }
    return TRUE;
}

typedef struct {
    EinsoraService *self;
    const EinsoraActor *actor;
    const char *workload_id;
    const char *ticket_hash;
    EinsoraAccessTicket *result;
} GrantContext;

/* Read, check, store and note in one transaction: a workload that stops
 * meanwhile can't get a ticket, and a ticket is never stored without its
 * note. */
static gboolean
grant_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    GrantContext *ctx = user_data;
    gint64 now_us = einsora_service_now(ctx->self);
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(EinsoraAccessTicket) ticket = NULL;
    g_autoptr(EinsoraWorkloadEvent) event = NULL;
    g_autofree gchar *reason = NULL;

    workload = einsora_store_get_workload(store, ctx->actor->tenant_id, ctx->workload_id, error);
    if (workload == NULL)
        return FALSE;
    if (workload->state == EINSORA_WORKLOAD_STATE_DELETED) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return FALSE;
    }
    if (!check_openable(workload, error))
        return FALSE;

    ticket = einsora_access_ticket_new();
    ticket->hash = g_strdup(ctx->ticket_hash);
    ticket->tenant_id = g_strdup(workload->tenant_id);
    ticket->workload_id = g_strdup(workload->id);
    ticket->attempt = workload->attempt;
    ticket->created_by =
        g_strdup(ctx->actor->subject != NULL ? ctx->actor->subject : ctx->actor->user_id);
    ticket->created_at = einsora_timestamp_format(now_us);
    ticket->expires_at = einsora_timestamp_format(now_us + EINSORA_ACCESS_TICKET_TTL_US);
    if (!einsora_store_insert_access_ticket(store, ticket, error))
        return FALSE;

    reason = einsora_reason_access_requested(ctx->actor);
    event = einsora_service_event_new(ctx->self, workload, TRUE, workload->state, reason, now_us);
    if (!einsora_store_append_event(store, event, error))
        return FALSE;
    ctx->result = g_steal_pointer(&ticket);
    return TRUE;
}

EinsoraAccessTicket *
einsora_service_grant_access(EinsoraService *self, const EinsoraActor *actor,
                             const char *workload_id, const char *ticket_hash, GError **error)
{
    GrantContext ctx = {self, actor, workload_id, ticket_hash, NULL};

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL, NULL);
    /* Never a secret in clear: the store keeps what it is given. */
    g_return_val_if_fail(is_sha256_hex(ticket_hash), NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    if (!einsora_store_in_transaction(self->store, grant_tx, &ctx, error)) {
        einsora_access_ticket_free(ctx.result);
        return NULL;
    }
    /* Its note is in the timeline. */
    einsora_service_events_added(self, actor->tenant_id);
    return ctx.result;
}

EinsoraWorkload *
einsora_service_endpoint_access(EinsoraService *self, const EinsoraActor *actor,
                                const char *workload_id, GError **error)
{
    g_autoptr(EinsoraWorkload) workload = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(actor != NULL && actor->tenant_id != NULL, NULL);

    workload = einsora_service_get_workload(self, actor->tenant_id, workload_id, FALSE, error);
    if (workload == NULL)
        return NULL;
    if (workload->kind != EINSORA_WORKLOAD_KIND_ENDPOINT) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "workload %s is not an endpoint; it has no base URL", workload->id);
        return NULL;
    }
    if (workload->state != EINSORA_WORKLOAD_STATE_RUNNING || workload->machine_id == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "endpoint %s is %s; its base URL answers once it is running", workload->id,
                    einsora_workload_state_to_string(workload->state));
        return NULL;
    }
    return g_steal_pointer(&workload);
}

EinsoraAccessTicket *
einsora_service_take_access_ticket(EinsoraService *self, const char *ticket_hash, GError **error)
{
    g_autofree gchar *now = NULL;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);

    /* Whatever a browser sent is refused before it reaches the store. */
    if (!is_sha256_hex(ticket_hash)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "no such access ticket, or it expired or was used");
        return NULL;
    }
    now = einsora_timestamp_format(einsora_service_now(self));
    return einsora_store_take_access_ticket(self->store, ticket_hash, now, error);
}
