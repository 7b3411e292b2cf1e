-- 00006_workload_idle_timeout: as sqlite/00006. Seconds a workload may sit
-- idle before the controller stops it; 0: never.

ALTER TABLE workloads ADD COLUMN idle_timeout_s BIGINT NOT NULL DEFAULT 0;
