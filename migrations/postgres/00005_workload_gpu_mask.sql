-- 00005_workload_gpu_mask: as sqlite/00005. Which of its machine's GPUs a
-- workload was placed on, a bit per GPU (64 bits); 0: none chosen.

ALTER TABLE workloads ADD COLUMN gpu_mask BIGINT NOT NULL DEFAULT 0;
