-- 00005_workload_gpu_mask: which of its machine's GPUs a workload was
-- placed on, a bit per GPU by its index in the machine's inventory (NVML's
-- order, which the container runtimes use too), so each runs on exactly
-- the devices placement chose and two never share one. 0: none chosen
-- (CPU classes, cluster backends, rows placed before this migration).

ALTER TABLE workloads ADD COLUMN gpu_mask INTEGER NOT NULL DEFAULT 0;
