#!/usr/bin/env bash
# Sets up, builds and runs Einsora.
# - In a desktop session (DISPLAY or WAYLAND_DISPLAY set): the desktop app,
#   which starts einsora-daemon for this user when none answers (and leaves
#   it running when it quits). Arguments go to the app.
# - Otherwise, or with "daemon" first: einsora-daemon in the foreground, as
#   on a Lab server, with its SQLite database in the user's data directory
#   (or EINSORA_DATA_DIR). Further arguments go to the daemon, e.g.
#   "migrate" or --data-dir DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash packaging/dev/deps.sh run
if [ -f build/build.ninja ]; then
  meson configure build -Dapp=enabled >/dev/null
else
  meson setup build -Dapp=enabled >/dev/null
fi
meson compile -C build >/dev/null
# Endpoints run llama.cpp's llama-server: the user's own (EINSORA_LLAMA_SERVER
# or on PATH), else the one packaging/dev/llama-server.sh builds once into a
# cache (10 to 15 minutes the first time on 2 cores; it says so).
if [ -z "${EINSORA_LLAMA_SERVER:-}" ] && ! command -v llama-server >/dev/null; then
  EINSORA_LLAMA_SERVER=$(bash packaging/dev/llama-server.sh)/bin/llama-server
  export EINSORA_LLAMA_SERVER
fi
if [ "${1:-}" = daemon ]; then
  shift
  exec build/daemon/einsora-daemon "$@"
fi
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  # From the build tree: its settings schema, and its daemon to start.
  export GSETTINGS_SCHEMA_DIR=$PWD/build/data
  export EINSORA_DAEMON=${EINSORA_DAEMON:-$PWD/build/daemon/einsora-daemon}
  exec build/app/desktop/einsora-app "$@"
fi
exec build/daemon/einsora-daemon "$@"
