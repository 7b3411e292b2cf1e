/* The upstream of bench/access-bench.sh: one libsoup server, one main
 * loop, listening on a Unix socket and on 127.0.0.1 at once with the same
 * handlers, so that every proxy measured forwards to the same process and
 * the same bytes. Static answers only:
 *
 *   GET /small   a 100-byte JSON body (the size of a Jupyter API answer)
 *   GET /small.bin  the same 100 bytes as application/octet-stream, which
 *                Einsora's proxy passes on as they are (text it scrubs
 *                of the workload's token, and sends chunked)
 *   GET /big     10 MiB of application/octet-stream, with Content-Length,
 *                from one buffer made at start
 *   GET /files/big50.bin  50 MiB of application/octet-stream, with
 *                Content-Length (Jupyter's files API serving a download)
 *   PUT /api/contents/upload.json  takes a body of any size as it comes
 *                (counted, not kept) and answers its size in a small JSON
 *                body (the shape of a contents API upload)
 *   /ws          a WebSocket that echoes every message
 *
 * Usage: einsora-bench-upstream SOCKET_PATH
 * Prints "port=<n>" (its loopback port) on standard output once both
 * listen, and runs until SIGTERM or SIGINT. */
#include <gio/gunixsocketaddress.h>
#include <glib-unix.h>
#include <libsoup/soup.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BIG_SIZE (10 * 1024 * 1024)
#define FILE_SIZE (50 * 1024 * 1024)
#define UPLOAD_PATH "/api/contents/upload.json"

/* 100 bytes exactly. */
static const char small_body[] = "{\"version\": \"6.4.12\", \"bench\": \"einsora access proxy\", "
                                 "\"padding\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n";
G_STATIC_ASSERT(sizeof small_body - 1 == 100);

static char *big_body;

static void
on_upload_chunk(SoupServerMessage *msg, GBytes *chunk, gpointer user_data)
{
    guint64 *size = g_object_get_data(G_OBJECT(msg), "bench-upload-size");

    *size += g_bytes_get_size(chunk);
}

/* An upload is counted as it arrives, not kept. */
static void
on_headers(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
           gpointer user_data)
{
    if (g_strcmp0(path, UPLOAD_PATH) != 0 ||
        g_strcmp0(soup_server_message_get_method(msg), "PUT") != 0)
        return;
    g_object_set_data_full(G_OBJECT(msg), "bench-upload-size", g_new0(guint64, 1), g_free);
    soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
    g_signal_connect(msg, "got-chunk", G_CALLBACK(on_upload_chunk), NULL);
}

static void
on_request(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
           gpointer user_data)
{
    guint64 *uploaded = g_object_get_data(G_OBJECT(msg), "bench-upload-size");

    if (uploaded != NULL) {
        g_autofree gchar *body = g_strdup_printf("{\"size\": %" G_GUINT64_FORMAT "}", *uploaded);
        soup_server_message_set_status(msg, SOUP_STATUS_CREATED, NULL);
        soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_COPY, body,
                                         strlen(body));
        return;
    }
    if (g_strcmp0(soup_server_message_get_method(msg), "GET") != 0 &&
        g_strcmp0(soup_server_message_get_method(msg), "HEAD") != 0) {
        soup_server_message_set_status(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, NULL);
        return;
    }
    if (g_strcmp0(path, "/small") == 0) {
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_STATIC, small_body,
                                         sizeof small_body - 1);
        return;
    }
    if (g_strcmp0(path, "/small.bin") == 0) {
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "application/octet-stream", SOUP_MEMORY_STATIC,
                                         small_body, sizeof small_body - 1);
        return;
    }
    if (g_strcmp0(path, "/big") == 0) {
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "application/octet-stream", SOUP_MEMORY_STATIC,
                                         big_body, BIG_SIZE);
        return;
    }
    if (g_strcmp0(path, "/files/big50.bin") == 0) {
        soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
        soup_server_message_set_response(msg, "application/octet-stream", SOUP_MEMORY_STATIC,
                                         big_body, FILE_SIZE);
        return;
    }
    soup_server_message_set_status(msg, SOUP_STATUS_NOT_FOUND, NULL);
}

static void
on_message(SoupWebsocketConnection *connection, gint type, GBytes *message, gpointer user_data)
{
    soup_websocket_connection_send_message(connection, (SoupWebsocketDataType)type, message);
}

static void
on_closed(SoupWebsocketConnection *connection, gpointer user_data)
{
    g_object_unref(connection);
}

static void
on_websocket(SoupServer *server, SoupServerMessage *msg, const char *path,
             SoupWebsocketConnection *connection, gpointer user_data)
{
    g_object_ref(connection); /* until it closes */
    soup_websocket_connection_set_max_incoming_payload_size(connection, 0);
    g_signal_connect(connection, "message", G_CALLBACK(on_message), NULL);
    g_signal_connect(connection, "closed", G_CALLBACK(on_closed), NULL);
}

/* Listens on @address; returns its port (1 for a Unix socket), 0 on error. */
static guint
listen_on(SoupServer *server, GSocketAddress *address, GError **error)
{
    g_autoptr(GSocket) socket =
        g_socket_new(g_socket_address_get_family(address), G_SOCKET_TYPE_STREAM,
                     G_SOCKET_PROTOCOL_DEFAULT, error);
    g_autoptr(GSocketAddress) local = NULL;

    if (socket == NULL)
        return 0;
    g_socket_set_listen_backlog(socket, 1024);
    if (!g_socket_bind(socket, address, TRUE, error) || !g_socket_listen(socket, error) ||
        !soup_server_listen_socket(server, socket, 0, error))
        return 0;
    local = g_socket_get_local_address(socket, error);
    if (local == NULL)
        return 0;
    if (G_IS_INET_SOCKET_ADDRESS(local))
        return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(local));
    return 1;
}

static gboolean
on_signal(gpointer user_data)
{
    g_main_loop_quit(user_data);
    return G_SOURCE_REMOVE;
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(SoupServer) server = NULL;
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) inet = NULL;
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    guint port = 0;

    if (argc != 2) {
        g_printerr("usage: %s SOCKET_PATH\n", argv[0]);
        return 2;
    }
    /* /big is its first 10 MiB. */
    big_body = g_malloc(FILE_SIZE);
    memset(big_body, 'x', FILE_SIZE);

    server = soup_server_new("server-header", "einsora-bench-upstream", NULL);
    soup_server_add_early_handler(server, NULL, on_headers, NULL, NULL);
    soup_server_add_handler(server, NULL, on_request, NULL, NULL);
    soup_server_add_websocket_handler(server, "/ws", NULL, NULL, on_websocket, NULL, NULL);

    /* Own sockets, for a backlog that a burst of new connections (one per
     * request, from nginx and from Einsora's proxy) can't overflow. */
    unlink(argv[1]);
    address = g_unix_socket_address_new(argv[1]);
    if (!listen_on(server, address, &error)) {
        g_printerr("einsora-bench-upstream: %s: %s\n", argv[1], error->message);
        return 1;
    }
    inet = g_inet_socket_address_new(loopback, 0);
    port = listen_on(server, inet, &error);
    if (port == 0) {
        g_printerr("einsora-bench-upstream: 127.0.0.1: %s\n", error->message);
        return 1;
    }
    printf("port=%u\n", port);
    fflush(stdout);

    g_unix_signal_add(SIGTERM, on_signal, loop);
    g_unix_signal_add(SIGINT, on_signal, loop);
    g_main_loop_run(loop);
    soup_server_disconnect(server);
    unlink(argv[1]);
    g_free(big_body);
    return 0;
}
