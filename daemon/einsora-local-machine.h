/* This machine, as the daemon's in-process agent knows it: its identity
 * (the machine-id file next to the database, never the hostname), what it
 * has, and its registration in the store, owned by EINSORA_MACHINE_OWNER
 * and in this daemon's region. */
#pragma once

#include "einsora-inventory.h"
#include "einsora-machine.h"
#include "einsora-store.h"

G_BEGIN_DECLS

/* Reads <state_dir>/machine-id, or writes a new one (0600) on first use. */
gchar *einsora_local_machine_load_id(const char *state_dir, gint64 now_us, GError **error);
/* Registers the machine if its row is missing; a registered machine's
 * owner and region never change. Returns the row. */
EinsoraMachine *einsora_local_machine_register(EinsoraStore *store, const char *machine_id,
                                               const char *owner, const char *region,
                                               const EinsoraInventory *inventory, gint64 now_us,
                                               GError **error);

G_END_DECLS
