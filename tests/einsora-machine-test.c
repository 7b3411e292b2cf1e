#include "einsora-driver.h"
#include "einsora-machine.h"
#include "einsora-timestamp.h"

static EinsoraMachine *
machine_new(const char *owner, const char *region, const char *os, EinsoraSharing sharing)
{
    EinsoraMachine *machine = einsora_machine_new();
    machine->id = g_strdup("0190b5d2-7c4e-7abc-8def-0123456789ab");
    machine->tenant_id = g_strdup(owner);
    machine->name = g_strdup("studio");
    machine->region = g_strdup(region);
    machine->os = g_strdup(os);
    machine->sharing = sharing;
    return machine;
}

static void
test_can_host(void)
{
    static const struct {
        EinsoraSharing sharing;
        const char *region;
        const char *tenant;
        gboolean expected;
    } table[] = {
        {EINSORA_SHARING_PRIVATE, "local", "owner", TRUE},
        {EINSORA_SHARING_PRIVATE, "local", "guest", FALSE},
        {EINSORA_SHARING_PRIVATE, "eu", "owner", FALSE},
        {EINSORA_SHARING_INVITE, "local", "guest", FALSE}, /* invite counts as private */
        {EINSORA_SHARING_INVITE, "local", "owner", TRUE},
        {EINSORA_SHARING_COMMUNITY, "local", "guest", TRUE},
        {EINSORA_SHARING_COMMUNITY, "eu", "guest", FALSE},
        {EINSORA_SHARING_COMMUNITY, NULL, "guest", FALSE},
        {EINSORA_SHARING_PRIVATE, "local", NULL, FALSE},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(EinsoraMachine) machine =
            machine_new("owner", "local", "linux", table[i].sharing);
        g_test_message("case %u", i);
        g_assert_cmpint(einsora_machine_can_host(machine, table[i].region, table[i].tenant), ==,
                        table[i].expected);
    }
    g_assert_false(einsora_machine_can_host(NULL, "local", "owner"));
}

/* The trust matrix: weak isolation only for the owner's own workloads;
 * bubblewrap's sandbox and VMs for guests too (docs/adr/0050). */
static void
test_permits(void)
{
    static const struct {
        const char *os;
        const char *driver;
        const char *tenant;
        gboolean expected;
    } table[] = {
        {"linux", "linux-native", "owner", TRUE},   {"linux", "linux-native", "guest", TRUE},
        {"linux", "docker", "guest", FALSE},        {"linux", "sim", "guest", FALSE},
        {"linux", "libvirt", "guest", TRUE},        {"linux", "libvirt", "owner", TRUE},
        {"darwin", "macos-native", "owner", TRUE},  {"darwin", "macos-native", "guest", FALSE},
        {"darwin", "macos-vz", "guest", TRUE},      {"darwin", "macos-container", "guest", TRUE},
        {"linux", "macos-vz", "owner", FALSE}, /* a driver runs only on its own OS */
        {"darwin", "linux-native", "owner", FALSE}, {"linux", "sim", "owner", TRUE},
    };

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(EinsoraMachine) machine =
            machine_new("owner", "local", table[i].os, EINSORA_SHARING_COMMUNITY);
        const EinsoraDriverInfo *driver = einsora_driver_lookup(table[i].driver);
        g_test_message("case %u: %s on %s for %s", i, table[i].driver, table[i].os,
                       table[i].tenant);
        g_assert_nonnull(driver);
        g_assert_cmpint(einsora_machine_permits(machine, table[i].tenant, driver), ==,
                        table[i].expected);
    }
}

static void
test_driver_table(void)
{
    guint n = 0;
    const EinsoraDriverInfo *table = einsora_driver_table(&n);
    const EinsoraDriverInfo *vz = einsora_driver_lookup("macos-vz");

    g_assert_cmpuint(n, >=, 7);
    for (guint i = 0; i < n; i++) {
        g_assert_true(einsora_driver_lookup(table[i].name) == &table[i]);
        g_assert_nonnull(einsora_isolation_to_string(table[i].isolation));
    }
    g_assert_null(einsora_driver_lookup("kubernetes"));
    g_assert_null(einsora_driver_lookup(NULL));
    g_assert_cmpuint(vz->per_machine_limit, ==, 2);
    g_assert_cmpint(vz->isolation, ==, EINSORA_ISOLATION_STRONG);
    g_assert_cmpint(einsora_driver_lookup("sim")->isolation, ==, EINSORA_ISOLATION_WEAK);
    g_assert_cmpint(einsora_driver_lookup("docker")->isolation, ==, EINSORA_ISOLATION_WEAK);
    g_assert_cmpint(einsora_driver_lookup("linux-native")->isolation, ==,
                    EINSORA_ISOLATION_SANDBOX);
    g_assert_false(einsora_isolation_hosts_guests(EINSORA_ISOLATION_WEAK));
    g_assert_true(einsora_isolation_hosts_guests(EINSORA_ISOLATION_SANDBOX));
    g_assert_true(einsora_isolation_hosts_guests(EINSORA_ISOLATION_STRONG));
    {
        EinsoraIsolation isolation = EINSORA_ISOLATION_WEAK;
        g_assert_true(einsora_isolation_from_string("sandbox", &isolation));
        g_assert_cmpint(isolation, ==, EINSORA_ISOLATION_SANDBOX);
        g_assert_cmpstr(einsora_isolation_to_string(EINSORA_ISOLATION_SANDBOX), ==, "sandbox");
    }
    g_assert_true(einsora_driver_runs(einsora_driver_lookup("linux-native"),
                                      EINSORA_WORKLOAD_KIND_NOTEBOOK, EINSORA_ACCELERATOR_CPU));
    g_assert_false(einsora_driver_runs(einsora_driver_lookup("linux-native"),
                                       EINSORA_WORKLOAD_KIND_VM, EINSORA_ACCELERATOR_CPU));
    g_assert_false(einsora_driver_runs(einsora_driver_lookup("linux-native"),
                                       EINSORA_WORKLOAD_KIND_NOTEBOOK, EINSORA_ACCELERATOR_APPLE));
    g_assert_false(
        einsora_driver_runs(NULL, EINSORA_WORKLOAD_KIND_NOTEBOOK, EINSORA_ACCELERATOR_CPU));
}

static void
test_sharing_names(void)
{
    EinsoraSharing sharing = EINSORA_SHARING_PRIVATE;

    g_assert_true(einsora_sharing_from_string("community", &sharing));
    g_assert_cmpint(sharing, ==, EINSORA_SHARING_COMMUNITY);
    g_assert_false(einsora_sharing_from_string("public", &sharing));
    g_assert_cmpint(sharing, ==, EINSORA_SHARING_COMMUNITY);
    g_assert_cmpstr(einsora_sharing_to_string(EINSORA_SHARING_INVITE), ==, "invite");
}

/* The two windows: online for 3 minutes after it was last seen, placeable
 * for 45 s; a machine seen a minute ago is the first and not the second. */
static void
test_seen_windows(void)
{
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();
    gint64 seen_us = G_GINT64_CONSTANT(1764406000000000);

    g_assert_false(einsora_machine_seen_within(machine, seen_us, EINSORA_MACHINE_ONLINE_WINDOW_US));
    machine->last_seen_at = einsora_timestamp_format(seen_us);
    g_assert_true(einsora_machine_seen_within(machine, seen_us + 44 * G_USEC_PER_SEC,
                                              EINSORA_MACHINE_PLACEABLE_WINDOW_US));
    g_assert_false(einsora_machine_seen_within(machine, seen_us + 60 * G_USEC_PER_SEC,
                                               EINSORA_MACHINE_PLACEABLE_WINDOW_US));
    g_assert_true(einsora_machine_seen_within(machine, seen_us + 60 * G_USEC_PER_SEC,
                                              EINSORA_MACHINE_ONLINE_WINDOW_US));
    g_assert_false(einsora_machine_seen_within(machine, seen_us + 181 * G_USEC_PER_SEC,
                                               EINSORA_MACHINE_ONLINE_WINDOW_US));
    g_assert_cmpint(EINSORA_MACHINE_PLACEABLE_WINDOW_US, <, EINSORA_MACHINE_ONLINE_WINDOW_US);
}

/* The bound is ±30 s, both ways and inclusive; a machine whose agent
 * never said is not skewed; a copy keeps what its agent said. */
static void
test_clock_skew_bound(void)
{
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();
    g_autoptr(EinsoraMachine) copy = NULL;
    const struct {
        gint64 offset_ms;
        gboolean skewed;
    } cases[] = {
        {0, FALSE},      {30000, FALSE}, {-30000, FALSE},    {30001, TRUE},          {-30001, TRUE},
        {3600000, TRUE}, {-250, FALSE},  {G_MAXINT64, TRUE}, {G_MININT64 + 1, TRUE},
    };

    g_assert_false(einsora_machine_clock_skewed(machine));
    machine->clock_offset_ms = 90000;
    g_assert_false(einsora_machine_clock_skewed(machine));
    machine->has_clock_offset = TRUE;
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        machine->clock_offset_ms = cases[i].offset_ms;
        g_assert_cmpint(einsora_machine_clock_skewed(machine), ==, cases[i].skewed);
    }
    machine->agent_version = g_strdup("0.1.0");
    machine->clock_offset_ms = -45000;
    copy = einsora_machine_copy(machine);
    g_assert_cmpstr(copy->agent_version, ==, "0.1.0");
    g_assert_true(copy->has_clock_offset);
    g_assert_cmpint(copy->clock_offset_ms, ==, -45000);
    g_assert_true(einsora_machine_clock_skewed(copy));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/machine/can-host/region-and-sharing", test_can_host);
    g_test_add_func("/machine/permits/trust-matrix", test_permits);
    g_test_add_func("/driver/table/isolation-from-domain", test_driver_table);
    g_test_add_func("/machine/sharing/names", test_sharing_names);
    g_test_add_func("/machine/seen/two-windows", test_seen_windows);
    g_test_add_func("/machine/clock/skew-bound", test_clock_skew_bound);
    return g_test_run();
}
