#define G_LOG_DOMAIN "einsora-daemon"

#include "einsora-agent-join.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <string.h>

#include "einsora-tls-identity.h"

#define JOIN_TIMEOUT_S 30

typedef struct {
    const char *fingerprint;
    gchar *presented; /* the last certificate's, for the message */
} Pin;

/* Every certificate comes here (the session trusts no CA): only the
 * pinned one is accepted, so the token goes nowhere else. */
static gboolean
on_accept_certificate(SoupMessage *message, GTlsCertificate *certificate,
                      GTlsCertificateFlags errors, gpointer user_data)
{
    Pin *pin = user_data;

    g_free(pin->presented);
    pin->presented = einsora_tls_certificate_fingerprint(certificate);
    return einsora_tls_fingerprint_matches(pin->fingerprint, pin->presented);
}

static gboolean
write_private(const char *dir, const char *name, const char *contents, GError **error)
{
    g_autofree gchar *path = g_build_filename(dir, name, NULL);

    return g_file_set_contents_full(path, contents, -1,
                                    G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                    0600, error);
}

static gchar *
server_json(const char *server, const char *fingerprint, const char *owner_tenant_id)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "server");
    json_builder_add_string_value(builder, server);
    json_builder_set_member_name(builder, "fingerprint");
    json_builder_add_string_value(builder, fingerprint);
    json_builder_set_member_name(builder, "owner_tenant_id");
    json_builder_add_string_value(builder, owner_tenant_id);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    return json_to_string(root, TRUE);
}

static gchar *
request_body(const char *token, const char *csr)
{
    g_autoptr(JsonBuilder) builder = json_builder_new();
    g_autoptr(JsonNode) root = NULL;

    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "token");
    json_builder_add_string_value(builder, token);
    json_builder_set_member_name(builder, "csr");
    json_builder_add_string_value(builder, csr);
    json_builder_end_object(builder);
    root = json_builder_get_root(builder);
    return json_to_string(root, FALSE);
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
        JsonObject *root = json_node_get_object(json_parser_get_root(parser));
        JsonNode *problem = json_object_get_member(root, "error");
        if (problem != NULL && JSON_NODE_HOLDS_OBJECT(problem))
            return g_strdup(json_object_get_string_member_with_default(
                json_node_get_object(problem), "message", "refused"));
    }
    return g_strdup_printf("HTTP %u %s", soup_message_get_status(message),
                           soup_status_get_phrase(soup_message_get_status(message)));
}

gchar *
einsora_agent_join(const char *state_dir, const char *server, const char *token,
                   const char *fingerprint, GError **error)
{
    g_autofree gchar *dir = g_build_filename(state_dir, EINSORA_AGENT_JOIN_DIR, NULL);
    g_autofree gchar *id_path = g_build_filename(dir, EINSORA_AGENT_MACHINE_ID_FILE, NULL);
    g_autoptr(GUri) uri = g_uri_parse(server, G_URI_FLAGS_NONE, NULL);
    g_autofree gchar *url = NULL;
    g_autofree gchar *key = NULL;
    g_autofree gchar *csr = NULL;
    g_autofree gchar *body = NULL;
    g_autofree gchar *about = NULL;
    g_autoptr(SoupSession) session = NULL;
    g_autoptr(SoupMessage) message = NULL;
    g_autoptr(GBytes) bytes = NULL;
    g_autoptr(GBytes) payload = NULL;
    g_autoptr(GError) local_error = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *answer;
    const char *machine_id;
    const char *certificate;
    const char *ca;
    const char *owner;
    Pin pin = {fingerprint, NULL};

    if (uri == NULL || g_strcmp0(g_uri_get_scheme(uri), "https") != 0 ||
        g_uri_get_host(uri) == NULL) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--join: \"%s\" is not the server's https:// URL", server);
        return NULL;
    }
    if (!einsora_tls_fingerprint_matches(fingerprint, fingerprint)) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "--fingerprint: \"%s\" is not SHA256: and 64 hex digits",
                    fingerprint != NULL ? fingerprint : "");
        return NULL;
    }
    if (token == NULL || !g_str_has_prefix(token, "enr_")) {
        g_set_error_literal(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                            "--token: give the enrolment token (enr_…) from einsora machines add");
        return NULL;
    }
    if (g_file_test(id_path, G_FILE_TEST_EXISTS)) {
        g_autofree gchar *id = NULL;
        (void)g_file_get_contents(id_path, &id, NULL, NULL);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                    "this machine is enrolled already (as %s, in %s): remove that directory "
                    "to enrol it again",
                    id != NULL ? g_strstrip(id) : "?", dir);
        return NULL;
    }
    if (!einsora_tls_agent_request_new(&key, &csr, error))
        return NULL;

    url = g_uri_join(G_URI_FLAGS_NONE, "https", NULL, g_uri_get_host(uri), g_uri_get_port(uri),
                     "/agent/v1/enroll", NULL, NULL);
    /* No CA database: every certificate goes to the pin. */
    session = soup_session_new_with_options("timeout", JOIN_TIMEOUT_S, "tls-database", NULL, NULL);
    message = soup_message_new("POST", url);
    body = request_body(token, csr);
    payload = g_bytes_new_take(g_strdup(body), strlen(body));
    soup_message_set_request_body_from_bytes(message, "application/json", payload);
    explicit_bzero(body, strlen(body));
    g_signal_connect(message, "accept-certificate", G_CALLBACK(on_accept_certificate), &pin);
    bytes = soup_session_send_and_read(session, message, NULL, &local_error);
    if (bytes == NULL) {
        if (pin.presented != NULL && !einsora_tls_fingerprint_matches(fingerprint, pin.presented))
            g_set_error(error, G_TLS_ERROR, G_TLS_ERROR_BAD_CERTIFICATE,
                        "%s presents the certificate %s, not the one given (%s): nothing was "
                        "sent. Check the command with the server's admin",
                        server, pin.presented, fingerprint);
        else
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "can't reach %s: %s", server,
                        local_error->message);
        g_free(pin.presented);
        return NULL;
    }
    g_free(pin.presented);
    if (soup_message_get_status(message) != SOUP_STATUS_CREATED) {
        g_autofree gchar *why = refusal_of(message, bytes);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED, "%s refused to enrol: %s",
                    server, why);
        return NULL;
    }
    if (!json_parser_load_from_data(parser, g_bytes_get_data(bytes, NULL),
                                    (gssize)g_bytes_get_size(bytes), NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s answered the enrolment with something other than JSON", server);
        return NULL;
    }
    answer = json_node_get_object(json_parser_get_root(parser));
    machine_id = json_object_get_string_member_with_default(answer, "machine_id", NULL);
    certificate = json_object_get_string_member_with_default(answer, "certificate", NULL);
    ca = json_object_get_string_member_with_default(answer, "ca_certificate", NULL);
    owner = json_object_get_string_member_with_default(answer, "owner_tenant_id", NULL);
    if (machine_id == NULL || certificate == NULL || ca == NULL || owner == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s's enrolment answer lacks the machine ID or a certificate", server);
        return NULL;
    }
    about = server_json(server, fingerprint, owner);
    /* The machine ID last: its file says the rest is there. */
    if (g_mkdir_with_parents(dir, 0700) != 0 || g_chmod(dir, 0700) != 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "can't make %s: %s", dir,
                    g_strerror(errno));
        return NULL;
    }
    if (!write_private(dir, EINSORA_AGENT_KEY_FILE, key, error) ||
        !write_private(dir, EINSORA_AGENT_CERT_FILE, certificate, error) ||
        !write_private(dir, EINSORA_AGENT_CA_FILE, ca, error) ||
        !write_private(dir, EINSORA_AGENT_SERVER_FILE, about, error) ||
        !write_private(dir, EINSORA_AGENT_MACHINE_ID_FILE, machine_id, error))
        return NULL;
    explicit_bzero(key, strlen(key));
    return g_strdup(machine_id);
}
