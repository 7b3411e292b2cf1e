/* The desktop app's tests against the real daemon over TLS: the daemon
 * started with its own certificate, pinned for the app, the app's files
 * in the test's directory, notifications off. */
#pragma once

#include "einsora-test-daemon.h"

G_BEGIN_DECLS

/* Starts a daemon (EINSORA_TLS=on, the sim driver, and @extra_env's
 * NULL-ended name/value pairs), points the app at it and pins its
 * certificate; *@fingerprint: the pinned one. Call after g_test_init(),
 * with @dir the test's directory. Calls adw_init(). */
EinsoraTestDaemon *einsora_test_app_daemon_start(const char *dir, const char *const *extra_env,
                                                 gchar **fingerprint);

G_END_DECLS
