#define G_LOG_DOMAIN "einsora-daemon"

#include "einsora-remote-hub.h"

#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-agent-join.h"
#include "einsora-tls-identity.h"

/* The long poll is 20 s: a sync that takes much longer is lost. */
#define SYNC_TIMEOUT_S 45
/* The desired state of 10,000 workloads is well under this. */
#define MAX_ANSWER_BYTES (16 * 1024 * 1024)

struct _EinsoraRemoteHub {
    GObject parent_instance;
    gchar *server;
    gchar *fingerprint;
    gchar *owner_tenant_id; /* NULL: joined before servers said it */
    gchar *url;
    GTlsCertificate *certificate;
    SoupSession *session;
};

static void einsora_remote_hub_transport_iface_init(EinsoraSyncTransportInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(EinsoraRemoteHub, einsora_remote_hub, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_SYNC_TRANSPORT,
                                                    einsora_remote_hub_transport_iface_init))

static void
einsora_remote_hub_finalize(GObject *object)
{
    EinsoraRemoteHub *self = EINSORA_REMOTE_HUB(object);

    g_free(self->server);
    g_free(self->fingerprint);
    g_free(self->owner_tenant_id);
    g_free(self->url);
    g_clear_object(&self->certificate);
    g_clear_object(&self->session);
    G_OBJECT_CLASS(einsora_remote_hub_parent_class)->finalize(object);
}

static void
einsora_remote_hub_class_init(EinsoraRemoteHubClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_remote_hub_finalize;
}

static void
einsora_remote_hub_init(EinsoraRemoteHub *self)
{
}

static gchar *
read_agent_file(const char *dir, const char *name, GError **error)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);
    gchar *contents = NULL;

    if (!g_file_get_contents(path, &contents, NULL, error)) {
        g_prefix_error(error, "this machine isn't enrolled (run einsora-daemon agent --join "
                              "first): ");
        return NULL;
    }
    return contents;
}

EinsoraRemoteHub *
einsora_remote_hub_load(const char *state_dir, gchar **machine_id, GError **error)
{
    g_autofree gchar *dir = g_build_filename(state_dir, EINSORA_AGENT_JOIN_DIR, NULL);
    g_autofree gchar *id = NULL;
    g_autofree gchar *about = NULL;
    g_autofree gchar *cert_path = g_build_filename(dir, EINSORA_AGENT_CERT_FILE, NULL);
    g_autofree gchar *key_path = g_build_filename(dir, EINSORA_AGENT_KEY_FILE, NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GUri) uri = NULL;
    g_autoptr(EinsoraRemoteHub) self = g_object_new(EINSORA_TYPE_REMOTE_HUB, NULL);
    JsonObject *root;

    id = read_agent_file(dir, EINSORA_AGENT_MACHINE_ID_FILE, error);
    if (id == NULL)
        return NULL;
    about = read_agent_file(dir, EINSORA_AGENT_SERVER_FILE, error);
    if (about == NULL)
        return NULL;
    if (!json_parser_load_from_data(parser, about, -1, error) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_clear_error(error);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s/%s is damaged", dir,
                    EINSORA_AGENT_SERVER_FILE);
        return NULL;
    }
    root = json_node_get_object(json_parser_get_root(parser));
    self->server = g_strdup(json_object_get_string_member_with_default(root, "server", NULL));
    self->fingerprint =
        g_strdup(json_object_get_string_member_with_default(root, "fingerprint", NULL));
    self->owner_tenant_id =
        g_strdup(json_object_get_string_member_with_default(root, "owner_tenant_id", NULL));
    uri = self->server != NULL ? g_uri_parse(self->server, G_URI_FLAGS_NONE, NULL) : NULL;
    if (uri == NULL || g_uri_get_host(uri) == NULL || self->fingerprint == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s/%s names no server or fingerprint", dir, EINSORA_AGENT_SERVER_FILE);
        return NULL;
    }
    self->url = g_uri_join(G_URI_FLAGS_NONE, "https", NULL, g_uri_get_host(uri),
                           g_uri_get_port(uri), "/agent/v1/sync", NULL, NULL);
    self->certificate = einsora_tls_identity_load(cert_path, key_path, error);
    if (self->certificate == NULL)
        return NULL;
    /* No CA database: every server certificate goes to the pin. */
    self->session =
        soup_session_new_with_options("timeout", SYNC_TIMEOUT_S, "tls-database", NULL, NULL);
    *machine_id = g_strdup(g_strstrip(id));
    return g_steal_pointer(&self);
}

const char *
einsora_remote_hub_get_server(EinsoraRemoteHub *self)
{
    return self->server;
}

const char *
einsora_remote_hub_get_fingerprint(EinsoraRemoteHub *self)
{
    return self->fingerprint;
}

GTlsCertificate *
einsora_remote_hub_get_certificate(EinsoraRemoteHub *self)
{
    return self->certificate;
}

const char *
einsora_remote_hub_get_owner_tenant_id(EinsoraRemoteHub *self)
{
    return self->owner_tenant_id;
}

static gboolean
on_accept_certificate(SoupMessage *message, GTlsCertificate *certificate,
                      GTlsCertificateFlags errors, gpointer user_data)
{
    EinsoraRemoteHub *self = user_data;
    g_autofree gchar *presented = einsora_tls_certificate_fingerprint(certificate);

    if (einsora_tls_fingerprint_matches(self->fingerprint, presented))
        return TRUE;
    g_warning("%s presents the certificate %s, not the pinned %s: not syncing with it",
              self->server, presented, self->fingerprint);
    return FALSE;
}

/* The API's error message, or the status. */
static gchar *
refusal_of(SoupMessage *message, GBytes *bytes)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    gsize size = 0;
    const char *data = bytes != NULL ? g_bytes_get_data(bytes, &size) : NULL;

    if (data != NULL && json_parser_load_from_data(parser, data, (gssize)size, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        JsonNode *problem =
            json_object_get_member(json_node_get_object(json_parser_get_root(parser)), "error");
        if (problem != NULL && JSON_NODE_HOLDS_OBJECT(problem))
            return g_strdup(json_object_get_string_member_with_default(
                json_node_get_object(problem), "message", "refused"));
    }
    return g_strdup_printf("HTTP %u", soup_message_get_status(message));
}

static void
on_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(GTask) task = user_data;
    EinsoraRemoteHub *self = g_task_get_source_object(task);
    SoupMessage *message = soup_session_get_async_result_message(SOUP_SESSION(source), result);
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) bytes =
        soup_session_send_and_read_finish(SOUP_SESSION(source), result, &error);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) invalid = NULL;
    EinsoraDesiredState *desired;

    if (bytes == NULL) {
        if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
            g_task_return_error(task, g_steal_pointer(&error));
        else
            g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                                    "can't reach %s: %s", self->server, error->message);
        return;
    }
    if (soup_message_get_status(message) != SOUP_STATUS_OK) {
        g_autofree gchar *why = refusal_of(message, bytes);
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                                "%s refused the sync: %s", self->server, why);
        return;
    }
    if (g_bytes_get_size(bytes) > MAX_ANSWER_BYTES ||
        !json_parser_load_from_data(parser, g_bytes_get_data(bytes, NULL),
                                    (gssize)g_bytes_get_size(bytes), NULL)) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                "%s answered the sync with something other than JSON",
                                self->server);
        return;
    }
    desired = einsora_desired_state_from_json(json_parser_get_root(parser), &invalid);
    if (desired == NULL) {
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                "%s answered the sync with no desired state: %s", self->server,
                                invalid->message);
        return;
    }
    g_task_return_pointer(task, desired, (GDestroyNotify)einsora_desired_state_free);
}

static void
einsora_remote_hub_sync_async(EinsoraSyncTransport *transport, const EinsoraSyncReport *report,
                              GCancellable *cancellable, GAsyncReadyCallback callback,
                              gpointer user_data)
{
    EinsoraRemoteHub *self = EINSORA_REMOTE_HUB(transport);
    GTask *task = g_task_new(self, cancellable, callback, user_data);
    g_autoptr(SoupMessage) message = soup_message_new("POST", self->url);
    g_autoptr(JsonNode) node = einsora_sync_report_to_json(report);
    gsize length = 0;
    gchar *body = json_to_string(node, FALSE);
    g_autoptr(GBytes) payload = NULL;

    g_task_set_source_tag(task, einsora_remote_hub_sync_async);
    length = strlen(body);
    payload = g_bytes_new_take(body, length);
    soup_message_set_request_body_from_bytes(message, "application/json", payload);
    soup_message_set_tls_client_certificate(message, self->certificate);
    /* A sync may be sent again as it is (a report says where things are;
     * a replay is taken once): without the flag libsoup opens a new
     * connection, and a TLS handshake, for every POST. */
    soup_message_add_flags(message, SOUP_MESSAGE_IDEMPOTENT);
    g_signal_connect(message, "accept-certificate", G_CALLBACK(on_accept_certificate), self);
    soup_session_send_and_read_async(self->session, message, G_PRIORITY_DEFAULT, cancellable,
                                     on_answer, task);
}

static EinsoraDesiredState *
einsora_remote_hub_sync_finish(EinsoraSyncTransport *transport, GAsyncResult *result,
                               GError **error)
{
    g_return_val_if_fail(g_task_is_valid(result, transport), NULL);
    return g_task_propagate_pointer(G_TASK(result), error);
}

static void
einsora_remote_hub_transport_iface_init(EinsoraSyncTransportInterface *iface)
{
    iface->sync_async = einsora_remote_hub_sync_async;
    iface->sync_finish = einsora_remote_hub_sync_finish;
}
