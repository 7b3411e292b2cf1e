#!/usr/bin/env bash
# Runs every libFuzzer harness of a -Dfuzz=enabled tree for SECONDS each,
# starting from a scratch copy of its seed corpus (the tree's is never
# changed). Prints each harness's executions; exits non-zero when any
# harness crashed, leaked or timed out, naming the input that did it.
#   bash tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
seconds=${2:-60}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/einsora-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# Crash inputs outlive the scratch corpus: they go where the run was asked.
artifacts=${EINSORA_FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
mkdir -p "$artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/../lsan.supp:print_suppressions=0}
export G_SLICE=always-malloc

status=0
found=0
for corpus in "$here"/corpus/*/; do
  name=$(basename "$corpus")
  program=$build/tests/fuzz/fuzz-$name
  if [ ! -x "$program" ]; then
    echo "fuzz $name: FAILED, $program is not built" >&2
    status=1
    continue
  fi
  found=$((found + 1))
  mkdir -p "$scratch/$name" "$artifacts/$name"
  cp -r "$corpus". "$scratch/$name/"
  log=$scratch/$name.log
  "$program" "$scratch/$name" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name/" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    echo "fuzz $name: ok, ${runs:-?} executions in ${seconds}s"
  else
    status=1
    echo "fuzz $name: FAILED (exit $rc) after ${runs:-?} executions"
    # The report, and the line naming the input that did it.
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz: property|.*runtime error)' "$log" | head -n 5
    grep -E 'Test unit written to' "$log" || tail -n 30 "$log"
    cp "$log" "$artifacts/$name.log"
    echo "fuzz $name: full log in $artifacts/$name.log"
  fi
done
if [ $found -eq 0 ]; then
  echo "fuzz: no harness in $build/tests/fuzz" >&2
  exit 1
fi
exit $status
