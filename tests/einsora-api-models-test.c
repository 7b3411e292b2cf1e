/* /v1/model-store against the real einsora-daemon (docs/adr/0033): add
 * the small valid GGUF and watch its import, get and list it, two names
 * sharing one file, remove; bad input refused with nothing stored; a
 * model an endpoint serves can't be removed; another tenant lists but
 * neither adds, removes nor sees the owner's imports; an Ollama model
 * (a fake Ollama directory) imported by name, linked rather than copied. */
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-test-daemon.h"
#include "einsora-test-dir.h"

#define JSON "application/json"

static EinsoraTestDaemon *server_daemon;
static gchar *token_b;
static gchar *seed_path;
static gchar *seed_hex;
static gint64 seed_size;
static gchar *ollama_dir;

static EinsoraTestResponse *
call(const char *method, const char *path, const char *token, const char *body)
{
    return einsora_test_request(server_daemon, method, path, token, JSON, body, NULL);
}

static EinsoraTestResponse *
owner_call(const char *method, const char *path, const char *body)
{
    return call(method, path, server_daemon->owner_token, body);
}

static void
assert_error(EinsoraTestResponse *response, guint status, const char *code, const char *message)
{
    JsonObject *error;

    if (response->status != status)
        g_test_message("body: %s", response->body);
    g_assert_cmpuint(response->status, ==, status);
    g_assert_cmpstr(einsora_test_response_error_code(response), ==, code);
    error = json_object_get_object_member(json_node_get_object(response->json), "error");
    if (message != NULL)
        g_assert_nonnull(strstr(json_object_get_string_member(error, "message"), message));
}

static gchar *
import_body(const char *name, const char *source)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, name);
    json_builder_set_member_name(builder, "source");
    json_builder_add_string_value(builder, source);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    return json_to_string(root, FALSE);
}

static JsonObject *
object_of(EinsoraTestResponse *response)
{
    g_assert_nonnull(response->json);
    return json_node_get_object(response->json);
}

/* Polls the import until it has finished; its last answer. */
static EinsoraTestResponse *
wait_import(const char *location)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(EinsoraTestResponse) got = owner_call("GET", location, NULL);

        g_assert_cmpuint(got->status, ==, 200);
        if (g_strcmp0(einsora_test_response_string(got, "state"), "importing") != 0)
            return g_steal_pointer(&got);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(10 * 1000);
    }
}

/* POSTs the import, checks the 202 and its Location, and waits for it. */
static EinsoraTestResponse *
import(const char *name, const char *source)
{
    g_autofree gchar *body = import_body(name, source);
    g_autoptr(EinsoraTestResponse) started = owner_call("POST", "/v1/model-store", body);
    g_autofree gchar *expected = NULL;
    const char *location;

    if (started->status != 202)
        g_test_message("body: %s", started->body);
    g_assert_cmpuint(started->status, ==, 202);
    g_assert_cmpstr(einsora_test_response_string(started, "name"), ==, name);
    location = soup_message_headers_get_one(started->headers, "Location");
    expected =
        g_strdup_printf("/v1/model-store/imports/%s", einsora_test_response_string(started, "id"));
    g_assert_cmpstr(location, ==, expected);
    return wait_import(location);
}

static guint
count_files(const char *sub)
{
    g_autofree gchar *path = g_build_filename(server_daemon->data_dir, "models", sub, NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    guint n = 0;

    g_assert_nonnull(dir);
    while (g_dir_read_name(dir) != NULL)
        n++;
    return n;
}

static gchar *
blob_path(void)
{
    g_autofree gchar *name = g_strdup_printf("sha256-%s", seed_hex);

    return g_build_filename(server_daemon->data_dir, "models", "blobs", name, NULL);
}

static guint
listed_count(const char *token)
{
    g_autoptr(EinsoraTestResponse) list = call("GET", "/v1/model-store", token, NULL);

    g_assert_cmpuint(list->status, ==, 200);
    return json_array_get_length(json_object_get_array_member(object_of(list), "models"));
}

static void
assert_store_empty(void)
{
    g_assert_cmpuint(listed_count(server_daemon->owner_token), ==, 0);
    g_assert_cmpuint(count_files("blobs"), ==, 0);
    g_assert_cmpuint(count_files("manifests"), ==, 0);
}

static void
test_add_watch_get_remove(void)
{
    g_autofree gchar *digest = g_strdup_printf("sha256:%s", seed_hex);
    g_autofree gchar *blob = blob_path();
    struct stat st;

    assert_store_empty();
    {
        g_autoptr(EinsoraTestResponse) done = import("tiny", seed_path);
        JsonObject *o = object_of(done);

        g_assert_cmpstr(json_object_get_string_member(o, "state"), ==, "done");
        g_assert_cmpint(json_object_get_int_member(o, "bytes_done"), ==, seed_size);
        g_assert_cmpint(json_object_get_int_member(o, "bytes_total"), ==, seed_size);
        g_assert_cmpstr(json_object_get_string_member(o, "digest"), ==, digest);
        g_assert_true(json_object_get_null_member(o, "error"));
    }
    {
        g_autoptr(EinsoraTestResponse) got = owner_call("GET", "/v1/model-store/tiny", NULL);
        JsonObject *o = object_of(got);

        g_assert_cmpuint(got->status, ==, 200);
        g_assert_cmpstr(json_object_get_string_member(o, "name"), ==, "tiny");
        g_assert_cmpstr(json_object_get_string_member(o, "digest"), ==, digest);
        g_assert_cmpint(json_object_get_int_member(o, "size"), ==, seed_size);
        g_assert_cmpstr(json_object_get_string_member(o, "format"), ==, "gguf");
        g_assert_cmpstr(json_object_get_string_member(o, "architecture"), ==, "llama");
        g_assert_cmpstr(json_object_get_string_member(o, "source"), ==, seed_path);
    }
    /* The file is readable (a container's user reads it through a
     * read-only bind); the store's directories keep it the daemon
     * user's. */
    g_assert_cmpint(g_stat(blob, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 0777, ==, 0644);
    g_assert_cmpint(st.st_size, ==, seed_size);

    /* The same name and content again: harmless. Another name for it:
     * one file, two manifests. */
    {
        g_autoptr(EinsoraTestResponse) again = import("tiny", seed_path);
        g_autoptr(EinsoraTestResponse) alias = import("tiny:alias", seed_path);

        g_assert_cmpstr(einsora_test_response_string(again, "state"), ==, "done");
        g_assert_cmpstr(einsora_test_response_string(alias, "state"), ==, "done");
    }
    g_assert_cmpuint(listed_count(server_daemon->owner_token), ==, 2);
    g_assert_cmpuint(count_files("blobs"), ==, 1);
    g_assert_cmpuint(count_files("manifests"), ==, 2);

    /* The file goes with its last name. */
    {
        g_autoptr(EinsoraTestResponse) removed = owner_call("DELETE", "/v1/model-store/tiny", NULL);
        g_autoptr(EinsoraTestResponse) gone = owner_call("GET", "/v1/model-store/tiny", NULL);

        g_assert_cmpuint(removed->status, ==, 204);
        assert_error(gone, 404, "not_found", "tiny");
        g_assert_true(g_file_test(blob, G_FILE_TEST_IS_REGULAR));
    }
    {
        g_autoptr(EinsoraTestResponse) removed =
            owner_call("DELETE", "/v1/model-store/tiny:alias", NULL);
        g_autoptr(EinsoraTestResponse) twice = owner_call("DELETE", "/v1/model-store/tiny", NULL);

        g_assert_cmpuint(removed->status, ==, 204);
        assert_error(twice, 404, "not_found", NULL);
        g_assert_false(g_file_test(blob, G_FILE_TEST_EXISTS));
    }
    assert_store_empty();
}

/* Each refused with the documented error shape, at once, and nothing
 * stored; a file that isn't GGUF fails its import with the validator's
 * message, and nothing is left either. */
static void
test_bad_input_changes_nothing(void)
{
    g_autofree gchar *unreadable = g_build_filename(server_daemon->dir, "unreadable.gguf", NULL);
    g_autofree gchar *b_name = import_body("Tiny", seed_path);
    g_autofree gchar *b_slash = import_body("../etc", seed_path);
    g_autofree gchar *b_empty = import_body("", seed_path);
    g_autofree gchar *b_relative = import_body("tiny", "tests/fuzz/corpus/gguf/seed-00");
    g_autofree gchar *b_missing = import_body("tiny", "/nonexistent/tiny.gguf");
    g_autofree gchar *b_dir = import_body("tiny", server_daemon->dir);
    g_autofree gchar *b_unreadable = import_body("tiny", unreadable);
    g_autofree gchar *b_scheme = import_body("tiny", "ftp://example.com/tiny.gguf");
    g_autofree gchar *b_ollama = import_body("tiny", "ollama:../../etc:passwd");
    const struct {
        const char *body;
        const char *message;
    } table[] = {
        {b_name, "name must be"},
        {b_slash, "name must be"},
        {b_empty, "name must be"},
        {b_relative, "absolute path"},
        {b_missing, "isn't a file the daemon can read"},
        {b_dir, "isn't a file the daemon can read"},
        {b_unreadable, "isn't a file the daemon can read"},
        {b_scheme, NULL},
        {b_ollama, NULL},
        {"{\"name\": \"tiny\"}", "field \"source\" is required"},
        {"{\"name\": \"tiny\", \"source\": 7}", "field \"source\" must be a string"},
        {"{\"name\": \"tiny\", \"source\": \"/x\", \"colour\": \"red\"}", "unknown field"},
        {"{not json", "not valid JSON"},
    };

    g_assert_true(g_file_set_contents(unreadable, "GGUF", 4, NULL));
    g_assert_cmpint(g_chmod(unreadable, 0), ==, 0);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_autoptr(EinsoraTestResponse) refused = NULL;

        /* root reads a file whatever its mode: that row proves nothing. */
        if (table[i].body == b_unreadable && geteuid() == 0) {
            g_test_message("running as root: the unreadable file is readable");
            continue;
        }
        g_test_message("%s", table[i].body);
        refused = owner_call("POST", "/v1/model-store", table[i].body);
        assert_error(refused, 400, "invalid_request", table[i].message);
    }
    assert_store_empty();

    /* Not GGUF (this test's own binary): accepted to be read, then failed. */
    {
        g_autoptr(EinsoraTestResponse) failed = NULL;
        g_autofree gchar *self = g_file_read_link("/proc/self/exe", NULL);

        g_assert_nonnull(self);
        failed = import("nope", self);
        g_assert_cmpstr(einsora_test_response_string(failed, "state"), ==, "failed");
        g_assert_nonnull(
            strstr(einsora_test_response_string(failed, "error"), "not a usable GGUF model"));
        g_assert_true(json_object_get_null_member(object_of(failed), "digest"));
    }
    assert_store_empty();
}

/* A model an endpoint serves stays until the endpoint is gone; an
 * endpoint must name a model in the store, and only an endpoint may. */
static void
test_served_model_stays(void)
{
    g_autofree gchar *blob = blob_path();
    g_autoptr(EinsoraTestResponse) done = import("served", seed_path);
    g_autoptr(EinsoraTestResponse) endpoint = owner_call(
        "POST", "/v1/workloads",
        "{\"kind\": \"endpoint\", \"name\": \"served-endpoint\", \"gpu_class\": \"cpu-2c-4g\", "
        "\"model\": \"served\"}");
    g_autoptr(EinsoraTestResponse) unknown = owner_call(
        "POST", "/v1/workloads",
        "{\"kind\": \"endpoint\", \"gpu_class\": \"cpu-2c-4g\", \"model\": \"missing\"}");
    g_autoptr(EinsoraTestResponse) notebook =
        owner_call("POST", "/v1/workloads",
                   "{\"kind\": \"notebook\", \"gpu_class\": \"cpu-2c-4g\", \"image\": "
                   "\"jupyter-notebook\", \"model\": \"served\"}");
    g_autoptr(EinsoraTestResponse) in_use = NULL;
    g_autoptr(EinsoraTestResponse) still = NULL;

    g_assert_cmpstr(einsora_test_response_string(done, "state"), ==, "done");
    if (endpoint->status != 201)
        g_test_message("body: %s", endpoint->body);
    g_assert_cmpuint(endpoint->status, ==, 201);
    g_assert_cmpstr(einsora_test_response_string(endpoint, "model"), ==, "served");
    assert_error(unknown, 400, "invalid_request",
                 "model missing isn't in this installation's model store");
    assert_error(notebook, 400, "invalid_request", "model");

    in_use = owner_call("DELETE", "/v1/model-store/served", NULL);
    assert_error(in_use, 409, "conflict", "served by 1 endpoint");
    still = owner_call("GET", "/v1/model-store/served", NULL);
    g_assert_cmpuint(still->status, ==, 200);
    g_assert_true(g_file_test(blob, G_FILE_TEST_IS_REGULAR));
}

/* Anyone signed in lists; only the tenant that owns the daemon's machine
 * adds and removes (its files), and another tenant's import is 404. */
static void
test_other_tenant(void)
{
    g_autofree gchar *body = import_body("theirs", seed_path);
    g_autofree gchar *started_location = NULL;
    guint owners = listed_count(server_daemon->owner_token);

    g_assert_cmpuint(owners, >, 0);
    g_assert_cmpuint(listed_count(token_b), ==, owners);
    {
        g_autoptr(EinsoraTestResponse) added = call("POST", "/v1/model-store", token_b, body);
        g_autoptr(EinsoraTestResponse) removed =
            call("DELETE", "/v1/model-store/served", token_b, NULL);
        g_autoptr(EinsoraTestResponse) found = call("GET", "/v1/local-models", token_b, NULL);

        assert_error(added, 403, "forbidden", "only the tenant that owns this machine");
        assert_error(removed, 403, "forbidden", NULL);
        assert_error(found, 403, "forbidden", NULL);
    }
    {
        g_autoptr(EinsoraTestResponse) started = owner_call("POST", "/v1/model-store", body);
        g_autoptr(EinsoraTestResponse) peeked = NULL;

        g_assert_cmpuint(started->status, ==, 202);
        started_location = g_strdup(soup_message_headers_get_one(started->headers, "Location"));
        peeked = call("GET", started_location, token_b, NULL);
        assert_error(peeked, 404, "not_found", NULL);
        g_clear_pointer(&peeked, einsora_test_response_free);
        peeked = wait_import(started_location);
        g_assert_cmpstr(einsora_test_response_string(peeked, "state"), ==, "done");
    }
    {
        g_autoptr(EinsoraTestResponse) anonymous = call("GET", "/v1/model-store", NULL, NULL);
        g_autoptr(EinsoraTestResponse) still = owner_call("GET", "/v1/model-store/served", NULL);

        g_assert_cmpuint(anonymous->status, ==, 401);
        g_assert_cmpuint(still->status, ==, 200);
    }
}

/* An Ollama model, found in $OLLAMA_MODELS as `ollama pull` leaves it,
 * imported by name: the store's file is Ollama's, linked. */
static void
test_ollama_by_name(void)
{
    g_autofree gchar *theirs_name = g_strdup_printf("sha256-%s", seed_hex);
    g_autofree gchar *theirs = g_build_filename(ollama_dir, "blobs", theirs_name, NULL);
    g_autofree gchar *ours = blob_path();
    struct stat a, b;

    {
        g_autoptr(EinsoraTestResponse) found = owner_call("GET", "/v1/local-models", NULL);
        JsonArray *models;
        gboolean seen = FALSE;

        g_assert_cmpuint(found->status, ==, 200);
        models = json_object_get_array_member(object_of(found), "models");
        for (guint i = 0; i < json_array_get_length(models); i++) {
            JsonObject *m = json_array_get_object_element(models, i);
            if (g_strcmp0(json_object_get_string_member(m, "source"), "ollama:tiny:1m") == 0) {
                g_assert_cmpstr(json_object_get_string_member(m, "path"), ==, theirs);
                g_assert_cmpint(json_object_get_int_member(m, "size"), ==, seed_size);
                seen = TRUE;
            }
        }
        g_assert_true(seen);
    }
    assert_store_empty();
    {
        g_autoptr(EinsoraTestResponse) done = import("from-ollama", "ollama:tiny:1m");
        g_autoptr(EinsoraTestResponse) got = owner_call("GET", "/v1/model-store/from-ollama", NULL);

        g_assert_cmpstr(einsora_test_response_string(done, "state"), ==, "done");
        g_assert_cmpstr(einsora_test_response_string(got, "source"), ==, "ollama:tiny:1m");
    }
    /* One file on the disk: Ollama's, linked (the test directory is one
     * file system), and left as Ollama keeps it. */
    g_assert_cmpint(g_stat(theirs, &a), ==, 0);
    g_assert_cmpint(g_stat(ours, &b), ==, 0);
    g_assert_cmpuint(a.st_ino, ==, b.st_ino);
    g_assert_cmpint(a.st_mode & 0777, ==, 0644);
    /* Removing ours leaves theirs. */
    {
        g_autoptr(EinsoraTestResponse) removed =
            owner_call("DELETE", "/v1/model-store/from-ollama", NULL);
        g_assert_cmpuint(removed->status, ==, 204);
    }
    g_assert_false(g_file_test(ours, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(theirs, G_FILE_TEST_IS_REGULAR));
    assert_store_empty();
}

static void
add_ollama_model(void)
{
    g_autofree gchar *contents = NULL;
    gsize length = 0;
    g_autofree gchar *blob_name = g_strdup_printf("sha256-%s", seed_hex);
    g_autofree gchar *blob = g_build_filename(ollama_dir, "blobs", blob_name, NULL);
    g_autofree gchar *manifest_dir =
        g_build_filename(ollama_dir, "manifests", "registry.ollama.ai", "library", "tiny", NULL);
    g_autofree gchar *manifest = g_build_filename(manifest_dir, "1m", NULL);
    g_autofree gchar *json = g_strdup_printf("{\"schemaVersion\": 2, \"layers\": [{\"mediaType\": "
                                             "\"application/vnd.ollama.image.model\", \"digest\": "
                                             "\"sha256:%s\", \"size\": %" G_GINT64_FORMAT "}]}",
                                             seed_hex, seed_size);
    g_autofree gchar *blobs = g_path_get_dirname(blob);

    g_assert_true(g_file_get_contents(seed_path, &contents, &length, NULL));
    g_assert_cmpint(g_mkdir_with_parents(blobs, 0755), ==, 0);
    g_assert_cmpint(g_mkdir_with_parents(manifest_dir, 0755), ==, 0);
    g_assert_true(g_file_set_contents(blob, contents, (gssize)length, NULL));
    g_assert_cmpint(g_chmod(blob, 0644), ==, 0);
    g_assert_true(g_file_set_contents(manifest, json, -1, NULL));
}

int
main(int argc, char **argv)
{
    g_autofree gchar *home = NULL;
    gchar *contents = NULL;
    gsize length = 0;
    int status;

    g_test_init(&argc, &argv, NULL);
    seed_path = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "fuzz", "corpus", "gguf",
                                 "seed-00", NULL);
    g_assert_true(g_file_get_contents(seed_path, &contents, &length, NULL));
    seed_hex = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)contents, length);
    seed_size = (gint64)length;
    g_free(contents);

    server_daemon = einsora_test_daemon_new();
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_WAKE", "off");
    /* Other tools' models only from the fake Ollama directory: a home of
     * the test's own, where nothing else is. */
    home = g_build_filename(server_daemon->dir, "home", NULL);
    ollama_dir = g_build_filename(server_daemon->dir, "ollama-models", NULL);
    g_assert_cmpint(g_mkdir_with_parents(home, 0700), ==, 0);
    add_ollama_model();
    einsora_test_daemon_setenv(server_daemon, "HOME", home);
    einsora_test_daemon_setenv(server_daemon, "OLLAMA_MODELS", ollama_dir);
    einsora_test_daemon_start(server_daemon);
    einsora_test_daemon_stop(server_daemon);
    token_b =
        einsora_test_daemon_create_account(server_daemon, "globex", "bob@globex.example", NULL);
    einsora_test_daemon_start(server_daemon);

    g_test_add_func("/api/model-store/add-watch-get-remove", test_add_watch_get_remove);
    g_test_add_func("/api/model-store/ollama-by-name-linked", test_ollama_by_name);
    g_test_add_func("/api/model-store/bad-input-changes-nothing", test_bad_input_changes_nothing);
    g_test_add_func("/api/model-store/served-model-stays", test_served_model_stays);
    g_test_add_func("/api/model-store/other-tenant-lists-only", test_other_tenant);
    status = g_test_run();

    einsora_test_daemon_stop(server_daemon);
    einsora_test_daemon_free(server_daemon);
    g_free(token_b);
    g_free(seed_path);
    g_free(seed_hex);
    g_free(ollama_dir);
    return status;
}
