/* Placement as pure functions, table-driven: region and ownership, the
 * trust matrix, drivers and runtimes, free resources, per-machine limits,
 * and a workload's disk. */
#include "einsora-placement.h"

#define OWNER "0190b5d2-7c4e-7abc-8def-00000000000a"
#define GUEST "0190b5d2-7c4e-7abc-8def-00000000000b"
#define WS "0190b5d2-7c4e-7abc-8def-0000000000c1"     /* owner's workstation */
#define POOL "0190b5d2-7c4e-7abc-8def-0000000000c2"   /* guest's community box */
#define MAC "0190b5d2-7c4e-7abc-8def-0000000000c3"    /* owner's Mac */
#define AWAY "0190b5d2-7c4e-7abc-8def-0000000000c4"   /* owner's, in another region */
#define LOWMEM "0190b5d2-7c4e-7abc-8def-0000000000c5" /* owner's, with 2 GiB */
#define SMALL "0190b5d2-7c4e-7abc-8def-0000000000c6"  /* owner's, with 4 CPUs */

static const char test_catalog[] =
    "{\"version\": 1,"
    " \"regions\": [{\"name\": \"local\"}, {\"name\": \"eu\"}],"
    " \"drivers\": ["
    "  {\"name\": \"linux-native\", \"kinds\": [\"notebook\"], \"accelerators\": [\"cpu\", "
    "\"nvidia\"]},"
    "  {\"name\": \"docker\", \"kinds\": [\"notebook\"], \"accelerators\": [\"cpu\"]},"
    "  {\"name\": \"libvirt\", \"kinds\": [\"vm\"], \"accelerators\": [\"cpu\", \"nvidia\"]},"
    "  {\"name\": \"macos-vz\", \"kinds\": [\"vm\"], \"accelerators\": [\"cpu\"]}],"
    " \"classes\": ["
    "  {\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096, \"accelerator\": \"cpu\"},"
    "  {\"name\": \"cpu-16c-64g\", \"cpus\": 16, \"memory_mib\": 65536, \"accelerator\": \"cpu\"},"
    "  {\"name\": \"l40s-48gb\", \"cpus\": 4, \"memory_mib\": 16384, \"devices\": 1,"
    "   \"accelerator\": \"nvidia\"},"
    "  {\"name\": \"l40s-x2\", \"cpus\": 4, \"memory_mib\": 16384, \"devices\": 2,"
    "   \"accelerator\": \"nvidia\"}],"
    " \"images\": ["
    "  {\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"j\", \"driver_refs\": [\"linux-native\"]},"
    "   \"nvidia\": {\"reference\": \"j\", \"driver_refs\": [\"linux-native\"]}}},"
    "  {\"name\": \"container\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"c\", \"driver_refs\": [\"docker\"]}}},"
    "  {\"name\": \"ubuntu\", \"kinds\": [\"vm\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"u\", \"driver_refs\": [\"libvirt\", \"macos-vz\"]},"
    "   \"nvidia\": {\"reference\": \"u\", \"driver_refs\": [\"libvirt\"]}}}]}";

static EinsoraMachineCapacity *
machine(const char *id, const char *owner, const char *region, const char *os,
        EinsoraSharing sharing, gboolean online, gint64 cpus, gint64 l40s, const char *drivers)
{
    g_autoptr(EinsoraMachine) record = einsora_machine_new();
    EinsoraMachineCapacity *capacity;

    record->id = g_strdup(id);
    record->tenant_id = g_strdup(owner);
    record->name = g_strdup(id + 34); /* the last two characters */
    record->region = g_strdup(region);
    record->os = g_strdup(os);
    record->cpus = cpus;
    record->memory_mib = 65536;
    record->sharing = sharing;
    capacity = einsora_machine_capacity_new(record);
    capacity->online = online;
    if (l40s > 0)
        g_hash_table_insert(capacity->devices, g_strdup("l40s-48gb"), GINT_TO_POINTER((gint)l40s));
    if (l40s > 1)
        g_hash_table_insert(capacity->devices, g_strdup("l40s-x2"), GINT_TO_POINTER((gint)l40s));
    g_strfreev(capacity->drivers);
    capacity->drivers = g_strsplit(drivers, ",", -1);
    return capacity;
}

static EinsoraWorkload *
workload(const char *tenant, const char *kind, const char *klass, const char *image,
         const char *region)
{
    EinsoraWorkload *w = einsora_workload_new();

    w->id = g_strdup("0190b5d2-7c4e-7abc-8def-0000000000ff");
    w->tenant_id = g_strdup(tenant);
    g_assert_true(einsora_workload_kind_from_string(kind, &w->kind));
    w->region = g_strdup(region);
    w->gpu_class = g_strdup(klass);
    w->image = g_strdup(image);
    return w;
}

typedef struct {
    const char *name;
    const char *tenant, *kind, *klass, *image, *region;
    const char *disk_machine, *disk_driver; /* where it ran before */
    const char *machines;                   /* which of the fixed machines are there */
    const char *held_on;                    /* machine already holding one l40s-48gb */
    guint held_vms_on_mac;
    EinsoraPlacementOutcome outcome;
    const char *machine_id, *driver;
    /* NO_CAPACITY: what the closest machine is short of, and the figures
     * of the first of those (GPUs, units, CPUs, memory, driver slots). */
    guint short_of;
    gint64 requested, free;
} PlacementCase;

#define GPUS EINSORA_SHORTFALL_GPUS
#define CPUS EINSORA_SHORTFALL_CPUS
#define MEMORY EINSORA_SHORTFALL_MEMORY
#define DRIVER EINSORA_SHORTFALL_DRIVER

static const PlacementCase cases[] = {
    {"owner-notebook-on-own-machine", OWNER, "notebook", "cpu-2c-4g", "jupyter", "local", NULL,
     NULL, "ws", NULL, 0, EINSORA_PLACEMENT_PLACED, WS, "linux-native", 0, 0, 0},
    {"guest-cannot-use-private-machine", GUEST, "notebook", "cpu-2c-4g", "jupyter", "local", NULL,
     NULL, "ws", NULL, 0, EINSORA_PLACEMENT_NO_MACHINE, NULL, NULL, 0, 0, 0},
    {"weak-driver-only-for-owner", OWNER, "notebook", "cpu-2c-4g", "container", "local", NULL, NULL,
     "dockerpool", NULL, 0, EINSORA_PLACEMENT_NO_DRIVER, NULL, NULL, 0, 0, 0},
    /* bubblewrap's sandbox hosts a Lab's guests (docs/adr/0050). */
    {"sandbox-driver-for-guests", OWNER, "notebook", "cpu-2c-4g", "jupyter", "local", NULL, NULL,
     "pool", NULL, 0, EINSORA_PLACEMENT_PLACED, POOL, "linux-native", 0, 0, 0},
    {"strong-driver-for-others", OWNER, "vm", "cpu-2c-4g", "ubuntu", "local", NULL, NULL, "pool",
     NULL, 0, EINSORA_PLACEMENT_PLACED, POOL, "libvirt", 0, 0, 0},
    {"owner-prefers-nothing-but-fits", GUEST, "notebook", "cpu-2c-4g", "jupyter", "local", NULL,
     NULL, "ws,pool", NULL, 0, EINSORA_PLACEMENT_PLACED, POOL, "linux-native", 0, 0, 0},
    {"gpu-taken", OWNER, "notebook", "l40s-48gb", "jupyter", "local", NULL, NULL, "ws", "ws", 0,
     EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, GPUS, 1, 0},
    {"gpu-free", OWNER, "notebook", "l40s-48gb", "jupyter", "local", NULL, NULL, "ws", NULL, 0,
     EINSORA_PLACEMENT_PLACED, WS, "linux-native", 0, 0, 0},
    {"two-gpus-on-a-one-gpu-machine", OWNER, "notebook", "l40s-x2", "jupyter", "local", NULL, NULL,
     "ws", NULL, 0, EINSORA_PLACEMENT_NO_MACHINE, NULL, NULL, 0, 0, 0},
    {"not-enough-cpus", OWNER, "notebook", "cpu-16c-64g", "jupyter", "local", NULL, NULL, "ws",
     NULL, 0, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, CPUS, 16, 8},
    {"cpu-class-short-of-memory", OWNER, "notebook", "cpu-2c-4g", "jupyter", "local", NULL, NULL,
     "lowmem", NULL, 0, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, MEMORY, 4096, 2048},
    {"short-of-cpus-and-memory", OWNER, "notebook", "cpu-16c-64g", "jupyter", "local", NULL, NULL,
     "lowmem", NULL, 0, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, CPUS | MEMORY, 16, 8},
    /* The reason names the machine closest to fitting, wherever it is. */
    {"closest-machine-named", OWNER, "notebook", "cpu-16c-64g", "jupyter", "local", NULL, NULL,
     "lowmem,ws", NULL, 0, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, CPUS, 16, 8},
    {"closest-machine-named-first", OWNER, "notebook", "cpu-16c-64g", "jupyter", "local", NULL,
     NULL, "ws,lowmem", NULL, 0, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, CPUS, 16, 8},
    {"closer-by-less", OWNER, "notebook", "cpu-16c-64g", "jupyter", "local", NULL, NULL, "small,ws",
     NULL, 0, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, CPUS, 16, 8},
    {"other-region", OWNER, "notebook", "cpu-2c-4g", "jupyter", "eu", NULL, NULL, "ws,away", NULL,
     0, EINSORA_PLACEMENT_PLACED, AWAY, "linux-native", 0, 0, 0},
    {"no-machine-in-region", OWNER, "notebook", "cpu-2c-4g", "jupyter", "eu", NULL, NULL, "ws",
     NULL, 0, EINSORA_PLACEMENT_NO_MACHINE, NULL, NULL, 0, 0, 0},
    {"offline-machine", OWNER, "notebook", "cpu-2c-4g", "jupyter", "local", NULL, NULL, "off", NULL,
     0, EINSORA_PLACEMENT_NO_MACHINE, NULL, NULL, 0, 0, 0},
    {"disk-on-offline-machine", OWNER, "notebook", "cpu-2c-4g", "jupyter", "local", WS,
     "linux-native", "off,pool", NULL, 0, EINSORA_PLACEMENT_WAITING_FOR_DISK, NULL, NULL, 0, 0, 0},
    {"disk-goes-back-home", OWNER, "notebook", "cpu-2c-4g", "jupyter", "local", WS, "linux-native",
     "away,pool,ws", NULL, 0, EINSORA_PLACEMENT_PLACED, WS, "linux-native", 0, 0, 0},
    {"vm-per-machine-limit", OWNER, "vm", "cpu-2c-4g", "ubuntu", "local", NULL, NULL, "mac", NULL,
     2, EINSORA_PLACEMENT_NO_CAPACITY, NULL, NULL, DRIVER, 1, 0},
    {"vm-under-limit", OWNER, "vm", "cpu-2c-4g", "ubuntu", "local", NULL, NULL, "mac", NULL, 1,
     EINSORA_PLACEMENT_PLACED, MAC, "macos-vz", 0, 0, 0},
    {"no-driver-for-kind", OWNER, "vm", "cpu-2c-4g", "ubuntu", "local", NULL, NULL, "nodrv", NULL,
     0, EINSORA_PLACEMENT_NO_DRIVER, NULL, NULL, 0, 0, 0},
};

static EinsoraCapacity *
capacity_for(const char *which)
{
    EinsoraCapacity *capacity = einsora_capacity_new_machines();
    g_auto(GStrv) names = g_strsplit(which, ",", -1);

    for (guint i = 0; names[i] != NULL; i++) {
        const char *n = names[i];
        EinsoraMachineCapacity *m = NULL;
        if (g_str_equal(n, "ws"))
            m = machine(WS, OWNER, "local", "linux", EINSORA_SHARING_PRIVATE, TRUE, 8, 1,
                        "linux-native,libvirt");
        else if (g_str_equal(n, "pool"))
            m = machine(POOL, GUEST, "local", "linux", EINSORA_SHARING_COMMUNITY, TRUE, 8, 0,
                        "linux-native,libvirt");
        else if (g_str_equal(n, "dockerpool"))
            m = machine(POOL, GUEST, "local", "linux", EINSORA_SHARING_COMMUNITY, TRUE, 8, 0,
                        "docker");
        else if (g_str_equal(n, "mac"))
            m = machine(MAC, OWNER, "local", "darwin", EINSORA_SHARING_PRIVATE, TRUE, 8, 0,
                        "macos-vz");
        else if (g_str_equal(n, "away"))
            m = machine(AWAY, OWNER, "eu", "linux", EINSORA_SHARING_PRIVATE, TRUE, 8, 0,
                        "linux-native");
        else if (g_str_equal(n, "off"))
            m = machine(WS, OWNER, "local", "linux", EINSORA_SHARING_PRIVATE, FALSE, 8, 1,
                        "linux-native");
        else if (g_str_equal(n, "lowmem")) {
            m = machine(LOWMEM, OWNER, "local", "linux", EINSORA_SHARING_PRIVATE, TRUE, 8, 0,
                        "linux-native");
            m->memory_mib = 2048;
        } else if (g_str_equal(n, "small"))
            m = machine(SMALL, OWNER, "local", "linux", EINSORA_SHARING_PRIVATE, TRUE, 4, 0,
                        "linux-native");
        else if (g_str_equal(n, "nodrv"))
            m = machine(WS, OWNER, "local", "linux", EINSORA_SHARING_PRIVATE, TRUE, 8, 0,
                        "linux-native");
        g_assert_nonnull(m);
        g_ptr_array_add(capacity->machines, m);
    }
    return capacity;
}

/* Only a workload waiting for capacity says what it is short of; the
 * figures checked are those of the first thing short. */
static void
assert_short_of(const EinsoraPlacementResult *result, guint short_of, gint64 requested, gint64 free)
{
    static const EinsoraShortfallKind order[] = {GPUS, EINSORA_SHORTFALL_UNITS, CPUS, MEMORY,
                                                 DRIVER};
    const EinsoraShortfallAmount *first = NULL;

    if (result->outcome != EINSORA_PLACEMENT_NO_CAPACITY) {
        g_assert_null(result->shortfall);
        g_assert_cmpuint(short_of, ==, 0);
        return;
    }
    g_assert_nonnull(result->shortfall);
    g_assert_cmphex(result->shortfall->short_of, ==, short_of);
    for (guint i = 0; i < G_N_ELEMENTS(order) && first == NULL; i++)
        if (short_of & order[i])
            first = einsora_shortfall_amount(result->shortfall, order[i]);
    g_assert_nonnull(first);
    g_assert_cmpint(first->requested, ==, requested);
    g_assert_cmpint(first->free, ==, free);
}

static void
test_case(gconstpointer data)
{
    const PlacementCase *c = data;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog =
        einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_autoptr(EinsoraWorkload) w = workload(c->tenant, c->kind, c->klass, c->image, c->region);
    g_autoptr(EinsoraCapacity) capacity = capacity_for(c->machines);
    g_autoptr(EinsoraUsage) usage = einsora_usage_new();
    g_autoptr(EinsoraPlacementResult) result = NULL;

    g_assert_no_error(error);
    w->machine_id = g_strdup(c->disk_machine);
    w->driver = g_strdup(c->disk_driver);
    if (c->held_on != NULL) {
        g_autoptr(EinsoraWorkload) other =
            workload(OWNER, "notebook", "l40s-48gb", "jupyter", "local");
        other->machine_id = g_strdup(WS);
        other->driver = g_strdup("linux-native");
        einsora_usage_add(usage, other, einsora_catalog_lookup_class(catalog, "l40s-48gb"));
    }
    for (guint i = 0; i < c->held_vms_on_mac; i++) {
        g_autoptr(EinsoraWorkload) vm = workload(OWNER, "vm", "cpu-2c-4g", "ubuntu", "local");
        vm->machine_id = g_strdup(MAC);
        vm->driver = g_strdup("macos-vz");
        einsora_usage_add(usage, vm, einsora_catalog_lookup_class(catalog, "cpu-2c-4g"));
    }

    result = einsora_placement_place(w, catalog, capacity, usage);
    g_assert_cmpint(result->outcome, ==, c->outcome);
    g_assert_cmpstr(result->machine_id, ==, c->machine_id);
    g_assert_cmpstr(result->driver, ==, c->driver);
    assert_short_of(result, c->short_of, c->requested, c->free);
    if (c->short_of & DRIVER) {
        g_assert_cmpstr(result->shortfall->driver, ==, "macos-vz");
        g_assert_cmpint(result->shortfall->driver_limit, ==, 2);
    }
    if (c->outcome == EINSORA_PLACEMENT_PLACED)
        g_assert_cmpstr(result->placed_class, ==, c->klass);
}

/* Cluster backends offer units per class; placement only counts. */
static void
test_cluster_units(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog =
        einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_autoptr(EinsoraWorkload) w = workload(OWNER, "notebook", "l40s-x2", "jupyter", "local");
    g_autoptr(EinsoraCapacity) capacity = einsora_capacity_new_units();
    g_autoptr(EinsoraUsage) usage = einsora_usage_new();
    const EinsoraComputeClass *pair = einsora_catalog_lookup_class(catalog, "l40s-x2");

    g_hash_table_insert(capacity->units, g_strdup("l40s-x2"), GINT_TO_POINTER(3));
    {
        g_autoptr(EinsoraPlacementResult) result =
            einsora_placement_place(w, catalog, capacity, usage);
        g_assert_cmpint(result->outcome, ==, EINSORA_PLACEMENT_PLACED);
        g_assert_null(result->machine_id);
        g_assert_null(result->shortfall);
    }
    einsora_usage_add(usage, w, pair);
    {
        g_autoptr(EinsoraPlacementResult) result =
            einsora_placement_place(w, catalog, capacity, usage);
        /* Units of a GPU class are its GPUs. */
        assert_short_of(result, GPUS, 2, 1);
    }
    {
        g_autoptr(EinsoraWorkload) small =
            workload(OWNER, "notebook", "cpu-2c-4g", "jupyter", "local");
        g_autoptr(EinsoraPlacementResult) result =
            einsora_placement_place(small, catalog, capacity, usage);
        assert_short_of(result, EINSORA_SHORTFALL_UNITS, 1, 0);
    }
}

static void
assert_same_amount(const EinsoraShortfallAmount *got, const EinsoraShortfallAmount *want)
{
    g_assert_cmpint(got->requested, ==, want->requested);
    g_assert_cmpint(got->free, ==, want->free);
}

static void
assert_same_shortfall(const EinsoraShortfall *got, const EinsoraShortfall *want)
{
    g_assert_true((got == NULL) == (want == NULL));
    if (want == NULL)
        return;
    g_assert_cmphex(got->short_of, ==, want->short_of);
    assert_same_amount(&got->gpus, &want->gpus);
    assert_same_amount(&got->cpus, &want->cpus);
    assert_same_amount(&got->memory_mib, &want->memory_mib);
    assert_same_amount(&got->units, &want->units);
    assert_same_amount(&got->driver_slots, &want->driver_slots);
    g_assert_cmpstr(got->driver, ==, want->driver);
}

/* Placing from a cursor (as a pass placing many of one shape does) says
 * exactly what placing from the first machine says, step by step, as
 * usage grows: the same machine while one fits, the same outcome and
 * figures once none does; and GPU and CPU shapes keep their own cursors. */
static void
test_first_fit_cursor_agrees(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog =
        einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_autoptr(EinsoraCapacity) capacity = einsora_capacity_new_machines();
    g_autoptr(EinsoraUsage) plain = einsora_usage_new();
    g_autoptr(EinsoraUsage) cursored = einsora_usage_new();
    const char *classes[] = {"cpu-2c-4g", "l40s-48gb"};
    guint first[G_N_ELEMENTS(classes)] = {0};
    guint placed = 0;

    for (guint i = 0; i < 8; i++) {
        g_autofree gchar *id = g_strdup_printf("0190b5d2-7c4e-7abc-8def-0000000001%02u", i);
        /* Small and large, one offline, one elsewhere, some with GPUs. */
        g_ptr_array_add(capacity->machines, machine(id, OWNER, i == 5 ? "eu" : "local", "linux",
                                                    EINSORA_SHARING_PRIVATE, i != 2,
                                                    4 + 4 * (i % 3), i % 2, "linux-native"));
    }
    for (guint step = 0; step < 60; step++) {
        guint k = step % G_N_ELEMENTS(classes);
        g_autoptr(EinsoraWorkload) w = workload(OWNER, "notebook", classes[k], "jupyter", "local");
        g_autoptr(EinsoraPlacementResult) want =
            einsora_placement_place(w, catalog, capacity, plain);
        g_autoptr(EinsoraPlacementResult) got =
            einsora_placement_place_from(w, catalog, capacity, cursored, &first[k]);
        const EinsoraComputeClass *klass = einsora_catalog_lookup_class(catalog, classes[k]);

        g_assert_cmpint(got->outcome, ==, want->outcome);
        g_assert_cmpstr(got->machine_id, ==, want->machine_id);
        g_assert_cmpstr(got->driver, ==, want->driver);
        assert_same_shortfall(got->shortfall, want->shortfall);
        if (want->outcome != EINSORA_PLACEMENT_PLACED)
            continue;
        placed++;
        g_free(w->machine_id);
        w->machine_id = g_strdup(want->machine_id);
        w->driver = g_strdup(want->driver);
        einsora_usage_add(plain, w, klass);
        einsora_usage_add(cursored, w, klass);
    }
    /* Some of each were placed, and the machines filled up. */
    g_assert_cmpuint(placed, >, 5);
    g_assert_cmpuint(placed, <, 60);
    g_assert_cmpuint(first[0], >, 0);
}

/* A machine that knows its GPUs (the hub, from the inventory): each
 * workload gets the lowest GPUs nothing else placed there holds, so two
 * never share one; while a GPU is held without a recorded choice (a row
 * from before choices were recorded), and on a machine known only by
 * counts, none is chosen. */
static void
test_gpus_by_device(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraCatalog) catalog =
        einsora_catalog_new_from_data(test_catalog, -1, "test", &error);
    g_autoptr(EinsoraCapacity) capacity = einsora_capacity_new_machines();
    g_autoptr(EinsoraUsage) usage = einsora_usage_new();
    const EinsoraComputeClass *one = einsora_catalog_lookup_class(catalog, "l40s-48gb");
    EinsoraMachineCapacity *ws =
        machine(WS, OWNER, "local", "linux", EINSORA_SHARING_PRIVATE, TRUE, 64, 0, "linux-native");
    const guint64 want[] = {0x1, 0x2, 0x8};

    g_assert_no_error(error);
    /* GPUs 0, 1 and 3 are l40s; GPU 2 is of a class the catalog lacks. */
    einsora_machine_capacity_add_gpu(ws, "l40s-48gb", 0);
    einsora_machine_capacity_add_gpu(ws, "l40s-48gb", 1);
    einsora_machine_capacity_add_gpu(ws, "l40s-48gb", 3);
    g_assert_cmpint(einsora_machine_capacity_devices(ws, "l40s-48gb"), ==, 3);
    g_assert_cmphex(einsora_machine_capacity_gpu_mask(ws, "l40s-48gb"), ==, 0xb);
    g_ptr_array_add(capacity->machines, ws);
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_autoptr(EinsoraWorkload) w = workload(OWNER, "notebook", "l40s-48gb", "jupyter", "local");
        g_autoptr(EinsoraPlacementResult) result =
            einsora_placement_place(w, catalog, capacity, usage);

        g_assert_cmpint(result->outcome, ==, EINSORA_PLACEMENT_PLACED);
        g_assert_cmphex(result->gpu_mask, ==, want[i]);
        w->machine_id = g_strdup(result->machine_id);
        w->driver = g_strdup(result->driver);
        w->gpu_mask = result->gpu_mask;
        einsora_usage_add(usage, w, one);
    }
    {
        g_autoptr(EinsoraWorkload) w = workload(OWNER, "notebook", "l40s-48gb", "jupyter", "local");
        g_autoptr(EinsoraPlacementResult) full =
            einsora_placement_place(w, catalog, capacity, usage);
        g_assert_cmpint(full->outcome, ==, EINSORA_PLACEMENT_NO_CAPACITY);
    }

    /* One held with no recorded choice: which are free can't be told,
     * so none is chosen (the runtime picks, as it did for that one). */
    g_clear_pointer(&usage, einsora_usage_free);
    usage = einsora_usage_new();
    {
        g_autoptr(EinsoraWorkload) old =
            workload(OWNER, "notebook", "l40s-48gb", "jupyter", "local");
        g_autoptr(EinsoraWorkload) w = workload(OWNER, "notebook", "l40s-48gb", "jupyter", "local");
        g_autoptr(EinsoraPlacementResult) result = NULL;

        old->machine_id = g_strdup(WS);
        old->driver = g_strdup("linux-native");
        einsora_usage_add(usage, old, one);
        result = einsora_placement_place(w, catalog, capacity, usage);
        g_assert_cmpint(result->outcome, ==, EINSORA_PLACEMENT_PLACED);
        g_assert_cmphex(result->gpu_mask, ==, 0);
    }

    /* Counts only (a backend that doesn't know which): none chosen. */
    {
        g_autoptr(EinsoraCapacity) counted = capacity_for("ws");
        g_autoptr(EinsoraUsage) empty = einsora_usage_new();
        g_autoptr(EinsoraWorkload) w = workload(OWNER, "notebook", "l40s-48gb", "jupyter", "local");
        g_autoptr(EinsoraPlacementResult) result =
            einsora_placement_place(w, catalog, counted, empty);
        g_assert_cmpint(result->outcome, ==, EINSORA_PLACEMENT_PLACED);
        g_assert_cmphex(result->gpu_mask, ==, 0);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *path = g_strdup_printf("/placement/machines/%s", cases[i].name);
        g_test_add_data_func(path, &cases[i], test_case);
    }
    g_test_add_func("/placement/cluster/units", test_cluster_units);
    g_test_add_func("/placement/machines/first-fit-cursor-agrees", test_first_fit_cursor_agrees);
    g_test_add_func("/placement/machines/gpus-by-device", test_gpus_by_device);
    return g_test_run();
}
