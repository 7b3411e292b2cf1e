/* EinsoraTokenStore: remote daemons' API tokens. The file backend
 * (EINSORA_TOKEN_STORE=file): a round trip, its modes, a file others can
 * read refused, servers kept apart, and no token in any log line. The
 * Secret Service on a private session bus (GTestDBus, up for the whole
 * run): none there, so the store says it falls back to the file; and,
 * where gnome-keyring-daemon is installed, the real one keeping tokens.
 * XDG_CONFIG_HOME is a directory of the test's own, emptied before each
 * test. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <libsecret/secret.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-test-dir.h"
#include "einsora-token-store.h"

#define TOKEN_A "tok_a_9f3c1e7d5b2a4c6e8f0a1b3c5d7e9f1a"
#define TOKEN_B "tok_b_0a2c4e6f8b1d3f5a7c9e2b4d6f8a0c1e"
#define SERVER_A "https://lab.example.org:8443"
#define SERVER_B "http://gpu-box.example.net:8080/"

#if defined(__SANITIZE_ADDRESS__)
/* libsecret 0.20 loses the D-Bus replies it reads secrets from (their
 * bodies, parsed on GDBus's worker thread, so no libsecret frame to name):
 * only the keyring test's child process makes such calls. */
const char *__lsan_default_suppressions(void);
const char *
__lsan_default_suppressions(void)
{
    return "leak:g_dbus_message_new_from_blob\n";
}
#endif

static gchar *config_dir;
/* Up before the first thread: GTestDBus forks a watcher, which must not
 * take other threads' memory for leaks. */
static GTestDBus *test_bus;

/* Every log line this process wrote, as formatted: no token may be in it. */
static GString *log_record;
static GMutex log_lock;

static GLogWriterOutput
record_log(GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer user_data)
{
    g_autofree gchar *line = g_log_writer_format_fields(level, fields, n_fields, FALSE);

    g_mutex_lock(&log_lock);
    g_string_append_printf(log_record, "%s\n", line);
    g_mutex_unlock(&log_lock);
    /* Debug lines are recorded, not printed: they would break TAP. */
    if (level & (G_LOG_LEVEL_DEBUG | G_LOG_LEVEL_INFO))
        return G_LOG_WRITER_HANDLED;
    return g_log_writer_default(level, fields, n_fields, user_data);
}

static gboolean
log_contains(const char *text)
{
    gboolean found;

    g_mutex_lock(&log_lock);
    found = strstr(log_record->str, text) != NULL;
    g_mutex_unlock(&log_lock);
    return found;
}

/* The async calls, run to their end on the test's main loop. */
typedef struct {
    GAsyncResult *result;
} Wait;

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Wait *wait = user_data;

    wait->result = g_object_ref(result);
    g_main_context_wakeup(NULL);
}

static GAsyncResult *
wait_result(Wait *wait)
{
    while (wait->result == NULL)
        g_main_context_iteration(NULL, TRUE);
    return wait->result;
}

static gboolean
save(EinsoraTokenStore *store, const char *server, const char *token, GError **error)
{
    Wait wait = {NULL};
    g_autoptr(GAsyncResult) result = NULL;

    einsora_token_store_save_async(store, server, token, NULL, on_done, &wait);
    result = wait_result(&wait);
    return einsora_token_store_save_finish(store, result, error);
}

static gchar *
lookup(EinsoraTokenStore *store, const char *server, GError **error)
{
    Wait wait = {NULL};
    g_autoptr(GAsyncResult) result = NULL;

    einsora_token_store_lookup_async(store, server, NULL, on_done, &wait);
    result = wait_result(&wait);
    return einsora_token_store_lookup_finish(store, result, error);
}

static gboolean
clear(EinsoraTokenStore *store, const char *server, GError **error)
{
    Wait wait = {NULL};
    g_autoptr(GAsyncResult) result = NULL;

    einsora_token_store_clear_async(store, server, NULL, on_done, &wait);
    result = wait_result(&wait);
    return einsora_token_store_clear_finish(store, result, error);
}

/* No tokens kept from an earlier test. */
static void
forget_all(void)
{
    g_autofree gchar *dir = g_build_filename(config_dir, "einsora", NULL);

    einsora_test_dir_remove(dir);
}

static EinsoraTokenStore *
file_store(void)
{
    forget_all();
    g_setenv("EINSORA_TOKEN_STORE", "file", TRUE);
    return einsora_token_store_new();
}

static guint
mode_of(const char *path)
{
    struct stat st;

    g_assert_cmpint(g_stat(path, &st), ==, 0);
    return st.st_mode & 07777;
}

static void
test_file_round_trip(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *expected_path =
        g_build_filename(g_get_user_config_dir(), "einsora", "tokens.json", NULL);

    g_assert_cmpstr(einsora_token_store_get_backend(store), ==, "file");
    g_assert_cmpstr(einsora_token_store_get_path(store), ==, expected_path);

    /* Nothing kept yet: no token, no error, no file made. */
    token = lookup(store, SERVER_A, &error);
    g_assert_no_error(error);
    g_assert_null(token);
    g_assert_false(g_file_test(expected_path, G_FILE_TEST_EXISTS));

    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_no_error(error);
    token = lookup(store, SERVER_A, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(token, ==, TOKEN_A);
    g_clear_pointer(&token, g_free);

    /* A new token replaces the old one. */
    g_assert_true(save(store, SERVER_A, TOKEN_B, &error));
    token = lookup(store, SERVER_A, &error);
    g_assert_cmpstr(token, ==, TOKEN_B);
    g_clear_pointer(&token, g_free);

    /* Another store (the next run of the app) finds it. */
    {
        g_autoptr(EinsoraTokenStore) again = einsora_token_store_new();
        token = lookup(again, SERVER_A, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(token, ==, TOKEN_B);
        g_clear_pointer(&token, g_free);
    }

    g_assert_true(clear(store, SERVER_A, &error));
    g_assert_no_error(error);
    token = lookup(store, SERVER_A, &error);
    g_assert_no_error(error);
    g_assert_null(token);
    /* Clearing what isn't there is no error. */
    g_assert_true(clear(store, SERVER_A, &error));
    g_assert_no_error(error);
}

static void
test_file_modes(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    const char *path = einsora_token_store_get_path(store);
    g_autofree gchar *dir = g_path_get_dirname(path);

    /* A directory that was there, open to others, is made private. */
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_assert_cmpint(g_chmod(dir, 0755), ==, 0);
    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(mode_of(path), ==, 0600);
    g_assert_cmpuint(mode_of(dir), ==, 0700);

    /* Made afresh: the same. */
    g_assert_cmpint(g_remove(path), ==, 0);
    g_assert_cmpint(g_rmdir(dir), ==, 0);
    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(mode_of(path), ==, 0600);
    g_assert_cmpuint(mode_of(dir), ==, 0700);

    /* Rewritten (a new file renamed over the old): still 0600. */
    g_assert_true(save(store, SERVER_B, TOKEN_B, &error));
    g_assert_cmpuint(mode_of(path), ==, 0600);
}

static void
test_file_refuses_readable(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *before = NULL, *after = NULL;
    const char *path = einsora_token_store_get_path(store);

    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_no_error(error);
    g_assert_cmpint(g_chmod(path, 0640), ==, 0);
    g_assert_true(g_file_get_contents(path, &before, NULL, NULL));

    token = lookup(store, SERVER_A, &error);
    g_assert_null(token);
    g_assert_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE);
    /* It names the file, what is wrong and what to do. */
    g_assert_nonnull(strstr(error->message, path));
    g_assert_nonnull(strstr(error->message, "0640"));
    g_assert_nonnull(strstr(error->message, "chmod 600"));
    g_assert_null(strstr(error->message, TOKEN_A));
    g_clear_error(&error);

    /* Nor is it written over (its tokens may have leaked: the user decides). */
    g_assert_false(save(store, SERVER_B, TOKEN_B, &error));
    g_assert_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE);
    g_clear_error(&error);
    g_assert_true(g_file_get_contents(path, &after, NULL, NULL));
    g_assert_cmpstr(after, ==, before);
    g_assert_cmpuint(mode_of(path), ==, 0640);

    /* Once the user made it private again, it is used. */
    g_assert_cmpint(g_chmod(path, 0600), ==, 0);
    token = lookup(store, SERVER_A, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(token, ==, TOKEN_A);
}

static void
test_file_refuses_link(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;
    const char *path = einsora_token_store_get_path(store);
    g_autofree gchar *dir = g_path_get_dirname(path);
    g_autofree gchar *elsewhere = g_build_filename(dir, "elsewhere.json", NULL);

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_assert_true(g_file_set_contents_full(elsewhere, "{\"tokens\": {}}", -1,
                                           G_FILE_SET_CONTENTS_NONE, 0600, NULL));
    g_assert_cmpint(symlink(elsewhere, path), ==, 0);
    token = lookup(store, SERVER_A, &error);
    g_assert_null(token);
    g_assert_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_UNSAFE_FILE);
    g_assert_nonnull(strstr(error->message, "symbolic link"));
}

static void
test_file_not_tokens(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;
    const char *path = einsora_token_store_get_path(store);
    g_autofree gchar *dir = g_path_get_dirname(path);

    g_assert_cmpint(g_mkdir_with_parents(dir, 0700), ==, 0);
    g_assert_true(
        g_file_set_contents_full(path, "tok_" TOKEN_A, -1, G_FILE_SET_CONTENTS_NONE, 0600, NULL));
    token = lookup(store, SERVER_A, &error);
    g_assert_null(token);
    g_assert_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_BAD_FILE);
    g_assert_nonnull(strstr(error->message, path));
    /* The parser's words could quote the file: they are left out. */
    g_assert_null(strstr(error->message, TOKEN_A));
}

static void
test_servers_apart(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    gchar *token;

    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_true(save(store, SERVER_B, TOKEN_B, &error));
    g_assert_no_error(error);

    token = lookup(store, SERVER_A, &error);
    g_assert_cmpstr(token, ==, TOKEN_A);
    g_free(token);
    token = lookup(store, SERVER_B, &error);
    g_assert_cmpstr(token, ==, TOKEN_B);
    g_free(token);
    /* One server written as a person might: same token. */
    token = lookup(store, "HTTPS://Lab.Example.org:8443/", &error);
    g_assert_cmpstr(token, ==, TOKEN_A);
    g_free(token);
    token = lookup(store, "http://gpu-box.example.net:8080", &error);
    g_assert_cmpstr(token, ==, TOKEN_B);
    g_free(token);
    /* Another port, scheme or host is another server. */
    token = lookup(store, "https://lab.example.org", &error);
    g_assert_null(token);
    token = lookup(store, "http://lab.example.org:8443", &error);
    g_assert_null(token);
    token = lookup(store, "https://lab.example.com:8443", &error);
    g_assert_null(token);
    g_assert_no_error(error);

    /* Forgetting one leaves the other. */
    g_assert_true(clear(store, SERVER_A, &error));
    token = lookup(store, SERVER_A, &error);
    g_assert_null(token);
    token = lookup(store, SERVER_B, &error);
    g_assert_cmpstr(token, ==, TOKEN_B);
    g_free(token);
    g_assert_no_error(error);
}

static void
test_invalid(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    const char *const servers[] = {"", "lab.example.org", "not a url", "file:///etc/passwd"};
    const char *const tokens[] = {"", "tok with space", "tok\nline"};

    for (guint i = 0; i < G_N_ELEMENTS(servers); i++) {
        g_assert_false(save(store, servers[i], TOKEN_A, &error));
        g_assert_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_INVALID);
        g_clear_error(&error);
    }
    for (guint i = 0; i < G_N_ELEMENTS(tokens); i++) {
        g_assert_false(save(store, SERVER_A, tokens[i], &error));
        g_assert_error(error, EINSORA_TOKEN_STORE_ERROR, EINSORA_TOKEN_STORE_ERROR_INVALID);
        g_clear_error(&error);
    }
    g_assert_false(g_file_test(einsora_token_store_get_path(store), G_FILE_TEST_EXISTS));
}

/* Everything the store does, then the log: server names, never tokens. */
static void
test_never_logged(void)
{
    g_autoptr(EinsoraTokenStore) store = file_store();
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;

    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_true(save(store, SERVER_B, TOKEN_B, &error));
    token = lookup(store, SERVER_A, &error);
    g_assert_cmpstr(token, ==, TOKEN_A);
    g_assert_true(clear(store, SERVER_B, &error));
    g_assert_no_error(error);
    g_assert_cmpint(g_chmod(einsora_token_store_get_path(store), 0644), ==, 0);
    g_clear_pointer(&token, g_free);
    token = lookup(store, SERVER_A, &error);
    g_assert_nonnull(error);
    g_assert_null(strstr(error->message, TOKEN_A));

    /* The recorder works: the store's own lines are there. */
    g_assert_true(log_contains("https://lab.example.org:8443"));
    g_assert_false(log_contains(TOKEN_A));
    g_assert_false(log_contains(TOKEN_B));
}

/* --- the Secret Service, on a private session bus ------------------------ */

static void
test_no_secret_service(void)
{
    g_autoptr(EinsoraTokenStore) store = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;

    /* Nothing owns org.freedesktop.secrets on this bus, nor can start it. */
    forget_all();
    g_unsetenv("EINSORA_TOKEN_STORE");
    store = einsora_token_store_new();
    g_assert_null(einsora_token_store_get_backend(store));
    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(einsora_token_store_get_backend(store), ==, "file");
    g_assert_true(log_contains("no Secret Service"));
    g_assert_cmpuint(mode_of(einsora_token_store_get_path(store)), ==, 0600);
    token = lookup(store, SERVER_A, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(token, ==, TOKEN_A);
    g_assert_false(log_contains(TOKEN_A));
}

static void
on_name_appeared(GDBusConnection *bus, const char *name, const char *owner, gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
}

static gboolean
on_deadline(gpointer user_data)
{
    *(gboolean *)user_data = TRUE;
    return G_SOURCE_REMOVE;
}

/* gnome-keyring-daemon serving only secrets on the private bus, its
 * keyrings and socket in @home (short: a socket's path has a limit). */
static GSubprocess *
start_keyring(const char *program, const char *home)
{
    g_autofree gchar *data = g_build_filename(home, "data", NULL);
    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
        G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    g_autoptr(GError) error = NULL;
    GSubprocess *keyring;
    gboolean appeared = FALSE, expired = FALSE;
    guint watch, timer;

    g_subprocess_launcher_setenv(launcher, "XDG_RUNTIME_DIR", home, TRUE);
    g_subprocess_launcher_setenv(launcher, "HOME", home, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_DATA_HOME", data, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CONFIG_HOME", home, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CACHE_HOME", home, TRUE);
    g_subprocess_launcher_unsetenv(launcher, "G_MESSAGES_DEBUG");
    keyring = g_subprocess_launcher_spawn(launcher, &error, program, "--foreground", "--unlock",
                                          "--components=secrets", NULL);
    g_assert_no_error(error);
    /* The login keyring's password: it is made, unlocked, and the default. */
    g_assert_true(g_output_stream_write_all(g_subprocess_get_stdin_pipe(keyring), "einsora", 7,
                                            NULL, NULL, NULL));
    g_output_stream_close(g_subprocess_get_stdin_pipe(keyring), NULL, NULL);
    watch =
        g_bus_watch_name(G_BUS_TYPE_SESSION, "org.freedesktop.secrets",
                         G_BUS_NAME_WATCHER_FLAGS_NONE, on_name_appeared, NULL, &appeared, NULL);
    timer = g_timeout_add_seconds(10, on_deadline, &expired);
    while (!appeared && !expired)
        g_main_context_iteration(NULL, TRUE);
    g_bus_unwatch_name(watch);
    if (!expired)
        g_source_remove(timer);
    g_assert_true(appeared);
    return keyring;
}

static void
test_secret_service(void)
{
    g_autofree gchar *program = g_find_program_in_path("gnome-keyring-daemon");
    g_autoptr(GSubprocess) keyring = NULL;
    g_autoptr(EinsoraTokenStore) store = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *token = NULL;
    g_autofree gchar *home = NULL;

    if (program == NULL) {
        g_test_skip("gnome-keyring-daemon is not installed (the fallback is tested without it)");
        return;
    }
    /* libsecret 0.20 keeps a reference to the session bus even after
     * secret_service_disconnect(), which g_test_dbus_down() would wait on
     * for ever: this test runs in a process of its own, which ends. */
    if (!g_test_subprocess()) {
        g_test_trap_subprocess(NULL, 60 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_INHERIT_STDERR);
        g_test_trap_assert_passed();
        return;
    }
    forget_all();
    g_unsetenv("EINSORA_TOKEN_STORE");
    home = einsora_test_dir_new();
    keyring = start_keyring(program, home);

    store = einsora_token_store_new();
    g_assert_true(save(store, SERVER_A, TOKEN_A, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(einsora_token_store_get_backend(store), ==, "secret-service");
    /* In the keyring, not in a file. */
    g_assert_false(g_file_test(einsora_token_store_get_path(store), G_FILE_TEST_EXISTS));
    g_assert_true(save(store, SERVER_B, TOKEN_B, &error));
    g_assert_no_error(error);
    token = lookup(store, "https://LAB.example.org:8443/", &error);
    g_assert_no_error(error);
    g_assert_cmpstr(token, ==, TOKEN_A);
    g_clear_pointer(&token, g_free);
    g_assert_true(clear(store, SERVER_A, &error));
    g_assert_no_error(error);
    token = lookup(store, SERVER_A, &error);
    g_assert_no_error(error);
    g_assert_null(token);
    token = lookup(store, SERVER_B, &error);
    g_assert_cmpstr(token, ==, TOKEN_B);
    g_assert_false(log_contains(TOKEN_A));
    g_assert_false(log_contains(TOKEN_B));

    secret_service_disconnect();
    g_subprocess_send_signal(keyring, SIGTERM);
    g_subprocess_wait(keyring, NULL, NULL);
    einsora_test_dir_remove(home);
}

/* G_DEFINE_QUARK stringifies its tokens, so a formatter's spaces would be
 * in the name (they once were: "einsora - token - store - error - quark"). */
static void
test_error_domain_name(void)
{
    const char *name = g_quark_to_string(EINSORA_TOKEN_STORE_ERROR);

    g_assert_cmpstr(name, ==, "einsora-token-store-error-quark");
    g_assert_null(strchr(name, ' '));
}

int
main(int argc, char **argv)
{
    int status;

    /* Debug lines too: none may hold a token. Before anything logs. */
    g_setenv("G_MESSAGES_DEBUG", "all", TRUE);
    log_record = g_string_new(NULL);
    g_log_set_writer_func(record_log, NULL, NULL);
    /* Before anything asks GLib for it (it keeps the first answer). */
    config_dir = einsora_test_dir_new();
    g_setenv("XDG_CONFIG_HOME", config_dir, TRUE);
    g_test_init(&argc, &argv, NULL);
    test_bus = g_test_dbus_new(G_TEST_DBUS_NONE);
    g_test_dbus_up(test_bus);

    g_test_add_func("/app/token-store/error-domain-name-has-no-spaces", test_error_domain_name);
    g_test_add_func("/app/token-store/file/round-trip", test_file_round_trip);
    g_test_add_func("/app/token-store/file/modes", test_file_modes);
    g_test_add_func("/app/token-store/file/refuses-readable", test_file_refuses_readable);
    g_test_add_func("/app/token-store/file/refuses-link", test_file_refuses_link);
    g_test_add_func("/app/token-store/file/not-tokens", test_file_not_tokens);
    g_test_add_func("/app/token-store/servers-apart", test_servers_apart);
    g_test_add_func("/app/token-store/invalid", test_invalid);
    g_test_add_func("/app/token-store/never-logged", test_never_logged);
    g_test_add_func("/app/token-store/secret-service/none-answers", test_no_secret_service);
    g_test_add_func("/app/token-store/secret-service/keyring", test_secret_service);
    status = g_test_run();

    if (g_test_subprocess()) {
        /* The keyring test's process: libsecret holds on to the bus (see
         * there), so the bus is stopped, not waited for; it stays
         * referenced until the process ends. */
        g_autoptr(GDBusConnection) connection = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
        if (connection != NULL)
            g_dbus_connection_set_exit_on_close(connection, FALSE);
        g_test_dbus_stop(test_bus);
    } else {
        g_test_dbus_down(test_bus);
        g_clear_object(&test_bus);
    }
    einsora_test_dir_remove(config_dir);
    g_free(config_dir);
    g_string_free(log_record, TRUE);
    return status;
}
