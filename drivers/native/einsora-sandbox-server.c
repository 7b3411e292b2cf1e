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
 * descriptor as long as the session may connect. */
typedef struct {
    SoupSession *session;
    SoupMessage *message;
    int fd;
} StatusCheck;

static void
status_check_free(StatusCheck *check)
{
    g_clear_object(&check->message);
    g_clear_object(&check->session);
    if (check->fd >= 0)
        close(check->fd);
    g_free(check);
}

static void
on_status_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    StatusCheck *check = g_task_get_task_data(task);
    EinsoraSandboxServer *self = g_task_get_source_object(task);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) body =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &error);
    guint status;

    if (body == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    status = soup_message_get_status(check->message);
    if (status != SOUP_STATUS_OK) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED,
                                "the %s server answered %u to its status",
                                einsora_workload_kind_to_string(self->kind), status);
        return;
    }
    g_task_return_boolean(task, TRUE);
}

void
einsora_sandbox_server_check_ready_async(EinsoraSandboxServer *self, guint timeout_ms,
                                         GCancellable *cancellable, GAsyncReadyCallback callback,
                                         gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GError) error = NULL;
    StatusCheck *check = g_new0(StatusCheck, 1);
    g_autofree gchar *authorization = NULL;

    g_task_set_source_tag(task, einsora_sandbox_server_check_ready_async);
    g_task_set_task_data(task, check, (GDestroyNotify)status_check_free);
    address = einsora_sandbox_server_open_address(self, &check->fd, &error);
    if (address == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    /* Jupyter's status once its server is up; llama-server's health,
     * which is 503 while it loads the model and 200 once it serves. */
    if (self->kind == EINSORA_WORKLOAD_KIND_ENDPOINT) {
        authorization = g_strdup_printf("Bearer %s", self->token);
        check->message = soup_message_new("GET", "http://localhost/health");
    } else {
        authorization = g_strdup_printf("token %s", self->token);
        check->message = soup_message_new("GET", "http://localhost/api/status");
    }
    /* A new session each time: nothing is reused across server runs. */
    check->session =
        soup_session_new_with_options("remote-connectable", address, "timeout",
                                      MAX(1u, (timeout_ms + 999) / 1000), "idle-timeout", 1u, NULL);
    soup_message_headers_replace(soup_message_get_request_headers(check->message), "Authorization",
                                 authorization);
    explicit_bzero(authorization, strlen(authorization));
    soup_session_send_and_read_async(check->session, check->message, G_PRIORITY_DEFAULT,
                                     cancellable, on_status_read, g_steal_pointer(&task));
}

gboolean
einsora_sandbox_server_check_ready_finish(EinsoraSandboxServer *self, GAsyncResult *result,
                                          GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    return g_task_propagate_boolean(G_TASK(result), error);
}

typedef struct {
    StatusCheck check;
    gsize max_bytes;
} GetCall;

static void
on_get_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    StatusCheck *check = g_task_get_task_data(task);
    GetCall *call = (GetCall *)check;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) body =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &error);
    guint status;

    if (body == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    status = soup_message_get_status(check->message);
    if (status != SOUP_STATUS_OK) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "its server answered %u",
                                status);
        return;
    }
    if (g_bytes_get_size(body) > call->max_bytes) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                                "its server's answer is over %" G_GSIZE_FORMAT " bytes",
                                call->max_bytes);
        return;
    }
    g_task_return_pointer(task, g_steal_pointer(&body), (GDestroyNotify)g_bytes_unref);
}

void
einsora_sandbox_server_get_async(EinsoraSandboxServer *self, const char *path, guint timeout_ms,
                                 gsize max_bytes, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GError) error = NULL;
    GetCall *call = g_new0(GetCall, 1);
    g_autofree gchar *authorization = NULL;
    g_autofree gchar *url = g_strconcat("http://localhost", path, NULL);

    call->check.fd = -1;
    call->max_bytes = max_bytes;
    g_task_set_source_tag(task, einsora_sandbox_server_get_async);
    /* GetCall begins with its StatusCheck, which frees the whole. */
    g_task_set_task_data(task, call, (GDestroyNotify)status_check_free);
    address = einsora_sandbox_server_open_address(self, &call->check.fd, &error);
    if (address == NULL) {
        g_task_return_error(task, g_steal_pointer(&error));
        return;
    }
    authorization = self->kind == EINSORA_WORKLOAD_KIND_ENDPOINT
                        ? g_strdup_printf("Bearer %s", self->token)
                        : g_strdup_printf("token %s", self->token);
    call->check.message = soup_message_new("GET", url);
    call->check.session =
        soup_session_new_with_options("remote-connectable", address, "timeout",
                                      MAX(1u, (timeout_ms + 999) / 1000), "idle-timeout", 1u, NULL);
    soup_message_headers_replace(soup_message_get_request_headers(call->check.message),
                                 "Authorization", authorization);
    explicit_bzero(authorization, strlen(authorization));
    soup_session_send_and_read_async(call->check.session, call->check.message, G_PRIORITY_DEFAULT,
                                     cancellable, on_get_read, g_steal_pointer(&task));
}

GBytes *
einsora_sandbox_server_get_finish(EinsoraSandboxServer *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}
