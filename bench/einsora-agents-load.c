/* Simulated networked agents for bench/agents-bench.py (issue 20): enrols
 * machines with the real API, then holds one mutual-TLS connection per
 * agent, each long-polling POST /agent/v1/sync as einsora-daemon agent
 * does. Everything runs on one main loop over raw GIO TLS connections
 * with HTTP/1.1 written by hand: a libsoup session per agent would cost
 * the load generator more than the daemon it measures.
 *
 * At each of --steps: enrol and connect up to N agents, then over
 * --window seconds the daemon's CPU and the syncs it answered (every
 * agent re-polls when its long poll ends), its VmRSS; then create one
 * workload per new machine (each offers one CPU, so the controller's next
 * pass places one on each) and time each agent's answer from its
 * workload's placement event in the store. With --peer-port, the same
 * numbers of idle TLS keep-alive connections are held open to another
 * server (nginx) and its RSS read. One JSON object a line on stdout,
 * progress on stderr. Talks to 127.0.0.1 only, from 127.0.0.2 and up as
 * source addresses so that the daemon's handshake ration (two at once
 * per peer address) doesn't serialise the ramp. */
#include <errno.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "einsora-tls-identity.h"

#define READ_CHUNK 8192
#define WORKLOAD_CLASS "bench-1c-64m"
#define INVENTORY                                                                                  \
    "{\"os\":\"linux\",\"arch\":\"x86_64\",\"cpus\":1,\"memory_mib\":128,\"gpus\":[],"             \
    "\"drivers\":[\"sim\"]}"

typedef struct _Conn Conn;
typedef void (*ConnAnswer)(Conn *conn, guint status, const char *body, gsize length, gpointer data);

struct _Conn {
    GTlsCertificate *certificate; /* NULL: none sent */
    guint source;                 /* which loopback source address */
    GSocketConnection *tcp;
    GIOStream *tls;
    gboolean handshaking;
    gboolean close_after; /* the answer said Connection: close */
    gchar *request;
    gsize request_length;
    GByteArray *in;
    guint8 *chunk;
    ConnAnswer answer;
    gpointer data;
};

typedef struct {
    Conn conn;
    gchar *machine_id;
    gint64 generation;
    gint64 changed_us;      /* wall clock of the last answer with a new generation */
    gint64 sent_us;         /* wall clock of the sync now out */
    gint64 changed_sent_us; /* of the sync that the last new generation answered */
    gboolean first_answered;
    gboolean held; /* a long poll is out */
    Conn tunnel;   /* with --tunnels: its idle stream, as the real agent holds */
} Agent;

static struct {
    guint16 port;
    guint16 peer_port;
    GPid daemon_pid;
    GPid *peer_pids;
    guint peer_pid_count;
    const char *db_path;
    gchar *owner_token;
    guint sources;
    guint max_handshakes;
    guint window_s;
    gint64 deadline_us; /* monotonic: no step ramps past it */
    GSocketClient **clients;
    GQueue waiting; /* Conns waiting for their handshake */
    guint handshakes;
    GPtrArray *agents;
    guint agents_target;
    guint enrolling; /* enrolments out */
    guint64 syncs_answered;
    guint64 sync_errors;
    guint64 other_errors;
    guint agents_up; /* got their first answer */
    gboolean tunnels;
    guint tunnels_up; /* answered 101 */
    GPtrArray *peers;
    guint peers_up;
    guint workloads_made;
    guint workloads_answered;
    gint64 created_last_us; /* wall clock of the last creation's answer */
    guint workloads_wanted;
    gboolean timer_fired;
} load;

static void conn_start(Conn *conn);
static gboolean spin_until(gboolean (*done)(void), double seconds);

static void say(const char *format, ...) G_GNUC_PRINTF(1, 2);
static void
say(const char *format, ...)
{
    va_list args;
    g_autofree gchar *text = NULL;

    va_start(args, format);
    text = g_strdup_vprintf(format, args);
    va_end(args);
    fprintf(stderr, "agents-load: %s\n", text);
}

/* ---- one HTTP/1.1 client connection over TLS ------------------------- */

static void
conn_reset(Conn *conn)
{
    if (conn->tls != NULL)
        g_io_stream_close(conn->tls, NULL, NULL);
    g_clear_object(&conn->tls);
    g_clear_object(&conn->tcp);
    g_byte_array_set_size(conn->in, 0);
    conn->close_after = FALSE;
}

static void
conn_init(Conn *conn, GTlsCertificate *certificate, guint source)
{
    conn->certificate = certificate != NULL ? g_object_ref(certificate) : NULL;
    conn->source = source;
    conn->in = g_byte_array_new();
    conn->chunk = g_malloc(READ_CHUNK);
}

static void
conn_fail(Conn *conn, const GError *error)
{
    ConnAnswer answer = conn->answer;

    if (error != NULL && g_getenv("AGENTS_LOAD_DEBUG") != NULL)
        say("connection error: %s", error->message);
    conn_reset(conn);
    g_clear_pointer(&conn->request, g_free);
    conn->answer = NULL;
    if (answer != NULL)
        answer(conn, 0, NULL, 0, conn->data);
}

static void handshake_next(void);

static void on_read(GObject *source, GAsyncResult *result, gpointer user_data);

static void
conn_read(Conn *conn)
{
    g_input_stream_read_async(g_io_stream_get_input_stream(conn->tls), conn->chunk, READ_CHUNK,
                              G_PRIORITY_DEFAULT, NULL, on_read, conn);
}

/* A whole answer in conn->in: its status, and where its body is. */
static gboolean
parse_answer(Conn *conn, guint *status, gsize *body_at, gsize *body_length)
{
    const char *data = (const char *)conn->in->data;
    const char *end = g_strstr_len(data, conn->in->len, "\r\n\r\n");
    g_autofree gchar *head = NULL;
    const char *length;

    if (end == NULL)
        return FALSE;
    head = g_ascii_strdown(data, end - data);
    *status = (guint)g_ascii_strtoull(head + strlen("http/1.1 "), NULL, 10);
    length = strstr(head, "\ncontent-length:");
    *body_length = length != NULL ? g_ascii_strtoull(length + 16, NULL, 10) : 0;
    conn->close_after = strstr(head, "\nconnection: close") != NULL;
    *body_at = (gsize)(end - data) + 4;
    return conn->in->len >= *body_at + *body_length;
}

static void
on_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Conn *conn = user_data;
    g_autoptr(GError) error = NULL;
    gssize got = g_input_stream_read_finish(G_INPUT_STREAM(source), result, &error);
    guint status = 0;
    gsize body_at = 0, body_length = 0;
    ConnAnswer answer;
    g_autofree gchar *body = NULL;

    if (got <= 0) {
        if (error == NULL)
            error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, "closed");
        conn_fail(conn, error);
        return;
    }
    g_byte_array_append(conn->in, conn->chunk, (guint)got);
    if (!parse_answer(conn, &status, &body_at, &body_length)) {
        conn_read(conn);
        return;
    }
    body = g_strndup((const char *)conn->in->data + body_at, body_length);
    g_byte_array_remove_range(conn->in, 0, (guint)(body_at + body_length));
    answer = conn->answer;
    conn->answer = NULL;
    g_clear_pointer(&conn->request, g_free);
    if (conn->close_after)
        conn_reset(conn);
    answer(conn, status, body, body_length, conn->data);
}

static void
on_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Conn *conn = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, &error)) {
        conn_fail(conn, error);
        return;
    }
    conn_read(conn);
}

static void
conn_write(Conn *conn)
{
    g_output_stream_write_all_async(g_io_stream_get_output_stream(conn->tls), conn->request,
                                    conn->request_length, G_PRIORITY_DEFAULT, NULL, on_written,
                                    conn);
}

static gboolean
on_accept_certificate(GTlsConnection *tls, GTlsCertificate *certificate,
                      GTlsCertificateFlags errors, gpointer user_data)
{
    return TRUE; /* 127.0.0.1 only: nothing to pin against */
}

static void
on_handshake(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Conn *conn = user_data;
    g_autoptr(GError) error = NULL;

    load.handshakes--;
    conn->handshaking = FALSE;
    handshake_next();
    if (!g_tls_connection_handshake_finish(G_TLS_CONNECTION(source), result, &error)) {
        conn_fail(conn, error);
        return;
    }
    conn_write(conn);
}

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Conn *conn = user_data;
    g_autoptr(GError) error = NULL;

    conn->tcp = g_socket_client_connect_finish(G_SOCKET_CLIENT(source), result, &error);
    if (conn->tcp != NULL)
        conn->tls = g_tls_client_connection_new(G_IO_STREAM(conn->tcp), NULL, &error);
    if (conn->tls == NULL) {
        load.handshakes--;
        conn->handshaking = FALSE;
        handshake_next();
        conn_fail(conn, error);
        return;
    }
    g_tls_connection_set_database(G_TLS_CONNECTION(conn->tls), NULL);
    if (conn->certificate != NULL)
        g_tls_connection_set_certificate(G_TLS_CONNECTION(conn->tls), conn->certificate);
    g_signal_connect(conn->tls, "accept-certificate", G_CALLBACK(on_accept_certificate), NULL);
    g_tls_connection_handshake_async(G_TLS_CONNECTION(conn->tls), G_PRIORITY_DEFAULT, NULL,
                                     on_handshake, conn);
}

static void
conn_start(Conn *conn)
{
    g_autoptr(GSocketAddress) address = g_inet_socket_address_new_from_string(
        "127.0.0.1", conn->source == G_MAXUINT ? load.peer_port : load.port);

    load.handshakes++;
    conn->handshaking = TRUE;
    g_socket_client_connect_async(load.clients[conn->source == G_MAXUINT ? 0 : conn->source],
                                  G_SOCKET_CONNECTABLE(address), NULL, on_connected, conn);
}

static void
handshake_next(void)
{
    while (load.handshakes < load.max_handshakes && !g_queue_is_empty(&load.waiting))
        conn_start(g_queue_pop_head(&load.waiting));
}

/* Sends @request (taken) and calls @answer with the answer, or with
 * status 0 if the connection failed. */
static void
conn_send(Conn *conn, gchar *request, ConnAnswer answer, gpointer data)
{
    g_free(conn->request);
    conn->request = request;
    conn->request_length = strlen(request);
    conn->answer = answer;
    conn->data = data;
    if (conn->tls != NULL) {
        conn_write(conn);
        return;
    }
    g_queue_push_tail(&load.waiting, conn);
    handshake_next();
}

static gchar *
http_request(const char *method, const char *path, const char *bearer, const char *body)
{
    return g_strdup_printf("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s%s%s"
                           "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                           method, path, load.port, bearer != NULL ? "Authorization: Bearer " : "",
                           bearer != NULL ? bearer : "", bearer != NULL ? "\r\n" : "",
                           body != NULL ? strlen(body) : 0, body != NULL ? body : "");
}

/* ---- agents ------------------------------------------------------------ */

static void agent_sync(Agent *agent);
static void agent_open_tunnel(Agent *agent);

static void
on_sync_answer(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    Agent *agent = data;
    const char *at;

    agent->held = FALSE;
    if (status != 200) {
        load.sync_errors++;
        if (status != 0)
            say("sync of %s answered %u: %.200s", agent->machine_id, status, body);
        /* Again, a second later: as the real agent backs off. */
        g_timeout_add_once(1000, (GSourceOnceFunc)agent_sync, agent);
        return;
    }
    load.syncs_answered++;
    at = body != NULL ? strstr(body, "\"generation\"") : NULL;
    if (at != NULL) {
        gint64 generation;
        at = strchr(at, ':');
        generation = at != NULL ? g_ascii_strtoll(at + 1, NULL, 10) : 0;
        if (generation != agent->generation) {
            agent->generation = generation;
            agent->changed_us = g_get_real_time();
            agent->changed_sent_us = agent->sent_us;
        }
    }
    if (!agent->first_answered) {
        agent->first_answered = TRUE;
        load.agents_up++;
        if (load.tunnels)
            agent_open_tunnel(agent);
    }
    agent_sync(agent);
}

static void
on_tunnel_answer(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    Agent *agent = data;

    if (status == 101) {
        load.tunnels_up++;
        return;
    }
    load.other_errors++;
    say("the tunnel of %s answered %u: %.200s", agent->machine_id, status, body);
}

/* The stream einsora-daemon agent holds for the access proxy (docs/adr/0059):
 * switched, then idle. */
static void
agent_open_tunnel(Agent *agent)
{
    conn_init(&agent->tunnel, agent->conn.certificate, agent->conn.source);
    conn_send(&agent->tunnel,
              g_strdup_printf("GET /agent/v1/tunnel HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                              "Connection: Upgrade\r\nUpgrade: einsora-tunnel/1\r\n\r\n",
                              load.port),
              on_tunnel_answer, agent);
}

static void
agent_sync(Agent *agent)
{
    g_autofree gchar *body = g_strdup_printf(
        "{\"machine_id\":\"%s\",\"applied_generation\":%" G_GINT64_FORMAT ",\"statuses\":[]%s%s}",
        agent->machine_id, agent->generation,
        agent->first_answered ? "" : ",\"inventory\":", agent->first_answered ? "" : INVENTORY);

    agent->held = TRUE;
    agent->sent_us = g_get_real_time();
    conn_send(&agent->conn, http_request("POST", "/agent/v1/sync", NULL, body), on_sync_answer,
              agent);
}

/* ---- enrolment -------------------------------------------------------- */

typedef struct {
    Conn conn;
    gchar *key_pem;
} Enroller;

static void enroll_next(Enroller *enroller);

static JsonObject *
parse_object(const char *body)
{
    g_autoptr(JsonParser) parser = json_parser_new();

    if (body == NULL || !json_parser_load_from_data(parser, body, -1, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)))
        return NULL;
    return json_object_ref(json_node_get_object(json_parser_get_root(parser)));
}

static void
on_enrolled(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    Enroller *enroller = data;
    g_autoptr(JsonObject) answer = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *pem = NULL;
    GTlsCertificate *certificate;
    Agent *agent;

    load.enrolling--;
    answer = status == 201 ? parse_object(body) : NULL;
    if (answer == NULL) {
        load.other_errors++;
        say("POST /agent/v1/enroll answered %u: %.200s", status, body != NULL ? body : "");
        enroll_next(enroller);
        return;
    }
    pem = g_strconcat(json_object_get_string_member(answer, "certificate"), "\n", enroller->key_pem,
                      NULL);
    certificate = g_tls_certificate_new_from_pem(pem, -1, &error);
    g_assert_no_error(error);
    agent = g_new0(Agent, 1);
    conn_init(&agent->conn, certificate, load.agents->len % load.sources);
    g_object_unref(certificate);
    agent->machine_id = g_strdup(json_object_get_string_member(answer, "machine_id"));
    g_ptr_array_add(load.agents, agent);
    agent_sync(agent);
    enroll_next(enroller);
}

static void
on_enrolment(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    Enroller *enroller = data;
    g_autoptr(JsonObject) answer = status == 201 ? parse_object(body) : NULL;
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) root = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *csr = NULL;
    g_autofree gchar *text = NULL;

    if (answer == NULL) {
        load.enrolling--;
        load.other_errors++;
        say("POST /v1/machines/enrolments answered %u: %.200s", status, body != NULL ? body : "");
        enroll_next(enroller);
        return;
    }
    g_clear_pointer(&enroller->key_pem, g_free);
    if (!einsora_tls_agent_request_new(&enroller->key_pem, &csr, &error))
        g_error("key and request: %s", error->message);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "token");
    json_builder_add_string_value(builder, json_object_get_string_member(answer, "token"));
    json_builder_set_member_name(builder, "csr");
    json_builder_add_string_value(builder, csr);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    text = json_to_string(root, FALSE);
    conn_send(conn, http_request("POST", "/agent/v1/enroll", NULL, text), on_enrolled, enroller);
}

static void
enroll_next(Enroller *enroller)
{
    if (load.agents->len + load.enrolling >= load.agents_target || load.other_errors > 100)
        return;
    load.enrolling++;
    conn_send(&enroller->conn,
              http_request("POST", "/v1/machines/enrolments", load.owner_token, "{}"), on_enrolment,
              enroller);
}

/* ---- workloads, to wake machines --------------------------------------- */

static void create_next(Conn *conn);

static void
on_created(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    load.workloads_answered++;
    load.created_last_us = g_get_real_time();
    if (status != 201) {
        load.other_errors++;
        say("POST /v1/workloads answered %u: %.200s", status, body != NULL ? body : "");
    }
    create_next(conn);
}

static void
create_next(Conn *conn)
{
    if (load.workloads_made >= load.workloads_wanted || load.other_errors > 100)
        return;
    load.workloads_made++;
    conn_send(conn,
              http_request("POST", "/v1/workloads", load.owner_token,
                           "{\"kind\":\"notebook\",\"gpu_class\":\"" WORKLOAD_CLASS
                           "\",\"image\":\"jupyter-notebook\"}"),
              on_created, NULL);
}

/* ---- the hub's own count of how it answered syncs ------------------------ */

static gchar *metrics_text;

static void
on_metrics(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    g_autoptr(GString) lines = g_string_new(NULL);
    g_auto(GStrv) all = g_strsplit(body != NULL ? body : "", "\n", -1);

    for (guint i = 0; all[i] != NULL; i++)
        if (g_str_has_prefix(all[i], "einsora_hub_syncs_answered_total{"))
            g_string_append_printf(lines, "%s%s", lines->len ? ", " : "",
                                   all[i] + strlen("einsora_hub_syncs_answered_total"));
    g_free(metrics_text);
    metrics_text = g_string_free(g_steal_pointer(&lines), FALSE);
}

static gboolean
metrics_read(void)
{
    return metrics_text != NULL;
}

/* The hub's answers by kind, as /metrics counts them. */
static gchar *
hub_answers(Conn *conn)
{
    g_clear_pointer(&metrics_text, g_free);
    conn_send(conn, http_request("GET", "/metrics", load.owner_token, NULL), on_metrics, NULL);
    spin_until(metrics_read, 30);
    return g_steal_pointer(&metrics_text);
}

/* ---- the peer: idle keep-alive TLS connections ------------------------- */

static void
on_peer_answer(Conn *conn, guint status, const char *body, gsize length, gpointer data)
{
    if (status == 0) {
        load.other_errors++;
        return;
    }
    load.peers_up++;
}

/* ---- measuring ------------------------------------------------------- */

static gint64
cpu_ticks(GPid pid)
{
    g_autofree gchar *path = g_strdup_printf("/proc/%d/stat", pid);
    g_autofree gchar *text = NULL;
    g_auto(GStrv) fields = NULL;
    const char *after;

    if (!g_file_get_contents(path, &text, NULL, NULL) || (after = strrchr(text, ')')) == NULL)
        return -1;
    fields = g_strsplit(after + 2, " ", -1);
    /* After the name: state is field 0, utime 11, stime 12. */
    return g_ascii_strtoll(fields[11], NULL, 10) + g_ascii_strtoll(fields[12], NULL, 10);
}

static gint64
rss_kib(GPid pid)
{
    g_autofree gchar *path = g_strdup_printf("/proc/%d/status", pid);
    g_autofree gchar *text = NULL;
    const char *at;

    if (!g_file_get_contents(path, &text, NULL, NULL) || (at = strstr(text, "\nVmRSS:")) == NULL)
        return -1;
    return g_ascii_strtoll(at + strlen("\nVmRSS:"), NULL, 10);
}

static void
on_timer(gpointer data)
{
    load.timer_fired = TRUE;
}

/* Runs the loop for @seconds. */
static void
spin_for(double seconds)
{
    load.timer_fired = FALSE;
    g_timeout_add_once((guint)(seconds * 1000), on_timer, NULL);
    while (!load.timer_fired)
        g_main_context_iteration(NULL, TRUE);
}

static gboolean
keep_going(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

/* Runs the loop until @done says so or @seconds pass; whether it did. */
static gboolean
spin_until(gboolean (*done)(void), double seconds)
{
    gint64 until = g_get_monotonic_time() + (gint64)(seconds * G_USEC_PER_SEC);
    guint tick = g_timeout_add(50, keep_going, NULL);

    while (!done() && g_get_monotonic_time() < until)
        g_main_context_iteration(NULL, TRUE);
    g_source_remove(tick);
    return done();
}

static gboolean
all_up(void)
{
    return (load.agents_up >= load.agents_target &&
            (!load.tunnels || load.tunnels_up >= load.agents_target)) ||
           load.other_errors > 100;
}

static gboolean
enrolments_done(void)
{
    return load.enrolling == 0;
}

static gboolean
held_all(void)
{
    return load.agents_up >= load.agents->len &&
           (!load.tunnels || load.tunnels_up >= load.agents->len);
}

static gboolean
peers_all_up(void)
{
    return load.peers_up >= load.peers->len;
}

static gboolean
workloads_all_made(void)
{
    return load.workloads_answered >= load.workloads_wanted || load.other_errors > 100;
}

static int
compare_doubles(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
percentile(GArray *values, double p)
{
    guint at;

    if (values->len == 0)
        return -1;
    at = (guint)MIN(values->len - 1, (guint)(p / 100 * (values->len - 1) + 0.5));
    return g_array_index(values, double, at);
}

/* Each woken machine's placement event (Unix µs), from the store. */
static GHashTable *
placements(void)
{
    g_autoptr(GHashTable) placed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    sqlite3 *db = NULL;
    sqlite3_stmt *statement = NULL;

    if (sqlite3_open_v2(load.db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        g_error("can't open %s: %s", load.db_path, sqlite3_errmsg(db));
    sqlite3_busy_timeout(db, 15000);
    if (sqlite3_prepare_v2(db,
                           "SELECT w.machine_id, min(e.created_at) FROM workload_events e "
                           "JOIN workloads w ON w.id = e.workload_id "
                           "WHERE e.to_state = 'provisioning' AND w.machine_id IS NOT NULL "
                           "GROUP BY w.machine_id",
                           -1, &statement, NULL) != SQLITE_OK)
        g_error("can't read %s: %s", load.db_path, sqlite3_errmsg(db));
    while (sqlite3_step(statement) == SQLITE_ROW) {
        g_autoptr(GDateTime) at =
            g_date_time_new_from_iso8601((const char *)sqlite3_column_text(statement, 1), NULL);
        gint64 *us = g_new(gint64, 1);

        *us = at != NULL
                  ? g_date_time_to_unix(at) * G_USEC_PER_SEC + g_date_time_get_microsecond(at)
                  : 0;
        g_hash_table_insert(placed, g_strdup((const char *)sqlite3_column_text(statement, 0)), us);
    }
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return g_steal_pointer(&placed);
}

static guint woken_wanted;
static gint64 woken_since_us;

static gboolean
woken_all(void)
{
    guint woken = 0;

    for (guint i = 0; i < load.agents->len; i++) {
        Agent *agent = g_ptr_array_index(load.agents, i);
        woken += agent->changed_us >= woken_since_us;
    }
    return woken >= woken_wanted;
}

static void
step(guint target, Conn *creators, guint creator_count, Enroller *enrollers, guint enroller_count)
{
    gint64 t0 = g_get_monotonic_time();
    gint64 ticks0, ticks1, w0, w1;
    guint64 syncs0, syncs1;
    gint64 rss, rss_after, rss_peer = -1;
    guint previous = load.agents->len;
    double enrol_s, tick = (double)sysconf(_SC_CLK_TCK);
    g_autoptr(GArray) latencies = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GHashTable) placed = NULL;
    gboolean up;
    g_autofree gchar *answers_before = NULL;
    g_autofree gchar *answers_after = NULL;
    guint late = 0, late_sent_after = 0;
    double late_after_create_min = G_MAXDOUBLE, late_after_create_max = -G_MAXDOUBLE;

    load.agents_target = target;
    /* Fresh connections: the daemon closes idle ones after a minute. */
    for (guint i = 0; i < creator_count; i++)
        conn_reset(&creators[i]);
    for (guint i = 0; i < enroller_count; i++)
        conn_reset(&enrollers[i].conn);
    for (guint i = 0; i < enroller_count; i++)
        enroll_next(&enrollers[i]);
    up = spin_until(all_up, MAX(1, (load.deadline_us - g_get_monotonic_time()) / 1e6));
    if (!up) {
        /* Out of time: the step measures the agents it has. */
        load.agents_target = load.agents->len;
        spin_until(enrolments_done, 20);
        spin_until(held_all, 20);
        target = load.agents_up;
    }
    enrol_s = (g_get_monotonic_time() - t0) / 1e6;
    say("%u agents enrolled and holding their long poll after %.1f s%s", load.agents_up, enrol_s,
        up ? "" : " (not all: gave up)");
    spin_for(2);

    /* Idle: every agent holds a long poll; each ends after 20 s and is
     * sent again. */
    syncs0 = load.syncs_answered;
    ticks0 = cpu_ticks(load.daemon_pid);
    w0 = g_get_monotonic_time();
    spin_for(load.window_s);
    ticks1 = cpu_ticks(load.daemon_pid);
    w1 = g_get_monotonic_time();
    syncs1 = load.syncs_answered;
    rss = rss_kib(load.daemon_pid);

    /* The peer holds as many idle TLS connections (two an agent with
     * --tunnels: its sync's and its stream's). */
    if (load.peer_port != 0) {
        while (load.peers->len < target * (load.tunnels ? 2 : 1)) {
            Conn *conn = g_new0(Conn, 1);
            conn_init(conn, NULL, G_MAXUINT);
            g_ptr_array_add(load.peers, conn);
            conn_send(
                conn,
                g_strdup_printf("GET / HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", load.peer_port),
                on_peer_answer, NULL);
        }
        spin_until(peers_all_up, 300);
        spin_for(1);
        rss_peer = 0;
        for (guint i = 0; i < load.peer_pid_count; i++)
            rss_peer += MAX(0, rss_kib(load.peer_pids[i]));
    }

    answers_before = hub_answers(&creators[0]);
    /* Wake the new machines at once: a workload for each, placed by the
     * controller's next pass. */
    woken_since_us = g_get_real_time();
    woken_wanted = target - previous;
    load.workloads_wanted += woken_wanted;
    for (guint i = 0; i < creator_count; i++)
        create_next(&creators[i]);
    spin_until(workloads_all_made, 300);
    if (!spin_until(woken_all, 25))
        say("not every machine woke within 25 s of its workloads' creation");
    spin_for(1);
    rss_after = rss_kib(load.daemon_pid);
    answers_after = hub_answers(&creators[0]);
    say("the hub's answers before the wake: %s", answers_before);
    say("and after it: %s", answers_after);
    placed = placements();
    for (guint i = 0; i < load.agents->len; i++) {
        Agent *agent = g_ptr_array_index(load.agents, i);
        gint64 *at = g_hash_table_lookup(placed, agent->machine_id);
        double ms;

        if (agent->changed_us < woken_since_us || at == NULL)
            continue;
        ms = (agent->changed_us - *at) / 1000.0;
        if (ms > 1000) {
            late++;
            late_sent_after += agent->changed_sent_us > *at;
            late_after_create_min =
                MIN(late_after_create_min, (agent->changed_us - load.created_last_us) / 1000.0);
            late_after_create_max =
                MAX(late_after_create_max, (agent->changed_us - load.created_last_us) / 1000.0);
        }
        g_array_append_val(latencies, ms);
    }
    g_array_sort(latencies, compare_doubles);
    say("%u agents: %u woken, p50 %.1f ms, p99 %.1f ms; %u answered more than 1 s after "
        "placement, %u of them to a sync sent after it; they came %.0f to %.0f ms after the "
        "last workload was created",
        target, latencies->len, percentile(latencies, 50), percentile(latencies, 99), late,
        late_sent_after, late ? late_after_create_min : 0, late ? late_after_create_max : 0);
    printf("{\"agents\":%u,\"up\":%u,\"ramp_s\":%.1f,\"rss_kib\":%" G_GINT64_FORMAT
           ",\"rss_after_wake_kib\":%" G_GINT64_FORMAT ",\"peer_rss_kib\":%" G_GINT64_FORMAT
           ",\"cpu_s\":%.3f,\"window_s\":%.3f,\"syncs\":%" G_GUINT64_FORMAT
           ",\"woken\":%u,\"late\":%u,\"late_sent_after\":%u,\"wake_p50_ms\":%.2f,\"wake_p99_ms\":%"
           ".2f,\"wake_max_ms\":%.2f,"
           "\"sync_errors\":%" G_GUINT64_FORMAT ",\"other_errors\":%" G_GUINT64_FORMAT
           ",\"tunnels\":%u}\n",
           target, load.agents_up, enrol_s, rss, rss_after, rss_peer, (ticks1 - ticks0) / tick,
           (w1 - w0) / 1e6, syncs1 - syncs0, latencies->len, late, late_sent_after,
           percentile(latencies, 50), percentile(latencies, 99), percentile(latencies, 100),
           load.sync_errors, load.other_errors, load.tunnels_up);
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    gint port = 0, peer_port = 0, daemon_pid = 0;
    gint sources = 32, handshakes = 12, window_s = 20, enrollers_n = 4, budget_s = 0;
    g_autofree gchar *token_file = NULL;
    g_autofree gchar *steps_text = NULL;
    g_autofree gchar *peer_pids_text = NULL;
    g_autofree gchar *db_path = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GOptionContext) context = g_option_context_new("- simulated Einsora agents");
    GOptionEntry entries[] = {
        {"port", 0, 0, G_OPTION_ARG_INT, &port, "The daemon's API port on 127.0.0.1", "PORT"},
        {"token-file", 0, 0, G_OPTION_ARG_FILENAME, &token_file, "The owner's token", "FILE"},
        {"db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "The daemon's einsora.db", "FILE"},
        {"daemon-pid", 0, 0, G_OPTION_ARG_INT, &daemon_pid, "The daemon's process", "PID"},
        {"steps", 0, 0, G_OPTION_ARG_STRING, &steps_text, "Agents at each step", "N,N,..."},
        {"ramp-until", 0, 0, G_OPTION_ARG_INT, &budget_s,
         "Seconds from start after which no step ramps further (none)", "S"},
        {"window", 0, 0, G_OPTION_ARG_INT, &window_s, "Idle window, seconds (20)", "S"},
        {"sources", 0, 0, G_OPTION_ARG_INT, &sources, "Source addresses 127.0.0.2+ (32)", "N"},
        {"handshakes", 0, 0, G_OPTION_ARG_INT, &handshakes, "Handshakes at once (12)", "N"},
        {"peer-port", 0, 0, G_OPTION_ARG_INT, &peer_port, "The peer's TLS port", "PORT"},
        {"tunnels", 0, 0, G_OPTION_ARG_NONE, &load.tunnels,
         "Each agent also holds its idle tunnel stream, as einsora-daemon agent does", NULL},
        {"peer-pids", 0, 0, G_OPTION_ARG_STRING, &peer_pids_text, "The peer's processes",
         "PID,..."},
        {NULL},
    };
    g_auto(GStrv) steps = NULL;
    Conn creators[4] = {0};
    Enroller *enrollers;

    g_option_context_add_main_entries(context, entries, NULL);
    if (!g_option_context_parse(context, &argc, &argv, &error)) {
        g_printerr("%s\n", error->message);
        return 2;
    }
    if (port <= 0 || token_file == NULL || db_path == NULL || daemon_pid <= 0 ||
        steps_text == NULL || sources < 1 || sources > 250 || handshakes < 1) {
        g_printerr("give --port, --token-file, --db, --daemon-pid and --steps\n");
        return 2;
    }
    if (!g_file_get_contents(token_file, &load.owner_token, NULL, &error)) {
        g_printerr("%s\n", error->message);
        return 1;
    }
    g_strstrip(load.owner_token);
    load.port = (guint16)port;
    load.peer_port = (guint16)peer_port;
    load.daemon_pid = daemon_pid;
    load.db_path = db_path;
    load.sources = (guint)sources;
    load.max_handshakes = (guint)handshakes;
    load.window_s = (guint)window_s;
    load.deadline_us =
        g_get_monotonic_time() + (budget_s > 0 ? budget_s : 24 * 3600) * (gint64)G_USEC_PER_SEC;
    load.agents = g_ptr_array_new();
    load.peers = g_ptr_array_new();
    g_queue_init(&load.waiting);
    if (peer_pids_text != NULL) {
        g_auto(GStrv) pids = g_strsplit(peer_pids_text, ",", -1);
        load.peer_pid_count = g_strv_length(pids);
        load.peer_pids = g_new0(GPid, load.peer_pid_count);
        for (guint i = 0; i < load.peer_pid_count; i++)
            load.peer_pids[i] = (GPid)g_ascii_strtoll(pids[i], NULL, 10);
    }
    load.clients = g_new0(GSocketClient *, load.sources);
    for (guint i = 0; i < load.sources; i++) {
        g_autofree gchar *address = g_strdup_printf("127.0.0.%u", i + 2);
        g_autoptr(GSocketAddress) local = g_inet_socket_address_new_from_string(address, 0);
        load.clients[i] = g_socket_client_new();
        g_socket_client_set_local_address(load.clients[i], local);
        g_socket_client_set_timeout(load.clients[i], 0);
    }
    for (guint i = 0; i < G_N_ELEMENTS(creators); i++)
        conn_init(&creators[i], NULL, i % load.sources);
    enrollers = g_new0(Enroller, enrollers_n);
    for (gint i = 0; i < enrollers_n; i++)
        conn_init(&enrollers[i].conn, NULL, (guint)i % load.sources);

    steps = g_strsplit(steps_text, ",", -1);
    for (guint i = 0; steps[i] != NULL; i++) {
        guint target = (guint)g_ascii_strtoull(steps[i], NULL, 10);
        if (target <= load.agents->len)
            continue;
        if (g_get_monotonic_time() >= load.deadline_us) {
            say("out of time before the step to %u agents", target);
            break;
        }
        step(target, creators, G_N_ELEMENTS(creators), enrollers, (guint)enrollers_n);
        if (load.other_errors > 100) {
            say("more than 100 errors: stopping");
            return 1;
        }
    }
    return 0;
}
