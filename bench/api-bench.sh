#!/usr/bin/env bash
# Benchmark of the /v1 API; not a test, and CI does not run it.
#
# Measures requests per second and p50/p99 latency of GET /v1/workloads
# (with BENCH_WORKLOADS workloads, 1,000 by default, listed whole: one
# page of ?limit=1000 from a daemon that pages its lists) and of
# POST /v1/workloads, at 1 and 16 concurrent connections, with wrk. Then,
# issue 15's rows: a page of 100 (?limit=100) at 16 connections, where
# the daemon pages; and /healthz at 1 connection while 16 connections
# list the whole 1,000, against /healthz on an idle daemon, to show how
# long a request waits behind lists.
# Each case runs BENCH_ROUNDS rounds of BENCH_DURATION seconds against the
# daemon and, back to back in the same round, against a peer: nginx with
# one worker, serving the very bytes the daemon returned for the GET and
# answering the POST with `return 201` and the bytes of a real create
# response. The table gives medians over the rounds and the median of the
# per-round ratios (einsora req/s / nginx req/s).
#
#   bash bench/api-bench.sh [DAEMON]
#
# DAEMON (or EINSORA_DAEMON) is an einsora-daemon binary to measure as it
# is; without one, build-bench/ is set up (release) and built. Everything
# listens on 127.0.0.1 only, in a fresh temporary directory that is removed
# at the end; the daemon and nginx are stopped on any exit. The table goes
# to standard output, progress to standard error. Docs: docs/bench.md.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

rounds=${BENCH_ROUNDS:-5}
duration=${BENCH_DURATION:-7}
workloads=${BENCH_WORKLOADS:-1000}
connections=(1 16)
daemon=${1:-${EINSORA_DAEMON:-}}

say() { echo "api-bench: $*" >&2; }
die() {
  say "$*"
  exit 1
}

case "$daemon" in -h | --help)
  sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
esac
for setting in rounds duration workloads; do
  [[ ${!setting} =~ ^[1-9][0-9]*$ ]] || die "BENCH_${setting^^} must be a positive integer"
done

missing=()
command -v curl >/dev/null || missing+=(curl)
command -v wrk >/dev/null || missing+=(wrk)
nginx=$(command -v nginx || true)
[ -n "$nginx" ] || [ ! -x /usr/sbin/nginx ] || nginx=/usr/sbin/nginx
[ -n "$nginx" ] || missing+=(nginx-light)
[ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]} (apt-get install -y ${missing[*]})"

built=
if [ -z "$daemon" ]; then
  built=$(git -C "$root" describe --always --dirty 2>/dev/null || echo "an unknown commit")
  say "building build-bench/daemon/einsora-daemon (release)"
  bash "$root/packaging/dev/deps.sh" run >&2
  if [ ! -f "$root/build-bench/build.ninja" ]; then
    meson setup "$root/build-bench" "$root" --buildtype=release >/dev/null
  fi
  ninja -C "$root/build-bench" daemon/einsora-daemon >/dev/null
  daemon=$root/build-bench/daemon/einsora-daemon
fi
[ -x "$daemon" ] || die "$daemon is not an executable"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/einsora-bench.XXXXXX")
chmod 700 "$tmp"
daemon_pid=
nginx_pid=

stop() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  stop "$nginx_pid"
  stop "$daemon_pid"
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

# ---- the daemon, with a fresh data directory ---------------------------
data=$tmp/data
mkdir -m 700 "$data"
api_port=$(free_port)
access_port=$(free_port)
api=http://127.0.0.1:$api_port
# The longest controller interval: the benchmark measures the API, and the
# workloads it creates are not meant to be placed or to change under it.
"$daemon" --data-dir "$data" --listen "127.0.0.1:$api_port" \
  --access-listen "127.0.0.1:$access_port" --controller-interval 60m \
  >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  kill -0 "$daemon_pid" 2>/dev/null || break
  if grep -qF "api listening on $api/" "$tmp/daemon.log" &&
    curl -fsS -o /dev/null "$api/readyz" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
if ! curl -fsS -o /dev/null "$api/readyz" 2>/dev/null; then
  tail -n 20 "$tmp/daemon.log" >&2
  die "the daemon did not become ready on $api"
fi
[ -s "$data/token" ] || die "the daemon wrote no $data/token"
token=$(tr -d '[:space:]' <"$data/token")
export EINSORA_BENCH_TOKEN=$token # for wrk's scripts; never printed
auth_header=$tmp/auth.header
(
  umask 077
  printf 'Authorization: Bearer %s\n' "$token" >"$auth_header"
)

# ---- seed the workloads -------------------------------------------------
post_body='{"kind":"notebook","gpu_class":"cpu-2c-4g","image":"jupyter-notebook"}'
printf '%s' "$post_body" >"$tmp/post.json"
say "creating $workloads workloads on $api"
code=$(curl -sS -o "$tmp/post-response.json" -w '%{http_code}' -H "@$auth_header" \
  -H 'Content-Type: application/json' --data-binary "@$tmp/post.json" "$api/v1/workloads")
[ "$code" = 201 ] || die "POST /v1/workloads answered $code"
if [ "$workloads" -gt 1 ]; then
  for i in $(seq 2 "$workloads"); do
    printf 'url = "%s/v1/workloads"\nheader = "@%s"\n' "$api" "$auth_header"
    printf 'header = "Content-Type: application/json"\ndata-binary = "@%s"\n' "$tmp/post.json"
    printf 'output = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nsilent\nshow-error\n'
    [ "$i" -eq "$workloads" ] || echo next
  done >"$tmp/seed.curl"
  created=$(curl -K "$tmp/seed.curl" | grep -c '^201$' || true)
  [ "$created" -eq $((workloads - 1)) ] ||
    die "only $((created + 1)) of $workloads POST /v1/workloads answered 201"
fi

# Whether the daemon pages its lists (docs/adr/0027): then the whole list
# is one page of ?limit=1000, and a page of 100 is measured too.
paged=0
list_query=
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "@$auth_header" "$api/v1/workloads?limit=1")
if [ "$code" = 200 ]; then
  paged=1
  list_query="?limit=1000"
  [ "$workloads" -le 1000 ] || die "BENCH_WORKLOADS over 1000 is more than one page"
fi

# The bodies nginx serves: exactly what the daemon answered.
mkdir -p "$tmp/www/v1"
get_body=$tmp/www/v1/workloads
code=$(curl -sS -o "$get_body" -w '%{http_code}' -H "@$auth_header" "$api/v1/workloads$list_query")
[ "$code" = 200 ] || die "GET /v1/workloads answered $code"
listed=$(grep -o '"id":' "$get_body" | wc -l)
[ "$listed" -eq "$workloads" ] || die "GET /v1/workloads listed $listed workloads, not $workloads"
get_bytes=$(wc -c <"$get_body")
post_bytes=$(wc -c <"$tmp/post-response.json")
page_body=$tmp/www/v1/page100
if [ "$paged" = 1 ]; then
  code=$(curl -sS -o "$page_body" -w '%{http_code}' -H "@$auth_header" "$api/v1/workloads?limit=100")
  [ "$code" = 200 ] || die "GET /v1/workloads?limit=100 answered $code"
  listed=$(grep -o '"id":' "$page_body" | wc -l)
  [ "$listed" -eq $((workloads < 100 ? workloads : 100)) ] ||
    die "GET /v1/workloads?limit=100 listed $listed workloads"
fi
health_body=$tmp/www/healthz
code=$(curl -sS -o "$health_body" -w '%{http_code}' "$api/healthz")
[ "$code" = 200 ] || die "GET /healthz answered $code"

# ---- the peer: nginx, one worker, on another loopback port --------------
post_reply=$(cat "$tmp/post-response.json")
# nginx would read a quote, a backslash or a $ in it as syntax.
if [[ $post_reply == *[\'\\\$]* ]]; then
  die "the create response can't be quoted for nginx"
fi
ngx=$tmp/nginx
mkdir -p "$ngx"
nginx_port=$(free_port)
peer=http://127.0.0.1:$nginx_port
{
  [ "$(id -u)" -ne 0 ] || echo 'user root;'
  cat <<EOF
worker_processes 1;
daemon off;
pid $ngx/nginx.pid;
error_log $ngx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path $ngx/body;
  proxy_temp_path $ngx/proxy;
  fastcgi_temp_path $ngx/fastcgi;
  uwsgi_temp_path $ngx/uwsgi;
  scgi_temp_path $ngx/scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:$nginx_port;
    root $tmp/www;
    location = /healthz {
      default_type application/json;
    }
    location = /v1/page100 {
      default_type application/json;
    }
    location = /v1/workloads {
      default_type application/json;
      if (\$request_method = POST) {
        return 201 '$post_reply';
      }
    }
  }
}
EOF
} >"$ngx/nginx.conf"
"$nginx" -q -t -p "$ngx/" -e "$ngx/error.log" -c "$ngx/nginx.conf" ||
  die "nginx refused $ngx/nginx.conf"
"$nginx" -p "$ngx/" -e "$ngx/error.log" -c "$ngx/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
  curl -fsS -o /dev/null "$peer/v1/workloads" 2>/dev/null && break
  kill -0 "$nginx_pid" 2>/dev/null || break
  sleep 0.1
done
curl -fsS -o "$tmp/peer-get" "$peer/v1/workloads" || die "nginx does not answer on $peer"
cmp -s "$tmp/peer-get" "$get_body" || die "nginx does not serve the daemon's GET body"
curl -fsS -o "$tmp/peer-health" "$peer/healthz" || die "nginx does not serve /healthz"
cmp -s "$tmp/peer-health" "$health_body" || die "nginx does not serve the daemon's /healthz body"
code=$(curl -sS -o "$tmp/peer-post" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary "@$tmp/post.json" "$peer/v1/workloads")
if [ "$code" != 201 ] || ! cmp -s "$tmp/peer-post" "$tmp/post-response.json"; then
  die "nginx does not answer the POST with 201 and the create response"
fi

# ---- measuring ----------------------------------------------------------
# One wrk run; prints "req/s p50_ms p99_ms requests non2xx socket_errors".
run_wrk() {
  local url=$1 script=$2 conns=$3 secs=$4 threads=2 out
  [ "$conns" -gt 1 ] || threads=1
  if ! out=$(timeout $((secs + 30)) wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 10s \
    --latency -s "$script" "$url" 2>&1); then
    echo "$out" >&2
    die "wrk failed against $url"
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
    die "could not read wrk's output for $url"
  }
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# "min-max" of the rounds' values.
spread() {
  printf '%s\n' "$@" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 }
    END { if (lo < 10) printf "%.3f-%.3f", lo, hi; else printf "%.0f-%.0f", lo, hi }'
}

fmt_ms() {
  awk -v v="$1" 'BEGIN {
    if (v < 1) printf "%.3f ms", v; else if (v < 100) printf "%.2f ms", v; else printf "%.0f ms", v }'
}

rows=()
spreads=()
notes=()
posts_made=0

# bench_case LABEL SCRIPT CONNS [EPATH NPATH NAME]: ROUNDS rounds, daemon
# and nginx back to back in each, the order alternating so that drift hits
# both alike. EPATH and NPATH (default /v1/workloads) are what the daemon
# and nginx are asked; NAME is the table's.
bench_case() {
  local label=$1 script=$2 conns=$3 r first
  local epath=${4:-/v1/workloads} npath=${5:-/v1/workloads} name=${6:-"$1 /v1/workloads"}
  local e_rps=() e_p50=() e_p99=() n_rps=() n_p50=() n_p99=() ratio=()
  local e_bad=0 n_bad=0 e_sock=0 n_sock=0
  local line rps p50 p99 n bad sock m_ratio
  for r in $(seq "$rounds"); do
    first=einsora
    [ $((r % 2)) -eq 1 ] || first=nginx
    for who in $first $([ $first = einsora ] && echo nginx || echo einsora); do
      if [ "$who" = einsora ]; then
        line=$(run_wrk "$api$epath" "$script" "$conns" "$duration")
        read -r rps p50 p99 n bad sock <<<"$line"
        e_rps+=("$rps") e_p50+=("$p50") e_p99+=("$p99")
        e_bad=$((e_bad + bad)) e_sock=$((e_sock + sock))
        [ "$label" != POST ] || posts_made=$((posts_made + n - bad))
      else
        line=$(run_wrk "$peer$npath" "$script" "$conns" "$duration")
        read -r rps p50 p99 n bad sock <<<"$line"
        n_rps+=("$rps") n_p50+=("$p50") n_p99+=("$p99")
        n_bad=$((n_bad + bad)) n_sock=$((n_sock + sock))
      fi
    done
    ratio+=("$(awk -v e="${e_rps[-1]}" -v n="${n_rps[-1]}" 'BEGIN { printf "%.6f", e / n }')")
    say "$label c=$conns round $r/$rounds: einsora ${e_rps[-1]} req/s" \
      "(p50 $(fmt_ms "${e_p50[-1]}"), p99 $(fmt_ms "${e_p99[-1]}")), nginx ${n_rps[-1]} req/s" \
      "(p50 $(fmt_ms "${n_p50[-1]}"), p99 $(fmt_ms "${n_p99[-1]}"))"
  done
  [ "$e_bad" -eq 0 ] || die "$label c=$conns: einsora answered $e_bad requests with non-2xx"
  [ "$n_bad" -eq 0 ] || die "$label c=$conns: nginx answered $n_bad requests with non-2xx"
  [ "$e_sock" -eq 0 ] || notes+=("$label c=$conns: $e_sock socket errors against einsora")
  [ "$n_sock" -eq 0 ] || notes+=("$label c=$conns: $n_sock socket errors against nginx")
  m_ratio=$(median "${ratio[@]}")
  spreads+=("$(printf '%s c=%s: einsora %s, nginx %s, ratio %s' "$name" "$conns" \
    "$(spread "${e_rps[@]}")" "$(spread "${n_rps[@]}")" "$(spread "${ratio[@]}")")")
  rows+=("$(printf '| %s | %s | %.0f | %s | %s | %.0f | %s | %s | %.3f (1/%.0f) |' \
    "$name" "$conns" "$(median "${e_rps[@]}")" "$(fmt_ms "$(median "${e_p50[@]}")")" \
    "$(fmt_ms "$(median "${e_p99[@]}")")" "$(median "${n_rps[@]}")" \
    "$(fmt_ms "$(median "${n_p50[@]}")")" "$(fmt_ms "$(median "${n_p99[@]}")")" \
    "$m_ratio" "$(awk -v r="$m_ratio" 'BEGIN { print 1 / r }')")")
}

# health_case: ROUNDS rounds of /healthz at 1 connection for DURATION
# seconds, on the idle daemon, then while 16 connections list the whole
# list (wrk in the background, started half a second before), and the
# same beside nginx serving the list's bytes. "Behind" is how much later
# the p99 /healthz is beside the lists than on the idle daemon.
health_rows=()
health_case() {
  local r line rps p50 p99 n bad sock list_pid base path
  local idle_p50=() idle_p99=() e_p50=() e_p99=() n_p50=() n_p99=() behind=()
  for r in $(seq "$rounds"); do
    line=$(run_wrk "$api/healthz" "$here/get.lua" 1 "$duration")
    read -r rps p50 p99 n bad sock <<<"$line"
    idle_p50+=("$p50") idle_p99+=("$p99")
    for who in einsora nginx; do
      base=$api path=/v1/workloads$list_query
      [ "$who" = einsora ] || { base=$peer path=/v1/workloads; }
      run_wrk "$base$path" "$here/get.lua" 16 $((duration + 1)) >"$tmp/lists.out" &
      list_pid=$!
      sleep 0.5
      line=$(run_wrk "$base/healthz" "$here/get.lua" 1 "$duration")
      wait "$list_pid" || die "the lists beside /healthz failed on $who"
      read -r rps p50 p99 n bad sock <<<"$line"
      [ "$bad" -eq 0 ] || die "/healthz beside lists: $who answered $bad non-2xx"
      if [ "$who" = einsora ]; then
        e_p50+=("$p50") e_p99+=("$p99")
      else
        n_p50+=("$p50") n_p99+=("$p99")
      fi
    done
    behind+=("$(awk -v a="${e_p99[-1]}" -v b="${idle_p99[-1]}" 'BEGIN { printf "%.4f", a - b }')")
    say "/healthz round $r/$rounds: idle p99 $(fmt_ms "${idle_p99[-1]}"), beside lists" \
      "p99 $(fmt_ms "${e_p99[-1]}") (nginx $(fmt_ms "${n_p99[-1]}"))"
  done
  health_rows+=("$(printf '| /healthz, c=1, beside 16 connections listing all | %s | %s | %s | %s | %s | %s | %s |' \
    "$(fmt_ms "$(median "${idle_p50[@]}")")" "$(fmt_ms "$(median "${idle_p99[@]}")")" \
    "$(fmt_ms "$(median "${e_p50[@]}")")" "$(fmt_ms "$(median "${e_p99[@]}")")" \
    "$(fmt_ms "$(median "${behind[@]}")")" \
    "$(fmt_ms "$(median "${n_p50[@]}")")" "$(fmt_ms "$(median "${n_p99[@]}")")")")
}

total=$(((${#connections[@]} * 2 + paged) * rounds * 2 * duration + 3 * rounds * duration + 4))
say "measuring: 2 endpoints x ${#connections[@]} connection counts, a page, /healthz;" \
  "$rounds rounds x 2 servers x ${duration}s (about $((total / 60))m$((total % 60))s)"
# Warm-up, not counted.
run_wrk "$api/v1/workloads$list_query" "$here/get.lua" 1 2 >/dev/null
run_wrk "$peer/v1/workloads" "$here/get.lua" 1 2 >/dev/null

# GET first: the POST rounds add workloads, which would change the list.
for conns in "${connections[@]}"; do
  bench_case GET "$here/get.lua" "$conns" "/v1/workloads$list_query" /v1/workloads \
    "GET /v1/workloads$list_query (all $workloads)"
done
if [ "$paged" = 1 ]; then
  bench_case GET "$here/get.lua" 16 "/v1/workloads?limit=100" /v1/page100 \
    "GET /v1/workloads?limit=100 (a page)"
fi
health_case
curl -sS -o "$tmp/get-after" -H "@$auth_header" "$api/v1/workloads$list_query"
cmp -s "$tmp/get-after" "$get_body" ||
  notes+=("the daemon's GET body changed during the GET rounds; nginx served the first one")
for conns in "${connections[@]}"; do
  bench_case POST "$here/post.lua" "$conns"
done

# ---- the report ---------------------------------------------------------
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "einsora-daemon ${built:+built from $built }($daemon) vs nginx $("$nginx" -v 2>&1 | sed 's/.*nginx\///')" \
  "(1 worker), wrk $(wrk -v 2>&1 | awk 'NR == 1 { print $2 }')"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs${cpu:+ ($cpu)}, $(uname -sr);" \
  "$rounds rounds x ${duration}s per server and case; medians"
echo "GET: $workloads workloads, $get_bytes-byte body; POST: $post_bytes-byte response" \
  "(nginx: return 201 with the same bytes); $posts_made workloads created in the POST rounds"
[ "$paged" = 1 ] || echo "This daemon does not page its lists: no row for a page of 100."
echo
echo "| endpoint | connections | einsora req/s | einsora p50 | einsora p99 | nginx req/s | nginx p50 | nginx p99 | ratio (einsora/nginx req/s) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo
echo "| case | einsora idle p50 | einsora idle p99 | einsora p50 beside lists | einsora p99 beside lists | behind (p99 beside - idle) | nginx p50 beside lists | nginx p99 beside lists |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${health_rows[@]}"
echo
echo "Spread over the rounds (req/s, min-max):"
echo
printf -- '- %s\n' "${spreads[@]}"
for note in "${notes[@]}"; do
  echo
  echo "Note: $note"
done
