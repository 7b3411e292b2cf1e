#define G_LOG_DOMAIN "einsora-docker"

#include "einsora-docker-engine.h"

#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <string.h>

/* An Engine answer is small (an inspect is a few KB; a list of this
 * machine's containers, tens); a pull's stream is one JSON object a line. */
#define MAX_BODY_BYTES (8 * 1024 * 1024)
#define MAX_PULL_LINE_BYTES (1024 * 1024)
#define READ_CHUNK_BYTES 16384
#define MAX_PULL_LAYERS 4096
/* The Engine cuts a log line into frames of 16 KiB; anything far larger
 * isn't a log frame. */
#define MAX_LOG_FRAME_BYTES (1024 * 1024)
#define LOG_FRAME_HEADER_BYTES 8

struct _EinsoraDockerEngine {
    GObject parent_instance;

    gchar *socket_path;
    SoupSession *session;
    /* Log streams hold a connection each for a container's life: apart,
     * so they never take the connections calls need. */
    SoupSession *stream_session;
};

G_DEFINE_FINAL_TYPE(EinsoraDockerEngine, einsora_docker_engine, G_TYPE_OBJECT)
G_DEFINE_QUARK(einsora - docker - error - quark, einsora_docker_error)

static void
einsora_docker_engine_finalize(GObject *object)
{
    EinsoraDockerEngine *self = EINSORA_DOCKER_ENGINE(object);

    g_clear_object(&self->session);
    g_clear_object(&self->stream_session);
    g_free(self->socket_path);
    G_OBJECT_CLASS(einsora_docker_engine_parent_class)->finalize(object);
}

static void
einsora_docker_engine_class_init(EinsoraDockerEngineClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_docker_engine_finalize;
}

static void
einsora_docker_engine_init(EinsoraDockerEngine *self)
{
}

EinsoraDockerEngine *
einsora_docker_engine_new(const char *socket_path)
{
    EinsoraDockerEngine *self = g_object_new(EINSORA_TYPE_DOCKER_ENGINE, NULL);
    g_autoptr(GSocketAddress) address = NULL;

    self->socket_path = g_strdup(socket_path != NULL ? socket_path : EINSORA_DOCKER_DEFAULT_SOCKET);
    /* Every connection goes to the socket, whatever the URL's host, and
     * never through a proxy from the environment. */
    address = g_unix_socket_address_new(self->socket_path);
    self->session =
        soup_session_new_with_options("remote-connectable", address, "proxy-resolver", NULL,
                                      "max-conns", 16, "max-conns-per-host", 8, NULL);
    self->stream_session = soup_session_new_with_options(
        "remote-connectable", address, "proxy-resolver", NULL, "max-conns", 4096,
        "max-conns-per-host", 4096, "idle-timeout", 0, "timeout", 0, NULL);
    return self;
}

const char *
einsora_docker_engine_get_socket_path(EinsoraDockerEngine *self)
{
    g_return_val_if_fail(EINSORA_IS_DOCKER_ENGINE(self), NULL);
    return self->socket_path;
}

gchar *
einsora_docker_engine_socket_from_host(const char *host, GError **error)
{
    const char *path;

    if (host == NULL || !g_str_has_prefix(host, "unix://")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "\"%s\" is not unix:///path (the Engine's socket; TCP without TLS is "
                    "refused)",
                    host != NULL ? host : "");
        return NULL;
    }
    path = host + strlen("unix://");
    if (!g_path_is_absolute(path)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "\"%s\": the socket's path must be absolute", host);
        return NULL;
    }
    return g_strdup(path);
}

/* One call: its message, its body as it is read, and a time limit that
 * cancels it. */
typedef struct {
    SoupMessage *message;
    GInputStream *stream;
    GByteArray *body;
    GCancellable *cancellable; /* ours: the caller's, or the time limit */
    GCancellable *caller_cancellable;
    gulong caller_handler;
    GSource *timeout;
    gboolean timed_out;
    guint timeout_ms;
    /* A pull's: what it reports, and how far each layer is. */
    EinsoraDockerPullFunc progress;
    gpointer progress_data;
    GHashTable *layers; /* layer ID -> Layer */
    GError *pull_error;
    /* A log stream's: where each frame's bytes go. */
    EinsoraDockerLogFunc log_chunk;
    gpointer log_data;
} Call;

typedef struct {
    gboolean done;
    guint64 current;
    guint64 total;
} Layer;

static void
call_free(Call *call)
{
    if (call->timeout != NULL) {
        g_source_destroy(call->timeout);
        g_source_unref(call->timeout);
    }
    if (call->caller_cancellable != NULL)
        g_cancellable_disconnect(call->caller_cancellable, call->caller_handler);
    g_clear_object(&call->caller_cancellable);
    g_clear_object(&call->cancellable);
    g_clear_object(&call->message);
    g_clear_object(&call->stream);
    if (call->body != NULL)
        g_byte_array_unref(call->body);
    g_clear_pointer(&call->layers, g_hash_table_unref);
    g_clear_error(&call->pull_error);
    g_free(call);
}

static void
on_caller_cancelled(GCancellable *caller, gpointer user_data)
{
    g_cancellable_cancel(G_CANCELLABLE(user_data));
}

static gboolean
on_timeout(gpointer user_data)
{
    Call *call = g_task_get_task_data(G_TASK(user_data));

    call->timed_out = TRUE;
    g_cancellable_cancel(call->cancellable);
    return G_SOURCE_REMOVE;
}

/* A failure as its caller should see it: our own cancel after the time
 * limit is a time-out; a connection error says where. */
static void
return_error(GTask *task, GError *error)
{
    Call *call = g_task_get_task_data(task);

    if (call->timed_out && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) &&
        (call->caller_cancellable == NULL ||
         !g_cancellable_is_cancelled(call->caller_cancellable))) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                                "the Docker Engine didn't answer within %u ms", call->timeout_ms);
        g_error_free(error);
        return;
    }
    g_task_return_error(task, error);
}

static Call *
call_new(GTask *task, EinsoraDockerEngine *self, const char *method, const char *path,
         JsonNode *body, guint timeout_ms, GCancellable *cancellable)
{
    Call *call = g_new0(Call, 1);
    g_autofree gchar *url = g_strdup_printf("http://docker/" EINSORA_DOCKER_API_VERSION "%s", path);

    g_task_set_task_data(task, call, (GDestroyNotify)call_free);
    call->timeout_ms = timeout_ms;
    call->cancellable = g_cancellable_new();
    if (cancellable != NULL) {
        call->caller_cancellable = g_object_ref(cancellable);
        call->caller_handler =
            g_cancellable_connect(cancellable, G_CALLBACK(on_caller_cancelled),
                                  g_object_ref(call->cancellable), g_object_unref);
    }
    call->message = soup_message_new(method, url);
    if (call->message == NULL)
        return call; /* the caller reports the bad path */
    if (body != NULL) {
        gchar *text = json_to_string(body, FALSE);
        gsize length = strlen(text);
        g_autoptr(GBytes) bytes = g_bytes_new_take(text, length);
        soup_message_set_request_body_from_bytes(call->message, "application/json", bytes);
    } else if (g_str_equal(method, SOUP_METHOD_POST)) {
        /* The Engine wants a length even for an empty POST. */
        soup_message_headers_set_content_length(soup_message_get_request_headers(call->message), 0);
    }
    if (timeout_ms > 0) {
        call->timeout = g_timeout_source_new(timeout_ms);
        g_task_attach_source(task, call->timeout, on_timeout);
    }
    return call;
}

/* The Engine's {"message": "..."}, when an answer has one. */
static gchar *
engine_message(GByteArray *body)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonNode *root;

    if (body == NULL || body->len == 0 ||
        !json_parser_load_from_data(parser, (const char *)body->data, body->len, NULL))
        return NULL;
    root = json_parser_get_root(parser);
    if (!JSON_NODE_HOLDS_OBJECT(root))
        return NULL;
    return g_strdup(
        json_object_get_string_member_with_default(json_node_get_object(root), "message", NULL));
}

static void
finish_call(GTask *task)
{
    Call *call = g_task_get_task_data(task);
    guint status = soup_message_get_status(call->message);
    g_autoptr(JsonParser) parser = NULL;
    g_autoptr(GError) error = NULL;

    if (status < 200 || status > 299) {
        g_autofree gchar *message = engine_message(call->body);
        EinsoraDockerError code = status == SOUP_STATUS_NOT_FOUND  ? EINSORA_DOCKER_ERROR_NOT_FOUND
                                  : status == SOUP_STATUS_CONFLICT ? EINSORA_DOCKER_ERROR_CONFLICT
                                  : status == SOUP_STATUS_NOT_MODIFIED
                                      ? EINSORA_DOCKER_ERROR_NOT_MODIFIED
                                      : EINSORA_DOCKER_ERROR_FAILED;
        g_task_return_new_error(task, EINSORA_DOCKER_ERROR, code,
                                "the Docker Engine answered %u: %s", status,
                                message != NULL ? message : "(no message)");
        return;
    }
    if (call->body->len == 0) {
        g_task_return_pointer(task, json_node_new(JSON_NODE_NULL), (GDestroyNotify)json_node_unref);
        return;
    }
    parser = json_parser_new_immutable();
    if (!json_parser_load_from_data(parser, (const char *)call->body->data, call->body->len,
                                    &error)) {
        g_task_return_new_error(task, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_FAILED,
                                "the Docker Engine's answer isn't JSON: %s", error->message);
        return;
    }
    g_task_return_pointer(task, json_parser_steal_root(parser), (GDestroyNotify)json_node_unref);
}

/* Pulls: the stream is one JSON object a line. */

static void
pull_report(Call *call)
{
    EinsoraDockerPullProgress progress = {0};
    GHashTableIter iter;
    gpointer value;

    g_hash_table_iter_init(&iter, call->layers);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        const Layer *layer = value;
        progress.layers++;
        progress.layers_done += layer->done ? 1 : 0;
        progress.bytes_total += layer->total;
        progress.bytes_done += layer->done ? layer->total : MIN(layer->current, layer->total);
    }
    if (call->progress != NULL)
        call->progress(&progress, call->progress_data);
}

static void
pull_line(Call *call, const char *line, gsize length)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    JsonObject *object;
    const char *id;
    const char *status;
    Layer *layer;

    if (length == 0 || call->pull_error != NULL ||
        !json_parser_load_from_data(parser, line, (gssize)length, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)))
        return;
    object = json_node_get_object(json_parser_get_root(parser));
    if (json_object_has_member(object, "error")) {
        const char *message = json_object_get_string_member_with_default(object, "error", NULL);
        call->pull_error =
            g_error_new(EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_FAILED, "the pull failed: %s",
                        message != NULL ? message : "(no message)");
        return;
    }
    id = json_object_get_string_member_with_default(object, "id", NULL);
    status = json_object_get_string_member_with_default(object, "status", NULL);
    /* Lines about the image as a whole ("Pulling from", "Digest") carry
     * its tag as their id; a layer's first line says so. */
    if (id == NULL || status == NULL)
        return;
    layer = g_hash_table_lookup(call->layers, id);
    if (layer == NULL) {
        if (!g_str_equal(status, "Pulling fs layer") && !g_str_equal(status, "Waiting") &&
            !g_str_equal(status, "Already exists") && !g_str_has_prefix(status, "Downloading"))
            return;
        if (g_hash_table_size(call->layers) >= MAX_PULL_LAYERS)
            return;
        layer = g_new0(Layer, 1);
        g_hash_table_insert(call->layers, g_strdup(id), layer);
    }
    if (g_str_equal(status, "Pull complete") || g_str_equal(status, "Already exists") ||
        g_str_equal(status, "Download complete")) {
        layer->done = TRUE;
    } else if (g_str_equal(status, "Downloading")) {
        JsonObject *detail = json_object_get_object_member(object, "progressDetail");
        if (detail != NULL) {
            gint64 current = json_object_get_int_member_with_default(detail, "current", 0);
            gint64 total = json_object_get_int_member_with_default(detail, "total", 0);
            layer->current = (guint64)MAX(current, 0);
            layer->total = (guint64)MAX(total, 0);
        }
    }
    pull_report(call);
}

/* Hands each whole line in the body read so far to pull_line and keeps
 * the rest; FALSE when one line is too long. */
static gboolean
pull_lines(Call *call)
{
    gsize start = 0;

    for (gsize i = 0; i < call->body->len; i++) {
        if (call->body->data[i] != '\n')
            continue;
        gsize end = i > start && call->body->data[i - 1] == '\r' ? i - 1 : i;
        pull_line(call, (const char *)call->body->data + start, end - start);
        start = i + 1;
    }
    g_byte_array_remove_range(call->body, 0, (guint)start);
    return call->body->len <= MAX_PULL_LINE_BYTES;
}

/* Logs: frames of an 8-byte header (the stream, three zero bytes, the
 * length big-endian) and that many bytes. Hands each whole frame on and
 * keeps the rest; FALSE when one can't be a frame. */
static gboolean
log_frames(Call *call)
{
    gsize start = 0;

    while (call->body->len - start >= LOG_FRAME_HEADER_BYTES) {
        const guint8 *header = call->body->data + start;
        guint32 length = (guint32)header[4] << 24 | (guint32)header[5] << 16 |
                         (guint32)header[6] << 8 | (guint32)header[7];

        if (header[0] > 2 || length > MAX_LOG_FRAME_BYTES)
            return FALSE;
        if (call->body->len - start - LOG_FRAME_HEADER_BYTES < length)
            break;
        call->log_chunk(header + LOG_FRAME_HEADER_BYTES, length, call->log_data);
        start += LOG_FRAME_HEADER_BYTES + length;
    }
    g_byte_array_remove_range(call->body, 0, (guint)start);
    return TRUE;
}

static void
on_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Call *call = g_task_get_task_data(task);
    GError *error = NULL;
    g_autoptr(GBytes) bytes =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, &error);

    if (bytes == NULL) {
        return_error(task, error);
        return;
    }
    if (g_bytes_get_size(bytes) == 0) {
        /* Closed at its end, so its connection serves the next call. */
        g_input_stream_close(call->stream, NULL, NULL);
        if (call->log_chunk != NULL) {
            /* A frame cut short by the end is the container's last words. */
            if (call->body->len > LOG_FRAME_HEADER_BYTES)
                call->log_chunk(call->body->data + LOG_FRAME_HEADER_BYTES,
                                call->body->len - LOG_FRAME_HEADER_BYTES, call->log_data);
            g_task_return_pointer(task, json_node_new(JSON_NODE_NULL),
                                  (GDestroyNotify)json_node_unref);
            return;
        }
        if (call->layers == NULL) {
            finish_call(task);
            return;
        }
        pull_lines(call);
        if (call->body->len > 0)
            pull_line(call, (const char *)call->body->data, call->body->len);
        if (call->pull_error != NULL)
            g_task_return_error(task, g_steal_pointer(&call->pull_error));
        else
            g_task_return_pointer(task, json_node_new(JSON_NODE_NULL),
                                  (GDestroyNotify)json_node_unref);
        return;
    }
    g_byte_array_append(call->body, g_bytes_get_data(bytes, NULL), (guint)g_bytes_get_size(bytes));
    if (call->log_chunk != NULL) {
        if (!log_frames(call)) {
            g_task_return_new_error(task, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_FAILED,
                                    "the Docker Engine's log stream isn't one");
            return;
        }
    } else if (call->layers != NULL ? !pull_lines(call) : call->body->len > MAX_BODY_BYTES) {
        g_task_return_new_error(task, EINSORA_DOCKER_ERROR, EINSORA_DOCKER_ERROR_FAILED,
                                "the Docker Engine's answer is too large");
        return;
    }
    g_input_stream_read_bytes_async(call->stream, READ_CHUNK_BYTES, G_PRIORITY_DEFAULT,
                                    call->cancellable, on_read, g_steal_pointer(&task));
}

static void
on_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    Call *call = g_task_get_task_data(task);
    GError *error = NULL;

    call->stream = soup_session_send_finish(SOUP_SESSION(source), result, &error);
    if (call->stream == NULL) {
        g_prefix_error(&error, "the Docker Engine on %s doesn't answer: ",
                       EINSORA_DOCKER_ENGINE(g_task_get_source_object(task))->socket_path);
        return_error(task, error);
        return;
    }
    call->body = g_byte_array_new();
    /* A failed pull or log request answers an error body, not a stream. */
    if (!SOUP_STATUS_IS_SUCCESSFUL(soup_message_get_status(call->message))) {
        g_clear_pointer(&call->layers, g_hash_table_unref);
        call->log_chunk = NULL;
    }
    g_input_stream_read_bytes_async(call->stream, READ_CHUNK_BYTES, G_PRIORITY_DEFAULT,
                                    call->cancellable, on_read, g_steal_pointer(&task));
}

void
einsora_docker_engine_call_async(EinsoraDockerEngine *self, const char *method, const char *path,
                                 JsonNode *body, guint timeout_ms, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    Call *call;

    g_return_if_fail(EINSORA_IS_DOCKER_ENGINE(self));
    g_return_if_fail(path != NULL && path[0] == '/');
    g_task_set_source_tag(task, einsora_docker_engine_call_async);
    call = call_new(task, self, method, path, body, timeout_ms, cancellable);
    if (call->message == NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                "\"%s\" is not an Engine API path", path);
        return;
    }
    soup_session_send_async(self->session, call->message, G_PRIORITY_DEFAULT, call->cancellable,
                            on_sent, g_steal_pointer(&task));
}

JsonNode *
einsora_docker_engine_call_finish(EinsoraDockerEngine *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), NULL);
    g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == einsora_docker_engine_call_async,
                         NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

gchar *
einsora_docker_engine_pull_query(const char *reference)
{
    const char *slash = strrchr(reference, '/');
    const char *colon = strrchr(slash != NULL ? slash : reference, ':');
    g_autofree gchar *name = NULL;
    g_autofree gchar *escaped_name = NULL;
    g_autofree gchar *escaped_tag = NULL;

    /* A digest names the image whole; otherwise the tag is after the last
     * ':' past the last '/' (a registry's port is before it). */
    if (strchr(reference, '@') != NULL || colon == NULL) {
        escaped_name = g_uri_escape_string(reference, NULL, FALSE);
        return g_strdup_printf("fromImage=%s%s", escaped_name,
                               strchr(reference, '@') != NULL ? "" : "&tag=latest");
    }
    name = g_strndup(reference, (gsize)(colon - reference));
    escaped_name = g_uri_escape_string(name, NULL, FALSE);
    escaped_tag = g_uri_escape_string(colon + 1, NULL, FALSE);
    return g_strdup_printf("fromImage=%s&tag=%s", escaped_name, escaped_tag);
}

void
einsora_docker_engine_pull_async(EinsoraDockerEngine *self, const char *reference,
                                 EinsoraDockerPullFunc progress, gpointer progress_data,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autofree gchar *query = einsora_docker_engine_pull_query(reference);
    g_autofree gchar *path = g_strdup_printf("/images/create?%s", query);
    Call *call;

    g_return_if_fail(EINSORA_IS_DOCKER_ENGINE(self));
    g_task_set_source_tag(task, einsora_docker_engine_pull_async);
    /* A pull may take many minutes: no time limit but the caller's. */
    call = call_new(task, self, SOUP_METHOD_POST, path, NULL, 0, cancellable);
    if (call->message == NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                "\"%s\" is not an image reference", reference);
        return;
    }
    call->progress = progress;
    call->progress_data = progress_data;
    call->layers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    soup_session_send_async(self->session, call->message, G_PRIORITY_DEFAULT, call->cancellable,
                            on_sent, g_steal_pointer(&task));
}

/* A stream's end: a refused request (404, 500) ends as an ordinary call
 * with a body, and so with its error. */
static gboolean
finish_stream(GAsyncResult *result, GError **error)
{
    JsonNode *node = g_task_propagate_pointer(G_TASK(result), error);

    if (node == NULL)
        return FALSE;
    json_node_unref(node);
    return TRUE;
}

gboolean
einsora_docker_engine_pull_finish(EinsoraDockerEngine *self, GAsyncResult *result, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    g_return_val_if_fail(g_task_get_source_tag(G_TASK(result)) == einsora_docker_engine_pull_async,
                         FALSE);
    return finish_stream(result, error);
}

void
einsora_docker_engine_follow_logs_async(EinsoraDockerEngine *self, const char *container,
                                        gint64 since_s, EinsoraDockerLogFunc chunk,
                                        gpointer chunk_data, GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data)
{
    g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
    g_autofree gchar *escaped = g_uri_escape_string(container, NULL, FALSE);
    g_autofree gchar *path =
        g_strdup_printf("/containers/%s/logs?follow=1&stdout=1&stderr=1&since=%" G_GINT64_FORMAT,
                        escaped, MAX(since_s, 0));
    Call *call;

    g_return_if_fail(EINSORA_IS_DOCKER_ENGINE(self));
    g_return_if_fail(chunk != NULL);
    g_task_set_source_tag(task, einsora_docker_engine_follow_logs_async);
    /* As long as the container runs: no time limit but the caller's. */
    call = call_new(task, self, SOUP_METHOD_GET, path, NULL, 0, cancellable);
    if (call->message == NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                "\"%s\" is not a container name", container);
        return;
    }
    call->log_chunk = chunk;
    call->log_data = chunk_data;
    soup_session_send_async(self->stream_session, call->message, G_PRIORITY_DEFAULT,
                            call->cancellable, on_sent, g_steal_pointer(&task));
}

gboolean
einsora_docker_engine_follow_logs_finish(EinsoraDockerEngine *self, GAsyncResult *result,
                                         GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
    g_return_val_if_fail(
        g_task_get_source_tag(G_TASK(result)) == einsora_docker_engine_follow_logs_async, FALSE);
    return finish_stream(result, error);
}
