-- 00006_workload_idle_timeout: how long a workload may sit idle before the
-- controller stops it (docs/adr/0044), in seconds; 0: never (rows from
-- before, and every workload not given one).

ALTER TABLE workloads ADD COLUMN idle_timeout_s INTEGER NOT NULL DEFAULT 0;
