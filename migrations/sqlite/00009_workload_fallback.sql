-- 00009_workload_fallback: classes a workload may run on instead of the
-- one it asked for (docs/adr/0052), in order, comma-separated (NULL:
-- none), and how long it waits for its own class first, in seconds.
-- placed_class (00001) already records what it ran on.

ALTER TABLE workloads ADD COLUMN fallback TEXT CHECK (fallback IS NULL OR length(fallback) > 0);
ALTER TABLE workloads ADD COLUMN fallback_after_s INTEGER NOT NULL DEFAULT 0
    CHECK (fallback_after_s >= 0);
