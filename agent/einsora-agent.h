/* The node agent (ADR-0016): one sync loop that reports what this machine
 * has and long-polls its hub for the machine's desired state, and applies
 * that state beside the loop through the drivers it has. Every driver
 * call has a time limit, so a long one never makes a busy machine look
 * offline; anything worth reporting cuts a waiting sync short. It deletes
 * data only for workloads listed for removal, and knows only what it is
 * told: never a store or backend header. No threads: everything runs on
 * the main context that was thread-default when the agent was made. */
#pragma once

#include <gio/gio.h>

#include "einsora-access-source.h"
#include "einsora-agent-driver.h"
#include "einsora-agent-local-store.h"
#include "einsora-inventory.h"
#include "einsora-sync-transport.h"
#include "einsora-timestamp.h"

G_BEGIN_DECLS

#define EINSORA_AGENT_DRIVER_TIMEOUT_US (G_GINT64_CONSTANT(60) * G_USEC_PER_SEC)
#define EINSORA_AGENT_CHECK_INTERVAL_US (G_GINT64_CONSTANT(2) * G_USEC_PER_SEC)

#define EINSORA_TYPE_AGENT (einsora_agent_get_type())
G_DECLARE_FINAL_TYPE(EinsoraAgent, einsora_agent, EINSORA, AGENT, GObject)

EinsoraAgent *einsora_agent_new(EinsoraSyncTransport *transport, const char *machine_id,
                                const char *owner_tenant_id, const EinsoraInventory *inventory,
                                GPtrArray *drivers);

void einsora_agent_start(EinsoraAgent *self);
void einsora_agent_stop(EinsoraAgent *self);

void einsora_agent_set_inventory(EinsoraAgent *self, const EinsoraInventory *inventory);
void einsora_agent_set_driver_timeout(EinsoraAgent *self, gint64 timeout_us);
void einsora_agent_set_check_interval(EinsoraAgent *self, gint64 interval_us);
/* The clock its reports' sent_at is read from (the hub measures how far
 * it is from its own): the real one unless a test drives it. */
void einsora_agent_set_clock(EinsoraAgent *self, EinsoraNowFunc now, gpointer now_data);
gint64 einsora_agent_get_applied_generation(EinsoraAgent *self);
/* A networked agent's own disk, taken before start: every status change
 * is in its outbox before a report carries it, and is replayed in each
 * report until the hub says it has it; each desired state applied is
 * saved, and an agent that starts while the server can't be reached
 * goes on from the saved one (docs/adr/0058). */
void einsora_agent_use_local_store(EinsoraAgent *self, EinsoraAgentLocalStore *store);
/* A networked agent that opens tunnel streams when the hub asks
 * (docs/adr/0059): its reports say so, and every answer that asks for
 * some calls @wanted with how many. */
typedef void (*EinsoraAgentTunnelsWanted)(guint count, gpointer user_data);
void einsora_agent_set_tunnels_wanted(EinsoraAgent *self, EinsoraAgentTunnelsWanted wanted,
                                      gpointer user_data);
/* The way into a ready workload (its driver's socket and token), for the
 * access proxy in this process only; FALSE when it isn't ready here. The
 * agent is the hub's EinsoraAccessSource through this. */
/* Where attempt @attempt's output of a workload it runs or parks is
 * (einsora_agent_driver_find_log()). */
gchar *einsora_agent_find_log(EinsoraAgent *self, const char *workload_id, gint64 attempt,
                              gint64 *found_attempt, GError **error);
gboolean einsora_agent_get_access(EinsoraAgent *self, const char *workload_id, gint64 *attempt,
                                  gchar **socket_path, gchar **token);

G_END_DECLS
