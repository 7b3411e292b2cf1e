#define G_LOG_DOMAIN "einsora-auth"

#include "einsora-login-throttle.h"

/* What is remembered of one key. */
typedef struct {
    guint failures;  /* in a row, since the last success */
    guint in_flight; /* attempts started and not yet ended */
    gint64 last_failure_us;
    gint64 last_seen_us; /* the last attempt that started or ended */
} Record;

struct _EinsoraLoginThrottle {
    GObject parent_instance;
    EinsoraLoginThrottleRule rule;
    EinsoraNowFunc now;
    gpointer now_data;
    GHashTable *records; /* key -> Record */
};

G_DEFINE_FINAL_TYPE(EinsoraLoginThrottle, einsora_login_throttle, G_TYPE_OBJECT)

static void
einsora_login_throttle_finalize(GObject *object)
{
    EinsoraLoginThrottle *self = EINSORA_LOGIN_THROTTLE(object);

    g_clear_pointer(&self->records, g_hash_table_unref);
    G_OBJECT_CLASS(einsora_login_throttle_parent_class)->finalize(object);
}

static void
einsora_login_throttle_class_init(EinsoraLoginThrottleClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_login_throttle_finalize;
}

static void
einsora_login_throttle_init(EinsoraLoginThrottle *self)
{
    self->records = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

EinsoraLoginThrottle *
einsora_login_throttle_new(const EinsoraLoginThrottleRule *rule, EinsoraNowFunc now,
                           gpointer now_data)
{
    EinsoraLoginThrottle *self;

    g_return_val_if_fail(rule != NULL, NULL);
    g_return_val_if_fail(rule->first_delay_us > 0 && rule->max_delay_us >= rule->first_delay_us,
                         NULL);
    g_return_val_if_fail(rule->forget_after_us >= rule->max_delay_us, NULL);
    g_return_val_if_fail(rule->max_keys > 0, NULL);
    g_return_val_if_fail(now != NULL, NULL);

    self = g_object_new(EINSORA_TYPE_LOGIN_THROTTLE, NULL);
    self->rule = *rule;
    self->now = now;
    self->now_data = now_data;
    return self;
}

/* The wait after @failures in a row: none within the free allowance,
 * then the first delay, doubled for each failure after it, capped. */
static gint64
delay_after(const EinsoraLoginThrottleRule *rule, guint failures)
{
    gint64 delay = rule->first_delay_us;

    if (failures < rule->free_failures)
        return 0;
    for (guint i = rule->free_failures; i < failures && delay < rule->max_delay_us; i++)
        delay *= 2;
    return MIN(delay, rule->max_delay_us);
}

static gboolean
is_forgotten(const EinsoraLoginThrottleRule *rule, const Record *record, gint64 now_us)
{
    return record->in_flight == 0 && now_us - record->last_seen_us >= rule->forget_after_us;
}

/* Keeps the table bounded: quiet keys go first, then, if it is still
 * full, the one seen longest ago. Keys with an attempt running stay, so
 * their outcome is not lost; those are bounded by the connections. */
static void
make_room(EinsoraLoginThrottle *self, gint64 now_us)
{
    GHashTableIter iter;
    gpointer key;
    gpointer value;
    const char *oldest = NULL;
    gint64 oldest_us = G_MAXINT64;

    if (g_hash_table_size(self->records) < self->rule.max_keys)
        return;
    g_hash_table_iter_init(&iter, self->records);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        if (is_forgotten(&self->rule, value, now_us))
            g_hash_table_iter_remove(&iter);
    }
    if (g_hash_table_size(self->records) < self->rule.max_keys)
        return;
    g_hash_table_iter_init(&iter, self->records);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        Record *record = value;
        if (record->in_flight == 0 && record->last_seen_us < oldest_us) {
            oldest_us = record->last_seen_us;
            oldest = key;
        }
    }
    if (oldest != NULL)
        g_hash_table_remove(self->records, oldest);
}

gboolean
einsora_login_throttle_begin(EinsoraLoginThrottle *self, const char *key, gint64 *retry_after_us)
{
    gint64 now_us;
    Record *record;
    gint64 wait_us;

    g_return_val_if_fail(EINSORA_IS_LOGIN_THROTTLE(self), FALSE);
    g_return_val_if_fail(key != NULL, FALSE);

    now_us = self->now(self->now_data);
    *retry_after_us = 0;
    record = g_hash_table_lookup(self->records, key);
    if (record != NULL && is_forgotten(&self->rule, record, now_us)) {
        g_hash_table_remove(self->records, key);
        record = NULL;
    }
    if (record == NULL) {
        make_room(self, now_us);
        record = g_new0(Record, 1);
        g_hash_table_insert(self->records, g_strdup(key), record);
    }

    /* Within the allowance, attempts may overlap; past it, one at a
     * time, each after its delay. */
    if (record->failures + record->in_flight < self->rule.free_failures)
        wait_us = 0;
    else if (record->in_flight == 0)
        wait_us = record->last_failure_us + delay_after(&self->rule, record->failures) - now_us;
    else
        wait_us =
            MAX(self->rule.first_delay_us,
                record->last_failure_us + delay_after(&self->rule, record->failures) - now_us);
    if (wait_us > 0) {
        *retry_after_us = MAX(wait_us, G_USEC_PER_SEC);
        return FALSE;
    }
    record->in_flight++;
    record->last_seen_us = now_us;
    return TRUE;
}

void
einsora_login_throttle_end(EinsoraLoginThrottle *self, const char *key, EinsoraLoginOutcome outcome)
{
    Record *record;
    gint64 now_us;

    g_return_if_fail(EINSORA_IS_LOGIN_THROTTLE(self));
    g_return_if_fail(key != NULL);

    record = g_hash_table_lookup(self->records, key);
    g_return_if_fail(record != NULL && record->in_flight > 0);
    now_us = self->now(self->now_data);
    record->in_flight--;
    record->last_seen_us = now_us;
    switch (outcome) {
    case EINSORA_LOGIN_OUTCOME_FAILED:
        record->failures++;
        record->last_failure_us = now_us;
        break;
    case EINSORA_LOGIN_OUTCOME_SUCCEEDED:
        record->failures = 0;
        break;
    case EINSORA_LOGIN_OUTCOME_NONE:
        break;
    }
    if (record->failures == 0 && record->in_flight == 0)
        g_hash_table_remove(self->records, key);
}

guint
einsora_login_throttle_get_n_keys(EinsoraLoginThrottle *self)
{
    g_return_val_if_fail(EINSORA_IS_LOGIN_THROTTLE(self), 0);
    return g_hash_table_size(self->records);
}
