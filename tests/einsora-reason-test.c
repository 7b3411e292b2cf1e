#include "einsora-reason.h"
#include "einsora-redact.h"

static void
test_clean_table(void)
{
    static const struct {
        const char *in;
        const char *out;
    } table[] = {
        {"ready", "ready"},
        {"", "no reason given"},
        {"  \t\n ", "no reason given"},
        {"line one\nline two\r\n\tend", "line one line two end"},
        {"bell\x07 and esc\x1b[31m", "bell and esc [31m"},
        {"pull from https://bob:hunter2@registry.example/x failed",
         "pull from https://[redacted]@registry.example/x failed"},
        {"GET /api?token=abcdef123456&x=1", "GET /api?token=[redacted]&x=1"},
        {"password=hunter2 user=bob", "password=[redacted] user=bob"},
        {"JUPYTER_TOKEN=0123456789abcdef started", "JUPYTER_TOKEN=[redacted] started"},
        {"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
         "Authorization: Bearer [redacted]"},
        {"token \"laptop\" (tsk_Ab3xQ9zLmN0pQrStUvWx)", "token \"laptop\" (tsk_Ab3x…)"},
        {"-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY----- after", "[redacted] after"},
        {"{\"password\": \"hunter2\", \"token\": \"abcdefgh\"}",
         "{\"password\": [redacted], \"token\": [redacted]}"},
        {"run --password hunter2 --user bob", "run --password [redacted] --user bob"},
        {"run --api-token=abc123 now", "run --api-token=[redacted] now"},
        {"design: new layout, author: ann", "design: new layout, author: ann"},
        {"auth: xyz sig=abc", "auth: [redacted] sig=[redacted]"},
        {"right\u202Eto left", "rightto left"},
        {"ok \xff\xfe bytes", "ok \xef\xbf\xbd\xef\xbf\xbd bytes"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autofree gchar *out = einsora_reason_clean(table[i].in);
        g_test_message("case %u: %s", i, out);
        g_assert_cmpstr(out, ==, table[i].out);
        g_assert_true(g_utf8_validate(out, -1, NULL));
    }
}

static void
test_clean_bounds_length(void)
{
    g_autoptr(GString) long_reason = g_string_new(NULL);
    g_autofree gchar *out = NULL;

    for (guint i = 0; i < 300; i++)
        g_string_append(long_reason, "é");
    out = einsora_reason_clean(long_reason->str);
    g_assert_cmpuint(strlen(out), <=, EINSORA_REASON_MAX_BYTES);
    g_assert_true(g_utf8_validate(out, -1, NULL));
    g_assert_true(g_str_has_suffix(out, "…"));
}

static void
test_builders(void)
{
    g_autoptr(EinsoraActor) actor =
        einsora_actor_new("t", "u", "you@example.com", "API token \"laptop\" (tsk_Ab3x…)");
    g_autoptr(EinsoraActor) browser =
        einsora_actor_new("t", "u", "you@example.com", "browser session");
    g_autofree gchar *created = einsora_reason_created(actor);
    g_autofree gchar *stop = einsora_reason_requested(EINSORA_USER_ACTION_STOP, browser);
    g_autofree gchar *open_browser = einsora_reason_access_requested(browser);
    g_autofree gchar *open_token = einsora_reason_access_requested(actor);
    g_autofree gchar *trusted = einsora_reason_waiting_for_capacity("l40s-48gb", 2, 0, TRUE);
    g_autofree gchar *untrusted = einsora_reason_waiting_for_capacity("l40s-48gb", 2, 0, FALSE);
    g_autofree gchar *admitted =
        einsora_reason_admitted(1, "apple-silicon-32gb", "studio", "macos-native", 0);
    g_autofree gchar *cluster = einsora_reason_admitted(2, "l40s-48gb", NULL, NULL, 0);
    g_autofree gchar *chosen = einsora_reason_admitted(2, "l40s-x2", "lab-1", "docker", 0x9);
    g_autofree gchar *driver =
        einsora_reason_waiting_for_driver(EINSORA_WORKLOAD_KIND_NOTEBOOK, "cpu-4c-16g");
    g_autofree gchar *away = einsora_reason_machine_away_too_long(600);
    g_autofree gchar *withdrawn = einsora_reason_class_withdrawn("x");
    /* 2025-11-29 08:46:40 UTC, and idle since 14:02 the day before or that day. */
    gint64 now = G_GINT64_CONSTANT(1764406000) * G_USEC_PER_SEC;
    g_autofree gchar *idle =
        einsora_reason_idle_stopped(3600, now - G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC, now);
    g_autofree gchar *idle_long =
        einsora_reason_idle_stopped(5400, now - G_GINT64_CONSTANT(2) * 86400 * G_USEC_PER_SEC, now);
    g_autofree gchar *span = einsora_reason_format_span(90061);

    g_assert_cmpstr(created, ==, "created by you@example.com (API token \"laptop\" (tsk_Ab3x…))");
    g_assert_cmpstr(stop, ==, "stop requested by you@example.com (browser session)");
    g_assert_cmpstr(open_browser, ==,
                    "open in a browser requested by you@example.com (browser session)");
    g_assert_cmpstr(open_token, ==,
                    "open in a browser requested by you@example.com (API token \"laptop\" "
                    "(tsk_Ab3x…))");
    g_assert_cmpstr(trusted, ==, "waiting for l40s-48gb capacity: requested 2 GPU(s), 0 free");
    g_assert_cmpstr(untrusted, ==,
                    "waiting for l40s-48gb capacity: requested 2 GPU(s), not enough free right "
                    "now");
    g_assert_cmpstr(admitted, ==, "admitted: 1 × apple-silicon-32gb on studio with macos-native");
    g_assert_cmpstr(cluster, ==, "admitted: 2 × l40s-48gb");
    g_assert_cmpstr(chosen, ==, "admitted: 2 × l40s-x2 on lab-1 with docker (GPU 0,3)");
    g_assert_cmpstr(driver, ==,
                    "waiting for a machine with a driver that runs notebooks on cpu-4c-16g: none "
                    "here has one yet");
    g_assert_cmpstr(away, ==, "its machine has been offline for over 10m0s");
    g_assert_cmpstr(idle, ==, "stopped after 1h idle: no activity since 07:46 UTC");
    g_assert_cmpstr(idle_long, ==,
                    "stopped after 1h30m idle: no activity since 2025-11-27 08:46 UTC");
    g_assert_cmpstr(span, ==, "1d1h1m1s");
    g_assert_cmpstr(withdrawn, ==,
                    "can't start: GPU class \"x\" is no longer offered by this installation");
}

/* Every builder's output is already clean: cleaning must not change what
 * the vocabulary says. */
static void
test_builders_survive_cleaning(void)
{
    g_autoptr(EinsoraActor) actor =
        einsora_actor_new("t", "u", "you@example.com", "API token \"laptop\" (tsk_Ab3x…)");
    g_autofree gchar *open_token = einsora_reason_access_requested(actor);
    const char *fixed[] = {
        einsora_reason_waiting_for_disk(),
        einsora_reason_machine_offline(),
        einsora_reason_ready(),
        einsora_reason_released(),
        einsora_reason_gone(),
        einsora_reason_stopped_by_itself(),
        einsora_reason_run_retrying(),
        einsora_reason_observe_retrying(),
        einsora_reason_capacity_retrying(),
        einsora_reason_machine_reported_problem(),
        open_token,
    };

    for (guint i = 0; i < G_N_ELEMENTS(fixed); i++) {
        g_autofree gchar *clean = einsora_reason_clean(fixed[i]);
        g_assert_cmpstr(clean, ==, fixed[i]);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/reason/clean/table", test_clean_table);
    g_test_add_func("/reason/clean/bounds-length", test_clean_bounds_length);
    g_test_add_func("/reason/builders/vocabulary", test_builders);
    g_test_add_func("/reason/builders/survive-cleaning", test_builders_survive_cleaning);
    return g_test_run();
}
