/* The sim driver: runs nothing, for development and tests only. Every
 * path a real driver can take is scriptable: how long starts and stops
 * take, a start that fails with a given code, a workload that stops by
 * itself, one that never becomes ready. Timers run on the main context
 * that was thread-default when the driver was made; there are no threads. */
#pragma once

#include <gio/gio.h>

#include "einsora-agent-driver.h"

G_BEGIN_DECLS

/* The longest delay a script or the environment may ask for: an hour. */
#define EINSORA_SIM_MAX_DELAY_MS 3600000

#define EINSORA_TYPE_SIM_DRIVER (einsora_sim_driver_get_type())
G_DECLARE_FINAL_TYPE(EinsoraSimDriver, einsora_sim_driver, EINSORA, SIM_DRIVER, GObject)

EinsoraSimDriver *einsora_sim_driver_new(void);
EinsoraSimDriver *einsora_sim_driver_new_from_env(GError **error);

void einsora_sim_driver_set_start_delay(EinsoraSimDriver *self, guint delay_ms);
void einsora_sim_driver_set_stop_delay(EinsoraSimDriver *self, guint delay_ms);

/* Scripts apply to one workload, or to all when @workload_id is NULL; a
 * workload's own script replaces the one for all. */
gboolean einsora_sim_driver_script_failure(EinsoraSimDriver *self, const char *workload_id,
                                           const char *code, GError **error);
void einsora_sim_driver_script_exit_after(EinsoraSimDriver *self, const char *workload_id,
                                          guint after_ms);
void einsora_sim_driver_script_never_ready(EinsoraSimDriver *self, const char *workload_id);
void einsora_sim_driver_clear_scripts(EinsoraSimDriver *self);

G_END_DECLS
