/* Raw client sockets for tests that speak HTTP by hand to a listener on
 * 127.0.0.1. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* A blocking TCP connection to 127.0.0.1:@port with a 20 s timeout; the
 * test fails if it can't be made. */
GSocket *einsora_test_connect(guint port);

G_END_DECLS
