/* GET /v1/catalog against the real einsora-daemon, which loads
 * tests/fixtures/catalog/tenant-view.json through EINSORA_CATALOG: the
 * answer follows the installation's catalog, shows only what a tenant
 * needs (docs/adr/0017-catalog-endpoint.md), and carries the caller's
 * tenant's GPU quota. Tenant A is Solo's first-run owner (64 GPUs per GPU
 * class); tenant B an account made with `einsora-daemon account create`,
 * given a quota and a second user (a member) straight in the database
 * while the daemon is stopped, as no API does that yet. */
#include <sqlite3.h>

#include "einsora-test-daemon.h"

#define JSON "application/json"
#define B_EMAIL "bob@globex.example"
/* The member of tenant B that the test adds; IDs are fixed UUIDv7s. */
#define MEMBER_USER_ID "0190b5d2-7c4e-7abc-8def-0123456789ab"
#define MEMBER_TOKEN_ID "0190b5d2-7c4e-7abc-8def-0123456789ac"
#define MEMBER_TOKEN "tsk_catalogtestmemberAAAAAAAAAAAAAAAAAAAAAAAA"
#define B_GPU_ONE_QUOTA 3

static EinsoraTestDaemon *server_daemon;
static gchar *token_b;
static JsonNode *fixture; /* the catalog file the daemon loaded */

static const char *
fixture_path(void)
{
    static gchar *path;
    if (path == NULL)
        path = g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "tests", "fixtures", "catalog",
                                "tenant-view.json", NULL);
    return path;
}

static EinsoraTestResponse *
get_catalog(const char *token)
{
    g_autoptr(EinsoraTestResponse) response =
        einsora_test_request(server_daemon, "GET", "/v1/catalog", token, NULL, NULL, NULL);

    if (response->status != 200)
        g_test_message("body: %s", response->body);
    return g_steal_pointer(&response);
}

static JsonObject *
root_of(EinsoraTestResponse *response)
{
    g_assert_cmpuint(response->status, ==, 200);
    g_assert_nonnull(response->json);
    g_assert_true(JSON_NODE_HOLDS_OBJECT(response->json));
    return json_node_get_object(response->json);
}

static JsonObject *
find_named(JsonArray *array, const char *name)
{
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonObject *object = json_array_get_object_element(array, i);
        if (g_strcmp0(json_object_get_string_member(object, "name"), name) == 0)
            return object;
    }
    g_error("no entry named %s", name);
    return NULL;
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

/* The string elements of @array, sorted and joined by ",". */
static gchar *
joined(JsonArray *array)
{
    g_autoptr(GPtrArray) items = g_ptr_array_new();

    for (guint i = 0; array != NULL && i < json_array_get_length(array); i++)
        g_ptr_array_add(items, (gpointer)json_array_get_string_element(array, i));
    g_ptr_array_sort(items, compare_strings);
    g_ptr_array_add(items, NULL);
    return g_strjoinv(",", (gchar **)items->pdata);
}

static gchar *
joined_members(JsonObject *object)
{
    g_autoptr(GList) members = json_object_get_members(object);
    g_autoptr(JsonArray) names = json_array_new();

    for (GList *l = members; l != NULL; l = l->next)
        json_array_add_string_element(names, l->data);
    return joined(names);
}

static void
assert_members(JsonObject *object, const char *expected)
{
    g_autofree gchar *have = joined_members(object);
    g_assert_cmpstr(have, ==, expected);
}

static void
class_quota(JsonObject *root, const char *name, gint64 *quota, gint64 *held)
{
    JsonObject *klass = find_named(json_object_get_array_member(root, "classes"), name);

    *quota = json_object_get_int_member(klass, "quota");
    *held = json_object_get_int_member(klass, "held");
}

static gchar *
create_workload(const char *token, const char *kind, const char *gpu_class, const char *image,
                const char *region)
{
    g_autofree gchar *body = g_strdup_printf("{\"kind\": \"%s\", \"gpu_class\": \"%s\", "
                                             "\"image\": \"%s\", \"region\": \"%s\"}",
                                             kind, gpu_class, image, region);
    g_autoptr(EinsoraTestResponse) response =
        einsora_test_request(server_daemon, "POST", "/v1/workloads", token, JSON, body, NULL);

    if (response->status != 201)
        g_test_message("body: %s", response->body);
    g_assert_cmpuint(response->status, ==, 201);
    return g_strdup(einsora_test_response_string(response, "id"));
}

static void
test_authentication(void)
{
    g_autoptr(EinsoraTestResponse) none = get_catalog(NULL);
    g_autoptr(EinsoraTestResponse) wrong = get_catalog("tsk_nottherightone");

    g_assert_cmpuint(none->status, ==, 401);
    g_assert_cmpstr(einsora_test_response_error_code(none), ==, "unauthenticated");
    g_assert_cmpuint(wrong->status, ==, 401);
    g_assert_cmpstr(einsora_test_response_error_code(wrong), ==, "unauthenticated");
    g_assert_null(strstr(none->body, "fx-"));
    g_assert_null(strstr(wrong->body, "fx-"));
    {
        /* No query parameters, no body. */
        g_autoptr(EinsoraTestResponse) query =
            einsora_test_request(server_daemon, "GET", "/v1/catalog?region=north",
                                 server_daemon->owner_token, NULL, NULL, NULL);
        g_autoptr(EinsoraTestResponse) post = einsora_test_request(
            server_daemon, "POST", "/v1/catalog", server_daemon->owner_token, JSON, "{}", NULL);
        g_assert_cmpuint(query->status, ==, 400);
        g_assert_cmpuint(post->status, ==, 405);
    }
}

/* Every region, class and image of the file, in its order, with the
 * fields a tenant sees; kinds are those some image serves. */
static void
test_follows_installation_catalog(void)
{
    g_autoptr(EinsoraTestResponse) response = get_catalog(server_daemon->owner_token);
    JsonObject *root = root_of(response);
    JsonObject *file = json_node_get_object(fixture);
    JsonArray *want_regions = json_object_get_array_member(file, "regions");
    JsonArray *want_classes = json_object_get_array_member(file, "classes");
    JsonArray *want_images = json_object_get_array_member(file, "images");
    JsonArray *want_models = json_object_get_array_member(file, "gpu_models");
    JsonArray *regions = json_object_get_array_member(root, "regions");
    JsonArray *classes = json_object_get_array_member(root, "classes");
    JsonArray *images = json_object_get_array_member(root, "images");
    g_autofree gchar *kinds = joined(json_object_get_array_member(root, "kinds"));
    g_autoptr(JsonArray) all_regions = json_array_new();

    /* Not the built-in catalog. */
    g_assert_null(strstr(response->body, "cpu-2c-4g"));
    g_assert_null(strstr(response->body, "jupyter-notebook"));

    g_assert_cmpuint(json_array_get_length(regions), ==, json_array_get_length(want_regions));
    for (guint i = 0; i < json_array_get_length(want_regions); i++) {
        JsonObject *want = json_array_get_object_element(want_regions, i);
        JsonObject *have = json_array_get_object_element(regions, i);
        const char *description =
            json_object_get_string_member_with_default(want, "description", NULL);

        json_array_add_string_element(all_regions, json_object_get_string_member(want, "name"));
        g_assert_cmpstr(json_object_get_string_member(have, "name"), ==,
                        json_object_get_string_member(want, "name"));
        g_assert_cmpstr(json_object_get_string_member(have, "description"), ==,
                        description != NULL ? description : "");
        /* The first region is the default. */
        g_assert_cmpint(json_object_get_boolean_member(have, "default"), ==, i == 0);
    }

    g_assert_cmpuint(json_array_get_length(classes), ==, json_array_get_length(want_classes));
    for (guint i = 0; i < json_array_get_length(want_classes); i++) {
        JsonObject *want = json_array_get_object_element(want_classes, i);
        JsonObject *have = json_array_get_object_element(classes, i);
        const char *name = json_object_get_string_member(want, "name");
        g_autoptr(JsonArray) models = json_array_new();
        g_autofree gchar *want_models_text = NULL;
        g_autofree gchar *have_models = NULL;
        g_autofree gchar *want_in = NULL;
        g_autofree gchar *have_in = NULL;

        g_assert_cmpstr(json_object_get_string_member(have, "name"), ==, name);
        g_assert_cmpstr(json_object_get_string_member(have, "accelerator"), ==,
                        json_object_get_string_member(want, "accelerator"));
        g_assert_cmpint(json_object_get_int_member(have, "cpus"), ==,
                        json_object_get_int_member(want, "cpus"));
        g_assert_cmpint(json_object_get_int_member(have, "memory_mib"), ==,
                        json_object_get_int_member(want, "memory_mib"));
        g_assert_cmpint(json_object_get_int_member(have, "gpus"), ==,
                        json_object_get_int_member(want, "devices"));
        for (guint m = 0; m < json_array_get_length(want_models); m++) {
            JsonObject *model = json_array_get_object_element(want_models, m);
            if (g_strcmp0(json_object_get_string_member(model, "class"), name) == 0)
                json_array_add_string_element(models,
                                              json_object_get_string_member(model, "model"));
        }
        want_models_text = joined(models);
        have_models = joined(json_object_get_array_member(have, "gpu_models"));
        g_assert_cmpstr(have_models, ==, want_models_text);
        /* No list in the file: every region, by name. */
        want_in = joined(json_object_has_member(want, "regions")
                             ? json_object_get_array_member(want, "regions")
                             : all_regions);
        have_in = joined(json_object_get_array_member(have, "regions"));
        g_assert_cmpstr(have_in, ==, want_in);
    }

    g_assert_cmpuint(json_array_get_length(images), ==, json_array_get_length(want_images));
    for (guint i = 0; i < json_array_get_length(want_images); i++) {
        JsonObject *want = json_array_get_object_element(want_images, i);
        JsonObject *have = json_array_get_object_element(images, i);
        const char *description =
            json_object_get_string_member_with_default(want, "description", NULL);
        g_autofree gchar *want_kinds = joined(json_object_get_array_member(want, "kinds"));
        g_autofree gchar *have_kinds = joined(json_object_get_array_member(have, "kinds"));
        g_autofree gchar *want_accelerators =
            joined_members(json_object_get_object_member(want, "runtimes"));
        g_autofree gchar *have_accelerators =
            joined(json_object_get_array_member(have, "accelerators"));

        g_assert_cmpstr(json_object_get_string_member(have, "name"), ==,
                        json_object_get_string_member(want, "name"));
        g_assert_cmpstr(json_object_get_string_member(have, "description"), ==,
                        description != NULL ? description : "");
        g_assert_cmpstr(have_kinds, ==, want_kinds);
        g_assert_cmpstr(have_accelerators, ==, want_accelerators);
    }

    /* The fixture's images serve notebooks and endpoints, no VMs. */
    g_assert_cmpstr(kinds, ==, "endpoint,notebook");
}

/* Fails on any member named in @forbidden, at any depth. */
static void
assert_no_member(JsonNode *node, const char *const *forbidden, const char *where)
{
    if (JSON_NODE_HOLDS_ARRAY(node)) {
        JsonArray *array = json_node_get_array(node);
        for (guint i = 0; i < json_array_get_length(array); i++)
            assert_no_member(json_array_get_element(array, i), forbidden, where);
    } else if (JSON_NODE_HOLDS_OBJECT(node)) {
        JsonObject *object = json_node_get_object(node);
        g_autoptr(GList) members = json_object_get_members(object);
        for (GList *l = members; l != NULL; l = l->next) {
            if (g_strv_contains(forbidden, l->data))
                g_error("%s: operator-only member \"%s\" in the answer", where,
                        (const char *)l->data);
            assert_no_member(json_object_get_member(object, l->data), forbidden, where);
        }
    }
}

/* Each image says which drivers run it (sim never: it runs nothing), and
 * whether a machine here offers one now: this daemon has no driver, so
 * none does. */
static void
test_image_drivers(void)
{
    g_autoptr(EinsoraTestResponse) response = get_catalog(server_daemon->owner_token);
    JsonArray *images = json_object_get_array_member(root_of(response), "images");

    g_assert_cmpuint(json_array_get_length(images), ==, 2);
    for (guint i = 0; i < json_array_get_length(images); i++) {
        JsonObject *image = json_array_get_object_element(images, i);
        JsonArray *drivers = json_object_get_array_member(image, "drivers");

        g_test_message("image %s", json_object_get_string_member(image, "name"));
        g_assert_cmpuint(json_array_get_length(drivers), ==, 1);
        g_assert_cmpstr(json_array_get_string_element(drivers, 0), ==, "docker");
        g_assert_false(json_object_get_boolean_member(image, "runs_here"));
    }
}

static void
test_no_operator_fields(void)
{
    const char *const forbidden[] = {
        "driver",     "driver_refs",     "runtimes", "reference", "isolation",
        "limit",      "max_per_machine", "version",  "origin",    "machines",
        "machine_id", "vendor",          "class",    "devices",   NULL,
    };
    const char *const tokens[] = {server_daemon->owner_token, token_b, MEMBER_TOKEN};

    for (guint t = 0; t < G_N_ELEMENTS(tokens); t++) {
        g_autoptr(EinsoraTestResponse) response = get_catalog(tokens[t]);
        JsonObject *root = root_of(response);
        JsonArray *classes = json_object_get_array_member(root, "classes");
        JsonArray *images = json_object_get_array_member(root, "images");
        JsonArray *regions = json_object_get_array_member(root, "regions");

        assert_no_member(response->json, forbidden, "GET /v1/catalog");
        /* Exactly the members ADR 0017 lists, at every level. */
        assert_members(root, "classes,images,kinds,regions");
        for (guint i = 0; i < json_array_get_length(regions); i++)
            assert_members(json_array_get_object_element(regions, i), "default,description,name");
        for (guint i = 0; i < json_array_get_length(classes); i++)
            assert_members(json_array_get_object_element(classes, i),
                           "accelerator,cpus,gpu_models,gpus,held,memory_mib,name,quota,regions");
        for (guint i = 0; i < json_array_get_length(images); i++)
            assert_members(json_array_get_object_element(images, i),
                           "accelerators,description,drivers,kinds,name,runs_here");
        /* Nor any of their values: runtime references, isolation,
         * memory of the GPU models, where the file is. Driver names are
         * shown only as what runs each image (ADR 0038), sim never. */
        g_assert_null(strstr(response->body, "registry.example"));
        g_assert_null(strstr(response->body, "operator-only"));
        g_assert_null(strstr(response->body, "\"sim\""));
        g_assert_null(strstr(response->body, "weak"));
        g_assert_null(strstr(response->body, "24100"));
        g_assert_null(strstr(response->body, "tenant-view.json"));
    }
}

static void
test_quota_and_held(void)
{
    gint64 quota = -1;
    gint64 held = -1;
    g_autofree gchar *first = NULL;
    g_autofree gchar *second = NULL;
    g_autofree gchar *pair = NULL;

    {
        g_autoptr(EinsoraTestResponse) response = get_catalog(token_b);
        JsonObject *root = root_of(response);
        JsonObject *cpu = find_named(json_object_get_array_member(root, "classes"), "fx-cpu-small");

        class_quota(root, "fx-gpu-one", &quota, &held);
        g_assert_cmpint(quota, ==, B_GPU_ONE_QUOTA);
        g_assert_cmpint(held, ==, 0);
        /* No quota row: none allowed, shown as 0. */
        class_quota(root, "fx-gpu-pair", &quota, &held);
        g_assert_cmpint(quota, ==, 0);
        g_assert_cmpint(held, ==, 0);
        /* CPU classes need no quota. */
        g_assert_true(json_object_get_null_member(cpu, "quota"));
        g_assert_true(json_object_get_null_member(cpu, "held"));
    }

    /* Pending workloads hold quota; a CPU one holds no GPU. */
    first = create_workload(token_b, "notebook", "fx-gpu-one", "fx-notebook", "north");
    second = create_workload(token_b, "notebook", "fx-gpu-one", "fx-notebook", "south");
    g_free(create_workload(token_b, "notebook", "fx-cpu-small", "fx-notebook", "north"));
    {
        g_autoptr(EinsoraTestResponse) response = get_catalog(token_b);
        JsonObject *root = root_of(response);
        class_quota(root, "fx-gpu-one", &quota, &held);
        g_assert_cmpint(quota, ==, B_GPU_ONE_QUOTA);
        g_assert_cmpint(held, ==, 2);
        class_quota(root, "fx-gpu-pair", &quota, &held);
        g_assert_cmpint(held, ==, 0);
    }

    /* A deleting workload holds none. */
    {
        g_autofree gchar *path = g_strdup_printf("/v1/workloads/%s", second);
        g_autoptr(EinsoraTestResponse) deleted =
            einsora_test_request(server_daemon, "DELETE", path, token_b, NULL, NULL, NULL);
        g_assert_cmpuint(deleted->status, ==, 202);
    }
    {
        g_autoptr(EinsoraTestResponse) response = get_catalog(token_b);
        class_quota(root_of(response), "fx-gpu-one", &quota, &held);
        g_assert_cmpint(held, ==, 1);
    }

    /* Tenant A's numbers are its own: Solo's 64, and only its workloads. */
    pair = create_workload(server_daemon->owner_token, "notebook", "fx-gpu-pair", "fx-notebook",
                           "south");
    {
        g_autoptr(EinsoraTestResponse) response = get_catalog(server_daemon->owner_token);
        JsonObject *root = root_of(response);
        class_quota(root, "fx-gpu-one", &quota, &held);
        g_assert_cmpint(quota, ==, 64);
        g_assert_cmpint(held, ==, 0);
        class_quota(root, "fx-gpu-pair", &quota, &held);
        g_assert_cmpint(quota, ==, 64);
        g_assert_cmpint(held, ==, 2);
    }
    {
        g_autoptr(EinsoraTestResponse) response = get_catalog(token_b);
        class_quota(root_of(response), "fx-gpu-pair", &quota, &held);
        g_assert_cmpint(quota, ==, 0);
        g_assert_cmpint(held, ==, 0);
    }
}

/* Two users of one tenant get the same answer, byte for byte; another
 * tenant gets its own quota. */
static void
test_same_for_every_user_of_tenant(void)
{
    g_autoptr(EinsoraTestResponse) bob = get_catalog(token_b);
    g_autoptr(EinsoraTestResponse) member = get_catalog(MEMBER_TOKEN);
    g_autoptr(EinsoraTestResponse) owner = get_catalog(server_daemon->owner_token);
    g_autoptr(EinsoraTestResponse) me =
        einsora_test_request(server_daemon, "GET", "/v1/me", MEMBER_TOKEN, NULL, NULL, NULL);
    gint64 quota = -1;
    gint64 held = -1;

    /* The member really is another user. */
    g_assert_cmpuint(me->status, ==, 200);
    g_assert_cmpstr(einsora_test_response_string(me, "subject"), ==, "alice@globex.example");

    g_assert_cmpuint(bob->status, ==, 200);
    g_assert_cmpuint(member->status, ==, 200);
    g_assert_cmpstr(bob->body, ==, member->body);
    g_assert_cmpstr(owner->body, !=, bob->body);
    class_quota(root_of(member), "fx-gpu-one", &quota, &held);
    g_assert_cmpint(quota, ==, B_GPU_ONE_QUOTA);
    class_quota(root_of(owner), "fx-gpu-one", &quota, &held);
    g_assert_cmpint(quota, ==, 64);
}

static void
exec_sql(sqlite3 *handle, const char *sql, const char *const *binds)
{
    sqlite3_stmt *statement = NULL;

    g_assert_cmpint(sqlite3_prepare_v2(handle, sql, -1, &statement, NULL), ==, SQLITE_OK);
    for (guint i = 0; binds != NULL && binds[i] != NULL; i++)
        sqlite3_bind_text(statement, (int)i + 1, binds[i], -1, SQLITE_TRANSIENT);
    if (sqlite3_step(statement) != SQLITE_DONE)
        g_error("%s: %s", sql, sqlite3_errmsg(handle));
    sqlite3_finalize(statement);
}

/* Tenant B: a quota for one GPU class, and a second user with a token. */
static void
set_up_tenant_b(void)
{
    g_autofree gchar *db = g_build_filename(server_daemon->data_dir, "einsora.db", NULL);
    g_autofree gchar *token_sha256 =
        g_compute_checksum_for_string(G_CHECKSUM_SHA256, MEMBER_TOKEN, -1);
    g_autofree gchar *quota = g_strdup_printf("%d", B_GPU_ONE_QUOTA);
    const char *now = "2026-01-01T00:00:00.000000Z";
    sqlite3 *handle = NULL;

    g_assert_cmpint(sqlite3_open(db, &handle), ==, SQLITE_OK);
    sqlite3_busy_timeout(handle, 15000);
    exec_sql(handle,
             "INSERT INTO quotas (tenant_id, gpu_class, gpus, updated_at) "
             "SELECT tenant_id, 'fx-gpu-one', CAST(?1 AS INTEGER), ?2 FROM users WHERE email = ?3",
             (const char *const[]){quota, now, B_EMAIL, NULL});
    exec_sql(handle,
             "INSERT INTO users (id, tenant_id, email, display_name, password_hash, role, "
             "created_at) SELECT ?1, tenant_id, 'alice@globex.example', 'Alice', NULL, 'member', "
             "?2 FROM users WHERE email = ?3",
             (const char *const[]){MEMBER_USER_ID, now, B_EMAIL, NULL});
    exec_sql(handle,
             "INSERT INTO api_tokens (id, tenant_id, user_id, name, prefix, token_sha256, "
             "created_at) SELECT ?1, tenant_id, id, 'catalog test', substr(?2, 1, 8), ?3, ?4 "
             "FROM users WHERE id = ?5",
             (const char *const[]){MEMBER_TOKEN_ID, MEMBER_TOKEN, token_sha256, now, MEMBER_USER_ID,
                                   NULL});
    sqlite3_close(handle);
}

int
main(int argc, char **argv)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    int status;

    g_test_init(&argc, &argv, NULL);
    g_assert_true(json_parser_load_from_file(parser, fixture_path(), &error));
    g_assert_no_error(error);
    fixture = json_node_copy(json_parser_get_root(parser));

    server_daemon = einsora_test_daemon_new();
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CATALOG", fixture_path());
    /* States change only through the API here. */
    einsora_test_daemon_setenv(server_daemon, "EINSORA_CONTROLLER_INTERVAL", "60m");
    einsora_test_daemon_start(server_daemon);
    einsora_test_daemon_stop(server_daemon);
    token_b = einsora_test_daemon_create_account(server_daemon, "globex", B_EMAIL, NULL);
    set_up_tenant_b();
    einsora_test_daemon_start(server_daemon);

    g_test_add_func("/catalog-api/auth-required", test_authentication);
    g_test_add_func("/catalog-api/follows-installation-catalog", test_follows_installation_catalog);
    g_test_add_func("/catalog-api/no-operator-fields", test_no_operator_fields);
    g_test_add_func("/catalog-api/images-say-which-drivers-run-them", test_image_drivers);
    g_test_add_func("/catalog-api/quota-and-held-per-tenant", test_quota_and_held);
    g_test_add_func("/catalog-api/same-for-every-user-of-tenant",
                    test_same_for_every_user_of_tenant);
    status = g_test_run();

    {
        /* Never a token in the daemon's log. */
        g_autofree gchar *log = einsora_test_daemon_read_log(server_daemon);
        g_assert_null(strstr(log, MEMBER_TOKEN));
        g_assert_null(strstr(log, token_b));
        g_assert_null(strstr(log, server_daemon->owner_token));
    }
    einsora_test_daemon_stop(server_daemon);
    einsora_test_daemon_free(server_daemon);
    json_node_unref(fixture);
    g_free(token_b);
    return status;
}
