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

/* The queued reason names what is short and, to trusted tenants only,
 * how much is needed and free; untrusted ones learn nothing of others'
 * use. Memory is rounded so that what is free never reads as enough. */
static void
test_waiting_for_capacity(void)
{
    typedef struct {
        EinsoraShortfallKind kind;
        gint64 requested, free;
    } Measure;
    static const struct {
        const char *klass;
        Measure measures[3]; /* kind 0 ends */
        const char *driver;
        gint64 driver_limit;
        const char *trusted, *untrusted;
    } table[] = {
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_CPUS, 2, 1}, {EINSORA_SHORTFALL_MEMORY, 4096, 8192}},
         NULL,
         0,
         "waiting for cpu-2c-4g capacity: needs 2 CPU cores, 1 free",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_CPUS, 2, 8}, {EINSORA_SHORTFALL_MEMORY, 4096, 1536}},
         NULL,
         0,
         "waiting for cpu-2c-4g capacity: needs 4 GiB of memory, 1.5 GiB free",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
        {"l40s-48gb",
         {{EINSORA_SHORTFALL_GPUS, 1, 0}, {EINSORA_SHORTFALL_CPUS, 4, 4}},
         NULL,
         0,
         "waiting for l40s-48gb capacity: needs 1 GPU, 0 free",
         "waiting for l40s-48gb capacity: not enough free right now"},
        {"l40s-x2",
         {{EINSORA_SHORTFALL_GPUS, 2, 1}},
         NULL,
         0,
         "waiting for l40s-x2 capacity: needs 2 GPUs, 1 free",
         "waiting for l40s-x2 capacity: not enough free right now"},
        {"cpu-16c-64g",
         {{EINSORA_SHORTFALL_CPUS, 16, 8}, {EINSORA_SHORTFALL_MEMORY, 65536, 16384}},
         NULL,
         0,
         "waiting for cpu-16c-64g capacity: needs 16 CPU cores, 8 free; 64 GiB of memory, 16 GiB "
         "free",
         "waiting for cpu-16c-64g capacity: not enough free right now"},
        {"cpu-1c-2g",
         {{EINSORA_SHORTFALL_CPUS, 1, -3}, {EINSORA_SHORTFALL_MEMORY, 2048, 0}},
         NULL,
         0,
         "waiting for cpu-1c-2g capacity: needs 1 CPU core, 0 free; 2 GiB of memory, 0 free",
         "waiting for cpu-1c-2g capacity: not enough free right now"},
        /* 4095 MiB must not read as the 4 GiB needed. */
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_MEMORY, 4096, 4095}},
         NULL,
         0,
         "waiting for cpu-2c-4g capacity: needs 4 GiB of memory, 3.9 GiB free",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_MEMORY, 4097, 512}},
         NULL,
         0,
         "waiting for cpu-2c-4g capacity: needs 4.1 GiB of memory, 512 MiB free",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
        {"tiny",
         {{EINSORA_SHORTFALL_MEMORY, 768, 256}},
         NULL,
         0,
         "waiting for tiny capacity: needs 768 MiB of memory, 256 MiB free",
         "waiting for tiny capacity: not enough free right now"},
        /* A cluster counts units of a CPU class. */
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_UNITS, 1, 0}},
         NULL,
         0,
         "waiting for cpu-2c-4g capacity: needs 1 × cpu-2c-4g, 0 free",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_DRIVER, 1, 0}},
         "macos-vz",
         2,
         "waiting for cpu-2c-4g capacity: needs 1 macos-vz slot, 0 free (at most 2 per machine)",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
        /* Nothing known to be short: no figures to anyone. */
        {"cpu-2c-4g",
         {{EINSORA_SHORTFALL_CPUS, 2, 2}},
         NULL,
         0,
         "waiting for cpu-2c-4g capacity: not enough free right now",
         "waiting for cpu-2c-4g capacity: not enough free right now"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(EinsoraShortfall) shortfall = einsora_shortfall_new();
        g_autofree gchar *trusted = NULL;
        g_autofree gchar *untrusted = NULL;
        g_autofree gchar *clean = NULL;

        for (guint m = 0; m < G_N_ELEMENTS(table[i].measures) && table[i].measures[m].kind != 0;
             m++)
            einsora_shortfall_measure(shortfall, table[i].measures[m].kind,
                                      table[i].measures[m].requested, table[i].measures[m].free);
        shortfall->driver = g_strdup(table[i].driver);
        shortfall->driver_limit = table[i].driver_limit;
        trusted = einsora_reason_waiting_for_capacity(table[i].klass, shortfall, TRUE);
        untrusted = einsora_reason_waiting_for_capacity(table[i].klass, shortfall, FALSE);
        g_test_message("case %u: %s", i, trusted);
        g_assert_cmpstr(trusted, ==, table[i].trusted);
        g_assert_cmpstr(untrusted, ==, table[i].untrusted);
        clean = einsora_reason_clean(trusted);
        g_assert_cmpstr(clean, ==, trusted);
    }
    {
        g_autofree gchar *unknown = einsora_reason_waiting_for_capacity("l40s-48gb", NULL, TRUE);
        g_assert_cmpstr(unknown, ==, "waiting for l40s-48gb capacity: not enough free right now");
    }
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
    g_test_add_func("/reason/builders/waiting-for-capacity", test_waiting_for_capacity);
    g_test_add_func("/reason/builders/survive-cleaning", test_builders_survive_cleaning);
    return g_test_run();
}
