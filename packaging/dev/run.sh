#!/usr/bin/env bash
# Sets up, builds and runs einsora-daemon in the foreground, with its SQLite
# database in the user's data directory (or EINSORA_DATA_DIR). Arguments go
# to the daemon, e.g. "migrate" or --data-dir DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash packaging/dev/deps.sh run
[ -d build ] || meson setup build >/dev/null
meson compile -C build >/dev/null
exec build/daemon/einsora-daemon "$@"
