/* The JSON form of workloads and their timeline rows: one writer for the
 * API, the export and the CLI's golden files. */
#pragma once

#include <json-glib/json-glib.h>

#include "einsora-workload-event.h"
#include "einsora-workload.h"

G_BEGIN_DECLS

/* The objects as text, appended to @out: how lists and the change feed
 * are written, one row at a time, with no tree of the whole list. @with_seq
 * adds the event's seq, as the change feed shows it. */
void einsora_workload_append_json(GString *out, const EinsoraWorkload *workload);
void einsora_workload_event_append_json(GString *out, const EinsoraWorkloadEvent *event,
                                        gboolean with_seq);

/* The same objects as trees, read back from that text. */
JsonNode *einsora_workload_to_json(const EinsoraWorkload *workload);
JsonNode *einsora_workload_event_to_json(const EinsoraWorkloadEvent *event);

G_END_DECLS
