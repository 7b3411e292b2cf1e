#!/usr/bin/env bash
# The SQLite store against the PostgreSQL store in the same run: creates
# per second (2,000, one transaction each), reconcile_once() admitting
# 10,000 pending workloads over 1,000 machines (fake backend), and an idle
# pass at that size. PostgreSQL 15 is a private server on a Unix socket
# with fsync on (SQLite: synchronous=FULL). BENCH_ROUNDS rounds (3),
# alternating which store goes first; medians. Needs postgresql-15.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build-bench ] || meson setup build-bench --buildtype=release >/dev/null
ninja -C build-bench bench/einsora-store-bench >/dev/null
build-bench/bench/einsora-store-bench
