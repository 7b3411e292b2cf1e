/* The certificates the user has pinned, one per server origin
 * ("https://lab.example:8443"), kept in $XDG_CONFIG_HOME/einsora/servers.json
 * (0600 in a 0700 directory, written whole) and read only when it is the
 * user's alone: a pin decides whom the client trusts. Fingerprints are
 * not secrets; no token is kept here. docs/adr/0047. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _EinsoraServerPins EinsoraServerPins;

/* @path: (nullable): the file; NULL: the user's. A missing file is no
 * pins; one that isn't the user's alone, or isn't pins, is an error. */
EinsoraServerPins *einsora_server_pins_load(const char *path, GError **error);
void einsora_server_pins_free(EinsoraServerPins *pins);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraServerPins, einsora_server_pins_free)

const char *einsora_server_pins_get_path(EinsoraServerPins *pins);
/* The fingerprint pinned for @server's origin, or NULL. */
const char *einsora_server_pins_lookup(EinsoraServerPins *pins, const char *server);
/* Pins @fingerprint for @server's origin, in memory and in the file. */
gboolean einsora_server_pins_save(EinsoraServerPins *pins, const char *server,
                                  const char *fingerprint, GError **error);

/* "https://host:port" of @url (host lowercased, the port written out), or
 * NULL when @url isn't an http:// or https:// URL. */
gchar *einsora_server_origin(const char *url);

G_END_DECLS
