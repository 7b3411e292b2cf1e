/* The timeline: the row every write that changes or notes a workload
 * appends, and the reads of it (one workload's events, the tenant's change
 * feed). */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"
#include "einsora-reason.h"
#include "einsora-uuid.h"

EinsoraWorkloadEvent *
einsora_service_event_new(EinsoraService *self, const EinsoraWorkload *workload,
                          gboolean has_from_state, EinsoraWorkloadState from, const char *reason,
                          gint64 now_us)
{
    EinsoraWorkloadEvent *event = einsora_workload_event_new();

    event->id = einsora_uuid_v7_new(now_us / 1000);
    event->tenant_id = g_strdup(workload->tenant_id);
    event->workload_id = g_strdup(workload->id);
    event->has_from_state = has_from_state;
    event->from_state = has_from_state ? from : workload->state;
    event->to_state = workload->state;
    event->reason = einsora_reason_clean(reason);
    event->attempt = workload->attempt;
    event->placed_class = g_strdup(workload->placed_class);
    event->created_at = einsora_timestamp_format(now_us);
    return event;
}

/* The whole timeline, deleted workloads included: history stays. */
GPtrArray *
einsora_service_list_events(EinsoraService *self, const char *tenant_id, const char *workload_id,
                            GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return einsora_store_list_events(self->store, tenant_id, workload_id, error);
}

GPtrArray *
einsora_service_list_events_page(EinsoraService *self, const char *tenant_id,
                                 const char *workload_id, gint64 after_seq, guint limit,
                                 GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (!einsora_uuid_is_valid(workload_id)) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such workload");
        return NULL;
    }
    return einsora_store_list_events_page(self->store, tenant_id, workload_id, after_seq, limit,
                                          error);
}

/* The change feed: the tenant's events after @after_seq, of every
 * workload, deleted ones included (history stays). */
GPtrArray *
einsora_service_list_tenant_events(EinsoraService *self, const char *tenant_id, gint64 after_seq,
                                   guint limit, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    g_return_val_if_fail(tenant_id != NULL, NULL);

    if (after_seq < 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "an event ID is a non-negative integer");
        return NULL;
    }
    return einsora_store_list_tenant_events(self->store, tenant_id, after_seq, limit, error);
}

gboolean
einsora_service_last_event_seq(EinsoraService *self, const char *tenant_id, gint64 *seq,
                               GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(tenant_id != NULL, FALSE);
    return einsora_store_last_event_seq(self->store, tenant_id, seq, error);
}
