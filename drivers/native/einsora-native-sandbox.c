#define G_LOG_DOMAIN "einsora-native"

#include "einsora-native-sandbox.h"

#include <gio/gio.h>
#include <string.h>
#include <unistd.h>

#include "einsora-linux-inventory.h"

#define RUNTIME_DIR_IN_SANDBOX "/tmp/jupyter-runtime"

/* GLib 2.74 has no g_strv_builder_take(). */
static void
add_owned(GStrvBuilder *builder, gchar *value)
{
    g_strv_builder_add(builder, value);
    explicit_bzero(value, strlen(value));
    g_free(value);
}

/* What the system lends the sandbox, read-only: enough for Python,
 * Jupyter and their data, and nothing of anyone's home or of /var. */
static const char *const system_dirs[] = {"/usr", "/opt"};
static const char *const merged_dirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
static const char *const etc_files[] = {
    "/etc/alternatives", "/etc/ca-certificates", "/etc/fonts",     "/etc/group",
    "/etc/host.conf",    "/etc/hosts",           "/etc/jupyter",   "/etc/ld.so.cache",
    "/etc/ld.so.conf",   "/etc/ld.so.conf.d",    "/etc/localtime", "/etc/matplotlibrc",
    "/etc/mime.types",   "/etc/nsswitch.conf",   "/etc/passwd",    "/etc/python3",
    "/etc/python3.11",   "/etc/resolv.conf",     "/etc/ssl",       "/etc/timezone",
};

static void
add_system(EinsoraBwrapArgs *args)
{
    for (guint i = 0; i < G_N_ELEMENTS(system_dirs); i++)
        einsora_bwrap_args_add_pair(args, "--ro-bind-try", system_dirs[i], system_dirs[i]);
    /* Debian's /bin and /lib are links into /usr: the same links inside. */
    for (guint i = 0; i < G_N_ELEMENTS(merged_dirs); i++) {
        g_autofree gchar *target = g_file_read_link(merged_dirs[i], NULL);

        if (target != NULL)
            einsora_bwrap_args_add_pair(args, "--symlink", target, merged_dirs[i]);
        else
            einsora_bwrap_args_add_pair(args, "--ro-bind-try", merged_dirs[i], merged_dirs[i]);
    }
    for (guint i = 0; i < G_N_ELEMENTS(etc_files); i++)
        einsora_bwrap_args_add_pair(args, "--ro-bind-try", etc_files[i], etc_files[i]);
}

static gchar **
server_command(const char *jupyter_path, const char *data_dir, const char *socket_path)
{
    g_autoptr(GStrvBuilder) argv = g_strv_builder_new();

    g_strv_builder_add(argv, jupyter_path);
    g_strv_builder_add(argv, "--no-browser");
    if (geteuid() == 0)
        g_strv_builder_add(argv, "--allow-root");
    add_owned(argv, g_strdup_printf("--sock=%s", socket_path));
    g_strv_builder_add(argv, "--sock-mode=0600");
    g_strv_builder_add(argv, "--KernelManager.transport=ipc");
    add_owned(argv, g_strdup_printf("--notebook-dir=%s", data_dir));
    return g_strv_builder_end(argv);
}

/* pasta gives the sandbox a network namespace of its own with outbound
 * traffic only (every port forward off, both ways); without it there is
 * only loopback. */
static void
add_network(EinsoraBwrapArgs *args, const char *pasta_path)
{
    const char *const prefix[] = {
        pasta_path, "--config-net", "--quiet",  "--tcp-ports", "none", "--udp-ports", "none",
        "--tcp-ns", "none",         "--udp-ns", "none",        "--",   NULL};

    if (pasta_path == NULL)
        einsora_bwrap_args_add_flag(args, "--unshare-net");
    else
        einsora_bwrap_args_set_prefix(args, prefix);
}

/* "nvidia0": one GPU's node; "nvidiactl", "nvidia-uvm": the driver's. */
static gboolean
is_gpu_node(const char *name)
{
    const char *digits = name + strlen("nvidia");

    if (!g_str_has_prefix(name, "nvidia") || *digits == '\0')
        return FALSE;
    for (; *digits != '\0'; digits++) {
        if (!g_ascii_isdigit(*digits))
            return FALSE;
    }
    return TRUE;
}

EinsoraBwrapArgs *
einsora_native_sandbox_build(const EinsoraNativeSandbox *sandbox, GError **error)
{
    g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new(sandbox->bwrap_path);
    const char *data_dir = sandbox->data_dir;
    const char *run_dir = sandbox->run_dir;
    const char *pasta_path = sandbox->pasta_path;
    g_auto(GStrv) command = server_command(sandbox->jupyter_path, data_dir, sandbox->socket_path);

    add_system(args);
    einsora_bwrap_args_add_path(args, "--proc", "/proc");
    einsora_bwrap_args_add_path(args, "--dev", "/dev");
    einsora_bwrap_args_add_path(args, "--tmpfs", "/tmp");
    einsora_bwrap_args_add_path(args, "--tmpfs", "/run");
    if (sandbox->devices > 0) {
        /* The driver table gives this driver CPU and NVIDIA only, so a
         * workload with devices wants NVIDIA's nodes. */
        g_auto(GStrv) nodes = einsora_linux_inventory_nvidia_device_nodes(sandbox->device_root);
        g_autofree gchar *prefix = g_strcmp0(sandbox->device_root, "/") == 0
                                       ? g_strdup("")
                                       : g_strdup(sandbox->device_root);

        if (nodes == NULL || nodes[0] == NULL) {
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                                "this machine has no /dev/nvidia* devices");
            return NULL;
        }
        for (guint i = 0; sandbox->gpu_nodes != NULL && sandbox->gpu_nodes[i] != NULL; i++) {
            g_autofree gchar *node = g_build_filename(prefix, "/dev", sandbox->gpu_nodes[i], NULL);
            if (!g_strv_contains((const char *const *)nodes, node)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                            "its GPU's device node /dev/%s isn't on this machine",
                            sandbox->gpu_nodes[i]);
                return NULL;
            }
        }
        for (guint i = 0; nodes[i] != NULL; i++) {
            const char *inside = nodes[i] + strlen(prefix);
            const char *name = inside + strlen("/dev/");

            /* Another GPU's node (nvidia<N>) is left out when placement
             * chose which: it may be another workload's. */
            if (sandbox->gpu_nodes != NULL && is_gpu_node(name) &&
                !g_strv_contains(sandbox->gpu_nodes, name))
                continue;
            einsora_bwrap_args_add_pair(args, "--dev-bind", nodes[i], inside);
        }
    }
    einsora_bwrap_args_bind(args, data_dir, TRUE);
    einsora_bwrap_args_bind(args, run_dir, TRUE);
    /* The sandbox's own root (where /etc's few files hang) read-only
     * too, once every mount point on it exists. */
    einsora_bwrap_args_add_path(args, "--remount-ro", "/");
    add_network(args, pasta_path);
    einsora_bwrap_args_add_flag(args, "--unshare-pid");
    einsora_bwrap_args_add_flag(args, "--unshare-ipc");
    einsora_bwrap_args_add_flag(args, "--unshare-uts");
    einsora_bwrap_args_add_flag(args, "--unshare-cgroup-try");
    einsora_bwrap_args_add_path(args, "--chdir", data_dir);
    einsora_bwrap_args_set_command(args, (const char *const *)command);
    if (!einsora_bwrap_args_check(args, error))
        return NULL;
    return g_steal_pointer(&args);
}

/* A llama-server outside the system's directories (the one
 * packaging/dev/llama-server.sh builds into a cache, a release build in
 * a home) is lent as its own directory, read-only. */
static void
add_program_dir(EinsoraBwrapArgs *args, const char *program)
{
    g_autofree gchar *dir = g_path_get_dirname(program);

    for (guint i = 0; i < G_N_ELEMENTS(system_dirs); i++) {
        g_autofree gchar *prefix = g_strconcat(system_dirs[i], "/", NULL);
        if (g_str_has_prefix(dir, prefix) || g_str_equal(dir, system_dirs[i]))
            return;
    }
    einsora_bwrap_args_bind(args, dir, FALSE);
}

static void
add_option(GStrvBuilder *argv, const char *option, gchar *value)
{
    g_strv_builder_add(argv, option);
    add_owned(argv, value);
}

gchar **
einsora_native_sandbox_endpoint_command(const EinsoraEndpointSandbox *sandbox)
{
    g_autoptr(GStrvBuilder) argv = g_strv_builder_new();
    gint64 threads = MAX(sandbox->cpus, 1);

    g_strv_builder_add(argv, sandbox->llama_server_path);
    g_strv_builder_add(argv, "--model");
    g_strv_builder_add(argv, EINSORA_NATIVE_MODEL_IN_SANDBOX);
    g_strv_builder_add(argv, "--alias");
    g_strv_builder_add(argv, sandbox->model_name);
    /* A host ending in .sock is a Unix socket to llama-server. */
    g_strv_builder_add(argv, "--host");
    g_strv_builder_add(argv, sandbox->socket_path);
    /* One thread per class CPU, for generating and for prompts alike.
     * llama.cpp takes each value as the next argument, never "--x=y". */
    add_option(argv, "--threads", g_strdup_printf("%" G_GINT64_FORMAT, threads));
    add_option(argv, "--threads-batch", g_strdup_printf("%" G_GINT64_FORMAT, threads));
    add_option(argv, "--ctx-size", g_strdup_printf("%d", EINSORA_NATIVE_ENDPOINT_CONTEXT));
    add_option(argv, "--parallel", g_strdup("1"));
    /* Its prompt cache would take 8 GiB by default: a quarter of the
     * class's memory at most. */
    add_option(argv, "--cache-ram",
               g_strdup_printf("%" G_GINT64_FORMAT, MAX(sandbox->memory_mib / 4, 0)));
    /* Only the inference routes are served through the proxy; the rest
     * of llama-server's own is off. */
    g_strv_builder_add(argv, "--no-webui");
    g_strv_builder_add(argv, "--no-slots");
    g_strv_builder_add(argv, "--offline");
    add_option(argv, "--log-colors", g_strdup("off"));
    return g_strv_builder_end(argv);
}

EinsoraBwrapArgs *
einsora_native_sandbox_build_endpoint(const EinsoraEndpointSandbox *sandbox, GError **error)
{
    g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new(sandbox->bwrap_path);
    g_auto(GStrv) command = einsora_native_sandbox_endpoint_command(sandbox);

    add_system(args);
    add_program_dir(args, sandbox->llama_server_path);
    einsora_bwrap_args_add_path(args, "--proc", "/proc");
    einsora_bwrap_args_add_path(args, "--dev", "/dev");
    einsora_bwrap_args_add_path(args, "--tmpfs", "/tmp");
    einsora_bwrap_args_add_path(args, "--tmpfs", "/run");
    einsora_bwrap_args_add_pair(args, "--ro-bind", sandbox->model_path,
                                EINSORA_NATIVE_MODEL_IN_SANDBOX);
    einsora_bwrap_args_bind(args, sandbox->run_dir, TRUE);
    einsora_bwrap_args_add_path(args, "--remount-ro", "/");
    /* One fixed model in an offline process: no network, not even
     * through pasta. */
    einsora_bwrap_args_add_flag(args, "--unshare-net");
    einsora_bwrap_args_add_flag(args, "--unshare-pid");
    einsora_bwrap_args_add_flag(args, "--unshare-ipc");
    einsora_bwrap_args_add_flag(args, "--unshare-uts");
    einsora_bwrap_args_add_flag(args, "--unshare-cgroup-try");
    einsora_bwrap_args_add_path(args, "--chdir", "/tmp");
    einsora_bwrap_args_set_command(args, (const char *const *)command);
    if (!einsora_bwrap_args_check(args, error))
        return NULL;
    return g_steal_pointer(&args);
}

gchar **
einsora_native_sandbox_endpoint_environment(const char *api_key)
{
    g_autoptr(GStrvBuilder) env = g_strv_builder_new();

    g_strv_builder_add(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    g_strv_builder_add(env, "HOME=/tmp");
    g_strv_builder_add(env, "LANG=C.UTF-8");
    add_owned(env, g_strdup_printf("LLAMA_API_KEY=%s", api_key));
    return g_strv_builder_end(env);
}

EinsoraBwrapArgs *
einsora_native_sandbox_build_endpoint_probe(const char *bwrap_path, const char *llama_server_path,
                                            GError **error)
{
    g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new(bwrap_path);

    add_system(args);
    add_program_dir(args, llama_server_path);
    einsora_bwrap_args_add_path(args, "--proc", "/proc");
    einsora_bwrap_args_add_path(args, "--dev", "/dev");
    einsora_bwrap_args_add_path(args, "--tmpfs", "/tmp");
    einsora_bwrap_args_add_flag(args, "--unshare-net");
    einsora_bwrap_args_add_flag(args, "--unshare-pid");
    {
        const char *const command[] = {llama_server_path, "--version", NULL};
        einsora_bwrap_args_set_command(args, command);
    }
    if (!einsora_bwrap_args_check(args, error))
        return NULL;
    return g_steal_pointer(&args);
}

gchar **
einsora_native_sandbox_environment(const char *data_dir, const char *token)
{
    g_autoptr(GStrvBuilder) env = g_strv_builder_new();
    const char *tz = g_getenv("TZ");

    g_strv_builder_add(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    add_owned(env, g_strdup_printf("HOME=%s", data_dir));
    add_owned(env, g_strdup_printf("USER=%s", g_get_user_name()));
    add_owned(env, g_strdup_printf("LOGNAME=%s", g_get_user_name()));
    g_strv_builder_add(env, "LANG=C.UTF-8");
    g_strv_builder_add(env, "SHELL=/bin/bash");
    g_strv_builder_add(env, "TERM=xterm-256color");
    g_strv_builder_add(env, "PYTHONUNBUFFERED=1");
    g_strv_builder_add(env, "JUPYTER_RUNTIME_DIR=" RUNTIME_DIR_IN_SANDBOX);
    if (tz != NULL && strchr(tz, '\n') == NULL)
        add_owned(env, g_strdup_printf("TZ=%s", tz));
    add_owned(env, g_strdup_printf("JUPYTER_TOKEN=%s", token));
    return g_strv_builder_end(env);
}

EinsoraBwrapArgs *
einsora_native_sandbox_build_probe(const char *bwrap_path, const char *jupyter_path,
                                   const char *pasta_path, GError **error)
{
    g_autoptr(EinsoraBwrapArgs) args = einsora_bwrap_args_new(bwrap_path);

    add_system(args);
    einsora_bwrap_args_add_path(args, "--proc", "/proc");
    einsora_bwrap_args_add_path(args, "--dev", "/dev");
    einsora_bwrap_args_add_path(args, "--tmpfs", "/tmp");
    /* Outbound networking is tried as it will run: through pasta. */
    add_network(args, pasta_path);
    einsora_bwrap_args_add_flag(args, "--unshare-pid");
    {
        const char *const command[] = {jupyter_path, "--version", NULL};
        einsora_bwrap_args_set_command(args, command);
    }
    if (!einsora_bwrap_args_check(args, error))
        return NULL;
    return g_steal_pointer(&args);
}
