/* docs/openapi.json and the route table agree both ways: every route in
 * the document is served, and every route served is in the document. Also
 * the body reader's cases that need no server (run under ASan). */
#include <json-glib/json-glib.h>
#include <string.h>

#include "einsora-api-page.h"
#include "einsora-api-request.h"
#include "einsora-api-routes.h"
#include "einsora-error.h"

static GHashTable *
documented_routes(void)
{
    g_autofree gchar *path =
        g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "docs", "openapi.json", NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    GHashTable *routes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    JsonObject *paths;
    g_autoptr(GList) names = NULL;

    g_assert_true(json_parser_load_from_file(parser, path, &error));
    g_assert_no_error(error);
    paths =
        json_object_get_object_member(json_node_get_object(json_parser_get_root(parser)), "paths");
    names = json_object_get_members(paths);
    for (GList *l = names; l != NULL; l = l->next) {
        JsonObject *operations = json_object_get_object_member(paths, l->data);
        g_autoptr(GList) methods = json_object_get_members(operations);
        for (GList *m = methods; m != NULL; m = m->next) {
            g_autofree gchar *method = g_ascii_strup(m->data, -1);
            g_hash_table_add(routes, g_strdup_printf("%s %s", method, (const char *)l->data));
        }
    }
    return routes;
}

static void
test_document_matches_routes(void)
{
    g_autoptr(GHashTable) documented = documented_routes();
    g_autoptr(GHashTable) served = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint n_routes = 0;
    const EinsoraApiRoute *routes = einsora_api_routes(&n_routes);
    GHashTableIter iter;
    gpointer key;

    for (guint i = 0; i < n_routes; i++) {
        gchar *route = g_strdup_printf("%s %s", routes[i].method, routes[i].pattern);
        if (!g_hash_table_contains(documented, route))
            g_error("served but not in docs/openapi.json: %s", route);
        g_hash_table_add(served, route);
    }
    g_hash_table_iter_init(&iter, documented);
    while (g_hash_table_iter_next(&iter, &key, NULL)) {
        if (!g_hash_table_contains(served, key))
            g_error("in docs/openapi.json but not served: %s", (const char *)key);
    }
    g_assert_cmpuint(g_hash_table_size(documented), ==, n_routes);
}

static JsonParser *
load_document(void)
{
    g_autofree gchar *path =
        g_build_filename(g_getenv("EINSORA_SOURCE_ROOT"), "docs", "openapi.json", NULL);
    JsonParser *parser = json_parser_new();
    g_autoptr(GError) error = NULL;

    g_assert_true(json_parser_load_from_file(parser, path, &error));
    g_assert_no_error(error);
    return parser;
}

/* A parameter, or what its $ref names under components/parameters. */
static JsonObject *
resolve_parameter(JsonObject *root, JsonObject *parameter)
{
    const char *ref = json_object_get_string_member_with_default(parameter, "$ref", NULL);
    const char *prefix = "#/components/parameters/";

    if (ref == NULL)
        return parameter;
    g_assert_true(g_str_has_prefix(ref, prefix));
    return json_object_get_object_member(
        json_object_get_object_member(json_object_get_object_member(root, "components"),
                                      "parameters"),
        ref + strlen(prefix));
}

/* Each route's query parameters are the ones the document gives it, and
 * the paged lists' limit says the bounds the API enforces. */
static void
test_query_parameters_documented(void)
{
    g_autoptr(JsonParser) parser = load_document();
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonObject *paths = json_object_get_object_member(root, "paths");
    guint n_routes = 0;
    const EinsoraApiRoute *routes = einsora_api_routes(&n_routes);
    guint paged = 0;

    for (guint i = 0; i < n_routes; i++) {
        g_autofree gchar *method = g_ascii_strdown(routes[i].method, -1);
        JsonObject *operation = json_object_get_object_member(
            json_object_get_object_member(paths, routes[i].pattern), method);
        JsonArray *parameters = json_object_has_member(operation, "parameters")
                                    ? json_object_get_array_member(operation, "parameters")
                                    : NULL;
        g_autoptr(GPtrArray) documented = g_ptr_array_new();
        guint served = routes[i].query != NULL ? g_strv_length((GStrv)routes[i].query) : 0;

        for (guint j = 0; parameters != NULL && j < json_array_get_length(parameters); j++) {
            JsonObject *parameter =
                resolve_parameter(root, json_array_get_object_element(parameters, j));
            const char *name = json_object_get_string_member(parameter, "name");
            JsonObject *schema = json_object_get_object_member(parameter, "schema");

            if (g_strcmp0(json_object_get_string_member(parameter, "in"), "query") != 0)
                continue;
            g_ptr_array_add(documented, (gpointer)name);
            if (routes[i].query == NULL || !g_strv_contains(routes[i].query, name))
                g_error("%s %s: ?%s is documented but not taken", routes[i].method,
                        routes[i].pattern, name);
            if (g_strcmp0(name, "limit") == 0) {
                g_assert_cmpint(json_object_get_int_member(schema, "minimum"), ==, 1);
                g_assert_cmpint(json_object_get_int_member(schema, "maximum"), ==,
                                EINSORA_API_PAGE_MAX_LIMIT);
                paged++;
                if (g_strcmp0(routes[i].pattern, "/v1/events") != 0)
                    g_assert_cmpint(json_object_get_int_member(schema, "default"), ==,
                                    EINSORA_API_PAGE_DEFAULT_LIMIT);
            }
        }
        if (documented->len != served)
            g_error("%s %s takes %u query parameters, the document gives %u", routes[i].method,
                    routes[i].pattern, served, documented->len);
    }
    /* The three lists and the feed's page. */
    g_assert_cmpuint(paged, ==, 4);
}

/* The router dispatches a documented path to its own route only. */
static void
test_router_matches_patterns(void)
{
    g_auto(GStrv) params = NULL;
    gboolean known = FALSE;
    const EinsoraApiRoute *route = einsora_api_route_match(
        "POST", "/v1/workloads/0190b5d2-7c4e-7abc-8def-0123456789ab/stop", &params, &known);

    g_assert_nonnull(route);
    g_assert_cmpstr(route->pattern, ==, "/v1/workloads/{id}/stop");
    g_assert_cmpstr(params[0], ==, "0190b5d2-7c4e-7abc-8def-0123456789ab");
    g_clear_pointer(&params, g_strfreev);
    route = einsora_api_route_match(
        "POST", "/v1/workloads/0190b5d2-7c4e-7abc-8def-0123456789ab/access", &params, &known);
    g_assert_nonnull(route);
    g_assert_true(route->handler == einsora_api_workloads_access);
    /* Its answer holds a secret: never kept for an Idempotency-Key replay. */
    g_assert_false(route->idempotent_key);
    g_assert_false(route->takes_body);
    g_assert_null(einsora_api_route_match("PUT", "/v1/workloads", NULL, &known));
    g_assert_true(known);
    g_assert_null(einsora_api_route_match("GET", "/v1/workloads//stop", NULL, &known));
    g_assert_null(einsora_api_route_match("GET", "/v1/workloads/a/b/c", NULL, &known));
    g_assert_false(known);
}

/* Every route that reads a body has its member table public, and
 * tests/fuzz/fuzz-api-body.c fuzzes each: a new one must join them. */
static void
test_body_routes_fuzzed(void)
{
    guint n_routes = 0;
    const EinsoraApiRoute *routes = einsora_api_routes(&n_routes);
    static const char *const fuzzed[] = {"POST /v1/login", "POST /v1/workloads", "POST /v1/tokens",
                                         "POST /v1/model-store", "POST /v1/admin/accounts",
                                         "PUT /v1/admin/tenants/{id}/quotas/{class}",
                                         "POST /v1/me/password", "PUT /v1/machines/{id}/sharing",
                                         "POST /v1/machines/enrolments", "POST /agent/v1/enroll",
                                         /* A SyncReport: tests/fuzz/fuzz-sync.c */
                                         "POST /agent/v1/sync", NULL};

    for (guint i = 0; i < n_routes; i++) {
        g_autofree gchar *name = g_strdup_printf("%s %s", routes[i].method, routes[i].pattern);
        if (routes[i].takes_body && !g_strv_contains(fuzzed, name))
            g_error("%s reads a body: give tests/fuzz/fuzz-api-body.c its member table", name);
        if (!routes[i].takes_body && g_strv_contains(fuzzed, name))
            g_error("%s no longer reads a body", name);
    }
    g_assert_nonnull(einsora_api_session_login_fields[0].name);
    g_assert_nonnull(einsora_api_workloads_create_fields[0].name);
    g_assert_nonnull(einsora_api_tokens_create_fields[0].name);
    g_assert_nonnull(einsora_api_models_import_fields[0].name);
    g_assert_nonnull(einsora_api_admin_accounts_create_fields[0].name);
    g_assert_nonnull(einsora_api_admin_quota_set_fields[0].name);
    g_assert_nonnull(einsora_api_password_change_fields[0].name);
    g_assert_nonnull(einsora_api_machines_sharing_fields[0].name);
    g_assert_nonnull(einsora_api_enrolments_create_fields[0].name);
    g_assert_nonnull(einsora_api_agent_enroll_fields[0].name);
}

/* Found by tests/fuzz/fuzz-api-body: json-glib 1.6 leaks all but the last
 * of several top-level values, so the reader refuses them before parsing
 * (the ASan tree's leak check fails without that). */
static void
test_body_refuses_several_values(void)
{
    static const EinsoraApiField fields[] = {{"name", G_TYPE_STRING, FALSE}, {NULL}};
    static const char *const refused[] = {"{}{}",
                                          "[][]",
                                          "{} {\"name\": \"x\"}",
                                          "{\"name\": \"}{\"}[]",
                                          "{\"name\": \"x\"",
                                          " 7{\"name\": 7}",
                                          "\"a\" {}",
                                          NULL};

    for (guint i = 0; refused[i] != NULL; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonObject) body =
            einsora_api_parse_body(refused[i], strlen(refused[i]), fields, &error);
        g_assert_null(body);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_nonnull(strstr(error->message, "not valid JSON"));
    }
    {
        const char *text = " {\"name\": \"a}\\\"{\"} \n";
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonObject) body = einsora_api_parse_body(text, strlen(text), fields, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(json_object_get_string_member(body, "name"), ==, "a}\"{");
    }
}

/* Found by the hostile corpus: json-glib keeps the last of two members
 * with one name, at any depth; the reader refuses them. */
static void
test_body_refuses_duplicate_members(void)
{
    static const EinsoraApiField fields[] = {
        {"name", G_TYPE_STRING, FALSE}, {"kind", G_TYPE_STRING, FALSE}, {NULL}};
    static const char *const refused[] = {"{\"name\": \"a\", \"name\": \"b\"}",
                                          "{\"name\": \"a\", \"kind\": \"x\", \"name\": \"a\"}",
                                          "{\"name\": \"a\", \"n\\u0061me\": \"b\"}", NULL};

    for (guint i = 0; refused[i] != NULL; i++) {
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonObject) body =
            einsora_api_parse_body(refused[i], strlen(refused[i]), fields, &error);
        if (body != NULL)
            g_error("%s was accepted", refused[i]);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
        g_assert_nonnull(strstr(error->message, "more than once"));
    }
    {
        /* The same name in two objects is not a duplicate (a body of
         * nested objects is refused later, for its types). */
        static const EinsoraApiField any[] = {{"a", G_TYPE_STRING, FALSE}, {NULL}};
        const char *text = "{\"a\": {\"b\": 1}, \"c\": {\"b\": 2}}";
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonObject) body = einsora_api_parse_body(text, strlen(text), any, &error);
        g_assert_null(body);
        g_assert_nonnull(error);
        g_assert_null(strstr(error->message, "more than once"));
    }
    {
        const char *text = "{\"name\": \"a\", \"kind\": \"b\"}";
        g_autoptr(GError) error = NULL;
        g_autoptr(JsonObject) body = einsora_api_parse_body(text, strlen(text), fields, &error);
        g_assert_no_error(error);
        g_assert_cmpstr(json_object_get_string_member(body, "name"), ==, "a");
    }
}

/* A query names each parameter once, from its route's list, with valid
 * escapes; a flag is "true" or "false". */
static void
test_query(void)
{
    static const char *const allowed[] = {"follow", "after", NULL};
    static const char *const refused[] = {"follow=true&follow=false",
                                          "follow=true&follow=true",
                                          "other=1",
                                          "follow=%zz",
                                          "follow",
                                          "a%00=1",
                                          NULL};
    gboolean value = TRUE;

    g_assert_true(einsora_api_query_check(NULL, allowed, NULL));
    g_assert_true(einsora_api_query_check("", NULL, NULL));
    g_assert_true(einsora_api_query_check("follow=true&after=7", allowed, NULL));
    g_assert_false(einsora_api_query_check("follow=true", NULL, NULL));
    for (guint i = 0; refused[i] != NULL; i++) {
        g_autoptr(GError) error = NULL;
        if (einsora_api_query_check(refused[i], allowed, &error))
            g_error("query \"%s\" was accepted", refused[i]);
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
    g_assert_true(einsora_api_query_flag("after=1", "follow", &value, NULL));
    g_assert_false(value);
    g_assert_true(einsora_api_query_flag("follow=true", "follow", &value, NULL));
    g_assert_true(value);
    g_assert_true(einsora_api_query_flag("follow=false", "follow", &value, NULL));
    g_assert_false(value);
    {
        g_autoptr(GError) error = NULL;
        g_assert_false(einsora_api_query_flag("follow=1", "follow", &value, &error));
        g_assert_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/openapi/document-matches-routes", test_document_matches_routes);
    g_test_add_func("/openapi/router-matches-patterns", test_router_matches_patterns);
    g_test_add_func("/openapi/query-parameters-documented", test_query_parameters_documented);
    g_test_add_func("/api/body/refuses-several-values", test_body_refuses_several_values);
    g_test_add_func("/api/body/refuses-duplicate-members", test_body_refuses_duplicate_members);
    g_test_add_func("/api/query", test_query);
    g_test_add_func("/api/body/routes-fuzzed", test_body_routes_fuzzed);
    return g_test_run();
}
