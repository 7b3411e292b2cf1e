-- 00007_usage: as sqlite/00007 (docs/adr/0042). Each event records the
-- class it happened on; one usage record per workload, class and hour; and
-- the metering step's cursor into the timeline.

ALTER TABLE workload_events ADD COLUMN placed_class TEXT
    CHECK (placed_class IS NULL OR length(placed_class) > 0);

DROP INDEX usage_records_workload_id_hour_start;
CREATE UNIQUE INDEX usage_records_workload_id_gpu_class_hour_start
    ON usage_records (workload_id, gpu_class, hour_start);

CREATE TABLE metering_cursors (
    name TEXT NOT NULL PRIMARY KEY CHECK (length(name) > 0),
    last_seq BIGINT NOT NULL CHECK (last_seq >= 0),
    updated_at TEXT NOT NULL CHECK (length(updated_at) = 27)
);
