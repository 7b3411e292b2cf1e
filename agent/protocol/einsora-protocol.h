/* The Sync protocol of ADR-0016: what an agent reports (EinsoraSyncReport)
 * and the complete desired state the hub answers with
 * (EinsoraDesiredState), with their JSON forms. Hosts may be hostile, so
 * every message is read strictly and within these bounds. */
#pragma once

#include "einsora-desired-state.h"
#include "einsora-desired-workload.h"
#include "einsora-inventory-gpu.h"
#include "einsora-inventory.h"
#include "einsora-status-code.h"
#include "einsora-sync-report.h"
#include "einsora-workload-mode.h"
#include "einsora-workload-status.h"

G_BEGIN_DECLS

#define EINSORA_PROTOCOL_MAX_STRING_BYTES 256
#define EINSORA_PROTOCOL_MAX_WORKLOADS 10000
#define EINSORA_PROTOCOL_MAX_GPUS 64
#define EINSORA_PROTOCOL_MAX_DRIVERS 32
#define EINSORA_PROTOCOL_MAX_CPUS 4096
/* 64 TiB, in MiB. */
#define EINSORA_PROTOCOL_MAX_MEMORY_MIB (G_GINT64_CONSTANT(64) * 1024 * 1024)

G_END_DECLS
