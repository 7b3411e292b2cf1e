/* The interface drivers implement (DESIGN's agent/driver.h): start, stop
 * (park: keep its data), remove (delete its data), and what the driver
 * sees now. Every call is async and honours its GCancellable promptly, so
 * the agent can put a time limit on each one and a long driver call never
 * makes a busy machine look offline. Drivers return promptly where they
 * can and report long work as progressing (starting, stopping, removing)
 * through get_status(). A cancelled call ends with G_IO_ERROR_CANCELLED,
 * and get_status() says where it left the workload. Callers use one main
 * context: the one that was thread-default when the driver was made. */
#pragma once

#include <gio/gio.h>

#include "einsora-desired-workload.h"
#include "einsora-status-code.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

/* get_status()'s attempt when the driver has nothing for a workload. */
#define EINSORA_AGENT_DRIVER_NO_ATTEMPT G_GINT64_CONSTANT(-1)

#define EINSORA_TYPE_AGENT_DRIVER (einsora_agent_driver_get_type())
G_DECLARE_INTERFACE(EinsoraAgentDriver, einsora_agent_driver, EINSORA, AGENT_DRIVER, GObject)

struct _EinsoraAgentDriverInterface {
    GTypeInterface parent_iface;

    const char *(*get_name)(EinsoraAgentDriver *self);
    void (*start_async)(EinsoraAgentDriver *self, const EinsoraDesiredWorkload *workload,
                        GCancellable *cancellable, GAsyncReadyCallback callback,
                        gpointer user_data);
    gboolean (*start_finish)(EinsoraAgentDriver *self, GAsyncResult *result, GError **error);
    void (*stop_async)(EinsoraAgentDriver *self, const char *workload_id, GCancellable *cancellable,
                       GAsyncReadyCallback callback, gpointer user_data);
    gboolean (*stop_finish)(EinsoraAgentDriver *self, GAsyncResult *result, GError **error);
    void (*remove_async)(EinsoraAgentDriver *self, const char *workload_id,
                         GCancellable *cancellable, GAsyncReadyCallback callback,
                         gpointer user_data);
    gboolean (*remove_finish)(EinsoraAgentDriver *self, GAsyncResult *result, GError **error);
    EinsoraStatusCode (*get_status)(EinsoraAgentDriver *self, const char *workload_id,
                                    gint64 *attempt);
    gchar **(*list_workloads)(EinsoraAgentDriver *self);
    /* Optional: NULL for drivers that serve nothing to open. */
    gboolean (*get_access)(EinsoraAgentDriver *self, const char *workload_id, gint64 *attempt,
                           gchar **socket_path, gchar **token);
    /* Optional: NULL for drivers that pull nothing. */
    gboolean (*get_pull_progress)(EinsoraAgentDriver *self, const char *workload_id,
                                  EinsoraPullProgress *progress);
    /* Optional: NULL for drivers that can't tell how a workload is used. */
    gboolean (*get_activity)(EinsoraAgentDriver *self, const char *workload_id,
                             EinsoraWorkloadActivity *activity);
    /* Optional: NULL for drivers that keep no output. */
    gchar *(*find_log)(EinsoraAgentDriver *self, const char *workload_id, gint64 attempt,
                       gint64 *found_attempt, GError **error);
};

const char *einsora_agent_driver_get_name(EinsoraAgentDriver *self);

void einsora_agent_driver_start_async(EinsoraAgentDriver *self,
                                      const EinsoraDesiredWorkload *workload,
                                      GCancellable *cancellable, GAsyncReadyCallback callback,
                                      gpointer user_data);
gboolean einsora_agent_driver_start_finish(EinsoraAgentDriver *self, GAsyncResult *result,
                                           GError **error);
void einsora_agent_driver_stop_async(EinsoraAgentDriver *self, const char *workload_id,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data);
gboolean einsora_agent_driver_stop_finish(EinsoraAgentDriver *self, GAsyncResult *result,
                                          GError **error);
void einsora_agent_driver_remove_async(EinsoraAgentDriver *self, const char *workload_id,
                                       GCancellable *cancellable, GAsyncReadyCallback callback,
                                       gpointer user_data);
gboolean einsora_agent_driver_remove_finish(EinsoraAgentDriver *self, GAsyncResult *result,
                                            GError **error);
EinsoraStatusCode einsora_agent_driver_get_status(EinsoraAgentDriver *self, const char *workload_id,
                                                  gint64 *attempt);
gchar **einsora_agent_driver_list_workloads(EinsoraAgentDriver *self);
gboolean einsora_agent_driver_get_access(EinsoraAgentDriver *self, const char *workload_id,
                                         gint64 *attempt, gchar **socket_path, gchar **token);
/* How far the image pull of a starting workload is; FALSE when none runs
 * (progress then all zero). A driver says "status-changed" as it goes. */
gboolean einsora_agent_driver_get_pull_progress(EinsoraAgentDriver *self, const char *workload_id,
                                                EinsoraPullProgress *progress);

/* How a running workload is used, as its server last said; FALSE (all
 * zero) when the driver doesn't know. A driver says "status-changed"
 * when it changes. */
gboolean einsora_agent_driver_get_activity(EinsoraAgentDriver *self, const char *workload_id,
                                           EinsoraWorkloadActivity *activity);
/* Where attempt @attempt's output (<= 0: the latest attempt's) is on
 * this machine: the path of its .log, laid out as einsora-log-files.h
 * says; @found_attempt says which attempt it is. G_IO_ERROR_NOT_FOUND
 * when nothing is kept, G_IO_ERROR_NOT_SUPPORTED for a driver that
 * keeps no output. */
gchar *einsora_agent_driver_find_log(EinsoraAgentDriver *self, const char *workload_id,
                                     gint64 attempt, gint64 *found_attempt, GError **error);

G_END_DECLS
