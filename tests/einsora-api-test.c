/* The /v1 API against the real einsora-daemon on a free loopback port.
 * Tenant A is Solo's first-run owner; tenant B an account made with
 * `einsora-daemon account create`. Every secret used is collected, and the
 * last test checks that none of them is anywhere in the daemon's log. */

#include "einsora-test-daemon-sql.h"
#include "einsora-test-daemon.h"
#include "einsora-test-workload-rows.h"

#define JSON "application/json"
#define B_PASSWORD "correct horse battery staple 42"

static EinsoraTestDaemon *server_daemon;
static gchar *token_b;
static GPtrArray *secrets; /* every secret the tests used */

static void
remember_secret(const char *secret)
{
    g_assert_nonnull(secret);
    g_ptr_array_add(secrets, g_strdup(secret));
}

static EinsoraTestResponse *
call(const char *method, const char *path, const char *token, const char *body)
{
    return einsora_test_request(server_daemon, method, path, token, JSON, body, NULL);
}

static gchar *
create_workload(const char *token, const char *name)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\": \"notebook\", \"name\": \"%s\", "
                                             "\"gpu_class\": \"cpu-2c-4g\", "
                                             "\"image\": \"jupyter-notebook\"}",
                                             name);
    g_autoptr(EinsoraTestResponse) response = call("POST", "/v1/workloads", token, body);

    g_assert_cmpuint(response->status, ==, 201);
    return g_strdup(einsora_test_response_string(response, "id"));
}

static void
assert_error(EinsoraTestResponse *response, guint status, const char *code)
{
    JsonObject *error;

    if (response->status != status)
        g_test_message("body: %s", response->body);
    g_assert_cmpuint(response->status, ==, status);
    g_assert_cmpstr(einsora_test_response_error_code(response), ==, code);
    error = json_object_get_object_member(json_node_get_object(response->json), "error");
    g_assert_nonnull(json_object_get_string_member(error, "message"));
    /* The body's request ID is the header's. */
    g_assert_cmpstr(json_object_get_string_member(error, "request_id"), ==,
                    soup_message_headers_get_one(response->headers, "X-Request-ID"));
}

static void
test_health(void)
{
    g_autoptr(EinsoraTestResponse) live = call("GET", "/healthz", NULL, NULL);
    g_autoptr(EinsoraTestResponse) ready = call("GET", "/readyz", NULL, NULL);

    g_assert_cmpuint(live->status, ==, 200);
    g_assert_cmpuint(ready->status, ==, 200);
    g_assert_cmpstr(einsora_test_response_string(ready, "status"), ==, "ready");

    /* A schema the server_daemon doesn't know: not ready (503), then ready again. */
    einsora_test_daemon_exec_sql(server_daemon,
                                 "INSERT INTO schema_migrations VALUES (99, '00099_future', '"
                                 "0000000000000000000000000000000000000000000000000000000000000000"
                                 "', '2030-01-01T00:00:00.000000Z')");
    {
        g_autoptr(EinsoraTestResponse) not_ready = call("GET", "/readyz", NULL, NULL);
        g_assert_cmpuint(not_ready->status, ==, 503);
        g_assert_cmpstr(soup_message_headers_get_one(not_ready->headers, "Retry-After"), ==, "5");
    }
    einsora_test_daemon_exec_sql(server_daemon, "DELETE FROM schema_migrations WHERE version = 99");
    {
        g_autoptr(EinsoraTestResponse) again = call("GET", "/readyz", NULL, NULL);
        g_assert_cmpuint(again->status, ==, 200);
    }
}

static void
test_request_ids(void)
{
    const char *safe[] = {"X-Request-ID", "client-abc.123_X", NULL};
    const char *unsafe[] = {"X-Request-ID", "evil id\" injected=1", NULL};
    g_autoptr(EinsoraTestResponse) one = einsora_test_request(
        server_daemon, "GET", "/v1/workloads", server_daemon->owner_token, NULL, NULL, safe);
    g_autoptr(EinsoraTestResponse) two = einsora_test_request(
        server_daemon, "GET", "/v1/workloads", server_daemon->owner_token, NULL, NULL, unsafe);
    const char *id_one = soup_message_headers_get_one(one->headers, "X-Request-ID");
    const char *id_two = soup_message_headers_get_one(two->headers, "X-Request-ID");
    g_autofree gchar *log = NULL;

    /* Always the server's own ID, never the caller's. */
    g_assert_nonnull(id_one);
    g_assert_nonnull(id_two);
    g_assert_cmpstr(id_one, !=, "client-abc.123_X");
    g_assert_cmpstr(id_one, !=, id_two);
    log = einsora_test_daemon_read_log(server_daemon);
    g_assert_nonnull(strstr(log, "client_request_id=client-abc.123_X"));
    g_assert_null(strstr(log, "injected=1"));
    /* Every line of the request carries its ID, and the tenant once
     * authenticated. */
    {
        g_autofree gchar *needle = g_strdup_printf("request_id=%s tenant=", id_one);
        g_assert_nonnull(strstr(log, needle));
    }
}

static void
test_authentication(void)
{
    const char *basic[] = {"Authorization", "Basic b3duZXI6cGFzcw==", NULL};
    g_autoptr(EinsoraTestResponse) none = call("GET", "/v1/workloads", NULL, NULL);
    g_autoptr(EinsoraTestResponse) wrong = call("GET", "/v1/workloads", "tsk_nottherightone", NULL);
    g_autoptr(EinsoraTestResponse) scheme =
        einsora_test_request(server_daemon, "GET", "/v1/workloads", NULL, NULL, NULL, basic);
    g_autoptr(EinsoraTestResponse) me = call("GET", "/v1/me", server_daemon->owner_token, NULL);

    assert_error(none, 401, "unauthenticated");
    assert_error(wrong, 401, "unauthenticated");
    assert_error(scheme, 401, "unauthenticated");
    g_assert_cmpuint(me->status, ==, 200);
    g_assert_cmpstr(einsora_test_response_string(me, "subject"), ==, "owner@localhost");
}

/* An image no machine here can run: created all the same, with a warning
 * in the answer (the timeline's note is checked in the lifecycle). */
static void
test_create_warns_when_nothing_runs_it(void)
{
    g_autoptr(EinsoraTestResponse) response =
        call("POST", "/v1/workloads", server_daemon->owner_token,
             "{\"kind\": \"notebook\", \"name\": \"warned\", \"gpu_class\": \"cpu-2c-4g\", "
             "\"image\": \"jupyter-notebook\"}");

    g_assert_cmpuint(response->status, ==, 201);
    g_assert_cmpstr(einsora_test_response_string(response, "state"), ==, "pending");
    g_assert_cmpstr(einsora_test_response_string(response, "warning"), ==,
                    "no machine here can run image \"jupyter-notebook\" now (it runs on docker, "
                    "macos-native, macos-container): it waits until one can");
}

static void
test_workload_lifecycle(void)
{
    g_autofree gchar *id = create_workload(server_daemon->owner_token, "lifecycle");
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    g_autofree gchar *stop = g_strdup_printf("%s/stop", path);
    g_autofree gchar *start = g_strdup_printf("%s/start", path);
    g_autofree gchar *events = g_strdup_printf("%s/events", path);
    g_autofree gchar *export = g_strdup_printf("%s/export", path);
    g_autofree gchar *with_deleted = g_strdup_printf("%s?include_deleted=true", path);

    {
        g_autoptr(EinsoraTestResponse) got = call("GET", path, server_daemon->owner_token, NULL);
        g_assert_cmpuint(got->status, ==, 200);
        g_assert_cmpstr(einsora_test_response_string(got, "state"), ==, "pending");
        g_assert_cmpstr(einsora_test_response_string(got, "region"), ==, "local");
        g_assert_cmpstr(einsora_test_response_string(got, "name"), ==, "lifecycle");
    }
    {
        /* A pending workload can't be stopped; starting it again is a no-op. */
        g_autoptr(EinsoraTestResponse) stopped =
            call("POST", stop, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) started =
            call("POST", start, server_daemon->owner_token, NULL);
        assert_error(stopped, 409, "invalid_transition");
        g_assert_cmpuint(started->status, ==, 202);
        g_assert_cmpstr(einsora_test_response_string(started, "state"), ==, "pending");
    }
    {
        g_autoptr(EinsoraTestResponse) deleted =
            call("DELETE", path, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) list =
            call("GET", "/v1/workloads", server_daemon->owner_token, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
        g_assert_cmpstr(einsora_test_response_string(deleted, "state"), ==, "deleting");
        g_assert_nonnull(strstr(list->body, id));
    }
    {
        g_autoptr(EinsoraTestResponse) timeline =
            call("GET", events, server_daemon->owner_token, NULL);
        JsonArray *rows;
        g_assert_cmpuint(timeline->status, ==, 200);
        rows = json_object_get_array_member(json_node_get_object(timeline->json), "events");
        g_assert_cmpuint(json_array_get_length(rows), ==, 3);
        g_assert_true(g_str_has_prefix(
            json_object_get_string_member(json_array_get_object_element(rows, 0), "reason"),
            "created by owner@localhost (API token \"local\" (tsk_"));
        /* This daemon's machine has no driver: said plainly at create. */
        g_assert_cmpstr(
            json_object_get_string_member(json_array_get_object_element(rows, 1), "reason"), ==,
            "no machine here can run image \"jupyter-notebook\" now (it runs on docker, "
            "macos-native, macos-container): it waits until one can");
    }
    {
        g_autoptr(EinsoraTestResponse) exported =
            call("GET", export, server_daemon->owner_token, NULL);
        g_assert_cmpuint(exported->status, ==, 200);
        g_assert_nonnull(strstr(exported->body, "\"export_version\":1"));
        g_assert_nonnull(strstr(exported->body, "\"redactions\":[]"));
    }
    {
        g_autoptr(EinsoraTestResponse) still =
            call("GET", with_deleted, server_daemon->owner_token, NULL);
        g_assert_cmpuint(still->status, ==, 200);
    }
}

static void
test_bad_input(void)
{
    const struct {
        const char *method;
        const char *path;
        const char *content_type;
        const char *body;
        guint status;
        const char *code;
        const char *message;
    } table[] = {
        {"POST", "/v1/workloads", JSON,
         "{\"kind\":\"notebook\",\"gpu_class\":\"cpu-2c-4g\",\"image\":\"jupyter-notebook\","
         "\"colour\":\"red\"}",
         400, "invalid_request", "unknown field \"colour\""},
        {"POST", "/v1/workloads", JSON, "{\"kind\":7,\"gpu_class\":\"x\",\"image\":\"y\"}", 400,
         "invalid_request", "field \"kind\" must be a string"},
        {"POST", "/v1/workloads", JSON, "{\"kind\":\"notebook\"}", 400, "invalid_request",
         "field \"gpu_class\" is required"},
        {"POST", "/v1/workloads", JSON, "{not json", 400, "invalid_request", "not valid JSON"},
        {"POST", "/v1/workloads", JSON, "[1,2]", 400, "invalid_request", "JSON object"},
        {"POST", "/v1/workloads", JSON, "{}{}", 400, "invalid_request", "not valid JSON"},
        {"POST", "/v1/workloads", JSON, "", 400, "invalid_request", "JSON object"},
        {"POST", "/v1/workloads", "text/plain", "{}", 415, "invalid_request", "application/json"},
        {"POST", "/v1/workloads", JSON,
         "{\"kind\":\"notebook\",\"gpu_class\":\"tpu\",\"image\":\"jupyter-notebook\"}", 400,
         "invalid_request", "gpu_class"},
        {"GET", "/v1/workloads?colour=red", NULL, NULL, 400, "invalid_request", "colour"},
        {"GET", "/v1/workloads?include_deleted=maybe", NULL, NULL, 400, "invalid_request",
         "true or false"},
        {"GET", "/v1/workloads/not-a-uuid", NULL, NULL, 404, "not_found", "no such workload"},
        {"GET", "/v1/workloads/0190b5d2-7c4e-7abc-8def-0123456789ab", NULL, NULL, 404, "not_found",
         "no such workload"},
        {"GET", "/v1/machines/../../etc/passwd", NULL, NULL, 404, "not_found", NULL},
        {"GET", "/v1/nothing-here", NULL, NULL, 404, "not_found", "no such route"},
        {"PATCH", "/v1/workloads", JSON, "{}", 405, "invalid_request", "not allowed"},
        {"POST", "/v1/tokens", JSON, "{\"name\":\"\"}", 400, "invalid_request", NULL},
        {"DELETE", "/v1/tokens/nope", NULL, NULL, 404, "not_found", NULL},
        {"POST", "/v1/tokens?admin=true", JSON, "{\"name\":\"x\"}", 400, "invalid_request",
         "admin"},
        {"POST", "/v1/workloads/0190b5d2-7c4e-7abc-8def-0123456789ab/start", JSON,
         "{\"force\":true}", 400, "invalid_request", "takes no body"},
        {"GET", "/v1/me?x=1", NULL, NULL, 400, "invalid_request", "\"x\""},
    };
    g_autoptr(EinsoraTestResponse) before =
        call("GET", "/v1/workloads?include_deleted=true", server_daemon->owner_token, NULL);

    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(EinsoraTestResponse) response = einsora_test_request(
            server_daemon, table[i].method, table[i].path, server_daemon->owner_token,
            table[i].content_type, table[i].body, NULL);
        g_test_message("case %u: %s %s -> %u %s", i, table[i].method, table[i].path,
                       response->status, response->body);
        assert_error(response, table[i].status, table[i].code);
        if (table[i].message != NULL) {
            JsonObject *error =
                json_object_get_object_member(json_node_get_object(response->json), "error");
            g_assert_nonnull(
                strstr(json_object_get_string_member(error, "message"), table[i].message));
        }
    }
    {
        /* Bad input changed nothing: the same workloads, in the same states. */
        g_autoptr(EinsoraTestResponse) after =
            call("GET", "/v1/workloads?include_deleted=true", server_daemon->owner_token, NULL);
        g_assert_cmpstr(after->body, ==, before->body);
    }
}

static void
test_oversized_body(void)
{
    g_autoptr(GString) big = g_string_new("{\"kind\":\"notebook\",\"name\":\"");
    g_autoptr(EinsoraTestResponse) response = NULL;

    while (big->len < 70 * 1024)
        g_string_append(big, "xxxxxxxxxxxxxxxx");
    g_string_append(big, "\"}");
    response = call("POST", "/v1/workloads", server_daemon->owner_token, big->str);
    assert_error(response, 413, "invalid_request");
}

/* Sends raw bytes and returns the status line of the answer. */
static gchar *
raw_exchange(const char *request)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketConnection) connection = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GDataInputStream) in = NULL;
    g_autoptr(GUri) uri = g_uri_parse(server_daemon->uri, G_URI_FLAGS_NONE, NULL);
    gsize written = 0;

    connection = g_socket_client_connect_to_host(client, "127.0.0.1", (guint16)g_uri_get_port(uri),
                                                 NULL, &error);
    g_assert_no_error(error);
    g_assert_true(g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(connection)),
                                            request, strlen(request), &written, NULL, &error));
    in = g_data_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(connection)));
    return g_data_input_stream_read_line_utf8(in, NULL, NULL, &error);
}

/* A body too large for its Content-Length is refused without being kept
 * in memory; a body of unknown length (chunked) is refused too (411). */
static void
test_body_refused_before_read(void)
{
    gsize size = 4 * 1024 * 1024;
    g_autofree gchar *filler = g_strnfill(size, 'x');
    g_autofree gchar *huge = g_strdup_printf("POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                             "Content-Type: application/json\r\n"
                                             "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n%s",
                                             size, filler);
    g_autofree gchar *line = raw_exchange(huge);
    g_autofree gchar *chunked =
        raw_exchange("POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n");

    g_assert_nonnull(line);
    g_assert_true(g_str_has_prefix(line, "HTTP/1.1 413"));
    g_assert_nonnull(chunked);
    g_assert_true(g_str_has_prefix(chunked, "HTTP/1.1 411"));
}

/* A path can't write a log line of its own, and the media type is matched
 * without regard to case. */
static void
test_log_lines_and_media_type(void)
{
    g_autoptr(EinsoraTestResponse) forged =
        call("GET", "/v1/x%0Aeinsora-api-Message:%20request_id=forged%20tenant=admin", NULL, NULL);
    g_autoptr(EinsoraTestResponse) upper =
        einsora_test_request(server_daemon, "POST", "/v1/tokens", server_daemon->owner_token,
                             "Application/JSON", "{\"name\":\"case\"}", NULL);
    g_autofree gchar *log = einsora_test_daemon_read_log(server_daemon);

    assert_error(forged, 404, "not_found");
    g_assert_null(strstr(log, "\neinsora-api-Message: request_id=forged"));
    g_assert_cmpuint(upper->status, ==, 201);
    remember_secret(einsora_test_response_string(upper, "secret"));
}

static void
test_quota_and_errors(void)
{
    /* Tenant B has no GPU quota. */
    g_autoptr(EinsoraTestResponse) response =
        call("POST", "/v1/workloads", token_b,
             "{\"kind\":\"notebook\",\"gpu_class\":\"l40s-48gb\",\"image\":\"jupyter-notebook\"}");
    assert_error(response, 409, "quota_exceeded");
}

static void
test_idempotency(void)
{
    const char *key[] = {"Idempotency-Key", "launch-42", NULL};
    const char *bad_key[] = {"Idempotency-Key", "spaces are not allowed", NULL};
    const char *body = "{\"kind\":\"notebook\",\"name\":\"once\",\"gpu_class\":\"cpu-2c-4g\","
                       "\"image\":\"jupyter-notebook\"}";
    g_autoptr(EinsoraTestResponse) first = einsora_test_request(
        server_daemon, "POST", "/v1/workloads", server_daemon->owner_token, JSON, body, key);
    g_autoptr(EinsoraTestResponse) again = einsora_test_request(
        server_daemon, "POST", "/v1/workloads", server_daemon->owner_token, JSON, body, key);
    g_autoptr(EinsoraTestResponse) other = einsora_test_request(
        server_daemon, "POST", "/v1/workloads", server_daemon->owner_token, JSON,
        "{\"kind\":\"notebook\",\"name\":\"twice\",\"gpu_class\":\"cpu-2c-4g\","
        "\"image\":\"jupyter-notebook\"}",
        key);
    g_autoptr(EinsoraTestResponse) bad = einsora_test_request(
        server_daemon, "POST", "/v1/workloads", server_daemon->owner_token, JSON, body, bad_key);
    g_autoptr(EinsoraTestResponse) tokens =
        einsora_test_request(server_daemon, "POST", "/v1/tokens", server_daemon->owner_token, JSON,
                             "{\"name\":\"x\"}", key);
    /* Keys are per tenant: B may use the same one. */
    g_autoptr(EinsoraTestResponse) b =
        einsora_test_request(server_daemon, "POST", "/v1/workloads", token_b, JSON, body, key);
    g_autoptr(EinsoraTestResponse) list =
        call("GET", "/v1/workloads", server_daemon->owner_token, NULL);

    g_assert_cmpuint(first->status, ==, 201);
    g_assert_cmpuint(again->status, ==, 201);
    g_assert_cmpstr(again->body, ==, first->body);
    g_assert_cmpstr(soup_message_headers_get_one(again->headers, "Idempotent-Replayed"), ==,
                    "true");
    assert_error(other, 409, "conflict");
    assert_error(bad, 400, "invalid_request");
    assert_error(tokens, 400, "invalid_request");
    g_assert_cmpuint(b->status, ==, 201);
    g_assert_cmpstr(einsora_test_response_string(b, "id"), !=,
                    einsora_test_response_string(first, "id"));
    /* Exactly one workload named "once" for A. */
    {
        gchar **parts = g_strsplit(list->body, "\"name\":\"once\"", -1);
        g_assert_cmpuint(g_strv_length(parts), ==, 2);
        g_strfreev(parts);
    }
}

static gchar *
cookie_value(EinsoraTestResponse *response)
{
    const char *header = soup_message_headers_get_one(response->headers, "Set-Cookie");
    const char *start;

    g_assert_nonnull(header);
    g_assert_nonnull(strstr(header, "HttpOnly"));
    g_assert_nonnull(strstr(header, "SameSite=Strict"));
    g_assert_null(strstr(header, "Domain="));
    start = strstr(header, "einsora_session=");
    g_assert_nonnull(start);
    start += strlen("einsora_session=");
    return g_strndup(start, strcspn(start, ";"));
}

static void
test_browser_session(void)
{
    g_autoptr(EinsoraTestResponse) wrong = call(
        "POST", "/v1/login", NULL, "{\"email\":\"bob@globex.example\",\"password\":\"not it\"}");
    g_autoptr(EinsoraTestResponse) unknown =
        call("POST", "/v1/login", NULL, "{\"email\":\"who@nowhere.example\",\"password\":\"x\"}");
    g_autoptr(EinsoraTestResponse) login =
        call("POST", "/v1/login", NULL,
             "{\"email\":\"bob@globex.example\",\"password\":\"" B_PASSWORD "\"}");
    g_autofree gchar *session = NULL;
    g_autofree gchar *cookie = NULL;
    const char *csrf;
    const char *workload = "{\"kind\":\"notebook\",\"gpu_class\":\"cpu-2c-4g\","
                           "\"image\":\"jupyter-notebook\"}";

    remember_secret(B_PASSWORD);
    assert_error(wrong, 401, "unauthenticated");
    assert_error(unknown, 401, "unauthenticated");
    g_assert_cmpuint(login->status, ==, 200);
    session = cookie_value(login);
    remember_secret(session);
    csrf = einsora_test_response_string(login, "csrf_token");
    g_assert_nonnull(csrf);
    remember_secret(csrf);
    cookie = g_strdup_printf("einsora_session=%s", session);
    {
        const char *get_headers[] = {"Cookie", cookie, NULL};
        const char *no_csrf[] = {"Cookie", cookie, NULL};
        const char *bad_csrf[] = {"Cookie", cookie, "X-CSRF-Token", "csrf_wrong", NULL};
        const char *good_csrf[] = {"Cookie", cookie, "X-CSRF-Token", csrf, NULL};
        g_autoptr(EinsoraTestResponse) read = einsora_test_request(
            server_daemon, "GET", "/v1/workloads", NULL, NULL, NULL, get_headers);
        g_autoptr(EinsoraTestResponse) refused = einsora_test_request(
            server_daemon, "POST", "/v1/workloads", NULL, JSON, workload, no_csrf);
        g_autoptr(EinsoraTestResponse) refused_too = einsora_test_request(
            server_daemon, "POST", "/v1/workloads", NULL, JSON, workload, bad_csrf);
        g_autoptr(EinsoraTestResponse) created = einsora_test_request(
            server_daemon, "POST", "/v1/workloads", NULL, JSON, workload, good_csrf);
        g_autoptr(EinsoraTestResponse) delete_refused = NULL;
        g_autoptr(EinsoraTestResponse) logout = NULL;
        g_autoptr(EinsoraTestResponse) after = NULL;
        g_autofree gchar *path = NULL;

        g_assert_cmpuint(read->status, ==, 200);
        assert_error(refused, 403, "forbidden");
        assert_error(refused_too, 403, "forbidden");
        g_assert_cmpuint(created->status, ==, 201);
        path = g_strdup_printf("/v1/workloads/%s", einsora_test_response_string(created, "id"));
        delete_refused =
            einsora_test_request(server_daemon, "DELETE", path, NULL, NULL, NULL, no_csrf);
        assert_error(delete_refused, 403, "forbidden");
        logout =
            einsora_test_request(server_daemon, "POST", "/v1/logout", NULL, NULL, NULL, good_csrf);
        g_assert_cmpuint(logout->status, ==, 204);
        after = einsora_test_request(server_daemon, "GET", "/v1/workloads", NULL, NULL, NULL,
                                     get_headers);
        assert_error(after, 401, "unauthenticated");
    }
}

/* Locks bob's email for the rest of the run: registered right after
 * /api/session/login-csrf-logout, which signs bob in. Also: the session
 * cookie is set and cleared without libsoup complaining in the log. */
static void
test_session_lockout_and_cookie(void)
{
    g_autofree gchar *log_before = einsora_test_daemon_read_log(server_daemon);
    g_autofree gchar *log = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(EinsoraTestResponse) login =
        call("POST", "/v1/login", NULL,
             "{\"email\":\"bob@globex.example\",\"password\":\"" B_PASSWORD "\"}");
    g_autoptr(EinsoraTestResponse) logout = NULL;
    g_autoptr(EinsoraTestResponse) locked = NULL;
    g_autofree gchar *session = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *expected = NULL;
    JsonObject *error;

    /* Signing in sets the cookie, exactly; signing out clears it. */
    g_assert_cmpuint(login->status, ==, 200);
    session = cookie_value(login);
    remember_secret(session);
    remember_secret(einsora_test_response_string(login, "csrf_token"));
    expected = g_strdup_printf("einsora_session=%s; Path=/; Max-Age=604800; HttpOnly; "
                               "SameSite=Strict",
                               session);
    g_assert_cmpstr(soup_message_headers_get_one(login->headers, "Set-Cookie"), ==, expected);
    cookie = g_strdup_printf("einsora_session=%s", session);
    {
        const char *headers[] = {"Cookie", cookie, "X-CSRF-Token",
                                 einsora_test_response_string(login, "csrf_token"), NULL};
        logout =
            einsora_test_request(server_daemon, "POST", "/v1/logout", NULL, NULL, NULL, headers);
    }
    g_assert_cmpuint(logout->status, ==, 204);
    g_assert_cmpstr(soup_message_headers_get_one(logout->headers, "Set-Cookie"), ==,
                    "einsora_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");

    /* Five wrong passwords, then even the right one is refused. */
    for (guint i = 0; i < 5; i++) {
        g_autofree gchar *body =
            g_strdup_printf("{\"email\":\"bob@globex.example\",\"password\":\"wrong %u\"}", i);
        g_autoptr(EinsoraTestResponse) wrong = call("POST", "/v1/login", NULL, body);

        assert_error(wrong, 401, "unauthenticated");
        error = json_object_get_object_member(json_node_get_object(wrong->json), "error");
        g_assert_cmpstr(json_object_get_string_member(error, "message"), ==,
                        "wrong email or password");
    }
    locked = call("POST", "/v1/login", NULL,
                  "{\"email\":\"BOB@globex.example\",\"password\":\"" B_PASSWORD "\"}");
    assert_error(locked, 401, "unauthenticated");
    error = json_object_get_object_member(json_node_get_object(locked->json), "error");
    g_assert_cmpstr(json_object_get_string_member(error, "message"), ==,
                    "too many failed sign-ins; try again later");
    g_assert_null(soup_message_headers_get_one(locked->headers, "Set-Cookie"));

    /* A client that sends its sign-in and hangs up gets no session: the
     * daemon notices while the password is checked. */
    {
        g_autoptr(GSocketClient) client = g_socket_client_new();
        g_autoptr(GSocketConnection) connection = NULL;
        g_autoptr(GUri) uri = g_uri_parse(server_daemon->uri, G_URI_FLAGS_NONE, NULL);
        g_autoptr(GError) socket_error = NULL;
        /* An account with no lock-out (bob's answers at once now, before
         * any check, whether or not the hang-up has arrived): an unknown
         * one, checked against the dummy hash as slowly as a real one. */
        const char *body = "{\"email\":\"nobody@globex.example\",\"password\":\"" B_PASSWORD "\"}";
        g_autofree gchar *request = g_strdup_printf(
            "POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n%s",
            strlen(body), body);
        gint64 deadline = g_get_monotonic_time() + 20 * G_TIME_SPAN_SECOND;
        gboolean answered = FALSE;

        connection = g_socket_client_connect_to_host(
            client, "127.0.0.1", (guint16)g_uri_get_port(uri), NULL, &socket_error);
        g_assert_no_error(socket_error);
        g_assert_true(
            g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(connection)),
                                      request, strlen(request), NULL, NULL, &socket_error));
        g_assert_no_error(socket_error);
        g_assert_true(g_io_stream_close(G_IO_STREAM(connection), NULL, &socket_error));
        while (!answered && g_get_monotonic_time() < deadline) {
            g_autofree gchar *now = einsora_test_daemon_read_log(server_daemon);
            /* 499 when the daemon's own watch saw the hang-up; when libsoup
             * saw it first, the connection is gone and only the log says so.
             * Either way no session was made. */
            answered =
                strstr(now + strlen(log_before), "POST /v1/login 499") != NULL ||
                strstr(now + strlen(log_before), "the client went away during sign-in") != NULL;
            if (!answered)
                g_usleep(20 * G_TIME_SPAN_MILLISECOND);
        }
        g_assert_true(answered);
    }

    /* Nothing in this test warned; and no sign-in or sign-out before it
     * (login-csrf-logout's) made libsoup complain. */
    log = einsora_test_daemon_read_log(server_daemon);
    g_assert_cmpuint(strlen(log), >=, strlen(log_before));
    lines = g_strsplit(log + strlen(log_before), "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        if (strstr(lines[i], "WARNING") != NULL || strstr(lines[i], "CRITICAL") != NULL)
            g_error("the daemon logged: %s", lines[i]);
    }
    g_assert_null(strstr(log, "libsoup-WARNING"));
    g_assert_null(strstr(log, "libsoup-CRITICAL"));
}

static void
test_tokens(void)
{
    g_autoptr(EinsoraTestResponse) created =
        call("POST", "/v1/tokens", server_daemon->owner_token, "{\"name\":\"laptop\"}");
    JsonObject *root = json_node_get_object(created->json);
    const char *secret = json_object_get_string_member(root, "secret");
    const char *id =
        json_object_get_string_member(json_object_get_object_member(root, "token"), "id");
    g_autofree gchar *path = g_strdup_printf("/v1/tokens/%s", id);

    g_assert_cmpuint(created->status, ==, 201);
    remember_secret(secret);
    g_assert_true(g_str_has_prefix(secret, "tsk_"));
    {
        g_autoptr(EinsoraTestResponse) me = call("GET", "/v1/me", secret, NULL);
        g_autoptr(EinsoraTestResponse) list =
            call("GET", "/v1/tokens", server_daemon->owner_token, NULL);
        g_assert_cmpuint(me->status, ==, 200);
        g_assert_nonnull(strstr(einsora_test_response_string(me, "via"), "laptop"));
        /* The secret is shown once: never in a list. */
        g_assert_nonnull(strstr(list->body, "laptop"));
        g_assert_null(strstr(list->body, secret));
        g_assert_null(strstr(list->body, "sha256"));
    }
    {
        /* B can't revoke A's token; A can. */
        g_autoptr(EinsoraTestResponse) foreign = call("DELETE", path, token_b, NULL);
        g_autoptr(EinsoraTestResponse) revoked =
            call("DELETE", path, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) after = call("GET", "/v1/me", secret, NULL);
        assert_error(foreign, 404, "not_found");
        g_assert_cmpuint(revoked->status, ==, 204);
        assert_error(after, 401, "unauthenticated");
    }
}

/* A machine of A's, as its agent would register it (issue 4 adds the
 * agent); the API only reads machines. */
static gchar *
insert_machine_for_a(void)
{
    g_autoptr(EinsoraTestResponse) me = call("GET", "/v1/me", server_daemon->owner_token, NULL);
    g_autofree gchar *now = NULL;
    g_autofree gchar *sql = NULL;
    const char *id = "0190b5d2-7c4e-7abc-8def-0000000000c1";
    g_autoptr(GDateTime) dt = g_date_time_new_now_utc();

    now = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S.000000Z");
    sql = g_strdup_printf("INSERT INTO machines (id, tenant_id, name, region, os, cpus, "
                          "memory_mib, sharing, inventory, last_seen_at, created_at) VALUES "
                          "('%s', '%s', 'workstation', 'local', 'linux', 16, 65536, 'private', "
                          "NULL, '%s', '%s')",
                          id, einsora_test_response_string(me, "tenant_id"), now, now);
    einsora_test_daemon_exec_sql(server_daemon, sql);
    return g_strdup(id);
}

static void
test_machines(void)
{
    g_autofree gchar *id = insert_machine_for_a();
    g_autofree gchar *path = g_strdup_printf("/v1/machines/%s", id);
    g_autoptr(EinsoraTestResponse) list =
        call("GET", "/v1/machines", server_daemon->owner_token, NULL);
    g_autoptr(EinsoraTestResponse) one = call("GET", path, server_daemon->owner_token, NULL);
    g_autoptr(EinsoraTestResponse) list_b = call("GET", "/v1/machines", token_b, NULL);
    g_autoptr(EinsoraTestResponse) one_b = call("GET", path, token_b, NULL);
    g_autoptr(EinsoraTestResponse) post =
        call("POST", "/v1/machines", server_daemon->owner_token, "{}");

    g_assert_cmpuint(list->status, ==, 200);
    g_assert_nonnull(strstr(list->body, id));
    g_assert_cmpuint(one->status, ==, 200);
    g_assert_cmpstr(einsora_test_response_string(one, "status"), ==, "online");
    /* Seen just now: placeable too (einsora-machine-test has the windows). */
    g_assert_true(json_object_get_boolean_member(json_node_get_object(one->json), "placeable"));
    g_assert_cmpstr(einsora_test_response_string(one, "system"), ==, "linux");
    g_assert_cmpstr(list_b->body, ==, "{\"machines\":[]}");
    assert_error(one_b, 404, "not_found");
    assert_error(post, 405, "invalid_request");
}

/* Tenant B gets 404 for every route that names one of A's objects, and
 * nothing of A's changes. */
static void
test_cross_tenant(void)
{
    g_autofree gchar *id = create_workload(server_daemon->owner_token, "private");
    const char *suffixes[][2] = {
        {"GET", ""},        {"GET", "?include_deleted=true"},
        {"POST", "/start"}, {"POST", "/stop"},
        {"DELETE", ""},     {"GET", "/events"},
        {"GET", "/export"}, {"POST", "/access"},
    };

    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s%s", id, suffixes[i][1]);
        g_autoptr(EinsoraTestResponse) response = call(suffixes[i][0], path, token_b, NULL);
        g_test_message("%s %s", suffixes[i][0], path);
        assert_error(response, 404, "not_found");
    }
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
        g_autofree gchar *events = g_strdup_printf("/v1/workloads/%s/events", id);
        g_autoptr(EinsoraTestResponse) mine = call("GET", path, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) timeline =
            call("GET", events, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) list_b =
            call("GET", "/v1/workloads?include_deleted=true", token_b, NULL);
        g_assert_cmpstr(einsora_test_response_string(mine, "state"), ==, "pending");
        /* Created, and noted that no machine here runs it: nothing of B's. */
        g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                             json_node_get_object(timeline->json), "events")),
                         ==, 2);
        g_assert_null(strstr(list_b->body, id));
    }
}

/* An unexpected failure is a 500 with a fixed message and the request
 * ID; the detail goes only to the operator's log. The store loses a table
 * behind the daemon's back to make one. */
static void
test_internal_error(void)
{
    const char *key[] = {"Idempotency-Key", "after-the-table-is-gone", NULL};
    g_autoptr(EinsoraTestResponse) response = NULL;
    g_autofree gchar *log = NULL;
    g_autofree gchar *needle = NULL;

    einsora_test_daemon_exec_sql(server_daemon, "DROP TABLE idempotency_keys");

    response = einsora_test_request(
        server_daemon, "POST", "/v1/workloads", server_daemon->owner_token, JSON,
        "{\"kind\":\"notebook\",\"gpu_class\":\"cpu-2c-4g\",\"image\":\"jupyter-notebook\"}", key);
    assert_error(response, 500, "internal");
    g_assert_null(strstr(response->body, "sqlite"));
    g_assert_null(strstr(response->body, "postgres"));
    g_assert_null(strstr(response->body, "idempotency_keys"));
    log = einsora_test_daemon_read_log(server_daemon);
    needle = g_strdup_printf("request_id=%s",
                             soup_message_headers_get_one(response->headers, "X-Request-ID"));
    g_assert_nonnull(strstr(log, needle));
    /* The store's own words are for the operator's log. */
    g_assert_nonnull(strstr(log, einsora_test_daemon_on_postgres()
                                     ? "relation \"idempotency_keys\" does not exist"
                                     : "no such table: idempotency_keys"));
}

/* POST /v1/workloads/{id}/access refuses what isn't a running notebook,
 * and input the way every route does. The daemon here runs nothing, so
 * its workloads stay pending. */
static void
test_access_refused(void)
{
    g_autofree gchar *id = create_workload(server_daemon->owner_token, "not yet");
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s/access", id);
    g_autofree gchar *with_query = g_strdup_printf("%s?ticket=x", path);
    g_autofree gchar *events = g_strdup_printf("/v1/workloads/%s/events", id);
    const char *key[] = {"Idempotency-Key", "open-1", NULL};

    {
        g_autoptr(EinsoraTestResponse) pending =
            call("POST", path, server_daemon->owner_token, NULL);
        JsonObject *error;
        assert_error(pending, 409, "conflict");
        error = json_object_get_object_member(json_node_get_object(pending->json), "error");
        g_assert_nonnull(strstr(json_object_get_string_member(error, "message"),
                                "is pending; only a running notebook can be opened"));
        g_assert_null(strstr(pending->body, "url"));
    }
    {
        g_autoptr(EinsoraTestResponse) anonymous = call("POST", path, NULL, NULL);
        g_autoptr(EinsoraTestResponse) body = call("POST", path, server_daemon->owner_token, "{}");
        g_autoptr(EinsoraTestResponse) query =
            call("POST", with_query, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) keyed = einsora_test_request(
            server_daemon, "POST", path, server_daemon->owner_token, NULL, NULL, key);
        g_autoptr(EinsoraTestResponse) get = call("GET", path, server_daemon->owner_token, NULL);
        g_autoptr(EinsoraTestResponse) unknown =
            call("POST", "/v1/workloads/0190b5d2-7c4e-7abc-8def-0123456789ab/access",
                 server_daemon->owner_token, NULL);
        assert_error(anonymous, 401, "unauthenticated");
        assert_error(body, 400, "invalid_request");
        g_assert_nonnull(strstr(body->body, "takes no body"));
        assert_error(query, 400, "invalid_request");
        g_assert_nonnull(strstr(query->body, "ticket"));
        /* Its answer holds a secret: no replay can keep it. */
        assert_error(keyed, 400, "invalid_request");
        g_assert_nonnull(strstr(keyed->body, "not accepted here"));
        assert_error(get, 405, "invalid_request");
        assert_error(unknown, 404, "not_found");
    }
    {
        /* Nothing was noted by the refusals: created, and the create's
         * note that no machine here runs it. */
        g_autoptr(EinsoraTestResponse) timeline =
            call("GET", events, server_daemon->owner_token, NULL);
        g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                             json_node_get_object(timeline->json), "events")),
                         ==, 2);
    }
}

static void
wait_for_state(EinsoraTestDaemon *daemon, const char *token, const char *id, const char *state)
{
    g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", id);
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) response =
            einsora_test_request(daemon, "GET", path, token, NULL, NULL, NULL);
        const char *now = einsora_test_response_string(response, "state");
        if (g_strcmp0(now, state) == 0)
            return;
        if (g_get_monotonic_time() > deadline)
            g_error("workload %s is %s, not %s, after 30 s", id, now, state);
        g_usleep(50 * 1000);
    }
}

/* Whether @needle is anywhere in the file at @path (a missing file holds
 * nothing). */
static gboolean
file_holds(const char *path, const char *needle)
{
    g_autofree gchar *contents = NULL;
    gsize length = 0;

    if (!g_file_get_contents(path, &contents, &length, NULL))
        return FALSE;
    return memmem(contents, length, needle, strlen(needle)) != NULL;
}

/* A running notebook (the sim driver runs nothing, but the workload is
 * running on this machine as far as the API knows) gets a one-time link
 * at its own host on the access proxy's port. The secret is in the
 * answer only: the store has its SHA-256, the log neither. */
static void
test_access_link(void)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autofree gchar *other_token = NULL;
    g_autofree gchar *id = NULL;
    g_autofree gchar *path = NULL;
    g_autofree gchar *secret = NULL;
    g_autofree gchar *second_secret = NULL;
    g_autofree gchar *db = NULL;
    g_autofree gchar *log = NULL;

    einsora_test_daemon_setenv(daemon, "EINSORA_DRIVERS", "sim");
    einsora_test_daemon_setenv(daemon, "EINSORA_CONTROLLER_INTERVAL", "200ms");
    einsora_test_daemon_start(daemon);
    einsora_test_daemon_stop(daemon);
    other_token =
        einsora_test_daemon_create_account(daemon, "initech", "peter@initech.example", NULL);
    einsora_test_daemon_start(daemon);
    {
        g_autoptr(EinsoraTestResponse) created = einsora_test_request(
            daemon, "POST", "/v1/workloads", daemon->owner_token, JSON,
            "{\"kind\":\"notebook\",\"name\":\"open me\",\"gpu_class\":\"cpu-1c-2g\","
            "\"image\":\"jupyter-linux\"}",
            NULL);
        g_assert_cmpuint(created->status, ==, 201);
        id = g_strdup(einsora_test_response_string(created, "id"));
    }
    path = g_strdup_printf("/v1/workloads/%s/access", id);
    wait_for_state(daemon, daemon->owner_token, id, "running");

    {
        g_autoptr(EinsoraTestResponse) link =
            einsora_test_request(daemon, "POST", path, daemon->owner_token, NULL, NULL, NULL);
        g_autoptr(GUri) uri = NULL;
        g_autoptr(GHashTable) params = NULL;
        g_autoptr(GDateTime) expires = NULL;
        g_autoptr(GDateTime) now = g_date_time_new_now_utc();
        g_autofree gchar *host = g_strdup_printf("w-%s.localhost", id);
        const char *url;
        GTimeSpan left;

        g_assert_cmpuint(link->status, ==, 201);
        g_assert_cmpstr(soup_message_headers_get_one(link->headers, "Cache-Control"), ==,
                        "no-store");
        url = einsora_test_response_string(link, "url");
        g_test_message("url: http://%s:%u/_einsora/open?ticket=...", host, daemon->access_port);
        uri = g_uri_parse(url, G_URI_FLAGS_ENCODED_QUERY, NULL);
        g_assert_nonnull(uri);
        g_assert_cmpstr(g_uri_get_scheme(uri), ==, "http");
        g_assert_cmpstr(g_uri_get_host(uri), ==, host);
        g_assert_cmpint(g_uri_get_port(uri), ==,
                        daemon->access_port != 0 ? (gint)daemon->access_port : 8090);
        g_assert_cmpstr(g_uri_get_path(uri), ==, "/_einsora/open");
        params = g_uri_parse_params(g_uri_get_query(uri), -1, "&", G_URI_PARAMS_NONE, NULL);
        g_assert_cmpuint(g_hash_table_size(params), ==, 1);
        secret = g_strdup(g_hash_table_lookup(params, "ticket"));
        g_assert_nonnull(secret);
        g_assert_true(g_str_has_prefix(secret, "tkt_"));
        g_assert_cmpuint(strlen(secret), ==, strlen("tkt_") + 43);
        /* Valid for a minute. */
        expires =
            g_date_time_new_from_iso8601(einsora_test_response_string(link, "expires_at"), NULL);
        g_assert_nonnull(expires);
        left = g_date_time_difference(expires, now);
        g_assert_cmpint(left, >, 50 * G_TIME_SPAN_SECOND);
        g_assert_cmpint(left, <=, 61 * G_TIME_SPAN_SECOND);
    }
    {
        /* Each call is a new ticket. */
        g_autoptr(EinsoraTestResponse) again =
            einsora_test_request(daemon, "POST", path, daemon->owner_token, NULL, NULL, NULL);
        g_assert_cmpuint(again->status, ==, 201);
        second_secret = g_strdup(strstr(einsora_test_response_string(again, "url"), "tkt_"));
        g_assert_cmpstr(second_secret, !=, secret);
    }
    {
        /* The timeline says who asked. */
        g_autofree gchar *events = g_strdup_printf("/v1/workloads/%s/events", id);
        g_autoptr(EinsoraTestResponse) timeline =
            einsora_test_request(daemon, "GET", events, daemon->owner_token, NULL, NULL, NULL);
        JsonArray *rows =
            json_object_get_array_member(json_node_get_object(timeline->json), "events");
        JsonObject *last = json_array_get_object_element(rows, json_array_get_length(rows) - 1);
        g_assert_true(json_object_get_boolean_member(last, "note"));
        g_assert_cmpstr(json_object_get_string_member(last, "to_state"), ==, "running");
        g_assert_true(g_str_has_prefix(json_object_get_string_member(last, "reason"),
                                       "open in a browser requested by owner@localhost (API token "
                                       "\"local\" (tsk_"));
        g_assert_null(strstr(timeline->body, "tkt_"));
    }
    {
        /* Another tenant's running notebook is 404, like anything of
         * theirs. */
        g_autoptr(EinsoraTestResponse) foreign =
            einsora_test_request(daemon, "POST", path, other_token, NULL, NULL, NULL);
        assert_error(foreign, 404, "not_found");
    }

    /* Only the SHA-256 is stored: the secret is in no file of the store,
     * and in no line of the log. */
    db = g_build_filename(daemon->data_dir, "einsora.db", NULL);
    {
        g_autofree gchar *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, secret, -1);
        g_auto(GStrv) hashes =
            einsora_test_daemon_query_sql(daemon, "SELECT ticket_sha256 FROM access_tickets");

        g_assert_true(g_strv_contains((const char *const *)hashes, hash));
    }
    {
        const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
        for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
            g_autofree gchar *file = g_strconcat(db, suffixes[i], NULL);
            g_assert_false(file_holds(file, secret));
            g_assert_false(file_holds(file, second_secret));
        }
    }
    log = einsora_test_daemon_read_log(daemon);
    g_assert_null(strstr(log, secret));
    g_assert_null(strstr(log, second_secret));
    g_assert_null(strstr(log, "ticket="));

    {
        /* Stopped, it has nothing to open. */
        g_autofree gchar *stop = g_strdup_printf("/v1/workloads/%s/stop", id);
        g_autoptr(EinsoraTestResponse) stopping =
            einsora_test_request(daemon, "POST", stop, daemon->owner_token, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) refused = NULL;
        g_assert_cmpuint(stopping->status, ==, 202);
        wait_for_state(daemon, daemon->owner_token, id, "stopped");
        refused = einsora_test_request(daemon, "POST", path, daemon->owner_token, NULL, NULL, NULL);
        assert_error(refused, 409, "conflict");
        g_assert_nonnull(strstr(refused->body, "is stopped; only a running notebook"));
    }
    einsora_test_daemon_stop(daemon);
}

/* Last: no token, password, cookie or CSRF value the tests used is in the
 * daemon's whole log. */
static void
test_log_has_no_secrets(void)
{
    g_autofree gchar *log = einsora_test_daemon_read_log(server_daemon);

    g_assert_cmpuint(secrets->len, >=, 6);
    g_assert_cmpuint(strlen(log), >, 0);
    for (guint i = 0; i < secrets->len; i++) {
        const char *secret = g_ptr_array_index(secrets, i);
        if (strstr(log, secret) != NULL)
            g_error("the daemon's log holds secret #%u", i);
    }
}

/* GET /v1/usage: the metering step's records of a history written into
 * the store (running 09:30-11:15 on one class, then 12:00-12:30 on
 * another after a stop; a second workload that failed; B's own), summed
 * by class, workload and day; B sees only B's; bad input is 400. */
#define USAGE_A "0190b5d2-7c4e-7abc-8def-0000000a0001"
#define USAGE_A2 "0190b5d2-7c4e-7abc-8def-0000000a0002"
#define USAGE_B "0190b5d2-7c4e-7abc-8def-0000000b0001"

static JsonObject *
usage_group(EinsoraTestResponse *response, guint index)
{
    JsonArray *groups =
        json_object_get_array_member(json_node_get_object(response->json), "groups");
    return json_array_get_object_element(groups, index);
}

static guint
usage_groups(EinsoraTestResponse *response)
{
    return json_array_get_length(
        json_object_get_array_member(json_node_get_object(response->json), "groups"));
}

static gint64
usage_total(EinsoraTestResponse *response)
{
    return json_object_get_int_member(
        json_object_get_object_member(json_node_get_object(response->json), "total"), "seconds");
}

static EinsoraTestResponse *
usage_call(const char *token, const char *query)
{
    g_autofree gchar *path = g_strdup_printf("/v1/usage%s", query);
    return call("GET", path, token, NULL);
}

static void
test_usage(void)
{
    const char *const a_steps[] = {
        "pending 2026-03-02T09:00:00.000000Z", "provisioning 2026-03-02T09:29:00.000000Z",
        "running 2026-03-02T09:30:00.000000Z", "stopping 2026-03-02T11:15:00.000000Z",
        "stopped 2026-03-02T11:16:00.000000Z", NULL};
    const char *const a2_steps[] = {
        "pending 2026-03-02T23:00:00.000000Z", "provisioning 2026-03-02T23:29:00.000000Z",
        "running 2026-03-02T23:30:00.000000Z", "failed 2026-03-03T00:30:00.000000Z", NULL};
    const char *const b_steps[] = {
        "pending 2026-03-02T10:00:00.000000Z", "provisioning 2026-03-02T10:00:01.000000Z",
        "running 2026-03-02T10:00:02.000000Z", "deleting 2026-03-02T10:10:02.000000Z",
        "deleted 2026-03-02T10:10:03.000000Z", NULL};
    g_autoptr(EinsoraTestResponse) me_a = call("GET", "/v1/me", server_daemon->owner_token, NULL);
    g_autoptr(EinsoraTestResponse) me_b = call("GET", "/v1/me", token_b, NULL);
    const char *window = "?from=2026-03-01&to=2026-03-04";
    gint64 waited = 0;

    einsora_test_insert_history(
        server_daemon->data_dir, einsora_test_daemon_database_url(server_daemon),
        einsora_test_response_string(me_a, "tenant_id"), USAGE_A, "usage-a", "cpu-2c-4g", a_steps);
    einsora_test_insert_history(server_daemon->data_dir,
                                einsora_test_daemon_database_url(server_daemon),
                                einsora_test_response_string(me_a, "tenant_id"), USAGE_A2,
                                "usage-a2", "cpu-2c-4g", a2_steps);
    einsora_test_insert_history(
        server_daemon->data_dir, einsora_test_daemon_database_url(server_daemon),
        einsora_test_response_string(me_b, "tenant_id"), USAGE_B, "usage-b", "cpu-2c-4g", b_steps);
    /* The metering step runs every second here (main()); a pass may come
     * between the inserts, so both tenants' totals are waited for. */
    for (;;) {
        g_autoptr(EinsoraTestResponse) by_class = usage_call(server_daemon->owner_token, window);
        g_autoptr(EinsoraTestResponse) of_b = usage_call(token_b, window);
        g_assert_cmpuint(by_class->status, ==, 200);
        if (usage_total(by_class) == 6300 + 3600 && usage_total(of_b) == 600)
            break;
        g_assert_cmpint(waited, <, 30 * G_USEC_PER_SEC);
        g_usleep(100 * 1000);
        waited += 100 * 1000;
    }

    {
        g_autoptr(EinsoraTestResponse) by_class = usage_call(server_daemon->owner_token, window);
        JsonObject *root = json_node_get_object(by_class->json);
        JsonObject *cpu = usage_group(by_class, 0);

        g_assert_cmpstr(json_object_get_string_member(root, "group_by"), ==, "class");
        g_assert_cmpstr(json_object_get_string_member(root, "from"), ==,
                        "2026-03-01T00:00:00.000000Z");
        g_assert_cmpstr(json_object_get_string_member(root, "to"), ==,
                        "2026-03-04T00:00:00.000000Z");
        g_assert_cmpuint(usage_groups(by_class), ==, 1);
        g_assert_cmpstr(json_object_get_string_member(cpu, "gpu_class"), ==, "cpu-2c-4g");
        g_assert_cmpint(json_object_get_int_member(cpu, "seconds"), ==, 9900);
        g_assert_cmpfloat(json_object_get_double_member(cpu, "hours"), ==, 2.75);
        g_assert_cmpint(json_object_get_int_member(cpu, "gpu_seconds"), ==, 0);
        /* No money anywhere. */
        g_assert_null(strstr(by_class->body, "cost"));
        g_assert_null(strstr(by_class->body, "price"));
    }
    {
        g_autoptr(EinsoraTestResponse) by_workload = usage_call(
            server_daemon->owner_token, "?from=2026-03-01&to=2026-03-04&group_by=workload");
        g_assert_cmpuint(by_workload->status, ==, 200);
        g_assert_cmpuint(usage_groups(by_workload), ==, 2);
        g_assert_cmpstr(json_object_get_string_member(usage_group(by_workload, 0), "name"), ==,
                        "usage-a");
        g_assert_cmpstr(json_object_get_string_member(usage_group(by_workload, 0), "workload_id"),
                        ==, USAGE_A);
        g_assert_cmpint(json_object_get_int_member(usage_group(by_workload, 0), "seconds"), ==,
                        6300);
        g_assert_cmpstr(json_object_get_string_member(usage_group(by_workload, 1), "name"), ==,
                        "usage-a2");
        g_assert_cmpint(json_object_get_int_member(usage_group(by_workload, 1), "seconds"), ==,
                        3600);
    }
    {
        /* The failed one ran across midnight: half on each day. */
        g_autoptr(EinsoraTestResponse) by_day =
            usage_call(server_daemon->owner_token, "?from=2026-03-01&to=2026-03-04&group_by=day");
        g_assert_cmpuint(usage_groups(by_day), ==, 2);
        g_assert_cmpstr(json_object_get_string_member(usage_group(by_day, 0), "day"), ==,
                        "2026-03-02");
        g_assert_cmpint(json_object_get_int_member(usage_group(by_day, 0), "seconds"), ==, 8100);
        {
            /* Each day by class too, for a chart of days stacked by class. */
            JsonArray *classes = json_object_get_array_member(usage_group(by_day, 0), "classes");
            JsonObject *cpu = json_array_get_object_element(classes, 0);
            g_assert_cmpuint(json_array_get_length(classes), ==, 1);
            g_assert_cmpstr(json_object_get_string_member(cpu, "gpu_class"), ==, "cpu-2c-4g");
            g_assert_cmpint(json_object_get_int_member(cpu, "seconds"), ==, 8100);
            g_assert_cmpfloat(json_object_get_double_member(cpu, "hours"), ==, 2.25);
        }
        g_assert_cmpstr(json_object_get_string_member(usage_group(by_day, 1), "day"), ==,
                        "2026-03-03");
        g_assert_cmpint(json_object_get_int_member(usage_group(by_day, 1), "seconds"), ==, 1800);
    }
    {
        /* Whole hours: 10:20 to 10:40 reads the 10:00 hour. */
        g_autoptr(EinsoraTestResponse) hour = usage_call(
            server_daemon->owner_token, "?from=2026-03-02T10:20:00Z&to=2026-03-02T10:40:00Z");
        g_assert_cmpuint(hour->status, ==, 200);
        g_assert_cmpint(usage_total(hour), ==, 3600);
        g_assert_cmpstr(json_object_get_string_member(json_node_get_object(hour->json), "to"), ==,
                        "2026-03-02T11:00:00.000000Z");
    }
    {
        /* B: its own deleted workload's ten minutes, nothing of A's. */
        g_autoptr(EinsoraTestResponse) b =
            usage_call(token_b, "?from=2026-03-01&to=2026-03-04&group_by=workload");
        g_assert_cmpuint(b->status, ==, 200);
        g_assert_cmpuint(usage_groups(b), ==, 1);
        g_assert_cmpstr(json_object_get_string_member(usage_group(b, 0), "workload_id"), ==,
                        USAGE_B);
        g_assert_cmpint(usage_total(b), ==, 600);
        g_assert_null(strstr(b->body, USAGE_A));
        g_assert_null(strstr(b->body, "usage-a"));
    }
    {
        g_autoptr(EinsoraTestResponse) none =
            usage_call(server_daemon->owner_token, "?from=2026-05-01&to=2026-05-02");
        g_assert_cmpuint(none->status, ==, 200);
        g_assert_cmpuint(usage_groups(none), ==, 0);
        g_assert_cmpint(usage_total(none), ==, 0);
    }
    {
        const char *const bad[] = {
            "?group_by=tenant",
            "?from=yesterday",
            "?to=2026-13-01",
            "?from=2026-03-04&to=2026-03-01",
            "?from=2024-01-01&to=2026-03-01",
            "?tenant=other",
            "?from=2026-03-01&from=2026-03-02",
        };
        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
            g_autoptr(EinsoraTestResponse) response =
                usage_call(server_daemon->owner_token, bad[i]);
            g_test_message("GET /v1/usage%s", bad[i]);
            assert_error(response, 400, "invalid_request");
        }
    }
    {
        g_autoptr(EinsoraTestResponse) anonymous = usage_call(NULL, "");
        g_assert_cmpuint(anonymous->status, ==, 401);
    }
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    secrets = g_ptr_array_new_with_free_func(g_free);
    server_daemon = einsora_test_daemon_new();
    /* States change here only through the API: the controller's first
     * pass is an hour away, and nothing wakes it sooner. */
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_WAKE", "off");
    /* Usage written into the store is metered within a second. */
    einsora_test_daemon_setenv(server_daemon, "EINSORA_METERING_INTERVAL", "1s");
    /* First run makes the owner and its token file; then an operator adds
     * tenant B while the server_daemon is stopped, and it starts again. */
    einsora_test_daemon_start(server_daemon);
    einsora_test_daemon_stop(server_daemon);
    token_b = einsora_test_daemon_create_account(server_daemon, "globex", "bob@globex.example",
                                                 B_PASSWORD);
    einsora_test_daemon_start(server_daemon);
    remember_secret(server_daemon->owner_token);
    remember_secret(token_b);

    g_test_add_func("/api/health/live-and-ready", test_health);
    g_test_add_func("/api/request-id/server-generated-and-logged", test_request_ids);
    g_test_add_func("/api/auth/bearer-required", test_authentication);
    g_test_add_func("/api/workloads/lifecycle", test_workload_lifecycle);
    g_test_add_func("/api/create-warns-when-no-machine-runs-the-image",
                    test_create_warns_when_nothing_runs_it);
    g_test_add_func("/api/errors/bad-input-table", test_bad_input);
    g_test_add_func("/api/errors/oversized-body-413", test_oversized_body);
    g_test_add_func("/api/errors/body-refused-before-read", test_body_refused_before_read);
    g_test_add_func("/api/errors/log-lines-and-media-type", test_log_lines_and_media_type);
    g_test_add_func("/api/errors/quota-exceeded", test_quota_and_errors);
    g_test_add_func("/api/idempotency/replay-and-conflict", test_idempotency);
    g_test_add_func("/api/session/login-csrf-logout", test_browser_session);
    g_test_add_func("/api/session/lockout-and-cookie", test_session_lockout_and_cookie);
    g_test_add_func("/api/tokens/create-list-revoke", test_tokens);
    g_test_add_func("/api/machines/list-get-read-only", test_machines);
    g_test_add_func("/api/tenancy/other-tenant-is-404", test_cross_tenant);
    g_test_add_func("/api/usage/by-class-workload-day-own-tenant-only", test_usage);
    g_test_add_func("/api/access/refused-unless-running-notebook", test_access_refused);
    g_test_add_func("/api/access/one-time-link-hash-only", test_access_link);
    g_test_add_func("/api/log/internal-error-is-500-detail-in-log", test_internal_error);
    g_test_add_func("/api/log/no-secrets", test_log_has_no_secrets);
    status = g_test_run();

    einsora_test_daemon_stop(server_daemon);
    einsora_test_daemon_free(server_daemon);
    g_free(token_b);
    g_ptr_array_unref(secrets);
    return status;
}
