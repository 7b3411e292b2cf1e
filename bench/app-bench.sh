#!/usr/bin/env bash
# The desktop app's launch time and memory, next to a peer measured in the
# same run: bench/einsora-app-peer, a bare libadwaita window with a list of
# as many rows, and nothing else (no daemon, no client, no WebKit).
#
#   meson setup /tmp/bapp -Dbuildtype=release -Dapp=enabled && ninja -C /tmp/bapp
#   bash bench/app-bench.sh /tmp/bapp            # default: build/
#   bash bench/app-bench.sh /tmp/bapp /tmp/bapp-before
#
# With a second build (another commit's, e.g. main's before a change), its
# einsora-app is measured in the same rounds, against the same daemon and
# peer, and gets a column of its own.
#
# It runs under its own Xvfb and session bus (tests/run-under-xvfb.sh), with
# a real einsora-daemon (sim driver) holding BENCH_WORKLOADS workloads
# (default 100). Each round launches einsora-app and the peer once each, the
# order alternating, and takes from each:
#   first frame: from the exec to the window's first painted frame;
#   list frame:  to the first frame painted with the list of workloads in
#                it (for einsora-app: after /readyz, the event feed and the
#                list were read from the daemon; for the peer, the first);
#   RSS:         VmRSS of the process 1 s after the list frame;
#   spinner:     1 when einsora-app's connecting spinner was shown (the
#                list took over a second), which costs memory (librsvg).
# Medians over BENCH_ROUNDS rounds (default 7) go to standard output as a
# markdown table; progress to standard error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [ -z "${EINSORA_BENCH_UNDER_X:-}" ]; then
  # (the a11y registry that the session bus starts writes to stdout: keep
  # it out of the table)
  EINSORA_BENCH_UNDER_X=1 exec bash "$root/tests/run-under-xvfb.sh" bash "$0" "$@" \
    > >(grep -v '^SpiRegistry' || true)
fi
die() {
  echo "app-bench: $*" >&2
  exit 1
}
build=${1:-$root/build}
[ -d "$build" ] || build=$root/$build
baseline=${2:-}
if [ -n "$baseline" ]; then
  [ -d "$baseline" ] || die "no baseline build $baseline"
  baseline_app=$baseline/app/desktop/einsora-app
  [ -x "$baseline_app" ] || die "no $baseline_app"
fi
rounds=${BENCH_ROUNDS:-7}
workloads=${BENCH_WORKLOADS:-100}
app=$build/app/desktop/einsora-app
peer=$build/bench/einsora-app-peer
daemon=$build/daemon/einsora-daemon
for program in "$app" "$peer" "$daemon"; do
  [ -x "$program" ] || die "no $program: meson setup $build -Dapp=enabled && ninja -C $build"
done
command -v curl >/dev/null || die "missing: curl"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/einsora-app-bench.XXXXXX")
pids=()
cleanup() {
  local status=$? pid
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=$((20000 + RANDOM % 40000))
export EINSORA_DATA_DIR=$tmp/data EINSORA_AGENT_STATE_DIR=$tmp/data
export EINSORA_AGENT_RUN_DIR=$tmp/run EINSORA_DRIVERS=sim
export EINSORA_API_ADDR=127.0.0.1:$port EINSORA_ACCESS_ADDR=127.0.0.1:0
export EINSORA_SERVER=http://127.0.0.1:$port EINSORA_NO_SYSTEMD=1
export XDG_STATE_HOME=$tmp/state GSETTINGS_SCHEMA_DIR=$build/data
"$daemon" >"$tmp/daemon.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  curl -fsS "$EINSORA_SERVER/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$EINSORA_SERVER/readyz" >/dev/null || die "the daemon didn't start: $(tail -5 "$tmp/daemon.log")"
token_header="Authorization: Bearer $(cat "$tmp/data/token")"
echo "app-bench: creating $workloads workloads" >&2
for i in $(seq "$workloads"); do
  curl -fsS -o /dev/null -H "$token_header" -H 'Content-Type: application/json' \
    -d "{\"kind\": \"notebook\", \"name\": \"nb-$i\", \"gpu_class\": \"cpu-1c-2g\", \"image\": \"jupyter-notebook\"}" \
    "$EINSORA_SERVER/v1/workloads" || die "creating workload $i failed"
done

# measure PROGRAM ARGS...: prints "first_ms list_ms rss_kib rows".
measure() {
  local out=$tmp/out.$RANDOM start pid line first list rows rss
  start=$(date +%s%6N)
  EINSORA_APP_TIMING=1 "$@" >"$out" 2>"$out.err" &
  pid=$!
  for _ in $(seq 600); do
    grep -q 'list-frame' "$out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  line=$(grep 'list-frame' "$out" || true)
  [ -n "$line" ] || {
    kill "$pid" 2>/dev/null || true
    die "$1 painted no list in 30 s: $(tail -5 "$out.err")"
  }
  first=$(awk '/first-frame/ { print $4 }' "$out")
  list=$(awk '{ print $4 }' <<<"$line")
  rows=$(awk '{ print $6 }' <<<"$line")
  sleep 1
  rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
  # einsora-app shows its spinner (and loads librsvg for it) only when
  # the list took over a second to come: a loaded machine's rounds.
  spinner=0
  grep -q 'timing: spinner' "$out" && spinner=1
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$(((first - start) / 1000)) $(((list - start) / 1000)) $rss $rows $spinner"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$tmp/app.txt"
: >"$tmp/peer.txt"
: >"$tmp/baseline.txt"
for round in $(seq "$rounds"); do
  if [ -n "$baseline" ]; then
    case $((round % 3)) in
    1) order="app baseline peer" ;;
    2) order="peer app baseline" ;;
    0) order="baseline peer app" ;;
    esac
  elif ((round % 2)); then order="app peer"; else order="peer app"; fi
  for who in $order; do
    case $who in
    app) result=$(measure "$app") ;;
    baseline) result=$(measure "$baseline_app") ;;
    peer) result=$(measure "$peer" "$workloads") ;;
    esac
    echo "$result" >>"$tmp/$who.txt"
    echo "app-bench: round $round/$rounds $who: $result (first ms, list ms, RSS KiB, rows, spinner)" >&2
  done
done
rows=$(awk 'NR == 1 { print $4 }' "$tmp/app.txt")
[ "$rows" = "$workloads" ] || die "einsora-app listed $rows workloads, not $workloads"
if [ -n "$baseline" ]; then
  rows=$(awk 'NR == 1 { print $4 }' "$tmp/baseline.txt")
  [ "$rows" = "$workloads" ] || die "the baseline einsora-app listed $rows workloads, not $workloads"
fi

col() { awk -v c="$2" '{ print $c }' "$tmp/$1.txt" | median; }
af=$(col app 1) al=$(col app 2) ar=$(col app 3)
pf=$(col peer 1) pl=$(col peer 2) pr=$(col peer 3)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
spun() { awk '$5 == 1' "$tmp/$1.txt" | wc -l; }
echo "einsora-app (built from $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')) vs a bare libadwaita window listing as many rows; $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, Xvfb (software rendering); $workloads workloads; medians of $rounds rounds"
echo
if [ -z "$baseline" ]; then
  echo "| | einsora-app | peer | ratio |"
  echo "| --- | ---: | ---: | ---: |"
  echo "| launch to first frame (ms) | $af | $pf | $(ratio "$af" "$pf") |"
  echo "| launch to first frame with the list (ms) | $al | $pl | $(ratio "$al" "$pl") |"
  echo "| RSS with the list shown (MiB) | $(mib "$ar") | $(mib "$pr") | $(ratio "$ar" "$pr") |"
  echo
  echo "einsora-app showed its connecting spinner in $(spun app) of $rounds rounds."
  exit 0
fi
bf=$(col baseline 1) bl=$(col baseline 2) br=$(col baseline 3)
echo "baseline: $baseline_app, in the same rounds"
echo
echo "| | baseline | einsora-app | peer | baseline / peer | einsora-app / peer |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
echo "| launch to first frame (ms) | $bf | $af | $pf | $(ratio "$bf" "$pf") | $(ratio "$af" "$pf") |"
echo "| launch to first frame with the list (ms) | $bl | $al | $pl | $(ratio "$bl" "$pl") | $(ratio "$al" "$pl") |"
echo "| RSS with the list shown (MiB) | $(mib "$br") | $(mib "$ar") | $(mib "$pr") | $(ratio "$br" "$pr") | $(ratio "$ar" "$pr") |"
echo
echo "einsora-app showed its connecting spinner in $(spun app) of $rounds rounds (the baseline: $(spun baseline); one that predates the delayed spinner never prints it)."
