/* The HTTP edge's hygiene rules against both of the real daemon's
 * listeners, the /v1 API and the access proxy, over raw sockets: every
 * case gets exactly one documented answer and a close (never two
 * answers, never a forward); good requests are kept alive and pipelined;
 * the proxy closes 1,500 slow clients at its deadline and still answers
 * (docs/adr/0025). */
#include <gio/gio.h>
#include <string.h>
#include <sys/resource.h>

#include "einsora-test-daemon.h"
#include "einsora-test-socket.h"

/* The daemon's head, body and idle deadline here: longer under the
 * sanitizers, where accepting 1,500 connections alone takes seconds. */
#if defined(__SANITIZE_ADDRESS__)
#define DEADLINE_MS 8000
#else
#define DEADLINE_MS 2000
#endif
#define SLOW_CLIENTS 1500

static EinsoraTestDaemon *daemon_;

typedef enum { TO_API, TO_ACCESS } Listener;

static guint
port_of(Listener listener)
{
    g_autoptr(GUri) uri = NULL;

    if (listener == TO_ACCESS)
        return daemon_->access_port;
    uri = g_uri_parse(daemon_->uri, G_URI_FLAGS_NONE, NULL);
    return (guint)g_uri_get_port(uri);
}

typedef struct {
    guint count;       /* answers read */
    guint status[4];   /* of the first ones */
    gboolean closed;   /* the daemon closed after them */
    gboolean garbage;  /* bytes that weren't an answer */
    gchar *first_body; /* the first answer's body */
} Answers;

static void
answers_clear(Answers *answers)
{
    g_clear_pointer(&answers->first_body, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Answers, answers_clear)

/* Splits what came back into answers, each framed by its Content-Length
 * (the edge's own and the daemon's small answers all carry one). */
static void
count_answers(const GByteArray *in, Answers *answers)
{
    gsize at = 0;

    while (at < in->len) {
        const char *start = (const char *)in->data + at;
        const char *end = g_strstr_len(start, (gssize)(in->len - at), "\r\n\r\n");
        const char *length;
        gsize body = 0;

        if (end == NULL || !g_str_has_prefix(start, "HTTP/1.1 ")) {
            answers->garbage = TRUE;
            return;
        }
        if (answers->count < G_N_ELEMENTS(answers->status))
            answers->status[answers->count] = (guint)g_ascii_strtoull(start + 9, NULL, 10);
        answers->count++;
        length = g_strstr_len(start, end - start, "\r\nContent-Length: ");
        if (length != NULL)
            body = (gsize)g_ascii_strtoull(length + strlen("\r\nContent-Length: "), NULL, 10);
        if (answers->count == 1 && answers->first_body == NULL)
            answers->first_body =
                g_strndup(end + 4, MIN(body, in->len - (gsize)(end + 4 - (const char *)in->data)));
        at = (gsize)(end + 4 - (const char *)in->data) + body;
    }
}

/* Sends @raw (what the daemon takes of it) and reads until it closes or
 * @wait_ms pass with nothing more. */
static void
exchange(Listener listener, const char *raw, gsize length, guint wait_ms, Answers *answers)
{
    g_autoptr(GSocket) socket = einsora_test_connect(port_of(listener));
    g_autoptr(GByteArray) in = g_byte_array_new();
    char buffer[65536];
    gsize sent = 0;

    g_clear_pointer(&answers->first_body, g_free);
    memset(answers, 0, sizeof *answers);
    while (sent < length) {
        gssize n = g_socket_send(socket, raw + sent, length - sent, NULL, NULL);
        if (n <= 0)
            break;
        sent += (gsize)n;
    }
    g_socket_set_timeout(socket, 0);
    for (;;) {
        g_autoptr(GError) error = NULL;
        gssize n;
        if (!g_socket_condition_timed_wait(socket, G_IO_IN, (gint64)wait_ms * 1000, NULL, &error))
            break;
        n = g_socket_receive(socket, buffer, sizeof buffer, NULL, &error);
        if (n <= 0) {
            answers->closed = TRUE;
            break;
        }
        g_byte_array_append(in, (const guint8 *)buffer, (guint)n);
    }
    count_answers(in, answers);
}

typedef struct {
    const char *name;
    gchar *raw;
    guint status;
} Case;

static void
case_free(Case *c)
{
    g_free(c->raw);
    g_free(c);
}

static void
add(GPtrArray *cases, const char *name, guint status, gchar *raw)
{
    Case *c = g_new0(Case, 1);

    c->name = name;
    c->status = status;
    c->raw = raw;
    g_ptr_array_add(cases, c);
}

/* Each refused request is followed by a second one that would be
 * answered if the first were taken for less than it is: it must not be. */
#define FOLLOW "GET /healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n"

static GPtrArray *
hygiene_cases(void)
{
    GPtrArray *cases = g_ptr_array_new_with_free_func((GDestroyNotify)case_free);
    g_autoptr(GString) long_target = g_string_new(NULL);
    g_autoptr(GString) big_cookie = g_string_new(NULL);
    g_autoptr(GString) many_lines = g_string_new(NULL);

    add(cases, "CL and TE: smuggling", 400,
        g_strdup("POST /v1/login HTTP/1.1\r\nHost: @HOST@\r\nContent-Length: 6\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" FOLLOW));
    add(cases, "TE and CL: smuggling", 400,
        g_strdup("POST /v1/login HTTP/1.1\r\nHost: @HOST@\r\nTransfer-Encoding: chunked\r\n"
                 "Content-Length: 44\r\n\r\n0\r\n\r\n" FOLLOW));
    add(cases, "TE: chunked, chunked", 400,
        g_strdup("POST / HTTP/1.1\r\nHost: @HOST@\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
                 "0\r\n\r\n" FOLLOW));
    add(cases, "TE: gzip", 400,
        g_strdup("POST / HTTP/1.1\r\nHost: @HOST@\r\nTransfer-Encoding: gzip\r\n\r\n" FOLLOW));
    add(cases, "TE: xchunked", 400,
        g_strdup("POST / HTTP/1.1\r\nHost: @HOST@\r\nTransfer-Encoding: xchunked\r\n\r\n" FOLLOW));
    add(cases, "two Content-Lengths", 400,
        g_strdup("POST / HTTP/1.1\r\nHost: @HOST@\r\nContent-Length: 0\r\nContent-Length: 44\r\n"
                 "\r\n" FOLLOW));
    add(cases, "two Hosts", 400,
        g_strdup("GET / HTTP/1.1\r\nHost: @HOST@\r\nHost: evil.example\r\n\r\n" FOLLOW));
    add(cases, "no Host", 400, g_strdup("GET / HTTP/1.1\r\n\r\n" FOLLOW));
    add(cases, "absolute-form for another host", 400,
        g_strdup("GET http://evil.example/ HTTP/1.1\r\nHost: @HOST@\r\n\r\n" FOLLOW));
    add(cases, "absolute-form for this host", 400,
        g_strdup("GET http://@HOST@/healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n" FOLLOW));
    add(cases, "obs-fold in Authorization", 400,
        g_strdup(
            "GET /v1/me HTTP/1.1\r\nHost: @HOST@\r\nAuthorization: Bearer\r\n x\r\n\r\n" FOLLOW));
    add(cases, "obs-fold in Host", 400,
        g_strdup("GET / HTTP/1.1\r\nHost: @HOST@\r\n evil.example\r\n\r\n" FOLLOW));
    add(cases, "space before the colon", 400,
        g_strdup("GET / HTTP/1.1\r\nHost : @HOST@\r\n\r\n" FOLLOW));
    add(cases, "a NUL in a value", 400,
        g_strdup("GET / HTTP/1.1\r\nHost: @HOST@\r\nX-A: a\x01"
                 "b\r\n\r\n" FOLLOW));
    add(cases, "a bare LF ending a line", 400,
        g_strdup("GET / HTTP/1.1\r\nHost: @HOST@\nX-A: b\r\n\r\n" FOLLOW));
    add(cases, "a CR inside a value", 400,
        g_strdup("GET / HTTP/1.1\r\nHost: @HOST@\r\nX-A: a\rb\r\n\r\n" FOLLOW));
    add(cases, "CONNECT", 405,
        g_strdup("CONNECT evil.example:443 HTTP/1.1\r\nHost: @HOST@\r\n\r\n"));
    add(cases, "TRACE", 405, g_strdup("TRACE / HTTP/1.1\r\nHost: @HOST@\r\n\r\n" FOLLOW));
    add(cases, "an unknown method", 501,
        g_strdup("BREW / HTTP/1.1\r\nHost: @HOST@\r\n\r\n" FOLLOW));
    add(cases, "HTTP/2 preface", 505, g_strdup("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    add(cases, "HTTP/1.2", 505, g_strdup("GET / HTTP/1.2\r\nHost: @HOST@\r\n\r\n" FOLLOW));
    add(cases, "HTTP/0.9", 400, g_strdup("GET /\r\n\r\n"));
    add(cases, "TLS bytes", 400, g_strdup("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"));

    g_string_append(long_target, "GET /");
    while (long_target->len < 64 * 1024)
        g_string_append_c(long_target, 'a');
    g_string_append(long_target, " HTTP/1.1\r\nHost: @HOST@\r\n\r\n");
    add(cases, "a 64 KiB target", 414, g_strdup(long_target->str));
    g_string_append(big_cookie, "GET / HTTP/1.1\r\nHost: @HOST@\r\nCookie: ");
    while (big_cookie->len < 1024 * 1024)
        g_string_append(big_cookie, "crumb=xxxxxxxxxxxx; ");
    g_string_append(big_cookie, "\r\n\r\n");
    add(cases, "a 1 MB Cookie", 431, g_strdup(big_cookie->str));
    g_string_append(many_lines, "GET / HTTP/1.1\r\nHost: @HOST@\r\n");
    for (guint i = 0; i < 10000; i++)
        g_string_append(many_lines, "X-Line: y\r\n");
    g_string_append(many_lines, "\r\n");
    add(cases, "10,000 header lines", 431, g_strdup(many_lines->str));
    return cases;
}

static gchar *
fill_in(const char *raw, Listener listener)
{
    g_autoptr(GString) text = g_string_new(raw);
    g_autofree gchar *host = g_strdup_printf("127.0.0.1:%u", port_of(listener));

    g_string_replace(text, "@HOST@", host, 0);
    return g_string_free(g_steal_pointer(&text), FALSE);
}

static void
test_hygiene(void)
{
    g_autoptr(GPtrArray) cases = hygiene_cases();
    guint failed = 0;

    for (guint l = 0; l < 2; l++) {
        Listener listener = l == 0 ? TO_API : TO_ACCESS;
        for (guint i = 0; i < cases->len; i++) {
            Case *c = g_ptr_array_index(cases, i);
            g_autofree gchar *raw = fill_in(c->raw, listener);
            g_auto(Answers) answers = {0};
            gint64 started = g_get_monotonic_time();

            exchange(listener, raw, strlen(raw), 5000, &answers);
            g_test_message("%s, %s: %u answer(s), first %u, %s in %" G_GINT64_FORMAT " ms",
                           listener == TO_API ? "api" : "access", c->name, answers.count,
                           answers.status[0], answers.closed ? "closed" : "left open",
                           (g_get_monotonic_time() - started) / 1000);
            if (answers.count != 1 || answers.status[0] != c->status || !answers.closed ||
                answers.garbage) {
                g_test_message("  want one %u and a close", c->status);
                failed++;
            }
            /* The API's are its JSON errors, whatever the reason says. */
            if (listener == TO_API) {
                g_autoptr(JsonParser) parser = json_parser_new();
                if (answers.first_body == NULL ||
                    !json_parser_load_from_data(parser, answers.first_body, -1, NULL)) {
                    g_test_message("  not JSON: %s", answers.first_body);
                    failed++;
                }
            }
            g_clear_pointer(&answers.first_body, g_free);
        }
    }
    g_assert_cmpuint(failed, ==, 0);
}

/* The API's refusals are its usual errors: JSON with the request's ID,
 * the same as the X-Request-ID header says. */
static void
test_api_refusal_shape(void)
{
    g_autoptr(GSocket) socket = einsora_test_connect(port_of(TO_API));
    g_autoptr(GString) in = g_string_new(NULL);
    const char *raw = "GET /v1/me HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
    char buffer[4096];
    gssize n;
    const char *header;
    g_autofree gchar *id = NULL;
    g_autofree gchar *member = NULL;

    g_assert_cmpint(g_socket_send(socket, raw, strlen(raw), NULL, NULL), ==, strlen(raw));
    while ((n = g_socket_receive(socket, buffer, sizeof buffer, NULL, NULL)) > 0)
        g_string_append_len(in, buffer, n);
    g_assert_true(g_str_has_prefix(in->str, "HTTP/1.1 400 "));
    g_assert_nonnull(strstr(in->str, "\r\nContent-Type: application/json\r\n"));
    header = strstr(in->str, "\r\nX-Request-ID: ");
    g_assert_nonnull(header);
    id = g_strndup(header + strlen("\r\nX-Request-ID: "), 36);
    member = g_strdup_printf("\"request_id\":\"%s\"", id);
    g_assert_nonnull(strstr(in->str, "\"code\":\"invalid_request\""));
    g_assert_nonnull(strstr(in->str, member));
}

/* What a client may do that is still one good request: half-close its
 * side once the request is sent (nc -N, some health checkers): the answer
 * comes, then the close; and empty lines before the request line, which
 * the edge skips (libsoup would take a third as the end of a head). */
static void
test_good_but_odd(void)
{
    for (guint l = 0; l < 2; l++) {
        Listener listener = l == 0 ? TO_API : TO_ACCESS;
        guint want = listener == TO_API ? 200 : 421;
        g_autofree gchar *raw = fill_in("GET /healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n", listener);
        g_autofree gchar *padded =
            fill_in("\r\n\r\n\r\n\r\nGET /healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n", listener);
        g_autoptr(GSocket) socket = einsora_test_connect(port_of(listener));
        g_autoptr(GByteArray) in = g_byte_array_new();
        char buffer[4096];
        gssize n;
        g_auto(Answers) answers = {0};

        g_assert_cmpint(g_socket_send(socket, raw, strlen(raw), NULL, NULL), ==, strlen(raw));
        g_assert_true(g_socket_shutdown(socket, FALSE, TRUE, NULL));
        while ((n = g_socket_receive(socket, buffer, sizeof buffer, NULL, NULL)) > 0)
            g_byte_array_append(in, (const guint8 *)buffer, (guint)n);
        count_answers(in, &answers);
        g_assert_cmpuint(answers.count, ==, 1);
        g_assert_cmpuint(answers.status[0], ==, want);

        exchange(listener, padded, strlen(padded), 500, &answers);
        g_assert_cmpuint(answers.count, ==, 1);
        g_assert_cmpuint(answers.status[0], ==, want);
        g_assert_false(answers.garbage);
    }
}

/* Good requests: kept alive, pipelined, each answered once, in order. */
static void
test_kept_alive(void)
{
    for (guint l = 0; l < 2; l++) {
        Listener listener = l == 0 ? TO_API : TO_ACCESS;
        /* The proxy refuses a Host that isn't a notebook's with 421: still
         * an answer on a connection that stays. */
        guint want = listener == TO_API ? 200 : 421;
        g_autofree gchar *raw = fill_in("GET /healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n"
                                        "GET /healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n"
                                        "GET /healthz HTTP/1.1\r\nHost: @HOST@\r\n\r\n",
                                        listener);
        g_auto(Answers) answers = {0};

        exchange(listener, raw, strlen(raw), 500, &answers);
        g_test_message("%s: %u answers", listener == TO_API ? "api" : "access", answers.count);
        g_assert_false(answers.closed);
        g_assert_false(answers.garbage);
        g_assert_cmpuint(answers.count, ==, 3);
        g_assert_cmpuint(answers.status[0], ==, want);
        g_assert_cmpuint(answers.status[2], ==, want);
    }
}

static guint
open_fds(void)
{
    g_autofree gchar *path =
        g_strdup_printf("/proc/%s/fd", g_subprocess_get_identifier(daemon_->process));
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    guint n = 0;

    g_assert_nonnull(dir);
    while (g_dir_read_name(dir) != NULL)
        n++;
    return n;
}

static guint
wait_for_fds(guint want, gint64 timeout_us)
{
    gint64 deadline = g_get_monotonic_time() + timeout_us;
    guint now = open_fds();

    while (now > want && g_get_monotonic_time() < deadline) {
        g_usleep(50 * 1000);
        now = open_fds();
    }
    return now;
}

/* 1,500 clients that send half a request head to the access proxy and
 * nothing more: a real request is still answered while they wait, each
 * is closed at the deadline, and the daemon's descriptors come back to
 * where they were. */
static void
test_slow_clients_on_the_proxy(void)
{
    g_autoptr(GPtrArray) slow = g_ptr_array_new_with_free_func(g_object_unref);
    guint baseline = open_fds();
    guint during;
    guint closed = 0;
    gint64 started;
    const char *half = "GET / HTTP/1.1\r\nHost: w-";

    started = g_get_monotonic_time();
    for (guint i = 0; i < SLOW_CLIENTS; i++) {
        GSocket *socket = einsora_test_connect(port_of(TO_ACCESS));
        g_assert_cmpint(g_socket_send(socket, half, strlen(half), NULL, NULL), ==, strlen(half));
        g_ptr_array_add(slow, socket);
    }
    /* Accepted 256 at a time: wait until all are in. */
    {
        gint64 deadline = g_get_monotonic_time() + (gint64)DEADLINE_MS * 1000;
        /* (The baseline may still hold a closing connection of the last test.) */
        while ((during = open_fds()) < baseline + SLOW_CLIENTS - 5 &&
               g_get_monotonic_time() < deadline)
            g_usleep(20 * 1000);
    }
    g_test_message("%u slow clients connected in %" G_GINT64_FORMAT " ms; daemon fds %u -> %u",
                   SLOW_CLIENTS, (g_get_monotonic_time() - started) / 1000, baseline, during);
    g_assert_cmpuint(during, >=, baseline + SLOW_CLIENTS - 5);
    {
        g_autofree gchar *raw = fill_in("GET / HTTP/1.1\r\nHost: @HOST@\r\n\r\n", TO_ACCESS);
        g_auto(Answers) answers = {0};
        exchange(TO_ACCESS, raw, strlen(raw), 200, &answers);
        g_assert_cmpuint(answers.count, ==, 1);
        g_assert_cmpuint(answers.status[0], ==, 421);
    }
    for (guint i = 0; i < slow->len; i++) {
        GSocket *socket = g_ptr_array_index(slow, i);
        char byte;
        g_socket_set_timeout(socket, DEADLINE_MS * 3 / 1000);
        if (g_socket_receive(socket, &byte, 1, NULL, NULL) == 0)
            closed++;
    }
    g_test_message("%u of %u closed by the daemon after %" G_GINT64_FORMAT " ms", closed,
                   SLOW_CLIENTS, (g_get_monotonic_time() - started) / 1000);
    g_assert_cmpuint(closed, ==, SLOW_CLIENTS);
    g_assert_cmpint(g_get_monotonic_time() - started, >=, (DEADLINE_MS - 500) * 1000);
    g_ptr_array_set_size(slow, 0);
    g_assert_cmpuint(wait_for_fds(baseline, 5 * G_USEC_PER_SEC), <=, baseline);
}

int
main(int argc, char **argv)
{
    struct rlimit limit;
    int status;

    g_test_init(&argc, &argv, NULL);
    /* This process holds the slow clients. */
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    daemon_ = einsora_test_daemon_new();
    einsora_test_daemon_setenv(daemon_, "EINSORA_TEST_REQUEST_TIMEOUT_MS",
                               G_STRINGIFY(DEADLINE_MS));
    einsora_test_daemon_start(daemon_);
    g_test_add_func("/http/edge/hygiene", test_hygiene);
    g_test_add_func("/http/edge/api-refusal-shape", test_api_refusal_shape);
    g_test_add_func("/http/edge/kept-alive", test_kept_alive);
    g_test_add_func("/http/edge/half-close-and-empty-lines", test_good_but_odd);
    g_test_add_func("/http/edge/slow-clients-on-the-proxy", test_slow_clients_on_the_proxy);
    status = g_test_run();
    einsora_test_daemon_stop(daemon_);
    einsora_test_daemon_free(daemon_);
    return status;
}
