/* The desktop app's models and formatting: state labels and badges,
 * filters, ages, event times, transitions, reasons, and the workload list
 * kept in step with the daemon. No display needed. */
#include <json-glib/json-glib.h>
#include <locale.h>

#include "einsora-format.h"
#include "einsora-workload-item.h"
#include "einsora-workload-list.h"

static void
test_state_labels(void)
{
    static const struct {
        const char *state;
        const char *label;
        const char *style;
        EinsoraStateFilter filter;
    } cases[] = {
        {"pending", "Pending", "accent", EINSORA_STATE_FILTER_WAITING},
        {"queued", "Queued", "accent", EINSORA_STATE_FILTER_WAITING},
        {"provisioning", "Starting", "accent", EINSORA_STATE_FILTER_WAITING},
        {"running", "Running", "success", EINSORA_STATE_FILTER_RUNNING},
        {"stopping", "Stopping", "warning", EINSORA_STATE_FILTER_STOPPED},
        {"stopped", "Stopped", "dim-label", EINSORA_STATE_FILTER_STOPPED},
        {"failed", "Failed", "error", EINSORA_STATE_FILTER_FAILED},
        {"deleting", "Deleting", "warning", EINSORA_STATE_FILTER_STOPPED},
        {"deleted", "Deleted", "dim-label", EINSORA_STATE_FILTER_STOPPED},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_assert_cmpstr(einsora_format_state_label(cases[i].state), ==, cases[i].label);
        g_assert_cmpstr(einsora_format_state_style(cases[i].state), ==, cases[i].style);
        g_assert_true(einsora_format_state_matches(cases[i].state, cases[i].filter));
        g_assert_true(einsora_format_state_matches(cases[i].state, EINSORA_STATE_FILTER_ALL));
        for (int f = EINSORA_STATE_FILTER_RUNNING; f <= EINSORA_STATE_FILTER_FAILED; f++)
            if ((EinsoraStateFilter)f != cases[i].filter)
                g_assert_false(einsora_format_state_matches(cases[i].state, f));
    }
    /* A state a newer daemon might send is shown as it came, unstyled. */
    g_assert_cmpstr(einsora_format_state_label("hibernating"), ==, "hibernating");
    g_assert_cmpstr(einsora_format_state_style("hibernating"), ==, "dim-label");
    g_assert_false(einsora_format_state_matches("hibernating", EINSORA_STATE_FILTER_RUNNING));
    g_assert_cmpstr(einsora_format_state_label(NULL), ==, "");
}

/* A kind as a person reads it; one a newer daemon might send as it came. */
static void
test_kinds(void)
{
    g_assert_cmpstr(einsora_format_kind("notebook"), ==, "Notebook");
    g_assert_cmpstr(einsora_format_kind("endpoint"), ==, "Endpoint");
    g_assert_cmpstr(einsora_format_kind("vm"), ==, "Virtual Machine");
    g_assert_cmpstr(einsora_format_kind("cluster"), ==, "cluster");
    g_assert_cmpstr(einsora_format_kind(NULL), ==, "");
}

static void
test_state_filter_names(void)
{
    for (int f = EINSORA_STATE_FILTER_ALL; f <= EINSORA_STATE_FILTER_FAILED; f++)
        g_assert_cmpint(einsora_format_state_filter_from_string(
                            einsora_format_state_filter_to_string((EinsoraStateFilter)f)),
                        ==, f);
    g_assert_cmpint(einsora_format_state_filter_from_string("nonsense"), ==,
                    EINSORA_STATE_FILTER_ALL);
    g_assert_cmpint(einsora_format_state_filter_from_string(NULL), ==, EINSORA_STATE_FILTER_ALL);
    g_assert_cmpstr(einsora_format_state_filter_to_string((EinsoraStateFilter)99), ==, "all");
}

static void
test_age(void)
{
    static const struct {
        GTimeSpan ago;
        const char *text;
    } cases[] = {
        {-30 * G_TIME_SPAN_SECOND, "just now"}, /* the daemon's clock a little ahead */
        {0, "just now"},
        {59 * G_TIME_SPAN_SECOND, "just now"},
        {60 * G_TIME_SPAN_SECOND, "1 min"},
        {59 * G_TIME_SPAN_MINUTE, "59 min"},
        {G_TIME_SPAN_HOUR, "1 h"},
        {23 * G_TIME_SPAN_HOUR + 59 * G_TIME_SPAN_MINUTE, "23 h"},
        {G_TIME_SPAN_DAY, "1 day"},
        {400 * G_TIME_SPAN_DAY, "400 days"},
    };
    g_autoptr(GDateTime) now = einsora_format_parse_time("2026-11-29T12:00:00.000000Z");

    g_assert_nonnull(now);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GDateTime) then = g_date_time_add(now, -cases[i].ago);
        g_autofree gchar *text = einsora_format_age(then, now);

        g_assert_cmpstr(text, ==, cases[i].text);
    }
}

static void
test_ago(void)
{
    static const struct {
        GTimeSpan ago;
        const char *text;
    } cases[] = {
        {-5 * G_TIME_SPAN_SECOND, "just now"}, /* the daemon's clock a little ahead */
        {G_TIME_SPAN_SECOND / 2, "just now"},    {12 * G_TIME_SPAN_SECOND, "12 s ago"},
        {59 * G_TIME_SPAN_SECOND, "59 s ago"},   {60 * G_TIME_SPAN_SECOND, "1 min ago"},
        {59 * G_TIME_SPAN_MINUTE, "59 min ago"}, {2 * G_TIME_SPAN_HOUR, "2 h ago"},
        {G_TIME_SPAN_DAY, "1 day ago"},          {4 * G_TIME_SPAN_DAY, "4 days ago"},
    };
    g_autoptr(GDateTime) now = einsora_format_parse_time("2026-11-29T12:00:00.000000Z");

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GDateTime) then = g_date_time_add(now, -cases[i].ago);
        g_autofree gchar *text = einsora_format_ago(then, now);

        g_assert_cmpstr(text, ==, cases[i].text);
    }
}

/* Whole seconds either way, rounded, as `einsora machines` prints them;
 * the extremes don't overflow. */
static void
test_clock_offset(void)
{
    static const struct {
        gint64 ms;
        const char *text;
    } cases[] = {
        {0, "clock off by 0 s"},
        {42400, "clock off by 42 s"},
        {42500, "clock off by 43 s"},
        {-90000, "clock off by 90 s"},
        {G_MININT64, "clock off by 9223372036854776 s"},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *text = einsora_format_clock_offset(cases[i].ms);
        g_assert_cmpstr(text, ==, cases[i].text);
    }
}

static void
test_date(void)
{
    g_autoptr(GDateTime) time = einsora_format_parse_time("2026-11-28T12:00:00Z");
    g_autofree gchar *text = einsora_format_date(time);

    /* (noon UTC: the same day in any zone within 12 h) */
    g_assert_cmpstr(text, ==, "28 Nov 2026");
}

static void
test_parse_time(void)
{
    g_autoptr(GDateTime) time = einsora_format_parse_time("2026-11-29T08:30:15.123456Z");

    g_assert_nonnull(time);
    g_assert_cmpint(g_date_time_get_hour(time), ==, 8);
    g_assert_cmpint(g_date_time_get_microsecond(time), ==, 123456);
    g_assert_null(einsora_format_parse_time("yesterday"));
    g_assert_null(einsora_format_parse_time(""));
    g_assert_null(einsora_format_parse_time(NULL));
}

static void
test_event_time(void)
{
    g_autoptr(GDateTime) now = einsora_format_parse_time("2026-11-29T12:00:00.000000Z");
    g_autoptr(GDateTime) today = einsora_format_parse_time("2026-11-29T08:30:15.000000Z");
    g_autoptr(GDateTime) this_year = einsora_format_parse_time("2026-03-02T08:30:15.000000Z");
    g_autoptr(GDateTime) last_year = einsora_format_parse_time("2025-03-02T08:30:15.000000Z");
    g_autofree gchar *a = einsora_format_event_time(today, now);
    g_autofree gchar *b = einsora_format_event_time(this_year, now);
    g_autofree gchar *c = einsora_format_event_time(last_year, now);

    /* TZ=UTC (set in main): local time is UTC. */
    g_assert_cmpstr(a, ==, "08:30:15");
    g_assert_cmpstr(b, ==, "2 Mar 08:30:15");
    g_assert_cmpstr(c, ==, "2 Mar 2025 08:30:15");
}

static void
test_transition(void)
{
    g_autofree gchar *created = einsora_format_transition(NULL, "pending");
    g_autofree gchar *moved = einsora_format_transition("queued", "provisioning");
    g_autofree gchar *note = einsora_format_transition("running", "running");

    g_assert_cmpstr(created, ==, "created: Pending");
    g_assert_cmpstr(moved, ==, "Queued → Starting");
    g_assert_cmpstr(note, ==, "note");
}

static void
test_reason(void)
{
    static const struct {
        const char *reason;
        guint max;
        const char *text;
    } cases[] = {
        {"admitted on this machine with driver linux-native", 100,
         "admitted on this machine with driver linux-native"},
        {"two\nlines\tand a tab", 100, "two lines and a tab"},
        {"bidi \u202e override", 100, "bidi   override"},
        {"abcdef", 3, "abc…"},
        {"abc", 3, "abc"},
        {"naïve café", 5, "naïve…"},
        {"ok \xff\xfe then garbage", 100, "ok "},
        {"", 10, ""},
        {NULL, 10, ""},
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *text = einsora_format_reason(cases[i].reason, cases[i].max);

        g_assert_cmpstr(text, ==, cases[i].text);
        g_assert_true(g_utf8_validate(text, -1, NULL));
    }
}

static void
test_capacity(void)
{
    /* g_format_size() keeps number and unit together (no-break space). */
    g_autofree gchar *one = einsora_format_capacity(1, 2048);
    g_autofree gchar *many = einsora_format_capacity(16, 65536);

    g_assert_cmpstr(one, ==, "1 CPU · 2.0\u00a0GiB");
    g_assert_cmpstr(many, ==, "16 CPUs · 64.0\u00a0GiB");
}

static void
test_usage(void)
{
    const struct {
        gint64 seconds;
        const char *text;
    } cases[] = {
        {0, "none"},
        {-5, "none"},
        {59, "under a minute"},
        {60, "1 min"},
        {3599, "59 min"},
        {3600, "1.00 hours"},
        {9900, "2.75 hours"},
        {359999, "100 hours"},
        {359900, "99.97 hours"},
        {360000, "100 hours"},
        {4500000, "1250 hours"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *text = einsora_format_usage(cases[i].seconds);
        g_assert_cmpstr(text, ==, cases[i].text);
    }
}

static JsonObject *
workload(const char *id, const char *state, gint64 version, const char *created_at)
{
    g_autofree gchar *text = g_strdup_printf(
        "{\"id\": \"%s\", \"name\": \"nb-%s\", \"kind\": \"notebook\", \"state\": \"%s\","
        " \"gpu_class\": \"cpu-1c-2g\", \"placed_class\": null, \"image\": \"jupyter-linux\","
        " \"region\": \"local\", \"machine_id\": null, \"driver\": null, \"created_at\": \"%s\","
        " \"version\": %" G_GINT64_FORMAT "}",
        id, id, state, created_at, version);
    g_autoptr(JsonNode) node = json_from_string(text, NULL);

    g_assert_nonnull(node);
    return json_object_ref(json_node_get_object(node));
}

static void
on_notify(GObject *object, GParamSpec *pspec, GPtrArray *seen)
{
    g_ptr_array_add(seen, g_strdup(pspec->name));
}

static void
test_item_update(void)
{
    g_autoptr(JsonObject) first = workload("a", "queued", 1, "2026-11-29T10:00:00.000000Z");
    g_autoptr(JsonObject) placed = workload("a", "provisioning", 2, "2026-11-29T10:00:00.000000Z");
    g_autoptr(JsonObject) stale = workload("a", "queued", 1, "2026-11-29T10:00:00.000000Z");
    g_autoptr(JsonObject) other = workload("b", "running", 9, "2026-11-29T10:00:00.000000Z");
    g_autoptr(JsonObject) no_id = json_object_new();
    g_autoptr(EinsoraWorkloadItem) item = einsora_workload_item_new(first);
    g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func(g_free);

    g_assert_null(einsora_workload_item_new(no_id));
    g_assert_nonnull(item);
    g_assert_cmpstr(einsora_workload_item_get_state(item), ==, "queued");
    g_assert_cmpstr(einsora_workload_item_get_class(item), ==, "cpu-1c-2g");
    g_assert_null(einsora_workload_item_get_machine_id(item));
    g_signal_connect(item, "notify", G_CALLBACK(on_notify), seen);

    json_object_set_string_member(placed, "placed_class", "cpu-2c-4g");
    json_object_set_string_member(placed, "machine_id", "m-1");
    json_object_set_string_member(placed, "driver", "linux-native");
    g_assert_true(einsora_workload_item_update(item, placed));
    g_assert_cmpstr(einsora_workload_item_get_state(item), ==, "provisioning");
    g_assert_cmpstr(einsora_workload_item_get_class(item), ==, "cpu-2c-4g");
    g_assert_cmpstr(einsora_workload_item_get_driver(item), ==, "linux-native");
    /* Only what changed is announced, once each. */
    g_assert_cmpuint(seen->len, ==, 4);
    for (guint i = 0; i < seen->len; i++)
        g_assert_true(
            g_strv_contains((const char *const[]){"state", "class", "machine-id", "driver", NULL},
                            g_ptr_array_index(seen, i)));

    /* An older copy, or another workload, changes nothing. */
    g_ptr_array_set_size(seen, 0);
    g_assert_false(einsora_workload_item_update(item, stale));
    g_assert_false(einsora_workload_item_update(item, other));
    g_assert_cmpstr(einsora_workload_item_get_state(item), ==, "provisioning");
    g_assert_cmpuint(seen->len, ==, 0);
    g_assert_finalize_object(g_steal_pointer(&item));
}

/* An endpoint carries its model; a notebook has none, and a workload
 * from a daemon that doesn't say "model" yet reads as having none. */
static void
test_item_endpoint_model(void)
{
    g_autoptr(JsonObject) notebook = workload("n", "running", 1, "2026-11-29T10:00:00.000000Z");
    g_autoptr(JsonObject) endpoint = workload("e", "queued", 1, "2026-11-29T10:00:00.000000Z");
    g_autoptr(JsonObject) renamed = NULL;
    g_autoptr(EinsoraWorkloadItem) plain = einsora_workload_item_new(notebook);
    g_autoptr(EinsoraWorkloadItem) item = NULL;
    g_autoptr(GPtrArray) seen = g_ptr_array_new_with_free_func(g_free);

    g_assert_false(einsora_workload_item_is_endpoint(plain));
    g_assert_null(einsora_workload_item_get_model(plain));

    json_object_set_string_member(endpoint, "kind", "endpoint");
    item = einsora_workload_item_new(endpoint);
    g_assert_true(einsora_workload_item_is_endpoint(item));
    g_assert_null(einsora_workload_item_get_model(item));
    g_signal_connect(item, "notify", G_CALLBACK(on_notify), seen);
    renamed = workload("e", "queued", 2, "2026-11-29T10:00:00.000000Z");
    json_object_set_string_member(renamed, "kind", "endpoint");
    json_object_set_string_member(renamed, "model", "tiny");
    g_assert_true(einsora_workload_item_update(item, renamed));
    g_assert_cmpstr(einsora_workload_item_get_model(item), ==, "tiny");
    g_assert_cmpuint(seen->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(seen, 0), ==, "model");
    g_assert_finalize_object(g_steal_pointer(&item));
}

typedef struct {
    guint position, removed, added;
    guint calls;
} Changes;

static void
on_items_changed(GListModel *model, guint position, guint removed, guint added, Changes *changes)
{
    changes->position = position;
    changes->removed = removed;
    changes->added = added;
    changes->calls++;
}

static void
test_list(void)
{
    g_autoptr(EinsoraWorkloadList) list = einsora_workload_list_new();
    g_autoptr(JsonArray) all = json_array_new();
    g_autoptr(JsonObject) newest = workload("c", "pending", 1, "2026-11-29T12:00:00.000000Z");
    g_autoptr(JsonObject) b_running = workload("b", "running", 5, "2026-11-29T11:00:00.000000Z");
    g_autoptr(JsonObject) b_deleted = workload("b", "deleted", 9, "2026-11-29T11:00:00.000000Z");
    Changes changes = {0};
    EinsoraWorkloadItem *kept;
    g_autoptr(EinsoraWorkloadItem) first = NULL;

    g_assert_cmpuint(g_list_model_get_n_items(G_LIST_MODEL(list)), ==, 0);
    g_assert_true(g_list_model_get_item_type(G_LIST_MODEL(list)) == EINSORA_TYPE_WORKLOAD_ITEM);
    g_signal_connect(list, "items-changed", G_CALLBACK(on_items_changed), &changes);

    json_array_add_object_element(all, workload("a", "stopped", 3, "2026-11-29T10:00:00.000000Z"));
    json_array_add_object_element(all, workload("b", "queued", 2, "2026-11-29T11:00:00.000000Z"));
    json_array_add_object_element(all, workload("z", "deleted", 2, "2026-11-29T11:30:00.000000Z"));
    einsora_workload_list_replace(list, all);
    g_assert_cmpuint(changes.calls, ==, 1);
    g_assert_cmpuint(changes.added, ==, 2);
    g_assert_cmpuint(g_list_model_get_n_items(G_LIST_MODEL(list)), ==, 2);
    first = g_list_model_get_item(G_LIST_MODEL(list), 0);
    g_assert_cmpstr(einsora_workload_item_get_id(first), ==, "b"); /* newest first */
    g_assert_null(einsora_workload_list_lookup(list, "z"));        /* deleted: left out */

    /* A new workload goes first. */
    kept = einsora_workload_list_upsert(list, newest);
    g_assert_nonnull(kept);
    g_assert_cmpuint(changes.calls, ==, 2);
    g_assert_cmpuint(changes.position, ==, 0);
    g_assert_cmpuint(changes.added, ==, 1);
    g_assert_cmpuint(g_list_model_get_n_items(G_LIST_MODEL(list)), ==, 3);

    /* A known one is updated in place: the same object, no list change. */
    kept = einsora_workload_list_upsert(list, b_running);
    g_assert_true(kept == first);
    g_assert_cmpstr(einsora_workload_item_get_state(first), ==, "running");
    g_assert_cmpuint(changes.calls, ==, 2);
    g_assert_cmpuint(einsora_workload_list_count_state(list, "running"), ==, 1);

    /* A reload keeps the objects of the workloads it still has. */
    einsora_workload_list_replace(list, all);
    g_assert_true(einsora_workload_list_lookup(list, "b") == first);
    g_assert_cmpstr(einsora_workload_item_get_state(first), ==, "running"); /* older copy */
    g_assert_null(einsora_workload_list_lookup(list, "c"));

    /* Machines known by name: items placed on one say which. */
    {
        g_autoptr(JsonNode) machines =
            json_from_string("[{\"id\": \"m-1\", \"name\": \"workstation\"}, {\"id\": 7}]", NULL);
        g_autoptr(JsonObject) placed = workload("b", "running", 6, "2026-11-29T11:00:00.000000Z");

        json_object_set_string_member(placed, "machine_id", "m-1");
        einsora_workload_list_upsert(list, placed);
        g_assert_null(einsora_workload_item_get_machine_name(first));
        einsora_workload_list_set_machines(list, json_node_get_array(machines));
        g_assert_cmpstr(einsora_workload_item_get_machine_name(first), ==, "workstation");
    }

    /* Deleted: it leaves the list. */
    g_assert_null(einsora_workload_list_upsert(list, b_deleted));
    g_assert_cmpuint(changes.removed, ==, 1);
    g_assert_null(einsora_workload_list_lookup(list, "b"));
    g_assert_cmpuint(g_list_model_get_n_items(G_LIST_MODEL(list)), ==, 1);
    g_assert_null(g_list_model_get_item(G_LIST_MODEL(list), 1));
    g_assert_finalize_object(g_steal_pointer(&first));
    g_assert_finalize_object(g_steal_pointer(&list));
}

int
main(int argc, char **argv)
{
    g_setenv("TZ", "UTC", TRUE);
    g_setenv("LC_ALL", "C.UTF-8", TRUE);
    setlocale(LC_ALL, "");
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/app/format/state-labels", test_state_labels);
    g_test_add_func("/app/format/state-filter-names", test_state_filter_names);
    g_test_add_func("/app/format/kinds", test_kinds);
    g_test_add_func("/app/format/age", test_age);
    g_test_add_func("/app/format/ago", test_ago);
    g_test_add_func("/app/format/clock-offset", test_clock_offset);
    g_test_add_func("/app/format/date", test_date);
    g_test_add_func("/app/format/parse-time", test_parse_time);
    g_test_add_func("/app/format/event-time", test_event_time);
    g_test_add_func("/app/format/transition", test_transition);
    g_test_add_func("/app/format/reason", test_reason);
    g_test_add_func("/app/format/capacity", test_capacity);
    g_test_add_func("/app/format/usage", test_usage);
    g_test_add_func("/app/workload-item/update", test_item_update);
    g_test_add_func("/app/workload-item/endpoint-model", test_item_endpoint_model);
    g_test_add_func("/app/workload-list/in-step", test_list);
    return g_test_run();
}
