/* Where the app's daemon is and how to reach it. Local (the default):
 * http://127.0.0.1:8080 (or EINSORA_SERVER), the token from the daemon's
 * token file (EINSORA_DATA_DIR, else the user data directory); when
 * nothing answers /readyz there, the app starts einsora-daemon for this
 * user (the systemd user unit when one is installed, else a child in its
 * own session that outlives the app) and waits for it. Remote: a URL and
 * a token the user gave (passed in, else the one EinsoraTokenStore keeps
 * for that URL); nothing is started. */
#pragma once

#include <gio/gio.h>

#include "einsora-client.h"

G_BEGIN_DECLS

#define EINSORA_CONNECTION_ERROR (einsora_connection_error_quark())
GQuark einsora_connection_error_quark(void);

typedef enum {
    EINSORA_CONNECTION_ERROR_NO_TOKEN,
    EINSORA_CONNECTION_ERROR_UNREACHABLE,   /* a remote daemon didn't answer */
    EINSORA_CONNECTION_ERROR_DAEMON_FAILED, /* the local daemon didn't start */
    EINSORA_CONNECTION_ERROR_BAD_SERVER,    /* not an http(s) URL with a host */
    /* a remote https server's certificate is neither the one trusted nor
     * vouched for by a system CA (docs/adr/0047) */
    EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE,
} EinsoraConnectionError;

#define EINSORA_CONNECTION_DEFAULT_SERVER "http://127.0.0.1:8080"

#define EINSORA_TYPE_CONNECTION (einsora_connection_get_type())
G_DECLARE_FINAL_TYPE(EinsoraConnection, einsora_connection, EINSORA, CONNECTION, GObject)

/* @server: (nullable): a daemon's URL; NULL or "" is the local daemon.
 * @token: (nullable): its API token; NULL reads the local token file. */
EinsoraConnection *einsora_connection_new(const char *server, const char *token);
const char *einsora_connection_get_server(EinsoraConnection *self);
gboolean einsora_connection_is_local(EinsoraConnection *self);
/* Whether @server is on this machine (a loopback address or "localhost"):
 * only such a daemon is started by the app and given the local token. */
gboolean einsora_connection_server_is_local(const char *server);
/* Whether @server can be a daemon's address: http or https, with a host. */
gboolean einsora_connection_check_server(const char *server, GError **error);
/* Where a daemon the app starts writes its log. */
const char *einsora_connection_get_log_path(EinsoraConnection *self);

/* Makes sure the daemon answers, starting the local one if it must,
 * within @timeout_ms; a remote one without a token gets the stored one
 * first. "progress" (a string) says what it is doing. */
void einsora_connection_ensure_async(EinsoraConnection *self, guint timeout_ms,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data);
/* The client to use from then on, or NULL with an error whose message
 * a person can act on (for a daemon that failed: with its last log lines). */
EinsoraClient *einsora_connection_ensure_finish(EinsoraConnection *self, GAsyncResult *result,
                                                GError **error);
/* Whether ensure started a daemon (rather than finding one). */
gboolean einsora_connection_started_daemon(EinsoraConnection *self);
/* (nullable) The process ID of the child it started, if it did. */
const char *einsora_connection_get_daemon_pid(EinsoraConnection *self);
const char *einsora_connection_get_token(EinsoraConnection *self);
/* After EINSORA_CONNECTION_ERROR_UNTRUSTED_CERTIFICATE: the fingerprint
 * of the certificate the server presented. */
gchar *einsora_connection_dup_refused_fingerprint(EinsoraConnection *self);
/* Trusts @fingerprint for this server from now on (the pins the CLI's
 * einsora login keeps too); the next ensure uses it. */
gboolean einsora_connection_trust_certificate(EinsoraConnection *self, const char *fingerprint,
                                              GError **error);

G_END_DECLS
