-- 00009_workload_fallback: as sqlite/00009 (docs/adr/0052). Classes a
-- workload may run on instead of its own, and how long it waits first.

ALTER TABLE workloads ADD COLUMN fallback TEXT CHECK (fallback IS NULL OR length(fallback) > 0);
ALTER TABLE workloads ADD COLUMN fallback_after_s BIGINT NOT NULL DEFAULT 0
    CHECK (fallback_after_s >= 0);
