/* GPU quotas: what a tenant may hold of a class, what it holds, and the
 * check that creating and starting make inside their transaction. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"

gboolean
einsora_service_get_gpu_quota(EinsoraService *self, const char *tenant_id, const char *gpu_class,
                              gint64 *quota, gint64 *held, GError **error)
{
    gint64 sums[EINSORA_WORKLOAD_STATE_COUNT] = {0};

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    g_return_val_if_fail(quota != NULL && held != NULL, FALSE);

    if (!einsora_store_get_quota(self->store, tenant_id, gpu_class, quota, error))
        return FALSE;
    if (!einsora_store_gpus_by_state(self->store, tenant_id, gpu_class, sums, error))
        return FALSE;
    *held = 0;
    for (guint state = 0; state < EINSORA_WORKLOAD_STATE_COUNT; state++) {
        if (einsora_workload_state_holds_quota((EinsoraWorkloadState)state))
            *held += sums[state];
    }
    return TRUE;
}

/* GPUs held plus the request must not exceed the tenant's quota for the
 * class. Runs inside the creating or starting transaction, which holds the
 * store's write lock, so concurrent requests serialize. */
gboolean
einsora_service_check_quota_in_tx(EinsoraService *self, const char *tenant_id,
                                  const char *gpu_class, gint64 requested, GError **error)
{
    gint64 quota = 0;
    gint64 held = 0;

    if (requested <= 0)
        return TRUE;
    if (!einsora_service_get_gpu_quota(self, tenant_id, gpu_class, &quota, &held, error))
        return FALSE;
    /* No quota row: nobody gave this tenant the class, and the person
     * learns who can. */
    if (quota == 0) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED,
                    "quota exceeded for %s: your tenant has no quota of %s GPUs; a Lab admin "
                    "can give it one (einsora admin quota set)",
                    gpu_class, gpu_class);
        return FALSE;
    }
    if (held + requested > quota) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_QUOTA_EXCEEDED,
                    "quota exceeded for %s: %" G_GINT64_FORMAT " GPU(s) held, %" G_GINT64_FORMAT
                    " requested, quota %" G_GINT64_FORMAT "; a Lab admin can raise it",
                    gpu_class, held, requested, quota);
        return FALSE;
    }
    return TRUE;
}
