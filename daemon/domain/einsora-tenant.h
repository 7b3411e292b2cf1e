/* A tenant: the unit of ownership and quota. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

typedef struct {
    gchar *id;
    gchar *name;
    /* Trusted tenants see free-capacity counts in their reasons. */
    gboolean trusted;
    gchar *created_at;
} EinsoraTenant;

#define EINSORA_TYPE_TENANT (einsora_tenant_get_type())
GType einsora_tenant_get_type(void);

EinsoraTenant *einsora_tenant_new(const char *id, const char *name, gboolean trusted,
                                  const char *created_at);
EinsoraTenant *einsora_tenant_copy(const EinsoraTenant *tenant);
void einsora_tenant_free(EinsoraTenant *tenant);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraTenant, einsora_tenant_free)

G_END_DECLS
