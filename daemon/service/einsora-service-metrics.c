/* /metrics through the service: who may read the machine's metrics, and
 * the workloads counted from the store at each scrape. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"

void
einsora_service_set_metrics(EinsoraService *self, EinsoraMetrics *metrics,
                            const char *reader_tenant_id)
{
    g_return_if_fail(EINSORA_IS_SERVICE(self));
    g_return_if_fail(EINSORA_IS_METRICS(metrics) && reader_tenant_id != NULL);
    g_set_object(&self->metrics, metrics);
    g_free(self->metrics_reader);
    self->metrics_reader = g_strdup(reader_tenant_id);
    self->workloads_gauge = einsora_metrics_gauge(
        metrics, "einsora_workloads",
        "Workloads of every tenant by kind and state (deleted ones left out), counted from the "
        "store at each scrape.",
        (const char *const[]){"kind", "state", NULL});
}

/* Every kind and state that isn't deleted, zeros included, so a series
 * never vanishes when its last workload moves on. */
static gboolean
count_workloads(EinsoraService *self, GError **error)
{
    gint64 counts[EINSORA_WORKLOAD_KIND_COUNT][EINSORA_WORKLOAD_STATE_COUNT];

    if (!einsora_store_count_workloads(self->store, counts, error))
        return FALSE;
    for (guint kind = 0; kind < EINSORA_WORKLOAD_KIND_COUNT; kind++) {
        for (guint state = 0; state < EINSORA_WORKLOAD_STATE_COUNT; state++) {
            if (state == EINSORA_WORKLOAD_STATE_DELETED)
                continue;
            einsora_metric_set(self->workloads_gauge,
                               (const char *const[]){einsora_workload_kind_to_string(kind),
                                                     einsora_workload_state_to_string(state), NULL},
                               (double)counts[kind][state]);
        }
    }
    return TRUE;
}

GString *
einsora_service_render_metrics(EinsoraService *self, const EinsoraActor *actor, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    if (self->metrics == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                            "this daemon keeps no metrics");
        return NULL;
    }
    /* Machine-wide, every tenant's workloads counted: the machine's
     * owner reads them, nobody else. */
    if (actor != NULL && g_strcmp0(actor->tenant_id, self->metrics_reader) != 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN,
                            "only the tenant that owns this machine reads its metrics");
        return NULL;
    }
    if (!count_workloads(self, error))
        return NULL;
    return einsora_metrics_render(self->metrics);
}
