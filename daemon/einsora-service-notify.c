#define G_LOG_DOMAIN "einsora-daemon"

#include "einsora-service-notify.h"

#include <errno.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <string.h>
#include <unistd.h>

gboolean
einsora_service_notify(const char *state)
{
    static gboolean complained;
    const char *path = g_getenv("NOTIFY_SOCKET");
    g_autoptr(GSocket) socket = NULL;
    g_autoptr(GSocketAddress) address = NULL;
    g_autoptr(GError) error = NULL;

    if (path == NULL || *path == '\0')
        return TRUE;
    /* "@name" is a socket in the abstract namespace. */
    if (path[0] == '@')
        address = g_unix_socket_address_new_with_type(path + 1, -1, G_UNIX_SOCKET_ADDRESS_ABSTRACT);
    else if (path[0] == '/')
        address = g_unix_socket_address_new(path);
    if (address == NULL) {
        g_set_error(&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "NOTIFY_SOCKET \"%s\" is neither a path nor @name", path);
    } else {
        socket = g_socket_new(G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM,
                              G_SOCKET_PROTOCOL_DEFAULT, &error);
        if (socket != NULL)
            g_socket_send_to(socket, address, state, strlen(state), NULL, &error);
    }
    if (error == NULL)
        return TRUE;
    if (!complained)
        g_message("couldn't tell the service manager %s: %s", state, error->message);
    complained = TRUE;
    return FALSE;
}

static gboolean
on_watchdog(gpointer user_data)
{
    einsora_service_notify("WATCHDOG=1");
    return G_SOURCE_CONTINUE;
}

guint
einsora_service_notify_start_watchdog(void)
{
    const char *usec_text = g_getenv("WATCHDOG_USEC");
    const char *pid_text = g_getenv("WATCHDOG_PID");
    guint64 usec = 0;
    guint64 pid = 0;

    if (usec_text == NULL ||
        !g_ascii_string_to_unsigned(usec_text, 10, 1, G_MAXUINT64, &usec, NULL))
        return 0;
    /* Meant for another process (a parent that execs us, say). */
    if (pid_text != NULL &&
        (!g_ascii_string_to_unsigned(pid_text, 10, 1, G_MAXUINT32, &pid, NULL) ||
         (pid_t)pid != getpid()))
        return 0;
    /* Half the interval, as sd_watchdog_enabled(3) advises; at least 1 ms. */
    return g_timeout_add(MAX(usec / 2000, 1), on_watchdog, NULL);
}
