/* Usage accounting (docs/adr/0042): the pure step from a timeline to
 * metered intervals and hourly records, table-driven over histories that
 * cross hours, fail, restart, stop and start and get deleted; the
 * metering step over a real SQLite store with an injected clock (passes
 * repeated, a daemon restarted, metering down while the workload
 * stopped, two workloads side by side, the controller's own placements);
 * and a property: the seconds of usage are the seconds spent running. */
#include "einsora-controller.h"
#include "einsora-fake-backend.h"
#include "einsora-meter.h"
#include "einsora-metered-interval.h"
#include "einsora-sqlite-store.h"
#include "einsora-test-dir.h"
#include "einsora-uuid.h"

/* 2026-01-01T00:00:00Z: every time in the tables is on that day. */
#define DAY_S G_GINT64_CONSTANT(1767225600)
#define TENANT_A "0190b5d2-7c4e-7abc-8def-00000000000a"
#define TENANT_B "0190b5d2-7c4e-7abc-8def-00000000000b"

static const char test_catalog[] =
    "{\"version\": 1,"
    " \"regions\": [{\"name\": \"local\"}],"
    " \"drivers\": [{\"name\": \"sim\", \"kinds\": [\"notebook\"],"
    "               \"accelerators\": [\"cpu\", \"nvidia\"]}],"
    " \"classes\": ["
    "  {\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096, \"accelerator\": \"cpu\"},"
    "  {\"name\": \"l40s-x2\", \"cpus\": 8, \"memory_mib\": 32768, \"devices\": 2,"
    "   \"accelerator\": \"nvidia\"}],"
    " \"images\": [{\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\"]},"
    "   \"nvidia\": {\"reference\": \"jupyter-cuda\", \"driver_refs\": [\"sim\"]}}}]}";

#define CPU "cpu-2c-4g"
#define GPU "l40s-x2"

/* "HH:MM:SS[.ffffff]" on the day, in microseconds. */
static gint64
at_us(const char *at)
{
    g_autofree gchar *text =
        g_strdup_printf("2026-01-01T%s%sZ", at, strchr(at, '.') ? "" : ".000000");
    g_autoptr(GError) error = NULL;
    gint64 us = 0;

    g_assert_true(einsora_timestamp_parse(text, &us, &error));
    g_assert_no_error(error);
    return us;
}

static gchar *
hour_text(const char *hour)
{
    return g_strdup_printf("2026-01-01T%s:00:00.000000Z", hour);
}

/* The table */

typedef enum {
    NONE = -1,
    PEND = EINSORA_WORKLOAD_STATE_PENDING,
    QUE = EINSORA_WORKLOAD_STATE_QUEUED,
    PROV = EINSORA_WORKLOAD_STATE_PROVISIONING,
    RUN = EINSORA_WORKLOAD_STATE_RUNNING,
    STOPPING = EINSORA_WORKLOAD_STATE_STOPPING,
    STOPPED = EINSORA_WORKLOAD_STATE_STOPPED,
    FAIL = EINSORA_WORKLOAD_STATE_FAILED,
    DELETING = EINSORA_WORKLOAD_STATE_DELETING,
    DEL = EINSORA_WORKLOAD_STATE_DELETED,
} S;

typedef struct {
    S from; /* NONE: the creation row */
    S to;
    const char *at;
    const char *klass; /* NULL: the event doesn't say */
} Step;

typedef struct {
    const char *klass;
    const char *hour; /* "HH" */
    gint64 seconds;
} Want;

typedef struct {
    const char *name;
    Step steps[14];
    const char *now;
    Want want[5];
} Case;

/* A first attempt placed on @k and running from @run until @stop. */
#define CREATED(at)                                                                                \
    {                                                                                              \
        NONE, PEND, at, NULL                                                                       \
    }
#define RUN_ON(k, prov, run)                                                                       \
    {PEND, PROV, prov, k},                                                                         \
    {                                                                                              \
        PROV, RUN, run, k                                                                          \
    }

static const Case cases[] = {
    {"within-one-hour",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:05:00", "10:10:00"),
      {RUN, STOPPING, "10:50:00", CPU},
      {STOPPING, STOPPED, "10:51:00", CPU}},
     "12:00:00",
     {{CPU, "10", 2400}}},
    {"crosses-hour-boundaries",
     {CREATED("09:00:00"), RUN_ON(CPU, "09:29:00", "09:30:00"), {RUN, STOPPING, "11:15:00", CPU}},
     "12:00:00",
     {{CPU, "09", 1800}, {CPU, "10", 3600}, {CPU, "11", 900}}},
    {"exactly-one-hour-no-empty-record",
     {CREATED("09:59:00"), RUN_ON(CPU, "09:59:30", "10:00:00"), {RUN, STOPPING, "11:00:00", CPU}},
     "12:00:00",
     {{CPU, "10", 3600}}},
    {"open-interval-counted-to-now",
     {CREATED("10:00:00"), RUN_ON(CPU, "10:01:00", "10:30:00")},
     "11:10:00",
     {{CPU, "10", 1800}, {CPU, "11", 600}}},
    /* Stopped at 10:20; nothing metered (or reconciled) until 11:05. */
    {"metering-down-closes-at-the-event",
     {CREATED("09:59:00"),
      RUN_ON(CPU, "09:59:30", "10:00:00"),
      {RUN, STOPPING, "10:20:00", CPU},
      {STOPPING, STOPPED, "11:05:00", CPU}},
     "11:05:00",
     {{CPU, "10", 1200}}},
    {"failure-ends-it",
     {CREATED("10:00:00"), RUN_ON(GPU, "10:00:00", "10:00:00"), {RUN, FAIL, "10:40:00", GPU}},
     "13:00:00",
     {{GPU, "10", 2400}}},
    {"failed-then-admitted-again",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:00:00"),
      {RUN, FAIL, "10:10:00", CPU},
      {FAIL, PROV, "10:20:00", CPU},
      {PROV, RUN, "10:25:00", CPU},
      {RUN, STOPPING, "10:45:00", CPU}},
     "13:00:00",
     {{CPU, "10", 1800}}},
    {"deleted-while-running",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:00:00"),
      {RUN, DELETING, "10:30:00", CPU},
      {DELETING, DEL, "10:31:00", CPU}},
     "13:00:00",
     {{CPU, "10", 1800}}},
    {"stop-and-start-two-intervals-one-record",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:00:00"),
      {RUN, STOPPING, "10:10:00", CPU},
      {STOPPING, STOPPED, "10:11:00", CPU},
      {STOPPED, PEND, "10:29:00", CPU},
      {PEND, PROV, "10:30:00", CPU},
      {PROV, RUN, "10:31:00", CPU},
      {RUN, STOPPING, "10:41:00", CPU}},
     "13:00:00",
     {{CPU, "10", 1200}}},
    /* Each attempt by the class it was placed on, not the latest one. */
    {"second-attempt-on-another-class",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:00:00"),
      {RUN, STOPPING, "10:10:00", CPU},
      {STOPPING, STOPPED, "10:11:00", CPU},
      {STOPPED, PEND, "10:29:00", CPU},
      {PEND, PROV, "10:30:00", GPU},
      {PROV, RUN, "10:30:00", GPU},
      {RUN, STOPPING, "11:30:00", GPU}},
     "13:00:00",
     {{CPU, "10", 600}, {GPU, "10", 1800}, {GPU, "11", 1800}}},
    {"notes-change-nothing",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:00:00"),
      {RUN, RUN, "10:20:00", CPU},
      {RUN, RUN, "10:25:00", CPU},
      {RUN, STOPPING, "10:30:00", CPU}},
     "13:00:00",
     {{CPU, "10", 1800}}},
    {"never-ran-nothing",
     {CREATED("10:00:00"),
      {PEND, QUE, "10:00:01", NULL},
      {QUE, DELETING, "10:30:00", NULL},
      {DELETING, DEL, "10:30:01", NULL}},
     "13:00:00",
     {{NULL}}},
    {"provisioning-and-stopping-are-not-metered",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:05:00"),
      {RUN, STOPPING, "10:10:00", CPU},
      {STOPPING, STOPPED, "10:50:00", CPU}},
     "13:00:00",
     {{CPU, "10", 300}}},
    /* Rows from before events named their class. */
    {"unnamed-class-is-the-workloads",
     {CREATED("10:00:00"), RUN_ON(NULL, "10:00:00", "10:00:00"), {RUN, STOPPING, "10:15:00", NULL}},
     "13:00:00",
     {{GPU, "10", 900}}},
    /* A clock stepped back counts nothing rather than something twice. */
    {"clock-stepped-back",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:30:00"),
      {RUN, STOPPING, "10:20:00", CPU},
      {STOPPING, STOPPED, "10:21:00", CPU},
      {STOPPED, PEND, "10:39:00", CPU},
      {PEND, PROV, "10:40:00", CPU},
      {PROV, RUN, "10:50:00", CPU},
      {RUN, STOPPING, "11:00:00", CPU}},
     "13:00:00",
     {{CPU, "10", 600}}},
    /* Whole seconds of the clock: 00.9 -> 02.1 is seconds 0 to 2. */
    {"times-truncated-to-the-second",
     {CREATED("10:00:00"),
      RUN_ON(CPU, "10:00:00", "10:00:00.900000"),
      {RUN, STOPPING, "10:00:02.100000", CPU}},
     "13:00:00",
     {{CPU, "10", 2}}},
    /* Metered before now: an open interval with now before its start. */
    {"now-before-start-counts-nothing",
     {CREATED("10:00:00"), RUN_ON(CPU, "10:00:00", "10:30:00")},
     "10:20:00",
     {{NULL}}},
};

static EinsoraWorkload *
workload_for(const char *tenant_id, const char *name, const char *placed_class)
{
    EinsoraWorkload *workload = einsora_workload_new();

    workload->id = einsora_uuid_v7_new(DAY_S * 1000);
    workload->tenant_id = g_strdup(tenant_id);
    workload->kind = EINSORA_WORKLOAD_KIND_NOTEBOOK;
    workload->name = g_strdup(name);
    workload->state = EINSORA_WORKLOAD_STATE_PENDING;
    workload->region = g_strdup("local");
    workload->gpu_class = g_strdup(placed_class);
    workload->placed_class = g_strdup(placed_class);
    workload->image = g_strdup("jupyter");
    workload->created_by = g_strdup("u-a");
    workload->created_at = einsora_timestamp_format(DAY_S * G_USEC_PER_SEC);
    workload->updated_at = g_strdup(workload->created_at);
    return workload;
}

static GPtrArray *
events_of(const EinsoraWorkload *workload, const Step *steps, guint n_steps)
{
    GPtrArray *events = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);

    for (guint i = 0; i < n_steps && steps[i].at != NULL; i++) {
        EinsoraWorkloadEvent *event = einsora_workload_event_new();

        event->seq = i + 1;
        event->id = einsora_uuid_v7_new(at_us(steps[i].at) / 1000);
        event->tenant_id = g_strdup(workload->tenant_id);
        event->workload_id = g_strdup(workload->id);
        event->has_from_state = steps[i].from != NONE;
        event->from_state = steps[i].from != NONE ? (EinsoraWorkloadState)steps[i].from
                                                  : EINSORA_WORKLOAD_STATE_PENDING;
        event->to_state = (EinsoraWorkloadState)steps[i].to;
        event->reason = g_strdup("a step");
        event->placed_class = g_strdup(steps[i].klass);
        event->created_at = einsora_timestamp_format(at_us(steps[i].at));
        g_ptr_array_add(events, event);
    }
    return events;
}

static gint64
catalog_devices(const char *gpu_class, gpointer user_data)
{
    const EinsoraComputeClass *klass = einsora_catalog_lookup_class(user_data, gpu_class);
    return klass != NULL ? klass->devices : 0;
}

static EinsoraCatalog *
catalog_new(void)
{
    g_autoptr(GError) error = NULL;
    EinsoraCatalog *catalog = einsora_catalog_new_from_data(test_catalog, -1, "test", &error);

    g_assert_no_error(error);
    return catalog;
}

static GPtrArray *
records_of(const EinsoraWorkload *workload, GPtrArray *events, gint64 now_us,
           EinsoraCatalog *catalog)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) intervals = einsora_metered_intervals_from_events(
        events, einsora_workload_get_class(workload), now_us, &error);

    g_assert_no_error(error);
    g_assert_nonnull(intervals);
    return einsora_metered_intervals_to_hours(workload, intervals, catalog_devices, catalog);
}

static void
test_table(gconstpointer data)
{
    const Case *c = data;
    g_autoptr(EinsoraCatalog) catalog = catalog_new();
    /* The workload's row names the latest placement (GPU here); the
     * events say which class each attempt had. */
    g_autoptr(EinsoraWorkload) workload = workload_for(TENANT_A, c->name, GPU);
    g_autoptr(GPtrArray) events = events_of(workload, c->steps, G_N_ELEMENTS(c->steps));
    g_autoptr(GPtrArray) records = records_of(workload, events, at_us(c->now), catalog);
    guint n_want = 0;

    while (n_want < G_N_ELEMENTS(c->want) && c->want[n_want].klass != NULL)
        n_want++;
    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *r = g_ptr_array_index(records, i);
        g_test_message("%s %s %" G_GINT64_FORMAT, r->gpu_class, r->hour_start, r->seconds);
    }
    g_assert_cmpuint(records->len, ==, n_want);
    for (guint i = 0; i < n_want; i++) {
        const EinsoraUsageRecord *r = g_ptr_array_index(records, i);
        g_autofree gchar *hour = hour_text(c->want[i].hour);

        g_assert_cmpstr(r->gpu_class, ==, c->want[i].klass);
        g_assert_cmpstr(r->hour_start, ==, hour);
        g_assert_cmpint(r->seconds, ==, c->want[i].seconds);
        g_assert_cmpint(r->gpu_seconds, ==,
                        c->want[i].seconds * (g_str_equal(c->want[i].klass, GPU) ? 2 : 0));
        g_assert_cmpstr(r->tenant_id, ==, TENANT_A);
        g_assert_cmpstr(r->workload_id, ==, workload->id);
        g_assert_cmpstr(r->region, ==, "local");
    }
}

/* An unreadable time is an error, never a guess. */
static void
test_bad_time(void)
{
    g_autoptr(EinsoraWorkload) workload = workload_for(TENANT_A, "bad", CPU);
    const Step steps[] = {CREATED("10:00:00"), RUN_ON(CPU, "10:00:00", "10:00:00")};
    g_autoptr(GPtrArray) events = events_of(workload, steps, G_N_ELEMENTS(steps));
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) intervals = NULL;
    EinsoraWorkloadEvent *last = g_ptr_array_index(events, events->len - 1);

    g_free(last->created_at);
    last->created_at = g_strdup("yesterday at ten");
    intervals = einsora_metered_intervals_from_events(events, CPU, at_us("12:00:00"), &error);
    g_assert_null(intervals);
    g_assert_nonnull(error);
}

/* The property: random lifecycles (every step one the state machine
 * allows, notes among them, attempts on random classes, times a random
 * number of seconds and microseconds apart) give records whose seconds
 * add up, per class, to the whole seconds spent running, each record in
 * one hour and no (class, hour) twice. */

typedef struct {
    GPtrArray *events;
    gint64 now_us;
    gint64 running_s[2]; /* by class: CPU, GPU */
} History;

static const char *const classes[] = {CPU, GPU};

static void
history_clear(History *h)
{
    g_clear_pointer(&h->events, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(History, history_clear)

static void
random_history(const EinsoraWorkload *workload, History *h)
{
    EinsoraWorkloadState state = EINSORA_WORKLOAD_STATE_PENDING;
    gint64 t_us = (DAY_S + g_test_rand_int_range(0, 86400)) * (gint64)G_USEC_PER_SEC;
    const char *klass = NULL;
    guint steps = g_test_rand_int_range(1, 40);
    gint64 entered_s = 0;
    gint klass_index = -1;
    gint entered_index = -1; /* the class running was entered on */
    guint64 seq = 1;

    h->events = g_ptr_array_new_with_free_func((GDestroyNotify)einsora_workload_event_free);
    for (guint i = 0; i <= steps; i++) {
        EinsoraWorkloadEvent *event = einsora_workload_event_new();
        EinsoraWorkloadState to = state;

        if (i > 0) {
            EinsoraWorkloadState options[EINSORA_WORKLOAD_STATE_COUNT + 1];
            guint n = 0;

            for (guint s = 0; s < EINSORA_WORKLOAD_STATE_COUNT; s++)
                if (einsora_workload_state_can_transition(state, s) &&
                    (s != EINSORA_WORKLOAD_STATE_RUNNING || klass != NULL))
                    options[n++] = s;
            if (einsora_workload_state_can_note(state))
                options[n++] = state;
            if (n == 0) {
                einsora_workload_event_free(event);
                break;
            }
            to = options[g_test_rand_int_range(0, n)];
            /* Minutes apart mostly, sometimes hours, with microseconds. */
            t_us +=
                g_test_rand_int_range(0, g_test_rand_bit() ? 600 : 10000) * (gint64)G_USEC_PER_SEC +
                g_test_rand_int_range(0, G_USEC_PER_SEC);
        }
        /* What the independent count sees: seconds in running, by the
         * class it was entered on. */
        if (state == EINSORA_WORKLOAD_STATE_RUNNING && to != state)
            h->running_s[entered_index] += t_us / G_USEC_PER_SEC - entered_s;
        if (to == EINSORA_WORKLOAD_STATE_PROVISIONING && to != state) {
            klass_index = g_test_rand_int_range(0, 2);
            klass = classes[klass_index];
        }
        if (to == EINSORA_WORKLOAD_STATE_RUNNING && state != to) {
            entered_s = t_us / G_USEC_PER_SEC;
            entered_index = klass_index;
        }

        event->seq = seq++;
        event->id = einsora_uuid_v7_new(t_us / 1000);
        event->tenant_id = g_strdup(workload->tenant_id);
        event->workload_id = g_strdup(workload->id);
        event->has_from_state = i > 0;
        event->from_state = state;
        event->to_state = to;
        event->reason = g_strdup(i > 0 && to == state ? "a note" : "a step");
        event->placed_class = g_strdup(klass);
        event->created_at = einsora_timestamp_format(t_us);
        g_ptr_array_add(h->events, event);
        state = to;
    }
    h->now_us = t_us + g_test_rand_int_range(0, 20000) * (gint64)G_USEC_PER_SEC;
    if (state == EINSORA_WORKLOAD_STATE_RUNNING)
        h->running_s[entered_index] += h->now_us / G_USEC_PER_SEC - entered_s;
}

static void
assert_records_add_up(GPtrArray *records, const History *h)
{
    g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    gint64 sums[2] = {0, 0};

    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *r = g_ptr_array_index(records, i);
        gint64 hour_us = 0;

        g_assert_true(einsora_timestamp_parse(r->hour_start, &hour_us, NULL));
        g_assert_cmpint(hour_us % (G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC), ==, 0);
        g_assert_cmpint(r->seconds, >=, 1);
        g_assert_cmpint(r->seconds, <=, 3600);
        g_assert_true(
            g_hash_table_add(keys, g_strdup_printf("%s %s", r->gpu_class, r->hour_start)));
        sums[g_str_equal(r->gpu_class, GPU) ? 1 : 0] += r->seconds;
    }
    g_assert_cmpint(sums[0], ==, h->running_s[0]);
    g_assert_cmpint(sums[1], ==, h->running_s[1]);
}

static void
test_property(void)
{
    g_autoptr(EinsoraCatalog) catalog = catalog_new();
    guint runs = g_test_thorough() ? 5000 : 500;
    gint64 total = 0;

    for (guint i = 0; i < runs; i++) {
        g_autoptr(EinsoraWorkload) workload = workload_for(TENANT_A, "random", CPU);
        g_auto(History) h = {NULL};
        g_autoptr(GPtrArray) records = NULL;

        random_history(workload, &h);
        records = records_of(workload, h.events, h.now_us, catalog);
        assert_records_add_up(records, &h);
        total += h.running_s[0] + h.running_s[1];
    }
    /* The histories did run: the property was not checked on nothing. */
    g_assert_cmpint(total, >, 0);
}

/* The metering step over a real store */

typedef struct {
    gint64 now_us;
} ManualClock;

static gint64
manual_now(gpointer user_data)
{
    return ((ManualClock *)user_data)->now_us;
}

typedef struct {
    gchar *dir;
    ManualClock clock;
    EinsoraCatalog *catalog;
    EinsoraSqliteStore *store;
    EinsoraMeter *meter;
} Fixture;

static EinsoraStore *
store(Fixture *f)
{
    return EINSORA_STORE(f->store);
}

static void
add_tenant(Fixture *f, const char *id, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraTenant) tenant =
        einsora_tenant_new(id, name, FALSE, "2025-12-31T00:00:00.000000Z");

    g_assert_true(einsora_store_insert_tenant(store(f), tenant, &error));
    g_assert_true(einsora_store_set_quota(store(f), id, GPU, 100, &error));
    g_assert_no_error(error);
}

static void
fixture_set_up(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *path = NULL;

    f->dir = einsora_test_dir_new();
    path = g_build_filename(f->dir, "einsora.db", NULL);
    f->clock.now_us = at_us("09:00:00");
    f->catalog = catalog_new();
    f->store = einsora_sqlite_store_open(path, &error);
    g_assert_no_error(error);
    g_assert_true(einsora_sqlite_store_migrate(f->store, f->clock.now_us, &error));
    einsora_sqlite_store_set_clock(f->store, manual_now, &f->clock);
    add_tenant(f, TENANT_A, "acme");
    add_tenant(f, TENANT_B, "globex");
    f->meter = einsora_meter_new(store(f), f->catalog, manual_now, &f->clock);
}

static void
fixture_tear_down(Fixture *f, gconstpointer data)
{
    g_clear_object(&f->meter);
    g_clear_object(&f->store);
    g_clear_object(&f->catalog);
    einsora_test_dir_remove(f->dir);
    g_free(f->dir);
}

/* A workload in the store, its state the last step's. */
static EinsoraWorkload *
add_workload(Fixture *f, const char *tenant_id, const char *name, const char *klass)
{
    g_autoptr(GError) error = NULL;
    EinsoraWorkload *workload = workload_for(tenant_id, name, klass);

    g_assert_true(einsora_store_insert_workload(store(f), workload, &error));
    g_assert_no_error(error);
    return workload;
}

/* Appends @steps as the service would, each at its own time, moving the
 * workload's row along. */
static void
append_steps(Fixture *f, EinsoraWorkload *workload, const Step *steps, guint n_steps)
{
    g_autoptr(GPtrArray) events = events_of(workload, steps, n_steps);

    for (guint i = 0; i < events->len; i++) {
        g_autoptr(GError) error = NULL;
        EinsoraWorkloadEvent *event = g_ptr_array_index(events, i);
        EinsoraWorkloadState was = workload->state;

        if (event->has_from_state && event->from_state != event->to_state) {
            workload->state = event->to_state;
            g_free(workload->updated_at);
            workload->updated_at = g_strdup(event->created_at);
            g_assert_true(einsora_store_update_workload_state(store(f), workload, was,
                                                              workload->version, &error));
            g_assert_no_error(error);
            workload->version++;
        }
        g_assert_true(einsora_store_append_event(store(f), event, &error));
        g_assert_no_error(error);
    }
}

static void
meter_at(Fixture *f, const char *at)
{
    g_autoptr(GError) error = NULL;

    f->clock.now_us = at_us(at);
    g_assert_true(einsora_meter_run_once(f->meter, &error));
    g_assert_no_error(error);
}

static GPtrArray *
usage_of(Fixture *f, const char *tenant_id)
{
    g_autoptr(GError) error = NULL;
    GPtrArray *records = einsora_store_list_usage_records(
        store(f), tenant_id, "2026-01-01T00:00:00.000000Z", "2026-01-03T00:00:00.000000Z", &error);

    g_assert_no_error(error);
    return records;
}

/* "CLASS HH SECONDS" per record, joined with ", ", for tenant @tenant_id
 * and (when not NULL) workload @workload_id only. */
static gchar *
usage_text(Fixture *f, const char *tenant_id, const char *workload_id)
{
    g_autoptr(GPtrArray) records = usage_of(f, tenant_id);
    g_autoptr(GString) text = g_string_new(NULL);

    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *r = g_ptr_array_index(records, i);
        if (workload_id != NULL && g_strcmp0(r->workload_id, workload_id) != 0)
            continue;
        g_string_append_printf(text, "%s%s %.2s %" G_GINT64_FORMAT, text->len > 0 ? ", " : "",
                               r->gpu_class, r->hour_start + 11, r->seconds);
    }
    return g_string_free(g_steal_pointer(&text), FALSE);
}

/* Every column of every record, for comparing two stores' answers. */
static gchar *
usage_dump(Fixture *f, const char *tenant_id, gboolean with_ids)
{
    g_autoptr(GPtrArray) records = usage_of(f, tenant_id);
    g_autoptr(GString) text = g_string_new(NULL);

    for (guint i = 0; i < records->len; i++) {
        const EinsoraUsageRecord *r = g_ptr_array_index(records, i);
        g_string_append_printf(
            text, "%s|%s|%s|%s|%s|%s|%" G_GINT64_FORMAT "|%" G_GINT64_FORMAT "|%s\n",
            with_ids ? r->id : "-", r->tenant_id, r->workload_id, r->region, r->gpu_class,
            r->hour_start, r->seconds, r->gpu_seconds, with_ids ? r->created_at : "-");
    }
    return g_string_free(g_steal_pointer(&text), FALSE);
}

static const Step started[] = {CREATED("09:50:00"), RUN_ON(GPU, "09:55:00", "10:00:00")};

/* The open interval grows with each pass, into the next hour. */
static void
test_pass_open_interval_grows(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) w = add_workload(f, TENANT_A, "nb", GPU);
    g_autofree gchar *first = NULL;
    g_autofree gchar *second = NULL;

    append_steps(f, w, started, G_N_ELEMENTS(started));
    meter_at(f, "10:30:00");
    first = usage_text(f, TENANT_A, NULL);
    g_assert_cmpstr(first, ==, GPU " 10 1800");
    meter_at(f, "11:15:00");
    second = usage_text(f, TENANT_A, NULL);
    g_assert_cmpstr(second, ==, GPU " 10 3600, " GPU " 11 900");
}

/* A pass over the same events writes the same records, IDs and all; a
 * pass that found nothing new doesn't move the cursor back or on. */
static void
test_pass_idempotent(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) w = add_workload(f, TENANT_A, "nb", GPU);
    const Step stop[] = {{RUN, STOPPING, "11:20:00", GPU}, {STOPPING, STOPPED, "11:21:00", GPU}};
    g_autoptr(GError) error = NULL;
    g_autofree gchar *once = NULL;
    g_autofree gchar *twice = NULL;
    gint64 cursor = 0;
    gint64 cursor_again = 0;

    append_steps(f, w, started, G_N_ELEMENTS(started));
    append_steps(f, w, stop, G_N_ELEMENTS(stop));
    meter_at(f, "12:00:00");
    once = usage_dump(f, TENANT_A, TRUE);
    g_assert_true(
        einsora_store_get_metering_cursor(store(f), EINSORA_METER_CURSOR, &cursor, &error));
    g_assert_cmpint(cursor, ==, 5);
    meter_at(f, "12:00:00");
    meter_at(f, "15:00:00");
    twice = usage_dump(f, TENANT_A, TRUE);
    g_assert_cmpstr(twice, ==, once);
    g_assert_true(
        einsora_store_get_metering_cursor(store(f), EINSORA_METER_CURSOR, &cursor_again, &error));
    g_assert_no_error(error);
    g_assert_cmpint(cursor_again, ==, cursor);
    g_assert_cmpuint(einsora_meter_count_passes(f->meter), ==, 3);
}

/* Running at 10:00, metered at 10:10; stopped at 10:20 while no pass ran
 * (metering and the controller down) until 11:05: counted to 10:20, and
 * the 10:10 pass's record is replaced, not added to. */
static void
test_pass_down_while_it_stopped(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) w = add_workload(f, TENANT_A, "nb", GPU);
    const Step stop[] = {{RUN, STOPPING, "10:20:00", GPU}, {STOPPING, STOPPED, "11:05:00", GPU}};
    g_autofree gchar *before = NULL;
    g_autofree gchar *after = NULL;

    append_steps(f, w, started, G_N_ELEMENTS(started));
    meter_at(f, "10:10:00");
    before = usage_text(f, TENANT_A, NULL);
    g_assert_cmpstr(before, ==, GPU " 10 600");
    append_steps(f, w, stop, G_N_ELEMENTS(stop));
    meter_at(f, "11:05:00");
    after = usage_text(f, TENANT_A, NULL);
    g_assert_cmpstr(after, ==, GPU " 10 1200");
}

/* A restarted daemon: a new metering step over the same store goes on
 * from the cursor; one that starts from nothing (the cursor and the
 * records gone) writes the same records again. */
static void
test_pass_restart(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) w = add_workload(f, TENANT_A, "nb", GPU);
    g_autoptr(EinsoraWorkload) v = add_workload(f, TENANT_A, "other", CPU);
    const Step stop[] = {{RUN, STOPPING, "12:20:00", GPU}, {STOPPING, STOPPED, "12:21:00", GPU}};
    const Step other[] = {
        CREATED("10:00:00"), RUN_ON(CPU, "10:01:00", "10:02:00"), {RUN, FAIL, "10:32:00", CPU}};
    g_autoptr(GError) error = NULL;
    g_autofree gchar *uninterrupted = NULL;
    g_autofree gchar *restarted = NULL;
    g_autofree gchar *rebuilt = NULL;

    append_steps(f, w, started, G_N_ELEMENTS(started));
    append_steps(f, v, other, G_N_ELEMENTS(other));
    meter_at(f, "11:00:00");
    append_steps(f, w, stop, G_N_ELEMENTS(stop));
    meter_at(f, "13:00:00");
    uninterrupted = usage_dump(f, TENANT_A, TRUE);

    /* The daemon stops and starts again: a new step, the same store. */
    g_clear_object(&f->meter);
    f->meter = einsora_meter_new(store(f), f->catalog, manual_now, &f->clock);
    meter_at(f, "14:00:00");
    restarted = usage_dump(f, TENANT_A, TRUE);
    g_assert_cmpstr(restarted, ==, uninterrupted);

    /* From scratch: the same records (new IDs, the same usage). */
    {
        g_autoptr(GPtrArray) none =
            g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_record_free);
        g_autofree gchar *want = usage_dump(f, TENANT_A, FALSE);

        g_assert_true(einsora_store_replace_usage_records(store(f), TENANT_A, w->id, none, &error));
        g_assert_true(einsora_store_replace_usage_records(store(f), TENANT_A, v->id, none, &error));
        g_assert_true(einsora_store_set_metering_cursor(store(f), EINSORA_METER_CURSOR, 0,
                                                        "2026-01-01T14:00:00.000000Z", &error));
        g_assert_no_error(error);
        meter_at(f, "15:00:00");
        rebuilt = usage_dump(f, TENANT_A, FALSE);
        g_assert_cmpstr(rebuilt, ==, want);
    }
    g_assert_cmpstr(uninterrupted, !=, "");
}

/* Two workloads of two tenants, running at once in the same hours, each
 * counted on its own: never mixed, never one counted twice. */
static void
test_pass_workloads_apart(Fixture *f, gconstpointer data)
{
    g_autoptr(EinsoraWorkload) a = add_workload(f, TENANT_A, "a", GPU);
    g_autoptr(EinsoraWorkload) a2 = add_workload(f, TENANT_A, "a2", GPU);
    g_autoptr(EinsoraWorkload) b = add_workload(f, TENANT_B, "b", CPU);
    const Step a2_steps[] = {CREATED("10:00:00"),
                             RUN_ON(GPU, "10:10:00", "10:15:00"),
                             {RUN, DELETING, "10:45:00", GPU},
                             {DELETING, DEL, "10:46:00", GPU}};
    const Step b_steps[] = {
        CREATED("09:00:00"), RUN_ON(CPU, "09:00:00", "09:30:00"), {RUN, STOPPING, "10:30:00", CPU}};
    g_autofree gchar *a_text = NULL;
    g_autofree gchar *a2_text = NULL;
    g_autofree gchar *b_text = NULL;

    append_steps(f, a, started, G_N_ELEMENTS(started));
    append_steps(f, a2, a2_steps, G_N_ELEMENTS(a2_steps));
    append_steps(f, b, b_steps, G_N_ELEMENTS(b_steps));
    meter_at(f, "10:40:00");
    meter_at(f, "11:00:00");
    a_text = usage_text(f, TENANT_A, a->id);
    a2_text = usage_text(f, TENANT_A, a2->id);
    b_text = usage_text(f, TENANT_B, NULL);
    g_assert_cmpstr(a_text, ==, GPU " 10 3600");
    /* Deleted: its usage stays. */
    g_assert_cmpstr(a2_text, ==, GPU " 10 1800");
    g_assert_cmpstr(b_text, ==, CPU " 09 1800, " CPU " 10 1800");
    {
        g_autoptr(GPtrArray) records = usage_of(f, TENANT_A);
        g_assert_cmpuint(records->len, ==, 2);
        /* l40s-x2 holds two GPUs. */
        g_assert_cmpint(((EinsoraUsageRecord *)g_ptr_array_index(records, 0))->gpu_seconds, ==,
                        2 * ((EinsoraUsageRecord *)g_ptr_array_index(records, 0))->seconds);
    }
}

/* Random histories through the store and the metering step, passes at
 * random times between their events: the same property, and the same
 * records as the pure step's. */
static void
test_pass_property(Fixture *f, gconstpointer data)
{
    guint runs = g_test_thorough() ? 200 : 25;

    for (guint i = 0; i < runs; i++) {
        g_autoptr(EinsoraWorkload) w = add_workload(f, i % 2 ? TENANT_A : TENANT_B, "random", CPU);
        g_auto(History) h = {NULL};
        g_autoptr(GPtrArray) records = NULL;
        g_autoptr(GPtrArray) mine =
            g_ptr_array_new_with_free_func((GDestroyNotify)einsora_usage_record_free);
        g_autoptr(GError) error = NULL;

        random_history(w, &h);
        for (guint e = 0; e < h.events->len; e++) {
            EinsoraWorkloadEvent *event = g_ptr_array_index(h.events, e);
            EinsoraWorkloadState was = w->state;
            gint64 event_us = 0;

            g_assert_true(einsora_timestamp_parse(event->created_at, &event_us, NULL));
            /* Now and then a pass, as the timer would run one. */
            if (g_test_rand_int_range(0, 4) == 0) {
                f->clock.now_us = event_us;
                g_assert_true(einsora_meter_run_once(f->meter, &error));
                g_assert_no_error(error);
            }
            if (event->has_from_state && event->from_state != event->to_state) {
                w->state = event->to_state;
                g_assert_true(
                    einsora_store_update_workload_state(store(f), w, was, w->version, &error));
                g_assert_no_error(error);
                w->version++;
            }
            event->seq = 0;
            g_assert_true(einsora_store_append_event(store(f), event, &error));
            g_assert_no_error(error);
        }
        f->clock.now_us = h.now_us;
        g_assert_true(einsora_meter_run_once(f->meter, &error));
        g_assert_no_error(error);

        records =
            einsora_store_list_usage_records(store(f), w->tenant_id, "2000-01-01T00:00:00.000000Z",
                                             "2100-01-01T00:00:00.000000Z", &error);
        g_assert_no_error(error);
        for (guint r = 0; r < records->len; r++) {
            EinsoraUsageRecord *record = g_ptr_array_index(records, r);
            if (g_str_equal(record->workload_id, w->id))
                g_ptr_array_add(mine, einsora_usage_record_copy(record));
        }
        assert_records_add_up(mine, &h);
    }
}

/* The daemon's own path: the service records each placement in the
 * timeline, the controller runs the workload on the fake backend, and
 * the meter counts from the moment it ran to the moment it was stopped,
 * whatever the workload's row says by then. */
static void
test_controller_path(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraService) service =
        einsora_service_new(store(f), f->catalog, manual_now, &f->clock);
    g_autoptr(EinsoraFakeBackend) backend = einsora_fake_backend_new();
    g_autoptr(EinsoraController) controller = NULL;
    g_autoptr(EinsoraActor) alice =
        einsora_actor_new(TENANT_A, "u-a", "alice@acme.example", "browser session");
    EinsoraWorkloadRequest request = {"notebook", "nb", GPU, "jupyter", NULL};
    g_autoptr(EinsoraWorkload) created = NULL;
    g_autoptr(EinsoraWorkload) stopped = NULL;
    g_autoptr(GPtrArray) events = NULL;
    g_autofree gchar *text = NULL;
    gint64 running_s = 0;
    gint64 stopped_s = 0;

    einsora_fake_backend_set_units(backend, GPU, 2);
    einsora_fake_backend_set_auto_complete(backend, TRUE);
    controller = einsora_controller_new(service, store(f), f->catalog, EINSORA_BACKEND(backend),
                                        "local", manual_now, &f->clock);
    f->clock.now_us = at_us("10:00:00");
    created = einsora_service_create_workload(service, alice, &request, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < 3; i++) {
        f->clock.now_us += 10 * G_USEC_PER_SEC;
        g_assert_true(einsora_controller_reconcile_once(controller, &error));
        g_assert_no_error(error);
    }
    events = einsora_store_list_events(store(f), TENANT_A, created->id, &error);
    g_assert_no_error(error);
    for (guint i = 0; i < events->len; i++) {
        const EinsoraWorkloadEvent *event = g_ptr_array_index(events, i);
        gint64 us = 0;

        /* The placement is in the row that admitted it and every one after. */
        if (event->to_state == EINSORA_WORKLOAD_STATE_PENDING)
            g_assert_null(event->placed_class);
        else
            g_assert_cmpstr(event->placed_class, ==, GPU);
        g_assert_true(einsora_timestamp_parse(event->created_at, &us, NULL));
        if (event->to_state == EINSORA_WORKLOAD_STATE_RUNNING)
            running_s = us / G_USEC_PER_SEC;
    }
    g_assert_cmpint(running_s, >, 0);

    meter_at(f, "11:00:00");
    f->clock.now_us = at_us("11:30:00");
    stopped = einsora_service_stop_workload(service, alice, created->id, &error);
    g_assert_no_error(error);
    stopped_s = f->clock.now_us / G_USEC_PER_SEC;
    /* The controller parks it an hour later; metering runs later still. */
    f->clock.now_us = at_us("12:30:00");
    g_assert_true(einsora_controller_reconcile_once(controller, &error));
    g_assert_no_error(error);
    meter_at(f, "13:00:00");
    text = usage_text(f, TENANT_A, NULL);
    {
        g_autofree gchar *want = g_strdup_printf(GPU " 10 %" G_GINT64_FORMAT ", " GPU " 11 1800",
                                                 DAY_S + 11 * 3600 - running_s);
        g_assert_cmpstr(text, ==, want);
    }
    g_assert_cmpint(stopped_s, ==, DAY_S + 11 * 3600 + 1800);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *path = g_strdup_printf("/metering/hours/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_table);
    }
    g_test_add_func("/metering/hours/unreadable-time-is-an-error", test_bad_time);
    g_test_add_func("/metering/property/seconds-of-usage-are-seconds-running", test_property);
#define ADD(path, func) g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
    ADD("/metering/pass/open-interval-grows-into-the-next-hour", test_pass_open_interval_grows);
    ADD("/metering/pass/same-events-same-records", test_pass_idempotent);
    ADD("/metering/pass/down-while-it-stopped-closes-at-the-event",
        test_pass_down_while_it_stopped);
    ADD("/metering/pass/restart-and-from-scratch-same-records", test_pass_restart);
    ADD("/metering/pass/workloads-and-tenants-never-mixed", test_pass_workloads_apart);
    ADD("/metering/pass/property-through-the-store", test_pass_property);
    ADD("/metering/pass/controller-placement-to-records", test_controller_path);
#undef ADD
    return g_test_run();
}
