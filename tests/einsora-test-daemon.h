/* The real einsora-daemon for tests: started on a free loopback port with
 * a private data directory, its whole log kept in a file so tests can
 * read it (and check that no secret is in it). */
#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

typedef struct {
    gchar *dir;
    gchar *data_dir;
    gchar *log_path;
    gchar *uri;        /* "http://127.0.0.1:PORT" without the final slash */
    guint access_port; /* the access proxy's, on 127.0.0.1 */
    gchar *owner_token;
    GSubprocess *process;
    SoupSession *session;
    GHashTable *env; /* extra variables for the daemon */
    gchar *listen;   /* where the next start listens; NULL: a free loopback port */
} EinsoraTestDaemon;

typedef struct {
    guint status;
    gchar *body;
    JsonNode *json; /* NULL when the body isn't JSON */
    SoupMessageHeaders *headers;
} EinsoraTestResponse;

const char *einsora_test_daemon_path(void);
/* Whether this run's daemons use the Postgres store (EINSORA_TEST_STORE=
 * postgres): each gets a database of its own on a private server. */
gboolean einsora_test_daemon_on_postgres(void);
/* That server, once a daemon was made on it; NULL before. */
struct _EinsoraTestPostgres *einsora_test_daemon_get_postgres(void);
EinsoraTestDaemon *einsora_test_daemon_new(void);
/* Runs `einsora-daemon account create` on the (stopped) daemon's data
 * directory; returns the new account's API token. */
gchar *einsora_test_daemon_create_account(EinsoraTestDaemon *daemon, const char *tenant,
                                          const char *email, const char *password);
/* Sets a variable for the daemon's next start. */
void einsora_test_daemon_setenv(EinsoraTestDaemon *daemon, const char *name, const char *value);
void einsora_test_daemon_start(EinsoraTestDaemon *daemon);
void einsora_test_daemon_stop(EinsoraTestDaemon *daemon);
/* kill -9: no chance to clean up, as after a crash or power loss. */
void einsora_test_daemon_kill(EinsoraTestDaemon *daemon);
void einsora_test_daemon_free(EinsoraTestDaemon *daemon);
gchar *einsora_test_daemon_read_log(EinsoraTestDaemon *daemon);
/* Whether its log (every run's) holds @needle; and waiting until it does,
 * failing the test after @seconds. */
gboolean einsora_test_daemon_log_has(EinsoraTestDaemon *daemon, const char *needle);
void einsora_test_daemon_wait_for_log(EinsoraTestDaemon *daemon, const char *needle, guint seconds);

/* @headers: NULL-terminated name, value pairs. @token: a bearer token. */
EinsoraTestResponse *einsora_test_request(EinsoraTestDaemon *daemon, const char *method,
                                          const char *path, const char *token,
                                          const char *content_type, const char *body,
                                          const char *const *headers);
void einsora_test_response_free(EinsoraTestResponse *response);
const char *einsora_test_response_string(EinsoraTestResponse *response, const char *member);
const char *einsora_test_response_error_code(EinsoraTestResponse *response);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraTestDaemon, einsora_test_daemon_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraTestResponse, einsora_test_response_free)

G_END_DECLS
