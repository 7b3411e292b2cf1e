-- wrk script for POST /v1/workloads: every request creates one notebook
-- (no Idempotency-Key, so none is answered from a stored record). The
-- owner's bearer token comes from EINSORA_BENCH_TOKEN (set by
-- api-bench.sh, never printed). The nginx peer gets the same request bytes.
local token = os.getenv("EINSORA_BENCH_TOKEN")
if token == nil or token == "" then
  error("EINSORA_BENCH_TOKEN is not set")
end

wrk.method = "POST"
wrk.body = '{"kind":"notebook","gpu_class":"cpu-2c-4g","image":"jupyter-notebook"}'
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
