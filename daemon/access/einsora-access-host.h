/* The access proxy's parsing of what a browser sends, kept apart so it
 * can be tested (and fuzzed) alone: the workload a Host names, and the
 * proxy's own cookie inside a Cookie header. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EINSORA_ACCESS_COOKIE "einsora_access"

/* "w-<uuid>.localhost" with an optional ":port" (case-insensitive, as
 * hosts are): the workload ID in lower case, or NULL for any other host.
 * @port is 0 when the Host carries none. */
gchar *einsora_access_host_parse(const char *host, guint *port);

/* The value of the proxy's cookie in a Cookie header (NULL: none), and
 * in @rest the header without it (NULL when nothing else is left), so
 * the workload never sees it. Two copies of the cookie are refused
 * (NULL), as a page could plant one for a path. */
gchar *einsora_access_cookie_take(const char *header, gchar **rest);

/* The ticket in the query of an opening link: exactly one "ticket"
 * parameter shaped as the API makes them (EINSORA_CREDENTIAL_ACCESS_
 * TICKET_PREFIX and 43 base64url characters), or NULL. Anything else is
 * refused before a hash or a store lookup is spent on it. */
gchar *einsora_access_ticket_parse(const char *query);

/* Whether a Set-Cookie header value sets the proxy's own cookie. */
gboolean einsora_access_cookie_is_ours(const char *set_cookie);

G_END_DECLS
