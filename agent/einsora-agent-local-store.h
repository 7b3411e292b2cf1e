/* What a networked agent keeps on its own disk to go on through a
 * disconnect (issue 20; 004_a72b4ab93bdb5aa6.txt's local store and
 * outbox): the last desired state it applied, and an outbox of the status
 * reports it hasn't sent yet, each written and flushed to disk before it
 * counts as sent, replayed in order on reconnect and dropped once the hub
 * has them.
 *
 * In its directory (0700): desired.json, replaced whole (a crash leaves
 * the old or the new); outbox.log, one record a line, "<seq> <SHA-256 of
 * the JSON> <JSON>", appended and fdatasync'd. A crash in an append
 * leaves at most a torn last line: it is dropped at the next open, and
 * the file cut back to the last whole record. A damaged record anywhere
 * else is not a crash's doing, and the open fails rather than drop what
 * follows it. Sequence numbers only grow, across restarts and
 * compactions (a "#next <seq>" line keeps the next one). The outbox holds
 * at most EINSORA_AGENT_OUTBOX_MAX records: past that an append fails,
 * so a long outage costs bounded disk and memory. Use from one thread. */
#pragma once

#include <gio/gio.h>

#include "einsora-desired-state.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

#define EINSORA_AGENT_OUTBOX_MAX 10000

typedef struct {
    guint64 seq;
    EinsoraWorkloadStatus *status; /* owned */
} EinsoraOutboxRecord;

typedef struct _EinsoraAgentLocalStore EinsoraAgentLocalStore;

/* Opens (making it, 0700) @dir's store. */
EinsoraAgentLocalStore *einsora_agent_local_store_open(const char *dir, GError **error);
void einsora_agent_local_store_free(EinsoraAgentLocalStore *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraAgentLocalStore, einsora_agent_local_store_free)

/* The desired state last saved, or NULL (and no error) when none was. */
EinsoraDesiredState *einsora_agent_local_store_load_desired(EinsoraAgentLocalStore *self,
                                                            GError **error);
gboolean einsora_agent_local_store_save_desired(EinsoraAgentLocalStore *self,
                                                const EinsoraDesiredState *state, GError **error);

/* Appends @status, on disk before it returns; *@seq (optional) its number. */
gboolean einsora_agent_local_store_append(EinsoraAgentLocalStore *self,
                                          const EinsoraWorkloadStatus *status, guint64 *seq,
                                          GError **error);
/* The records not yet acknowledged, oldest first (EinsoraOutboxRecord, owned
 * by the array). */
GPtrArray *einsora_agent_local_store_pending(EinsoraAgentLocalStore *self);
/* The hub has every record up to @seq: they go, and the file is
 * compacted. */
gboolean einsora_agent_local_store_acknowledge(EinsoraAgentLocalStore *self, guint64 seq,
                                               GError **error);

G_END_DECLS
