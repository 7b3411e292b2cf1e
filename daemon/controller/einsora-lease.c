#define G_LOG_DOMAIN "einsora-controller"

#include "einsora-lease.h"

#include "einsora-uuid.h"

struct _EinsoraLease {
    GObject parent_instance;
    EinsoraStore *store;
    gchar *name;
    gchar *holder;
    gint64 duration_us;
    EinsoraNowFunc now;
    gpointer now_data;
    gint64 renewed_us;    /* when it was last renewed; 0 when not held */
    gboolean standing_by; /* found another holder, and said so */
};

G_DEFINE_FINAL_TYPE(EinsoraLease, einsora_lease, G_TYPE_OBJECT)

static void
einsora_lease_finalize(GObject *object)
{
    EinsoraLease *self = EINSORA_LEASE(object);

    g_clear_object(&self->store);
    g_free(self->name);
    g_free(self->holder);
    G_OBJECT_CLASS(einsora_lease_parent_class)->finalize(object);
}

static void
einsora_lease_class_init(EinsoraLeaseClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_lease_finalize;
}

static void
einsora_lease_init(EinsoraLease *self)
{
}

EinsoraLease *
einsora_lease_new(EinsoraStore *store, const char *name, gint64 duration_us, EinsoraNowFunc now,
                  gpointer now_data)
{
    EinsoraLease *self = g_object_new(EINSORA_TYPE_LEASE, NULL);

    self->store = g_object_ref(store);
    self->name = g_strdup(name);
    /* Each process is its own holder, even on one machine. */
    self->holder = einsora_uuid_v7_new(now(now_data) / 1000);
    self->duration_us = MAX(duration_us, EINSORA_LEASE_MIN_DURATION_US);
    self->now = now;
    self->now_data = now_data;
    return self;
}

const char *
einsora_lease_get_holder(EinsoraLease *self)
{
    return self->holder;
}

void
einsora_lease_set_holder(EinsoraLease *self, const char *holder)
{
    g_free(self->holder);
    self->holder = g_strdup(holder);
    self->renewed_us = 0;
}

gint64
einsora_lease_get_duration(EinsoraLease *self)
{
    return self->duration_us;
}

gboolean
einsora_lease_hold(EinsoraLease *self, GError **error)
{
    gint64 now_us = self->now(self->now_data);
    g_autofree gchar *now = einsora_timestamp_format(now_us);
    g_autofree gchar *until = einsora_timestamp_format(now_us + self->duration_us);
    gboolean held = FALSE;

    if (!einsora_store_acquire_lease(self->store, self->name, self->holder, now, until, &held,
                                     error))
        return FALSE;
    if (held && self->renewed_us == 0)
        g_message("%s: leading", self->name);
    /* Once per turn: a standby tries at every pass. */
    if (!held && !self->standing_by)
        g_message("%s: another controller holds it now; standing by", self->name);
    self->standing_by = !held;
    self->renewed_us = held ? now_us : 0;
    return held;
}

gboolean
einsora_lease_is_held(EinsoraLease *self)
{
    if (self->renewed_us == 0)
        return FALSE;
    return self->now(self->now_data) - self->renewed_us < self->duration_us * 2 / 3;
}

void
einsora_lease_release(EinsoraLease *self)
{
    g_autoptr(GError) error = NULL;

    if (self->renewed_us == 0)
        return;
    self->renewed_us = 0;
    if (!einsora_store_release_lease(self->store, self->name, self->holder, &error))
        g_message("%s: releasing failed; it expires by itself: %s", self->name, error->message);
}
