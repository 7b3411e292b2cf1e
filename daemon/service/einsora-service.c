/* EinsoraService itself: its lifecycle, the "events-added" signal, the
 * injected clock and the readiness check. The operations live in the
 * einsora-service-*.c files, one per concern; einsora-service-private.h
 * holds what they share. */
#define G_LOG_DOMAIN "einsora-service"

#include "einsora-service-private.h"

G_DEFINE_FINAL_TYPE(EinsoraService, einsora_service, G_TYPE_OBJECT)

enum {
    SIGNAL_EVENTS_ADDED,
    SIGNAL_INTENT_CHANGED,
    N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void
einsora_service_finalize(GObject *object)
{
    EinsoraService *self = EINSORA_SERVICE(object);

    /* An open group dies uncommitted, as it would in a crash. */
    if (self->group_tenants != NULL)
        einsora_service_group_rollback(self);
    g_clear_object(&self->store);
    g_clear_object(&self->catalog);
    g_clear_object(&self->models);
    g_clear_object(&self->logs);
    g_clear_pointer(&self->activity, g_hash_table_unref);
    g_free(self->models_owner);
    g_clear_object(&self->metrics);
    g_free(self->metrics_reader);
    G_OBJECT_CLASS(einsora_service_parent_class)->finalize(object);
}

static void
einsora_service_class_init(EinsoraServiceClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_service_finalize;

    /**
     * EinsoraService::events-added:
     * @tenant_id: (nullable): whose timeline grew; NULL: any tenant's may
     * have (another process's, while this one wasn't listening)
     *
     * Emitted after a transaction that appended workload events has
     * committed (never from inside one, never after a rollback), so a
     * handler may read the store at once. It says only whose; readers ask
     * the store for what came after the last seq they saw.
     */
    signals[SIGNAL_EVENTS_ADDED] =
        g_signal_new("events-added", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, G_TYPE_STRING);

    /**
     * EinsoraService::intent-changed:
     * @workload_id: the workload a user created, started, stopped or
     * deleted
     *
     * Emitted after the transaction has committed, so that whoever
     * reconciles intent with the runtime (the controller) can act now
     * rather than on its next pass.
     */
    signals[SIGNAL_INTENT_CHANGED] =
        g_signal_new("intent-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                     NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

/* Called once the transaction that appended to @tenant_id's timeline has
 * committed. */
void
einsora_service_events_added(EinsoraService *self, const char *tenant_id)
{
    g_signal_emit(self, signals[SIGNAL_EVENTS_ADDED], 0, tenant_id);
}

void
einsora_service_events_added_elsewhere(EinsoraService *self, const char *tenant_id)
{
    g_return_if_fail(EINSORA_IS_SERVICE(self));

    einsora_service_events_added(self, tenant_id);
}

void
einsora_service_intent_changed(EinsoraService *self, const char *workload_id)
{
    g_signal_emit(self, signals[SIGNAL_INTENT_CHANGED], 0, workload_id);
}

static void
einsora_service_init(EinsoraService *self)
{
}

EinsoraService *
einsora_service_new(EinsoraStore *store, EinsoraCatalog *catalog, EinsoraNowFunc now,
                    gpointer now_data)
{
    EinsoraService *self;

    g_return_val_if_fail(EINSORA_IS_STORE(store), NULL);
    g_return_val_if_fail(EINSORA_IS_CATALOG(catalog), NULL);
    g_return_val_if_fail(now != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_SERVICE, NULL);
    self->store = g_object_ref(store);
    self->catalog = g_object_ref(catalog);
    self->now = now;
    self->now_data = now_data;
    return self;
}

EinsoraCatalog *
einsora_service_get_catalog(EinsoraService *self)
{
    g_return_val_if_fail(EINSORA_IS_SERVICE(self), NULL);
    return self->catalog;
}

gint64
einsora_service_now(EinsoraService *self)
{
    return self->now(self->now_data);
}

gboolean
einsora_service_check_ready(EinsoraService *self, GError **error)
{
    return einsora_store_check_ready(self->store, error);
}
