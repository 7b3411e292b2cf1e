#!/usr/bin/env bash
# Keep-alive on the HTTP edge (docs/adr/0025); not a test, and CI does not
# run it. The daemon's RSS and descriptors before and after at least
# BENCH_REQUESTS (100,000) kept-alive requests to GET /healthz from wrk
# over 16 connections, after a warm-up of 10,000; then the same with 2,000
# short connections a client closes after one kept-alive request each
# (the shape that leaked in libsoup's own keep-alive, ADR 0023).
#
#   bash bench/keepalive-bench.sh [DAEMON]
#
# DAEMON (or EINSORA_DAEMON) is an einsora-daemon binary (default
# build/daemon/einsora-daemon). Everything listens on 127.0.0.1 in a fresh
# temporary directory, removed at the end with the daemon stopped.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
daemon=${1:-${EINSORA_DAEMON:-$root/build/daemon/einsora-daemon}}
requests=${BENCH_REQUESTS:-100000}

say() { echo "keepalive-bench: $*" >&2; }
die() {
  say "$*"
  exit 1
}
command -v wrk >/dev/null || die "missing: wrk (apt-get install -y wrk)"
command -v curl >/dev/null || die "missing: curl"
[ -x "$daemon" ] || die "no daemon at $daemon"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/einsora-keepalive-bench.XXXXXX")
chmod 700 "$tmp"
daemon_pid=
cleanup() {
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  [ -z "$daemon_pid" ] || wait "$daemon_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$((20000 + RANDOM % 40000))
access=$((port + 1))
mkdir -m 700 "$tmp/data"
EINSORA_DRIVERS=sim "$daemon" --data-dir "$tmp/data" --listen "127.0.0.1:$port" \
  --access-listen "127.0.0.1:$access" --controller-interval 60m >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break
  sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" || die "the daemon did not start"

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$daemon_pid/status"; }
fds() { find "/proc/$daemon_pid/fd" -mindepth 1 | wc -l; }
# wrk runs for a time: enough seconds for @1 requests at the rate seen.
run() {
  local want=$1 secs out done_requests
  secs=$2
  out=$(wrk -t2 -c16 -d"${secs}s" "http://127.0.0.1:$port/healthz")
  done_requests=$(awk '/requests in/ { print $1 }' <<<"$out")
  echo "$done_requests"
  [ "$done_requests" -ge "$want" ] || say "only $done_requests of $want requests in ${secs}s"
}

say "warm-up"
warm=$(run 10000 2)
rss_warm=$(rss)
fds_warm=$(fds)
say "measuring"
rate_probe=$(run 1 2)
secs=$(((requests * 2 + rate_probe - 1) / rate_probe + 1))
total=$(run "$requests" "$secs")
rss_after=$(rss)
fds_after=$(fds)
say "2,000 clients closing kept-alive connections"
for _ in $(seq 2000); do
  curl -fsS -o /dev/null -H 'Connection: keep-alive' "http://127.0.0.1:$port/healthz"
done
sleep 1
rss_closed=$(rss)
fds_closed=$(fds)

echo "| phase | requests | RSS KiB | descriptors |"
echo "| --- | ---: | ---: | ---: |"
echo "| after a warm-up | $warm (+$rate_probe) | $rss_warm | $fds_warm |"
echo "| after the kept-alive run (16 connections) | $total | $rss_after | $fds_after |"
echo "| after 2,000 clients closed kept-alive connections | 2000 | $rss_closed | $fds_closed |"
