/* Access tickets. (not written yet). */
#define G_LOG_DOMAIN "einsora-store"

#include "einsora-pg-store-private.h"

#include "einsora-error.h"

gboolean
einsora_pg_store_insert_access_ticket(EinsoraStore *store, const EinsoraAccessTicket *ticket,
                                      GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return FALSE;
}

EinsoraAccessTicket *
einsora_pg_store_take_access_ticket(EinsoraStore *store, const char *ticket_sha256, const char *now,
                                    GError **error)
{
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "not written yet");
    return NULL;
}
