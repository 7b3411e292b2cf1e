#!/usr/bin/env bash
# The fuzzers for longer than CI runs them: sets up (once) a clang tree
# with libFuzzer and both sanitizers, builds the harnesses and runs each
# for SECONDS (default 10 minutes). Findings land in BUILD_DIR/fuzz-artifacts.
#   bash bench/fuzz-long.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
build=${2:-build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzz=enabled -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
meson compile -C "$build" fuzz
exec bash tests/fuzz/run.sh "$build" "$seconds"
