/* Einsora's access proxy for bench/access-bench.sh, in-process as the
 * daemon runs it: a real service over a SQLite store (in a fresh
 * temporary directory), a running notebook of one tenant, and a backend's
 * way in (EinsoraWorkloadAccess) that answers with the bench upstream's
 * Unix socket and a token, read through the interface on every request
 * exactly as the daemon's hub is. A session is opened the way a browser
 * opens one: a ticket from einsora_service_grant_access(), then
 * GET /_einsora/open?ticket=... at the workload's host.
 *
 * Usage: einsora-access-bench-proxy UPSTREAM_SOCKET
 * Prints "port=<n> host=w-<id>.localhost:<n> cookie=einsora_access=..."
 * on standard output, then proxies until SIGTERM or SIGINT, and removes
 * its directory. The proxy's own log (one line per request, as in the
 * daemon) goes to standard error. */
#include <glib-unix.h>
#include <libsoup/soup.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "einsora-access-proxy.h"
#include "einsora-catalog.h"
#include "einsora-credential.h"
#include "einsora-error.h"
#include "einsora-service.h"
#include "einsora-sqlite-store.h"

#define TENANT "0190b5d2-7c4e-7abc-8def-0000000000b1"
#define MACHINE "0190b5d2-7c4e-7abc-8def-0000000000b2"
#define CREATED_AT "2026-01-01T00:00:00.000000Z"

static gint64
real_now(gpointer user_data)
{
    return g_get_real_time();
}

/* The backend's way in: one running workload, the upstream's socket. */
#define BENCH_TYPE_TARGETS (bench_targets_get_type())
G_DECLARE_FINAL_TYPE(BenchTargets, bench_targets, BENCH, TARGETS, GObject)

struct _BenchTargets {
    GObject parent_instance;
    gchar *socket_path;
    gchar *workload_id;
    gchar *token;
};

static void bench_targets_iface_init(EinsoraWorkloadAccessInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(BenchTargets, bench_targets, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(EINSORA_TYPE_WORKLOAD_ACCESS,
                                                    bench_targets_iface_init))

static void
bench_targets_finalize(GObject *object)
{
    BenchTargets *self = BENCH_TARGETS(object);

    g_free(self->socket_path);
    g_free(self->workload_id);
    g_free(self->token);
    G_OBJECT_CLASS(bench_targets_parent_class)->finalize(object);
}

static void
bench_targets_class_init(BenchTargetsClass *klass)
{
    G_OBJECT_CLASS(klass)->finalize = bench_targets_finalize;
}

static void
bench_targets_init(BenchTargets *self)
{
}

static gboolean
bench_targets_lookup(EinsoraWorkloadAccess *access, const char *tenant_id, const char *workload_id,
                     gint64 *attempt, gchar **socket_path, gchar **token, GError **error)
{
    BenchTargets *self = BENCH_TARGETS(access);

    if (g_strcmp0(tenant_id, TENANT) != 0 || self->workload_id == NULL ||
        g_strcmp0(workload_id, self->workload_id) != 0) {
        g_set_error_literal(error, EINSORA_ERROR, EINSORA_ERROR_NOT_FOUND, "not running");
        return FALSE;
    }
    *attempt = 1;
    *socket_path = g_strdup(self->socket_path);
    *token = g_strdup(self->token);
    return TRUE;
}

static void
bench_targets_iface_init(EinsoraWorkloadAccessInterface *iface)
{
    iface->lookup = bench_targets_lookup;
}

static const char bench_catalog[] =
    "{\"version\": 1, \"regions\": [{\"name\": \"local\"}],"
    " \"drivers\": [{\"name\": \"sim\", \"kinds\": [\"notebook\"], \"accelerators\": [\"cpu\"]}],"
    " \"classes\": [{\"name\": \"cpu-2c-4g\", \"cpus\": 2, \"memory_mib\": 4096,"
    "   \"accelerator\": \"cpu\"}],"
    " \"images\": [{\"name\": \"jupyter\", \"kinds\": [\"notebook\"], \"runtimes\": {"
    "   \"cpu\": {\"reference\": \"jupyter-cpu\", \"driver_refs\": [\"sim\"]}}}]}";

static void
remove_tree(GFile *file)
{
    g_autoptr(GFileEnumerator) children = g_file_enumerate_children(
        file, G_FILE_ATTRIBUTE_STANDARD_NAME, G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);

    if (children != NULL) {
        GFileInfo *info;
        GFile *child;
        while (g_file_enumerator_iterate(children, &info, &child, NULL, NULL) && info != NULL)
            remove_tree(child);
    }
    g_file_delete(file, NULL, NULL);
}

static gboolean
move(EinsoraService *service, const char *id, EinsoraWorkloadState to,
     const EinsoraPlacement *placement, GError **error)
{
    g_autoptr(EinsoraWorkload) workload =
        einsora_service_get_workload(service, TENANT, id, TRUE, error);

    return workload != NULL &&
           einsora_service_transition(service, workload, to, "bench", placement, error);
}

static void
on_answered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    *(GAsyncResult **)user_data = g_object_ref(result);
}

/* The browser's part: the ticket's link, once; returns "einsora_access=...". */
static gchar *
open_session(guint port, const char *host, const char *ticket, GError **error)
{
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) address = g_inet_socket_address_new(loopback, port);
    g_autoptr(SoupSession) browser =
        soup_session_new_with_options("remote-connectable", address, "timeout", 30, NULL);
    g_autofree gchar *uri =
        g_strdup_printf("http://%s" EINSORA_ACCESS_OPEN_PATH "?ticket=%s", host, ticket);
    g_autoptr(SoupMessage) message = soup_message_new("GET", uri);
    g_autoptr(GAsyncResult) result = NULL;
    g_autoptr(GBytes) body = NULL;
    const char *set_cookie;

    soup_message_headers_replace(soup_message_get_request_headers(message), "Sec-Fetch-Site",
                                 "cross-site");
    soup_session_send_and_read_async(browser, message, G_PRIORITY_DEFAULT, NULL, on_answered,
                                     &result);
    while (result == NULL)
        g_main_context_iteration(NULL, TRUE);
    body = soup_session_send_and_read_finish(browser, result, error);
    if (body == NULL)
        return NULL;
    set_cookie =
        soup_message_headers_get_one(soup_message_get_response_headers(message), "Set-Cookie");
    if (soup_message_get_status(message) != SOUP_STATUS_OK || set_cookie == NULL) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "opening answered %u without a cookie",
                    soup_message_get_status(message));
        return NULL;
    }
    return g_strndup(set_cookie, strcspn(set_cookie, ";"));
}

static gboolean
on_signal(gpointer user_data)
{
    g_main_loop_quit(user_data);
    return G_SOURCE_REMOVE;
}

static int
run(const char *dir, const char *socket_path)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *db = g_build_filename(dir, "einsora.db", NULL);
    g_autoptr(EinsoraCatalog) catalog = NULL;
    g_autoptr(EinsoraSqliteStore) store = NULL;
    g_autoptr(EinsoraAuth) auth = NULL;
    g_autoptr(EinsoraService) service = NULL;
    g_autoptr(EinsoraTenant) tenant = einsora_tenant_new(TENANT, "bench", FALSE, CREATED_AT);
    g_autoptr(EinsoraMachine) machine = einsora_machine_new();
    g_autoptr(EinsoraWorkload) workload = NULL;
    g_autoptr(BenchTargets) targets = g_object_new(BENCH_TYPE_TARGETS, NULL);
    g_autoptr(EinsoraAccessProxy) proxy = NULL;
    g_autoptr(EinsoraAccessTicket) granted = NULL;
    g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
    g_autofree gchar *ticket = einsora_credential_new_secret("tkt_");
    g_autofree gchar *ticket_hash = einsora_credential_sha256_hex(ticket);
    g_autofree gchar *host = NULL;
    g_autofree gchar *cookie = NULL;
    EinsoraActor *actor = einsora_actor_new(TENANT, "u-bench", "bench@einsora.invalid", "bench");
    EinsoraWorkloadRequest request = {"notebook", "bench", "cpu-2c-4g", "jupyter", NULL};
    EinsoraPlacement placement = {"cpu-2c-4g", MACHINE, "sim"};
    guint port;
    int status = 1;

    catalog = einsora_catalog_new_from_data(bench_catalog, -1, "bench", &error);
    if (catalog == NULL)
        goto out;
    store = einsora_sqlite_store_open(db, &error);
    if (store == NULL || !einsora_sqlite_store_migrate(store, g_get_real_time(), &error))
        goto out;
    einsora_sqlite_store_set_clock(store, real_now, NULL);
    if (!einsora_store_insert_tenant(EINSORA_STORE(store), tenant, &error))
        goto out;
    machine->id = g_strdup(MACHINE);
    machine->tenant_id = g_strdup(TENANT);
    machine->name = g_strdup("bench");
    machine->region = g_strdup("local");
    machine->os = g_strdup("linux");
    machine->cpus = 2;
    machine->memory_mib = 4096;
    machine->sharing = EINSORA_SHARING_PRIVATE;
    machine->created_at = g_strdup(CREATED_AT);
    if (!einsora_store_insert_machine(EINSORA_STORE(store), machine, &error))
        goto out;
    service = einsora_service_new(EINSORA_STORE(store), catalog, real_now, NULL);

    /* A running notebook, and the backend's way into it. */
    workload = einsora_service_create_workload(service, actor, &request, &error);
    if (workload == NULL ||
        !move(service, workload->id, EINSORA_WORKLOAD_STATE_PROVISIONING, &placement, &error) ||
        !move(service, workload->id, EINSORA_WORKLOAD_STATE_RUNNING, NULL, &error))
        goto out;
    targets->socket_path = g_strdup(socket_path);
    targets->workload_id = g_strdup(workload->id);
    /* A token like Jupyter's (48 hex digits); the proxy adds it upstream
     * and scrubs it from text answers. */
    {
        g_autofree gchar *seed = einsora_credential_new_secret("");
        targets->token = einsora_credential_sha256_hex(seed);
        targets->token[48] = '\0';
    }

    auth = einsora_auth_new(EINSORA_STORE(store), real_now, NULL);
    proxy =
        einsora_access_proxy_new(service, auth, EINSORA_WORKLOAD_ACCESS(targets), real_now, NULL);
    if (!einsora_access_proxy_listen(proxy, "127.0.0.1:0", &error))
        goto out;
    port = einsora_access_proxy_get_port(proxy);
    host = g_strdup_printf("w-%s.localhost:%u", workload->id, port);

    /* Opening, as from the API's link. */
    granted = einsora_service_grant_access(service, actor, workload->id, ticket_hash, &error);
    if (granted == NULL)
        goto out;
    cookie = open_session(port, host, ticket, &error);
    if (cookie == NULL)
        goto out;
    printf("port=%u host=%s cookie=%s\n", port, host, cookie);
    fflush(stdout);

    g_unix_signal_add(SIGTERM, on_signal, loop);
    g_unix_signal_add(SIGINT, on_signal, loop);
    g_main_loop_run(loop);
    status = 0;
out:
    if (error != NULL)
        g_printerr("einsora-access-bench-proxy: %s\n", error->message);
    einsora_actor_free(actor);
    return status;
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    g_autofree gchar *dir = NULL;
    g_autoptr(GFile) top = NULL;
    int status;

    if (argc != 2) {
        g_printerr("usage: %s UPSTREAM_SOCKET\n", argv[0]);
        return 2;
    }
    dir = g_dir_make_tmp("einsora-access-bench-XXXXXX", &error);
    if (dir == NULL) {
        g_printerr("einsora-access-bench-proxy: %s\n", error->message);
        return 1;
    }
    chmod(dir, 0700);
    status = run(dir, argv[1]);
    top = g_file_new_for_path(dir);
    remove_tree(top);
    return status;
}
