#define G_LOG_DOMAIN "einsora-inventory"

#include "einsora-linux-inventory.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "einsora-nvml.h"
#include "einsora-protocol.h"

#define AMD_PCI_VENDOR "0x1002"
#define MIB (G_GUINT64_CONSTANT(1024) * 1024)
/* The kernel's default CFS period, for a cgroup v1 without the file. */
#define CFS_PERIOD_DEFAULT_US 100000

/* The file's contents with surrounding whitespace removed, or NULL when it
 * can't be read: a missing file means the fact isn't there. */
static gchar *
read_trimmed(const char *path)
{
    gchar *contents = NULL;

    if (!g_file_get_contents(path, &contents, NULL, NULL))
        return NULL;
    return g_strstrip(contents);
}

/* The value of the first "@key:" line in a /proc file such as status or
 * meminfo, trimmed. */
static gchar *
read_proc_field(const char *path, const char *key)
{
    g_autofree gchar *contents = NULL;
    g_auto(GStrv) lines = NULL;
    gsize key_len = strlen(key);

    if (!g_file_get_contents(path, &contents, NULL, NULL))
        return NULL;
    lines = g_strsplit(contents, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strncmp(lines[i], key, key_len) == 0 && lines[i][key_len] == ':')
            return g_strstrip(g_strdup(lines[i] + key_len + 1));
    }
    return NULL;
}

static gboolean
parse_uint64(const char *text, guint64 *out)
{
    return text != NULL && g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, out, NULL);
}

/* What einsora_inventory_validate() accepts as a model. */
static gboolean
is_sendable_model(const char *model)
{
    if (model == NULL || model[0] == '\0' || strlen(model) > EINSORA_PROTOCOL_MAX_STRING_BYTES ||
        !g_utf8_validate(model, -1, NULL))
        return FALSE;
    for (const char *p = model; *p != '\0'; p++) {
        if ((guchar)*p < 0x20 || *p == 0x7f)
            return FALSE;
    }
    return TRUE;
}

/* A kernel CPU list ("0-3,8,10-11") counted: FALSE when @text isn't one. */
static gboolean
count_cpu_list(const char *text, gint64 *count)
{
    g_auto(GStrv) items = g_strsplit(text, ",", -1);
    gint64 total = 0;

    for (guint i = 0; items[i] != NULL; i++) {
        g_auto(GStrv) bounds = g_strsplit(g_strstrip(items[i]), "-", 2);
        guint64 first, last;

        if (!parse_uint64(bounds[0], &first))
            return FALSE;
        last = first;
        if (bounds[1] != NULL && !parse_uint64(bounds[1], &last))
            return FALSE;
        if (last < first || last - first >= EINSORA_PROTOCOL_MAX_CPUS)
            return FALSE;
        total += (gint64)(last - first + 1);
    }
    if (total == 0)
        return FALSE;
    *count = total;
    return TRUE;
}

/* How many CPUs this process may run on, before any cgroup quota; 0 when
 * nothing says. */
static gint64
read_affinity_cpus(const char *root)
{
    g_autofree gchar *status = g_build_filename(root, "proc", "self", "status", NULL);
    g_autofree gchar *cpuinfo_path = g_build_filename(root, "proc", "cpuinfo", NULL);
    g_autofree gchar *allowed = read_proc_field(status, "Cpus_allowed_list");
    g_autofree gchar *cpuinfo = NULL;
    gint64 count = 0;

    if (allowed != NULL && count_cpu_list(allowed, &count))
        return count;
    if (g_file_get_contents(cpuinfo_path, &cpuinfo, NULL, NULL)) {
        g_auto(GStrv) lines = g_strsplit(cpuinfo, "\n", -1);
        for (guint i = 0; lines[i] != NULL; i++) {
            if (g_str_has_prefix(lines[i], "processor") &&
                (lines[i][9] == ':' || g_ascii_isspace(lines[i][9])))
                count++;
        }
        if (count > 0)
            return count;
    }
    if (g_str_equal(root, "/")) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (online > 0)
            return online;
    }
    return 0;
}

/* A cgroup controller's hierarchy directory and this process's place in
 * it, as path components (never NULL). */
typedef struct {
    gchar *hierarchy;
    GStrv components;
    gboolean v1;
} Cgroup;

static void
cgroup_free(Cgroup *cgroup)
{
    g_free(cgroup->hierarchy);
    g_strfreev(cgroup->components);
    g_free(cgroup);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Cgroup, cgroup_free)

static GStrv
split_cgroup_path(const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);
    g_autoptr(GStrvBuilder) components = g_strv_builder_new();

    for (guint i = 0; parts[i] != NULL; i++) {
        if (parts[i][0] == '\0' || g_str_equal(parts[i], "."))
            continue;
        /* Never leave the hierarchy: such a path reads only its root. */
        if (g_str_equal(parts[i], ".."))
            return g_new0(gchar *, 1);
        g_strv_builder_add(components, parts[i]);
    }
    return g_strv_builder_end(components);
}

/* Where @controller's limits for this process are, from proc/self/cgroup.
 * A cgroup v1 hierarchy holding @controller wins over the v2 one, since on
 * a hybrid system that is where the controller is. NULL: no cgroup. */
static Cgroup *
find_cgroup(const char *root, const char *controller)
{
    g_autofree gchar *path = g_build_filename(root, "proc", "self", "cgroup", NULL);
    g_autofree gchar *contents = NULL;
    g_autofree gchar *unified_path = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(Cgroup) cgroup = NULL;

    if (!g_file_get_contents(path, &contents, NULL, NULL))
        return NULL;
    lines = g_strsplit(contents, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        /* "ID:controller,list:/path"; the path itself may hold a colon. */
        g_auto(GStrv) fields = g_strsplit(lines[i], ":", 3);
        g_auto(GStrv) controllers = NULL;

        if (g_strv_length(fields) != 3)
            continue;
        if (fields[1][0] == '\0') {
            if (g_str_equal(fields[0], "0") && unified_path == NULL)
                unified_path = g_strdup(fields[2]);
            continue;
        }
        controllers = g_strsplit(fields[1], ",", -1);
        if (!g_strv_contains((const gchar *const *)controllers, controller))
            continue;
        cgroup = g_new0(Cgroup, 1);
        cgroup->v1 = TRUE;
        /* Mounted under its controller list ("cpu,cpuacct"), or at least
         * under the controller's own name. */
        cgroup->hierarchy = g_build_filename(root, "sys", "fs", "cgroup", fields[1], NULL);
        if (!g_file_test(cgroup->hierarchy, G_FILE_TEST_IS_DIR)) {
            g_free(cgroup->hierarchy);
            cgroup->hierarchy = g_build_filename(root, "sys", "fs", "cgroup", controller, NULL);
        }
        cgroup->components = split_cgroup_path(fields[2]);
        return g_steal_pointer(&cgroup);
    }
    if (unified_path == NULL)
        return NULL;
    cgroup = g_new0(Cgroup, 1);
    cgroup->hierarchy = g_build_filename(root, "sys", "fs", "cgroup", NULL);
    cgroup->components = split_cgroup_path(unified_path);
    return g_steal_pointer(&cgroup);
}

/* Each reads one cgroup directory's limit: -1 when it sets none. */
typedef gint64 (*CgroupLimitReader)(const char *dir);

/* "max 100000" or "QUOTA PERIOD", in microseconds. */
static gint64
cpu_v2_limit(const char *dir)
{
    g_autofree gchar *path = g_build_filename(dir, "cpu.max", NULL);
    g_autofree gchar *text = read_trimmed(path);
    g_auto(GStrv) fields = NULL;
    guint64 quota, period;

    if (text == NULL)
        return -1;
    fields = g_strsplit_set(text, " \t", -1);
    if (g_strv_length(fields) != 2 || !parse_uint64(fields[0], &quota) ||
        !parse_uint64(fields[1], &period) || period == 0)
        return -1;
    return (gint64)MIN((quota + period - 1) / period, (guint64)EINSORA_PROTOCOL_MAX_CPUS);
}

static gint64
cpu_v1_limit(const char *dir)
{
    g_autofree gchar *quota_path = g_build_filename(dir, "cpu.cfs_quota_us", NULL);
    g_autofree gchar *period_path = g_build_filename(dir, "cpu.cfs_period_us", NULL);
    g_autofree gchar *quota_text = read_trimmed(quota_path);
    g_autofree gchar *period_text = read_trimmed(period_path);
    guint64 quota, period = CFS_PERIOD_DEFAULT_US;

    /* "-1", which parse_uint64() refuses, is no quota. */
    if (!parse_uint64(quota_text, &quota))
        return -1;
    if (period_text != NULL && (!parse_uint64(period_text, &period) || period == 0))
        return -1;
    return (gint64)MIN((quota + period - 1) / period, (guint64)EINSORA_PROTOCOL_MAX_CPUS);
}

/* A byte count in MiB; "max", or a v1 "unlimited" that is near 2^63, is
 * larger than any machine's memory and so never the smallest. */
static gint64
memory_limit_in(const char *dir, const char *file)
{
    g_autofree gchar *path = g_build_filename(dir, file, NULL);
    g_autofree gchar *text = read_trimmed(path);
    guint64 bytes;

    if (!parse_uint64(text, &bytes))
        return -1;
    return (gint64)MIN(bytes / MIB, (guint64)EINSORA_PROTOCOL_MAX_MEMORY_MIB);
}

static gint64
memory_v2_limit(const char *dir)
{
    return memory_limit_in(dir, "memory.max");
}

static gint64
memory_v1_limit(const char *dir)
{
    return memory_limit_in(dir, "memory.limit_in_bytes");
}

/* The smallest limit from this process's cgroup up to the hierarchy's
 * root, since every ancestor's limit applies too. Walking up also covers
 * a container whose cgroup path doesn't exist under its mount: the mount
 * root is then the container's own cgroup. -1: no limit. */
static gint64
cgroup_limit(const char *root, const char *controller, CgroupLimitReader v1, CgroupLimitReader v2)
{
    g_autoptr(Cgroup) cgroup = find_cgroup(root, controller);
    gint64 smallest = -1;

    if (cgroup == NULL)
        return -1;
    for (gint depth = (gint)g_strv_length(cgroup->components); depth >= 0; depth--) {
        g_autofree gchar *relative = NULL;
        g_autofree gchar *dir = NULL;
        gchar *saved = cgroup->components[depth];
        gint64 limit;

        cgroup->components[depth] = NULL;
        relative = g_build_filenamev(cgroup->components);
        cgroup->components[depth] = saved;
        dir = g_build_filename(cgroup->hierarchy, relative, NULL);
        limit = (cgroup->v1 ? v1 : v2)(dir);
        if (limit >= 0 && (smallest < 0 || limit < smallest))
            smallest = limit;
    }
    return smallest;
}

static gboolean
read_cpus(const char *root, gint64 *cpus, GError **error)
{
    gint64 count = read_affinity_cpus(root);
    gint64 quota;

    if (count <= 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "can't tell how many CPUs there are under %s: neither proc/self/status nor "
                    "proc/cpuinfo says",
                    root);
        return FALSE;
    }
    quota = cgroup_limit(root, "cpu", cpu_v1_limit, cpu_v2_limit);
    if (quota >= 0)
        count = MIN(count, quota);
    *cpus = CLAMP(count, 1, EINSORA_PROTOCOL_MAX_CPUS);
    return TRUE;
}

static gboolean
read_memory(const char *root, gint64 *memory_mib, GError **error)
{
    g_autofree gchar *path = g_build_filename(root, "proc", "meminfo", NULL);
    g_autofree gchar *total = read_proc_field(path, "MemTotal");
    gint64 mib = -1;
    gint64 limit;

    if (total != NULL && g_str_has_suffix(total, " kB")) {
        guint64 kib;
        total[strlen(total) - 3] = '\0';
        if (parse_uint64(g_strstrip(total), &kib))
            mib = (gint64)MIN(kib / 1024, (guint64)EINSORA_PROTOCOL_MAX_MEMORY_MIB);
    }
    if (mib < 0 && g_str_equal(root, "/")) {
        long pages = sysconf(_SC_PHYS_PAGES);
        long page_size = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page_size > 0)
            mib = (gint64)MIN((guint64)pages * (guint64)page_size / MIB,
                              (guint64)EINSORA_PROTOCOL_MAX_MEMORY_MIB);
    }
    if (mib < 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "can't tell how much memory there is: %s has no MemTotal", path);
        return FALSE;
    }
    limit = cgroup_limit(root, "memory", memory_v1_limit, memory_v2_limit);
    if (limit >= 0)
        mib = MIN(mib, limit);
    *memory_mib = mib;
    return TRUE;
}

/* Most machines have no NVIDIA GPU: say why once, not at every read. */
static void
read_nvidia_gpus(const char *library, GPtrArray *gpus)
{
    static gint told = 0;
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) found = einsora_nvml_read_gpus(library, &error);

    if (found == NULL) {
        if (g_atomic_int_compare_and_exchange(&told, 0, 1))
            g_message("no NVIDIA GPUs: %s", error->message);
        else
            g_debug("no NVIDIA GPUs: %s", error->message);
        return;
    }
    for (guint i = 0; i < found->len; i++) {
        EinsoraInventoryGpu *gpu = found->pdata[i];
        /* Kept in its place either way: the i-th is NVML's GPU i. */
        if (!is_sendable_model(gpu->model)) {
            g_message("NVIDIA GPU %u offered as nothing: NVML gives it no usable name", i);
            g_ptr_array_add(gpus, einsora_nvml_unreadable_gpu());
            continue;
        }
        g_ptr_array_add(gpus, g_steal_pointer(&found->pdata[i]));
    }
}

/* "card0", not "card0-DP-1" (a connector) or "renderD128". */
static gboolean
is_drm_card(const char *name, guint64 *number)
{
    return g_str_has_prefix(name, "card") && name[4] != '\0' &&
           g_ascii_string_to_unsigned(name + 4, 10, 0, G_MAXUINT32, number, NULL);
}

static gint
compare_card_numbers(gconstpointer a, gconstpointer b)
{
    guint64 first = 0, second = 0;

    is_drm_card(*(const char *const *)a, &first);
    is_drm_card(*(const char *const *)b, &second);
    return first < second ? -1 : first > second;
}

static EinsoraInventoryGpu *
read_amd_card(const char *device)
{
    g_autofree gchar *vendor_path = g_build_filename(device, "vendor", NULL);
    g_autofree gchar *vendor = read_trimmed(vendor_path);
    g_autofree gchar *product_path = NULL;
    g_autofree gchar *product = NULL;
    g_autofree gchar *vram_path = NULL;
    g_autofree gchar *vram = NULL;
    g_autoptr(EinsoraInventoryGpu) gpu = NULL;
    guint64 bytes;

    if (vendor == NULL || g_ascii_strcasecmp(vendor, AMD_PCI_VENDOR) != 0)
        return NULL;
    product_path = g_build_filename(device, "product_name", NULL);
    product = read_trimmed(product_path);
    vram_path = g_build_filename(device, "mem_info_vram_total", NULL);
    vram = read_trimmed(vram_path);

    gpu = einsora_inventory_gpu_new();
    gpu->vendor = g_strdup("amd");
    /* Only some cards (and kernels) have product_name; the PCI device ID
     * still tells one model from another. */
    if (is_sendable_model(product)) {
        gpu->model = g_steal_pointer(&product);
    } else {
        g_autofree gchar *id_path = g_build_filename(device, "device", NULL);
        g_autofree gchar *id = read_trimmed(id_path);
        gpu->model = is_sendable_model(id) && strlen(id) < 32 ? g_strdup_printf("AMD GPU %s", id)
                                                              : g_strdup("AMD GPU");
    }
    if (parse_uint64(vram, &bytes))
        gpu->memory_mib = (gint64)MIN(bytes / MIB, (guint64)EINSORA_PROTOCOL_MAX_MEMORY_MIB);
    return g_steal_pointer(&gpu);
}

static void
read_amd_gpus(const char *root, GPtrArray *gpus)
{
    g_autofree gchar *drm = g_build_filename(root, "sys", "class", "drm", NULL);
    g_autoptr(GDir) dir = g_dir_open(drm, 0, NULL);
    g_autoptr(GPtrArray) cards = g_ptr_array_new_with_free_func(g_free);
    const char *name;

    if (dir == NULL)
        return;
    while ((name = g_dir_read_name(dir)) != NULL) {
        guint64 number;
        if (is_drm_card(name, &number))
            g_ptr_array_add(cards, g_strdup(name));
    }
    /* In card order, so the same machine always reports the same list. */
    g_ptr_array_sort(cards, compare_card_numbers);
    for (guint i = 0; i < cards->len; i++) {
        g_autofree gchar *device = g_build_filename(drm, cards->pdata[i], "device", NULL);
        EinsoraInventoryGpu *gpu = read_amd_card(device);
        if (gpu != NULL)
            g_ptr_array_add(gpus, gpu);
    }
}

EinsoraInventory *
einsora_linux_inventory_read(const EinsoraLinuxInventorySource *source, GError **error)
{
    g_autoptr(EinsoraInventory) inventory = einsora_inventory_new();
    const char *root;
    struct utsname system;

    g_return_val_if_fail(source != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    root = source->root != NULL ? source->root : "/";
    if (!read_cpus(root, &inventory->cpus, error) ||
        !read_memory(root, &inventory->memory_mib, error))
        return NULL;
    /* The architecture is the running kernel's, never the tree's. */
    if (uname(&system) != 0) {
        int saved = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved),
                    "can't tell this machine's architecture: %s", g_strerror(saved));
        return NULL;
    }
    inventory->os = g_strdup("linux");
    inventory->arch = g_strdup(system.machine);

    read_nvidia_gpus(source->nvml_library != NULL ? source->nvml_library : EINSORA_NVML_LIBRARY,
                     inventory->gpus);
    read_amd_gpus(root, inventory->gpus);
    if (inventory->gpus->len > EINSORA_PROTOCOL_MAX_GPUS)
        g_ptr_array_set_size(inventory->gpus, EINSORA_PROTOCOL_MAX_GPUS);
    return g_steal_pointer(&inventory);
}

static gint
compare_paths(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

gchar **
einsora_linux_inventory_nvidia_device_nodes(const char *root)
{
    g_autofree gchar *dev = g_build_filename(root != NULL ? root : "/", "dev", NULL);
    g_autoptr(GDir) dir = g_dir_open(dev, 0, NULL);
    g_autoptr(GPtrArray) nodes = g_ptr_array_new_with_free_func(g_free);
    const char *name;

    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        g_autofree gchar *path = NULL;
        struct stat info;

        if (!g_str_has_prefix(name, "nvidia"))
            continue;
        path = g_build_filename(dev, name, NULL);
        /* Device nodes, or plain files in a fixture tree; nvidia-caps/ is a
         * directory and not bound whole. */
        if (lstat(path, &info) != 0 || !(S_ISCHR(info.st_mode) || S_ISREG(info.st_mode)))
            continue;
        g_ptr_array_add(nodes, g_steal_pointer(&path));
    }
    g_ptr_array_sort(nodes, compare_paths);
    g_ptr_array_add(nodes, NULL);
    return (gchar **)g_ptr_array_free(g_steal_pointer(&nodes), FALSE);
}
