/* The Linux inventory read from fixture /proc and /sys trees
 * (tests/fixtures/inventory/), NVML through a test double loaded the same
 * way as the real library, and the Docker probe against a small server
 * on a Unix socket. */
#include <dlfcn.h>
#include <glib/gstdio.h>
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <sys/utsname.h>

#include "einsora-docker-probe.h"
#include "einsora-linux-inventory.h"
#include "einsora-nvml.h"
#include "einsora-test-dir.h"

/* No file here: the inventory finds no NVML, as on a machine without
 * NVIDIA's driver. */
#define NO_NVML "/nonexistent/libnvidia-ml.so.1"

static gchar *
fixture_root(const char *name)
{
    const char *source_root = g_getenv("EINSORA_SOURCE_ROOT");

    g_assert_nonnull(source_root);
    return g_build_filename(source_root, "tests", "fixtures", "inventory", name, NULL);
}

static EinsoraInventory *
read_fixture(const char *name, const char *nvml_library)
{
    g_autofree gchar *root = fixture_root(name);
    EinsoraLinuxInventorySource source = {
        .root = root,
        .nvml_library = nvml_library != NULL ? nvml_library : NO_NVML,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraInventory) inventory = einsora_linux_inventory_read(&source, &error);

    g_assert_no_error(error);
    g_assert_nonnull(inventory);
    /* Whatever the tree says, what is sent must be what the hub accepts. */
    einsora_inventory_validate(inventory, "linux", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(inventory->os, ==, "linux");
    g_assert_nonnull(inventory->drivers);
    g_assert_cmpuint(g_strv_length(inventory->drivers), ==, 0);
    return g_steal_pointer(&inventory);
}

static void
write_file(const char *root, const char *relative, const char *contents)
{
    g_autofree gchar *path = g_build_filename(root, relative, NULL);
    g_autofree gchar *dir = g_path_get_dirname(path);
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_file_set_contents(path, contents, -1, &error);
    g_assert_no_error(error);
}

static void
assert_gpu(const EinsoraInventory *inventory, guint index, const char *vendor, const char *model,
           gint64 memory_mib)
{
    const EinsoraInventoryGpu *gpu;

    g_assert_cmpuint(index, <, inventory->gpus->len);
    gpu = inventory->gpus->pdata[index];
    g_assert_cmpstr(gpu->vendor, ==, vendor);
    g_assert_cmpstr(gpu->model, ==, model);
    g_assert_cmpint(gpu->memory_mib, ==, memory_mib);
}

/* Affinity allows 8 CPUs; cpu.max "150000 100000" is 1.5, rounded up,
 * and the looser parent (4 CPUs, 8 GiB) doesn't undo it. */
static void
test_cgroup_v2_quota(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("cgroup-v2-quota", NULL);

    g_assert_cmpint(inventory->cpus, ==, 2);
    /* memory.max 2 GiB under 16000 MiB of MemTotal. */
    g_assert_cmpint(inventory->memory_mib, ==, 2048);
    g_assert_cmpuint(inventory->gpus->len, ==, 0);
}

/* "max" sets no limit: the affinity list "0-3,8,10-11" (7 CPUs) and
 * MemTotal stand. */
static void
test_cgroup_v2_max(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("cgroup-v2-max", NULL);

    g_assert_cmpint(inventory->cpus, ==, 7);
    g_assert_cmpint(inventory->memory_mib, ==, 8000);
}

/* The child allows 4 CPUs and any memory, but its parent only 2 CPUs and
 * 1 GiB: the smallest limit along the path wins. */
static void
test_cgroup_v2_parent_stricter(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("cgroup-v2-nested", NULL);

    g_assert_cmpint(inventory->cpus, ==, 2);
    g_assert_cmpint(inventory->memory_mib, ==, 1024);
}

/* A hybrid system: cpu and memory are v1 controllers (3 CPUs, 4 GiB), and
 * the v2 tree's stricter files are not where those controllers are. */
static void
test_cgroup_v1_quota(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("cgroup-v1-quota", NULL);

    g_assert_cmpint(inventory->cpus, ==, 3);
    g_assert_cmpint(inventory->memory_mib, ==, 4096);
}

/* In a v1 container /proc/self/cgroup names the host's path, which isn't
 * under the container's mount: the mount root's quota (2.5 → 3 of the 8
 * processors cpuinfo lists) applies, and the near-2^63 memory limit means
 * none. */
static void
test_cgroup_v1_container(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("cgroup-v1-container", NULL);

    g_assert_cmpint(inventory->cpus, ==, 3);
    g_assert_cmpint(inventory->memory_mib, ==, 4000);
}

/* A list that doesn't parse isn't believed; cpuinfo is asked instead. */
static void
test_malformed_affinity_falls_back(void)
{
    g_autofree gchar *root = einsora_test_dir_new();
    EinsoraLinuxInventorySource source = {.root = root, .nvml_library = NO_NVML};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraInventory) inventory = NULL;

    write_file(root, "proc/self/status", "Cpus_allowed_list:\t3-1\n");
    write_file(root, "proc/cpuinfo", "processor\t: 0\n\nprocessor\t: 1\n\nprocessors\t: 9\n");
    write_file(root, "proc/meminfo", "MemTotal:        1048576 kB\n");
    inventory = einsora_linux_inventory_read(&source, &error);
    g_assert_no_error(error);
    g_assert_cmpint(inventory->cpus, ==, 2);
    g_assert_cmpint(inventory->memory_mib, ==, 1024);
    einsora_test_dir_remove(root);
}

/* Away from "/", nothing stands in for /proc: a tree without CPUs or
 * memory is an error, not a machine with none. */
static void
test_fails_without_cpus_or_memory(void)
{
    g_autofree gchar *root = einsora_test_dir_new();
    EinsoraLinuxInventorySource source = {.root = root, .nvml_library = NO_NVML};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraInventory) inventory = einsora_linux_inventory_read(&source, &error);

    g_assert_null(inventory);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, "CPUs"));
    g_clear_error(&error);

    write_file(root, "proc/self/status", "Cpus_allowed_list:\t0\n");
    inventory = einsora_linux_inventory_read(&source, &error);
    g_assert_null(inventory);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, "memory"));
    einsora_test_dir_remove(root);
}

/* Cards by number; only AMD's (0x1002), with or without product_name; a
 * connector and a render node are not cards, even with AMD's vendor ID. */
static void
test_amd_gpus_from_sysfs(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("amd-gpus", NULL);

    g_assert_cmpuint(inventory->gpus->len, ==, 2);
    assert_gpu(inventory, 0, "amd", "AMD Instinct MI300X", 196608);
    assert_gpu(inventory, 1, "amd", "AMD GPU 0x744c", 24560);
}

/* The test double, held open here so that its call counters are the ones
 * the inventory's dlopen reaches. */
typedef struct {
    void *module;
    int (*init_calls)(void);
    int (*shutdown_calls)(void);
} FakeNvml;

static gboolean
fake_nvml_open(FakeNvml *fake)
{
    const char *path = g_getenv("EINSORA_FAKE_NVML");

    if (path == NULL) {
        g_test_skip("EINSORA_FAKE_NVML is not set (run through meson test)");
        return FALSE;
    }
    fake->module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    g_assert_nonnull(fake->module);
    fake->init_calls = (int (*)(void))dlsym(fake->module, "fake_nvml_init_calls");
    fake->shutdown_calls = (int (*)(void))dlsym(fake->module, "fake_nvml_shutdown_calls");
    g_assert_nonnull(fake->init_calls);
    g_assert_nonnull(fake->shutdown_calls);
    return TRUE;
}

static void
fake_nvml_close(FakeNvml *fake)
{
    g_unsetenv("FAKE_NVML_GPUS");
    g_unsetenv("FAKE_NVML_INIT_FAIL");
    g_unsetenv("FAKE_NVML_LOST");
    if (fake->module != NULL)
        dlclose(fake->module);
}

/* Names exactly as NVML gives them, memory in MiB; NVML shut down again. */
static void
test_nvml_reports_gpus(void)
{
    FakeNvml fake = {0};
    g_autoptr(EinsoraInventory) inventory = NULL;
    int inits;

    if (!fake_nvml_open(&fake))
        return;
    inits = fake.init_calls();
    g_setenv("FAKE_NVML_GPUS", "NVIDIA H200:143771,NVIDIA L4:23034", TRUE);
    inventory = read_fixture("cgroup-v2-max", g_getenv("EINSORA_FAKE_NVML"));
    g_assert_cmpuint(inventory->gpus->len, ==, 2);
    assert_gpu(inventory, 0, "nvidia", "NVIDIA H200", 143771);
    assert_gpu(inventory, 1, "nvidia", "NVIDIA L4", 23034);
    g_assert_cmpint(fake.init_calls(), ==, inits + 1);
    g_assert_cmpint(fake.shutdown_calls(), ==, fake.init_calls());
    fake_nvml_close(&fake);
}

/* NVIDIA's through NVML and AMD's through sysfs, in one inventory. */
static void
test_nvml_and_amd_together(void)
{
    FakeNvml fake = {0};
    g_autoptr(EinsoraInventory) inventory = NULL;

    if (!fake_nvml_open(&fake))
        return;
    g_setenv("FAKE_NVML_GPUS", "NVIDIA A100-SXM4-80GB:81920", TRUE);
    inventory = read_fixture("amd-gpus", g_getenv("EINSORA_FAKE_NVML"));
    g_assert_cmpuint(inventory->gpus->len, ==, 3);
    assert_gpu(inventory, 0, "nvidia", "NVIDIA A100-SXM4-80GB", 81920);
    assert_gpu(inventory, 1, "amd", "AMD Instinct MI300X", 196608);
    assert_gpu(inventory, 2, "amd", "AMD GPU 0x744c", 24560);
    fake_nvml_close(&fake);
}

/* A driver that won't initialize means no NVIDIA GPUs, not a failed
 * inventory; nothing initialized is shut down. */
static void
test_nvml_init_failure(void)
{
    FakeNvml fake = {0};
    g_autoptr(EinsoraInventory) inventory = NULL;
    g_autoptr(GPtrArray) gpus = NULL;
    g_autoptr(GError) error = NULL;
    int shutdowns;

    if (!fake_nvml_open(&fake))
        return;
    shutdowns = fake.shutdown_calls();
    g_setenv("FAKE_NVML_GPUS", "NVIDIA H200:143771", TRUE);
    g_setenv("FAKE_NVML_INIT_FAIL", "1", TRUE);
    inventory = read_fixture("cgroup-v2-max", g_getenv("EINSORA_FAKE_NVML"));
    g_assert_cmpuint(inventory->gpus->len, ==, 0);

    gpus = einsora_nvml_read_gpus(g_getenv("EINSORA_FAKE_NVML"), &error);
    g_assert_null(gpus);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_nonnull(strstr(error->message, "Driver Not Loaded"));
    g_assert_cmpint(fake.shutdown_calls(), ==, shutdowns);
    fake_nvml_close(&fake);
}

/* No libnvidia-ml at all, or a library that isn't NVML: no NVIDIA GPUs. */
static void
test_nvml_missing(void)
{
    g_autoptr(EinsoraInventory) inventory = read_fixture("cgroup-v2-max", NO_NVML);
    g_autoptr(GPtrArray) gpus = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_cmpuint(inventory->gpus->len, ==, 0);
    gpus = einsora_nvml_read_gpus(NO_NVML, &error);
    g_assert_null(gpus);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
    g_clear_error(&error);

    gpus = einsora_nvml_read_gpus("libc.so.6", &error);
    g_assert_null(gpus);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
    g_assert_nonnull(strstr(error->message, "nvmlInit_v2"));
}

/* One GPU NVML can't reach, or whose name can't be sent, keeps its place
 * as a GPU no class serves (so that the i-th GPU is NVML's GPU i, which
 * placement's choices name); the rest are still reported. */
static void
test_nvml_unusable_gpu_keeps_its_place(void)
{
    FakeNvml fake = {0};
    g_autoptr(EinsoraInventory) lost = NULL;
    g_autoptr(EinsoraInventory) unnamed = NULL;

    if (!fake_nvml_open(&fake))
        return;
    g_setenv("FAKE_NVML_GPUS", "NVIDIA H100 80GB HBM3:81559,NVIDIA L4:23034", TRUE);
    g_setenv("FAKE_NVML_LOST", "0", TRUE);
    lost = read_fixture("cgroup-v2-max", g_getenv("EINSORA_FAKE_NVML"));
    g_assert_cmpuint(lost->gpus->len, ==, 2);
    assert_gpu(lost, 0, "nvidia", EINSORA_NVML_UNREADABLE_MODEL, 0);
    assert_gpu(lost, 1, "nvidia", "NVIDIA L4", 23034);
    g_unsetenv("FAKE_NVML_LOST");

    g_setenv("FAKE_NVML_GPUS", "NVIDIA\tBad:1024,NVIDIA L4:23034", TRUE);
    unnamed = read_fixture("cgroup-v2-max", g_getenv("EINSORA_FAKE_NVML"));
    g_assert_cmpuint(unnamed->gpus->len, ==, 2);
    assert_gpu(unnamed, 0, "nvidia", EINSORA_NVML_UNREADABLE_MODEL, 0);
    assert_gpu(unnamed, 1, "nvidia", "NVIDIA L4", 23034);
    g_assert_cmpint(fake.shutdown_calls(), ==, fake.init_calls());
    fake_nvml_close(&fake);
}

/* Which device node is which GPU: NVML's minor for each index, not the
 * index itself; one NVML can't reach has none. */
static void
test_nvml_minors(void)
{
    FakeNvml fake = {0};
    const char *library = g_getenv("EINSORA_FAKE_NVML");
    g_autoptr(GError) error = NULL;

    if (!fake_nvml_open(&fake))
        return;
    g_setenv("FAKE_NVML_GPUS", "NVIDIA L4:23034,NVIDIA L4:23034", TRUE);
    g_setenv("FAKE_NVML_MINORS", "5,2", TRUE);
    {
        g_autoptr(GArray) minors = einsora_nvml_read_minors(library, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(minors->len, ==, 2);
        g_assert_cmpuint(g_array_index(minors, guint, 0), ==, 5);
        g_assert_cmpuint(g_array_index(minors, guint, 1), ==, 2);
    }
    g_setenv("FAKE_NVML_LOST", "0", TRUE);
    {
        g_autoptr(GArray) minors = einsora_nvml_read_minors(library, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(g_array_index(minors, guint, 0), ==, G_MAXUINT);
        g_assert_cmpuint(g_array_index(minors, guint, 1), ==, 2);
    }
    g_unsetenv("FAKE_NVML_LOST");
    g_unsetenv("FAKE_NVML_MINORS");
    g_assert_null(einsora_nvml_read_minors("/nonexistent/libnvidia-ml.so.1", &error));
    g_assert_nonnull(error);
    g_assert_cmpint(fake.shutdown_calls(), ==, fake.init_calls());
    fake_nvml_close(&fake);
}

/* Top-level nvidia* nodes, sorted, as full paths; not nvidia-caps/ (a
 * directory) nor other devices. */
static void
test_nvidia_device_nodes(void)
{
    g_autofree gchar *root = fixture_root("nvidia-devices");
    g_auto(GStrv) nodes = einsora_linux_inventory_nvidia_device_nodes(root);
    const char *const expected[] = {
        "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidiactl",
    };

    g_assert_cmpuint(g_strv_length(nodes), ==, G_N_ELEMENTS(expected));
    for (guint i = 0; i < G_N_ELEMENTS(expected); i++) {
        g_autofree gchar *path = g_build_filename(root, "dev", expected[i], NULL);
        g_assert_cmpstr(nodes[i], ==, path);
    }
}

static void
test_no_nvidia_device_nodes(void)
{
    g_autofree gchar *root = einsora_test_dir_new();
    g_auto(GStrv) nodes = einsora_linux_inventory_nvidia_device_nodes(root);

    g_assert_nonnull(nodes);
    g_assert_cmpuint(g_strv_length(nodes), ==, 0);
    einsora_test_dir_remove(root);
}

/* This machine, read as the agent reads it. */
static void
test_real_machine(void)
{
    EinsoraLinuxInventorySource source = {.root = "/"};
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraInventory) inventory = einsora_linux_inventory_read(&source, &error);
    struct utsname system;

    g_assert_no_error(error);
    g_assert_nonnull(inventory);
    g_assert_cmpint(inventory->cpus, >=, 1);
    g_assert_cmpint(inventory->memory_mib, >, 0);
    g_assert_cmpint(uname(&system), ==, 0);
    g_assert_cmpstr(inventory->arch, ==, system.machine);
    einsora_inventory_validate(inventory, "linux", &error);
    g_assert_no_error(error);
    for (guint i = 0; i < inventory->gpus->len; i++) {
        const EinsoraInventoryGpu *gpu = inventory->gpus->pdata[i];
        g_test_message("GPU %u: %s %s, %" G_GINT64_FORMAT " MiB", i, gpu->vendor, gpu->model,
                       gpu->memory_mib);
    }
}

/* The Docker probe, against servers on Unix sockets in a private
 * directory. */
typedef struct {
    gchar *dir;
    gchar *socket_path;
    SoupServer *server;
    GSocket *socket; /* one that listens and never accepts */
} DockerFixture;

static void
docker_fixture_set_up(DockerFixture *f, gconstpointer data)
{
    f->dir = einsora_test_dir_new();
    f->socket_path = g_build_filename(f->dir, "docker.sock", NULL);
}

/* The server sees the probe's connection close only on the loop: let it,
 * so nothing of that connection is left when the server goes. */
static void
drain_then_disconnect(DockerFixture *f)
{
    gint64 until = g_get_monotonic_time() + 100 * 1000;

    while (g_get_monotonic_time() < until)
        g_main_context_iteration(NULL, FALSE);
    if (f->server != NULL)
        soup_server_disconnect(f->server);
    g_clear_object(&f->server);
}

static void
docker_fixture_tear_down(DockerFixture *f, gconstpointer data)
{
    drain_then_disconnect(f);
    g_clear_object(&f->socket);
    einsora_test_dir_remove(f->dir);
    g_free(f->socket_path);
    g_free(f->dir);
}

static GSocket *
listen_on(const char *path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(path);
    g_autoptr(GSocket) socket =
        g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT, &error);

    g_assert_no_error(error);
    g_socket_bind(socket, address, TRUE, &error);
    g_assert_no_error(error);
    g_socket_listen(socket, &error);
    g_assert_no_error(error);
    return g_steal_pointer(&socket);
}

static void
on_ping(SoupServer *server, SoupServerMessage *message, const char *path, GHashTable *query,
        gpointer user_data)
{
    const char *body = user_data;

    /* One request per connection, as a probe makes: the server lets go
     * of each connection once it has answered. */
    soup_message_headers_replace(soup_server_message_get_response_headers(message), "Connection",
                                 "close");
    if (g_strcmp0(soup_server_message_get_method(message), SOUP_METHOD_GET) != 0) {
        soup_server_message_set_status(message, SOUP_STATUS_METHOD_NOT_ALLOWED, NULL);
        return;
    }
    if (body == NULL) {
        soup_server_message_set_status(message, SOUP_STATUS_NOT_FOUND, NULL);
        return;
    }
    soup_server_message_set_status(message, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(message, "text/plain", SOUP_MEMORY_STATIC, body, strlen(body));
}

/* @body: what /_ping answers with 200; NULL answers 404. */
static void
serve_ping(DockerFixture *f, const char *body)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocket) socket = listen_on(f->socket_path);

    f->server = soup_server_new(NULL, NULL);
    soup_server_add_handler(f->server, "/_ping", on_ping, (gpointer)body, NULL);
    soup_server_listen_socket(f->server, socket, 0, &error);
    g_assert_no_error(error);
}

static void
on_probed(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

static gboolean
probe(const char *socket_path, guint timeout_ms, GCancellable *cancellable, GError **error)
{
    g_autoptr(GAsyncResult) result = NULL;

    einsora_docker_probe_async(socket_path, timeout_ms, cancellable, on_probed, &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    return einsora_docker_probe_finish(result, error);
}

static void
test_docker_answers(DockerFixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    serve_ping(f, "OK");
    g_assert_true(probe(f->socket_path, 5000, NULL, &error));
    g_assert_no_error(error);
}

static void
test_docker_nothing_listens(DockerFixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    g_assert_false(probe(f->socket_path, 5000, NULL, &error));
    g_assert_nonnull(error);
    g_assert_false(g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT));
    g_assert_nonnull(strstr(error->message, f->socket_path));
}

/* Something answers, but not as Docker does. */
static void
test_docker_not_docker(DockerFixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;

    serve_ping(f, NULL);
    g_assert_false(probe(f->socket_path, 5000, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_nonnull(strstr(error->message, "404"));
    g_clear_error(&error);

    drain_then_disconnect(f);
    g_unlink(f->socket_path);
    serve_ping(f, "pong");
    g_assert_false(probe(f->socket_path, 5000, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
}

/* A daemon that accepts the connection and never answers is no Docker,
 * once the time limit has passed. */
static void
test_docker_times_out(DockerFixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    gint64 start = g_get_monotonic_time();

    f->socket = listen_on(f->socket_path);
    g_assert_false(probe(f->socket_path, 200, NULL, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
    g_assert_cmpint(g_get_monotonic_time() - start, >=, 200 * G_TIME_SPAN_MILLISECOND);
    g_assert_cmpint(g_get_monotonic_time() - start, <, 5 * G_TIME_SPAN_SECOND);
}

static gboolean
cancel_soon(gpointer user_data)
{
    g_cancellable_cancel(G_CANCELLABLE(user_data));
    return G_SOURCE_REMOVE;
}

/* The caller's cancel is a cancel, not a timeout. */
static void
test_docker_cancelled(DockerFixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GCancellable) cancellable = g_cancellable_new();

    f->socket = listen_on(f->socket_path);
    g_timeout_add(50, cancel_soon, cancellable);
    g_assert_false(probe(f->socket_path, 10000, cancellable, &error));
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/inventory/cpus/cgroup-v2-quota", test_cgroup_v2_quota);
    g_test_add_func("/inventory/cpus/cgroup-v2-max-is-no-limit", test_cgroup_v2_max);
    g_test_add_func("/inventory/cpus/cgroup-v2-parent-stricter", test_cgroup_v2_parent_stricter);
    g_test_add_func("/inventory/cpus/cgroup-v1-quota", test_cgroup_v1_quota);
    g_test_add_func("/inventory/cpus/cgroup-v1-container-mount-root", test_cgroup_v1_container);
    g_test_add_func("/inventory/cpus/malformed-affinity-falls-back-to-cpuinfo",
                    test_malformed_affinity_falls_back);
    g_test_add_func("/inventory/read/fails-without-cpus-or-memory",
                    test_fails_without_cpus_or_memory);
    g_test_add_func("/inventory/gpus/amd-from-sysfs", test_amd_gpus_from_sysfs);
    g_test_add_func("/inventory/gpus/nvml-reports-gpus", test_nvml_reports_gpus);
    g_test_add_func("/inventory/gpus/nvml-and-amd-together", test_nvml_and_amd_together);
    g_test_add_func("/inventory/gpus/nvml-init-failure-is-no-gpus", test_nvml_init_failure);
    g_test_add_func("/inventory/gpus/nvml-missing-is-no-gpus", test_nvml_missing);
    g_test_add_func("/inventory/gpus/nvml-minors", test_nvml_minors);
    g_test_add_func("/inventory/gpus/nvml-unusable-gpu-keeps-its-place",
                    test_nvml_unusable_gpu_keeps_its_place);
    g_test_add_func("/inventory/devices/nvidia-nodes", test_nvidia_device_nodes);
    g_test_add_func("/inventory/devices/no-nvidia-nodes", test_no_nvidia_device_nodes);
    g_test_add_func("/inventory/real-machine", test_real_machine);
    g_test_add("/docker-probe/answers", DockerFixture, NULL, docker_fixture_set_up,
               test_docker_answers, docker_fixture_tear_down);
    g_test_add("/docker-probe/nothing-listens", DockerFixture, NULL, docker_fixture_set_up,
               test_docker_nothing_listens, docker_fixture_tear_down);
    g_test_add("/docker-probe/not-docker", DockerFixture, NULL, docker_fixture_set_up,
               test_docker_not_docker, docker_fixture_tear_down);
    g_test_add("/docker-probe/times-out", DockerFixture, NULL, docker_fixture_set_up,
               test_docker_times_out, docker_fixture_tear_down);
    g_test_add("/docker-probe/cancelled", DockerFixture, NULL, docker_fixture_set_up,
               test_docker_cancelled, docker_fixture_tear_down);
    return g_test_run();
}
