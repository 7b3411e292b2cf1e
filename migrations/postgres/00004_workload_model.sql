-- 00004_workload_model: as sqlite/00004. An endpoint serves one model from
-- the model store, recorded with its digest; other kinds have neither.
-- The checks name other columns, so they are the table's, not the column's.

ALTER TABLE workloads ADD COLUMN model TEXT;
ALTER TABLE workloads ADD COLUMN model_digest TEXT;
ALTER TABLE workloads ADD CONSTRAINT workloads_model_check
    CHECK (model IS NULL OR (kind = 'endpoint' AND length(model) BETWEEN 1 AND 128));
ALTER TABLE workloads ADD CONSTRAINT workloads_model_digest_check
    CHECK ((model IS NULL) = (model_digest IS NULL) AND
           (model_digest IS NULL OR length(model_digest) = 71));

CREATE INDEX workloads_model ON workloads (model) WHERE model IS NOT NULL;
