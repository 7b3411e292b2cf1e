#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-audit-event.h"

G_DEFINE_BOXED_TYPE(EinsoraAuditEvent, einsora_audit_event, einsora_audit_event_copy,
                    einsora_audit_event_free)

EinsoraAuditEvent *
einsora_audit_event_new(void)
{
    return g_new0(EinsoraAuditEvent, 1);
}

EinsoraAuditEvent *
einsora_audit_event_copy(const EinsoraAuditEvent *event)
{
    EinsoraAuditEvent *copy = g_new0(EinsoraAuditEvent, 1);

    copy->id = g_strdup(event->id);
    copy->tenant_id = g_strdup(event->tenant_id);
    copy->at = g_strdup(event->at);
    copy->actor = g_strdup(event->actor);
    copy->actor_user_id = g_strdup(event->actor_user_id);
    copy->action = g_strdup(event->action);
    copy->target = g_strdup(event->target);
    copy->detail = g_strdup(event->detail);
    return copy;
}

void
einsora_audit_event_free(EinsoraAuditEvent *event)
{
    if (event == NULL)
        return;
    g_free(event->id);
    g_free(event->tenant_id);
    g_free(event->at);
    g_free(event->actor);
    g_free(event->actor_user_id);
    g_free(event->action);
    g_free(event->target);
    g_free(event->detail);
    g_free(event);
}
