#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-access-ticket.h"

G_DEFINE_BOXED_TYPE(EinsoraAccessTicket, einsora_access_ticket, einsora_access_ticket_copy,
                    einsora_access_ticket_free)

EinsoraAccessTicket *
einsora_access_ticket_new(void)
{
    return g_new0(EinsoraAccessTicket, 1);
}

EinsoraAccessTicket *
einsora_access_ticket_copy(const EinsoraAccessTicket *ticket)
{
    EinsoraAccessTicket *copy = g_new0(EinsoraAccessTicket, 1);

    copy->hash = g_strdup(ticket->hash);
    copy->tenant_id = g_strdup(ticket->tenant_id);
    copy->workload_id = g_strdup(ticket->workload_id);
    copy->attempt = ticket->attempt;
    copy->created_by = g_strdup(ticket->created_by);
    copy->created_at = g_strdup(ticket->created_at);
    copy->expires_at = g_strdup(ticket->expires_at);
    return copy;
}

void
einsora_access_ticket_free(EinsoraAccessTicket *ticket)
{
    if (ticket == NULL)
        return;
    g_free(ticket->hash);
    g_free(ticket->tenant_id);
    g_free(ticket->workload_id);
    g_free(ticket->created_by);
    g_free(ticket->created_at);
    g_free(ticket->expires_at);
    g_free(ticket);
}
