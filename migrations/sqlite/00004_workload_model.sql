-- 00004_workload_model: an endpoint serves one model from the model store,
-- named at launch; its digest is recorded with it, so the agent loads the
-- very file that was checked, and a model an endpoint uses can't be
-- removed. Other kinds have neither.

ALTER TABLE workloads ADD COLUMN model TEXT
    CHECK (model IS NULL OR (kind = 'endpoint' AND length(model) BETWEEN 1 AND 128));
ALTER TABLE workloads ADD COLUMN model_digest TEXT
    CHECK ((model IS NULL) = (model_digest IS NULL) AND
           (model_digest IS NULL OR length(model_digest) = 71));

CREATE INDEX workloads_model ON workloads (model) WHERE model IS NOT NULL;
