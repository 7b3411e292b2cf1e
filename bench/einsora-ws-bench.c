/* WebSocket echo round trips for bench/access-bench.sh: one connection,
 * one small text message at a time, the next sent when the echo of the
 * last is in, for a fixed time. libsoup on the client side, like the
 * proxy and the upstream.
 *
 * Usage: einsora-ws-bench [--connect 127.0.0.1:PORT] [--cookie C]
 *                         [--seconds N] [--size BYTES] ws://HOST[:PORT]/ws
 * --connect: where to connect whatever the URL's host says (for
 * w-<id>.localhost names, which resolve to loopback in browsers only).
 * Prints one line: "round_trips=N seconds=S per_second=R p50_us=A
 * p99_us=B". Exits non-zero if the handshake fails, an echo differs, or
 * the connection closes early. */
#include <libsoup/soup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    GMainLoop *loop;
    SoupWebsocketConnection *connection;
    GBytes *message;
    GArray *latencies; /* gint64 microseconds */
    gint64 started_us;
    gint64 sent_us;
    gint64 deadline_us;
    gint64 ended_us;
    gboolean failed;
    gboolean ending;
} Bench;

static void
send_one(Bench *bench)
{
    bench->sent_us = g_get_monotonic_time();
    soup_websocket_connection_send_message(bench->connection, SOUP_WEBSOCKET_DATA_TEXT,
                                           bench->message);
}

static void
on_message(SoupWebsocketConnection *connection, gint type, GBytes *message, gpointer user_data)
{
    Bench *bench = user_data;
    gint64 now = g_get_monotonic_time();
    gint64 latency = now - bench->sent_us;

    if (bench->ending)
        return;
    if (type != SOUP_WEBSOCKET_DATA_TEXT || !g_bytes_equal(message, bench->message)) {
        g_printerr("einsora-ws-bench: the echo differs from the message\n");
        bench->failed = TRUE;
        g_main_loop_quit(bench->loop);
        return;
    }
    g_array_append_val(bench->latencies, latency);
    if (now < bench->deadline_us) {
        send_one(bench);
        return;
    }
    bench->ended_us = now;
    bench->ending = TRUE;
    soup_websocket_connection_close(connection, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
}

static void
on_closed(SoupWebsocketConnection *connection, gpointer user_data)
{
    Bench *bench = user_data;

    if (!bench->ending) {
        g_printerr("einsora-ws-bench: the connection closed early (code %u)\n",
                   soup_websocket_connection_get_close_code(connection));
        bench->failed = TRUE;
    }
    g_main_loop_quit(bench->loop);
}

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Bench *bench = user_data;
    g_autoptr(GError) error = NULL;

    bench->connection = soup_session_websocket_connect_finish(SOUP_SESSION(source), result, &error);
    if (bench->connection == NULL) {
        g_printerr("einsora-ws-bench: %s\n", error->message);
        bench->failed = TRUE;
        g_main_loop_quit(bench->loop);
        return;
    }
    g_signal_connect(bench->connection, "message", G_CALLBACK(on_message), bench);
    g_signal_connect(bench->connection, "closed", G_CALLBACK(on_closed), bench);
    bench->started_us = g_get_monotonic_time();
    bench->deadline_us += bench->started_us;
    send_one(bench);
}

static int
compare_gint64(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;

    return x < y ? -1 : x > y;
}

static gint64
percentile(GArray *sorted, double p)
{
    guint index = (guint)(p / 100.0 * (sorted->len - 1) + 0.5);

    return g_array_index(sorted, gint64, MIN(index, sorted->len - 1));
}

int
main(int argc, char **argv)
{
    g_autofree gchar *connect_to = NULL;
    g_autofree gchar *cookie = NULL;
    gint seconds = 10;
    gint size = 32;
    GOptionEntry entries[] = {
        {"connect", 0, 0, G_OPTION_ARG_STRING, &connect_to, "Connect here (HOST:PORT)",
         "HOST:PORT"},
        {"cookie", 0, 0, G_OPTION_ARG_STRING, &cookie, "A Cookie header to send", "COOKIE"},
        {"seconds", 0, 0, G_OPTION_ARG_INT, &seconds, "How long (default 10)", "N"},
        {"size", 0, 0, G_OPTION_ARG_INT, &size, "Message size in bytes (default 32)", "BYTES"},
        G_OPTION_ENTRY_NULL};
    g_autoptr(GOptionContext) context = g_option_context_new("ws://HOST[:PORT]/PATH");
    g_autoptr(GError) error = NULL;
    g_autoptr(SoupSession) session = NULL;
    g_autoptr(SoupMessage) message = NULL;
    g_autoptr(GSocketConnectable) address = NULL;
    g_autofree gchar *text = NULL;
    Bench bench = {0};
    double elapsed;

    g_option_context_add_main_entries(context, entries, NULL);
    if (!g_option_context_parse(context, &argc, &argv, &error) || argc != 2 || seconds < 1 ||
        size < 1) {
        g_printerr("einsora-ws-bench: %s\n",
                   error != NULL ? error->message : "usage: einsora-ws-bench [OPTION…] URL");
        return 2;
    }
    if (connect_to != NULL) {
        address = g_network_address_parse(connect_to, 0, &error);
        if (address == NULL) {
            g_printerr("einsora-ws-bench: --connect: %s\n", error->message);
            return 2;
        }
        session = soup_session_new_with_options("remote-connectable", address, "timeout", 30, NULL);
    } else {
        session = soup_session_new_with_options("timeout", 30, NULL);
    }
    message = soup_message_new("GET", argv[1]);
    if (message == NULL) {
        g_printerr("einsora-ws-bench: not a URL: %s\n", argv[1]);
        return 2;
    }
    if (cookie != NULL)
        soup_message_headers_replace(soup_message_get_request_headers(message), "Cookie", cookie);

    text = g_malloc(size);
    for (gint i = 0; i < size; i++)
        text[i] = "einsora-ws-bench-0123456789abcdef"[i % 33];
    bench.message = g_bytes_new_take(g_steal_pointer(&text), size);
    bench.latencies = g_array_new(FALSE, FALSE, sizeof(gint64));
    bench.loop = g_main_loop_new(NULL, FALSE);
    bench.deadline_us = (gint64)seconds * G_USEC_PER_SEC; /* from the handshake */
    soup_session_websocket_connect_async(session, message, NULL, NULL, G_PRIORITY_DEFAULT, NULL,
                                         on_connected, &bench);
    g_main_loop_run(bench.loop);

    if (!bench.failed && bench.latencies->len == 0) {
        g_printerr("einsora-ws-bench: no round trip\n");
        bench.failed = TRUE;
    }
    if (!bench.failed) {
        elapsed = (double)(bench.ended_us - bench.started_us) / G_USEC_PER_SEC;
        g_array_sort(bench.latencies, compare_gint64);
        printf("round_trips=%u seconds=%.3f per_second=%.1f p50_us=%" G_GINT64_FORMAT
               " p99_us=%" G_GINT64_FORMAT "\n",
               bench.latencies->len, elapsed, bench.latencies->len / elapsed,
               percentile(bench.latencies, 50), percentile(bench.latencies, 99));
    }
    g_clear_object(&bench.connection);
    g_array_unref(bench.latencies);
    g_bytes_unref(bench.message);
    g_main_loop_unref(bench.loop);
    return bench.failed ? 1 : 0;
}
