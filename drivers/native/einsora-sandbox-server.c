#define G_LOG_DOMAIN "einsora-native"

#include "einsora-sandbox-server.h"

#include <errno.h>
#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <string.h>
#include <sys/random.h>

#include "einsora-unix-socket.h"

#define TOKEN_BYTES 32

struct _EinsoraSandboxServer {
    GObject parent_instance;

    EinsoraWorkloadKind kind;
    gchar *socket_path;
    gchar *token;
};

G_DEFINE_FINAL_TYPE(EinsoraSandboxServer, einsora_sandbox_server, G_TYPE_OBJECT)

static void
einsora_sandbox_server_finalize(GObject *object)
{
    EinsoraSandboxServer *self = EINSORA_SANDBOX_SERVER(object);

    g_free(self->socket_path);
    if (self->token != NULL)
        explicit_bzero(self->token, strlen(self->token));
    g_free(self->token);
    G_OBJECT_CLASS(einsora_sandbox_server_parent_class)->finalize(object);
}

static void
einsora_sandbox_server_class_init(EinsoraSandboxServerClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_sandbox_server_finalize;
}

static void
einsora_sandbox_server_init(EinsoraSandboxServer *self)
{
}

EinsoraSandboxServer *
einsora_sandbox_server_new(EinsoraWorkloadKind kind, const char *socket_path, const char *token)
{
    EinsoraSandboxServer *self = g_object_new(EINSORA_TYPE_SANDBOX_SERVER, NULL);

    self->kind = kind;
    self->socket_path = g_strdup(socket_path);
    self->token = g_strdup(token);
    return self;
}

gchar *
einsora_sandbox_server_new_token(GError **error)
{
    guchar bytes[TOKEN_BYTES];
    gchar *token = g_malloc(TOKEN_BYTES * 2 + 1);
    gsize filled = 0;

    while (filled < sizeof bytes) {
        ssize_t n = getrandom(bytes + filled, sizeof bytes - filled, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            g_free(token);
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved),
                        "can't read random bytes for a notebook token: %s", g_strerror(saved));
            return NULL;
        }
        filled += (gsize)n;
    }
    for (guint i = 0; i < TOKEN_BYTES; i++)
        g_snprintf(token + 2 * i, 3, "%02x", bytes[i]);
    explicit_bzero(bytes, sizeof bytes);
    return token;
}

const char *
einsora_sandbox_server_get_socket_path(EinsoraSandboxServer *self)
{
    return self->socket_path;
}

const char *
einsora_sandbox_server_get_token(EinsoraSandboxServer *self)
{
    return self->token;
}

GSocketAddress *
einsora_sandbox_server_open_address(EinsoraSandboxServer *self, int *fd, GError **error)
{
    g_autofree gchar *path = einsora_unix_socket_open_own(self->socket_path, fd, error);

    return path != NULL ? g_unix_socket_address_new(path) : NULL;
}

/* The session lives as long as its one request, and the socket's O_PATH
 * descriptor as long as the session may connect. The workload writes the
 * answer, so it is read from the stream no further than its bound. */
typedef struct {
    SoupSession *session;
    SoupMessage *message;
    GInputStream *body;
    GByteArray *read;
    gsize max_bytes;
    int fd;
} Get;

static void
get_free(Get *get)
{
    g_clear_object(&get->body);
    g_clear_object(&get->message);
    g_clear_object(&get->session);
    g_clear_pointer(&get->read, g_byte_array_unref);
    if (get->fd >= 0)
        close(get->fd);
    g_free(get);
}

static void read_more(GTask *task);

static void
on_get_bytes(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Get *get = g_task_get_task_data(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, &error);

    if (bytes == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    if (g_bytes_get_size(bytes) == 0) {
        g_task_return_pointer(task, g_byte_array_free_to_bytes(g_steal_pointer(&get->read)),
                              (GDestroyNotify)g_bytes_unref);
        return;
    }
    g_byte_array_append(get->read, g_bytes_get_data(bytes, NULL), (guint)g_bytes_get_size(bytes));
    if (get->read->len > get->max_bytes) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                                "its server's answer is over %" G_GSIZE_FORMAT " bytes",
                                get->max_bytes);
        return;
    }
    read_more(task);
}

/* At most one byte past the bound, so an answer too long is known. */
static void
read_more(GTask *task)
{
    Get *get = g_task_get_task_data(task);
    GCancellable *cancellable = g_task_get_cancellable(task);

    g_input_stream_read_bytes_async(get->body, get->max_bytes + 1 - get->read->len,
                                    G_PRIORITY_DEFAULT, cancellable, on_get_bytes,
                                    g_object_ref(task));
}

static void
on_get_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Get *get = g_task_get_task_data(task);
    EinsoraSandboxServer *self = g_task_get_source_object(task);
    g_autoptr(GError) error = NULL;
    guint status;

    get->body = soup_session_send_finish(SOUP_SESSION(source), result, &error);
    if (get->body == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    status = soup_message_get_status(get->message);
    if (status != SOUP_STATUS_OK) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED,
                                "the %s server answered %u to GET %s",
                                einsora_workload_kind_to_string(self->kind), status,
                                g_uri_get_path(soup_message_get_uri(get->message)));
        return;
    }
    read_more(task);
}

void
einsora_sandbox_server_get_async(EinsoraSandboxServer *self, const char *path, guint timeout_ms,
                                 gsize max_bytes, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GError) error = NULL;
    Get *get = g_new0(Get, 1);
    g_autofree gchar *authorization = NULL;
    g_autofree gchar *url = g_strconcat("http://localhost", path, NULL);

    get->fd = -1;
    get->max_bytes = max_bytes;
    get->read = g_byte_array_new();
    g_task_set_source_tag(task, einsora_sandbox_server_get_async);
    g_task_set_task_data(task, get, (GDestroyNotify)get_free);
    address = einsora_sandbox_server_open_address(self, &get->fd, &error);
    if (address == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    authorization = self->kind == EINSORA_WORKLOAD_KIND_ENDPOINT
                        ? g_strdup_printf("Bearer %s", self->token)
                        : g_strdup_printf("token %s", self->token);
    get->message = soup_message_new("GET", url);
    /* A new session each time: nothing is reused across server runs. */
    get->session =
        soup_session_new_with_options("remote-connectable", address, "timeout",
                                      MAX(1u, (timeout_ms + 999) / 1000), "idle-timeout", 1u, NULL);
    soup_message_headers_replace(soup_message_get_request_headers(get->message), "Authorization",
                                 authorization);
    explicit_bzero(authorization, strlen(authorization));
    soup_session_send_async(get->session, get->message, G_PRIORITY_DEFAULT, cancellable,
                            on_get_sent, g_steal_pointer(&task));
}

GBytes *
einsora_sandbox_server_get_finish(EinsoraSandboxServer *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

/* Readiness reads a status, which is small. */
#define READY_ANSWER_MAX_BYTES (64 * 1024)

static void
on_ready_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) body =
        einsora_sandbox_server_get_finish(EINSORA_SANDBOX_SERVER(source), result, &error);

    if (body == NULL)
        g_task_return_error(task, g_steal_pointer(&error));
    else
        g_task_return_boolean(task, TRUE);
}

void
einsora_sandbox_server_check_ready_async(EinsoraSandboxServer *self, guint timeout_ms,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data)
{
    GTask *task = g_task_new(self, cancellable, callback, user_data);

    g_task_set_source_tag(task, einsora_sandbox_server_check_ready_async);
    /* Jupyter's status once its server is up; llama-server's health,
     * which is 503 while it loads the model and 200 once it serves. */
    einsora_sandbox_server_get_async(
        self, self->kind == EINSORA_WORKLOAD_KIND_ENDPOINT ? "/health" : "/api/status", timeout_ms,
        READY_ANSWER_MAX_BYTES, cancellable, on_ready_answer, task);
}

gboolean
einsora_sandbox_server_check_ready_finish(EinsoraSandboxServer *self, GAsyncResult *result,
                                          GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}
