/* POST /agent/v1/sync: a networked agent's Sync (docs/adr/0056), exactly
 * the in-process one's: the same JSON codecs, the same hub call, held
 * up to the long poll and answered at once on a change.
 *
 * The machine is the client certificate's (checked against the daemon's
 * CA in the handshake, then looked up by its fingerprint: a revoked one
 * finds nothing), never anything in the body: a report that names
 * another machine is refused. Statuses of workloads not placed on the
 * machine are left out, so nothing it says reaches another machine's
 * workloads. A held sync costs no thread: the message is paused, and the
 * client's hang-up cancels the hub's wait. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#include "einsora-error.h"
#include "einsora-http-edge.h"
#include "einsora-json-text.h"
#include "einsora-sync-report.h"

/* The deepest nesting a report has is an inventory's GPU list: far less. */
#define REPORT_MAX_DEPTH 16

/* The syncs held now, by machine, on the server (a revocation refuses
 * them at once). */
#define HELD_KEY "einsora-held-syncs"

typedef struct {
    EinsoraApiServer *server;
    EinsoraApiRequest *request;
    SoupServerMessage *message;
    GCancellable *cancellable;
    GSource *hangup_watch;
    gchar *machine_id;
    gboolean revoked;
} HeldSync;

static GHashTable *
held_syncs(EinsoraApiServer *server)
{
    GHashTable *held = g_object_get_data(G_OBJECT(server), HELD_KEY);

    if (held == NULL) {
        /* machine ID -> GPtrArray of HeldSync (not owned) */
        held = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                     (GDestroyNotify)g_ptr_array_unref);
        g_object_set_data_full(G_OBJECT(server), HELD_KEY, held,
                               (GDestroyNotify)g_hash_table_unref);
    }
    return held;
}

static void
hold(HeldSync *held)
{
    GHashTable *table = held_syncs(held->server);
    GPtrArray *list = g_hash_table_lookup(table, held->machine_id);

    if (list == NULL) {
        list = g_ptr_array_new();
        g_hash_table_insert(table, g_strdup(held->machine_id), list);
    }
    g_ptr_array_add(list, held);
}

static void
let_go(HeldSync *held)
{
    GHashTable *table = held_syncs(held->server);
    GPtrArray *list = g_hash_table_lookup(table, held->machine_id);

    if (list == NULL)
        return;
    g_ptr_array_remove_fast(list, held);
    if (list->len == 0)
        g_hash_table_remove(table, held->machine_id);
}

void
einsora_api_agent_sync_revoked(EinsoraApiServer *server, const char *machine_id)
{
    GPtrArray *list = g_hash_table_lookup(held_syncs(server), machine_id);
    g_autoptr(GPtrArray) now = list != NULL ? g_ptr_array_copy(list, NULL, NULL) : NULL;

    for (guint i = 0; now != NULL && i < now->len; i++) {
        HeldSync *held = g_ptr_array_index(now, i);
        held->revoked = TRUE;
        g_cancellable_cancel(held->cancellable);
    }
}

static void
held_sync_free(HeldSync *held)
{
    let_go(held);
    g_free(held->machine_id);
    g_object_unref(held->server);
    if (held->hangup_watch != NULL) {
        g_source_destroy(held->hangup_watch);
        g_source_unref(held->hangup_watch);
    }
    g_object_unref(held->cancellable);
    g_object_unref(held->message);
    g_object_unref(held->request);
    g_free(held);
}

const char *
einsora_api_agent_certificate_problem(SoupServerMessage *message)
{
    GTlsCertificateFlags errors = 0;
    const char *fingerprint = einsora_http_message_get_client_certificate(message, &errors);

    if (fingerprint == NULL)
        return "an agent syncs with its client certificate (einsora-daemon agent --join "
               "enrols one), and none was sent";
    if (errors & G_TLS_CERTIFICATE_EXPIRED)
        return "this client certificate has expired: enrol the machine again";
    if (errors & G_TLS_CERTIFICATE_NOT_ACTIVATED)
        return "this client certificate isn't valid yet: is this machine's clock right?";
    if (errors != 0)
        return "this client certificate wasn't issued by this server";
    return NULL;
}

static gboolean
on_hangup(GCancellable *hangup, gpointer user_data)
{
    HeldSync *held = user_data;

    g_clear_pointer(&held->hangup_watch, g_source_unref);
    g_cancellable_cancel(held->cancellable);
    return G_SOURCE_REMOVE;
}

static void
on_synced(GObject *source, GAsyncResult *result, gpointer user_data)
{
    HeldSync *held = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraDesiredState) desired =
        einsora_sync_transport_sync_finish(EINSORA_SYNC_TRANSPORT(source), result, &error);

    if (held->revoked) {
        einsora_api_request_respond_problem(held->request, SOUP_STATUS_UNAUTHORIZED,
                                            "unauthenticated",
                                            "this machine's certificate was revoked");
    } else if (desired != NULL) {
        g_autoptr(JsonNode) node = einsora_desired_state_to_json(desired);
        einsora_api_request_respond_json(held->request, SOUP_STATUS_OK, node);
    } else if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        /* The agent hung up (or sent a newer sync): nobody reads this. */
        einsora_api_request_respond_problem(held->request, SOUP_STATUS_SERVICE_UNAVAILABLE,
                                            "unavailable", "the sync ended before its answer");
    } else if (error->domain == EINSORA_ERROR) {
        einsora_api_request_respond_error(held->request, error);
    } else {
        einsora_api_request_log(held->request, G_LOG_LEVEL_WARNING, "sync failed: %s",
                                error->message);
        einsora_api_request_respond_problem(held->request, SOUP_STATUS_SERVICE_UNAVAILABLE,
                                            "unavailable", "the sync failed: try again");
    }
    soup_server_message_unpause(held->message);
    held_sync_free(held);
}

/* The report in the body, checked as the protocol reads it. */
static EinsoraSyncReport *
read_report(SoupServerMessage *message, GError **error)
{
    SoupMessageBody *body = soup_server_message_get_request_body(message);
    g_autoptr(GBytes) bytes = soup_message_body_flatten(body);
    gsize length = 0;
    const char *data = g_bytes_get_data(bytes, &length);
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) invalid = NULL;
    EinsoraSyncReport *report;

    if (data == NULL || length == 0 || !g_utf8_validate(data, (gssize)length, NULL) ||
        !einsora_json_text_is_one_value(data, length) ||
        !einsora_json_text_depth_within(data, length, REPORT_MAX_DEPTH) ||
        !json_parser_load_from_data(parser, data, (gssize)length, NULL) ||
        json_parser_get_root(parser) == NULL) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST,
                            "the report is not valid JSON");
        return NULL;
    }
    report = einsora_sync_report_from_json(json_parser_get_root(parser), &invalid);
    if (report == NULL)
        g_set_error(error, EINSORA_ERROR, EINSORA_ERROR_INVALID_REQUEST, "not a sync report: %s",
                    invalid->message);
    return report;
}

/* Leaves out what the machine may not speak for; says how many. */
static guint
keep_own_statuses(EinsoraSyncReport *report, GHashTable *placed)
{
    guint dropped = 0;

    for (guint i = report->statuses->len; i > 0; i--) {
        const EinsoraWorkloadStatus *status = g_ptr_array_index(report->statuses, i - 1);
        if (status->workload_id == NULL || !g_hash_table_contains(placed, status->workload_id)) {
            g_ptr_array_remove_index(report->statuses, i - 1);
            dropped++;
        }
    }
    /* Replayed changes too: order kept, as the hub takes them in it. */
    for (guint i = report->replay->len; i > 0; i--) {
        const EinsoraReplayedStatus *replayed = g_ptr_array_index(report->replay, i - 1);
        if (!g_hash_table_contains(placed, replayed->status->workload_id)) {
            g_ptr_array_remove_index(report->replay, i - 1);
            dropped++;
        }
    }
    return dropped;
}

void
einsora_api_agent_sync(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    SoupServerMessage *message = einsora_api_request_get_message(request);
    EinsoraService *service = einsora_api_server_get_service(server);
    EinsoraSyncTransport *hub = einsora_api_server_get_agent_hub(server);
    const char *problem = einsora_api_agent_certificate_problem(message);
    const char *fingerprint;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraMachine) machine = NULL;
    g_autoptr(EinsoraSyncReport) report = NULL;
    g_autoptr(GHashTable) placed = NULL;
    HeldSync *held;
    guint dropped;

    if (problem != NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_UNAUTHORIZED, "unauthenticated",
                                            problem);
        return;
    }
    fingerprint = einsora_http_message_get_client_certificate(message, NULL);
    machine = einsora_service_find_agent_machine(service, fingerprint, &error);
    if (machine == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    report = read_report(message, &error);
    if (report == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (g_strcmp0(report->machine_id, machine->id) != 0) {
        einsora_api_request_log(request, G_LOG_LEVEL_WARNING,
                                "machine %s's certificate sent a report for another machine",
                                machine->id);
        einsora_api_request_respond_problem(
            request, SOUP_STATUS_FORBIDDEN, "forbidden",
            "this certificate is another machine's than the one the report names");
        return;
    }
    if (hub == NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_SERVICE_UNAVAILABLE, "unavailable",
                                            "this daemon has no hub for agents");
        return;
    }
    placed = einsora_service_placed_workload_ids(service, machine->id, &error);
    if (placed == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    dropped = keep_own_statuses(report, placed);
    if (dropped > 0)
        einsora_api_request_log(request, G_LOG_LEVEL_MESSAGE,
                                "machine %s reported %u workload(s) not placed on it: left out",
                                machine->id, dropped);

    held = g_new0(HeldSync, 1);
    held->server = g_object_ref(server);
    held->machine_id = g_strdup(machine->id);
    hold(held);
    held->request = g_object_ref(request);
    held->message = g_object_ref(message);
    held->cancellable = g_cancellable_new();
    held->hangup_watch = einsora_http_message_watch_hangup(message, on_hangup, held);
    soup_server_message_pause(message);
    einsora_sync_transport_sync_async(hub, report, held->cancellable, on_synced, held);
}
