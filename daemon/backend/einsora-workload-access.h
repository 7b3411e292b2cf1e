/* The way into a running workload for the access proxy: the Unix socket
 * it serves on and its own token, from the backend that runs it (the hub
 * asks the agent in this process). Runtime-neutral; never over the API. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define EINSORA_TYPE_WORKLOAD_ACCESS (einsora_workload_access_get_type())
G_DECLARE_INTERFACE(EinsoraWorkloadAccess, einsora_workload_access, EINSORA, WORKLOAD_ACCESS,
                    GObject)

struct _EinsoraWorkloadAccessInterface {
    GTypeInterface parent_iface;

    gboolean (*lookup)(EinsoraWorkloadAccess *self, const char *tenant_id, const char *workload_id,
                       gint64 *attempt, gchar **socket_path, gchar **token, GError **error);
    /* Optional: NULL where every workload runs in this process. */
    gchar *(*lookup_remote)(EinsoraWorkloadAccess *self, const char *tenant_id,
                            const char *workload_id, gint64 *attempt, GError **error);
};

/* For @tenant_id's running workload: which attempt serves, where, with
 * which token. EINSORA_ERROR_NOT_FOUND when it isn't running here (or is
 * another tenant's). The caller wipes @token. */
gboolean einsora_workload_access_lookup(EinsoraWorkloadAccess *self, const char *tenant_id,
                                        const char *workload_id, gint64 *attempt,
                                        gchar **socket_path, gchar **token, GError **error);

/* For @tenant_id's workload running on a machine whose agent runs in
 * another process (a networked agent, reached through its tunnel,
 * docs/adr/0059): that machine's ID, and the attempt that runs. NULL
 * with EINSORA_ERROR_NOT_FOUND otherwise. Neither its socket nor its
 * token is known here: they stay on that machine. */
gchar *einsora_workload_access_lookup_remote(EinsoraWorkloadAccess *self, const char *tenant_id,
                                             const char *workload_id, gint64 *attempt,
                                             GError **error);

G_END_DECLS
