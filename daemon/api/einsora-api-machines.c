/* /v1/machines: the caller's own machines. Status comes from the store's
 * last_seen_at; the API never asks a machine. Their owner (or a Lab
 * admin) sets who may run on them; the owner sees what guests hold. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

/* What its agent said of itself on its last sync (docs/adr/0057); null
 * when it said neither (an agent from before that, or none yet). The
 * offset is the server's time minus the agent's, one way. */
static void
add_agent(JsonBuilder *builder, const EinsoraMachine *machine)
{
    json_builder_set_member_name(builder, "agent");
    if (machine->agent_version == NULL && !machine->has_clock_offset) {
        json_builder_add_null_value(builder);
        return;
    }
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "version");
    if (machine->agent_version != NULL)
        json_builder_add_string_value(builder, machine->agent_version);
    else
        json_builder_add_null_value(builder);
    json_builder_set_member_name(builder, "clock_offset_ms");
    if (machine->has_clock_offset)
        json_builder_add_int_value(builder, machine->clock_offset_ms);
    else
        json_builder_add_null_value(builder);
    json_builder_set_member_name(builder, "clock_skewed");
    json_builder_add_boolean_value(builder, einsora_machine_clock_skewed(machine));
    json_builder_end_object(builder);
}

static JsonNode *
machine_to_json(EinsoraApiServer *server, const EinsoraMachine *machine, GHashTable *counts)
{
    EinsoraService *service = einsora_api_server_get_service(server);
    g_autoptr(JsonBuilder) builder = json_builder_new();
    gint64 cpus = 0;
    gint64 memory_mib = 0;
    gint64 workloads = GPOINTER_TO_INT(g_hash_table_lookup(counts, machine->id));
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "id");
    json_builder_add_string_value(builder, machine->id);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, machine->name);
    json_builder_set_member_name(builder, "region");
    json_builder_add_string_value(builder, machine->region);
    json_builder_set_member_name(builder, "system");
    json_builder_add_string_value(builder, machine->os);
    einsora_service_machine_size(service, machine, &cpus, &memory_mib);
    json_builder_set_member_name(builder, "cpus");
    json_builder_add_int_value(builder, cpus);
    json_builder_set_member_name(builder, "memory_mib");
    json_builder_add_int_value(builder, memory_mib);
    json_builder_set_member_name(builder, "gpus");
    json_builder_begin_array(builder);
    {
        g_autoptr(GPtrArray) gpus = einsora_service_machine_gpus(service, machine);
        for (guint i = 0; i < gpus->len; i++) {
            const EinsoraMachineGpu *gpu = g_ptr_array_index(gpus, i);
            json_builder_begin_object(builder);
            json_builder_set_member_name(builder, "vendor");
            json_builder_add_string_value(builder, gpu->vendor);
            json_builder_set_member_name(builder, "model");
            json_builder_add_string_value(builder, gpu->model);
            json_builder_set_member_name(builder, "memory_mib");
            json_builder_add_int_value(builder, gpu->memory_mib);
            json_builder_set_member_name(builder, "gpu_class");
            if (gpu->gpu_class != NULL)
                json_builder_add_string_value(builder, gpu->gpu_class);
            else
                json_builder_add_null_value(builder);
            json_builder_end_object(builder);
        }
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "drivers");
    json_builder_begin_array(builder);
    {
        g_auto(GStrv) drivers = einsora_service_machine_drivers(service, machine);
        for (guint i = 0; drivers[i] != NULL; i++)
            json_builder_add_string_value(builder, drivers[i]);
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "sharing");
    json_builder_add_string_value(builder, einsora_sharing_to_string(machine->sharing));
    json_builder_set_member_name(builder, "status");
    json_builder_add_string_value(
        builder, einsora_service_machine_online(service, machine) ? "online" : "offline");
    json_builder_set_member_name(builder, "placeable");
    json_builder_add_boolean_value(builder, einsora_service_machine_placeable(service, machine));
    json_builder_set_member_name(builder, "last_seen_at");
    if (machine->last_seen_at != NULL)
        json_builder_add_string_value(builder, machine->last_seen_at);
    else
        json_builder_add_null_value(builder);
    json_builder_set_member_name(builder, "workloads");
    json_builder_add_int_value(builder, workloads);
    {
        g_autoptr(GError) error = NULL;
        EinsoraGuestUse use = {0};

        /* What the Lab's other tenants hold on it: the owner's to see,
         * never whose. */
        if (!einsora_service_machine_guest_use(service, machine, &use, &error))
            g_message("can't count the guests of machine %s: %s", machine->id, error->message);
        json_builder_set_member_name(builder, "guests");
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "workloads");
        json_builder_add_int_value(builder, use.workloads);
        json_builder_set_member_name(builder, "cpus");
        json_builder_add_int_value(builder, use.cpus);
        json_builder_set_member_name(builder, "memory_mib");
        json_builder_add_int_value(builder, use.memory_mib);
        json_builder_set_member_name(builder, "gpus");
        json_builder_add_int_value(builder, use.gpus);
        json_builder_end_object(builder);
    }
    json_builder_set_member_name(builder, "created_at");
    json_builder_add_string_value(builder, machine->created_at);
    /* A machine that enrolled over the network: its agent's certificate
     * (docs/adr/0055); null for the machine the daemon runs on. */
    json_builder_set_member_name(builder, "certificate");
    if (machine->cert_fingerprint != NULL) {
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "fingerprint");
        json_builder_add_string_value(builder, machine->cert_fingerprint);
        json_builder_set_member_name(builder, "expires_at");
        json_builder_add_string_value(builder, machine->cert_expires_at);
        json_builder_end_object(builder);
    } else {
        json_builder_add_null_value(builder);
    }
    add_agent(builder, machine);
    json_builder_end_object(builder);
    return json_builder_get_root(builder);
}

/* The tenant's workload counts per machine, read once per request. */
static GHashTable *
workload_counts(EinsoraApiServer *server, EinsoraApiRequest *request, GError **error)
{
    return einsora_service_count_machine_workloads(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request)->tenant_id,
        error);
}

void
einsora_api_machines_list(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) machines = NULL;
    g_autoptr(GHashTable) counts = NULL;
    g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
    JsonObject *root = json_object_new();
    JsonArray *array = json_array_new();

    json_node_take_object(node, root);
    json_object_set_array_member(root, "machines", array);
    machines =
        einsora_service_list_machines(einsora_api_server_get_service(server),
                                      einsora_api_request_get_actor(request)->tenant_id, &error);
    if (machines != NULL)
        counts = workload_counts(server, request, &error);
    if (counts == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    for (guint i = 0; i < machines->len; i++)
        json_array_add_element(array,
                               machine_to_json(server, g_ptr_array_index(machines, i), counts));
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

void
einsora_api_machines_get(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GHashTable) counts = NULL;
    g_autoptr(JsonNode) node = NULL;

    machine = einsora_service_get_machine(einsora_api_server_get_service(server),
                                          einsora_api_request_get_actor(request)->tenant_id,
                                          einsora_api_request_get_param(request, 0), &error);
    if (machine != NULL)
        counts = workload_counts(server, request, &error);
    if (counts == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    node = machine_to_json(server, machine, counts);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

const EinsoraApiField einsora_api_machines_sharing_fields[] = {
    {"sharing", G_TYPE_STRING, TRUE},
    {NULL},
};

void
einsora_api_machines_set_sharing(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_machines_sharing_fields, &error);
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(GHashTable) counts = NULL;
    g_autoptr(JsonNode) node = NULL;
    EinsoraSharing sharing;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (!einsora_sharing_from_string(json_object_get_string_member(body, "sharing"), &sharing)) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                                            "sharing is private or community");
        return;
    }
    machine = einsora_auth_set_machine_sharing(
        einsora_api_server_get_auth(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), sharing, &error);
    if (machine != NULL)
        counts = workload_counts(server, request, &error);
    if (counts == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    node = machine_to_json(server, machine, counts);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}

/* POST /v1/machines/{id}/revoke: its agent's certificate finds it no more;
 * a sync it holds now is refused at once (docs/adr/0056). */
void
einsora_api_machines_revoke(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = einsora_auth_revoke_machine(
        einsora_api_server_get_auth(server), einsora_api_request_get_actor(request),
        einsora_api_request_get_param(request, 0), &error);
    g_autoptr(GHashTable) counts = NULL;
    g_autoptr(JsonNode) node = NULL;

    if (machine != NULL) {
        einsora_api_agent_sync_revoked(server, machine->id);
        /* Its tunnels too: a notebook opened through one is cut now. */
        if (einsora_api_server_get_tunnels(server) != NULL)
            einsora_tunnels_close_machine(einsora_api_server_get_tunnels(server), machine->id);
        counts = workload_counts(server, request, &error);
    }
    if (counts == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    g_clear_pointer(&machine->cert_fingerprint, g_free);
    node = machine_to_json(server, machine, counts);
    einsora_api_request_respond_json(request, SOUP_STATUS_OK, node);
}
