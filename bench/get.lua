-- wrk script for GET /v1/workloads: the owner's bearer token comes from
-- EINSORA_BENCH_TOKEN (set by api-bench.sh, never printed). The nginx peer
-- gets the same request bytes and ignores the header.
local token = os.getenv("EINSORA_BENCH_TOKEN")
if token == nil or token == "" then
  error("EINSORA_BENCH_TOKEN is not set")
end

wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. token
wrk.headers["Accept"] = "application/json"
