-- 00007_usage: usage accounting (docs/adr/0042). The metering step turns
-- the timeline into usage_records (00001's table, which nothing wrote
-- until now), and needs three things the schema lacked:
--
-- - The class each step happened on. A workload's placed_class is only
--   its latest admission's, and a later attempt may be placed on another
--   class, so each event now records the placement the workload had
--   after it. NULL for rows written before this migration and for a
--   workload not placed yet; metering then falls back to the workload's
--   placed_class.
-- - One record per workload, class and hour, not per workload and hour:
--   a workload stopped and started again within an hour may run on two
--   classes in it. The key is what makes a re-run replace a record
--   rather than add a second one.
-- - Where the last pass got to in the timeline, so that a restarted
--   daemon goes on from there (re-metering from 0 writes the same
--   records: the cursor only saves work).

ALTER TABLE workload_events ADD COLUMN placed_class TEXT
    CHECK (placed_class IS NULL OR length(placed_class) > 0);

DROP INDEX usage_records_workload_id_hour_start;
CREATE UNIQUE INDEX usage_records_workload_id_gpu_class_hour_start
    ON usage_records (workload_id, gpu_class, hour_start);

CREATE TABLE metering_cursors (
    name TEXT NOT NULL PRIMARY KEY CHECK (length(name) > 0),
    last_seq INTEGER NOT NULL CHECK (last_seq >= 0),
    updated_at TEXT NOT NULL CHECK (length(updated_at) = 27)
) STRICT;
