/* /v1/admin: a Lab's admins manage accounts and quotas (docs/adr/0049);
 * /v1/audit: a tenant's own audit trail. Anyone who isn't an admin gets
 * 403 for every /v1/admin route, before anything is looked up. A new
 * account's first token secret is in the answer that creates it and
 * nowhere else. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#include "einsora-error.h"

/* Audit lines an answer gives at most. */
#define AUDIT_LIMIT 500

static void
add_string_or_null(JsonBuilder *builder, const char *name, const char *value)
{
    json_builder_set_member_name(builder, name);
    if (value != NULL)
        json_builder_add_string_value(builder, value);
    else
        json_builder_add_null_value(builder);
}

static JsonNode *
account_to_json(const EinsoraUser *user, GHashTable *tenant_names)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();

    json_builder_begin_object(builder);
    add_string_or_null(builder, "id", user->id);
    add_string_or_null(builder, "email", user->email);
    add_string_or_null(builder, "tenant_id", user->tenant_id);
    add_string_or_null(builder, "tenant",
                       tenant_names != NULL ? g_hash_table_lookup(tenant_names, user->tenant_id)
                                            : NULL);
    add_string_or_null(builder, "role", user->role);
    json_builder_set_member_name(builder, "admin");
    json_builder_add_boolean_value(builder, user->admin);
    add_string_or_null(builder, "created_at", user->created_at);
    add_string_or_null(builder, "disabled_at", user->disabled_at);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

/* tenant ID -> name, for the answers that name both. */
static GHashTable *
tenant_names(EinsoraApiServer *server, const EinsoraActor *actor, GError **error)
{
    g_autoptr(GPtrArray) tenants =
        einsora_auth_admin_list_tenants(einsora_api_server_get_auth(server), actor, error);
    GHashTable *names;

    if (tenants == NULL)
        return NULL;
    names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < tenants->len; i++) {
        const EinsoraTenant *tenant = g_ptr_array_index(tenants, i);
        g_hash_table_insert(names, g_strdup(tenant->id), g_strdup(tenant->name));
    }
    return names;
}

static void
respond_account(EinsoraApiServer *server, EinsoraApiRequest *request, guint status,
                const EinsoraUser *user, const char *secret)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GHashTable) names =
        tenant_names(server, einsora_api_request_get_actor(request), &error);
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    JsonObject *root = json_object_new();

    if (names == NULL) {
        json_object_unref(root);
        einsora_api_request_respond_error(request, error);
        return;
    }
    json_object_set_member(root, "account", account_to_json(user, names));
    if (secret != NULL)
        json_object_set_string_member(root, "secret", secret);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, status, node);
}

void
einsora_api_admin_accounts_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    const EinsoraActor *actor = einsora_api_request_get_actor(request);
    g_autoptr(GPtrArray) users =
        einsora_auth_admin_list_accounts(einsora_api_server_get_auth(server), actor, &error);
    g_autoptr(GHashTable) names = NULL;
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    JsonObject *root;
    JsonArray *accounts;

    if (users == NULL || (names = tenant_names(server, actor, &error)) == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    root = json_object_new();
    accounts = json_array_sized_new(users->len);
    for (guint i = 0; i < users->len; i++)
        json_array_add_element(accounts, account_to_json(g_ptr_array_index(users, i), names));
    json_object_set_array_member(root, "accounts", accounts);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

const EinsoraApiField einsora_api_admin_accounts_create_fields[] = {
    {"email", G_TYPE_STRING, TRUE},
    {"tenant_id", G_TYPE_STRING, FALSE},
    {"new_tenant", G_TYPE_STRING, FALSE},
    {"admin", G_TYPE_BOOLEAN, FALSE},
    {NULL},
};

void
einsora_api_admin_accounts_create(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body = NULL;
    g_autoptr(EinsoraUser) user = NULL;
    g_autofree gchar *secret = NULL;

    if (!einsora_auth_require_admin(einsora_api_server_get_auth(server),
                                    einsora_api_request_get_actor(request), &error) ||
        (body = einsora_api_request_parse_body(request, einsora_api_admin_accounts_create_fields,
                                               &error)) == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    user = einsora_auth_admin_create_account(
        einsora_api_server_get_auth(server), einsora_api_request_get_actor(request),
        json_object_get_string_member_with_default(body, "tenant_id", NULL),
        json_object_get_string_member_with_default(body, "new_tenant", NULL),
        json_object_get_string_member(body, "email"), NULL,
        json_object_get_boolean_member_with_default(body, "admin", FALSE), &secret, &error);
    if (user == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    respond_account(server, request, SOUP_STATUS_CREATED, user, secret);
}

static void
set_disabled(EinsoraApiServer *server, EinsoraApiRequest *request, gboolean disabled)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraUser) user = einsora_auth_admin_set_disabled(
        einsora_api_server_get_auth(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), disabled, &error);

    if (user == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    respond_account(server, request, SOUP_STATUS_OK, user, NULL);
}

void
einsora_api_admin_accounts_disable(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    set_disabled(server, request, TRUE);
}

void
einsora_api_admin_accounts_enable(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    set_disabled(server, request, FALSE);
}

/* Every tenant with its quota of each GPU class of the catalog. */
void
einsora_api_admin_tenants_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    EinsoraAuth *auth = einsora_api_server_get_auth(server);
    GPtrArray *classes = einsora_catalog_get_classes(
        einsora_service_get_catalog(einsora_api_server_get_service(server)));
    g_autoptr(GPtrArray) tenants =
        einsora_auth_admin_list_tenants(auth, einsora_api_request_get_actor(request), &error);
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) node = NULL;

    if (tenants == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "tenants");
    json_builder_begin_array(builder);
    for (guint i = 0; i < tenants->len; i++) {
        const EinsoraTenant *tenant = g_ptr_array_index(tenants, i);

        json_builder_begin_object(builder);
        add_string_or_null(builder, "id", tenant->id);
        add_string_or_null(builder, "name", tenant->name);
        json_builder_set_member_name(builder, "trusted");
        json_builder_add_boolean_value(builder, tenant->trusted);
        json_builder_set_member_name(builder, "quotas");
        json_builder_begin_object(builder);
        for (guint c = 0; c < classes->len; c++) {
            const EinsoraComputeClass *klass = g_ptr_array_index(classes, c);
            gint64 gpus = 0;

            if (klass->devices == 0)
                continue;
            if (!einsora_auth_get_quota(auth, tenant->id, klass->name, &gpus, &error)) {
                einsora_api_request_respond_error(request, error);
                return;
            }
            json_builder_set_member_name(builder, klass->name);
            json_builder_add_int_value(builder, gpus);
        }
        json_builder_end_object(builder);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    node = json_builder_get_root(builder);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

const EinsoraApiField einsora_api_admin_quota_set_fields[] = {
    {"gpus", G_TYPE_INT64, TRUE},
    {NULL},
};

void
einsora_api_admin_quota_set(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body = NULL;
    EinsoraCatalog *catalog = einsora_service_get_catalog(einsora_api_server_get_service(server));
    EinsoraAuth *auth = einsora_api_server_get_auth(server);
    const EinsoraActor *actor = einsora_api_request_get_actor(request);
    const char *tenant_id = einsora_api_request_get_param(request, 0);
    const char *gpu_class = einsora_api_request_get_param(request, 1);
    const EinsoraComputeClass *klass = einsora_catalog_lookup_class(catalog, gpu_class);
    gint64 gpus;
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    JsonObject *root;

    /* Who may is decided first: a non-admin learns nothing of tenants or
     * classes. */
    if (!einsora_auth_require_admin(auth, actor, &error) ||
        (body = einsora_api_request_parse_body(request, einsora_api_admin_quota_set_fields,
                                               &error)) == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (klass == NULL || klass->devices == 0) {
        g_set_error(&error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                    "\"%s\" is not a GPU class of this Lab's catalog (einsora catalog lists them)",
                    gpu_class);
        einsora_api_request_respond_error(request, error);
        return;
    }
    gpus = json_object_get_int_member(body, "gpus");
    if (!einsora_auth_admin_set_quota(auth, actor, tenant_id, gpu_class, gpus, &error)) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    root = json_object_new();
    json_object_set_string_member(root, "tenant_id", tenant_id);
    json_object_set_string_member(root, "gpu_class", gpu_class);
    json_object_set_int_member(root, "gpus", gpus);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

void
einsora_api_audit_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) events =
        einsora_auth_list_audit(einsora_api_server_get_auth(server),
                                einsora_api_request_get_actor(request), AUDIT_LIMIT, &error);
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) node = NULL;

    if (events == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "events");
    json_builder_begin_array(builder);
    for (guint i = 0; i < events->len; i++) {
        const EinsoraAuditEvent *event = g_ptr_array_index(events, i);

        json_builder_begin_object(builder);
        add_string_or_null(builder, "id", event->id);
        add_string_or_null(builder, "at", event->at);
        add_string_or_null(builder, "actor", event->actor);
        add_string_or_null(builder, "action", event->action);
        add_string_or_null(builder, "target", event->target);
        add_string_or_null(builder, "detail", event->detail);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
    json_builder_end_object(builder);
    node = json_builder_get_root(builder);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
