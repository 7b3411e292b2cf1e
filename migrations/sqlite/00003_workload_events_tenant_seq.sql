-- 00003_workload_events_tenant_seq: the change feed (GET /v1/events) reads
-- one tenant's events after a seq, in seq order; this index serves both
-- the filter and the order, so a feed's read never scans other tenants'
-- timelines.

CREATE INDEX workload_events_tenant_id_seq ON workload_events (tenant_id, seq);
