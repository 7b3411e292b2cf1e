/* The server's ends of agents' tunnels (daemon/http/einsora-tunnels.c,
 * docs/adr/0059), with both other ends played here over socket pairs:
 * the agent's (an idle stream, then the request line and the request)
 * and the access proxy's (the fd it is given). The main loop runs while
 * a side waits. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include "einsora-tunnels.h"

#define WORKLOAD "01890a5d-ac96-774b-bcce-b302099a8057"
#define WAIT_US (5 * G_USEC_PER_SEC)

/* An agent's stream: @agent is its end (blocking reads are never made:
 * the loop must run), the other end goes to the tunnels. */
static int
add_stream(EinsoraTunnels *tunnels, const char *machine_id)
{
    int fds[2];
    g_autoptr(GSocket) socket = NULL;
    g_autoptr(GSocketConnection) connection = NULL;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), ==, 0);
    socket = g_socket_new_from_fd(fds[1], NULL);
    g_assert_nonnull(socket);
    connection = g_socket_connection_factory_create_connection(socket);
    einsora_tunnels_add(tunnels, machine_id, G_IO_STREAM(connection));
    return fds[0];
}

/* Reads from @fd while the loop runs, until @stop is in what came, or
 * the end of the stream (then *@ended). */
static GString *
read_until(int fd, const char *stop, gboolean *ended)
{
    GString *got = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    *ended = FALSE;
    while (g_get_monotonic_time() < deadline) {
        char buffer[4096];
        ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);

        if (n > 0) {
            g_string_append_len(got, buffer, n);
            if (stop != NULL && strstr(got->str, stop) != NULL)
                return got;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            *ended = TRUE;
            return got;
        }
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return got;
}

/* Nothing came and the stream isn't over, after the loop ran a while. */
static gboolean
still_open(int fd)
{
    char byte;
    gint64 until = g_get_monotonic_time() + 50 * 1000;

    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return recv(fd, &byte, 1, MSG_DONTWAIT) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static void
send_all(int fd, const char *text)
{
    g_assert_cmpint(send(fd, text, strlen(text), MSG_NOSIGNAL), ==, (ssize_t)strlen(text));
}

static JsonObject *
parse_line(const char *line, JsonParser *parser)
{
    g_autoptr(GError) error = NULL;
    const char *newline = strchr(line, '\n');

    g_assert_nonnull(newline);
    g_assert_true(json_parser_load_from_data(parser, line, newline - line, &error));
    g_assert_no_error(error);
    return json_node_get_object(json_parser_get_root(parser));
}

static void
spin(guint ms)
{
    gint64 until = g_get_monotonic_time() + ms * 1000;

    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

/* One request down an idle stream, its answer back, then both ends close. */
static void
test_request_and_answer(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    int agent = add_stream(tunnels, "m1");
    int proxy;
    gboolean ended;
    JsonObject *asked;
    g_autoptr(GString) line = NULL;
    g_autoptr(GString) request = NULL;
    g_autoptr(GString) answer = NULL;

    g_assert_cmpuint(einsora_tunnels_count_idle(tunnels, "m1"), ==, 1);
    proxy = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 3, "token", &error);
    g_assert_no_error(error);
    g_assert_cmpint(proxy, >=, 0);
    g_assert_cmpuint(einsora_tunnels_count_idle(tunnels, "m1"), ==, 0);
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 1);
    send_all(proxy, "GET /api HTTP/1.1\r\nHost: localhost\r\n\r\n");

    line = read_until(agent, "\r\n\r\n", &ended);
    g_assert_false(ended);
    asked = parse_line(line->str, parser);
    g_assert_cmpstr(json_object_get_string_member(asked, "workload_id"), ==, WORKLOAD);
    g_assert_cmpint(json_object_get_int_member(asked, "attempt"), ==, 3);
    g_assert_cmpstr(json_object_get_string_member(asked, "scheme"), ==, "token");
    g_assert_cmpint(json_object_get_int_member(asked, "more"), ==, 0);
    /* The request follows the line as the proxy wrote it: no token here. */
    g_assert_nonnull(strstr(line->str, "}\nGET /api HTTP/1.1\r\nHost: localhost\r\n\r\n"));

    send_all(agent, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    close(agent);
    answer = read_until(proxy, NULL, &ended);
    g_assert_true(ended);
    g_assert_cmpstr(answer->str, ==, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    close(proxy);
    spin(20);
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 0);
    g_assert_cmpuint(einsora_tunnels_count_opened(tunnels), ==, 1);
}

/* Requests wait for a stream; the line says how many more wait. */
static void
test_requests_wait_for_streams(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GString) line = NULL;
    int proxies[3];
    int agent;
    gboolean ended;

    for (guint i = 0; i < G_N_ELEMENTS(proxies); i++) {
        proxies[i] = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "Bearer", NULL);
        g_assert_cmpint(proxies[i], >=, 0);
    }
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 3);
    agent = add_stream(tunnels, "m1");
    line = read_until(agent, "\n", &ended);
    g_assert_false(ended);
    g_assert_cmpint(json_object_get_int_member(parse_line(line->str, parser), "more"), ==, 2);
    g_assert_cmpstr(json_object_get_string_member(parse_line(line->str, parser), "scheme"), ==,
                    "Bearer");
    /* Another machine's stream serves none of them. */
    close(add_stream(tunnels, "m2"));
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 3);
    close(agent);
    for (guint i = 0; i < G_N_ELEMENTS(proxies); i++)
        close(proxies[i]);
    spin(20);
}

/* The newest idle streams are kept, and only a few. */
static void
test_keeps_the_newest_idle(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    int agents[EINSORA_TUNNELS_IDLE_MAX + 2];
    gboolean ended;

    for (guint i = 0; i < G_N_ELEMENTS(agents); i++)
        agents[i] = add_stream(tunnels, "m1");
    g_assert_cmpuint(einsora_tunnels_count_idle(tunnels, "m1"), ==, EINSORA_TUNNELS_IDLE_MAX);
    for (guint i = 0; i < G_N_ELEMENTS(agents); i++) {
        /* The two oldest were closed; the rest wait. */
        if (i < 2) {
            g_autoptr(GString) got = read_until(agents[i], NULL, &ended);
            g_assert_true(ended);
        } else {
            g_assert_true(still_open(agents[i]));
        }
        close(agents[i]);
    }
    spin(20);
    g_assert_cmpuint(einsora_tunnels_count_idle(tunnels, "m1"), ==, 0);
}

/* An idle stream that speaks first is no stream: closed, not given a request. */
static void
test_idle_stream_that_speaks(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    int agent = add_stream(tunnels, "m1");
    gboolean ended;
    g_autoptr(GString) got = NULL;

    g_assert_true(still_open(agent));
    send_all(agent, "HTTP/1.1 200 OK\r\n\r\n");
    got = read_until(agent, NULL, &ended);
    g_assert_true(ended);
    g_assert_cmpuint(einsora_tunnels_count_idle(tunnels, "m1"), ==, 0);
    close(agent);
}

/* A revoked machine's streams all close: idle, waiting and carrying. */
static void
test_close_machine(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    int agent = add_stream(tunnels, "m1");
    int carrying = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", NULL);
    /* No stream is left for this one: it waits. */
    int waiting = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", NULL);
    int other = add_stream(tunnels, "m2");
    gboolean ended;
    g_autoptr(GString) line = read_until(agent, "\n", &ended);

    g_assert_false(ended);
    g_assert_true(still_open(waiting));
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 2);
    einsora_tunnels_close_machine(tunnels, "m1");
    for (guint i = 0; i < 3; i++) {
        int fd = i == 0 ? agent : i == 1 ? carrying : waiting;
        g_autoptr(GString) rest = read_until(fd, NULL, &ended);
        g_assert_true(ended);
    }
    spin(20);
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 0);
    /* Another machine's are left alone. */
    g_assert_cmpuint(einsora_tunnels_count_idle(tunnels, "m2"), ==, 1);
    close(agent);
    close(carrying);
    close(waiting);
    close(other);
    spin(20);
}

static gboolean
count_want(const char *machine_id, guint count, gpointer user_data)
{
    guint *wanted = user_data;

    g_assert_cmpstr(machine_id, ==, "m1");
    *wanted += count;
    return TRUE;
}

/* A request that finds no idle stream asks the agent for one (through
 * its sync); one that finds a stream asks nothing. */
static void
test_asks_for_streams(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    guint wanted = 0;
    int agent, first, second, third;

    einsora_tunnels_set_want(tunnels, count_want, &wanted);
    agent = add_stream(tunnels, "m1");
    first = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", NULL);
    g_assert_cmpuint(wanted, ==, 0);
    second = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", NULL);
    third = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", NULL);
    g_assert_cmpuint(wanted, ==, 2);
    close(agent);
    close(first);
    close(second);
    close(third);
    spin(20);
}

/* Past the cap a request is refused at once, not queued. */
static void
test_cap(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    g_autoptr(GError) error = NULL;
    int fds[EINSORA_TUNNELS_ACTIVE_MAX];

    for (guint i = 0; i < G_N_ELEMENTS(fds); i++) {
        fds[i] = einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", NULL);
        g_assert_cmpint(fds[i], >=, 0);
    }
    g_assert_cmpint(einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "token", &error), ==, -1);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_BUSY);
    for (guint i = 0; i < G_N_ELEMENTS(fds); i++)
        close(fds[i]);
}

/* The line is JSON made here: nothing but an ID's characters goes in it. */
static void
test_names(void)
{
    g_autoptr(EinsoraTunnels) tunnels = einsora_tunnels_new();
    g_autoptr(GError) error = NULL;

    g_assert_cmpint(einsora_tunnels_open(tunnels, "m1", "x\",\"attempt\":9", 1, "token", &error),
                    ==, -1);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error(&error);
    g_assert_cmpint(einsora_tunnels_open(tunnels, "m1", WORKLOAD, 1, "Basic", &error), ==, -1);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_cmpuint(einsora_tunnels_count_active(tunnels, "m1"), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/tunnels/request-and-answer", test_request_and_answer);
    g_test_add_func("/tunnels/requests-wait-for-streams", test_requests_wait_for_streams);
    g_test_add_func("/tunnels/keeps-the-newest-idle", test_keeps_the_newest_idle);
    g_test_add_func("/tunnels/idle-stream-that-speaks", test_idle_stream_that_speaks);
    g_test_add_func("/tunnels/close-machine", test_close_machine);
    g_test_add_func("/tunnels/asks-for-streams", test_asks_for_streams);
    g_test_add_func("/tunnels/cap", test_cap);
    g_test_add_func("/tunnels/names", test_names);
    return g_test_run();
}
