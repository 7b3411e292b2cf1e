#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-workload-event.h"

G_DEFINE_BOXED_TYPE(EinsoraWorkloadEvent, einsora_workload_event, einsora_workload_event_copy,
                    einsora_workload_event_free)

EinsoraWorkloadEvent *
einsora_workload_event_new(void)
{
    return g_new0(EinsoraWorkloadEvent, 1);
}

EinsoraWorkloadEvent *
einsora_workload_event_copy(const EinsoraWorkloadEvent *event)
{
    EinsoraWorkloadEvent *copy = g_new0(EinsoraWorkloadEvent, 1);
    *copy = *event;
    copy->id = g_strdup(event->id);
    copy->tenant_id = g_strdup(event->tenant_id);
    copy->workload_id = g_strdup(event->workload_id);
    copy->reason = g_strdup(event->reason);
    copy->placed_class = g_strdup(event->placed_class);
    copy->created_at = g_strdup(event->created_at);
    return copy;
}

void
einsora_workload_event_free(EinsoraWorkloadEvent *event)
{
    if (event == NULL)
        return;
    g_free(event->id);
    g_free(event->tenant_id);
    g_free(event->workload_id);
    g_free(event->reason);
    g_free(event->placed_class);
    g_free(event->created_at);
    g_free(event);
}

/* Notes record decisions that change no state; usage accounting skips them. */
gboolean
einsora_workload_event_is_note(const EinsoraWorkloadEvent *event)
{
    return event->has_from_state && event->from_state == event->to_state;
}
