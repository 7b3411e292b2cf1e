/* The reason vocabulary: every timeline row's reason is built here, from
 * fixed phrases and values Einsora itself owns (class names, counts, the
 * actor's email). Never from a runtime's own text. Every reason passes
 * einsora_reason_clean() before it is stored. */
#pragma once

#include <glib.h>

#include "einsora-actor.h"
#include "einsora-shortfall.h"
#include "einsora-workload-state.h"

G_BEGIN_DECLS

/* Longest reason stored, in bytes; longer ones are cut at a character. */
#define EINSORA_REASON_MAX_BYTES 400

typedef enum {
    EINSORA_USER_ACTION_START,
    EINSORA_USER_ACTION_STOP,
    EINSORA_USER_ACTION_DELETE,
} EinsoraUserAction;

gchar *einsora_reason_clean(const char *reason);

gchar *einsora_reason_created(const EinsoraActor *actor);
gchar *einsora_reason_requested(EinsoraUserAction action, const EinsoraActor *actor);
/* A one-time link to open the notebook in a browser was handed out. */
gchar *einsora_reason_access_requested(const EinsoraActor *actor);
/* "waiting for cpu-2c-4g capacity: needs 2 CPU cores, 1 free"; the
 * figures only to @trusted tenants, and only when @shortfall (may be
 * NULL) knows what is short. */
gchar *einsora_reason_waiting_for_capacity(const char *gpu_class, const EinsoraShortfall *shortfall,
                                           gboolean trusted);
/* With @gpu_mask, which of the machine's GPUs (their nvidia-smi
 * indexes); 0 leaves them unsaid. */
gchar *einsora_reason_admitted(gint64 devices, const char *placed_class, const char *machine_name,
                               const char *driver, guint64 gpu_mask);
/* Admitted on a class of its fallback list (docs/adr/0052), after
 * @waited_seconds waiting for @requested_class. */
gchar *einsora_reason_admitted_fallback(const char *requested_class, gint64 waited_seconds,
                                        gint64 devices, const char *placed_class,
                                        const char *machine_name, const char *driver,
                                        guint64 gpu_mask);
gchar *einsora_reason_waiting_for_machine(const char *gpu_class);
gchar *einsora_reason_waiting_for_driver(EinsoraWorkloadKind kind, const char *gpu_class);
gchar *einsora_reason_provisioning_timeout(gint64 timeout_seconds);
/* No machine here offers a driver the image runs on: create still
 * succeeds (a machine may join), and this says so. @drivers: "docker,
 * macos-native". */
gchar *einsora_reason_runs_nowhere_now(const char *image, const char *drivers);
/* "pulling its image: 3 of 7 layers, 120 of 530 MB" */
gchar *einsora_reason_pulling_image(gint64 layers_done, gint64 layers, gint64 bytes_done,
                                    gint64 bytes_total);
gchar *einsora_reason_class_withdrawn(const char *gpu_class);
gchar *einsora_reason_image_withdrawn(const char *image);
gchar *einsora_reason_machine_away_too_long(gint64 seconds);
/* "stopped after 1h idle: no activity since 14:02 UTC" (a date too when
 * that was a day or more before @now_us). */
/* Held for an aged request (docs/adr/0051): it waited since @since_us. */
gchar *einsora_reason_waiting_behind(const char *gpu_class, gint64 since_us, gint64 now_us);
gchar *einsora_reason_idle_stopped(gint64 timeout_seconds, gint64 since_us, gint64 now_us);
/* "1h", "30m", "1h30m", "45s": a span as reasons and the CLI say it. */
gchar *einsora_reason_format_span(gint64 seconds);

const char *einsora_reason_waiting_for_disk(void);
const char *einsora_reason_machine_offline(void);
const char *einsora_reason_ready(void);
const char *einsora_reason_released(void);
const char *einsora_reason_gone(void);
const char *einsora_reason_stopped_by_itself(void);
const char *einsora_reason_vanished(void);
const char *einsora_reason_run_retrying(void);
const char *einsora_reason_observe_retrying(void);
const char *einsora_reason_capacity_retrying(void);
const char *einsora_reason_machine_reported_problem(void);

G_END_DECLS
