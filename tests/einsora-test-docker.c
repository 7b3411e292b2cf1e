#include "einsora-test-docker.h"

#include "einsora-test-port.h"

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static gchar *
find_dockerd(void)
{
    gchar *path = g_find_program_in_path("dockerd");

    if (path == NULL && g_file_test("/usr/sbin/dockerd", G_FILE_TEST_IS_EXECUTABLE))
        path = g_strdup("/usr/sbin/dockerd");
    return path;
}

gchar *
einsora_test_docker_unavailable(void)
{
    g_autofree gchar *dockerd = find_dockerd();
    g_autofree gchar *docker = g_find_program_in_path("docker");

    if (dockerd == NULL || docker == NULL)
        return g_strdup("Debian's docker.io isn't installed (packaging/dev/deps.sh test)");
    if (geteuid() != 0)
        return g_strdup("a private dockerd needs root");
    return NULL;
}

/* A test that fails half-way (g_error) never reaches its stop: the
 * Engine and the registry end with it, stopping what they ran. */
static void
end_with_test(gpointer data)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static gboolean
answers(EinsoraTestDocker *docker)
{
    return einsora_test_docker_get(docker, "/_ping", NULL) == 200;
}

EinsoraTestDocker *
einsora_test_docker_start(void)
{
    EinsoraTestDocker *docker = g_new0(EinsoraTestDocker, 1);
    g_autofree gchar *dockerd = find_dockerd();
    g_autofree gchar *data_root = NULL;
    g_autofree gchar *exec_root = NULL;
    g_autofree gchar *pidfile = NULL;
    g_autofree gchar *host_option = NULL;
    g_autoptr(GError) error = NULL;
    gint64 deadline;
    int log_fd;

    /* Short: the containers' shims put sockets under the exec root. */
    docker->dir = g_dir_make_tmp("edk-XXXXXX", &error);
    g_assert_no_error(error);
    docker->socket_path = g_build_filename(docker->dir, "docker.sock", NULL);
    docker->host = g_strdup_printf("unix://%s", docker->socket_path);
    docker->log_path = g_build_filename(docker->dir, "dockerd.log", NULL);
    data_root = g_build_filename(docker->dir, "root", NULL);
    exec_root = g_build_filename(docker->dir, "exec", NULL);
    pidfile = g_build_filename(docker->dir, "docker.pid", NULL);
    host_option = g_strdup_printf("-H=%s", docker->host);
    {
        g_autofree gchar *data_option = g_strdup_printf("--data-root=%s", data_root);
        g_autofree gchar *exec_option = g_strdup_printf("--exec-root=%s", exec_root);
        g_autofree gchar *pid_option = g_strdup_printf("--pidfile=%s", pidfile);
        const char *argv[] = {dockerd,
                              host_option,
                              data_option,
                              exec_option,
                              pid_option,
                              "--iptables=false",
                              "--ip6tables=false",
                              "--ip-forward=false",
                              "--ip-masq=false",
                              "--bridge=none",
                              "--storage-driver=overlay2",
                              NULL};
        log_fd = open(docker->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        g_assert_cmpint(log_fd, >=, 0);
        g_spawn_async_with_fds(NULL, (gchar **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, end_with_test,
                               NULL, &docker->pid, -1, log_fd, log_fd, &error);
        close(log_fd);
        g_assert_no_error(error);
    }
    deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    while (!answers(docker)) {
        if (g_get_monotonic_time() > deadline) {
            g_autofree gchar *log = NULL;
            g_file_get_contents(docker->log_path, &log, NULL, NULL);
            g_error("the private dockerd didn't answer in 30 s; its log:\n%s", log);
        }
        g_usleep(50 * 1000);
    }
    return docker;
}

void
einsora_test_docker_stop(EinsoraTestDocker *docker)
{
    if (docker == NULL)
        return;
    if (docker->pid > 0) {
        g_autofree gchar *list = NULL;
        const char *const ps[] = {"ps", "-aq", NULL};
        g_auto(GStrv) ids = NULL;

        /* Every container it ran goes with it (they'd outlive it). */
        kill(docker->pid, SIGCONT);
        list = einsora_test_docker_cli(docker, ps);
        ids = g_strsplit(list != NULL ? list : "", "\n", -1);
        for (guint i = 0; ids[i] != NULL; i++) {
            if (*ids[i] == '\0')
                continue;
            const char *const rm[] = {"rm", "-f", ids[i], NULL};
            g_free(einsora_test_docker_cli(docker, rm));
        }
        kill(docker->pid, SIGTERM);
        waitpid(docker->pid, NULL, 0);
        g_spawn_close_pid(docker->pid);
    }
    {
        /* Its overlay mounts are gone with it; what's left is files. */
        const char *argv[] = {"rm", "-rf", docker->dir, NULL};
        g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                     NULL);
    }
    g_free(docker->dir);
    g_free(docker->socket_path);
    g_free(docker->host);
    g_free(docker->log_path);
    g_free(docker);
}

void
einsora_test_docker_pause(EinsoraTestDocker *docker)
{
    g_assert_cmpint(kill(docker->pid, SIGSTOP), ==, 0);
}

void
einsora_test_docker_resume(EinsoraTestDocker *docker)
{
    g_assert_cmpint(kill(docker->pid, SIGCONT), ==, 0);
}

gchar *
einsora_test_docker_cli(EinsoraTestDocker *docker, const char *const *args)
{
    g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) error = NULL;
    gchar *out = NULL;
    g_autofree gchar *err = NULL;
    gint status = 0;

    g_strv_builder_add_many(builder, "docker", "-H", docker->host, NULL);
    g_strv_builder_addv(builder, (const char **)args);
    argv = g_strv_builder_end(builder);
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status,
                      &error) ||
        !g_spawn_check_wait_status(status, &error)) {
        g_test_message("docker %s: %s %s", args[0], error->message, err != NULL ? err : "");
        g_free(out);
        return NULL;
    }
    return out;
}

/* The image's tar, made once per version of the script that makes it. */
static gchar *
jupyter_tar(void)
{
    const char *source = g_getenv("EINSORA_SOURCE_ROOT");
    g_autofree gchar *script = NULL;
    g_autofree gchar *contents = NULL;
    g_autofree gchar *sum = NULL;
    g_autofree gchar *cache = NULL;
    g_autofree gchar *tar = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_nonnull(source);
    script = g_build_filename(source, "tests", "docker", "make-jupyter-image.sh", NULL);
    g_assert_true(g_file_get_contents(script, &contents, NULL, NULL));
    sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, contents, -1);
    cache = g_build_filename(g_get_user_cache_dir(), "einsora", "docker-test", NULL);
    g_assert_cmpint(g_mkdir_with_parents(cache, 0700), ==, 0);
    tar = g_strdup_printf("%s/jupyter-%.16s.tar", cache, sum);
    if (!g_file_test(tar, G_FILE_TEST_EXISTS)) {
        g_autofree gchar *command =
            g_strdup_printf("bash '%s' > '%s.part' && mv '%s.part' '%s'", script, tar, tar, tar);
        const char *argv[] = {"sh", "-c", command, NULL};
        gint status = 0;

        g_test_message("making the notebook image from this machine's Jupyter (once): %s", tar);
        g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   NULL, NULL, &status, &error));
        g_assert_no_error(error);
        g_assert_true(g_spawn_check_wait_status(status, NULL));
    }
    return g_steal_pointer(&tar);
}

void
einsora_test_docker_load_jupyter(EinsoraTestDocker *docker, const char *reference)
{
    g_autofree gchar *tar = jupyter_tar();
    const char *const import[] = {"import", tar, reference, NULL};
    g_autofree gchar *out = einsora_test_docker_cli(docker, import);

    g_assert_nonnull(out);
}

void
einsora_test_docker_load_llama(EinsoraTestDocker *docker, const char *llama_server,
                               const char *reference)
{
    g_autofree gchar *script = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "docker",
                                                "make-llama-image.sh", NULL);
    g_autofree gchar *tar = g_build_filename(docker->dir, "llama.tar", NULL);
    g_autofree gchar *command = g_strdup_printf("bash '%s' '%s' > '%s'", script, llama_server, tar);
    const char *argv[] = {"sh", "-c", command, NULL};
    const char *const import[] = {"import", tar, reference, NULL};
    g_autofree gchar *out = NULL;
    g_autoptr(GError) error = NULL;
    gint status = 0;

    g_assert_true(g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL,
                               NULL, &status, &error));
    g_assert_no_error(error);
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    out = einsora_test_docker_cli(docker, import);
    g_assert_nonnull(out);
    g_unlink(tar);
}

guint
einsora_test_docker_get(EinsoraTestDocker *docker, const char *path, JsonNode **json)
{
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(docker->socket_path);
    g_autoptr(SoupSession) session = soup_session_new_with_options(
        "remote-connectable", address, "proxy-resolver", NULL, "timeout", 10, NULL);
    g_autofree gchar *uri = g_strdup_printf("http://docker/v1.41%s", path);
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GBytes) body = soup_session_send_and_read(session, message, NULL, NULL);

    if (json != NULL) {
        *json = NULL;
        if (body != NULL && g_bytes_get_size(body) > 0) {
            g_autofree gchar *text =
                g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
            *json = json_from_string(text, NULL);
        }
    }
    return body != NULL ? soup_message_get_status(message) : 0;
}

EinsoraTestRegistry *
einsora_test_registry_start(void)
{
    g_autofree gchar *program = g_find_program_in_path("docker-registry");
    EinsoraTestRegistry *registry;
    g_autofree gchar *config = NULL;
    g_autofree gchar *config_path = NULL;
    g_autofree gchar *log_path = NULL;
    g_autoptr(GError) error = NULL;
    gint64 deadline;
    int log_fd;

    if (program == NULL)
        return NULL;
    registry = g_new0(EinsoraTestRegistry, 1);
    registry->dir = g_dir_make_tmp("ereg-XXXXXX", &error);
    g_assert_no_error(error);
    registry->address = g_strdup_printf("127.0.0.1:%u", einsora_test_free_port());
    config = g_strdup_printf("version: 0.1\n"
                             "log:\n  level: warn\n"
                             "storage:\n  filesystem:\n    rootdirectory: %s/data\n"
                             "http:\n  addr: %s\n",
                             registry->dir, registry->address);
    config_path = g_build_filename(registry->dir, "config.yml", NULL);
    g_assert_true(g_file_set_contents(config_path, config, -1, NULL));
    log_path = g_build_filename(registry->dir, "registry.log", NULL);
    log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(log_fd, >=, 0);
    {
        const char *argv[] = {program, "serve", config_path, NULL};
        g_spawn_async_with_fds(NULL, (gchar **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, end_with_test,
                               NULL, &registry->pid, -1, log_fd, log_fd, &error);
    }
    close(log_fd);
    g_assert_no_error(error);
    deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    for (;;) {
        g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 2, NULL);
        g_autofree gchar *uri = g_strdup_printf("http://%s/v2/", registry->address);
        g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
        g_autoptr(GBytes) body = soup_session_send_and_read(session, message, NULL, NULL);

        if (body != NULL && soup_message_get_status(message) == 200)
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50 * 1000);
    }
    return registry;
}

void
einsora_test_registry_stop(EinsoraTestRegistry *registry)
{
    if (registry == NULL)
        return;
    kill(registry->pid, SIGTERM);
    waitpid(registry->pid, NULL, 0);
    g_spawn_close_pid(registry->pid);
    {
        const char *argv[] = {"rm", "-rf", registry->dir, NULL};
        g_spawn_sync(NULL, (gchar **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                     NULL);
    }
    g_free(registry->dir);
    g_free(registry->address);
    g_free(registry);
}

void
einsora_test_docker_push_only(EinsoraTestDocker *docker, EinsoraTestRegistry *registry,
                              const char *reference, const char *name, const char *tag)
{
    g_autofree gchar *target = g_strdup_printf("%s/%s:%s", registry->address, name, tag);
    const char *const tag_args[] = {"tag", reference, target, NULL};
    const char *const push_args[] = {"push", target, NULL};
    const char *const rmi_args[] = {"rmi", target, reference, NULL};
    g_autofree gchar *tagged = einsora_test_docker_cli(docker, tag_args);
    g_autofree gchar *pushed = NULL;
    g_autofree gchar *removed = NULL;

    g_assert_nonnull(tagged);
    pushed = einsora_test_docker_cli(docker, push_args);
    g_assert_nonnull(pushed);
    removed = einsora_test_docker_cli(docker, rmi_args);
    g_assert_nonnull(removed);
}
