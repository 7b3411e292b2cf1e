#!/usr/bin/env bash
# Benchmark of the access proxy (issue 6); not a test, and CI does not run
# it.
#
# Einsora's access proxy, nginx and configurable-http-proxy (JupyterHub's
# proxy, from npm) side by side in one run, each forwarding to the same
# upstream process over the same Unix socket (every peer supports one):
# requests per second and p50/p99 latency with wrk at 1, 16 and 64
# connections for a 100-byte JSON answer (/small) and a 10 MiB binary one
# (/big), then WebSocket echo round trips per second over one connection.
# The upstream measured directly (loopback TCP, no proxy) is a reference.
# BENCH_PATHS="/small /small.bin /big" adds the same 100 bytes as
# application/octet-stream, which Einsora passes on unscrubbed. Then a
# 50 MiB download (GET /files/..., as Jupyter's files API serves one) and
# a 50 MiB upload (PUT /api/contents/..., JSON) with curl, one at a time,
# through Einsora's proxy and on the upstream's Unix socket directly (the
# same request, no proxy): BENCH_TRANSFERS each per round (0: none).
# BENCH_BIG_CONNECTIONS and BENCH_BIG_DURATION set /big's own connection
# counts and seconds per run (default: those of the other paths).
# Each case runs BENCH_ROUNDS rounds, every target once per round, the
# order rotating between rounds; the table gives medians and the median of
# the per-round ratios.
#
#   bash bench/access-bench.sh [BUILD_DIR]     # default: build
#
# BUILD_DIR is a meson build directory where bench/einsora-bench-upstream,
# bench/einsora-access-bench-proxy and bench/einsora-ws-bench are built
# (ninja -C BUILD_DIR); this script builds nothing. configurable-http-proxy
# comes from bench/chp/ (cd bench/chp && npm ci). Everything listens on
# 127.0.0.1 or a Unix socket in a fresh temporary directory that is
# removed at the end; every process is stopped on any exit. The table goes
# to standard output, progress to standard error. Docs: docs/bench.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

rounds=${BENCH_ROUNDS:-3}
duration=${BENCH_DURATION:-10}
ws_seconds=${BENCH_WS_SECONDS:-10}
transfers=${BENCH_TRANSFERS:-5}
read -r -a connections <<<"${BENCH_CONNECTIONS:-1 16 64}"
# /big may take its own: 64 connections at once need runs long enough for
# 64 answers of 10 MiB each to finish on a loaded machine.
read -r -a big_connections <<<"${BENCH_BIG_CONNECTIONS:-${connections[*]}}"
big_duration=${BENCH_BIG_DURATION:-$duration}
read -r -a paths <<<"${BENCH_PATHS:-/small /big}"
build=${1:-build}

say() { echo "access-bench: $*" >&2; }
die() {
  say "$*"
  exit 1
}

case "$build" in -h | --help)
  sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
esac
for setting in rounds duration big_duration ws_seconds; do
  [[ ${!setting} =~ ^[1-9][0-9]*$ ]] || die "BENCH_${setting^^} must be a positive integer"
done

missing=()
command -v curl >/dev/null || missing+=(curl)
command -v wrk >/dev/null || missing+=(wrk)
command -v node >/dev/null || missing+=(nodejs)
nginx=$(command -v nginx || true)
[ -n "$nginx" ] || [ ! -x /usr/sbin/nginx ] || nginx=/usr/sbin/nginx
[ -n "$nginx" ] || missing+=(nginx-light)
[ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]} (apt-get install -y ${missing[*]})"

[ -d "$build" ] || build=$root/$build
for program in einsora-bench-upstream einsora-access-bench-proxy einsora-ws-bench; do
  [ -x "$build/bench/$program" ] ||
    die "no $build/bench/$program: meson setup $build && ninja -C $build"
done
upstream_bin=$build/bench/einsora-bench-upstream
proxy_bin=$build/bench/einsora-access-bench-proxy
ws_bin=$build/bench/einsora-ws-bench
# The tree the build directory was set up from, as meson recorded it
# (read now: the tree may move on during the run).
source_dir=$(sed -n 's/.*"source": *"\([^"]*\)".*/\1/p' "$build/meson-info/meson-info.json" 2>/dev/null || true)
built=$(git -C "${source_dir:-$root}" describe --always --dirty 2>/dev/null || echo "an unknown commit")
chp_bin=$here/chp/node_modules/configurable-http-proxy/bin/configurable-http-proxy
[ -f "$chp_bin" ] || die "no configurable-http-proxy: (cd bench/chp && npm ci)"
chp_version=$(node -p "require('$here/chp/node_modules/configurable-http-proxy/package.json').version")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/einsora-access-bench.XXXXXX")
chmod 700 "$tmp"
pids=()

stop() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$? i
  trap - EXIT INT TERM
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop "${pids[i]}"
  done
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A port nothing on 127.0.0.1 answers on now.
taken_ports=" "
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    [[ $taken_ports == *" $port "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      taken_ports+="$port "
      echo "$port"
      return 0
    fi
  done
  die "found no free port on 127.0.0.1"
}

# wait_line FILE PATTERN PID: until FILE has a line matching PATTERN.
wait_line() {
  for _ in $(seq 100); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

# ---- the upstream: one process, a Unix socket and a loopback port --------
sock=$tmp/upstream.sock
"$upstream_bin" "$sock" >"$tmp/upstream.out" 2>"$tmp/upstream.log" &
pids+=($!)
wait_line "$tmp/upstream.out" '^port=[0-9]+$' "${pids[-1]}" ||
  die "the upstream did not start: $(cat "$tmp/upstream.log")"
upstream_port=$(sed -n 's/^port=//p' "$tmp/upstream.out")
direct=http://127.0.0.1:$upstream_port

# ---- Einsora's access proxy, in-process with a real service and store ----
"$proxy_bin" "$sock" >"$tmp/einsora.out" 2>"$tmp/einsora.log" &
pids+=($!)
einsora_pid=${pids[-1]}
wait_line "$tmp/einsora.out" '^port=' "$einsora_pid" ||
  die "Einsora's proxy did not start: $(tail -n 5 "$tmp/einsora.log")"
read -r einsora_port host cookie < <(sed 's/port=//; s/host=//; s/cookie=//' "$tmp/einsora.out")
einsora=http://127.0.0.1:$einsora_port

# ---- nginx, one worker, streaming like Einsora, to the same socket --------
ngx=$tmp/nginx
mkdir -p "$ngx"
nginx_port=$(free_port)
{
  [ "$(id -u)" -ne 0 ] || echo 'user root;'
  cat <<EOF
worker_processes 1;
daemon off;
pid $ngx/nginx.pid;
error_log $ngx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path $ngx/body;
  proxy_temp_path $ngx/proxy;
  fastcgi_temp_path $ngx/fastcgi;
  uwsgi_temp_path $ngx/uwsgi;
  scgi_temp_path $ngx/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 75s;
  map \$http_upgrade \$connection_upgrade {
    default upgrade;
    '' close;
  }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      # A new upstream connection per request ("Connection: close"), as
      # Einsora's proxy does: no upstream keepalive pool.
      proxy_pass http://unix:$sock;
      proxy_http_version 1.1;
      proxy_set_header Host localhost;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection \$connection_upgrade;
      proxy_set_header Authorization "token einsora-bench";
      # Streamed through one 64 KiB buffer, like Einsora's 64 KiB chunks:
      # nothing is held in memory or on disk beyond it.
      proxy_buffering off;
      proxy_buffer_size 64k;
      proxy_buffers 8 64k; # unused without buffering; nginx checks them
      proxy_busy_buffers_size 128k;
      proxy_read_timeout 3600s;
    }
  }
}
EOF
} >"$ngx/nginx.conf"
"$nginx" -q -t -p "$ngx/" -e "$ngx/error.log" -c "$ngx/nginx.conf" ||
  die "nginx refused $ngx/nginx.conf"
"$nginx" -p "$ngx/" -e "$ngx/error.log" -c "$ngx/nginx.conf" &
pids+=($!)
peer_nginx=http://127.0.0.1:$nginx_port

# ---- configurable-http-proxy, to the same socket (http+unix://) -----------
chp_port=$(free_port)
chp_api_port=$(free_port)
encoded_sock=$(node -p 'encodeURIComponent(process.argv[1])' "$sock")
CONFIGPROXY_AUTH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n') \
  node "$chp_bin" --ip 127.0.0.1 --port "$chp_port" --api-ip 127.0.0.1 \
  --api-port "$chp_api_port" --default-target "http+unix://$encoded_sock" \
  --custom-header "Authorization:token einsora-bench" --log-level warn \
  >"$tmp/chp.log" 2>&1 &
pids+=($!)
peer_chp=http://127.0.0.1:$chp_port

# ---- every target answers the same bytes ----------------------------------
common=(-H "Host: $host" -H "Cookie: $cookie")
curl -fsS --unix-socket "$sock" -o "$tmp/small.ref" http://localhost/small ||
  die "the upstream does not answer /small on $sock"
declare -A url=([einsora]=$einsora [nginx]=$peer_nginx [chp]=$peer_chp [direct]=$direct)
targets=(einsora nginx chp direct)
for who in "${targets[@]}"; do
  ok=
  # node takes seconds to start on a loaded machine.
  for _ in $(seq 300); do
    if curl -fsS -o "$tmp/small.$who" "${common[@]}" "${url[$who]}/small" 2>/dev/null; then
      ok=1
      break
    fi
    sleep 0.1
  done
  [ -n "$ok" ] || die "$who does not answer on ${url[$who]}"
  cmp -s "$tmp/small.ref" "$tmp/small.$who" || die "$who answers /small with other bytes"
  if ! curl -fsS -o "$tmp/small.bin.$who" "${common[@]}" "${url[$who]}/small.bin" ||
    ! cmp -s "$tmp/small.ref" "$tmp/small.bin.$who"; then
    die "$who answers /small.bin with other bytes"
  fi
  size=$(curl -fsS -o /dev/null -w '%{size_download}' "${common[@]}" "${url[$who]}/big")
  [ "$size" = 10485760 ] || die "$who answers /big with $size bytes"
done

# ---- 50 MiB each way: through Einsora's proxy, and on the socket directly --
file_path=/files/big50.bin
upload_path=/api/contents/upload.json
file_size=52428800
# A contents API upload: the file's bytes in a JSON body, 50 MiB in all.
{
  printf '{"type": "file", "format": "base64", "content": "'
  head -c $((file_size - 50)) /dev/zero | tr '\0' 'A'
  printf '"}'
} >"$tmp/upload.json"
upload_size=$(stat -c %s "$tmp/upload.json")
# transfer WHO down|up: one transfer; prints its seconds.
transfer() {
  local who=$1 way=$2 args=(-fsS -o "$tmp/transfer.out" -w '%{time_total}')
  if [ "$who" = einsora ]; then
    args+=("${common[@]}")
    base=$einsora
  else
    args+=(--unix-socket "$sock")
    base=http://localhost
  fi
  if [ "$way" = up ]; then
    # No Expect: 100-continue, as browsers send none.
    args+=(-X PUT -H 'Content-Type: application/json' -H 'Expect:'
      --data-binary "@$tmp/upload.json" "$base$upload_path")
  else
    args+=("$base$file_path")
  fi
  curl "${args[@]}" || die "the $way transfer failed against $who"
}
if [ "$transfers" -gt 0 ]; then
  for who in einsora direct; do
    transfer "$who" down >/dev/null
    size=$(stat -c %s "$tmp/transfer.out")
    [ "$size" = "$file_size" ] || die "$who answers $file_path with $size bytes"
    transfer "$who" up >/dev/null
    grep -q "\"size\": $upload_size}" "$tmp/transfer.out" ||
      die "$who's upload arrived as $(cat "$tmp/transfer.out"), not $upload_size bytes"
  done
fi

# ---- measuring ------------------------------------------------------------
# One wrk run; prints "req/s p50_ms p99_ms requests non2xx socket_errors".
run_wrk() {
  local target=$1 conns=$2 secs=$3 threads=2 out
  [ "$conns" -gt 1 ] || threads=1
  if ! out=$(timeout $((secs + 60)) wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 30s \
    --latency "${common[@]}" "$target" 2>&1); then
    echo "$out" >&2
    die "wrk failed against $target"
  fi
  awk '
    function ms(v) {
      if (v ~ /us$/) return v / 1000
      if (v ~ /ms$/) return v + 0
      if (v ~ /s$/) return v * 1000
      if (v ~ /m$/) return v * 60000
      if (v ~ /h$/) return v * 3600000
      return -1
    }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    $1 == "Requests/sec:" { rps = $2 }
    / requests in / { n = $1 }
    /Non-2xx or 3xx responses:/ { bad = $NF }
    /Socket errors:/ {
      gsub(/,/, "")
      sock = $4 + $6 + $8 + $10
    }
    END {
      if (rps == "" || p50 == "" || p99 == "" || n == 0) exit 1
      printf "%s %.4f %.4f %d %d %d\n", rps, p50, p99, n, bad, sock
    }' <<<"$out" || {
    echo "$out" >&2
    die "could not read wrk's output for $target"
  }
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

spread() {
  printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 }
    END { if (lo < 10) printf "%.3f-%.3f", lo, hi; else printf "%.0f-%.0f", lo, hi }'
}

fmt_ms() {
  awk -v v="$1" 'BEGIN {
    if (v < 1) printf "%.3f", v; else if (v < 100) printf "%.2f", v; else printf "%.0f", v }'
}

fmt_rate() {
  awk -v v="$1" 'BEGIN { if (v < 100) printf "%.1f", v; else printf "%.0f", v }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a / b }'; }

# The order of the targets in round R: rotated by R.
order() {
  local r=$1 n=${#targets[@]} i
  for ((i = 0; i < n; i++)); do
    echo "${targets[(i + r) % n]}"
  done
}

alive() {
  local pid
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || die "a server died (pid $pid); logs in $tmp"
  done
}

rows=()
spreads=()
notes=()

bench_case() {
  local path=$1 conns=$2 r who line rps p50 p99 n bad sock secs=$duration
  [ "$path" != /big ] || secs=$big_duration
  declare -A rpss=() p50s=() p99s=() bads=() socks=()
  local to_nginx=() to_chp=()
  for r in $(seq "$rounds"); do
    for who in $(order "$r"); do
      line=$(run_wrk "${url[$who]}$path" "$conns" "$secs")
      read -r rps p50 p99 n bad sock <<<"$line"
      rpss[$who]+="$rps " p50s[$who]+="$p50 " p99s[$who]+="$p99 "
      bads[$who]=$((${bads[$who]:-0} + bad)) socks[$who]=$((${socks[$who]:-0} + sock))
      alive
    done
    # shellcheck disable=SC2206
    local e=(${rpss[einsora]}) g=(${rpss[nginx]}) c=(${rpss[chp]}) d=(${rpss[direct]})
    to_nginx+=("$(ratio "${e[-1]}" "${g[-1]}")")
    to_chp+=("$(ratio "${e[-1]}" "${c[-1]}")")
    say "$path c=$conns round $r/$rounds: einsora ${e[-1]}, nginx ${g[-1]}," \
      "chp ${c[-1]}, direct ${d[-1]} req/s"
  done
  for who in "${targets[@]}"; do
    [ "${bads[$who]}" -eq 0 ] || die "$path c=$conns: $who answered ${bads[$who]} requests with non-2xx"
    [ "${socks[$who]}" -eq 0 ] || notes+=("$path c=$conns: ${socks[$who]} socket errors against $who")
  done
  local cells=()
  for who in einsora nginx chp direct; do
    # shellcheck disable=SC2086
    cells+=("$(fmt_rate "$(median ${rpss[$who]})")" "$(fmt_ms "$(median ${p50s[$who]})")"
      "$(fmt_ms "$(median ${p99s[$who]})")")
  done
  rows+=("$(printf '| GET %s | %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %.2f | %.2f |' \
    "$path" "$conns" "${cells[@]}" "$(median "${to_nginx[@]}")" "$(median "${to_chp[@]}")")")
  # shellcheck disable=SC2086
  spreads+=("$(printf '%s c=%s: einsora %s, nginx %s, chp %s, direct %s req/s; einsora/nginx %s, einsora/chp %s' \
    "$path" "$conns" "$(spread ${rpss[einsora]})" "$(spread ${rpss[nginx]})" \
    "$(spread ${rpss[chp]})" "$(spread ${rpss[direct]})" "$(spread "${to_nginx[@]}")" \
    "$(spread "${to_chp[@]}")")")
}

ws_run() {
  local who=$1 secs=$2 out
  local args=(--seconds "$secs" --cookie "$cookie")
  if [ "$who" = einsora ]; then
    args+=(--connect "127.0.0.1:$einsora_port" "ws://$host/ws")
  else
    args+=("${url[$who]/http:/ws:}/ws")
  fi
  out=$(timeout $((secs + 30)) "$ws_bin" "${args[@]}") || die "the WebSocket bench failed against $who"
  # "per_second p50_us p99_us"
  sed -E 's/.*per_second=([0-9.]+) p50_us=([0-9]+) p99_us=([0-9]+).*/\1 \2 \3/' <<<"$out"
}

ws_case() {
  local r who line rate p50 p99
  declare -A rates=() p50s=() p99s=()
  local to_nginx=() to_chp=()
  for r in $(seq "$rounds"); do
    for who in $(order "$r"); do
      line=$(ws_run "$who" "$ws_seconds")
      read -r rate p50 p99 <<<"$line"
      rates[$who]+="$rate " p50s[$who]+="$p50 " p99s[$who]+="$p99 "
      alive
    done
    # shellcheck disable=SC2206
    local e=(${rates[einsora]}) g=(${rates[nginx]}) c=(${rates[chp]}) d=(${rates[direct]})
    to_nginx+=("$(ratio "${e[-1]}" "${g[-1]}")")
    to_chp+=("$(ratio "${e[-1]}" "${c[-1]}")")
    say "WebSocket round $r/$rounds: einsora ${e[-1]}, nginx ${g[-1]}, chp ${c[-1]}," \
      "direct ${d[-1]} round trips/s"
  done
  local cells=()
  for who in einsora nginx chp direct; do
    # shellcheck disable=SC2086
    cells+=("$(fmt_rate "$(median ${rates[$who]})")"
      "$(fmt_ms "$(awk -v v="$(median ${p50s[$who]})" 'BEGIN { print v / 1000 }')")"
      "$(fmt_ms "$(awk -v v="$(median ${p99s[$who]})" 'BEGIN { print v / 1000 }')")")
  done
  rows+=("$(printf '| WebSocket echo, 32 B | 1 | %s / %s / %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %.2f | %.2f |' \
    "${cells[@]}" "$(median "${to_nginx[@]}")" "$(median "${to_chp[@]}")")")
  # shellcheck disable=SC2086
  spreads+=("$(printf 'WebSocket: einsora %s, nginx %s, chp %s, direct %s round trips/s; einsora/nginx %s, einsora/chp %s' \
    "$(spread ${rates[einsora]})" "$(spread ${rates[nginx]})" "$(spread ${rates[chp]})" \
    "$(spread ${rates[direct]})" "$(spread "${to_nginx[@]}")" "$(spread "${to_chp[@]}")")")
}

# 50 MiB down and up, one transfer at a time: MiB/s of each target.
transfer_rows=()
transfer_case() {
  local way=$1 r who i seconds rate
  declare -A rates=() round=()
  local to_direct=()
  for r in $(seq "$rounds"); do
    round=()
    for i in $(seq "$transfers"); do
      for who in $( ((i % 2)) && echo einsora direct || echo direct einsora); do
        seconds=$(transfer "$who" "$way")
        rate=$(awk -v s="$seconds" -v b="$file_size" 'BEGIN { printf "%.2f", b / 1048576 / s }')
        round[$who]+="$rate "
      done
    done
    alive
    for who in einsora direct; do
      # shellcheck disable=SC2086
      rates[$who]+="$(median ${round[$who]}) "
    done
    # shellcheck disable=SC2206
    local e=(${rates[einsora]}) d=(${rates[direct]})
    to_direct+=("$(ratio "${e[-1]}" "${d[-1]}")")
    say "50 MiB $way round $r/$rounds: einsora ${e[-1]}, direct ${d[-1]} MiB/s"
  done
  # shellcheck disable=SC2086
  transfer_rows+=("$(printf '| %s | %s | %s | %.2f | %s |' \
    "$([ "$way" = up ] && echo "PUT $upload_path (50 MiB JSON)" || echo "GET $file_path (50 MiB)")" \
    "$(median ${rates[einsora]})" "$(median ${rates[direct]})" "$(median "${to_direct[@]}")" \
    "$(spread "${to_direct[@]}")")")
}

total=$((${#paths[@]} * ${#connections[@]} * rounds * ${#targets[@]} * duration + rounds * ${#targets[@]} * ws_seconds))
say "measuring: ${#paths[@]} paths x ${#connections[@]} connection counts x $rounds rounds" \
  "x ${#targets[@]} targets x ${duration}s, then WebSocket $rounds x ${#targets[@]} x ${ws_seconds}s" \
  "(about $((total / 60))m$((total % 60))s)"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# Warm-up, not counted.
for who in "${targets[@]}"; do
  run_wrk "${url[$who]}/small" 16 2 >/dev/null
  ws_run "$who" 1 >/dev/null
done
for path in "${paths[@]}"; do
  if [ "$path" = /big ]; then
    for conns in "${big_connections[@]}"; do
      bench_case "$path" "$conns"
    done
  else
    for conns in "${connections[@]}"; do
      bench_case "$path" "$conns"
    done
  fi
done
ws_case
if [ "$transfers" -gt 0 ]; then
  transfer_case down
  transfer_case up
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the report ---------------------------------------------------------
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "Einsora's access proxy (built from $built in $build) vs nginx $("$nginx" -v 2>&1 | sed 's/.*nginx\///')" \
  "(1 worker) and configurable-http-proxy $chp_version (node $(node --version)), wrk" \
  "$(wrk -v 2>&1 | awk 'NR == 1 { print $2 }')"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs${cpu:+ ($cpu)}, $(uname -sr); load average" \
  "$load_before before, $load_after after; $rounds rounds x ${duration}s (WebSocket ${ws_seconds}s)" \
  "per target and case; medians"
echo "All three proxies forward to one upstream process (libsoup, one main loop) over its Unix" \
  "socket; \"direct\" is wrk on that upstream's loopback port, no proxy. /small: 100-byte" \
  "application/json (/small.bin: the same bytes as application/octet-stream); /big: 10 MiB" \
  "application/octet-stream."
echo
echo "| case | connections | einsora req/s / p50 ms / p99 ms | nginx | configurable-http-proxy | upstream direct | einsora/nginx | einsora/chp |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo
echo "WebSocket: round trips per second / p50 ms / p99 ms of one message at a time."
echo "Ratios: median of the per-round ratios of req/s (round trips/s)."
echo
echo "Spread over the rounds (min-max):"
echo
printf -- '- %s\n' "${spreads[@]}"
if [ ${#transfer_rows[@]} -gt 0 ]; then
  echo
  echo "50 MiB one at a time with curl ($transfers per target per round, medians), MiB/s:"
  echo
  echo "| transfer | einsora | upstream's socket directly | einsora/direct | spread of the ratio |"
  echo "| --- | ---: | ---: | ---: | --- |"
  printf '%s\n' "${transfer_rows[@]}"
fi
for note in "${notes[@]}"; do
  echo
  echo "Note: $note"
done
