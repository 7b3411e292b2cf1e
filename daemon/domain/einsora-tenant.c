#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-tenant.h"

G_DEFINE_BOXED_TYPE(EinsoraTenant, einsora_tenant, einsora_tenant_copy, einsora_tenant_free)

EinsoraTenant *
einsora_tenant_new(const char *id, const char *name, gboolean trusted, const char *created_at)
{
    EinsoraTenant *tenant = g_new0(EinsoraTenant, 1);
    tenant->id = g_strdup(id);
    tenant->name = g_strdup(name);
    tenant->trusted = trusted;
    tenant->created_at = g_strdup(created_at);
    return tenant;
}

EinsoraTenant *
einsora_tenant_copy(const EinsoraTenant *tenant)
{
    return einsora_tenant_new(tenant->id, tenant->name, tenant->trusted, tenant->created_at);
}

void
einsora_tenant_free(EinsoraTenant *tenant)
{
    if (tenant == NULL)
        return;
    g_free(tenant->id);
    g_free(tenant->name);
    g_free(tenant->created_at);
    g_free(tenant);
}
