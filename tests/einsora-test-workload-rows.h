/* Many workloads at once, written straight into a stopped daemon's
 * store (SQLite or Postgres): the rows the API writes for a create, without thousands
 * of POSTs where a test needs only a long list. */
#pragma once

#include "einsora-test-daemon.h"

G_BEGIN_DECLS

/* @count stopped sim workloads of @tenant_id named "<prefix>-00000" on,
 * created a microsecond apart from 2026-01-01T00:00:00Z, IDs in order.
 * @prefix (at most 8 characters) also tells their IDs apart from other
 * calls'. */
void einsora_test_insert_workloads(EinsoraTestDaemon *daemon, const char *tenant_id, guint count,
                                   const char *prefix);

/* One notebook of @tenant_id with the timeline @steps (NULL-terminated,
 * each "STATE TIME": the creation row's state first, times as the store
 * writes them), placed on @gpu_class from its admission on and in its
 * last step's state; so the metering step has a history to count. In
 * the store of @data_dir, or @database_url's (NULL: SQLite). */
void einsora_test_insert_history(const char *data_dir, const char *database_url,
                                 const char *tenant_id, const char *workload_id, const char *name,
                                 const char *gpu_class, const char *const *steps);

G_END_DECLS
