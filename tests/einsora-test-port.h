/* A TCP port on 127.0.0.1 that nothing listens on now, for a daemon that
 * a test (or the app under test) starts itself. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

guint einsora_test_free_port(void);

G_END_DECLS
