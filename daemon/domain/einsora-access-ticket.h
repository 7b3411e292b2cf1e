/* A one-time ticket that opens a running notebook in a browser through the
 * access proxy. Only the SHA-256 of its secret is kept; the secret is in
 * the link the API returns, once. Valid for a minute, taken at most once. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *hash; /* lowercase hex SHA-256 of the secret */
    gchar *tenant_id;
    gchar *workload_id;
    gint64 attempt;    /* the workload's attempt when it was granted */
    gchar *created_by; /* who asked (the actor's subject), for logs */
    gchar *created_at;
    gchar *expires_at;
} EinsoraAccessTicket;

#define EINSORA_TYPE_ACCESS_TICKET (einsora_access_ticket_get_type())
GType einsora_access_ticket_get_type(void);

EinsoraAccessTicket *einsora_access_ticket_new(void);
EinsoraAccessTicket *einsora_access_ticket_copy(const EinsoraAccessTicket *ticket);
void einsora_access_ticket_free(EinsoraAccessTicket *ticket);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraAccessTicket, einsora_access_ticket_free)

G_END_DECLS
