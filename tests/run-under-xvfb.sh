#!/usr/bin/env bash
# run-under-xvfb.sh PROGRAM ARGS...: runs a GTK test with an X server of
# its own (Xvfb, on a display it picks itself with -displayfd) and a
# session bus of its own (dbus-run-session), in software rendering, with
# settings in memory. Exits with PROGRAM's status; when Xvfb or
# dbus-run-session is missing, skips: exit 77, or with --tap among ARGS a
# TAP "1..0 # SKIP" plan and exit 0 (meson reads 77 from a TAP test as an
# error). Xvfb goes when PROGRAM ends.
set -euo pipefail
[ $# -ge 1 ] || {
  echo "usage: $0 PROGRAM ARGS..." >&2
  exit 2
}
skip() {
  local arg
  for arg in "$@"; do
    if [ "$arg" = --tap ]; then
      echo "1..0 # SKIP $reason"
      exit 0
    fi
  done
  echo "skipped: $reason" >&2
  exit 77
}
for tool in Xvfb dbus-run-session; do
  if ! command -v "$tool" >/dev/null; then
    reason="$tool is not installed (packaging/dev/deps.sh test)"
    skip "$@"
  fi
done

tmp=$(mktemp -d)
xvfb_pid=
cleanup() {
  if [ -n "$xvfb_pid" ]; then
    kill "$xvfb_pid" 2>/dev/null || true
    wait "$xvfb_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Xvfb writes the display's number to fd 3 once it accepts clients.
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp -noreset \
  3>"$tmp/display" 2>"$tmp/xvfb.log" &
xvfb_pid=$!
for _ in $(seq 100); do
  [ -s "$tmp/display" ] && break
  if ! kill -0 "$xvfb_pid" 2>/dev/null; then
    echo "Xvfb didn't start:" >&2
    cat "$tmp/xvfb.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ ! -s "$tmp/display" ]; then
  echo "Xvfb didn't give a display within 10 s" >&2
  exit 1
fi
display=$(head -n 1 "$tmp/display")

runtime_dir=${XDG_RUNTIME_DIR:-}
if [ -z "$runtime_dir" ] || [ ! -d "$runtime_dir" ]; then
  runtime_dir=$tmp/runtime
  mkdir -m 0700 "$runtime_dir"
fi

status=0
env DISPLAY=":$display" WAYLAND_DISPLAY= GDK_BACKEND=x11 LIBGL_ALWAYS_SOFTWARE=1 \
  WEBKIT_DISABLE_COMPOSITING_MODE=1 GSETTINGS_BACKEND=memory \
  XDG_RUNTIME_DIR="$runtime_dir" \
  dbus-run-session -- "$@" || status=$?
exit $status
