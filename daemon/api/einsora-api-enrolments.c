/* Machines that join over the network (docs/adr/0055).
 *
 * POST /v1/machines/enrolments: a user's one-time token for a machine of
 * theirs, with the one command to run there; the secret is in this answer
 * only (its SHA-256 is stored), and the command pins this API's
 * certificate, so the first connection can't be intercepted.
 *
 * POST /agent/v1/enroll: the agent's token and certificate request. The
 * request is checked and signed first (a bad one burns no token), then
 * the token is taken and the machine made in one transaction, with the
 * owner and region the token fixed. The answer is the agent's client
 * certificate, CN its machine ID, and the CA's. */
#define G_LOG_DOMAIN "einsora-api"

#include "einsora-api-routes.h"

#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-tls-identity.h"
#include "einsora-uuid.h"

#define ENROLMENT_PREFIX "enr_"
/* Renewal comes with the agent's own sync; until then a year. */
#define AGENT_CERTIFICATE_DAYS 365

const EinsoraApiField einsora_api_enrolments_create_fields[] = {
    {"name", G_TYPE_STRING, FALSE},
    {"region", G_TYPE_STRING, FALSE},
    {NULL},
};

const EinsoraApiField einsora_api_agent_enroll_fields[] = {
    {"token", G_TYPE_STRING, TRUE},
    {"csr", G_TYPE_STRING, TRUE},
    {NULL},
};

/* https://<the host this request was sent to>, as the agent will dial it. */
static gchar *
server_url(EinsoraApiRequest *request)
{
    SoupMessageHeaders *headers =
        soup_server_message_get_request_headers(einsora_api_request_get_message(request));
    const char *host = soup_message_headers_get_one(headers, "Host");
    g_autofree gchar *text = host != NULL ? g_strdup_printf("https://%s/", host) : NULL;
    g_autoptr(GUri) uri = text != NULL ? g_uri_parse(text, G_URI_FLAGS_NONE, NULL) : NULL;

    if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0')
        return NULL;
    return g_uri_join(G_URI_FLAGS_NONE, "https", NULL, g_uri_get_host(uri), g_uri_get_port(uri), "",
                      NULL, NULL);
}

void
einsora_api_enrolments_create(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_enrolments_create_fields, &error);
    const char *fingerprint = einsora_api_server_get_tls_fingerprint(server);
    g_autofree gchar *secret = NULL;
    g_autofree gchar *hash = NULL;
    g_autofree gchar *url = NULL;
    g_autofree gchar *command = NULL;
    g_autoptr(EinsoraEnrolment) enrolment = NULL;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *root;
    JsonObject *about;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    /* Agents join over TLS only: a plain API would hand them a token in
     * clear, and there'd be nothing to pin. */
    if (fingerprint == NULL || einsora_api_server_get_agent_ca_dir(server) == NULL) {
        einsora_api_request_respond_problem(
            request, SOUP_STATUS_CONFLICT, "conflict",
            "this daemon's API has no TLS, and machines join over TLS only: listen on an "
            "address other machines reach (--listen 0.0.0.0:8443) or give --tls on");
        return;
    }
    url = server_url(request);
    secret = einsora_credential_new_secret(ENROLMENT_PREFIX);
    if (url == NULL || secret == NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                                            url == NULL ? "the request has no usable Host"
                                                        : "no random bytes for a token");
        return;
    }
    hash = einsora_credential_sha256_hex(secret);
    enrolment = einsora_service_create_enrolment(
        einsora_api_server_get_service(server), einsora_api_request_get_actor(request),
        json_object_get_string_member_with_default(body, "name", NULL),
        json_object_get_string_member_with_default(body, "region", NULL), hash, &error);
    if (enrolment == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    command = g_strdup_printf("einsora-daemon agent --join %s --token %s --fingerprint %s", url,
                              secret, fingerprint);
    root = json_object_new();
    about = json_object_new();
    json_object_set_string_member(about, "id", enrolment->id);
    if (enrolment->name != NULL)
        json_object_set_string_member(about, "name", enrolment->name);
    else
        json_object_set_null_member(about, "name");
    json_object_set_string_member(about, "region", enrolment->region);
    json_object_set_string_member(about, "created_at", enrolment->created_at);
    json_object_set_string_member(about, "expires_at", enrolment->expires_at);
    json_object_set_object_member(root, "enrolment", about);
    json_object_set_string_member(root, "token", secret);
    json_object_set_string_member(root, "server", url);
    json_object_set_string_member(root, "fingerprint", fingerprint);
    json_object_set_string_member(root, "command", command);
    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_CREATED, node);
    explicit_bzero(secret, strlen(secret));
    explicit_bzero(command, strlen(command));
}

void
einsora_api_agent_enroll(EinsoraApiServer *server, EinsoraApiRequest *request)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(JsonObject) body =
        einsora_api_request_parse_body(request, einsora_api_agent_enroll_fields, &error);
    const char *dir = einsora_api_server_get_agent_ca_dir(server);
    const char *token;
    g_autofree gchar *hash = NULL;
    g_autofree gchar *machine_id = NULL;
    g_autofree gchar *certificate = NULL;
    g_autofree gchar *fingerprint = NULL;
    g_autofree gchar *expires_at = NULL;
    g_autofree gchar *ca = NULL;
    g_autoptr(EinsoraEnrolment) enrolment = NULL;
    g_autoptr(JsonNode) node = NULL;
    JsonObject *root;
    gint64 not_after = 0;

    if (body == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    if (einsora_api_server_get_tls_fingerprint(server) == NULL || dir == NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_CONFLICT, "conflict",
                                            "machines join over TLS only, and this API has none");
        return;
    }
    token = json_object_get_string_member(body, "token");
    if (!einsora_credential_looks_like_secret(token, ENROLMENT_PREFIX)) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_UNAUTHORIZED, "unauthenticated",
                                            "not an enrolment token (enr_…)");
        return;
    }
    machine_id = einsora_uuid_v7_new(g_get_real_time() / 1000);
    certificate = einsora_tls_agent_certificate_sign(
        dir, json_object_get_string_member(body, "csr"), machine_id, AGENT_CERTIFICATE_DAYS,
        &fingerprint, &not_after, &error);
    if (certificate == NULL) {
        einsora_api_request_respond_problem(request, SOUP_STATUS_BAD_REQUEST, "invalid_request",
                                            error->message);
        return;
    }
    ca = einsora_tls_identity_read_ca(dir, &error);
    if (ca == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    expires_at = einsora_timestamp_format(not_after * G_USEC_PER_SEC);
    hash = einsora_credential_sha256_hex(token);
    enrolment = einsora_service_enrol_machine(einsora_api_server_get_service(server), hash,
                                              machine_id, fingerprint, expires_at, &error);
    if (enrolment == NULL) {
        einsora_api_request_respond_error(request, error);
        return;
    }
    root = json_object_new();
    json_object_set_string_member(root, "machine_id", machine_id);
    json_object_set_string_member(root, "certificate", certificate);
    json_object_set_string_member(root, "certificate_fingerprint", fingerprint);
    json_object_set_string_member(root, "certificate_expires_at", expires_at);
    json_object_set_string_member(root, "ca_certificate", ca);
    /* The agent runs its owner's workloads on drivers guests may not use
     * (docs/adr/0050): it must know who that is. */
    json_object_set_string_member(root, "owner_tenant_id", enrolment->tenant_id);
    node = json_node_new(JSON_NODE_OBJECT);
    json_node_take_object(node, root);
    einsora_api_request_respond_json(request, SOUP_STATUS_CREATED, node);
}
