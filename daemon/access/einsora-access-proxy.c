#define G_LOG_DOMAIN "einsora-access"

#include "einsora-access-proxy.h"

#include <gio/gunixsocketaddress.h>
#include <libsoup/soup.h>
#include <string.h>
#include <unistd.h>

#include "einsora-access-host.h"
#include "einsora-credential.h"
#include "einsora-tunnels.h"
#include "einsora-endpoint-routes.h"
#include "einsora-error.h"
#include "einsora-http-edge.h"
#include "einsora-unix-socket.h"
#include "einsora-upstream.h"
#include "einsora-uuid.h"
#include "einsora-websocket-tunnel.h"

#define CHUNK_SIZE (256 * 1024)
/* The first read of an answer: most are small, and a buffer this size
 * stays in malloc's pool instead of growing and trimming the heap on
 * every request. Reads double up to CHUNK_SIZE while they come back full. */
#define FIRST_READ_SIZE (16 * 1024)
/* A text answer of known length up to this is scrubbed whole and sent
 * with its new length: chunked encoding costs more than the copy. */
#define SCRUB_WHOLE_LIMIT (1024 * 1024)
#define COOKIE_PREFIX "eas_"

/* Where requests go: a running workload's socket and token. Shared by a
 * session and the requests it forwards, so counted. */
typedef struct {
    guint refs;
    gchar *workload_id;
    gchar *socket_path;
    gchar *token;
    /* The socket, opened once without following links (the notebook can
     * write its directory) and checked to be this user's: each request
     * connects through it, as /proc/self/fd/N. -1 until first used. */
    int socket_fd;
    gchar *socket_address;
    /* An endpoint's worker (llama-server): its key goes as a Bearer
     * token, and the client's cookies never go at all. */
    gboolean endpoint;
    /* On another machine: reached through its agent's tunnel, which adds
     * the token (docs/adr/0059). Then no socket or token is known here. */
    gchar *machine_id;
    gint64 attempt;
} Target;

/* A browser's session with one workload, behind its cookie (kept here as
 * its SHA-256 only), bound to the server run it opened. It holds that
 * run's way in, looked up once: a proxied request reads no store. The
 * value is let go when its tenant's timeline grows (every stop, failure,
 * delete and new attempt is an event there), and the next request looks
 * again (docs/adr/0030). */
typedef struct {
    gchar *tenant_id;
    gchar *workload_id;
    gint64 attempt;
    gchar *token_hash; /* which server run: a new run has a new token */
    gint64 expires_us;
    Target *target; /* NULL until looked up, or once stale */
} AccessSession;

struct _EinsoraAccessProxy {
    GObject parent_instance;

    EinsoraService *service;
    EinsoraAuth *auth; /* API tokens, for endpoints */
    EinsoraWorkloadAccess *targets;
    EinsoraTunnels *tunnels; /* NULL: workloads on this machine only */
    EinsoraNowFunc now;
    gpointer now_data;
    SoupServer *server;
    EinsoraHttpEdge *edge; /* listening and request hygiene (docs/adr/0025) */
    guint port;
    gboolean tls; /* off loopback, for browsers behind a relay (docs/adr/0053) */
    guint64 websocket_max_message;
    GHashTable *sessions; /* SHA-256 of the cookie -> AccessSession */
    gulong events_handler;
    guint64 lookups; /* of a session's way in, through @targets */
    /* /metrics (docs/adr/0043-metrics.md); NULL families count nothing. */
    EinsoraMetrics *metrics;
    EinsoraMetric *requests;
    EinsoraMetric *request_duration;
    EinsoraMetric *relays_open;
};

/* When a request began and what it was for, on its message until it is
 * counted (finished, aborted, or switched to a WebSocket). */
typedef struct {
    gint64 started_us;
    const char *kind; /* "notebook", "endpoint" or "other" (refused before either) */
} RequestClock;

#define REQUEST_CLOCK "einsora-request-clock"

G_DEFINE_FINAL_TYPE(EinsoraAccessProxy, einsora_access_proxy, G_TYPE_OBJECT)

static void
target_free(Target *target)
{
    if (target == NULL || --target->refs > 0)
        return;
    if (target->socket_fd >= 0)
        close(target->socket_fd);
    g_free(target->socket_address);
    g_free(target->workload_id);
    g_free(target->socket_path);
    g_free(target->machine_id);
    if (target->token != NULL)
        explicit_bzero(target->token, strlen(target->token));
    g_free(target->token);
    g_free(target);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Target, target_free)

static Target *
target_ref(Target *target)
{
    target->refs++;
    return target;
}

static void
session_free(AccessSession *session)
{
    target_free(session->target);
    g_free(session->tenant_id);
    g_free(session->workload_id);
    g_free(session->token_hash);
    g_free(session);
}

static gint64
proxy_now(EinsoraAccessProxy *self)
{
    return self->now(self->now_data);
}

/* Small pages for what can't be forwarded: clear, never a hang. */
static void
respond_page(SoupServerMessage *msg, guint status, const char *title, const char *text)
{
    g_autofree gchar *title_html = g_markup_escape_text(title, -1);
    g_autofree gchar *text_html = g_markup_escape_text(text, -1);
    g_autofree gchar *body = g_strdup_printf(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head>"
        "<body style=\"font-family: sans-serif; margin: 3em\"><h1>%s</h1><p>%s</p></body></html>\n",
        title_html, title_html, text_html);
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);

    soup_message_headers_replace(headers, "Cache-Control", "no-store");
    soup_message_headers_replace(headers, "Content-Security-Policy", "default-src 'none'");
    soup_message_headers_replace(headers, "Referrer-Policy", "no-referrer");
    soup_server_message_set_status(msg, status, NULL);
    soup_server_message_set_response(msg, "text/html; charset=utf-8", SOUP_MEMORY_COPY, body,
                                     strlen(body));
}

/* An endpoint's answers, in OpenAI's error shape (docs/adr/0034): what
 * its clients parse. */
static void
respond_endpoint_error(SoupServerMessage *msg, guint status, const char *message, const char *type,
                       const char *code)
{
    g_autofree gchar *body = einsora_endpoint_error_json(message, type, code);

    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Cache-Control",
                                 "no-store");
    soup_server_message_set_status(msg, status, NULL);
    soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_COPY, body, strlen(body));
}

/* The workload's side can't be had (or broke off before answering). */
static void
respond_unreachable(SoupServerMessage *msg, const Target *target, const char *what)
{
    g_autofree gchar *message = NULL;

    if (!target->endpoint) {
        respond_page(msg, SOUP_STATUS_BAD_GATEWAY,
                     g_str_equal(what, "didn't answer") ? "The notebook didn't answer"
                                                        : "The notebook isn't reachable",
                     "It may be starting or stopping. Try again in a moment.");
        return;
    }
    message =
        g_strdup_printf("the endpoint's model server %s; it may be starting or stopping", what);
    respond_endpoint_error(msg, SOUP_STATUS_BAD_GATEWAY, message, "server_error",
                           "endpoint_unavailable");
}

static void
log_request(SoupServerMessage *msg, const char *workload_id, guint status, const char *note)
{
    GUri *uri = soup_server_message_get_uri(msg);
    /* A page load is dozens of requests: the ordinary ones are debug
     * lines (not even formatted unless shown); refusals, failures and
     * openings are for the operator. */
    GLogLevelFlags level = note == NULL && status < 400 ? G_LOG_LEVEL_DEBUG : G_LOG_LEVEL_MESSAGE;

    if (level == G_LOG_LEVEL_DEBUG && g_log_writer_default_would_drop(level, G_LOG_DOMAIN))
        return;
    /* The path only: the query of /_einsora/open holds a ticket. */
    g_log_structured(G_LOG_DOMAIN, level, "EINSORA_WORKLOAD_ID",
                     workload_id != NULL ? workload_id : "", "MESSAGE", "access %s %s %s %u%s%s",
                     workload_id != NULL ? workload_id : "-", soup_server_message_get_method(msg),
                     g_uri_get_path(uri), status, note != NULL ? ": " : "",
                     note != NULL ? note : "");
}

/* What to connect to: the socket opened once (see Target). */
static const char *
target_address(Target *target, GError **error)
{
    if (target->socket_path == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "it runs on another machine");
        return NULL;
    }
    if (target->socket_address == NULL)
        target->socket_address =
            einsora_unix_socket_open_own(target->socket_path, &target->socket_fd, error);
    return target->socket_address;
}

/* Which server run a session opened: a new run has a new token. Through
 * a tunnel the token isn't known here; the attempt on its machine is. */
static gchar *
target_run_hash(const Target *target)
{
    g_autofree gchar *run = NULL;

    if (target->token != NULL)
        return einsora_credential_sha256_hex(target->token);
    run = g_strdup_printf("tunnel %s %" G_GINT64_FORMAT, target->machine_id, target->attempt);
    return einsora_credential_sha256_hex(run);
}

/* A stream to @target on its machine, through its agent's tunnel. */
static int
tunnel_open(EinsoraAccessProxy *self, const Target *target, GError **error)
{
    return einsora_tunnels_open(self->tunnels, target->machine_id, target->workload_id,
                                target->attempt, target->endpoint ? "Bearer" : "token", error);
}

/* The running workload behind @tenant_id's @workload_id, if any. */
static Target *
lookup_target(EinsoraAccessProxy *self, const char *tenant_id, const char *workload_id,
              gint64 *attempt)
{
    g_autoptr(Target) target = g_new0(Target, 1);
    g_autoptr(GError) error = NULL;

    target->refs = 1;
    target->socket_fd = -1;
    target->workload_id = g_strdup(workload_id);
    self->lookups++;
    if (!einsora_workload_access_lookup(self->targets, tenant_id, workload_id, attempt,
                                        &target->socket_path, &target->token, &error)) {
        g_autoptr(GError) remote_error = NULL;

        if (self->tunnels != NULL)
            target->machine_id = einsora_workload_access_lookup_remote(
                self->targets, tenant_id, workload_id, attempt, &remote_error);
        if (target->machine_id == NULL) {
            g_debug("access %s: %s", workload_id, error->message);
            return NULL;
        }
        target->attempt = *attempt;
        return g_steal_pointer(&target);
    }
    target->attempt = *attempt;
    /* Opened now, held with the rest (a socket not there yet is tried
     * again by the request that needs it). */
    (void)target_address(target, NULL);
    return g_steal_pointer(&target);
}

/* The tenant's timeline grew (after its commit): its sessions' ways in
 * may be of a run that ended. They are let go (with the socket each
 * holds open) and looked up again when next used. A pass over the
 * sessions, which are few next to what an event costs to write. */
static void
on_events_added(EinsoraService *service, const char *tenant_id, gpointer user_data)
{
    EinsoraAccessProxy *self = user_data;
    GHashTableIter iter;
    AccessSession *session;

    g_hash_table_iter_init(&iter, self->sessions);
    while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&session)) {
        if (session->target != NULL &&
            (tenant_id == NULL || g_strcmp0(session->tenant_id, tenant_id) == 0))
            g_clear_pointer(&session->target, target_free);
    }
}

/* A session for @workload_id from this request's cookie, checked against
 * the server that runs now; removed when that server is gone. */
static Target *
session_target(EinsoraAccessProxy *self, SoupServerMessage *msg, const char *workload_id,
               const char **refusal)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    g_autofree gchar *rest = NULL;
    g_autofree gchar *cookie =
        einsora_access_cookie_take(soup_message_headers_get_one(headers, "Cookie"), &rest);
    g_autofree gchar *hash = NULL;
    g_autofree gchar *token_hash = NULL;
    g_autoptr(Target) target = NULL;
    AccessSession *session;
    gint64 attempt = -1;

    if (cookie == NULL) {
        *refusal = "no session";
        return NULL;
    }
    hash = einsora_credential_sha256_hex(cookie);
    explicit_bzero(cookie, strlen(cookie));
    session = g_hash_table_lookup(self->sessions, hash);
    if (session == NULL || g_strcmp0(session->workload_id, workload_id) != 0) {
        *refusal = "unknown session";
        return NULL;
    }
    if (proxy_now(self) >= session->expires_us) {
        g_hash_table_remove(self->sessions, hash);
        *refusal = "session expired";
        return NULL;
    }
    if (session->target != NULL)
        return target_ref(session->target);
    target = lookup_target(self, session->tenant_id, workload_id, &attempt);
    if (target != NULL)
        token_hash = target_run_hash(target);
    if (target == NULL || attempt != session->attempt ||
        g_strcmp0(token_hash, session->token_hash) != 0) {
        /* The server it opened is gone: so is the session. */
        g_hash_table_remove(self->sessions, hash);
        *refusal = "its server stopped";
        return NULL;
    }
    session->target = target_ref(target);
    return g_steal_pointer(&target);
}

/* Opening: the ticket, once, at its own workload's host. */
static void
handle_open(EinsoraAccessProxy *self, SoupServerMessage *msg, const char *workload_id)
{
    const char *query = g_uri_get_query(soup_server_message_get_uri(msg));
    g_autofree gchar *ticket = einsora_access_ticket_parse(query);
    g_autofree gchar *ticket_hash = NULL;
    g_autoptr(EinsoraAccessTicket) taken = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(Target) target = NULL;
    g_autofree gchar *cookie = NULL;
    g_autofree gchar *set_cookie = NULL;
    AccessSession *session;
    gint64 attempt = -1;
    const char *page = "<!doctype html><html><head><meta charset=\"utf-8\">"
                       "<meta http-equiv=\"refresh\" content=\"0; url=/\">"
                       "<title>Opening…</title></head><body><p><a href=\"/\">Open the "
                       "notebook</a></p></body></html>\n";
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);

    if (g_strcmp0(soup_server_message_get_method(msg), "GET") != 0 || ticket == NULL) {
        respond_page(msg, SOUP_STATUS_BAD_REQUEST, "Not a way in",
                     "Open notebooks from Einsora: it gives a link that works once.");
        log_request(msg, workload_id, SOUP_STATUS_BAD_REQUEST, "no ticket, or not one of ours");
        return;
    }
    ticket_hash = einsora_credential_sha256_hex(ticket);
    taken = einsora_service_take_access_ticket(self->service, ticket_hash, &error);
    /* Taken (and so spent) even at the wrong host: a ticket works once. */
    if (taken == NULL || g_strcmp0(taken->workload_id, workload_id) != 0) {
        respond_page(msg, SOUP_STATUS_FORBIDDEN, "This link doesn't open anything",
                     "It was used already, it expired (links work for a minute), or it is for "
                     "another notebook. Open the notebook again from Einsora.");
        log_request(msg, workload_id, SOUP_STATUS_FORBIDDEN,
                    taken == NULL ? "ticket unknown, used or expired" : "ticket for another host");
        return;
    }
    target = lookup_target(self, taken->tenant_id, workload_id, &attempt);
    if (target == NULL) {
        respond_page(msg, SOUP_STATUS_NOT_FOUND, "This notebook isn't running",
                     "Start it from Einsora, then open it again.");
        log_request(msg, workload_id, SOUP_STATUS_NOT_FOUND, "not running");
        return;
    }
    cookie = einsora_credential_new_secret(COOKIE_PREFIX);
    session = g_new0(AccessSession, 1);
    session->tenant_id = g_strdup(taken->tenant_id);
    session->workload_id = g_strdup(workload_id);
    session->attempt = attempt;
    session->token_hash = target_run_hash(target);
    session->expires_us = proxy_now(self) + EINSORA_ACCESS_SESSION_US;
    session->target = target_ref(target);
    g_hash_table_replace(self->sessions, einsora_credential_sha256_hex(cookie), session);
    /* Host-only (no Domain), for the whole site, never for scripts. */
    set_cookie =
        g_strdup_printf(EINSORA_ACCESS_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict", cookie);
    soup_message_headers_append(headers, "Set-Cookie", set_cookie);
    explicit_bzero(set_cookie, strlen(set_cookie));
    explicit_bzero(cookie, strlen(cookie));
    soup_message_headers_replace(headers, "Cache-Control", "no-store");
    soup_message_headers_replace(headers, "Referrer-Policy", "no-referrer");
    /* Not a redirect: the next page load starts from this site, so the
     * SameSite=Strict cookie goes with it. */
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "text/html; charset=utf-8", SOUP_MEMORY_STATIC, page,
                                     strlen(page));
    log_request(msg, workload_id, SOUP_STATUS_OK, "opened");
}

/* Whether a browser says this request came from another origin. Opening
 * (a top-level navigation from the app or dashboard) is the exception. */
static gboolean
from_another_origin(SoupServerMessage *msg, const char *workload_id, guint port, gboolean opening)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    const char *origin = soup_message_headers_get_one(headers, "Origin");
    const char *site = soup_message_headers_get_one(headers, "Sec-Fetch-Site");
    g_autofree gchar *own = NULL;

    if (opening)
        return origin != NULL && g_strcmp0(soup_server_message_get_method(msg), "GET") != 0;
    if (site != NULL && g_strcmp0(site, "same-origin") != 0 && g_strcmp0(site, "none") != 0)
        return TRUE;
    if (origin == NULL)
        return FALSE;
    own = port != 0 ? g_strdup_printf("http://w-%s.localhost:%u", workload_id, port)
                    : g_strdup_printf("http://w-%s.localhost", workload_id);
    return g_ascii_strcasecmp(origin, own) != 0;
}

/* Forwarding: one request, streamed back, through an EinsoraUpstream of
 * its own (docs/adr/0030). */

typedef struct {
    EinsoraAccessProxy *self; /* owned */
    SoupServerMessage *msg;   /* owned */
    Target *target;
    EinsoraUpstream *upstream;
    gulong finished_handler;
    gulong disconnected_handler;
    gulong wrote_handler;
    GSource *hangup_watch;
    guint end_id;         /* ends a forward whose message libsoup finished */
    gboolean client_gone; /* hung up, or the message is over */
    gboolean finished;    /* libsoup is done with the message */
    guint status;
    /* Text the server writes may hold its own token (Jupyter puts it in
     * its pages for its scripts): it is taken out on the way, with the
     * tail of each chunk held back in case a token spans two. */
    gboolean scrub;
    gboolean scrub_whole; /* read all, scrub, send with its length */
    GString *held;
    /* A request body goes to the workload as libsoup reads it; the
     * answer waits until the handler has run (the body is all read). */
    gulong chunk_handler;
    gulong body_handler;
    gboolean body_paused; /* the browser's body waits for the workload */
    gboolean handler_ran;
    /* The workload's answer, or why there is none. */
    gboolean answered;
    guint answer_status;
    gchar *answer_reason;
    SoupMessageHeaders *answer_headers;
    gchar *failure;
    gsize read_size; /* of the next read of the answer */
} Forward;

static void
forward_free(Forward *forward)
{
    einsora_upstream_free(forward->upstream);
    if (forward->chunk_handler != 0)
        g_signal_handler_disconnect(forward->msg, forward->chunk_handler);
    if (forward->body_handler != 0)
        g_signal_handler_disconnect(forward->msg, forward->body_handler);
    if (forward->held != NULL) {
        explicit_bzero(forward->held->str, forward->held->len);
        g_string_free(forward->held, TRUE);
    }
    if (forward->finished_handler != 0)
        g_signal_handler_disconnect(forward->msg, forward->finished_handler);
    if (forward->disconnected_handler != 0)
        g_signal_handler_disconnect(forward->msg, forward->disconnected_handler);
    if (forward->hangup_watch != NULL) {
        g_source_destroy(forward->hangup_watch);
        g_source_unref(forward->hangup_watch);
    }
    if (forward->wrote_handler != 0)
        g_signal_handler_disconnect(forward->msg, forward->wrote_handler);
    g_clear_handle_id(&forward->end_id, g_source_remove);
    g_free(forward->answer_reason);
    g_free(forward->failure);
    if (forward->answer_headers != NULL)
        soup_message_headers_unref(forward->answer_headers);
    target_free(forward->target);
    g_object_set_data(G_OBJECT(forward->msg), "einsora-forward", NULL);
    g_clear_object(&forward->msg);
    g_clear_object(&forward->self);
    g_free(forward);
}

static void
remove_all(GString *text, const char *needle)
{
    gsize length = needle != NULL ? strlen(needle) : 0;
    char *found;

    while (length > 0 && (found = memmem(text->str, text->len, needle, length)) != NULL)
        g_string_erase(text, found - text->str, (gssize)length);
}

static gboolean
is_hop_by_hop(const char *name, const char *connection)
{
    static const char *const names[] = {"Connection",
                                        "Keep-Alive",
                                        "Proxy-Authenticate",
                                        "Proxy-Authorization",
                                        "Proxy-Connection",
                                        "TE",
                                        "Trailer",
                                        "Transfer-Encoding",
                                        "Upgrade"};

    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        if (g_ascii_strcasecmp(name, names[i]) == 0)
            return TRUE;
    }
    /* Whatever Connection names is hop-by-hop too. */
    if (connection != NULL) {
        g_auto(GStrv) listed = g_strsplit(connection, ",", -1);
        for (guint i = 0; listed[i] != NULL; i++) {
            if (g_ascii_strcasecmp(g_strstrip(listed[i]), name) == 0)
                return TRUE;
        }
    }
    return FALSE;
}

/* The head that goes upstream: the browser's headers less hop-by-hop
 * ones, the proxy's cookie, any credentials of its own, and Host/Origin
 * as the server expects them; plus the workload's token. Accept-Encoding
 * is left out too: a compressed answer couldn't be scrubbed, and compression
 * over a local socket only costs. Expect is libsoup's to answer. */
static void
append_request_headers(GString *head, SoupMessageHeaders *from, const Target *target,
                       gboolean websocket, const char *request_id)
{
    const char *connection = soup_message_headers_get_list(from, "Connection");
    SoupMessageHeadersIter iter;
    const char *name, *value;

    soup_message_headers_iter_init(&iter, from);
    while (soup_message_headers_iter_next(&iter, &name, &value)) {
        if (is_hop_by_hop(name, connection) || g_ascii_strcasecmp(name, "Host") == 0 ||
            g_ascii_strcasecmp(name, "Cookie") == 0 ||
            g_ascii_strcasecmp(name, "Authorization") == 0 ||
            g_ascii_strcasecmp(name, "Origin") == 0 || g_ascii_strcasecmp(name, "Referer") == 0 ||
            g_ascii_strcasecmp(name, "Content-Length") == 0 ||
            g_ascii_strcasecmp(name, "Expect") == 0 ||
            g_ascii_strcasecmp(name, "Accept-Encoding") == 0 ||
            (websocket && g_ascii_strncasecmp(name, "Sec-WebSocket-", 14) == 0) ||
            (request_id != NULL && g_ascii_strcasecmp(name, "X-Request-ID") == 0))
            continue;
        g_string_append(head, name);
        g_string_append(head, ": ");
        g_string_append(head, value);
        g_string_append(head, "\r\n");
    }
    /* A worker has no use for a client's cookies: none go. */
    if (!target->endpoint) {
        g_autofree gchar *rest = NULL;
        g_autofree gchar *ours =
            einsora_access_cookie_take(soup_message_headers_get_one(from, "Cookie"), &rest);
        if (ours != NULL)
            explicit_bzero(ours, strlen(ours));
        if (rest != NULL)
            g_string_append_printf(head, "Cookie: %s\r\n", rest);
    }
    if (soup_message_headers_get_one(from, "Origin") != NULL)
        g_string_append(head, "Origin: http://localhost\r\n");
    if (request_id != NULL)
        g_string_append_printf(head, "X-Request-ID: %s\r\n", request_id);
    /* Through a tunnel the agent adds it (docs/adr/0059). */
    if (target->token != NULL)
        g_string_append_printf(head, "Authorization: %s %s\r\n",
                               target->endpoint ? "Bearer" : "token", target->token);
}

/* The request line, for the workload's own name for itself. @route: an
 * endpoint's inference route, asked as it is (no query), else NULL. */
static GString *
request_line(SoupServerMessage *msg, const char *route)
{
    GUri *uri = soup_server_message_get_uri(msg);
    const char *query = route == NULL ? g_uri_get_query(uri) : NULL;
    GString *head = g_string_sized_new(1024);

    g_string_append_printf(head, "%s %s%s%s HTTP/1.1\r\nHost: localhost\r\n",
                           soup_server_message_get_method(msg),
                           route != NULL ? route : g_uri_get_path(uri), query != NULL ? "?" : "",
                           query != NULL ? query : "");
    return head;
}

static void
copy_response_headers(SoupMessageHeaders *from, SoupMessageHeaders *to, const char *token,
                      gboolean endpoint)
{
    const char *connection = soup_message_headers_get_list(from, "Connection");
    SoupMessageHeadersIter iter;
    const char *name, *value;

    soup_message_headers_iter_init(&iter, from);
    while (soup_message_headers_iter_next(&iter, &name, &value)) {
        g_autoptr(GString) clean = NULL;

        /* Date and Server are the proxy's own answer's. */
        if (is_hop_by_hop(name, connection) || g_ascii_strcasecmp(name, "Content-Length") == 0 ||
            g_ascii_strcasecmp(name, "Date") == 0 || g_ascii_strcasecmp(name, "Server") == 0 ||
            (g_ascii_strcasecmp(name, "Set-Cookie") == 0 && einsora_access_cookie_is_ours(value)) ||
            /* The proxy says which request and where it ran. */
            (endpoint && (g_ascii_strcasecmp(name, "X-Request-ID") == 0 ||
                          g_ascii_strncasecmp(name, "X-Einsora-", 10) == 0)))
            continue;
        /* A redirect to ?token=... would hand the browser the token. */
        clean = g_string_new(value);
        remove_all(clean, token);
        /* The workload knows itself as http://localhost (the Host it was
         * sent): its absolute redirects stay at the workload's own site. */
        if (g_ascii_strcasecmp(name, "Location") == 0 &&
            g_str_has_prefix(clean->str, "http://localhost") &&
            (clean->str[strlen("http://localhost")] == '/' ||
             clean->str[strlen("http://localhost")] == '\0')) {
            g_string_erase(clean, 0, (gssize)strlen("http://localhost"));
            if (clean->len == 0)
                g_string_append_c(clean, '/');
        }
        soup_message_headers_append(to, name, clean->str);
    }
}

static void pump(Forward *forward);
static GBytes *scrub_chunk(Forward *forward, GBytes *chunk);

/* The end of a forward. A message libsoup still has is unpaused, also
 * when its client hung up, so that libsoup finishes it (the write fails)
 * and lets go of the connection: an answer not begun becomes a 499
 * (nginx's "client closed request"), one begun is cut short. */
static void
forward_end(Forward *forward)
{
    if (!forward->finished) {
        if (forward->client_gone && forward->wrote_handler == 0) {
            soup_server_message_set_status(forward->msg, 499, "Client Closed Request");
            soup_server_message_set_response(forward->msg, NULL, SOUP_MEMORY_STATIC, NULL, 0);
            forward->status = 499;
        } else if (forward->client_gone) {
            soup_message_body_complete(soup_server_message_get_response_body(forward->msg));
        }
        soup_server_message_unpause(forward->msg);
    }
    log_request(forward->msg, forward->target->workload_id, forward->status, NULL);
    forward_free(forward);
}

static void
on_upstream_body(EinsoraUpstream *upstream, GBytes *chunk, gboolean end, const GError *error,
                 gpointer user_data)
{
    Forward *forward = user_data;
    SoupMessageBody *body;
    gboolean appended = FALSE;

    if (forward->client_gone) {
        forward_end(forward);
        return;
    }
    body = soup_server_message_get_response_body(forward->msg);
    if (chunk != NULL && g_bytes_get_size(chunk) == forward->read_size)
        forward->read_size = MIN(forward->read_size * 2, CHUNK_SIZE);
    if (chunk != NULL && forward->scrub_whole) {
        gsize size = 0;
        const char *data = g_bytes_get_data(chunk, &size);
        g_string_append_len(forward->held, data, (gssize)size);
    } else if (chunk != NULL && forward->scrub) {
        g_autoptr(GBytes) clean = scrub_chunk(forward, chunk);
        if (g_bytes_get_size(clean) > 0) {
            soup_message_body_append_bytes(body, clean);
            appended = TRUE;
        }
    } else if (chunk != NULL) {
        soup_message_body_append_bytes(body, chunk);
        appended = TRUE;
    }
    if (!end) {
        /* The next read waits until this chunk is written: memory stays
         * one chunk per request, whatever the size of the answer. What is
         * all held back is read on at once. */
        if (appended)
            soup_server_message_unpause(forward->msg);
        else
            pump(forward);
        return;
    }
    /* The end, or the workload broke off: end what the client has. */
    if (error != NULL)
        g_message("access %s: reading its answer: %s", forward->target->workload_id,
                  error->message);
    if (forward->scrub_whole) {
        remove_all(forward->held, forward->target->token);
        soup_message_headers_set_content_length(
            soup_server_message_get_response_headers(forward->msg), forward->held->len);
    }
    if (forward->held != NULL && forward->held->len > 0)
        soup_message_body_append(body, SOUP_MEMORY_COPY, forward->held->str, forward->held->len);
    soup_message_body_complete(body);
    forward_end(forward);
}

/* The chunk with the token taken out, less a tail shorter than the token
 * that waits for the next chunk. */
static GBytes *
scrub_chunk(Forward *forward, GBytes *chunk)
{
    gsize token_length = strlen(forward->target->token);
    gsize size = 0;
    const char *data = g_bytes_get_data(chunk, &size);
    gsize keep;
    GBytes *clean;

    g_string_append_len(forward->held, data, (gssize)size);
    remove_all(forward->held, forward->target->token);
    keep = MIN(forward->held->len, token_length - 1);
    /* A token has no line break: none can span one, so a chunk that ends
     * a line (every SSE event does) goes on whole, not a token's length
     * later. */
    {
        const char *newline = g_strrstr_len(forward->held->str, (gssize)forward->held->len, "\n");
        if (newline != NULL)
            keep = MIN(keep, forward->held->len - (gsize)(newline - forward->held->str) - 1);
    }
    clean = g_bytes_new(forward->held->str, forward->held->len - keep);
    g_string_erase(forward->held, 0, (gssize)(forward->held->len - keep));
    return clean;
}

/* Text that a page or a script could carry: scrubbed. */
static gboolean
is_text(SoupMessageHeaders *headers)
{
    const char *type = soup_message_headers_get_content_type(headers, NULL);

    return type == NULL || g_str_has_prefix(type, "text/") ||
           g_str_equal(type, "application/javascript") || g_str_equal(type, "application/json") ||
           g_str_has_suffix(type, "+json") || g_str_has_suffix(type, "+xml");
}

static void
on_chunk_written(SoupServerMessage *msg, gsize chunk_size, gpointer user_data)
{
    Forward *forward = user_data;

    pump(forward);
}

static void
pump(Forward *forward)
{
    einsora_upstream_read_body(forward->upstream, forward->read_size);
}

static gboolean
on_finished_idle(gpointer user_data)
{
    Forward *forward = user_data;

    forward->end_id = 0;
    forward_end(forward);
    return G_SOURCE_REMOVE;
}

static void
on_client_finished(SoupServerMessage *msg, gpointer user_data)
{
    Forward *forward = user_data;

    /* The browser went away before the answer's end: the workload's side
     * closes now, and the rest ends outside libsoup's signal. */
    forward->client_gone = TRUE;
    forward->finished = TRUE;
    g_clear_pointer(&forward->upstream, einsora_upstream_free);
    if (forward->end_id == 0)
        forward->end_id = g_idle_add(on_finished_idle, forward);
}

/* While the answer is awaited the request is paused, and libsoup reads
 * nothing: the edge watches the browser's connection for its hang-up. */
static gboolean
on_client_hangup(GCancellable *hangup, gpointer user_data)
{
    Forward *forward = user_data;

    g_clear_pointer(&forward->hangup_watch, g_source_unref);
    forward->client_gone = TRUE;
    forward_end(forward);
    return G_SOURCE_REMOVE;
}

static void
watch_client(Forward *forward)
{
    forward->hangup_watch =
        einsora_http_message_watch_hangup(forward->msg, on_client_hangup, forward);
}

static void
answer_client(Forward *forward)
{
    SoupMessageHeaders *from = forward->answer_headers;
    SoupMessageHeaders *headers;
    goffset length;
    gboolean known;

    if (forward->hangup_watch != NULL) {
        g_source_destroy(forward->hangup_watch);
        g_clear_pointer(&forward->hangup_watch, g_source_unref);
    }
    if (forward->client_gone) {
        forward_end(forward);
        return;
    }
    if (from == NULL) {
        g_message("access %s: the %s didn't answer: %s", forward->target->workload_id,
                  forward->target->endpoint ? "endpoint's worker" : "notebook server",
                  forward->failure != NULL ? forward->failure : "no answer");
        forward->status = SOUP_STATUS_BAD_GATEWAY;
        respond_unreachable(forward->msg, forward->target, "didn't answer");
        forward_end(forward);
        return;
    }
    forward->status = forward->answer_status;
    headers = soup_server_message_get_response_headers(forward->msg);
    copy_response_headers(from, headers, forward->target->token, forward->target->endpoint);
    length = soup_message_headers_get_content_length(from);
    /* Through a tunnel the agent masks it, as it alone knows it. */
    forward->scrub = is_text(from) && forward->target->token != NULL;
    known = soup_message_headers_get_encoding(from) == SOUP_ENCODING_CONTENT_LENGTH && length >= 0;
    forward->scrub_whole = forward->scrub && known && length <= SCRUB_WHOLE_LIMIT;
    /* An answer of known length fits its first read. */
    forward->read_size = known ? (gsize)MAX(MIN(length, FIRST_READ_SIZE), 1) : FIRST_READ_SIZE;
    if (forward->scrub)
        forward->held = g_string_sized_new(forward->scrub_whole ? (gsize)length + 1 : 0);
    /* A scrubbed body may shrink: its length is known only at its end
     * (set there when it is scrubbed whole). */
    if (!forward->scrub && known)
        soup_message_headers_set_content_length(headers, length);
    else if (!forward->scrub_whole)
        soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED);
    soup_server_message_set_status(forward->msg, forward->status, forward->answer_reason);
    soup_message_body_set_accumulate(soup_server_message_get_response_body(forward->msg), FALSE);
    forward->wrote_handler =
        g_signal_connect(forward->msg, "wrote-chunk", G_CALLBACK(on_chunk_written), forward);
    pump(forward);
}

static void
on_upstream_answered(EinsoraUpstream *upstream, guint status, const char *reason,
                     SoupMessageHeaders *headers, gpointer user_data)
{
    Forward *forward = user_data;

    forward->answered = TRUE;
    forward->answer_status = status;
    forward->answer_reason = g_strdup(reason);
    forward->answer_headers = soup_message_headers_ref(headers);
    /* Still reading the browser's body: the handler goes on from here. */
    if (!forward->handler_ran && !forward->client_gone)
        return;
    answer_client(forward);
}

static void
on_upstream_failed(EinsoraUpstream *upstream, const GError *error, gpointer user_data)
{
    Forward *forward = user_data;

    forward->answered = TRUE;
    forward->failure = g_strdup(error->message);
    if (!forward->handler_ran && !forward->client_gone)
        return;
    answer_client(forward);
}

static void
on_upstream_drained(EinsoraUpstream *upstream, gpointer user_data)
{
    Forward *forward = user_data;

    if (forward->body_paused && !forward->client_gone && !forward->handler_ran) {
        forward->body_paused = FALSE;
        soup_server_message_unpause(forward->msg);
    }
}

static const EinsoraUpstreamCallbacks forward_callbacks = {
    on_upstream_answered,
    on_upstream_body,
    on_upstream_failed,
    on_upstream_drained,
};

static void
on_request_chunk(SoupServerMessage *msg, GBytes *chunk, gpointer user_data)
{
    Forward *forward = user_data;
    gsize size = 0;
    const guint8 *data = g_bytes_get_data(chunk, &size);

    if (!einsora_upstream_write_body(forward->upstream, data, size) && !forward->body_paused) {
        forward->body_paused = TRUE;
        soup_server_message_pause(msg);
    }
}

static void
on_request_body(SoupServerMessage *msg, gpointer user_data)
{
    Forward *forward = user_data;

    einsora_upstream_finish_body(forward->upstream);
}

/* How the browser's body is framed: it streams from the start. */
static EinsoraHttpBody
request_body(SoupServerMessage *msg, goffset *length)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    SoupEncoding encoding = soup_message_headers_get_encoding(headers);

    *length = 0;
    if (encoding == SOUP_ENCODING_CHUNKED)
        return EINSORA_HTTP_BODY_CHUNKED;
    if (encoding == SOUP_ENCODING_CONTENT_LENGTH &&
        (*length = soup_message_headers_get_content_length(headers)) > 0)
        return EINSORA_HTTP_BODY_LENGTH;
    return EINSORA_HTTP_BODY_NONE;
}

/* Starts the workload's side: at once after the headers, so a body
 * streams as it arrives. The handler takes over once the body is read.
 * An endpoint's request comes once its body is read and checked: @whole
 * is that body, @route and @request_id what the worker is asked and
 * told. NULL when it couldn't start (the client has its answer). */
static Forward *
start_forward(EinsoraAccessProxy *self, SoupServerMessage *msg, Target *target, GBytes *whole,
              const char *route, const char *request_id)
{
    Forward *forward = g_new0(Forward, 1);
    g_autoptr(GError) error = NULL;
    const char *address;
    SoupMessageHeaders *request_headers = soup_server_message_get_request_headers(msg);
    goffset length = whole != NULL ? (goffset)g_bytes_get_size(whole) : 0;
    EinsoraHttpBody body = whole != NULL
                               ? (length > 0 ? EINSORA_HTTP_BODY_LENGTH : EINSORA_HTTP_BODY_NONE)
                               : request_body(msg, &length);

    /* Use, for idle auto-stop: a request went through to it. */
    einsora_service_note_activity(self->service, target->workload_id);
    g_autoptr(GString) head = request_line(msg, route);

    forward->self = g_object_ref(self);
    forward->msg = g_object_ref(msg);
    forward->target = target;
    forward->status = SOUP_STATUS_BAD_GATEWAY;
    append_request_headers(head, request_headers, target, FALSE, request_id);
    /* No connection is ever reused for another request. */
    g_string_append(head, "Connection: close\r\n");
    if (body == EINSORA_HTTP_BODY_LENGTH)
        g_string_append_printf(head, "Content-Length: %" G_GINT64_FORMAT "\r\n", (gint64)length);
    else if (body == EINSORA_HTTP_BODY_CHUNKED)
        g_string_append(head, "Transfer-Encoding: chunked\r\n");
    g_string_append(head, "\r\n");
    if (target->machine_id != NULL) {
        int fd = tunnel_open(self, target, &error);

        forward->upstream =
            fd < 0
                ? NULL
                : einsora_upstream_new_for_fd(
                      fd, head, body, g_strcmp0(soup_server_message_get_method(msg), "HEAD") == 0,
                      &forward_callbacks, forward);
    } else {
        address = target_address(target, &error);
        forward->upstream =
            address == NULL
                ? NULL
                : einsora_upstream_new(address, head, body,
                                       g_strcmp0(soup_server_message_get_method(msg), "HEAD") == 0,
                                       &forward_callbacks, forward, &error);
    }
    explicit_bzero(head->str, head->len); /* it holds the token */
    if (forward->upstream == NULL) {
        g_message("access %s: %s", target->workload_id, error->message);
        respond_unreachable(msg, target, "isn't reachable");
        log_request(msg, target->workload_id, SOUP_STATUS_BAD_GATEWAY, "no socket");
        forward_free(forward);
        return NULL;
    }
    if (whole != NULL) {
        /* All of it at once: the upstream holds what the socket doesn't
         * take yet (a few MiB at most) and sends it as the socket drains. */
        (void)einsora_upstream_write_body(forward->upstream, g_bytes_get_data(whole, NULL),
                                          (gsize)length);
        einsora_upstream_finish_body(forward->upstream);
    } else if (body != EINSORA_HTTP_BODY_NONE) {
        soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
        forward->chunk_handler =
            g_signal_connect(msg, "got-chunk", G_CALLBACK(on_request_chunk), forward);
        forward->body_handler =
            g_signal_connect(msg, "got-body", G_CALLBACK(on_request_body), forward);
    }
    forward->finished_handler =
        g_signal_connect(msg, "finished", G_CALLBACK(on_client_finished), forward);
    forward->disconnected_handler =
        g_signal_connect(msg, "disconnected", G_CALLBACK(on_client_finished), forward);
    g_object_set_data(G_OBJECT(msg), "einsora-forward", forward);
    return forward;
}

/* The body is all read: answer the browser when the workload has. */
static void
continue_forward(Forward *forward)
{
    forward->handler_ran = TRUE;
    /* A first answer placeholder keeps libsoup from taking this for a
     * WebSocket handshake; the real status replaces it. */
    soup_server_message_set_status(forward->msg, SOUP_STATUS_OK, NULL);
    soup_server_message_pause(forward->msg);
    if (forward->answered) {
        answer_client(forward);
        return;
    }
    watch_client(forward);
}

/* WebSockets: the proxy makes the workload's handshake itself, answers
 * the browser's with what the workload said, and then relays frames
 * between the two sockets (EinsoraWebsocketTunnel: bounded both ways,
 * 1009 past the message bound). Compression is not offered to the
 * workload: a bound on compressed bytes would let a small frame inflate
 * into a huge message. */

/* The workload's answer to its handshake, at most, and how long it may
 * take. */
#define UPGRADE_HEAD_MAX (16 * 1024)
#define UPGRADE_TIMEOUT_S 30
#define UPGRADE_READ 4096

typedef struct {
    EinsoraAccessProxy *self; /* owned */
    SoupServerMessage *msg;   /* owned */
    Target *target;
    GCancellable *cancellable;
    GSocketConnection *upstream;
    GByteArray *head;
    gchar *request;
    gulong wrote_handler;
    gulong finished_handler;
    GSource *hangup_watch;
    guint timeout_id;
    gboolean timed_out;
    gboolean client_gone;
    gboolean finished; /* libsoup is done with the message */
} Upgrade;

static void
upgrade_free(Upgrade *upgrade)
{
    if (upgrade->wrote_handler != 0)
        g_signal_handler_disconnect(upgrade->msg, upgrade->wrote_handler);
    if (upgrade->finished_handler != 0)
        g_signal_handler_disconnect(upgrade->msg, upgrade->finished_handler);
    if (upgrade->hangup_watch != NULL) {
        g_source_destroy(upgrade->hangup_watch);
        g_source_unref(upgrade->hangup_watch);
    }
    g_clear_handle_id(&upgrade->timeout_id, g_source_remove);
    if (upgrade->request != NULL)
        explicit_bzero(upgrade->request, strlen(upgrade->request));
    g_free(upgrade->request);
    if (upgrade->head != NULL)
        g_byte_array_unref(upgrade->head);
    g_clear_object(&upgrade->upstream);
    g_clear_object(&upgrade->cancellable);
    target_free(upgrade->target);
    g_clear_object(&upgrade->msg);
    g_clear_object(&upgrade->self);
    g_free(upgrade);
}

/* Refused or failed before the switch: an ordinary answer. */
static void
upgrade_fail(Upgrade *upgrade, guint status, const char *why)
{
    if (upgrade->timed_out) {
        status = SOUP_STATUS_GATEWAY_TIMEOUT;
        why = "the notebook didn't answer the WebSocket handshake in time";
    }
    /* Answered even to a browser that hung up: libsoup then finishes the
     * message and lets go of its connection. */
    if (!upgrade->finished) {
        respond_page(upgrade->msg, status, "The notebook didn't take the connection",
                     "It may be starting or stopping. Reload the page in a moment.");
        soup_server_message_unpause(upgrade->msg);
    }
    log_request(upgrade->msg, upgrade->target->workload_id, status, why);
    upgrade_free(upgrade);
}

/* Requests, counted */

static void
on_request_started(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
    RequestClock *clock = g_new0(RequestClock, 1);

    clock->started_us = g_get_monotonic_time();
    clock->kind = "other";
    g_object_set_data_full(G_OBJECT(msg), REQUEST_CLOCK, clock, g_free);
}

static void
set_request_kind(SoupServerMessage *msg, const char *kind)
{
    RequestClock *clock = g_object_get_data(G_OBJECT(msg), REQUEST_CLOCK);

    if (clock != NULL)
        clock->kind = kind;
}

/* The status sent, by class: a bounded label whatever a workload answers. */
static const char *
status_class(guint status)
{
    static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};

    if (status < 100 || status > 599)
        return "other";
    return classes[status / 100 - 1];
}

/* Once per request: libsoup says finished or aborted, except for a
 * WebSocket's, whose connection is taken at the switch (counted there). */
static void
count_request(EinsoraAccessProxy *self, SoupServerMessage *msg)
{
    g_autofree RequestClock *clock = g_object_steal_data(G_OBJECT(msg), REQUEST_CLOCK);

    if (clock == NULL)
        return;
    einsora_metric_add(
        self->requests,
        (const char *const[]){clock->kind, status_class(soup_server_message_get_status(msg)), NULL},
        1);
    einsora_metric_observe(self->request_duration, (const char *const[]){clock->kind, NULL},
                           einsora_metrics_seconds(clock->started_us, g_get_monotonic_time()));
}

static void
on_request_ended(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
    count_request(user_data, msg);
}

/* What a relay's end needs: it may outlive the proxy. */
typedef struct {
    gchar *workload_id;
    EinsoraMetrics *metrics; /* holds @relays_open's registry */
    EinsoraMetric *relays_open;
} TunnelDone;

static void
on_tunnel_done(guint close_code, gpointer user_data)
{
    TunnelDone *done = user_data;

    g_debug("access %s: WebSocket closed%s", done->workload_id,
            close_code != 0 ? " by the proxy (message too big)" : "");
    einsora_metric_add(done->relays_open, NULL, -1);
    g_clear_object(&done->metrics);
    g_free(done->workload_id);
    g_free(done);
}

/* The browser has its 101: from here on, frames. */
static void
on_switched(SoupServerMessage *msg, gpointer user_data)
{
    Upgrade *upgrade = user_data;
    g_autoptr(GIOStream) client = NULL;
    g_autoptr(GBytes) pending = NULL;
    gsize head_length = einsora_http_head_end(upgrade->head->data, upgrade->head->len);
    GSocket *socket;

    g_clear_signal_handler(&upgrade->wrote_handler, msg);
    g_clear_signal_handler(&upgrade->finished_handler, msg);
    pending = g_bytes_new(upgrade->head->data + head_length, upgrade->head->len - head_length);
    socket = einsora_http_message_get_socket(msg);
    count_request(upgrade->self, msg);
    client = soup_server_message_steal_connection(msg);
    if (client != NULL) {
        TunnelDone *done = g_new0(TunnelDone, 1);

        done->workload_id = g_strdup(upgrade->target->workload_id);
        if (upgrade->self->metrics != NULL)
            done->metrics = g_object_ref(upgrade->self->metrics);
        done->relays_open = upgrade->self->relays_open;
        einsora_metric_add(done->relays_open, NULL, 1);
        einsora_websocket_tunnel_start(client, socket, G_IO_STREAM(upgrade->upstream), pending,
                                       upgrade->self->websocket_max_message, on_tunnel_done, done);
    }
    upgrade_free(upgrade);
}

/* The browser left (or its message ended otherwise). While a step of the
 * handshake is under way, its cancelled callback frees the upgrade; once
 * the 101 is set nothing is pending, and if the 101 can't be written the
 * switch never comes: freed here. */
static void
on_upgrade_finished(SoupServerMessage *msg, gpointer user_data)
{
    Upgrade *upgrade = user_data;

    upgrade->client_gone = TRUE;
    upgrade->finished = TRUE;
    g_cancellable_cancel(upgrade->cancellable);
    if (upgrade->wrote_handler != 0) {
        log_request(msg, upgrade->target->workload_id, SOUP_STATUS_SWITCHING_PROTOCOLS,
                    "the browser left before the switch");
        upgrade_free(upgrade);
    }
}

static gboolean
on_upgrade_hangup(GCancellable *hangup, gpointer user_data)
{
    Upgrade *upgrade = user_data;

    g_clear_pointer(&upgrade->hangup_watch, g_source_unref);
    upgrade->client_gone = TRUE;
    g_cancellable_cancel(upgrade->cancellable);
    return G_SOURCE_REMOVE;
}

/* A workload that doesn't answer its handshake: the steps are cancelled,
 * and the browser is told. */
static gboolean
on_upgrade_timeout(gpointer user_data)
{
    Upgrade *upgrade = user_data;

    upgrade->timeout_id = 0;
    upgrade->timed_out = TRUE;
    g_cancellable_cancel(upgrade->cancellable);
    return G_SOURCE_REMOVE;
}

static void read_upgrade_answer(Upgrade *upgrade);

static void
on_upgrade_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Upgrade *upgrade = user_data;
    g_autoptr(GError) error = NULL;
    g_autoptr(GBytes) chunk =
        g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, &error);
    g_autoptr(SoupMessageHeaders) headers = NULL;
    g_autofree gchar *text = NULL;
    SoupMessageHeaders *answer;
    guint status = 0;
    gsize head_length;
    const char *value;

    if (chunk == NULL || g_bytes_get_size(chunk) == 0) {
        upgrade_fail(upgrade, SOUP_STATUS_BAD_GATEWAY, "no answer to the WebSocket handshake");
        return;
    }
    g_byte_array_append(upgrade->head, g_bytes_get_data(chunk, NULL),
                        (guint)g_bytes_get_size(chunk));
    head_length = einsora_http_head_end(upgrade->head->data, upgrade->head->len);
    if (head_length == 0) {
        if (upgrade->head->len >= UPGRADE_HEAD_MAX)
            upgrade_fail(upgrade, SOUP_STATUS_BAD_GATEWAY, "an oversized handshake answer");
        else
            read_upgrade_answer(upgrade);
        return;
    }
    headers = soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE);
    /* libsoup's parser reads numbers with strtol: a terminated copy. */
    text = g_strndup((const char *)upgrade->head->data, head_length);
    if (!soup_headers_parse_response(text, (int)head_length, headers, NULL, &status, NULL) ||
        status != SOUP_STATUS_SWITCHING_PROTOCOLS ||
        (value = soup_message_headers_get_one(headers, "Sec-WebSocket-Accept")) == NULL) {
        g_message("access %s: the notebook refused a WebSocket (%u)", upgrade->target->workload_id,
                  status);
        upgrade_fail(upgrade, SOUP_STATUS_BAD_GATEWAY, "WebSocket refused");
        return;
    }
    /* The workload's accept key answers the browser's own key. */
    answer = soup_server_message_get_response_headers(upgrade->msg);
    soup_message_headers_replace(answer, "Upgrade", "websocket");
    soup_message_headers_replace(answer, "Connection", "Upgrade");
    soup_message_headers_replace(answer, "Sec-WebSocket-Accept", value);
    value = soup_message_headers_get_one(headers, "Sec-WebSocket-Protocol");
    if (value != NULL)
        soup_message_headers_replace(answer, "Sec-WebSocket-Protocol", value);
    soup_server_message_set_status(upgrade->msg, SOUP_STATUS_SWITCHING_PROTOCOLS, NULL);
    g_clear_handle_id(&upgrade->timeout_id, g_source_remove);
    upgrade->wrote_handler =
        g_signal_connect(upgrade->msg, "wrote-informational", G_CALLBACK(on_switched), upgrade);
    log_request(upgrade->msg, upgrade->target->workload_id, SOUP_STATUS_SWITCHING_PROTOCOLS,
                "websocket");
    soup_server_message_unpause(upgrade->msg);
}

static void
read_upgrade_answer(Upgrade *upgrade)
{
    g_input_stream_read_bytes_async(g_io_stream_get_input_stream(G_IO_STREAM(upgrade->upstream)),
                                    UPGRADE_READ, G_PRIORITY_DEFAULT, upgrade->cancellable,
                                    on_upgrade_answer, upgrade);
}

static void
on_upgrade_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Upgrade *upgrade = user_data;
    g_autoptr(GError) error = NULL;

    if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, &error)) {
        upgrade_fail(upgrade, SOUP_STATUS_BAD_GATEWAY, "the notebook didn't take the handshake");
        return;
    }
    upgrade->head = g_byte_array_new();
    read_upgrade_answer(upgrade);
}

/* The workload's handshake: the browser's own key (its accept key goes
 * back), subprotocols, and what append_request_headers() passes. */
static gchar *
upgrade_request(SoupServerMessage *msg, const Target *target)
{
    SoupMessageHeaders *from = soup_server_message_get_request_headers(msg);
    GString *text = request_line(msg, NULL);
    const char *value;

    g_string_append_printf(text,
                           "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                           "Sec-WebSocket-Version: 13\r\n",
                           soup_message_headers_get_one(from, "Sec-WebSocket-Key"));
    value = soup_message_headers_get_one(from, "Sec-WebSocket-Protocol");
    if (value != NULL)
        g_string_append_printf(text, "Sec-WebSocket-Protocol: %s\r\n", value);
    append_request_headers(text, from, target, TRUE, NULL);
    g_string_append(text, "\r\n");
    return g_string_free(text, FALSE);
}

static void
send_upgrade(Upgrade *upgrade)
{
    upgrade->request = upgrade_request(upgrade->msg, upgrade->target);
    g_output_stream_write_all_async(g_io_stream_get_output_stream(G_IO_STREAM(upgrade->upstream)),
                                    upgrade->request, strlen(upgrade->request), G_PRIORITY_DEFAULT,
                                    upgrade->cancellable, on_upgrade_sent, upgrade);
}

static void
on_upgrade_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
    Upgrade *upgrade = user_data;
    g_autoptr(GError) error = NULL;

    upgrade->upstream = g_socket_client_connect_finish(G_SOCKET_CLIENT(source), result, &error);
    if (upgrade->upstream == NULL) {
        g_message("access %s: %s", upgrade->target->workload_id, error->message);
        upgrade_fail(upgrade, SOUP_STATUS_BAD_GATEWAY, "no socket");
        return;
    }
    send_upgrade(upgrade);
}

/* The upgrade's connection through the workload's machine's tunnel. */
static GSocketConnection *
tunnel_connection(EinsoraAccessProxy *self, const Target *target, GError **error)
{
    int fd = tunnel_open(self, target, error);
    g_autoptr(GSocket) socket = NULL;

    if (fd < 0)
        return NULL;
    socket = g_socket_new_from_fd(fd, error);
    if (socket == NULL) {
        close(fd);
        return NULL;
    }
    return g_socket_connection_factory_create_connection(socket);
}

static void
start_upgrade(EinsoraAccessProxy *self, SoupServerMessage *msg, Target *target)
{
    Upgrade *upgrade = g_new0(Upgrade, 1);
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    const char *key = soup_message_headers_get_one(headers, "Sec-WebSocket-Key");
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GSocketClient) client = NULL;
    g_autoptr(GError) error = NULL;
    const char *socket_address;

    einsora_service_note_activity(self->service, target->workload_id);
    upgrade->self = g_object_ref(self);
    upgrade->msg = g_object_ref(msg);
    upgrade->target = target;
    upgrade->cancellable = g_cancellable_new();
    /* A key is 16 bytes in base64; version 13 is the only one. */
    if (key == NULL || strlen(key) != 24 ||
        g_strcmp0(soup_message_headers_get_one(headers, "Sec-WebSocket-Version"), "13") != 0) {
        respond_page(msg, SOUP_STATUS_BAD_REQUEST, "Not a WebSocket handshake",
                     "It needs a Sec-WebSocket-Key and version 13.");
        log_request(msg, target->workload_id, SOUP_STATUS_BAD_REQUEST, "bad WebSocket handshake");
        upgrade_free(upgrade);
        return;
    }
    if (target->machine_id != NULL) {
        upgrade->upstream = tunnel_connection(self, target, &error);
    } else {
        socket_address = target_address(target, &error);
        address = socket_address != NULL ? g_unix_socket_address_new(socket_address) : NULL;
    }
    if (address == NULL && upgrade->upstream == NULL) {
        g_message("access %s: %s", target->workload_id, error->message);
        respond_page(msg, SOUP_STATUS_BAD_GATEWAY, "The notebook isn't reachable",
                     "It may be starting or stopping. Try again in a moment.");
        log_request(msg, target->workload_id, SOUP_STATUS_BAD_GATEWAY, "no socket");
        upgrade_free(upgrade);
        return;
    }
    soup_server_message_pause(msg);
    upgrade->finished_handler =
        g_signal_connect(msg, "finished", G_CALLBACK(on_upgrade_finished), upgrade);
    upgrade->timeout_id = g_timeout_add_seconds(UPGRADE_TIMEOUT_S, on_upgrade_timeout, upgrade);
    upgrade->hangup_watch = einsora_http_message_watch_hangup(msg, on_upgrade_hangup, upgrade);
    if (upgrade->upstream != NULL) {
        send_upgrade(upgrade);
        return;
    }
    client = g_socket_client_new();
    g_socket_client_connect_async(client, G_SOCKET_CONNECTABLE(address), upgrade->cancellable,
                                  on_upgrade_connected, upgrade);
}

static gboolean
is_websocket(SoupServerMessage *msg)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);

    return g_strcmp0(soup_server_message_get_method(msg), "GET") == 0 &&
           soup_message_headers_header_contains(headers, "Upgrade", "websocket");
}

/* Endpoints (docs/adr/0034): an endpoint's OpenAI-compatible base URL at
 * /endpoints/<id>/v1, and the tenant's at /v1 where the body's "model"
 * names the endpoint. An API token on every request, never a cookie;
 * the workload is looked up in the token's tenant, so another tenant's
 * endpoint, a notebook and a stopped endpoint are one 404. Bodies are
 * read whole (they are bounded) and checked before the worker sees them;
 * answers stream back through the same forwarding as a notebook's. */

typedef struct {
    gchar *request_id;
    gchar *tenant_id;
    EinsoraEndpointRoute *route;
    Target *target; /* a per-endpoint URL's, looked up before the body */
} EndpointRequest;

static void
endpoint_request_free(EndpointRequest *request)
{
    g_free(request->request_id);
    g_free(request->tenant_id);
    einsora_endpoint_route_free(request->route);
    target_free(request->target);
    g_free(request);
}

/* Only this machine's own names, with the proxy's port (every client
 * sends it, as it is never 80): the routes are for local clients. Off
 * loopback (TLS) any name and port: a client came through a relay on its
 * own loopback, or straight to this server over TLS, and the routes take
 * API tokens only, which no page of another site has (docs/adr/0053). */
static gboolean
is_endpoint_host(EinsoraAccessProxy *self, const char *host)
{
    guint own_port = self->port;
    g_autofree gchar *name = NULL;
    const char *colon;
    guint64 port = 0;

    if (host == NULL)
        return FALSE;
    if (self->tls)
        return TRUE;
    colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
    if (colon != NULL && host[0] == '[')
        colon++;
    if (colon == NULL || !g_ascii_string_to_unsigned(colon + 1, 10, 1, 65535, &port, NULL) ||
        port != own_port)
        return FALSE;
    name = g_strndup(host, (gsize)(colon - host));
    return g_ascii_strcasecmp(name, "127.0.0.1") == 0 ||
           g_ascii_strcasecmp(name, "localhost") == 0 || g_strcmp0(name, "[::1]") == 0;
}

/* A refusal made before the body is read: the body isn't kept, and the
 * connection closes after the answer rather than reading it on. */
static void
refuse_endpoint(SoupServerMessage *msg, guint status, const char *message, const char *type,
                const char *code)
{
    soup_message_body_set_accumulate(soup_server_message_get_request_body(msg), FALSE);
    einsora_http_message_close_after(msg);
    respond_endpoint_error(msg, status, message, type, code);
}

/* Where the answer came from: the region, the class it was placed on,
 * and whether that is another than the one asked for. */
static void
set_endpoint_headers(SoupServerMessage *msg, const EinsoraWorkload *workload)
{
    SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
    gboolean fallback = workload->placed_class != NULL &&
                        g_strcmp0(workload->placed_class, workload->gpu_class) != 0;

    soup_message_headers_replace(headers, "X-Einsora-Region", workload->region);
    soup_message_headers_replace(headers, "X-Einsora-Class", einsora_workload_get_class(workload));
    soup_message_headers_replace(headers, "X-Einsora-Fallback", fallback ? "true" : "false");
}

static gboolean
is_serving(const EinsoraWorkload *workload)
{
    return workload->kind == EINSORA_WORKLOAD_KIND_ENDPOINT &&
           workload->state == EINSORA_WORKLOAD_STATE_RUNNING;
}

/* The way into @workload's worker, if it serves now. */
static Target *
endpoint_target(EinsoraAccessProxy *self, const EinsoraWorkload *workload)
{
    gint64 attempt = -1;
    Target *target;

    if (!is_serving(workload))
        return NULL;
    target = lookup_target(self, workload->tenant_id, workload->id, &attempt);
    if (target != NULL)
        target->endpoint = TRUE;
    return target;
}

/* @tenant_id's running endpoint named @model: by the workload's name,
 * the one created first when two share it. */
static EinsoraWorkload *
find_endpoint(EinsoraAccessProxy *self, const char *tenant_id, const char *model)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) workloads =
        einsora_service_list_workloads(self->service, tenant_id, FALSE, &error);

    if (workloads == NULL) {
        g_message("access: listing endpoints: %s", error->message);
        return NULL;
    }
    for (guint i = 0; i < workloads->len; i++) {
        EinsoraWorkload *workload = workloads->pdata[i];
        if (is_serving(workload) && g_strcmp0(workload->name, model) == 0)
            return einsora_workload_copy(workload);
    }
    /* Then by the model it serves, as Ollama users name one ("tiny"):
     * the oldest running endpoint of that model. */
    for (guint i = 0; i < workloads->len; i++) {
        EinsoraWorkload *workload = workloads->pdata[i];
        if (is_serving(workload) && g_strcmp0(workload->model, model) == 0)
            return einsora_workload_copy(workload);
    }
    return NULL;
}

/* GET /v1/models on the tenant's base URL: its running endpoints, by
 * the names that route to them. */
static void
respond_models(EinsoraAccessProxy *self, SoupServerMessage *msg, const char *tenant_id)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) workloads =
        einsora_service_list_workloads(self->service, tenant_id, FALSE, &error);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GArray) created = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    g_autofree gchar *body = NULL;

    if (workloads == NULL) {
        g_message("access: listing endpoints: %s", error->message);
        respond_endpoint_error(msg, SOUP_STATUS_INTERNAL_SERVER_ERROR,
                               "the endpoints could not be listed", "server_error", NULL);
        return;
    }
    for (guint i = 0; i < workloads->len; i++) {
        EinsoraWorkload *workload = workloads->pdata[i];
        gint64 created_us = 0;

        if (!is_serving(workload) || !g_hash_table_add(seen, workload->name))
            continue;
        (void)einsora_timestamp_parse(workload->created_at, &created_us, NULL);
        g_ptr_array_add(names, workload->name);
        created_us /= G_USEC_PER_SEC;
        g_array_append_val(created, created_us);
    }
    body = einsora_endpoint_models_json((const char *const *)names->pdata,
                                        (const gint64 *)(gpointer)created->data, names->len);
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Cache-Control",
                                 "no-store");
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg, "application/json", SOUP_MEMORY_COPY, body, strlen(body));
}

/* After the headers: every check that needs no body, so a refused
 * request's body is never read into anything. */
static void
endpoint_early(EinsoraAccessProxy *self, SoupServerMessage *msg, EinsoraEndpointRoute *route)
{
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    SoupMessageHeaders *answer = soup_server_message_get_response_headers(msg);
    const char *client_id = soup_message_headers_get_one(headers, "X-Request-ID");
    const char *authorization = soup_message_headers_get_one(headers, "Authorization");
    g_autofree gchar *request_id = einsora_endpoint_request_id_is_sane(client_id)
                                       ? g_strdup(client_id)
                                       : einsora_uuid_v7_new(proxy_now(self) / 1000);
    g_autoptr(EinsoraActor) actor = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(EinsoraWorkload) workload = NULL;
    EndpointRequest *request;
    const char *method = soup_server_message_get_method(msg);

    soup_message_headers_replace(answer, "X-Request-ID", request_id);
    /* A token, on every request; a cookie is never looked at. */
    if (authorization == NULL || !g_str_has_prefix(authorization, "Bearer ") ||
        authorization[7] == '\0') {
        soup_message_headers_replace(answer, "WWW-Authenticate", "Bearer");
        refuse_endpoint(msg, SOUP_STATUS_UNAUTHORIZED, "use Authorization: Bearer <API token>",
                        "invalid_request_error", "missing_api_key");
        log_request(msg, route->workload_id, SOUP_STATUS_UNAUTHORIZED, "no API token");
        return;
    }
    actor = einsora_auth_authenticate_token(self->auth, authorization + 7, &error);
    if (actor == NULL) {
        gboolean refused = g_error_matches(error, EINSORA_ERROR, EINSORA_ERROR_UNAUTHENTICATED);
        if (refused)
            soup_message_headers_replace(answer, "WWW-Authenticate", "Bearer");
        else
            g_message("access: checking an API token: %s", error->message);
        refuse_endpoint(
            msg, refused ? SOUP_STATUS_UNAUTHORIZED : SOUP_STATUS_INTERNAL_SERVER_ERROR,
            refused ? "invalid or revoked API token" : "the API token could not be checked",
            refused ? "invalid_request_error" : "server_error", refused ? "invalid_api_key" : NULL);
        log_request(msg, route->workload_id, refused ? SOUP_STATUS_UNAUTHORIZED : 500,
                    "API token refused");
        return;
    }
    if (!route->allowed) {
        g_autofree gchar *message = g_strdup_printf(
            "no such route: %s %s; an endpoint serves GET /v1/models, POST /v1/completions, POST "
            "/v1/chat/completions and POST /v1/embeddings",
            method, route->route);
        refuse_endpoint(msg, SOUP_STATUS_NOT_FOUND, message, "invalid_request_error",
                        "unknown_url");
        log_request(msg, route->workload_id, SOUP_STATUS_NOT_FOUND, "not an inference route");
        return;
    }
    if (route->has_body) {
        SoupEncoding encoding = soup_message_headers_get_encoding(headers);
        const char *content_type = soup_message_headers_get_content_type(headers, NULL);

        if (encoding != SOUP_ENCODING_CONTENT_LENGTH && encoding != SOUP_ENCODING_NONE) {
            refuse_endpoint(msg, SOUP_STATUS_LENGTH_REQUIRED,
                            "a request body needs a Content-Length of at most 4 MiB",
                            "invalid_request_error", "length_required");
            log_request(msg, route->workload_id, SOUP_STATUS_LENGTH_REQUIRED, "no length");
            return;
        }
        if (soup_message_headers_get_content_length(headers) > EINSORA_ENDPOINT_MAX_BODY_BYTES) {
            refuse_endpoint(msg, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE,
                            "the request body is larger than 4 MiB", "invalid_request_error",
                            "request_too_large");
            log_request(msg, route->workload_id, SOUP_STATUS_REQUEST_ENTITY_TOO_LARGE,
                        "body too large");
            return;
        }
        if (g_strcmp0(content_type, "application/json") != 0) {
            refuse_endpoint(msg, SOUP_STATUS_UNSUPPORTED_MEDIA_TYPE,
                            "the request body must be Content-Type: application/json",
                            "invalid_request_error", "unsupported_media_type");
            log_request(msg, route->workload_id, SOUP_STATUS_UNSUPPORTED_MEDIA_TYPE, "not JSON");
            return;
        }
    }
    request = g_new0(EndpointRequest, 1);
    request->tenant_id = g_strdup(actor->tenant_id);
    if (route->workload_id != NULL) {
        g_autoptr(GError) local_error = NULL;

        workload = einsora_service_get_workload(self->service, actor->tenant_id, route->workload_id,
                                                FALSE, &local_error);
        request->target = workload != NULL ? endpoint_target(self, workload) : NULL;
        if (request->target == NULL) {
            /* Unknown, another tenant's, a notebook, not running: one
             * answer, so an ID can't be probed. */
            endpoint_request_free(request);
            refuse_endpoint(msg, SOUP_STATUS_NOT_FOUND, "no running endpoint has this ID",
                            "invalid_request_error", "endpoint_not_found");
            log_request(msg, route->workload_id, SOUP_STATUS_NOT_FOUND, "no such endpoint");
            return;
        }
        set_endpoint_headers(msg, workload);
    } else if (!route->has_body) {
        /* The tenant's own list: no worker is asked. */
        respond_models(self, msg, actor->tenant_id);
        log_request(msg, NULL, soup_server_message_get_status(msg), NULL);
        endpoint_request_free(request);
        return;
    }
    request->request_id = g_steal_pointer(&request_id);
    request->route = route;
    g_object_set_data_full(G_OBJECT(msg), "einsora-endpoint", request,
                           (GDestroyNotify)endpoint_request_free);
}

/* After the body: checked, routed by its model on the tenant's URL, and
 * forwarded. */
static void
endpoint_handle(EinsoraAccessProxy *self, SoupServerMessage *msg, EndpointRequest *request)
{
    g_autoptr(GBytes) body = NULL;
    g_autofree gchar *model = NULL;
    g_autoptr(GError) error = NULL;
    Target *target = request->target != NULL ? target_ref(request->target) : NULL;
    Forward *forward;

    if (request->route->has_body) {
        gsize length = 0;
        const char *data;

        body = soup_message_body_flatten(soup_server_message_get_request_body(msg));
        data = g_bytes_get_data(body, &length);
        if (!einsora_endpoint_body_check(data, length, &model, &error)) {
            target_free(target);
            respond_endpoint_error(msg, SOUP_STATUS_BAD_REQUEST, error->message,
                                   "invalid_request_error", "invalid_json");
            log_request(msg, request->route->workload_id, SOUP_STATUS_BAD_REQUEST, "bad JSON");
            return;
        }
    }
    if (target == NULL) {
        g_autoptr(EinsoraWorkload) workload = NULL;

        if (model == NULL) {
            respond_endpoint_error(msg, SOUP_STATUS_BAD_REQUEST,
                                   "\"model\" must name one of your running endpoints "
                                   "(GET /v1/models lists them)",
                                   "invalid_request_error", "model_required");
            log_request(msg, NULL, SOUP_STATUS_BAD_REQUEST, "no model");
            return;
        }
        workload = find_endpoint(self, request->tenant_id, model);
        target = workload != NULL ? endpoint_target(self, workload) : NULL;
        if (target == NULL) {
            g_autofree gchar *message =
                g_strdup_printf("The model `%s` does not exist or is not running", model);
            respond_endpoint_error(msg, SOUP_STATUS_NOT_FOUND, message, "invalid_request_error",
                                   "model_not_found");
            log_request(msg, NULL, SOUP_STATUS_NOT_FOUND, "no such model");
            return;
        }
        set_endpoint_headers(msg, workload);
    }
    forward = start_forward(self, msg, target, body != NULL ? body : NULL, request->route->route,
                            request->request_id);
    if (forward != NULL)
        continue_forward(forward);
}

/* After the headers: every check, then the workload's side starts, so a
 * refused request's body is never read into anything. */
static void
early_handler(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
              gpointer user_data)
{
    EinsoraAccessProxy *self = user_data;
    SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
    g_autofree gchar *workload_id = NULL;
    const char *refusal = NULL;
    Target *target;
    guint port = 0;
    gboolean opening = g_strcmp0(path, EINSORA_ACCESS_OPEN_PATH) == 0;

    workload_id = einsora_access_host_parse(soup_message_headers_get_one(headers, "Host"), &port);
    /* Endpoints are served by path at the proxy's own loopback address:
     * OpenAI clients don't all resolve *.localhost (docs/adr/0034). */
    if (workload_id == NULL &&
        is_endpoint_host(self, soup_message_headers_get_one(headers, "Host"))) {
        EinsoraEndpointRoute *route =
            einsora_endpoint_route_parse(soup_server_message_get_method(msg), path);
        if (route != NULL) {
            set_request_kind(msg, "endpoint");
            endpoint_early(self, msg, route);
            /* Kept by the request it starts, if it does. */
            if (g_object_get_data(G_OBJECT(msg), "einsora-endpoint") == NULL)
                einsora_endpoint_route_free(route);
            return;
        }
    }
    /* Only notebooks' own names: a page can't reach this under another
     * (DNS rebinding), and nothing here answers for the dashboard. Over
     * TLS the browser is on another machine, behind a relay on a port of
     * its own (docs/adr/0053): the name is what counts. */
    if (workload_id == NULL || (port != 0 && port != self->port && !self->tls)) {
        respond_page(msg, SOUP_STATUS_MISDIRECTED_REQUEST, "Not a notebook's address",
                     "Einsora opens notebooks at their own w-<id>.localhost address only.");
        log_request(msg, NULL, SOUP_STATUS_MISDIRECTED_REQUEST, "not a workload host");
        return;
    }
    set_request_kind(msg, "notebook");
    if (from_another_origin(msg, workload_id, port, opening)) {
        respond_page(msg, SOUP_STATUS_FORBIDDEN, "Refused", "This request came from another site.");
        log_request(msg, workload_id, SOUP_STATUS_FORBIDDEN, "from another origin");
        return;
    }
    if (opening) {
        handle_open(self, msg, workload_id);
        return;
    }
    target = session_target(self, msg, workload_id, &refusal);
    if (target == NULL) {
        gboolean stopped = g_strcmp0(refusal, "its server stopped") == 0;
        respond_page(msg, stopped ? SOUP_STATUS_NOT_FOUND : SOUP_STATUS_FORBIDDEN,
                     stopped ? "This notebook isn't running" : "Open this notebook from Einsora",
                     stopped ? "It stopped since it was opened. Start it from Einsora, then open "
                               "it again."
                             : "Its link from Einsora opens it in this browser.");
        log_request(msg, workload_id, stopped ? SOUP_STATUS_NOT_FOUND : SOUP_STATUS_FORBIDDEN,
                    refusal);
        return;
    }
    if (is_websocket(msg)) {
        /* The handler makes both handshakes (start_upgrade). */
        g_object_set_data_full(G_OBJECT(msg), "einsora-target", target,
                               (GDestroyNotify)target_free);
        return;
    }
    (void)start_forward(self, msg, target, NULL, NULL, NULL);
}

/* After the body: the answer, when the workload gives it. */
static void
handle_request(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
               gpointer user_data)
{
    Forward *forward = g_object_get_data(G_OBJECT(msg), "einsora-forward");
    EndpointRequest *endpoint = g_object_get_data(G_OBJECT(msg), "einsora-endpoint");

    if (forward != NULL) {
        continue_forward(forward);
        return;
    }
    if (endpoint != NULL) {
        endpoint_handle(EINSORA_ACCESS_PROXY(user_data), msg, endpoint);
        return;
    }
    if (g_object_get_data(G_OBJECT(msg), "einsora-target") != NULL) {
        start_upgrade(EINSORA_ACCESS_PROXY(user_data), msg,
                      g_object_steal_data(G_OBJECT(msg), "einsora-target"));
        return;
    }
    respond_page(msg, SOUP_STATUS_INTERNAL_SERVER_ERROR, "Something went wrong",
                 "Open the notebook again from Einsora.");
}

static void
einsora_access_proxy_finalize(GObject *object)
{
    EinsoraAccessProxy *self = EINSORA_ACCESS_PROXY(object);

    g_clear_object(&self->edge);
    g_clear_signal_handler(&self->events_handler, self->service);
    if (self->server != NULL) {
        g_signal_handlers_disconnect_by_data(self->server, self);
        soup_server_disconnect(self->server);
    }
    g_clear_object(&self->server);
    g_clear_pointer(&self->sessions, g_hash_table_unref);
    g_clear_object(&self->targets);
    g_clear_object(&self->tunnels);
    g_clear_object(&self->auth);
    g_clear_object(&self->service);
    g_clear_object(&self->metrics);
    G_OBJECT_CLASS(einsora_access_proxy_parent_class)->finalize(object);
}

static void
einsora_access_proxy_class_init(EinsoraAccessProxyClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = einsora_access_proxy_finalize;
}

static void
einsora_access_proxy_init(EinsoraAccessProxy *self)
{
    self->sessions =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)session_free);
}

EinsoraAccessProxy *
einsora_access_proxy_new(EinsoraService *service, EinsoraAuth *auth, EinsoraWorkloadAccess *targets,
                         EinsoraNowFunc now, gpointer now_data)
{
    EinsoraAccessProxy *self = g_object_new(EINSORA_TYPE_ACCESS_PROXY, NULL);

    self->service = g_object_ref(service);
    self->auth = g_object_ref(auth);
    self->events_handler =
        g_signal_connect(service, "events-added", G_CALLBACK(on_events_added), self);
    self->targets = g_object_ref(targets);
    self->now = now;
    self->now_data = now_data;
    self->websocket_max_message = EINSORA_ACCESS_WEBSOCKET_MAX_MESSAGE;
    self->server = soup_server_new("server-header", "einsora-access", NULL);
    {
        EinsoraHttpEdgeSettings settings;
        einsora_http_edge_settings_init(&settings);
        self->edge = einsora_http_edge_new(self->server, &settings);
    }
    soup_server_add_early_handler(self->server, NULL, early_handler, self, NULL);
    soup_server_add_handler(self->server, NULL, handle_request, self, NULL);
    return self;
}

gboolean
einsora_access_proxy_listen(EinsoraAccessProxy *self, const char *address, GError **error)
{
    g_autoptr(GInetSocketAddress) parsed = einsora_http_address_parse(address, NULL);

    if (parsed == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "\"%s\" is not an address and port, like 127.0.0.1:8090", address);
        return FALSE;
    }
    if (!self->tls && !g_inet_address_get_is_loopback(g_inet_socket_address_get_address(parsed))) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "\"%s\" is not a loopback address: off this machine the access proxy "
                    "speaks TLS only",
                    address);
        return FALSE;
    }
    if (!einsora_http_edge_listen(self->edge, address, error))
        return FALSE;
    self->port = einsora_http_edge_get_port(self->edge);
    return TRUE;
}

void
einsora_access_proxy_set_tls_certificate(EinsoraAccessProxy *self, GTlsCertificate *certificate)
{
    g_return_if_fail(EINSORA_IS_ACCESS_PROXY(self));
    g_return_if_fail(certificate == NULL || G_IS_TLS_CERTIFICATE(certificate));
    self->tls = certificate != NULL;
    einsora_http_edge_set_tls_certificate(self->edge, certificate);
}

gchar *
einsora_access_proxy_get_uri(EinsoraAccessProxy *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_PROXY(self), NULL);
    return einsora_http_edge_get_uri(self->edge);
}

gboolean
einsora_access_proxy_is_tls(EinsoraAccessProxy *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_PROXY(self), FALSE);
    return self->tls;
}

void
einsora_access_proxy_set_metrics(EinsoraAccessProxy *self, EinsoraMetrics *metrics)
{
    /* A notebook's page and its API answer in milliseconds; an
     * endpoint's completion streams for up to minutes. */
    static const double bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                    1,     2.5,  5,     10,   30,  60,   120};
    static const char *const kinds[] = {"notebook", "endpoint", "other"};

    g_return_if_fail(EINSORA_IS_ACCESS_PROXY(self));
    g_return_if_fail(EINSORA_IS_METRICS(metrics));
    g_return_if_fail(self->metrics == NULL);
    self->metrics = g_object_ref(metrics);
    self->requests = einsora_metrics_counter(
        metrics, "einsora_proxy_requests_total",
        "Requests the access proxy answered, by what they were for (notebook, endpoint, other: "
        "refused before either) and the status class sent.",
        (const char *const[]){"kind", "code", NULL});
    self->request_duration = einsora_metrics_histogram(
        metrics, "einsora_proxy_request_duration_seconds",
        "From a request's start to the end of its answer (streamed answers included; a "
        "WebSocket's to its switch), by what it was for.",
        (const char *const[]){"kind", NULL}, bounds, G_N_ELEMENTS(bounds));
    /* Every series from the start, so that a rate sees its first. */
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
        einsora_metric_touch(self->request_duration, (const char *const[]){kinds[i], NULL});
        for (guint status = 100; status < 600; status += 100)
            einsora_metric_touch(self->requests,
                                 (const char *const[]){kinds[i], status_class(status), NULL});
    }
    self->relays_open =
        einsora_metrics_gauge(metrics, "einsora_proxy_websocket_relays_open",
                              "WebSocket relays between a browser and a notebook open now.", NULL);
    g_signal_connect(self->server, "request-started", G_CALLBACK(on_request_started), self);
    g_signal_connect(self->server, "request-finished", G_CALLBACK(on_request_ended), self);
    g_signal_connect(self->server, "request-aborted", G_CALLBACK(on_request_ended), self);
}

void
einsora_access_proxy_set_websocket_max_message(EinsoraAccessProxy *self, guint64 bytes)
{
    g_return_if_fail(EINSORA_IS_ACCESS_PROXY(self));
    g_return_if_fail(bytes > 0);
    self->websocket_max_message = bytes;
}

guint
einsora_access_proxy_get_port(EinsoraAccessProxy *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_PROXY(self), 0);
    return self->port;
}

void
einsora_access_proxy_set_tunnels(EinsoraAccessProxy *self, EinsoraTunnels *tunnels)
{
    g_return_if_fail(EINSORA_IS_ACCESS_PROXY(self));
    g_set_object(&self->tunnels, tunnels);
}

guint
einsora_access_proxy_count_sessions(EinsoraAccessProxy *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_PROXY(self), 0);
    return g_hash_table_size(self->sessions);
}

guint64
einsora_access_proxy_count_lookups(EinsoraAccessProxy *self)
{
    g_return_val_if_fail(EINSORA_IS_ACCESS_PROXY(self), 0);
    return self->lookups;
}
