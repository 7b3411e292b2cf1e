#include "einsora-test-jupyter.h"

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_US (30 * G_USEC_PER_SEC)

static SoupSession *
session_for_via(const EinsoraTestJupyterVia *via)
{
    g_autoptr(GSocketAddress) address = NULL;

    if (via->socket_path != NULL) {
        address = g_unix_socket_address_new(via->socket_path);
    } else {
        g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
        address = g_inet_socket_address_new(loopback, (guint16)via->proxy_port);
    }
    return soup_session_new_with_options("remote-connectable", address, "timeout", 30, NULL);
}

static void
authorize(const EinsoraTestJupyterVia *via, SoupMessage *message)
{
    SoupMessageHeaders *headers = soup_message_get_request_headers(message);

    if (via->token != NULL) {
        g_autofree gchar *authorization = g_strdup_printf("token %s", via->token);
        soup_message_headers_replace(headers, "Authorization", authorization);
    }
    if (via->cookie != NULL)
        soup_message_headers_replace(headers, "Cookie", via->cookie);
}

static gchar *
uri_via(const EinsoraTestJupyterVia *via, const char *scheme, const char *path)
{
    return g_strdup_printf("%s://%s%s", scheme, via->host != NULL ? via->host : "localhost", path);
}

guint
einsora_test_jupyter_request(const char *socket_path, const char *token, const char *method,
                             const char *path, const char *body, gchar **response)
{
    EinsoraTestJupyterVia via = {socket_path, token, 0, NULL, NULL};

    return einsora_test_jupyter_request_via(&via, method, path, body, response, NULL);
}

guint
einsora_test_jupyter_request_via(const EinsoraTestJupyterVia *via, const char *method,
                                 const char *path, const char *body, gchar **response,
                                 GHashTable **headers_out)
{
    g_autoptr(SoupSession) session = session_for_via(via);
    g_autofree gchar *uri = uri_via(via, "http", path);
    g_autoptr(SoupMessage) message = soup_message_new(method, uri);
    g_autoptr(GBytes) answer = NULL;
    g_autoptr(GError) error = NULL;

    authorize(via, message);
    if (body != NULL) {
        g_autoptr(GBytes) bytes = g_bytes_new(body, strlen(body));
        soup_message_set_request_body_from_bytes(message, "application/json", bytes);
    }
    answer = soup_session_send_and_read(session, message, NULL, &error);
    if (answer == NULL)
        return 0;
    if (response != NULL)
        *response = g_strndup(g_bytes_get_data(answer, NULL), g_bytes_get_size(answer));
    if (headers_out != NULL) {
        SoupMessageHeadersIter iter;
        const char *name, *value;
        *headers_out = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        soup_message_headers_iter_init(&iter, soup_message_get_response_headers(message));
        while (soup_message_headers_iter_next(&iter, &name, &value))
            g_hash_table_replace(*headers_out, g_ascii_strdown(name, -1), g_strdup(value));
    }
    return soup_message_get_status(message);
}

gchar *
einsora_test_jupyter_start_kernel(const char *socket_path, const char *token)
{
    g_autofree gchar *body = NULL;
    g_autoptr(JsonNode) node = NULL;
    guint status = einsora_test_jupyter_request(socket_path, token, "POST", "/api/kernels",
                                                "{\"name\": \"python3\"}", &body);

    g_assert_cmpuint(status, ==, 201);
    node = json_from_string(body, NULL);
    g_assert_nonnull(node);
    return g_strdup(json_object_get_string_member(json_node_get_object(node), "id"));
}

typedef struct {
    SoupWebsocketConnection *connection;
    gchar *msg_id;
    GString *stdout_text;
    gboolean started; /* the kernel said it runs the code (execute_input) */
    gboolean replied;
    gboolean idle;
    gboolean failed;
} Execution;

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Execution *execution = user_data;
    g_autoptr(GError) error = NULL;

    execution->connection =
        soup_session_websocket_connect_finish(SOUP_SESSION(source), result, &error);
    if (execution->connection == NULL) {
        g_printerr("# websocket: %s\n", error->message);
        execution->failed = TRUE;
    }
}

static void
on_message(SoupWebsocketConnection *connection, gint type, GBytes *bytes, gpointer user_data)
{
    Execution *execution = user_data;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *message, *parent, *content;
    const char *msg_type;

    if (type != SOUP_WEBSOCKET_DATA_TEXT)
        return;
    node = json_from_string(g_bytes_get_data(bytes, NULL), NULL);
    if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
        return;
    message = json_node_get_object(node);
    parent = json_object_get_object_member(message, "parent_header");
    if (parent == NULL ||
        g_strcmp0(json_object_get_string_member_with_default(parent, "msg_id", ""),
                  execution->msg_id) != 0)
        return;
    msg_type =
        json_object_get_string_member(json_object_get_object_member(message, "header"), "msg_type");
    content = json_object_get_object_member(message, "content");
    if (g_strcmp0(msg_type, "stream") == 0 &&
        g_strcmp0(json_object_get_string_member(content, "name"), "stdout") == 0)
        g_string_append(execution->stdout_text, json_object_get_string_member(content, "text"));
    else if (g_strcmp0(msg_type, "execute_reply") == 0)
        execution->replied = TRUE;
    else if (g_strcmp0(msg_type, "execute_input") == 0)
        execution->started = TRUE;
    else if (g_strcmp0(msg_type, "status") == 0 &&
             g_strcmp0(json_object_get_string_member(content, "execution_state"), "idle") == 0)
        execution->idle = TRUE;
    else if (g_strcmp0(msg_type, "error") == 0)
        g_printerr("# kernel error: %s\n", json_object_get_string_member(content, "evalue"));
}

gchar *
einsora_test_jupyter_execute(const char *socket_path, const char *token, const char *kernel_id,
                             const char *code)
{
    EinsoraTestJupyterVia via = {socket_path, token, 0, NULL, NULL};

    return einsora_test_jupyter_execute_via(&via, kernel_id, code);
}

static gchar *execute(const EinsoraTestJupyterVia *via, const char *kernel_id, const char *code,
                      gboolean wait);

gchar *
einsora_test_jupyter_execute_via(const EinsoraTestJupyterVia *via, const char *kernel_id,
                                 const char *code)
{
    return execute(via, kernel_id, code, TRUE);
}

void
einsora_test_jupyter_send_code(const char *socket_path, const char *token, const char *kernel_id,
                               const char *code)
{
    EinsoraTestJupyterVia via = {socket_path, token, 0, NULL, NULL};

    g_free(execute(&via, kernel_id, code, FALSE));
}

static gchar *
execute(const EinsoraTestJupyterVia *via, const char *kernel_id, const char *code, gboolean wait)
{
    g_autoptr(SoupSession) session = session_for_via(via);
    g_autofree gchar *path = g_strdup_printf("/api/kernels/%s/channels", kernel_id);
    g_autofree gchar *uri = uri_via(via, "ws", path);
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autofree gchar *session_id = g_uuid_string_random();
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) request = NULL;
    g_autofree gchar *text = NULL;
    Execution execution = {0};
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    execution.msg_id = g_uuid_string_random();
    execution.stdout_text = g_string_new(NULL);
    authorize(via, message);
    soup_session_websocket_connect_async(session, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         on_connected, &execution);
    while (execution.connection == NULL && !execution.failed) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_assert_false(execution.failed);
    g_signal_connect(execution.connection, "message", G_CALLBACK(on_message), &execution);

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "header");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "msg_id");
    json_builder_add_string_value(builder, execution.msg_id);
    json_builder_set_member_name(builder, "session");
    json_builder_add_string_value(builder, session_id);
    json_builder_set_member_name(builder, "username");
    json_builder_add_string_value(builder, "einsora-test");
    json_builder_set_member_name(builder, "msg_type");
    json_builder_add_string_value(builder, "execute_request");
    json_builder_set_member_name(builder, "version");
    json_builder_add_string_value(builder, "5.3");
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "parent_header");
    json_builder_begin_object(builder);
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "metadata");
    json_builder_begin_object(builder);
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "content");
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "code");
    json_builder_add_string_value(builder, code);
    json_builder_set_member_name(builder, "silent");
    json_builder_add_boolean_value(builder, FALSE);
    json_builder_set_member_name(builder, "store_history");
    json_builder_add_boolean_value(builder, FALSE);
    json_builder_set_member_name(builder, "user_expressions");
    json_builder_begin_object(builder);
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "allow_stdin");
    json_builder_add_boolean_value(builder, FALSE);
    json_builder_end_object(builder);
    json_builder_set_member_name(builder, "channel");
    json_builder_add_string_value(builder, "shell");
    json_builder_end_object(builder);
    request = json_builder_get_root(builder);
    text = json_to_string(request, FALSE);
    soup_websocket_connection_send_text(execution.connection, text);
    if (!wait) {
        /* Until the kernel runs it; its answer isn't awaited. */
        while (!execution.started && !execution.replied) {
            g_assert_cmpint(g_get_monotonic_time(), <, deadline);
            g_main_context_iteration(NULL, TRUE);
        }
        execution.replied = execution.idle = TRUE;
    }

    while (!(execution.replied && execution.idle)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    soup_websocket_connection_close(execution.connection, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
    g_signal_handlers_disconnect_by_data(execution.connection, &execution);
    g_clear_object(&execution.connection);
    g_free(execution.msg_id);
    return g_string_free(execution.stdout_text, FALSE);
}

int
einsora_test_recorded_pid(const char *run_dir, const char *id, guint64 *start_time)
{
    g_autofree gchar *path = g_strdup_printf("%s/%s.state", run_dir, id);
    g_autoptr(GKeyFile) state = g_key_file_new();

    if (!g_key_file_load_from_file(state, path, 0, NULL))
        return 0;
    if (start_time != NULL)
        *start_time = (guint64)g_key_file_get_uint64(state, "process", "start_time", NULL);
    return (int)g_key_file_get_int64(state, "process", "pid", NULL);
}

void
einsora_test_kill_recorded(const char *run_dir)
{
    g_autoptr(GDir) dir = g_dir_open(run_dir, 0, NULL);
    const char *name;

    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        g_autofree gchar *id = NULL;
        int pid;

        if (!g_str_has_suffix(name, ".state"))
            continue;
        id = g_strndup(name, strlen(name) - strlen(".state"));
        pid = einsora_test_recorded_pid(run_dir, id, NULL);
        if (pid > 1)
            kill(-(pid_t)pid, SIGKILL);
    }
}

gchar *
einsora_test_jupyter_token_of(int pid)
{
    g_autofree gchar *path = g_strdup_printf("/proc/%d/environ", pid);
    g_autofree gchar *contents = NULL;
    gsize length = 0;

    if (!g_file_get_contents(path, &contents, &length, NULL))
        return NULL;
    for (gsize at = 0; at < length; at += strlen(contents + at) + 1) {
        if (g_str_has_prefix(contents + at, "JUPYTER_TOKEN="))
            return g_strdup(contents + at + strlen("JUPYTER_TOKEN="));
    }
    return NULL;
}

/* Parent PID and state from /proc/PID/stat; FALSE if gone. */
static gboolean
read_stat(int pid, int *ppid, char *state, guint64 *start_time)
{
    g_autofree gchar *path = g_strdup_printf("/proc/%d/stat", pid);
    g_autofree gchar *contents = NULL;
    g_auto(GStrv) fields = NULL;
    const char *after;

    if (!g_file_get_contents(path, &contents, NULL, NULL))
        return FALSE;
    after = strrchr(contents, ')');
    if (after == NULL)
        return FALSE;
    /* After the name: state (3), ppid (4), ... starttime (22). */
    fields = g_strsplit(after + 2, " ", -1);
    if (g_strv_length(fields) < 20)
        return FALSE;
    if (state != NULL)
        *state = fields[0][0];
    if (ppid != NULL)
        *ppid = atoi(fields[1]);
    if (start_time != NULL)
        *start_time = g_ascii_strtoull(fields[19], NULL, 10);
    return TRUE;
}

gboolean
einsora_test_process_alive(int pid)
{
    char state = 0;

    return read_stat(pid, NULL, &state, NULL) && state != 'Z' && state != 'X';
}

guint64
einsora_test_process_start_time(int pid)
{
    guint64 start_time = 0;

    if (!read_stat(pid, NULL, NULL, &start_time))
        return 0;
    return start_time;
}

GArray *
einsora_test_process_tree(int root)
{
    GArray *tree = g_array_new(FALSE, FALSE, sizeof(int));
    gboolean grew = TRUE;

    if (einsora_test_process_alive(root))
        g_array_append_val(tree, root);
    /* Until no new child shows up: children may list before parents. */
    while (grew) {
        g_autoptr(GDir) dir = g_dir_open("/proc", 0, NULL);
        const char *name;

        grew = FALSE;
        while ((name = g_dir_read_name(dir)) != NULL) {
            int pid = atoi(name), ppid = 0;
            char state = 0;
            gboolean known = FALSE;

            if (pid <= 0 || !read_stat(pid, &ppid, &state, NULL) || state == 'Z')
                continue;
            for (guint i = 0; i < tree->len; i++)
                known = known || g_array_index(tree, int, i) == pid;
            for (guint i = 0; !known && i < tree->len; i++) {
                if (g_array_index(tree, int, i) == ppid) {
                    g_array_append_val(tree, pid);
                    grew = TRUE;
                    break;
                }
            }
        }
    }
    return tree;
}
