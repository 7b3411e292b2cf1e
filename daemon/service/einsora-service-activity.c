/* Activity through the access proxy, for idle auto-stop (docs/adr/0044):
 * in memory only, one number per workload. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

void
einsora_service_set_default_idle_timeout(EinsoraService *self, gint64 seconds)
{
    g_return_if_fail(EINSORA_IS_SERVICE(self));
    self->default_idle_timeout_s = CLAMP(seconds, 0, EINSORA_IDLE_TIMEOUT_MAX_S);
}

void
einsora_service_note_activity(EinsoraService *self, const char *workload_id)
{
    gint64 *when;

    g_return_if_fail(EINSORA_IS_SERVICE(self));
    if (self->activity == NULL)
        self->activity = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    when = g_hash_table_lookup(self->activity, workload_id);
    if (when == NULL) {
        when = g_new0(gint64, 1);
        g_hash_table_insert(self->activity, g_strdup(workload_id), when);
    }
    *when = einsora_service_now(self);
}

gint64
einsora_service_last_activity(EinsoraService *self, const char *workload_id)
{
    const gint64 *when;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), 0);
    when = self->activity != NULL ? g_hash_table_lookup(self->activity, workload_id) : NULL;
    return when != NULL ? *when : 0;
}
