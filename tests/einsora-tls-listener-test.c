/* The API over TLS (docs/adr/0046), the real daemon on a loopback port
 * with EINSORA_TLS=on, clients through GLib's TLS: its own certificate,
 * pinned by the fingerprint it prints and trusted through its CA; the
 * operator's files reloaded on SIGHUP; plain HTTP on the TLS port told
 * what to type; handshakes that never come and garbage closed at the
 * deadline; every descriptor given back; the settings that must refuse. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"
#include "einsora-test-socket.h"
#include "einsora-tls-identity.h"

/* The daemon's head deadline here; a handshake must beat it too. Longer
 * under the sanitizers, where a hundred handshakes take seconds. */
#if defined(__SANITIZE_ADDRESS__)
#define DEADLINE_MS 10000
#else
#define DEADLINE_MS 1500
#endif

static EinsoraTestDaemon *
tls_daemon_new(void)
{
    EinsoraTestDaemon *daemon = einsora_test_daemon_new();

    einsora_test_daemon_setenv(daemon, "EINSORA_TLS", "on");
    einsora_test_daemon_setenv(daemon, "EINSORA_TEST_REQUEST_TIMEOUT_MS", G_STRINGIFY(DEADLINE_MS));
    return daemon;
}

static guint
port_of(EinsoraTestDaemon *daemon)
{
    g_autoptr(GUri) uri = g_uri_parse(daemon->uri, G_URI_FLAGS_NONE, NULL);

    g_assert_nonnull(uri);
    return (guint)g_uri_get_port(uri);
}

/* The value after "fingerprint " in the daemon's log (the last start's). */
static gchar *
logged_fingerprint(EinsoraTestDaemon *daemon)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(daemon);
    const char *at = g_strrstr(log, ", fingerprint SHA256:");

    g_assert_nonnull(at);
    at += strlen(", fingerprint ");
    return g_strndup(at, strlen("SHA256:") + 64);
}

/* The certificate the daemon presents now, taken in a handshake that
 * accepts anything (the test checks it after). */
static gboolean
accept_any(GTlsConnection *connection, GTlsCertificate *certificate, GTlsCertificateFlags errors,
           gpointer user_data)
{
    return TRUE;
}

static GTlsCertificate *
presented_certificate(guint port)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketConnection) tcp = NULL;
    g_autoptr(GSocketConnectable) where = g_network_address_new("127.0.0.1", (guint16)port);
    g_autoptr(GIOStream) tls = NULL;

    tcp = g_socket_client_connect(client, where, NULL, &error);
    g_assert_no_error(error);
    tls = g_tls_client_connection_new(G_IO_STREAM(tcp), where, &error);
    g_assert_no_error(error);
    g_signal_connect(tls, "accept-certificate", G_CALLBACK(accept_any), NULL);
    g_assert_true(g_tls_connection_handshake(G_TLS_CONNECTION(tls), NULL, &error));
    g_assert_no_error(error);
    return g_object_ref(g_tls_connection_get_peer_certificate(G_TLS_CONNECTION(tls)));
}

static gchar *
presented_fingerprint(guint port)
{
    g_autoptr(GTlsCertificate) certificate = presented_certificate(port);

    return einsora_tls_certificate_fingerprint(certificate);
}

static gboolean
accept_pinned(SoupMessage *message, GTlsCertificate *certificate, GTlsCertificateFlags errors,
              gpointer user_data)
{
    g_autofree gchar *fingerprint = einsora_tls_certificate_fingerprint(certificate);

    return einsora_tls_fingerprint_matches(user_data, fingerprint);
}

/* GET @path with @token over a fresh session that trusts only what
 * @pin (a fingerprint) names, or nothing at all: the status, 0 when the
 * TLS connection was refused. */
static guint
get_pinned(EinsoraTestDaemon *daemon, const char *path, const char *token, const char *pin)
{
    g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 10, NULL);
    g_autofree gchar *url = g_strconcat(daemon->uri, path, NULL);
    g_autoptr(SoupMessage) message = soup_message_new("GET", url);
    g_autoptr(GBytes) body = NULL;
    g_autoptr(GError) error = NULL;

    if (token != NULL) {
        g_autofree gchar *bearer = g_strdup_printf("Bearer %s", token);
        soup_message_headers_append(soup_message_get_request_headers(message), "Authorization",
                                    bearer);
    }
    if (pin != NULL)
        g_signal_connect(message, "accept-certificate", G_CALLBACK(accept_pinned), (gpointer)pin);
    body = soup_session_send_and_read(session, message, NULL, &error);
    if (body == NULL) {
        g_assert_true(error->domain == G_TLS_ERROR || error->domain == G_IO_ERROR);
        return 0;
    }
    return soup_message_get_status(message);
}

static guint
mode_of(const char *path)
{
    struct stat st;

    g_assert_cmpint(g_stat(path, &st), ==, 0);
    return st.st_mode & 0777;
}

static gchar *
run_info(EinsoraTestDaemon *daemon, const char *const *extra)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    gchar *out = NULL;

    g_ptr_array_add(argv, (gpointer)einsora_test_daemon_path());
    g_ptr_array_add(argv, "--data-dir");
    g_ptr_array_add(argv, daemon->data_dir);
    for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, "info");
    g_ptr_array_add(argv, NULL);
    process =
        g_subprocess_newv((const char *const *)argv->pdata, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &out, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    g_assert_cmpint(g_subprocess_get_exit_status(process), ==, 0);
    return out;
}

/* The daemon's own certificate: made at the first start in private
 * files, its fingerprint in the log and in `info`, the one presented,
 * the same after a restart; a pin or the CA opens the API, neither is
 * refused. */
static void
test_own_certificate(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    g_autofree gchar *tls_dir = g_build_filename(daemon->data_dir, "tls", NULL);
    g_autofree gchar *key = g_build_filename(tls_dir, EINSORA_TLS_KEY_FILE, NULL);
    g_autofree gchar *ca_key = g_build_filename(tls_dir, EINSORA_TLS_CA_KEY_FILE, NULL);
    g_autofree gchar *ca = g_build_filename(tls_dir, EINSORA_TLS_CA_FILE, NULL);
    g_autofree gchar *before = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *presented = NULL;
    g_autofree gchar *info = NULL;
    g_autofree gchar *again = NULL;
    g_autofree gchar *info_line = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GTlsDatabase) trust = NULL;
    g_autoptr(EinsoraTestResponse) me = NULL;
    const char *token;
    const char *const tls_on[] = {"--tls", "on", NULL};

    /* Before the first start: nothing made, and info says so. */
    before = run_info(daemon, tls_on);
    g_assert_nonnull(strstr(before, "fingerprint: none yet"));
    g_assert_false(g_file_test(tls_dir, G_FILE_TEST_EXISTS));

    einsora_test_daemon_start(daemon);
    g_assert_true(g_str_has_prefix(daemon->uri, "https://127.0.0.1:"));
    g_assert_cmpuint(mode_of(tls_dir), ==, 0700);
    g_assert_cmpuint(mode_of(key), ==, 0600);
    g_assert_cmpuint(mode_of(ca_key), ==, 0600);

    fingerprint = logged_fingerprint(daemon);
    presented = presented_fingerprint(port_of(daemon));
    g_assert_cmpstr(presented, ==, fingerprint);
    info = run_info(daemon, tls_on);
    info_line = g_strdup_printf("fingerprint: %s\n", fingerprint);
    g_assert_nonnull(strstr(info, info_line));

    token = daemon->owner_token;
    /* Pinned: the API answers. Not pinned, not trusted: refused. A pin
     * of another certificate: refused. */
    g_assert_cmpuint(get_pinned(daemon, "/v1/me", token, fingerprint), ==, 200);
    g_assert_cmpuint(get_pinned(daemon, "/v1/me", token, NULL), ==, 0);
    g_assert_cmpuint(get_pinned(daemon, "/v1/me", token,
                                "SHA256:00000000000000000000000000000000000000000000000000000000"
                                "00000000"),
                     ==, 0);
    /* Trusted through the daemon's CA, with the name checked. */
    trust = g_tls_file_database_new(ca, &error);
    g_assert_no_error(error);
    g_object_set(daemon->session, "tls-database", trust, NULL);
    me = einsora_test_request(daemon, "GET", "/v1/me", token, NULL, NULL, NULL);
    g_assert_cmpuint(me->status, ==, 200);
    g_assert_nonnull(einsora_test_response_string(me, "tenant_id"));

    /* Kept across a restart: the pin still holds. */
    einsora_test_daemon_stop(daemon);
    g_clear_pointer(&daemon->uri, g_free);
    einsora_test_daemon_start(daemon);
    again = presented_fingerprint(port_of(daemon));
    g_assert_cmpstr(again, ==, fingerprint);
    einsora_test_daemon_stop(daemon);
}

/* What arrives on @socket until the daemon closes (or @timeout_s). */
static GByteArray *
read_to_close(GSocket *socket, guint timeout_s, gboolean *closed)
{
    GByteArray *in = g_byte_array_new();
    guint8 buffer[4096];

    g_socket_set_timeout(socket, timeout_s);
    *closed = FALSE;
    for (;;) {
        g_autoptr(GError) error = NULL;
        gssize got = g_socket_receive(socket, (gchar *)buffer, sizeof buffer, NULL, &error);
        if (got == 0 || (got < 0 && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))) {
            *closed = TRUE;
            return in;
        }
        if (got < 0)
            return in;
        g_byte_array_append(in, buffer, (guint)got);
    }
}

static void
send_all(GSocket *socket, const void *data, gsize length)
{
    gsize sent = 0;

    while (sent < length) {
        g_autoptr(GError) error = NULL;
        gssize count =
            g_socket_send(socket, (const gchar *)data + sent, length - sent, NULL, &error);
        g_assert_no_error(error);
        sent += (gsize)count;
    }
}

/* Plain HTTP on the TLS port: told what to type, closed; nothing reaches
 * the API. */
static void
test_plain_http_told(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    g_autoptr(GSocket) socket = NULL;
    g_autoptr(GByteArray) in = NULL;
    g_autofree gchar *text = NULL;
    g_autofree gchar *log = NULL;
    gboolean closed;
    const char request[] = "GET /v1/me HTTP/1.1\r\nHost: x\r\n\r\n";

    einsora_test_daemon_start(daemon);
    socket = einsora_test_connect(port_of(daemon));
    send_all(socket, request, strlen(request));
    in = read_to_close(socket, 10, &closed);
    g_assert_true(closed);
    text = g_strndup((const gchar *)in->data, in->len);
    g_assert_true(g_str_has_prefix(text, "HTTP/1.1 400 Bad Request\r\n"));
    g_assert_nonnull(strstr(text, "use https://"));
    einsora_test_daemon_stop(daemon);
    log = einsora_test_daemon_read_log(daemon);
    g_assert_null(strstr(log, "GET /v1/me"));
}

/* Peers that never finish a handshake are closed at the head deadline:
 * silent, a ClientHello cut short, a TLS record of garbage. */
static void
test_handshake_deadline(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    static const guint8 partial_hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01};
    static const guint8 garbage[] = {0x16, 0xff, 0xff, 0x00, 0x04, 'x', 'y', 'z', 'w'};
    const struct {
        const guint8 *bytes;
        gsize length;
    } peers[] = {{NULL, 0}, {partial_hello, sizeof partial_hello}, {garbage, sizeof garbage}};

    einsora_test_daemon_start(daemon);
    for (guint i = 0; i < G_N_ELEMENTS(peers); i++) {
        g_autoptr(GSocket) socket = einsora_test_connect(port_of(daemon));
        g_autoptr(GByteArray) in = NULL;
        gint64 started = g_get_monotonic_time();
        gboolean closed;

        if (peers[i].bytes != NULL)
            send_all(socket, peers[i].bytes, peers[i].length);
        in = read_to_close(socket, 3 * DEADLINE_MS / 1000 + 5, &closed);
        g_test_message("peer %u: closed after %" G_GINT64_FORMAT " ms, %u bytes", i,
                       (g_get_monotonic_time() - started) / 1000, in->len);
        g_assert_true(closed);
    }
    /* And the API still answers. */
    {
        g_autofree gchar *fingerprint = logged_fingerprint(daemon);
        g_assert_cmpuint(get_pinned(daemon, "/healthz", NULL, fingerprint), ==, 200);
    }
    einsora_test_daemon_stop(daemon);
}

static gboolean
accept_pin(GTlsConnection *connection, GTlsCertificate *certificate, GTlsCertificateFlags errors,
           gpointer user_data)
{
    g_autofree gchar *fingerprint = einsora_tls_certificate_fingerprint(certificate);

    return einsora_tls_fingerprint_matches(user_data, fingerprint);
}

static GIOStream *connect_tls_from(guint port, const char *fingerprint, const char *from);

/* A TLS connection made by hand, pinned to @fingerprint. */
static GIOStream *
connect_tls(guint port, const char *fingerprint)
{
    return connect_tls_from(port, fingerprint, NULL);
}

/* The same from the loopback address @from (NULL: any). */
static GIOStream *
connect_tls_from(guint port, const char *fingerprint, const char *from)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketConnectable) where = g_network_address_new("127.0.0.1", (guint16)port);
    g_autoptr(GSocketConnection) tcp = NULL;
    GIOStream *tls;

    g_socket_client_set_timeout(client, 20);
    if (from != NULL) {
        g_autoptr(GInetAddress) ip = g_inet_address_new_from_string(from);
        g_autoptr(GSocketAddress) local = g_inet_socket_address_new(ip, 0);
        g_socket_client_set_local_address(client, local);
    }
    tcp = g_socket_client_connect(client, where, NULL, &error);
    g_assert_no_error(error);
    tls = g_tls_client_connection_new(G_IO_STREAM(tcp), where, &error);
    g_assert_no_error(error);
    g_signal_connect(tls, "accept-certificate", G_CALLBACK(accept_pin), (gpointer)fingerprint);
    g_tls_connection_handshake(G_TLS_CONNECTION(tls), NULL, &error);
    g_assert_no_error(error);
    return tls;
}

/* Everything read on @tls until the peer ends it. */
static gchar *
read_tls_to_end(GIOStream *tls)
{
    GInputStream *in = g_io_stream_get_input_stream(tls);
    GString *text = g_string_new(NULL);
    gchar buffer[4096];

    for (;;) {
        g_autoptr(GError) error = NULL;
        gssize got = g_input_stream_read(in, buffer, sizeof buffer, NULL, &error);
        if (got <= 0)
            break;
        g_string_append_len(text, buffer, got);
    }
    return g_string_free(text, FALSE);
}

static guint
count_occurrences(const char *text, const char *needle)
{
    guint count = 0;

    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

/* Over TLS the edge's rules hold as over TCP: pipelined requests kept
 * alive, each answered once; a request that breaks the rules answered by
 * the edge and closed; the client's address is the TCP peer's (the
 * owner's metrics, open to loopback, answer it). */
static void
test_edge_rules_over_tls(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    g_autofree gchar *fingerprint = NULL;
    const char pipelined[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                             "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                             "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    const char bad[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n";

    einsora_test_daemon_setenv(daemon, "EINSORA_METRICS_OPEN", "loopback");
    einsora_test_daemon_start(daemon);
    fingerprint = logged_fingerprint(daemon);
    {
        g_autoptr(GIOStream) tls = connect_tls(port_of(daemon), fingerprint);
        g_autoptr(GError) error = NULL;
        g_autofree gchar *answers = NULL;

        g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(tls), pipelined,
                                                strlen(pipelined), NULL, NULL, &error));
        answers = read_tls_to_end(tls);
        g_assert_cmpuint(count_occurrences(answers, "HTTP/1.1 200 OK\r\n"), ==, 3);
        g_assert_nonnull(strstr(answers, "einsora_build_info"));
    }
    {
        g_autoptr(GIOStream) tls = connect_tls(port_of(daemon), fingerprint);
        g_autoptr(GError) error = NULL;
        g_autofree gchar *answers = NULL;

        g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(tls), bad,
                                                strlen(bad), NULL, NULL, &error));
        answers = read_tls_to_end(tls);
        g_assert_true(g_str_has_prefix(answers, "HTTP/1.1 400 "));
        g_assert_cmpuint(count_occurrences(answers, "HTTP/1.1 "), ==, 1);
    }
    einsora_test_daemon_stop(daemon);
}

/* Handshakes that start and stall hold GLib's worker threads: from one
 * address only two run at once, and however many stall, a client from
 * another address still gets its handshake at once. */
#define STALLED 40

static void
test_stalled_handshakes_capped(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    g_autoptr(GPtrArray) stalled = g_ptr_array_new_with_free_func(g_object_unref);
    g_autofree gchar *fingerprint = NULL;
    gint64 started;
    static const guint8 hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00};

    einsora_test_daemon_start(daemon);
    fingerprint = logged_fingerprint(daemon);
    for (guint i = 0; i < STALLED; i++) {
        GSocket *socket = einsora_test_connect(port_of(daemon));
        send_all(socket, hello_start, sizeof hello_start);
        g_ptr_array_add(stalled, socket);
    }
    g_usleep(200 * 1000);
    started = g_get_monotonic_time();
    {
        g_autoptr(GIOStream) tls = connect_tls_from(port_of(daemon), fingerprint, "127.0.0.2");
        gint64 took_ms = (g_get_monotonic_time() - started) / 1000;
        g_test_message("a handshake beside %u stalled ones took %" G_GINT64_FORMAT " ms", STALLED,
                       took_ms);
        g_assert_cmpint(took_ms, <, DEADLINE_MS * 2 / 3);
    }
    g_ptr_array_set_size(stalled, 0);
    einsora_test_daemon_stop(daemon);
}

static guint
count_descriptors(EinsoraTestDaemon *daemon)
{
    g_autofree gchar *path =
        g_strdup_printf("/proc/%s/fd", g_subprocess_get_identifier(daemon->process));
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    guint count = 0;

    g_assert_nonnull(dir);
    while (g_dir_read_name(dir) != NULL)
        count++;
    return count;
}

/* CROWD TLS connections at once, half of them finishing their handshake
 * and a request, half silent: every one closed in the end, and every
 * descriptor the daemon took for them (three each) given back. */
#if defined(__SANITIZE_ADDRESS__)
/* A handshake takes a few hundred ms on both instrumented sides: a
 * hundred would outlast the deadline before the last was made. */
#define CROWD 20
#else
#define CROWD 100
#endif

static void
test_descriptors_given_back(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    g_autofree gchar *fingerprint = NULL;
    g_autoptr(GPtrArray) held = g_ptr_array_new_with_free_func(g_object_unref);
    guint before, during, after = 0;
    gint64 deadline;

    einsora_test_daemon_start(daemon);
    fingerprint = logged_fingerprint(daemon);
    g_assert_cmpuint(get_pinned(daemon, "/healthz", NULL, fingerprint), ==, 200);
    before = count_descriptors(daemon);
    for (guint i = 0; i < CROWD; i++) {
        if (i % 2 == 0) {
            GIOStream *tls = connect_tls(port_of(daemon), fingerprint);
            const char request[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
            g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(tls), request,
                                                    strlen(request), NULL, NULL, NULL));
            g_ptr_array_add(held, tls);
        } else {
            g_ptr_array_add(held, einsora_test_connect(port_of(daemon)));
        }
    }
    /* The daemon takes the silent ones from its backlog as it gets to
     * them (slowly under the sanitizers): within half the deadline. */
    deadline = g_get_monotonic_time() + DEADLINE_MS / 2 * G_TIME_SPAN_MILLISECOND;
    while ((during = count_descriptors(daemon)) < before + CROWD &&
           g_get_monotonic_time() < deadline)
        g_usleep(50 * 1000);
    g_test_message("descriptors: %u before, %u with %u connections", before, during, CROWD);
    g_assert_cmpuint(during, >=, before + CROWD);
    /* The daemon closes them all at the deadline (kept alive and idle, or
     * silent), and gives every descriptor back. */
    deadline = g_get_monotonic_time() + (3 * DEADLINE_MS + 20000) * G_TIME_SPAN_MILLISECOND;
    while (g_get_monotonic_time() < deadline && (after = count_descriptors(daemon)) > before)
        g_usleep(100 * 1000);
    g_test_message("descriptors after the deadline: %u", after);
    g_assert_cmpuint(after, <=, before);
    g_ptr_array_set_size(held, 0);
    g_assert_cmpuint(get_pinned(daemon, "/healthz", NULL, fingerprint), ==, 200);
    einsora_test_daemon_stop(daemon);
}

static void
copy_identity(const char *from, const char *cert, const char *key)
{
    g_autofree gchar *from_cert = g_build_filename(from, EINSORA_TLS_CERT_FILE, NULL);
    g_autofree gchar *from_key = g_build_filename(from, EINSORA_TLS_KEY_FILE, NULL);
    g_autofree gchar *text = NULL;
    g_autofree gchar *key_text = NULL;
    g_autoptr(GError) error = NULL;

    g_assert_true(g_file_get_contents(from_cert, &text, NULL, &error));
    g_assert_true(g_file_get_contents(from_key, &key_text, NULL, &error));
    g_assert_true(
        g_file_set_contents_full(cert, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &error));
    g_assert_true(
        g_file_set_contents_full(key, key_text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error));
    g_assert_no_error(error);
}

static gchar *
fingerprint_of_dir(const char *dir)
{
    g_autofree gchar *path = g_build_filename(dir, EINSORA_TLS_CERT_FILE, NULL);
    g_autoptr(GTlsCertificate) certificate = g_tls_certificate_new_from_file(path, NULL);

    g_assert_nonnull(certificate);
    return einsora_tls_certificate_fingerprint(certificate);
}

static void
wait_for_log(EinsoraTestDaemon *daemon, const char *text, guint count)
{
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree gchar *log = einsora_test_daemon_read_log(daemon);
        if (count_occurrences(log, text) >= count)
            return;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50 * 1000);
    }
}

/* The operator's certificate and key: used, no identity of the daemon's
 * own made; renewed on disk and SIGHUP, new connections get the new one;
 * a broken file and SIGHUP keep the one in use. */
static void
test_given_files_reloaded(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = tls_daemon_new();
    g_autofree gchar *first_dir = g_build_filename(daemon->dir, "first", NULL);
    g_autofree gchar *second_dir = g_build_filename(daemon->dir, "second", NULL);
    g_autofree gchar *cert = g_build_filename(daemon->dir, "lab.pem", NULL);
    g_autofree gchar *key = g_build_filename(daemon->dir, "lab-key.pem", NULL);
    g_autofree gchar *own = g_build_filename(daemon->data_dir, "tls", NULL);
    g_autofree gchar *first = NULL;
    g_autofree gchar *second = NULL;
    g_autofree gchar *presented = NULL;
    g_autofree gchar *info = NULL;
    g_autoptr(GError) error = NULL;
    const char *const hosts[] = {"lab.example", NULL};
    const char *const info_args[] = {"--tls-cert", cert, "--tls-key", key, NULL};

    g_assert_true(einsora_tls_identity_ensure(first_dir, hosts, &error));
    g_assert_true(einsora_tls_identity_ensure(second_dir, hosts, &error));
    g_assert_no_error(error);
    first = fingerprint_of_dir(first_dir);
    second = fingerprint_of_dir(second_dir);
    g_assert_cmpstr(first, !=, second);
    copy_identity(first_dir, cert, key);

    einsora_test_daemon_setenv(daemon, "EINSORA_TLS", "auto");
    einsora_test_daemon_setenv(daemon, "EINSORA_TLS_CERT", cert);
    einsora_test_daemon_setenv(daemon, "EINSORA_TLS_KEY", key);
    einsora_test_daemon_start(daemon);
    g_assert_true(g_str_has_prefix(daemon->uri, "https://"));
    /* No server certificate of its own: only the CA that signs agents'
     * client certificates (docs/adr/0056). */
    {
        g_autofree gchar *own_cert = g_build_filename(own, "server.pem", NULL);
        g_autofree gchar *own_ca = g_build_filename(own, "ca.pem", NULL);
        g_assert_false(g_file_test(own_cert, G_FILE_TEST_EXISTS));
        g_assert_true(g_file_test(own_ca, G_FILE_TEST_EXISTS));
    }
    presented = presented_fingerprint(port_of(daemon));
    g_assert_cmpstr(presented, ==, first);
    info = run_info(daemon, info_args);
    g_assert_nonnull(strstr(info, first));

    copy_identity(second_dir, cert, key);
    g_subprocess_send_signal(daemon->process, SIGHUP);
    wait_for_log(daemon, "reloaded, fingerprint", 1);
    g_clear_pointer(&presented, g_free);
    presented = presented_fingerprint(port_of(daemon));
    g_assert_cmpstr(presented, ==, second);
    g_assert_cmpuint(get_pinned(daemon, "/healthz", NULL, second), ==, 200);

    g_assert_true(g_file_set_contents(key, "not a key\n", -1, &error));
    g_subprocess_send_signal(daemon->process, SIGHUP);
    wait_for_log(daemon, "the TLS certificate stays as it was", 1);
    g_clear_pointer(&presented, g_free);
    presented = presented_fingerprint(port_of(daemon));
    g_assert_cmpstr(presented, ==, second);
    einsora_test_daemon_stop(daemon);
}

/* The daemon with @env (name, value pairs) and @args: its exit status,
 * its standard error in *@err. */
static gint
run_daemon_briefly(EinsoraTestDaemon *daemon, const char *const *env, const char *listen,
                   gchar **err)
{
    g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
        G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;

    g_subprocess_launcher_setenv(launcher, "EINSORA_DRIVERS", "", TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_ACCESS_ADDR", "127.0.0.1:0", TRUE);
    for (guint i = 0; env[i] != NULL; i += 2)
        g_subprocess_launcher_setenv(launcher, env[i], env[i + 1], TRUE);
    process = g_subprocess_launcher_spawn(launcher, &error, einsora_test_daemon_path(),
                                          "--data-dir", daemon->data_dir, "--listen", listen, NULL);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, NULL, err, &error));
    g_assert_no_error(error);
    g_assert_true(g_subprocess_get_if_exited(process));
    return g_subprocess_get_exit_status(process);
}

/* Settings that must stop the daemon before anything starts, each with a
 * message naming the setting; and nothing made in the data directory. */
static void
test_settings_refused(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autofree gchar *own = g_build_filename(daemon->data_dir, "tls", NULL);
    g_autofree gchar *cert = g_build_filename(daemon->dir, "x.pem", NULL);
    const struct {
        const char *env[7];
        const char *says;
    } cases[] = {
        {{"EINSORA_TLS", "sometimes", NULL}, "EINSORA_TLS (--tls): \"sometimes\" is none of"},
        {{"EINSORA_TLS_CERT", cert, NULL}, "give both or neither"},
        {{"EINSORA_TLS", "plain-behind-tls-proxy", "EINSORA_TLS_CERT", cert, "EINSORA_TLS_KEY",
          cert, NULL},
         "choose one"},
        {{"EINSORA_TLS", "on", "EINSORA_TLS_CERT", cert, "EINSORA_TLS_KEY", cert, NULL}, "TLS: "},
    };

    g_assert_true(g_file_set_contents(cert, "not a certificate\n", -1, NULL));
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *err = NULL;
        gint status = run_daemon_briefly(daemon, cases[i].env, "127.0.0.1:0", &err);

        g_test_message("case %u: %s", i, err);
        g_assert_cmpint(status, !=, 0);
        g_assert_nonnull(strstr(err, cases[i].says));
    }
    g_assert_false(g_file_test(own, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(daemon->data_dir, G_FILE_TEST_EXISTS));
}

/* Off loopback, auto means TLS; plain HTTP there only when asked for by
 * name, and then the log says what that means. */
static void
test_off_loopback(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autofree gchar *log = NULL;

    daemon->listen = g_strdup("0.0.0.0:0");
    einsora_test_daemon_start(daemon);
    g_assert_true(g_str_has_prefix(daemon->uri, "https://0.0.0.0:"));
    einsora_test_daemon_stop(daemon);
    /* Its first start told the operator what comes next. */
    log = einsora_test_daemon_read_log(daemon);
    g_assert_nonnull(strstr(log, "first start of a Lab server"));
    g_assert_nonnull(strstr(log, "einsora login <https://this-host:port> --fingerprint SHA256:"));
    g_assert_nonnull(strstr(log, "account create --tenant TEAM"));
    g_clear_pointer(&log, g_free);

    einsora_test_daemon_setenv(daemon, "EINSORA_TLS", "plain-behind-tls-proxy");
    einsora_test_daemon_start(daemon);
    g_assert_true(g_str_has_prefix(daemon->uri, "http://0.0.0.0:"));
    einsora_test_daemon_stop(daemon);
    log = einsora_test_daemon_read_log(daemon);
    g_assert_nonnull(strstr(log, "for a proxy in front that ends TLS; without one"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here: install glib-networking");
        return g_test_run();
    }
    g_test_add_func("/tls/listener/own-certificate", test_own_certificate);
    g_test_add_func("/tls/listener/plain-http-told", test_plain_http_told);
    g_test_add_func("/tls/listener/handshake-deadline", test_handshake_deadline);
    g_test_add_func("/tls/listener/edge-rules", test_edge_rules_over_tls);
    g_test_add_func("/tls/listener/descriptors-given-back", test_descriptors_given_back);
    g_test_add_func("/tls/listener/stalled-handshakes-capped", test_stalled_handshakes_capped);
    g_test_add_func("/tls/listener/given-files-reloaded", test_given_files_reloaded);
    g_test_add_func("/tls/listener/settings-refused", test_settings_refused);
    g_test_add_func("/tls/listener/off-loopback", test_off_loopback);
    return g_test_run();
}
