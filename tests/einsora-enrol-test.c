/* Machines that join over the network, first step (docs/adr/0055): the
 * real daemon over TLS (its own certificate), the real `einsora` and the
 * real `einsora-daemon agent --join` of another "machine" (a state
 * directory of its own). `einsora machines add` prints the command; run,
 * it enrols with a key made there and keeps key, certificate, CA, server
 * and machine ID 0600 in 0700; the machine is the owner's, with the name
 * and region the token fixed and the certificate's fingerprint. The token
 * works once; a wrong fingerprint sends nothing (the token still works
 * after); a bad certificate request burns no token; only the token's
 * SHA-256 is stored and it is never logged; another tenant sees no such
 * machine; a daemon without TLS gives no tokens. Expiry is the store's
 * (tests/einsora-store-conformance.c). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"

#define JSON "application/json"

static EinsoraTestDaemon *daemon_;
static gchar *config_home;
static gchar *fingerprint;

typedef struct {
    int status;
    gchar *out;
    gchar *err;
} Run;

static void
run_free(Run *run)
{
    g_free(run->out);
    g_free(run->err);
    g_free(run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Run, run_free)

static Run *
run_argv(const char *const *argv)
{
    g_autoptr(GSubprocessLauncher) launcher =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
    g_autoptr(GSubprocess) process = NULL;
    g_autoptr(GError) error = NULL;
    Run *run = g_new0(Run, 1);

    g_subprocess_launcher_setenv(launcher, "EINSORA_SERVER", daemon_->uri, TRUE);
    g_subprocess_launcher_setenv(launcher, "EINSORA_TOKEN", daemon_->owner_token, TRUE);
    g_subprocess_launcher_setenv(launcher, "XDG_CONFIG_HOME", config_home, TRUE);
    g_subprocess_launcher_setenv(launcher, "LC_ALL", "C.UTF-8", TRUE);
    g_subprocess_launcher_unsetenv(launcher, "EINSORA_DATA_DIR");
    process = g_subprocess_launcher_spawnv(launcher, argv, &error);
    g_assert_no_error(error);
    g_assert_true(g_subprocess_communicate_utf8(process, NULL, NULL, &run->out, &run->err, &error));
    g_assert_no_error(error);
    run->status = g_subprocess_get_exit_status(process);
    g_test_message("%s %s -> %d\n%s%s", argv[0], argv[1], run->status, run->out, run->err);
    return run;
}

/* einsora-daemon --data-dir @dir agent --join … as the other machine. */
static Run *
join(const char *dir, const char *token, const char *pin)
{
    return run_argv((const char *const[]){einsora_test_daemon_path(), "--data-dir", dir, "agent",
                                          "--join", daemon_->uri, "--token", token, "--fingerprint",
                                          pin, NULL});
}

/* A token, through `einsora machines add --json`. */
static gchar *
new_token(const char *name, gchar **command)
{
    g_autoptr(Run) run = run_argv((const char *const[]){g_getenv("EINSORA_CLI"), "--json",
                                                        "machines", "add", "--name", name, NULL});
    g_autoptr(JsonNode) node = json_from_string(run->out, NULL);
    JsonObject *answer;

    g_assert_cmpint(run->status, ==, 0);
    g_assert_nonnull(node);
    answer = json_node_get_object(node);
    if (command != NULL)
        *command = g_strdup(json_object_get_string_member(answer, "command"));
    g_assert_cmpstr(json_object_get_string_member(answer, "fingerprint"), ==, fingerprint);
    return g_strdup(json_object_get_string_member(answer, "token"));
}

static JsonObject *
find_machine(JsonNode *list, const char *id)
{
    JsonArray *machines = json_object_get_array_member(json_node_get_object(list), "machines");

    for (guint i = 0; i < json_array_get_length(machines); i++) {
        JsonObject *machine = json_array_get_object_element(machines, i);
        if (g_strcmp0(json_object_get_string_member(machine, "id"), id) == 0)
            return machine;
    }
    return NULL;
}

static gchar *
read_file(const char *dir, const char *name, guint expected_mode)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);
    gchar *contents = NULL;
    struct stat st;

    g_assert_cmpint(g_stat(path, &st), ==, 0);
    g_assert_cmpuint(st.st_mode & 0777, ==, expected_mode);
    g_assert_true(g_file_get_contents(path, &contents, NULL, NULL));
    return contents;
}

static gchar *
der_fingerprint(const char *pem)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GTlsCertificate) certificate = g_tls_certificate_new_from_pem(pem, -1, &error);
    g_autoptr(GByteArray) der = NULL;
    g_autofree gchar *hex = NULL;

    g_assert_no_error(error);
    g_object_get(certificate, "certificate", &der, NULL);
    hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, der->data, der->len);
    return g_strconcat("SHA256:", hex, NULL);
}

static void
test_enrol(void)
{
    g_autofree gchar *command = NULL;
    g_autofree gchar *token = new_token("gpu-box", &command);
    g_autofree gchar *other = einsora_test_dir_new();
    g_autofree gchar *agent_dir = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *certificate = NULL;
    g_autofree gchar *cert_fingerprint = NULL;
    g_autofree gchar *expected = NULL;
    struct stat st;

    expected = g_strdup_printf("einsora-daemon agent --join %s --token %s --fingerprint %s",
                               daemon_->uri, token, fingerprint);
    g_assert_cmpstr(command, ==, expected);
    g_assert_true(g_str_has_prefix(token, "enr_"));
    {
        g_autoptr(Run) run = join(other, token, fingerprint);
        g_assert_cmpint(run->status, ==, 0);
        g_assert_nonnull(strstr(run->out, "enrolled"));
    }
    agent_dir = g_build_filename(other, "agent", NULL);
    g_assert_cmpint(g_stat(agent_dir, &st), ==, 0);
    g_assert_cmpuint(st.st_mode & 0777, ==, 0700);
    machine_id = read_file(agent_dir, "machine-id", 0600);
    certificate = read_file(agent_dir, "certificate.pem", 0600);
    g_free(read_file(agent_dir, "key.pem", 0600));
    g_free(read_file(agent_dir, "ca.pem", 0600));
    g_free(read_file(agent_dir, "server.json", 0600));
    cert_fingerprint = der_fingerprint(certificate);
    {
        g_autoptr(EinsoraTestResponse) list = einsora_test_request(
            daemon_, "GET", "/v1/machines", daemon_->owner_token, NULL, NULL, NULL);
        JsonObject *machine = find_machine(list->json, machine_id);
        JsonObject *held;

        g_assert_nonnull(machine);
        g_assert_cmpstr(json_object_get_string_member(machine, "name"), ==, "gpu-box");
        g_assert_cmpstr(json_object_get_string_member(machine, "region"), ==, "local");
        held = json_object_get_object_member(machine, "certificate");
        g_assert_nonnull(held);
        g_assert_cmpstr(json_object_get_string_member(held, "fingerprint"), ==, cert_fingerprint);
    }
    /* Once: the same token from another machine is refused, and makes none. */
    {
        g_autofree gchar *third = einsora_test_dir_new();
        g_autoptr(Run) run = join(third, token, fingerprint);
        g_autoptr(EinsoraTestResponse) list = einsora_test_request(
            daemon_, "GET", "/v1/machines", daemon_->owner_token, NULL, NULL, NULL);
        JsonArray *machines =
            json_object_get_array_member(json_node_get_object(list->json), "machines");

        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "not a valid enrolment token"));
        g_assert_cmpuint(json_array_get_length(machines), ==, 2);
        einsora_test_dir_remove(third);
    }
    /* Enrolled already: refused before anything is sent. */
    {
        g_autoptr(Run) run = join(other, token, fingerprint);
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "enrolled already"));
    }
    /* Only the hash is stored; the token is never logged. */
    {
        g_autofree gchar *db_path = g_build_filename(daemon_->data_dir, "einsora.db", NULL);
        g_autofree gchar *db = NULL;
        gsize length = 0;
        g_autofree gchar *log = einsora_test_daemon_read_log(daemon_);

        g_assert_true(g_file_get_contents(db_path, &db, &length, NULL));
        g_assert_null(g_strstr_len(db, (gssize)length, token));
        g_assert_null(strstr(log, token));
    }
    /* Another tenant: no such machine. */
    {
        g_autoptr(EinsoraTestResponse) made =
            einsora_test_request(daemon_, "POST", "/v1/admin/accounts", daemon_->owner_token, JSON,
                                 "{\"email\":\"eve@else.example\",\"new_tenant\":\"else\"}", NULL);
        const char *eve = einsora_test_response_string(made, "secret");
        g_autofree gchar *path = g_strdup_printf("/v1/machines/%s", machine_id);
        g_autoptr(EinsoraTestResponse) hidden =
            einsora_test_request(daemon_, "GET", path, eve, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) list =
            einsora_test_request(daemon_, "GET", "/v1/machines", eve, NULL, NULL, NULL);

        g_assert_cmpuint(made->status, ==, 201);
        g_assert_cmpuint(hidden->status, ==, 404);
        g_assert_null(find_machine(list->json, machine_id));
    }
    /* einsora machines revoke, by a prefix of the ID: its certificate is
     * gone from the machine; a second time says there is none. */
    {
        g_autofree gchar *prefix = g_strndup(machine_id, 20);
        g_autoptr(Run) revoked = run_argv(
            (const char *const[]){g_getenv("EINSORA_CLI"), "machines", "revoke", prefix, NULL});
        g_autoptr(Run) again = run_argv(
            (const char *const[]){g_getenv("EINSORA_CLI"), "machines", "revoke", prefix, NULL});
        g_autoptr(EinsoraTestResponse) list = einsora_test_request(
            daemon_, "GET", "/v1/machines", daemon_->owner_token, NULL, NULL, NULL);

        g_assert_cmpint(revoked->status, ==, 0);
        g_assert_nonnull(strstr(revoked->out, "gpu-box is revoked"));
        g_assert_true(JSON_NODE_HOLDS_NULL(
            json_object_get_member(find_machine(list->json, machine_id), "certificate")));
        g_assert_cmpint(again->status, !=, 0);
        g_assert_nonnull(strstr(again->err, "no agent certificate"));
    }
    einsora_test_dir_remove(other);
}

/* A wrong fingerprint: nothing is sent, so the token still works; a bad
 * certificate request is refused and burns nothing either. */
static void
test_refusals_burn_nothing(void)
{
    g_autofree gchar *token = new_token("second", NULL);
    g_autofree gchar *other = einsora_test_dir_new();
    const char *wrong = "SHA256:1111111111111111111111111111111111111111111111111111111111111111";

    {
        g_autoptr(Run) run = join(other, token, wrong);
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "nothing was sent"));
        g_assert_nonnull(strstr(run->err, fingerprint));
    }
    for (guint i = 0; i < 2; i++) {
        g_autofree gchar *body = g_strdup_printf(
            "{\"token\":\"%s\",\"csr\":\"%s\"}", token,
            i == 0 ? "-----BEGIN CERTIFICATE REQUEST-----\\nAAAA\\n-----END CERTIFICATE "
                     "REQUEST-----\\n"
                   : "not a request");
        g_autoptr(EinsoraTestResponse) refused =
            einsora_test_request(daemon_, "POST", "/agent/v1/enroll", NULL, JSON, body, NULL);
        g_assert_cmpuint(refused->status, ==, 400);
    }
    /* A token nobody made, with a good request: refused. */
    {
        g_autofree gchar *third = einsora_test_dir_new();
        g_autoptr(Run) run =
            join(third, "enr_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", fingerprint);
        g_assert_cmpint(run->status, ==, 1);
        g_assert_nonnull(strstr(run->err, "not a valid enrolment token"));
        einsora_test_dir_remove(third);
    }
    {
        g_autoptr(Run) run = join(other, token, fingerprint);
        g_assert_cmpint(run->status, ==, 0);
    }
    einsora_test_dir_remove(other);
}

/* Plain HTTP: no tokens, and nothing to enrol with. */
static void
test_plain_daemon_refuses(void)
{
    g_autoptr(EinsoraTestDaemon) plain = einsora_test_daemon_new();
    g_autoptr(EinsoraTestResponse) refused = NULL;

    einsora_test_daemon_start(plain);
    refused = einsora_test_request(plain, "POST", "/v1/machines/enrolments", plain->owner_token,
                                   JSON, "{}", NULL);
    g_assert_cmpuint(refused->status, ==, 409);
    g_assert_nonnull(strstr(refused->body, "TLS"));
    einsora_test_daemon_stop(plain);
}

int
main(int argc, char **argv)
{
    int status;

    g_test_init(&argc, &argv, NULL);
    if (!g_tls_backend_supports_tls(g_tls_backend_get_default())) {
        g_test_skip("GLib has no TLS backend here: install glib-networking");
        return g_test_run();
    }
    config_home = einsora_test_dir_new();
    daemon_ = einsora_test_daemon_new();
    einsora_test_daemon_setenv(daemon_, "EINSORA_TLS", "on");
    einsora_test_daemon_start(daemon_);
    {
        g_autofree gchar *log = einsora_test_daemon_read_log(daemon_);
        const char *at = g_strrstr(log, ", fingerprint SHA256:");
        g_assert_nonnull(at);
        fingerprint = g_strndup(at + strlen(", fingerprint "), strlen("SHA256:") + 64);
    }
    {
        g_autoptr(Run) login = run_argv((const char *const[]){
            g_getenv("EINSORA_CLI"), "login", daemon_->uri, "--fingerprint", fingerprint, NULL});
        g_assert_cmpint(login->status, ==, 0);
    }
    g_test_add_func("/enrol/machines-add-and-join", test_enrol);
    g_test_add_func("/enrol/refusals-burn-nothing", test_refusals_burn_nothing);
    g_test_add_func("/enrol/plain-daemon-refuses", test_plain_daemon_refuses);
    status = g_test_run();
    einsora_test_daemon_stop(daemon_);
    einsora_test_daemon_free(daemon_);
    einsora_test_dir_remove(config_home);
    g_free(config_home);
    g_free(fingerprint);
    return status;
}
