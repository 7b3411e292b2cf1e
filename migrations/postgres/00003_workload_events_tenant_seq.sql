-- 00003_workload_events_tenant_seq: as sqlite/00003. The change feed reads
-- one tenant's events after a seq, in seq order.

CREATE INDEX workload_events_tenant_id_seq ON workload_events (tenant_id, seq);
