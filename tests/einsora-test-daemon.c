#include "einsora-test-daemon.h"

#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-test-dir.h"
#include "einsora-test-postgres.h"

const char *
einsora_test_daemon_path(void)
{
    const char *path = g_getenv("EINSORA_DAEMON");
    g_assert_nonnull(path);
    return path;
}

/* EINSORA_TEST_STORE=postgres runs a suite's daemons on the Postgres
 * store: one private server for the test binary, a database of its own
 * for each daemon (tests/meson.build registers the -pg runs). */
static EinsoraTestPostgres *test_postgres;

static void
stop_test_postgres(void)
{
    g_clear_pointer(&test_postgres, einsora_test_postgres_stop);
}

static gchar *
postgres_database_url(void)
{
    g_autofree gchar *name = NULL;

    if (test_postgres == NULL) {
        test_postgres = einsora_test_postgres_start();
        if (test_postgres == NULL) {
            g_print("1..0 # SKIP PostgreSQL 15 isn't installed (packaging/dev/deps.sh test)\n");
            exit(77);
        }
        atexit(stop_test_postgres);
    }
    name = einsora_test_postgres_create_database(test_postgres, NULL);
    return einsora_test_postgres_conninfo(test_postgres, name);
}

EinsoraTestPostgres *
einsora_test_daemon_get_postgres(void)
{
    return test_postgres;
}

gboolean
einsora_test_daemon_on_postgres(void)
{
    return g_strcmp0(g_getenv("EINSORA_TEST_STORE"), "postgres") == 0;
}

EinsoraTestDaemon *
einsora_test_daemon_new(void)
{
    EinsoraTestDaemon *daemon = g_new0(EinsoraTestDaemon, 1);

    daemon->dir = einsora_test_dir_new();
    daemon->data_dir = g_build_filename(daemon->dir, "data", NULL);
    daemon->log_path = g_build_filename(daemon->dir, "daemon.log", NULL);
    daemon->session = soup_session_new_with_options("timeout", 30, NULL);
    daemon->env = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    /* No drivers unless a test asks (a NULL value unsets a variable, so
     * the daemon picks the drivers that work here), and sockets in the
     * test's own directory, never in the home directory. */
    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "");
    einsora_test_daemon_setenv(daemon, "EINSORA_ACCESS_ADDR", "127.0.0.1:0");
    g_hash_table_insert(daemon->env, g_strdup("EINSORA_AGENT_RUN_DIR"),
                        g_build_filename(daemon->dir, "run", NULL));
    if (einsora_test_daemon_on_postgres())
        g_hash_table_insert(daemon->env, g_strdup("EINSORA_DATABASE_URL"), postgres_database_url());
    return daemon;
}

gchar *
einsora_test_daemon_create_account(EinsoraTestDaemon *daemon, const char *tenant, const char *email,
                                   const char *password)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autofree gchar *out = NULL;
    g_autofree gchar *err = NULL;
    g_autofree gchar *input = g_strdup_printf("%s\n", password != NULL ? password : "");
    const char *fixed[] = {einsora_test_daemon_path(),
                           "--data-dir",
                           daemon->data_dir,
                           "--tenant",
                           tenant,
                           "--email",
                           email};

    for (guint i = 0; i < G_N_ELEMENTS(fixed); i++)
        g_ptr_array_add(argv, (gpointer)fixed[i]);
    if (password != NULL)
        g_ptr_array_add(argv, "--password-stdin");
    g_ptr_array_add(argv, "account");
    g_ptr_array_add(argv, "create");
    g_ptr_array_add(argv, NULL);
    {
        g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
            G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE |
            G_SUBPROCESS_FLAGS_STDERR_PIPE);
        const char *database_url = g_hash_table_lookup(daemon->env, "EINSORA_DATABASE_URL");

        if (database_url != NULL)
            g_subprocess_launcher_setenv(launcher, "EINSORA_DATABASE_URL", database_url, TRUE);
        process = g_subprocess_launcher_spawnv(launcher, (const char *const *)argv->pdata, &error);
    }
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, input, NULL, &out, &err, &error));
    g_assert_no_error(error);
    if (g_subprocess_get_exit_status(process) != 0)
        g_error("account create failed: %s", err);
    g_strstrip(out);
    g_assert_true(g_str_has_prefix(out, "tsk_"));
    /* The token goes to standard output only; nothing secret on stderr. */
    g_assert_null(strstr(err, out));
    if (password != NULL)
        g_assert_null(strstr(err, password));
    return g_steal_pointer(&out);
}

/* @value NULL: the variable is unset for the daemon. */
void
einsora_test_daemon_setenv(EinsoraTestDaemon *daemon, const char *name, const char *value)
{
    g_hash_table_insert(daemon->env, g_strdup(name), g_strdup(value));
}

/* A test that aborts must not leave its daemon running. */
static void
die_with_test(gpointer user_data)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
}

void
einsora_test_daemon_start(EinsoraTestDaemon *daemon)
{
    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_NONE);
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token_path = NULL;
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    /* Log everything, debug included, so the secret check sees it all;
     * one file for every run, appended to. */
    int log_fd = open(daemon->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat st;

    g_assert_cmpint(log_fd, >=, 0);
    g_assert_cmpint(fstat(log_fd, &st), ==, 0);
    g_subprocess_launcher_set_child_setup(launcher, die_with_test, NULL, NULL);
    g_subprocess_launcher_setenv(launcher, "G_MESSAGES_DEBUG", "all", TRUE);
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    {
        GHashTableIter iter;
        gpointer name, value;
        g_hash_table_iter_init(&iter, daemon->env);
        while (g_hash_table_iter_next(&iter, &name, &value)) {
            if (value == NULL)
                g_subprocess_launcher_unsetenv(launcher, name);
            else
                g_subprocess_launcher_setenv(launcher, name, value, TRUE);
        }
    }
    g_subprocess_launcher_take_stdout_fd(launcher, dup(log_fd));
    g_subprocess_launcher_take_stderr_fd(launcher, log_fd);
    daemon->process = g_subprocess_launcher_spawn(
        launcher, &error, einsora_test_daemon_path(), "--data-dir", daemon->data_dir, "--listen",
        daemon->listen != NULL ? daemon->listen : "127.0.0.1:0", NULL);
    g_assert_no_error(error);

    while (daemon->uri == NULL) {
        g_autofree gchar *log = NULL;
        const char *line;

        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        gsize length = 0;
        if (g_file_get_contents(daemon->log_path, &log, &length, NULL) &&
            length > (gsize)st.st_size &&
            (line = strstr(log + st.st_size, "api listening on ")) != NULL &&
            strchr(line, '\n') != NULL) {
            const char *start = line + strlen("api listening on ");
            const char *end = strchr(start, '\n');
            daemon->uri = g_strndup(start, (gsize)(end - start));
            if (g_str_has_suffix(daemon->uri, "/"))
                daemon->uri[strlen(daemon->uri) - 1] = '\0';
            {
                const char *access = g_strrstr(log + st.st_size, "access proxy listening on ");
                g_autofree gchar *access_uri =
                    access != NULL
                        ? g_strndup(access + strlen("access proxy listening on "),
                                    strcspn(access + strlen("access proxy listening on "), " \n"))
                        : NULL;
                g_autoptr(GUri) parsed =
                    access_uri != NULL ? g_uri_parse(access_uri, G_URI_FLAGS_NONE, NULL) : NULL;
                daemon->access_port = parsed != NULL ? (guint)g_uri_get_port(parsed) : 0;
            }
            break;
        }
        /* GSubprocess drops the identifier once the child is reaped. */
        if (g_subprocess_get_identifier(daemon->process) == NULL)
            g_error("einsora-daemon exited before it was ready: %s", log);
        g_usleep(20 * 1000);
    }
    token_path = g_build_filename(daemon->data_dir, "token", NULL);
    if (daemon->owner_token == NULL) {
        g_assert_true(g_file_get_contents(token_path, &daemon->owner_token, NULL, &error));
        g_strstrip(daemon->owner_token);
    }
}

void
einsora_test_daemon_stop(EinsoraTestDaemon *daemon)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *sanitizer_mark = NULL;

    if (daemon->process == NULL)
        return;
    /* What a sanitizer reports at exit (a leak, an invalid access) goes to
     * the daemon's stderr, the log, prefixed "==PID=="; the test's own
     * stderr carries it, so a failed stop says why. */
    sanitizer_mark = g_strdup_printf("==%s==", g_subprocess_get_identifier(daemon->process));
    g_subprocess_send_signal(daemon->process, SIGTERM);
    g_assert_true(g_subprocess_wait(daemon->process, NULL, &error));
    g_assert_no_error(error);
    if (!g_subprocess_get_if_exited(daemon->process) ||
        g_subprocess_get_exit_status(daemon->process) != 0) {
        g_autofree gchar *log = einsora_test_daemon_read_log(daemon);
        const char *report = strstr(log, sanitizer_mark);
        gsize length = strlen(log);

        if (report == NULL)
            report = length > 16384 ? log + length - 16384 : log;
        g_printerr("einsora-daemon did not exit cleanly; its log from there:\n%s\n", report);
    }
    g_assert_true(g_subprocess_get_if_exited(daemon->process));
    g_assert_cmpint(g_subprocess_get_exit_status(daemon->process), ==, 0);
    g_clear_object(&daemon->process);
    g_clear_pointer(&daemon->uri, g_free);
}

void
einsora_test_daemon_kill(EinsoraTestDaemon *daemon)
{
    g_assert_nonnull(daemon->process);
    g_subprocess_force_exit(daemon->process);
    g_assert_true(g_subprocess_wait(daemon->process, NULL, NULL));
    g_assert_true(g_subprocess_get_if_signaled(daemon->process));
    g_clear_object(&daemon->process);
    g_clear_pointer(&daemon->uri, g_free);
}

void
einsora_test_daemon_free(EinsoraTestDaemon *daemon)
{
    if (daemon == NULL)
        return;
    if (daemon->process != NULL) {
        g_subprocess_force_exit(daemon->process);
        g_subprocess_wait(daemon->process, NULL, NULL);
        g_clear_object(&daemon->process);
    }
    g_clear_object(&daemon->session);
    g_hash_table_unref(daemon->env);
    einsora_test_dir_remove(daemon->dir);
    g_free(daemon->dir);
    g_free(daemon->data_dir);
    g_free(daemon->log_path);
    g_free(daemon->uri);
    g_free(daemon->owner_token);
    g_free(daemon->listen);
    g_free(daemon);
}

gchar *
einsora_test_daemon_read_log(EinsoraTestDaemon *daemon)
{
    gchar *log = NULL;
    g_assert_true(g_file_get_contents(daemon->log_path, &log, NULL, NULL));
    return log;
}

gboolean
einsora_test_daemon_log_has(EinsoraTestDaemon *daemon, const char *needle)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(daemon);

    return strstr(log, needle) != NULL;
}

void
einsora_test_daemon_wait_for_log(EinsoraTestDaemon *daemon, const char *needle, guint seconds)
{
    gint64 deadline = g_get_monotonic_time() + seconds * G_USEC_PER_SEC;

    while (!einsora_test_daemon_log_has(daemon, needle)) {
        if (g_get_monotonic_time() > deadline)
            g_error("\"%s\" not in the daemon's log within %u s", needle, seconds);
        g_usleep(100 * 1000);
    }
}

static gboolean
accept_own_certificate(SoupMessage *message, GTlsCertificate *certificate,
                       GTlsCertificateFlags errors, gpointer user_data)
{
    return TRUE;
}

EinsoraTestResponse *
einsora_test_request(EinsoraTestDaemon *daemon, const char *method, const char *path,
                     const char *token, const char *content_type, const char *body,
                     const char *const *headers)
{
    g_autofree gchar *url = g_strdup_printf("%s%s", daemon->uri, path);
    g_autoptr(SoupMessage) message = soup_message_new(method, url);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    EinsoraTestResponse *response = g_new0(EinsoraTestResponse, 1);
    SoupMessageHeaders *request_headers;

    g_assert_nonnull(message);
    request_headers = soup_message_get_request_headers(message);
    if (token != NULL) {
        g_autofree gchar *value = g_strdup_printf("Bearer %s", token);
        soup_message_headers_replace(request_headers, "Authorization", value);
    }
    for (guint i = 0; headers != NULL && headers[i] != NULL; i += 2)
        soup_message_headers_replace(request_headers, headers[i], headers[i + 1]);
    if (body != NULL) {
        g_autoptr(GBytes) payload = g_bytes_new(body, strlen(body));
        soup_message_set_request_body_from_bytes(
            message, content_type != NULL ? content_type : "application/json", payload);
    }
    /* A daemon with TLS presents its own certificate: the test trusts the
     * daemon it started (the clients' pinning is tested on its own). */
    if (g_str_has_prefix(daemon->uri, "https:"))
        g_signal_connect(message, "accept-certificate", G_CALLBACK(accept_own_certificate), NULL);
    bytes = soup_session_send_and_read(daemon->session, message, NULL, &error);
    g_assert_no_error(error);
    response->status = soup_message_get_status(message);
    /* An empty body (204) has no data pointer at all. */
    response->body = g_bytes_get_size(bytes) > 0
                         ? g_strndup(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes))
                         : g_strdup("");
    response->headers = soup_message_headers_ref(soup_message_get_response_headers(message));
    if (*response->body != '\0' && json_parser_load_from_data(parser, response->body, -1, NULL))
        response->json = json_node_copy(json_parser_get_root(parser));
    return response;
}

void
einsora_test_response_free(EinsoraTestResponse *response)
{
    if (response == NULL)
        return;
    g_free(response->body);
    if (response->json != NULL)
        json_node_unref(response->json);
    soup_message_headers_unref(response->headers);
    g_free(response);
}

const char *
einsora_test_response_string(EinsoraTestResponse *response, const char *member)
{
    if (response->json == NULL || !JSON_NODE_HOLDS_OBJECT(response->json))
        return NULL;
    return json_object_get_string_member_with_default(json_node_get_object(response->json), member,
                                                      NULL);
}

const char *
einsora_test_response_error_code(EinsoraTestResponse *response)
{
    JsonObject *root;

    if (response->json == NULL || !JSON_NODE_HOLDS_OBJECT(response->json))
        return NULL;
    root = json_node_get_object(response->json);
    if (!json_object_has_member(root, "error"))
        return NULL;
    return json_object_get_string_member_with_default(json_object_get_object_member(root, "error"),
                                                      "code", NULL);
}
