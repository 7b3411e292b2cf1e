#define G_LOG_DOMAIN "einsora-metering"

#include "einsora-meter.h"

#include "einsora-metered-interval.h"
#include "einsora-uuid.h"

struct _EinsoraMeter {
    GObject parent_instance;
    EinsoraStore *store;
    EinsoraCatalog *catalog;
    EinsoraNowFunc now;
    gpointer now_data;
    guint timer_id;
    guint64 passes;
    /* The last pass failed: said once, not at every pass. */
    gboolean failing;
};

G_DEFINE_FINAL_TYPE(EinsoraMeter, einsora_meter, G_TYPE_OBJECT)

static void
einsora_meter_finalize(GObject *object)
{
    EinsoraMeter *self = EINSORA_METER(object);

    einsora_meter_stop(self);
    g_clear_object(&self->store);
    g_clear_object(&self->catalog);
    G_OBJECT_CLASS(einsora_meter_parent_class)->finalize(object);
}

static void
einsora_meter_class_init(EinsoraMeterClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_meter_finalize;
}

static void
einsora_meter_init(EinsoraMeter *self)
{
}

EinsoraMeter *
einsora_meter_new(EinsoraStore *store, EinsoraCatalog *catalog, EinsoraNowFunc now,
                  gpointer now_data)
{
    EinsoraMeter *self;

    g_return_val_if_fail(EINSORA_IS_STORE(store), NULL);
    g_return_val_if_fail(EINSORA_IS_CATALOG(catalog), NULL);

    self = g_object_new(EINSORA_TYPE_METER, NULL);
    self->store = g_object_ref(store);
    self->catalog = g_object_ref(catalog);
    self->now = now != NULL ? now : einsora_now_real;
    self->now_data = now_data;
    return self;
}

/* A class the catalog no longer has counts no devices: its seconds still
 * count. */
static gint64
class_devices(const char *gpu_class, gpointer user_data)
{
    const EinsoraComputeClass *klass = einsora_catalog_lookup_class(user_data, gpu_class);

    return klass != NULL ? klass->devices : 0;
}

typedef struct {
    EinsoraMeter *self;
    gint64 now_us;
    guint metered; /* workloads re-metered */
} PassContext;

/* Workload ID -> workload: those with unread events, and those whose
 * interval is still open. */
static GHashTable *
workloads_to_meter(EinsoraStore *store, gint64 after_seq, GError **error)
{
    g_autoptr(GHashTable) found =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)einsora_workload_free);
    g_autoptr(GPtrArray) changed = NULL;

    changed = einsora_store_list_workloads_with_events_after(store, after_seq, error);
    if (changed == NULL)
        return NULL;
    g_ptr_array_set_free_func(changed, NULL);
    for (guint i = 0; i < changed->len; i++) {
        EinsoraWorkload *workload = g_ptr_array_index(changed, i);
        g_hash_table_replace(found, workload->id, workload);
    }
    for (guint s = 0; s < EINSORA_WORKLOAD_STATE_COUNT; s++) {
        g_autoptr(GPtrArray) open = NULL;

        if (!einsora_workload_state_metered((EinsoraWorkloadState)s))
            continue;
        open = einsora_store_list_workloads_in_state(store, (EinsoraWorkloadState)s, error);
        if (open == NULL)
            return NULL;
        g_ptr_array_set_free_func(open, NULL);
        for (guint i = 0; i < open->len; i++) {
            EinsoraWorkload *workload = g_ptr_array_index(open, i);
            if (g_hash_table_contains(found, workload->id))
                einsora_workload_free(workload);
            else
                g_hash_table_insert(found, workload->id, workload);
        }
    }
    return g_steal_pointer(&found);
}

static gboolean
meter_workload(PassContext *ctx, const EinsoraWorkload *workload, gint64 *last_seq, GError **error)
{
    EinsoraStore *store = ctx->self->store;
    g_autoptr(GPtrArray) events = NULL;
    g_autoptr(GPtrArray) intervals = NULL;
    g_autoptr(GPtrArray) records = NULL;
    g_autofree gchar *now = einsora_timestamp_format(ctx->now_us);

    events = einsora_store_list_events(store, workload->tenant_id, workload->id, error);
    if (events == NULL)
        return FALSE;
    if (events->len > 0)
        *last_seq = MAX(*last_seq,
                        ((EinsoraWorkloadEvent *)g_ptr_array_index(events, events->len - 1))->seq);
    intervals = einsora_metered_intervals_from_events(events, einsora_workload_get_class(workload),
                                                      ctx->now_us, error);
    if (intervals == NULL)
        return FALSE;
    records =
        einsora_metered_intervals_to_hours(workload, intervals, class_devices, ctx->self->catalog);
    for (guint i = 0; i < records->len; i++) {
        EinsoraUsageRecord *record = g_ptr_array_index(records, i);
        /* Taken only by a record new to the store; a stored one keeps its
         * own. */
        record->id = einsora_uuid_v7_new(ctx->now_us / 1000);
        record->created_at = g_strdup(now);
    }
    return einsora_store_replace_usage_records(store, workload->tenant_id, workload->id, records,
                                               error);
}

static gboolean
pass_tx(EinsoraStore *store, gpointer user_data, GError **error)
{
    PassContext *ctx = user_data;
    g_autoptr(GHashTable) workloads = NULL;
    g_autofree gchar *now = einsora_timestamp_format(ctx->now_us);
    gint64 cursor = 0;
    gint64 last_seq;
    GHashTableIter iter;
    gpointer value;

    if (!einsora_store_get_metering_cursor(store, EINSORA_METER_CURSOR, &cursor, error))
        return FALSE;
    workloads = workloads_to_meter(store, cursor, error);
    if (workloads == NULL)
        return FALSE;
    /* Every event after the cursor is some listed workload's, and each
     * is read whole: the highest seq read is where the timeline stands. */
    last_seq = cursor;
    g_hash_table_iter_init(&iter, workloads);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        if (!meter_workload(ctx, value, &last_seq, error))
            return FALSE;
        ctx->metered++;
    }
    if (last_seq == cursor)
        return TRUE;
    return einsora_store_set_metering_cursor(store, EINSORA_METER_CURSOR, last_seq, now, error);
}

gboolean
einsora_meter_run_once(EinsoraMeter *self, GError **error)
{
    PassContext ctx = {self, self->now(self->now_data), 0};

    g_return_val_if_fail(EINSORA_IS_METER(self), FALSE);

    if (!einsora_store_in_transaction(self->store, pass_tx, &ctx, error)) {
        g_prefix_error(error, "metering: ");
        return FALSE;
    }
    self->passes++;
    g_debug("metering pass: %u workload(s) re-metered", ctx.metered);
    return TRUE;
}

static void
tick(EinsoraMeter *self)
{
    g_autoptr(GError) error = NULL;

    if (einsora_meter_run_once(self, &error)) {
        if (self->failing)
            g_message("metering: passes succeed again");
        self->failing = FALSE;
        return;
    }
    if (!self->failing)
        g_warning("%s; trying again at the next pass", error->message);
    self->failing = TRUE;
}

static gboolean
on_tick(gpointer user_data)
{
    tick(user_data);
    return G_SOURCE_CONTINUE;
}

void
einsora_meter_start(EinsoraMeter *self, gint64 interval_us)
{
    g_return_if_fail(EINSORA_IS_METER(self));
    g_return_if_fail(interval_us > 0);

    einsora_meter_stop(self);
    tick(self);
    self->timer_id = g_timeout_add((guint)MAX(interval_us / 1000, 1), on_tick, self);
}

void
einsora_meter_stop(EinsoraMeter *self)
{
    g_return_if_fail(EINSORA_IS_METER(self));
    g_clear_handle_id(&self->timer_id, g_source_remove);
}

guint64
einsora_meter_count_passes(EinsoraMeter *self)
{
    g_return_val_if_fail(EINSORA_IS_METER(self), 0);
    return self->passes;
}
