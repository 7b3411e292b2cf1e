#define G_LOG_DOMAIN "einsora-agent"

#include "einsora-access-source.h"

G_DEFINE_INTERFACE(EinsoraAccessSource, einsora_access_source, G_TYPE_OBJECT)

static void
einsora_access_source_default_init(EinsoraAccessSourceInterface *iface)
{
}

gboolean
einsora_access_source_lookup(EinsoraAccessSource *self, const char *workload_id, gint64 *attempt,
                             gchar **socket_path, gchar **token)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_SOURCE(self), FALSE);
    g_return_val_if_fail(workload_id != NULL && attempt != NULL, FALSE);
    g_return_val_if_fail(socket_path != NULL && token != NULL, FALSE);
    *socket_path = NULL;
    *token = NULL;
    return EINSORA_ACCESS_SOURCE_GET_IFACE(self)->lookup(self, workload_id, attempt, socket_path,
                                                         token);
}

gchar *
einsora_access_source_find_log(EinsoraAccessSource *self, const char *workload_id, gint64 attempt,
                               gint64 *found_attempt, GError **error)
{
    EinsoraAccessSourceInterface *iface;

    g_return_val_if_fail(EINSORA_IS_ACCESS_SOURCE(self), NULL);
    g_return_val_if_fail(workload_id != NULL && found_attempt != NULL, NULL);
    iface = EINSORA_ACCESS_SOURCE_GET_IFACE(self);
    *found_attempt = 0;
    if (iface->find_log == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                            "its machine's output can't be read from here");
        return NULL;
    }
    return iface->find_log(self, workload_id, attempt, found_attempt, error);
}
