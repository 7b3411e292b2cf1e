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
    /* Optional: NULL where output can't be read in this process. */
    gchar *(*find_log)(EinsoraAccessSource *self, const char *workload_id, gint64 attempt,
                       gint64 *found_attempt, GError **error);
};

/* FALSE when the workload isn't ready there; the caller wipes @token. */
gboolean einsora_access_source_lookup(EinsoraAccessSource *self, const char *workload_id,
                                      gint64 *attempt, gchar **socket_path, gchar **token);

/* The path of the .log of @workload_id's attempt @attempt (<= 0: the
 * latest), laid out as drivers keep output (docs/adr/0041), for reading
 * in this process only: an agent never sends its logs through Sync.
 * G_IO_ERROR_NOT_FOUND when none is kept. */
gchar *einsora_access_source_find_log(EinsoraAccessSource *self, const char *workload_id,
                                      gint64 attempt, gint64 *found_attempt, GError **error);

G_END_DECLS
