/* The model store through the service: who may add and remove models,
 * and that a model an endpoint serves stays. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

#include "einsora-error.h"

void
einsora_service_set_model_store(EinsoraService *self, EinsoraModelStore *models,
                                const char *owner_tenant_id)
{
    g_return_if_fail(EINSORA_IS_SERVICE(self));
    g_return_if_fail(EINSORA_IS_MODEL_STORE(models) && owner_tenant_id != NULL);
    g_set_object(&self->models, models);
    g_free(self->models_owner);
    self->models_owner = g_strdup(owner_tenant_id);
}

static gboolean
have_store(EinsoraService *self, GError **error)
{
    if (self->models != NULL)
        return TRUE;
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_UNAVAILABLE,
                        "this daemon has no model store");
    return FALSE;
}

/* The files are the daemon's machine's: its owner decides what is there. */
static gboolean
may_change(EinsoraService *self, const EinsoraActor *actor, GError **error)
{
    if (!have_store(self, error))
        return FALSE;
    if (g_strcmp0(actor->tenant_id, self->models_owner) == 0)
        return TRUE;
    g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_FORBIDDEN,
                        "only the tenant that owns this machine adds and removes models");
    return FALSE;
}

GPtrArray *
einsora_service_list_models(EinsoraService *self, const EinsoraActor *actor, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    if (self->models == NULL)
        return g_ptr_array_new_with_free_func((GDestroyNotify)einsora_model_manifest_free);
    return einsora_model_store_list(self->models, error);
}

EinsoraModelManifest *
einsora_service_get_model(EinsoraService *self, const EinsoraActor *actor, const char *name,
                          GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    if (self->models == NULL) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND,
                    "model %s isn't in this installation's model store", name);
        return NULL;
    }
    return einsora_model_store_lookup(self->models, name, error);
}

EinsoraModelImport *
einsora_service_import_model(EinsoraService *self, const EinsoraActor *actor, const char *name,
                             const char *source, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    if (!may_change(self, actor, error))
        return NULL;
    return einsora_model_store_import(self->models, name, source, einsora_service_now(self), error);
}

GPtrArray *
einsora_service_find_local_models(EinsoraService *self, const EinsoraActor *actor, GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    if (!may_change(self, actor, error))
        return NULL;
    return einsora_model_finder_list();
}

EinsoraModelImport *
einsora_service_get_model_import(EinsoraService *self, const EinsoraActor *actor, const char *id,
                                 GError **error)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    /* Another tenant's import is no business of theirs: not found. */
    if (self->models == NULL || g_strcmp0(actor->tenant_id, self->models_owner) != 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "no such import");
        return NULL;
    }
    return einsora_model_store_get_import(self->models, id, error);
}

gboolean
einsora_service_remove_model(EinsoraService *self, const EinsoraActor *actor, const char *name,
                             GError **error)
{
    gint64 users = 0;

    g_return_val_if_fail(EINSORA_IS_SERVICE(self), FALSE);
    if (!may_change(self, actor, error) ||
        !einsora_store_count_workloads_with_model(self->store, name, &users, error))
        return FALSE;
    if (users > 0) {
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_CONFLICT,
                    "model %s is served by %" G_GINT64_FORMAT " endpoint%s; delete %s first", name,
                    users, users == 1 ? "" : "s", users == 1 ? "it" : "them");
        return FALSE;
    }
    return einsora_model_store_remove(self->models, name, error);
}
