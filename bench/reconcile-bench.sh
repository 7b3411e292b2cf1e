#!/usr/bin/env bash
# reconcile_once() at Lab scale (10,000 pending workloads over 1,000
# machines, fake backend, real SQLite), against bare SQLite doing the same
# writes on the same file system, one transaction each and all in one;
# and a pass over 10,000 running workloads on 100 machines through the
# hub. BENCH_ROUNDS rounds (5). A few minutes: the one-transaction-each
# peer pays an fsync per workload.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build-bench ] || meson setup build-bench --buildtype=release >/dev/null
ninja -C build-bench bench/einsora-reconcile-bench >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
chmod 700 "$dir"
build-bench/bench/einsora-reconcile-bench "$dir"
