#!/usr/bin/env bash
# systemd-analyze verify on the daemon's units as built (their ExecStart
# pointed at the built binary, which verify requires to exist), and the
# Lab unit's exposure by systemd-analyze security kept at 4.5 or below
# (docs/adr/0048). Usage: check-systemd-units.sh DAEMON UNIT...
set -euo pipefail
daemon=$1
shift
if ! command -v systemd-analyze >/dev/null; then
  echo "no systemd-analyze here: skipped"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
for unit in "$@"; do
  name=$(basename "$unit")
  sed -E "s|^ExecStart=[^ ]*einsora-daemon|ExecStart=$daemon|" "$unit" >"$dir/$name"
  if ! out=$(systemd-analyze verify "$dir/$name" 2>&1) || [ -n "$out" ]; then
    echo "$name: systemd-analyze verify: $out" >&2
    status=1
  fi
done
lab="$dir/einsora-lab.service"
if [ -f "$lab" ]; then
  exposure=$(systemd-analyze security --offline=true "$lab" 2>/dev/null |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  echo "einsora-lab.service: exposure $exposure"
  if [ -z "$exposure" ] || ! awk -v e="$exposure" 'BEGIN { exit !(e <= 4.5) }'; then
    echo "einsora-lab.service: exposure ${exposure:-unknown} is above 4.5" >&2
    status=1
  fi
fi
exit $status
