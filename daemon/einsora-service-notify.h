/* What the daemon tells its service manager (systemd's sd_notify
 * protocol, written here: one datagram to $NOTIFY_SOCKET, no libsystemd):
 * READY=1 once the store and both listeners are up, STOPPING=1 when it
 * stops, and WATCHDOG=1 from the main loop at half $WATCHDOG_USEC while
 * the loop turns, so a daemon whose loop is stuck is restarted. Without
 * $NOTIFY_SOCKET each call does nothing. docs/adr/0048. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Sends @state ("READY=1\nSTATUS=…"); FALSE (and a message in the log,
 * once) when the socket is named and can't be written. */
gboolean einsora_service_notify(const char *state);
/* Starts the watchdog's pings if the manager asked for them (its
 * $WATCHDOG_USEC, for this process's $WATCHDOG_PID when set); the source's
 * ID, or 0. */
guint einsora_service_notify_start_watchdog(void);

G_END_DECLS
