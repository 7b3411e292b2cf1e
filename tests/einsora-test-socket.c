#include "einsora-test-socket.h"

GSocket *
einsora_test_connect(guint port)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) address = g_inet_socket_address_new(loopback, (guint16)port);
    g_autoptr(GSocket) socket =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);

    g_assert_no_error(error);
    g_socket_set_timeout(socket, 20);
    g_assert_true(g_socket_connect(socket, address, NULL, &error));
    g_assert_no_error(error);
    return g_steal_pointer(&socket);
}
