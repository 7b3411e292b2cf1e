#include "einsora-test-server.h"

guint
einsora_test_server_listen_loopback(SoupServer *server)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GSocket) socket =
        g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
    g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
    g_autoptr(GSocketAddress) bound = NULL;

    g_assert_no_error(error);
    g_assert_true(g_socket_bind(socket, any, TRUE, &error));
    g_assert_no_error(error);
    g_assert_true(g_socket_listen(socket, &error));
    g_assert_no_error(error);
    bound = g_socket_get_local_address(socket, &error);
    g_assert_no_error(error);
    g_assert_true(soup_server_listen_socket(server, socket, 0, &error));
    g_assert_no_error(error);
    return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
}
