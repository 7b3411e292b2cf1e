#define G_LOG_DOMAIN "einsora-app"

#include "einsora-connection.h"

#include "einsora-pinned-database.h"
#include "einsora-server-pins.h"
#include "einsora-token-store.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <libsoup/soup.h>
#include <string.h>
#include <unistd.h>

/* How often a starting daemon is asked whether it is ready. This is a
 * wait with an end, not a loop that follows state: that is the event feed. */
#define READY_RETRY_MS 200
#define LOG_TAIL_LINES 15
#define UNIT_NAME "einsora-daemon.service"

struct _EinsoraConnection {
    GObject parent_instance;
    gchar *server;
    gchar *token;
    gchar *log_path;
    gboolean local;
    gboolean started_daemon;
    gchar *daemon_pid;
    SoupSession *session;
    /* A remote https server's: the pin kept for it, or the system's CAs. */
    EinsoraPinnedDatabase *trust;
    gchar *pin;
};

G_DEFINE_FINAL_TYPE(EinsoraConnection, einsora_connection, G_TYPE_OBJECT)
/* The macro stringifies its first argument: keep the formatter away. */
/* clang-format off */
G_DEFINE_QUARK(einsora-connection-error-quark, einsora_connection_error)
/* clang-format on */

enum { SIGNAL_PROGRESS, N_SIGNALS };
static guint signals[N_SIGNALS];

typedef struct {
    gint64 deadline;
    GSubprocess *daemon;    /* the child we started */
    gboolean *daemon_ended; /* an rc box, shared with the wait for its end */
    GCancellable *waiting;
    gboolean started;
    guint retry_source;
} Ensure;

static void
ensure_free(Ensure *ensure)
{
    if (ensure->retry_source != 0)
        g_source_remove(ensure->retry_source);
    /* The daemon runs on after the app is done with it. */
    if (ensure->waiting != NULL)
        g_cancellable_cancel(ensure->waiting);
    g_clear_object(&ensure->waiting);
    g_clear_pointer(&ensure->daemon_ended, g_rc_box_release);
    g_clear_object(&ensure->daemon);
    g_free(ensure);
}

static void
einsora_connection_finalize(GObject *object)
{
    EinsoraConnection *self = EINSORA_CONNECTION(object);

    if (self->token != NULL)
        explicit_bzero(self->token, strlen(self->token));
    g_free(self->token);
    g_free(self->server);
    g_free(self->log_path);
    g_free(self->daemon_pid);
    g_clear_object(&self->session);
    g_clear_object(&self->trust);
    g_free(self->pin);
    G_OBJECT_CLASS(einsora_connection_parent_class)->finalize(object);
}

static void
einsora_connection_class_init(EinsoraConnectionClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_connection_finalize;
    signals[SIGNAL_PROGRESS] = g_signal_new("progress", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                                            0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
einsora_connection_init(EinsoraConnection *self)
{
    self->session = soup_session_new_with_options("timeout", 5, "idle-timeout", 5, NULL);
}

/* The local token file belongs to the local daemon: it is sent only to a
 * server on this machine. */
gboolean
einsora_connection_server_is_local(const char *server)
{
    return einsora_client_server_is_local(server);
}

gboolean
einsora_connection_check_server(const char *server, GError **error)
{
    g_autoptr(GUri) uri = server != NULL ? g_uri_parse(server, G_URI_FLAGS_NONE, NULL) : NULL;
    const char *scheme = uri != NULL ? g_uri_get_scheme(uri) : NULL;
    const char *host = uri != NULL ? g_uri_get_host(uri) : NULL;

    if (scheme == NULL ||
        (g_ascii_strcasecmp(scheme, "http") != 0 && g_ascii_strcasecmp(scheme, "https") != 0)) {
        g_set_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_BAD_SERVER,
                    _("A server’s address starts with https:// or http://, as in "
                      "https://lab.example.org:8080"));
        return FALSE;
    }
    if (host == NULL || *host == '\0') {
        g_set_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_BAD_SERVER,
                    _("The address has no server name, as in https://lab.example.org:8080"));
        return FALSE;
    }
    /* The address is kept in settings, shown and logged: no credentials
     * in it (the token has its own field), and nothing after the path. */
    if (g_uri_get_userinfo(uri) != NULL || g_uri_get_query(uri) != NULL ||
        g_uri_get_fragment(uri) != NULL) {
        g_set_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_BAD_SERVER,
                    _("Give the server’s address alone, without a name and password, ? or #, "
                      "as in https://lab.example.org:8080; the token has its own field"));
        return FALSE;
    }
    return TRUE;
}

static gchar *
data_dir(void)
{
    const char *dir = g_getenv("EINSORA_DATA_DIR");

    if (dir != NULL && *dir != '\0')
        return g_strdup(dir);
    return g_build_filename(g_get_user_data_dir(), "einsora", NULL);
}

EinsoraConnection *
einsora_connection_new(const char *server, const char *token)
{
    EinsoraConnection *self = g_object_new(EINSORA_TYPE_CONNECTION, NULL);
    const char *env_server = g_getenv("EINSORA_SERVER");
    g_autofree gchar *state_dir = g_build_filename(g_get_user_state_dir(), "einsora", NULL);

    if (server == NULL || *server == '\0')
        server = env_server != NULL && *env_server != '\0' ? env_server
                                                           : EINSORA_CONNECTION_DEFAULT_SERVER;
    self->server = g_strdup(server);
    /* "https://lab.example.org:8080/" is the same daemon: paths are added. */
    for (gsize length = strlen(self->server); length > 0 && self->server[length - 1] == '/';)
        self->server[--length] = '\0';
    self->token = g_strdup(token);
    self->local = einsora_connection_server_is_local(server);
    self->log_path = g_build_filename(state_dir, "daemon.log", NULL);
    return self;
}

const char *
einsora_connection_get_server(EinsoraConnection *self)
{
    return self->server;
}

gboolean
einsora_connection_is_local(EinsoraConnection *self)
{
    return self->local;
}

const char *
einsora_connection_get_log_path(EinsoraConnection *self)
{
    return self->log_path;
}

gboolean
einsora_connection_started_daemon(EinsoraConnection *self)
{
    return self->started_daemon;
}

const char *
einsora_connection_get_daemon_pid(EinsoraConnection *self)
{
    return self->daemon_pid;
}

const char *
einsora_connection_get_token(EinsoraConnection *self)
{
    return self->token;
}

static void
progress(EinsoraConnection *self, const char *what)
{
    g_signal_emit(self, signals[SIGNAL_PROGRESS], 0, what);
}

/* The last lines a daemon we started wrote, for the error a person sees. */
static gchar *
log_tail(EinsoraConnection *self)
{
    g_autofree gchar *contents = NULL;
    g_auto(GStrv) lines = NULL;
    guint n, first;
    g_autoptr(GString) tail = g_string_new(NULL);

    if (!g_file_get_contents(self->log_path, &contents, NULL, NULL))
        return g_strdup("");
    lines = g_strsplit(g_strchomp(contents), "\n", -1);
    n = g_strv_length(lines);
    first = n > LOG_TAIL_LINES ? n - LOG_TAIL_LINES : 0;
    for (guint i = first; i < n; i++)
        g_string_append_printf(tail, "%s%s", i > first ? "\n" : "", lines[i]);
    return g_string_free(g_steal_pointer(&tail), FALSE);
}

static void
fail_daemon(GTask *task, const char *what)
{
    EinsoraConnection *self = g_task_get_source_object(task);
    g_autofree gchar *tail = log_tail(self);

    g_task_return_new_error(task, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_DAEMON_FAILED,
                            _("%s. Its last lines (%s):\n%s"), what, self->log_path,
                            *tail != '\0' ? tail : _("(nothing)"));
}

static gboolean
read_token_file(EinsoraConnection *self, GError **error)
{
    g_autofree gchar *dir = data_dir();
    g_autofree gchar *path = g_build_filename(dir, "token", NULL);
    g_autofree gchar *contents = NULL;
    g_autoptr(GError) local_error = NULL;

    if (!g_file_get_contents(path, &contents, NULL, &local_error)) {
        g_set_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_NO_TOKEN,
                    _("The daemon answers, but its token file can't be read: %s"),
                    local_error->message);
        return FALSE;
    }
    g_strstrip(contents);
    if (*contents == '\0' || strpbrk(contents, " \t\r\n") != NULL) {
        g_set_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_NO_TOKEN,
                    _("The token file %s doesn't hold an API token"), path);
        return FALSE;
    }
    g_free(self->token);
    self->token = g_steal_pointer(&contents);
    return TRUE;
}

static void
ready(GTask *task)
{
    EinsoraConnection *self = g_task_get_source_object(task);
    GError *error = NULL;

    if (self->token == NULL && !self->local) {
        g_task_return_new_error(task, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_NO_TOKEN,
                                _("No API token for %s"), self->server);
        return;
    }
    if (self->token == NULL && !read_token_file(self, &error)) {
        g_task_return_error(task, error);
        return;
    }
    {
        EinsoraClient *client = einsora_client_new(self->server, self->token);
        if (self->pin != NULL)
            einsora_client_set_pinned_certificate(client, self->pin);
        g_task_return_pointer(task, client, g_object_unref);
    }
}

static void ask_ready(GTask *task);
static void start_daemon(GTask *task);

static gboolean
on_retry(gpointer user_data)
{
    GTask *task = user_data;
    Ensure *ensure = g_task_get_task_data(task);

    ensure->retry_source = 0;
    ask_ready(task);
    return G_SOURCE_REMOVE;
}

static void
on_ready_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    EinsoraConnection *self = g_task_get_source_object(task);
    Ensure *ensure = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) body =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &error);
    SoupMessage *msg = soup_session_get_async_result_message(SOUP_SESSION(source), result);

    if (g_task_return_error_if_cancelled(task))
        return;
    if (body != NULL && msg != NULL && soup_message_get_status(msg) == SOUP_STATUS_OK) {
        ready(task);
        return;
    }
    /* Answered, over TLS we don't trust: never a daemon to start. */
    if (error != NULL && g_error_matches(error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE) &&
        self->trust != NULL) {
        g_autofree gchar *refused = einsora_pinned_database_dup_refused(self->trust);
        if (refused != NULL) {
            g_task_return_new_error(
                task, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE,
                self->pin != NULL
                    ? _("%s presents a certificate other than the one you trusted: it was %s, "
                        "it is now %s. Trust the new one only if the server’s admin says it "
                        "changed.")
                    : _("%s presents a certificate this computer doesn’t trust. Its fingerprint "
                        "is %s. Trust it only if it is the one einsora-daemon info prints on "
                        "the server."),
                self->server, self->pin != NULL ? self->pin : refused, refused);
            return;
        }
    }
    if (!self->local) {
        g_task_return_new_error(
            task, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNREACHABLE,
            _("The daemon at %s doesn't answer: %s"), self->server,
            error != NULL ? error->message : soup_message_get_reason_phrase(msg));
        return;
    }
    if (!ensure->started) {
        start_daemon(g_steal_pointer(&task));
        return;
    }
    if (ensure->daemon_ended != NULL && *ensure->daemon_ended) {
        fail_daemon(task, _("The daemon stopped before it was ready"));
        return;
    }
    if (g_get_monotonic_time() >= ensure->deadline) {
        fail_daemon(task, _("The daemon didn't become ready in time"));
        return;
    }
    ensure->retry_source = g_timeout_add(READY_RETRY_MS, on_retry, g_steal_pointer(&task));
}

static void
ask_ready(GTask *task)
{
    EinsoraConnection *self = g_task_get_source_object(task);
    g_autofree gchar *url = g_strconcat(self->server, "/readyz", NULL);
    g_autoptr(SoupMessage) msg = soup_message_new("GET", url);

    if (msg == NULL) {
        g_task_return_new_error(task, EINSORA_CONNECTION_ERROR,
                                EINSORA_CONNECTION_ERROR_UNREACHABLE,
                                _("%s is not a daemon's address"), self->server);
        g_object_unref(task);
        return;
    }
    soup_session_send_and_read_async(self->session, msg, G_PRIORITY_DEFAULT,
                                     g_task_get_cancellable(task), on_ready_answer, task);
}

static void
on_daemon_exit(GObject *source, GAsyncResult *result, gpointer user_data)
{
    gboolean *ended = user_data;

    if (g_subprocess_wait_finish(G_SUBPROCESS(source), result, NULL))
        *ended = TRUE;
    g_rc_box_release(ended);
}

/* The systemd user unit, when one is installed and a user manager runs. */
static gboolean
have_user_unit(void)
{
    const char *const dirs[] = {"/etc/systemd/user", "/usr/local/lib/systemd/user",
                                "/usr/lib/systemd/user", NULL};
    g_autofree gchar *mine =
        g_build_filename(g_get_user_config_dir(), "systemd", "user", UNIT_NAME, NULL);
    g_autofree gchar *bus = NULL;
    g_autofree gchar *systemctl = g_find_program_in_path("systemctl");
    const char *runtime = g_getenv("XDG_RUNTIME_DIR");

    if (g_getenv("EINSORA_NO_SYSTEMD") != NULL || runtime == NULL || systemctl == NULL)
        return FALSE;
    bus = g_build_filename(runtime, "systemd", "private", NULL);
    if (!g_file_test(bus, G_FILE_TEST_EXISTS))
        return FALSE;
    if (g_file_test(mine, G_FILE_TEST_EXISTS))
        return TRUE;
    for (guint i = 0; dirs[i] != NULL; i++) {
        g_autofree gchar *path = g_build_filename(dirs[i], UNIT_NAME, NULL);
        if (g_file_test(path, G_FILE_TEST_EXISTS))
            return TRUE;
    }
    return FALSE;
}

static void
new_session(gpointer user_data)
{
    /* Its own session: closing the app (or its terminal) leaves it be. */
    setsid();
}

static void
start_daemon(GTask *task)
{
    EinsoraConnection *self = g_task_get_source_object(task);
    Ensure *ensure = g_task_get_task_data(task);
    g_autoptr(GSubprocessLauncher) launcher = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *log_dir = g_path_get_dirname(self->log_path);
    const char *program = g_getenv("EINSORA_DAEMON");

    ensure->started = TRUE;
    self->started_daemon = TRUE;
    progress(self, _("Starting the daemon…"));
    if (have_user_unit()) {
        g_autoptr(GSubprocess) systemctl =
            g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                             &error, "systemctl", "--user", "start", "--no-block", UNIT_NAME, NULL);
        if (systemctl != NULL) {
            g_message("starting %s through systemd", UNIT_NAME);
            ask_ready(task);
            return;
        }
    }
    if (g_mkdir_with_parents(log_dir, 0700) != 0) {
        g_task_return_new_error(task, EINSORA_CONNECTION_ERROR,
                                EINSORA_CONNECTION_ERROR_DAEMON_FAILED, _("Can't create %s: %s"),
                                log_dir, g_strerror(errno));
        g_object_unref(task);
        return;
    }
    /* Its output, both streams, goes to the log (truncated at each start). */
    launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_MERGE);
    g_subprocess_launcher_set_child_setup(launcher, new_session, NULL, NULL);
    g_subprocess_launcher_set_stdout_file_path(launcher, self->log_path);
    ensure->daemon = g_subprocess_launcher_spawn(
        launcher, &error, program != NULL && *program != '\0' ? program : "einsora-daemon", NULL);
    if (ensure->daemon == NULL) {
        g_task_return_new_error(task, EINSORA_CONNECTION_ERROR,
                                EINSORA_CONNECTION_ERROR_DAEMON_FAILED,
                                _("Can't start einsora-daemon: %s"), error->message);
        g_object_unref(task);
        return;
    }
    self->daemon_pid = g_strdup(g_subprocess_get_identifier(ensure->daemon));
    g_message("started einsora-daemon (pid %s), its log: %s", self->daemon_pid, self->log_path);
    ensure->daemon_ended = g_rc_box_new0(gboolean);
    ensure->waiting = g_cancellable_new();
    g_subprocess_wait_async(ensure->daemon, ensure->waiting, on_daemon_exit,
                            g_rc_box_acquire(ensure->daemon_ended));
    progress(self, _("Waiting for the daemon…"));
    ask_ready(task);
}

/* A remote daemon's token, kept by the user for its URL. */
static void
on_stored_token(GObject *source, GAsyncResult *result, gpointer user_data)
{
    GTask *task = user_data;
    EinsoraConnection *self = g_task_get_source_object(task);
    g_autoptr(GError) error = NULL;
    gchar *token = einsora_token_store_lookup_finish(EINSORA_TOKEN_STORE(source), result, &error);

    if (g_task_return_error_if_cancelled(task)) {
        g_free(token);
        g_object_unref(task);
        return;
    }
    if (token == NULL) {
        if (error != NULL)
            g_task_return_new_error(
                task, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_NO_TOKEN,
                _("The API token for %s can’t be read: %s"), self->server, error->message);
        else
            g_task_return_new_error(
                task, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_NO_TOKEN,
                _("No API token is kept for %s. Give one with Connect to a Server…"), self->server);
        g_object_unref(task);
        return;
    }
    self->token = token;
    ask_ready(task);
}

gchar *
einsora_connection_dup_refused_fingerprint(EinsoraConnection *self)
{
    g_return_val_if_fail(EINSORA_IS_CONNECTION(self), NULL);
    return self->trust != NULL ? einsora_pinned_database_dup_refused(self->trust) : NULL;
}

gboolean
einsora_connection_trust_certificate(EinsoraConnection *self, const char *fingerprint,
                                     GError **error)
{
    g_autoptr(EinsoraServerPins) pins = NULL;

    g_return_val_if_fail(EINSORA_IS_CONNECTION(self), FALSE);
    pins = einsora_server_pins_load(NULL, error);
    if (pins == NULL || !einsora_server_pins_save(pins, self->server, fingerprint, error))
        return FALSE;
    g_message("trusted the certificate %s of %s", fingerprint, self->server);
    return TRUE;
}

/* An https server (a Lab's, or this machine's with --tls on) is trusted
 * through its pin or the system's CAs; a pins file that can't be read is
 * a connection error, not trust. */
static gboolean
load_trust(EinsoraConnection *self, GError **error)
{
    g_autoptr(EinsoraServerPins) pins = NULL;
    g_autoptr(GError) local_error = NULL;

    if (g_ascii_strncasecmp(self->server, "https:", strlen("https:")) != 0)
        return TRUE;
    pins = einsora_server_pins_load(NULL, &local_error);
    if (pins == NULL) {
        g_set_error(error, EINSORA_CONNECTION_ERROR, EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE,
                    _("The trusted certificates can’t be read: %s"), local_error->message);
        return FALSE;
    }
    g_free(self->pin);
    self->pin = g_strdup(einsora_server_pins_lookup(pins, self->server));
    g_clear_object(&self->trust);
    self->trust = einsora_pinned_database_new(self->pin);
    soup_session_set_tls_database(self->session, G_TLS_DATABASE(self->trust));
    return TRUE;
}

void
einsora_connection_ensure_async(EinsoraConnection *self, guint timeout_ms,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data)
{
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    Ensure *ensure = g_new0(Ensure, 1);

    g_task_set_source_tag(task, einsora_connection_ensure_async);
    ensure->deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_task_set_task_data(task, ensure, (GDestroyNotify)ensure_free);
    progress(self, _("Looking for the daemon…"));
    {
        GError *error = NULL;
        if (!load_trust(self, &error)) {
            g_task_return_error(task, error);
            g_object_unref(task);
            return;
        }
    }
    if (!self->local && self->token == NULL) {
        g_autoptr(EinsoraTokenStore) store = einsora_token_store_new();
        einsora_token_store_lookup_async(store, self->server, cancellable, on_stored_token, task);
        return;
    }
    ask_ready(task);
}

EinsoraClient *
einsora_connection_ensure_finish(EinsoraConnection *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}
