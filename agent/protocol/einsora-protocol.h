/* The Sync protocol of ADR-0016: what an agent reports (EinsoraSyncReport)
 * and the complete desired state the hub answers with
 * (EinsoraDesiredState), with their JSON forms. Hosts may be hostile, so
 * every message is read strictly and within these bounds. */
#pragma once

#include "einsora-desired-state.h"
#include "einsora-desired-workload.h"
#include "einsora-inventory-gpu.h"
#include "einsora-inventory.h"
#include "einsora-json-read.h"
#include "einsora-status-code.h"
#include "einsora-sync-report.h"
#include "einsora-workload-mode.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

/* The inventory and the strict JSON reader are the domain's (a machine's
 * stored inventory is read the same way); their bounds are the
 * protocol's too. */
#define EINSORA_PROTOCOL_MAX_STRING_BYTES EINSORA_JSON_MAX_STRING_BYTES
#define EINSORA_PROTOCOL_MAX_WORKLOADS 10000
#define EINSORA_PROTOCOL_MAX_GPUS EINSORA_INVENTORY_MAX_GPUS
#define EINSORA_PROTOCOL_MAX_DRIVERS EINSORA_INVENTORY_MAX_DRIVERS
#define EINSORA_PROTOCOL_MAX_CPUS EINSORA_INVENTORY_MAX_CPUS
#define EINSORA_PROTOCOL_MAX_MEMORY_MIB EINSORA_INVENTORY_MAX_MEMORY_MIB
/* An agent's version is a build's name ("0.1.0", "0.2.0~rc1+git5"),
 * shown as it is in lists: short and plain. */
#define EINSORA_PROTOCOL_MAX_AGENT_VERSION 64
/* Status changes replayed in one report: an outbox holds up to 10,000,
 * sent a thousand at a time so a report stays far under its body limit. */
#define EINSORA_PROTOCOL_MAX_REPLAY 1000
/* The most tunnel streams one desired state asks an agent to open. */
#define EINSORA_PROTOCOL_MAX_OPEN_TUNNELS 64
/* As the model store's names: a model store never makes a longer one. */
#define EINSORA_PROTOCOL_MAX_MODEL_NAME 128

G_END_DECLS
