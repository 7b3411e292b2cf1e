/* The JSON form of workloads and their timeline rows: one writer for the
 * API, the export and the CLI's golden files. */
#pragma once

#include <json-glib/json-glib.h>

#include "einsora-workload-event.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

JsonNode *einsora_workload_to_json(const EinsoraWorkload *workload);
JsonNode *einsora_workload_event_to_json(const EinsoraWorkloadEvent *event);

G_END_DECLS
