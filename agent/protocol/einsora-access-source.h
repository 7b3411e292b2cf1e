/* Where the way into a ready workload (its Unix socket and its own
 * token) comes from: the in-process agent, handed to the hub in this
 * process only. Never part of a Sync report, never stored or logged. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_ACCESS_SOURCE (einsora_access_source_get_type())
G_DECLARE_INTERFACE(EinsoraAccessSource, einsora_access_source, EINSORA, ACCESS_SOURCE, GObject)

struct _EinsoraAccessSourceInterface {
    GTypeInterface parent_iface;

    gboolean (*lookup)(EinsoraAccessSource *self, const char *workload_id, gint64 *attempt,
                       gchar **socket_path, gchar **token);
};

/* FALSE when the workload isn't ready there; the caller wipes @token. */
gboolean einsora_access_source_lookup(EinsoraAccessSource *self, const char *workload_id,
                                      gint64 *attempt, gchar **socket_path, gchar **token);

G_END_DECLS
