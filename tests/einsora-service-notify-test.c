/* The daemon under a service manager: the test plays systemd, with a
 * datagram socket of its own as NOTIFY_SOCKET (a path, and a name in
 * the abstract namespace): READY=1 with a status once the API answers,
 * WATCHDOG=1 at half WATCHDOG_USEC while it runs (none when WATCHDOG_PID
 * names another process), STOPPING=1 at SIGTERM. */
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "einsora-test-daemon.h"

static GSocket *
manager_socket(GSocketAddress *address)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocket) socket = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM,
                                             G_SOCKET_PROTOCOL_DEFAULT, &error);

    g_assert_no_error(error);
    g_assert_true(g_socket_bind(socket, address, FALSE, &error));
    g_assert_no_error(error);
    g_socket_set_timeout(socket, 1);
    return g_steal_pointer(&socket);
}

/* The next datagram, or NULL after @timeout_ms. */
static gchar *
next_notice(GSocket *socket, guint timeout_ms)
{
    gchar buffer[4096];
    gint64 deadline = g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND;

    while (g_get_monotonic_time() < deadline) {
        g_autoptr(GError) error = NULL;
        gssize got = g_socket_receive(socket, buffer, sizeof buffer - 1, NULL, &error);
        if (got >= 0) {
            buffer[got] = '\0';
            return g_strdup(buffer);
        }
        g_assert_true(g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT));
    }
    return NULL;
}

static void
check_manager(GSocketAddress *address, const char *notify_socket)
{
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autoptr(GSocket) manager = manager_socket(address);
    g_autofree gchar *ready = NULL;
    g_autofree gchar *stopping = NULL;
    guint pings = 0;
    gint64 deadline;

    einsora_test_daemon_setenv(daemon, "NOTIFY_SOCKET", notify_socket);
    einsora_test_daemon_setenv(daemon, "WATCHDOG_USEC", "400000");
    einsora_test_daemon_start(daemon);
    ready = next_notice(manager, 30000);
    g_assert_nonnull(ready);
    g_assert_true(g_str_has_prefix(ready, "READY=1\nSTATUS=api on http://127.0.0.1:"));
    /* Ready means ready: the API answers at once. */
    {
        g_autoptr(EinsoraTestResponse) health =
            einsora_test_request(daemon, "GET", "/healthz", NULL, NULL, NULL, NULL);
        g_assert_cmpuint(health->status, ==, 200);
    }
    /* Pings every 200 ms: at least four in two seconds (a loaded machine
     * may miss one or two). */
    deadline = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
    while (g_get_monotonic_time() < deadline) {
        g_autofree gchar *notice = next_notice(manager, 500);
        if (g_strcmp0(notice, "WATCHDOG=1") == 0)
            pings++;
    }
    g_test_message("%u watchdog pings in 2 s", pings);
    g_assert_cmpuint(pings, >=, 4);
    einsora_test_daemon_stop(daemon);
    /* Pings sent before the stop may come first. */
    for (guint i = 0; i < 20 && stopping == NULL; i++) {
        g_autofree gchar *notice = next_notice(manager, 1000);
        g_assert_nonnull(notice);
        if (!g_str_equal(notice, "WATCHDOG=1"))
            stopping = g_steal_pointer(&notice);
    }
    g_assert_cmpstr(stopping, ==, "STOPPING=1");
}

static void
test_path_socket(void)
{
    g_autofree gchar *dir = g_dir_make_tmp("einsora-notify-XXXXXX", NULL);
    g_autofree gchar *path = g_build_filename(dir, "notify", NULL);
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(path);

    check_manager(address, path);
    g_unlink(path);
    g_rmdir(dir);
}

static void
test_abstract_socket(void)
{
    g_autofree gchar *name = g_strdup_printf("einsora-notify-test-%d-%u", getpid(), g_random_int());
    g_autofree gchar *notify = g_strdup_printf("@%s", name);
    g_autoptr(GSocketAddress) address =
        g_unix_socket_address_new_with_type(name, -1, G_UNIX_SOCKET_ADDRESS_ABSTRACT);

    check_manager(address, notify);
}

/* WATCHDOG_PID of another process: the pings are not ours to send. */
static void
test_watchdog_for_another(void)
{
    g_autofree gchar *dir = g_dir_make_tmp("einsora-notify-XXXXXX", NULL);
    g_autofree gchar *path = g_build_filename(dir, "notify", NULL);
    g_autoptr(GSocketAddress) address = g_unix_socket_address_new(path);
    g_autoptr(GSocket) manager = manager_socket(address);
    g_autoptr(EinsoraTestDaemon) daemon = einsora_test_daemon_new();
    g_autofree gchar *ready = NULL;
    g_autofree gchar *next = NULL;

    einsora_test_daemon_setenv(daemon, "NOTIFY_SOCKET", path);
    einsora_test_daemon_setenv(daemon, "WATCHDOG_USEC", "200000");
    einsora_test_daemon_setenv(daemon, "WATCHDOG_PID", "1");
    einsora_test_daemon_start(daemon);
    ready = next_notice(manager, 30000);
    g_assert_nonnull(ready);
    g_assert_true(g_str_has_prefix(ready, "READY=1"));
    next = next_notice(manager, 1000);
    g_assert_null(next);
    einsora_test_daemon_stop(daemon);
    g_unlink(path);
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/service/notify/path", test_path_socket);
    g_test_add_func("/service/notify/abstract", test_abstract_socket);
    g_test_add_func("/service/notify/watchdog-for-another", test_watchdog_for_another);
    return g_test_run();
}
