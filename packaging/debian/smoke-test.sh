#!/usr/bin/env bash
# Checks Einsora's built packages on this machine, as root (docs/adr/0064):
# lintian (no E: or W: line), install with apt, the versions, the installed
# Lab daemon run as its unit says (no systemd here: its User=,
# Environment=, EnvironmentFile= and ExecStart= read from the installed
# unit) with a notebook launched through the installed CLI over TLS, the
# installed desktop files' validators, then purge: every file gone, the
# Lab's state and user kept. It leaves the machine as it found it.
# Usage: smoke-test.sh DIR (the .debs and the .changes of package.sh)
set -euo pipefail
dir=$(realpath "$1")
packages=(einsora einsora-daemon einsora-desktop)
unit=/lib/systemd/system/einsora-lab.service
state=/var/lib/einsora

step() { echo "== $*"; }
fail() {
  echo "smoke-test: FAILED: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root"
# Never on a machine that has Einsora installed or its user: the purge and
# the clean-up below would take them.
for p in "${packages[@]}"; do
  s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  case "$s" in "" | un* | pn*) ;; *) fail "$p is installed here ($s): not touching it" ;; esac
done
if getent passwd einsora >/dev/null || getent passwd einsora-smoke >/dev/null ||
  getent group einsora >/dev/null || getent group einsora-smoke >/dev/null ||
  [ -e $state ] || [ -e /etc/einsora ]; then
  fail "the einsora or einsora-smoke user or group, $state or /etc/einsora exists here: not touching it"
fi

tmp=$(mktemp -d)
daemon_pid=
installed=0
cleanup() {
  set +e
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid"
    wait "$daemon_pid" 2>/dev/null
  fi
  # Whatever the einsora user still runs (a notebook the daemon left),
  # one process at a time: only this test ran anything as that user.
  for pid in $(pgrep -u einsora 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  [ "$installed" -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq \
    "${packages[@]}" >/dev/null 2>&1
  getent passwd einsora >/dev/null && userdel einsora
  getent group einsora >/dev/null && groupdel einsora
  getent passwd einsora-smoke >/dev/null && userdel einsora-smoke
  getent group einsora-smoke >/dev/null && groupdel einsora-smoke
  rm -rf $state /etc/einsora "$tmp"
}
trap cleanup EXIT

step "1. lintian"
changes=$(find "$dir" -maxdepth 1 -name 'einsora_*.changes' | head -n 1)
[ -n "$changes" ] || fail "no einsora_*.changes in $dir"
lintian --version
lintian "$changes" >"$tmp/lintian.log" 2>&1 || true
cat "$tmp/lintian.log"
if grep -qE '^[EW]: ' "$tmp/lintian.log"; then
  fail "lintian has errors or warnings (above)"
fi

step "2. apt-get install"
debs=()
for p in "${packages[@]}"; do
  deb=$(find "$dir" -maxdepth 1 -name "${p}_*.deb" | head -n 1)
  [ -n "$deb" ] || fail "no ${p}_*.deb in $dir"
  debs+=("$deb")
done
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]}" \
  >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"
  fail "apt-get install"
}
# A user's own data, which no maintainer script may touch.
useradd --system --home-dir "$tmp/home" --create-home einsora-smoke
install -d -o einsora-smoke "$tmp/home/.local/share/einsora"
echo mine >"$tmp/home/.local/share/einsora/marker"

step "3. versions"
einsora --version
einsora-daemon --version
[ "$(einsora-daemon --version)" = "einsora-daemon $(dpkg-query -W -f='${Version}' einsora-daemon)" ] ||
  fail "einsora-daemon --version doesn't say the package's version"
getent passwd einsora || fail "no einsora user after install"
[ "$(stat -c '%U %a' $state)" = "einsora 700" ] || fail "$state: $(stat -c '%U %a' $state)"
[ -f /etc/einsora/daemon.env ] || fail "no /etc/einsora/daemon.env"
grep -qx /etc/einsora/daemon.env /var/lib/dpkg/info/einsora-daemon.conffiles ||
  fail "/etc/einsora/daemon.env is not a conffile"

step "4. the Lab daemon, as $unit says"
unit_value() { sed -n "s/^$1=//p" "$unit"; }
user=$(unit_value User)
# ExecStart= is a program and its arguments, split at spaces.
read -r -a exec_start <<<"$(unit_value ExecStart)"
[ "$user" = einsora ] || fail "the unit's User= is '$user'"
# The environment systemd would give it: the unit's Environment= lines,
# then its EnvironmentFile= ("-": may be missing), whose lines win.
env_args=(HOME="$(getent passwd "$user" | cut -d: -f6)" USER="$user" LOGNAME="$user"
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
while IFS= read -r line; do env_args+=("$line"); done < <(unit_value Environment)
while IFS= read -r file; do
  file=${file#-}
  [ -f "$file" ] || continue
  while IFS= read -r line; do
    case "$line" in "" | \#*) continue ;; esac
    env_args+=("$line")
  done <"$file"
done < <(unit_value EnvironmentFile)
# The unit's addresses, unless something here already listens there; then
# free ports on the same address (still off loopback, so still TLS).
api_addr=$(printf '%s\n' "${env_args[@]}" | sed -n 's/^EINSORA_API_ADDR=//p' | tail -n 1)
access_addr=$(printf '%s\n' "${env_args[@]}" | sed -n 's/^EINSORA_ACCESS_ADDR=//p' | tail -n 1)
busy() { ss -Hltn "sport = :${1##*:}" | grep -q .; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }
if busy "$api_addr"; then
  api_addr=${api_addr%:*}:$(free_port)
  env_args+=(EINSORA_API_ADDR="$api_addr")
  echo "the unit's API port is taken here: $api_addr instead"
fi
if busy "$access_addr"; then
  access_addr=${access_addr%:*}:$(free_port)
  env_args+=(EINSORA_ACCESS_ADDR="$access_addr")
  echo "the unit's access port is taken here: $access_addr instead"
fi
# The unit's UMask=0077 too; exec, so that $! below is the daemon itself.
as_user() { (umask 0077 && exec setpriv --reuid="$user" --regid="$user" --init-groups \
  env -i "${env_args[@]}" "$@"); }
# bubblewrap as that user needs unprivileged user namespaces.
as_user bwrap --ro-bind / / --unshare-all --dev /dev --proc /proc true ||
  fail "bubblewrap doesn't run as $user here (unprivileged user namespaces?)"
echo "ExecStart=${exec_start[*]} as $user, api $api_addr, access proxy $access_addr"
(umask 0077 && exec setpriv --reuid="$user" --regid="$user" --init-groups \
  env -i "${env_args[@]}" "${exec_start[@]}") >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
port=${api_addr##*:}
server=https://127.0.0.1:$port
for _ in $(seq 100); do
  curl -ksf "$server/readyz" >/dev/null && break
  kill -0 "$daemon_pid" 2>/dev/null || {
    cat "$tmp/daemon.log"
    fail "the daemon exited"
  }
  sleep 0.2
done
curl -ksf "$server/readyz" >/dev/null || {
  cat "$tmp/daemon.log"
  fail "no /readyz"
}
# What an operator and a user do: the fingerprint from `info` on the
# server, pinned with `einsora login`, then the token in the environment.
fingerprint=$(as_user einsora-daemon info | sed -n 's/.*\(SHA256:[0-9A-Fa-f:]*\).*/\1/p' | head -n 1)
[ -n "$fingerprint" ] || fail "einsora-daemon info printed no fingerprint"
export XDG_CONFIG_HOME=$tmp/config
EINSORA_TOKEN=$(cat $state/token)
export EINSORA_TOKEN EINSORA_SERVER=$server
einsora login --fingerprint "$fingerprint" "$server"
einsora launch --kind notebook --class cpu-1c-2g --image jupyter-linux --name smoke
id=$(einsora --json workloads | python3 -c \
  'import json, sys; print([w["id"] for w in json.load(sys.stdin)["workloads"] if w["name"] == "smoke"][0])')
state_now=
for _ in $(seq 120); do
  state_now=$(einsora --json workloads | python3 -c \
    "import json, sys; print([w['state'] for w in json.load(sys.stdin)['workloads'] if w['id'] == '$id'][0])")
  case "$state_now" in running | failed) break ;; esac
  sleep 0.5
done
einsora workloads
if [ "$state_now" != running ]; then
  einsora events "$id" || true
  cat "$tmp/daemon.log"
  fail "the notebook is $state_now, not running"
fi
echo "notebook $id is running"
# The notebook would outlive the daemon (it is adopted at the next start):
# stop it first, then the daemon.
einsora stop "$id"
for _ in $(seq 60); do
  state_now=$(einsora --json workloads | python3 -c \
    "import json, sys; print([w['state'] for w in json.load(sys.stdin)['workloads'] if w['id'] == '$id'][0])")
  [ "$state_now" = stopped ] && break
  sleep 0.5
done
[ "$state_now" = stopped ] || fail "the notebook is $state_now, not stopped"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "the daemon exited with $? at SIGTERM"
daemon_pid=
# Nothing of the user's may be left running (a zombie that init has yet
# to reap runs nothing).
running() { ps -u "$user" -o pid=,stat= | awk '$2 !~ /^Z/ { print $1 }'; }
for _ in $(seq 50); do
  [ -z "$(running)" ] && break
  sleep 0.1
done
[ -z "$(running)" ] || fail "the einsora user still runs: $(ps -u "$user" -o pid,stat,args)"
unset EINSORA_TOKEN EINSORA_SERVER

step "5. the desktop files"
desktop-file-validate /usr/share/applications/dev.einsora.Einsora.desktop
appstreamcli validate --no-net /usr/share/metainfo/dev.einsora.Einsora.metainfo.xml
glib-compile-schemas --strict --dry-run /usr/share/glib-2.0/schemas
[ -f /usr/share/dbus-1/services/dev.einsora.Einsora.service ] || fail "no D-Bus service file"
for page in einsora.1 einsora-daemon.8; do
  out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l \
    "/usr/share/man/man${page##*.}/$page.gz" 2>&1 >/dev/null)
  [ -z "$out" ] || fail "man $page: $out"
done

step "6. apt-get purge"
echo kept >$state/smoke-marker
for p in "${packages[@]}"; do dpkg -L "$p"; done | sort -u >"$tmp/files"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${packages[@]}" >"$tmp/purge.log" 2>&1 || {
  cat "$tmp/purge.log"
  fail "apt-get purge"
}
installed=0
grep '^einsora-daemon:' "$tmp/purge.log" || fail "purge didn't say what it kept"
left=()
while IFS= read -r path; do
  [ "$path" != /. ] || continue
  [ -e "$path" ] || [ -L "$path" ] || continue
  # A directory another package owns too stays.
  [ -d "$path" ] && dpkg -S "$path" >/dev/null 2>&1 && continue
  left+=("$path")
done <"$tmp/files"
[ ${#left[@]} -eq 0 ] || fail "left after purge: ${left[*]}"
[ ! -e /etc/einsora ] || fail "/etc/einsora is left after purge"
[ "$(cat $state/smoke-marker)" = kept ] || fail "purge removed $state"
getent passwd einsora >/dev/null || fail "purge removed the einsora user"
[ "$(cat "$tmp/home/.local/share/einsora/marker")" = mine ] ||
  fail "purge touched a user's ~/.local/share/einsora"
echo "purged: $(wc -l <"$tmp/files") paths gone or shared; $state and the einsora user kept"
echo "smoke-test: passed"
