#include "einsora-test-port.h"

#include <gio/gio.h>

guint
einsora_test_free_port(void)
{
    g_autoptr(GSocket) socket =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
    g_autoptr(GSocketAddress) bound = NULL;

    /* Bound and closed again: the kernel won't hand it out at once. */
    g_assert_true(g_socket_bind(socket, any, FALSE, NULL));
    bound = g_socket_get_local_address(socket, NULL);
    g_assert_nonnull(bound);
    return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
}
