/* A test's stand-in HTTP server on 127.0.0.1, listening on a socket the
 * test makes: libsoup 3.2's soup_server_listen_local() leaks the local
 * address it reads back, which the sanitizer tree's leak check reports. */
#pragma once

#include <libsoup/soup.h>

G_BEGIN_DECLS

/* Listens @server on a free loopback port; returns the port. */
guint einsora_test_server_listen_loopback(SoupServer *server);

G_END_DECLS
