/* The hub of an enrolled agent, over the network (docs/adr/0056): Sync as
 * POST /agent/v1/sync to the server it joined, with the client
 * certificate the join left, and only to the server whose certificate
 * has the pinned fingerprint. One session, kept alive, so a long poll
 * after the first costs no handshake. */
#pragma once

#include <gio/gio.h>

#include "einsora-sync-transport.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_REMOTE_HUB (einsora_remote_hub_get_type())
G_DECLARE_FINAL_TYPE(EinsoraRemoteHub, einsora_remote_hub, EINSORA, REMOTE_HUB, GObject)

/* From <state dir>/agent/ as einsora_agent_join() left it: the server
 * and its fingerprint, the key and certificate; *@machine_id gets the
 * machine's ID. */
EinsoraRemoteHub *einsora_remote_hub_load(const char *state_dir, gchar **machine_id,
                                          GError **error);
const char *einsora_remote_hub_get_server(EinsoraRemoteHub *self);
/* The server certificate's pinned fingerprint, and this machine's own
 * client certificate: what its tunnels (docs/adr/0059) connect with. */
const char *einsora_remote_hub_get_fingerprint(EinsoraRemoteHub *self);
GTlsCertificate *einsora_remote_hub_get_certificate(EinsoraRemoteHub *self);
/* The machine's owner, as the server said at the join; NULL for a machine
 * that joined before servers said it: then no tenant's workloads run on
 * drivers only the owner may use. */
const char *einsora_remote_hub_get_owner_tenant_id(EinsoraRemoteHub *self);

G_END_DECLS
