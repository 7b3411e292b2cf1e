/* Where a workload's output can be read in this process: the backend
 * that runs it says (the hub asks the agent in this process). The
 * service scopes it to the tenant first; this only finds files. */
#pragma once

#include <glib-object.h>

#include "einsora-workload.h"

G_BEGIN_DECLS

#define EINSORA_TYPE_WORKLOAD_LOGS (einsora_workload_logs_get_type())
G_DECLARE_INTERFACE(EinsoraWorkloadLogs, einsora_workload_logs, EINSORA, WORKLOAD_LOGS, GObject)

struct _EinsoraWorkloadLogsInterface {
    GTypeInterface parent_iface;

    gchar *(*find)(EinsoraWorkloadLogs *self, const EinsoraWorkload *workload, gint64 attempt,
                   gint64 *found_attempt, gchar **token, GError **error);
};

/* The path of the .log of @workload's attempt @attempt (<= 0: the
 * latest), laid out as docs/adr/0041 says; @found_attempt says which.
 * @token gets the attempt's own token while it runs (so a reader can
 * redact it), else NULL; the caller wipes it. EINSORA_ERROR_NOT_FOUND
 * when nothing of it is kept here. */
gchar *einsora_workload_logs_find(EinsoraWorkloadLogs *self, const EinsoraWorkload *workload,
                                  gint64 attempt, gint64 *found_attempt, gchar **token,
                                  GError **error);

G_END_DECLS
