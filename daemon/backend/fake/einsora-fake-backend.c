#define G_LOG_DOMAIN "einsora-backend"

#include "einsora-fake-backend.h"

#include <gio/gio.h>

typedef struct {
    EinsoraWorkloadSpec *spec;
    EinsoraRuntimeStatus status;
    const char *reason;
    gint64 attempt;
    gint64 busy_kernels;
    gint64 last_active_us;
} FakeWorkload;

struct _EinsoraFakeBackend {
    GObject parent_instance;
    GHashTable *units;     /* class -> units */
    GPtrArray *machines;   /* EinsoraMachineCapacity, or NULL */
    GHashTable *workloads; /* id -> FakeWorkload */
    gboolean settling;
    gboolean auto_complete;
    gboolean fail_next[EINSORA_FAKE_CALL_COUNT];
    guint calls[EINSORA_FAKE_CALL_COUNT];
};

static void einsora_fake_backend_iface_init(EinsoraBackendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraFakeBackend, einsora_fake_backend, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_BACKEND,
                                                    einsora_fake_backend_iface_init))

static void
fake_workload_free(FakeWorkload *workload)
{
    einsora_workload_spec_free(workload->spec);
    g_free(workload);
}

static void
einsora_fake_backend_finalize(GObject *object)
{
    EinsoraFakeBackend *self = EINSORA_FAKE_BACKEND(object);

    g_hash_table_unref(self->units);
    g_clear_pointer(&self->machines, g_ptr_array_unref);
    g_hash_table_unref(self->workloads);
    G_OBJECT_CLASS(einsora_fake_backend_parent_class)->finalize(object);
}

static void
einsora_fake_backend_class_init(EinsoraFakeBackendClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_fake_backend_finalize;
}

static void
einsora_fake_backend_init(EinsoraFakeBackend *self)
{
    self->units = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    self->workloads =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)fake_workload_free);
    self->auto_complete = TRUE;
}

EinsoraFakeBackend *
einsora_fake_backend_new(void)
{
    return g_object_new(EINSORA_TYPE_FAKE_BACKEND, NULL);
}

/* Counts the call and says whether it should fail as injected. */
static gboolean
enter(EinsoraFakeBackend *self, EinsoraFakeCall call, GError **error)
{
    self->calls[call]++;
    if (!self->fail_next[call])
        return TRUE;
    self->fail_next[call] = FALSE;
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_HOST_UNREACHABLE,
                        "fake runtime unreachable (injected by a test)");
    return FALSE;
}

/* Whether the runtime already did this for this attempt: asking again
 * changes nothing, as on a real runtime. */
static gboolean
already(EinsoraFakeBackend *self, const EinsoraWorkloadSpec *spec, EinsoraRuntimeStatus done)
{
    FakeWorkload *workload = g_hash_table_lookup(self->workloads, spec->workload_id);
    return workload != NULL && workload->status == done && workload->attempt == spec->attempt;
}

static FakeWorkload *
lookup_or_add(EinsoraFakeBackend *self, const EinsoraWorkloadSpec *spec)
{
    FakeWorkload *workload = g_hash_table_lookup(self->workloads, spec->workload_id);

    if (workload == NULL) {
        workload = g_new0(FakeWorkload, 1);
        workload->status = EINSORA_RUNTIME_ABSENT;
        g_hash_table_insert(self->workloads, g_strdup(spec->workload_id), workload);
    }
    einsora_workload_spec_free(workload->spec);
    workload->spec = einsora_workload_spec_copy(spec);
    workload->attempt = spec->attempt;
    return workload;
}

static EinsoraCapacity *
fake_capacity(EinsoraBackend *backend, const char *region, GError **error)
{
    EinsoraFakeBackend *self = EINSORA_FAKE_BACKEND(backend);
    EinsoraCapacity *capacity;
    GHashTableIter iter;
    gpointer key, value;

    if (!enter(self, EINSORA_FAKE_CALL_CAPACITY, error))
        return NULL;
    if (self->machines != NULL) {
        capacity = einsora_capacity_new_machines();
        for (guint i = 0; i < self->machines->len; i++) {
            const EinsoraMachineCapacity *source = g_ptr_array_index(self->machines, i);
            EinsoraMachineCapacity *copy = einsora_machine_capacity_new(source->machine);
            copy->online = source->online;
            copy->cpus = source->cpus;
            copy->memory_mib = source->memory_mib;
            g_strfreev(copy->drivers);
            copy->drivers = g_strdupv(source->drivers);
            g_hash_table_iter_init(&iter, source->devices);
            while (g_hash_table_iter_next(&iter, &key, &value))
                g_hash_table_insert(copy->devices, g_strdup(key), value);
            g_hash_table_iter_init(&iter, source->gpu_masks);
            while (g_hash_table_iter_next(&iter, &key, &value))
                g_hash_table_insert(copy->gpu_masks, g_strdup(key),
                                    g_memdup2(value, sizeof(guint64)));
            if (g_strcmp0(source->machine->region, region) == 0)
                g_ptr_array_add(capacity->machines, copy);
            else
                einsora_machine_capacity_free(copy);
        }
    } else {
        capacity = einsora_capacity_new_units();
        g_hash_table_iter_init(&iter, self->units);
        while (g_hash_table_iter_next(&iter, &key, &value))
            g_hash_table_insert(capacity->units, g_strdup(key), value);
    }
    capacity->settling = self->settling;
    return capacity;
}

static gboolean
fake_run(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec, GError **error)
{
    EinsoraFakeBackend *self = EINSORA_FAKE_BACKEND(backend);
    FakeWorkload *workload;

    if (!enter(self, EINSORA_FAKE_CALL_RUN, error))
        return FALSE;
    if (already(self, spec, EINSORA_RUNTIME_READY))
        return TRUE;
    workload = lookup_or_add(self, spec);
    workload->status = self->auto_complete ? EINSORA_RUNTIME_READY : EINSORA_RUNTIME_PROGRESSING;
    workload->reason = NULL;
    return TRUE;
}

static gboolean
fake_park(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec, GError **error)
{
    EinsoraFakeBackend *self = EINSORA_FAKE_BACKEND(backend);
    FakeWorkload *workload;

    if (!enter(self, EINSORA_FAKE_CALL_PARK, error))
        return FALSE;
    if (already(self, spec, EINSORA_RUNTIME_PARKED))
        return TRUE;
    workload = lookup_or_add(self, spec);
    workload->status = self->auto_complete ? EINSORA_RUNTIME_PARKED : EINSORA_RUNTIME_PROGRESSING;
    workload->reason = NULL;
    return TRUE;
}

static gboolean
fake_observe(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec,
             EinsoraObservation *observation, GError **error)
{
    EinsoraFakeBackend *self = EINSORA_FAKE_BACKEND(backend);
    FakeWorkload *workload;

    if (!enter(self, EINSORA_FAKE_CALL_OBSERVE, error))
        return FALSE;
    workload = g_hash_table_lookup(self->workloads, spec->workload_id);
    observation->status = workload != NULL ? workload->status : EINSORA_RUNTIME_ABSENT;
    observation->attempt = workload != NULL ? workload->attempt : 0;
    observation->reason = workload != NULL ? workload->reason : NULL;
    if (workload != NULL && workload->status == EINSORA_RUNTIME_READY) {
        observation->busy_kernels = workload->busy_kernels;
        observation->last_active_us = workload->last_active_us;
    }
    return TRUE;
}

static gboolean
fake_remove(EinsoraBackend *backend, const EinsoraWorkloadSpec *spec, GError **error)
{
    EinsoraFakeBackend *self = EINSORA_FAKE_BACKEND(backend);
    FakeWorkload *workload;

    if (!enter(self, EINSORA_FAKE_CALL_REMOVE, error))
        return FALSE;
    if (already(self, spec, EINSORA_RUNTIME_REMOVED))
        return TRUE;
    workload = lookup_or_add(self, spec);
    workload->status = self->auto_complete ? EINSORA_RUNTIME_REMOVED : EINSORA_RUNTIME_PROGRESSING;
    workload->reason = NULL;
    return TRUE;
}

static void
einsora_fake_backend_iface_init(EinsoraBackendInterface *iface)
{
    iface->capacity = fake_capacity;
    iface->run = fake_run;
    iface->park = fake_park;
    iface->observe = fake_observe;
    iface->remove = fake_remove;
}

void
einsora_fake_backend_set_units(EinsoraFakeBackend *self, const char *gpu_class, gint64 units)
{
    g_hash_table_insert(self->units, g_strdup(gpu_class), GINT_TO_POINTER((gint)units));
}

void
einsora_fake_backend_add_machine(EinsoraFakeBackend *self, EinsoraMachineCapacity *capacity)
{
    if (self->machines == NULL)
        self->machines =
            g_ptr_array_new_with_free_func((GDestroyNotify)einsora_machine_capacity_free);
    g_ptr_array_add(self->machines, capacity);
}

void
einsora_fake_backend_set_settling(EinsoraFakeBackend *self, gboolean settling)
{
    self->settling = settling;
}

void
einsora_fake_backend_set_auto_complete(EinsoraFakeBackend *self, gboolean auto_complete)
{
    self->auto_complete = auto_complete;
}

void
einsora_fake_backend_fail_next(EinsoraFakeBackend *self, EinsoraFakeCall call)
{
    self->fail_next[call] = TRUE;
}

void
einsora_fake_backend_set_status(EinsoraFakeBackend *self, const char *workload_id,
                                EinsoraRuntimeStatus status, const char *reason)
{
    FakeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    if (workload == NULL) {
        workload = g_new0(FakeWorkload, 1);
        g_hash_table_insert(self->workloads, g_strdup(workload_id), workload);
    }
    workload->status = status;
    workload->reason = reason;
}

void
einsora_fake_backend_set_activity(EinsoraFakeBackend *self, const char *workload_id,
                                  gint64 busy_kernels, gint64 last_active_us)
{
    FakeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);

    g_return_if_fail(workload != NULL);
    workload->busy_kernels = busy_kernels;
    workload->last_active_us = last_active_us;
}

EinsoraRuntimeStatus
einsora_fake_backend_get_status(EinsoraFakeBackend *self, const char *workload_id)
{
    FakeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);
    return workload != NULL ? workload->status : EINSORA_RUNTIME_ABSENT;
}

guint
einsora_fake_backend_count_calls(EinsoraFakeBackend *self, EinsoraFakeCall call)
{
    return self->calls[call];
}

const EinsoraWorkloadSpec *
einsora_fake_backend_get_spec(EinsoraFakeBackend *self, const char *workload_id)
{
    FakeWorkload *workload = g_hash_table_lookup(self->workloads, workload_id);
    return workload != NULL ? workload->spec : NULL;
}
