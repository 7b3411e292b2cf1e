#!/usr/bin/env bash
# Builds Einsora's Debian packages from this tree and checks them on this
# machine, as root (docs/adr/0064): lintian, install, the Lab daemon and a
# notebook, the desktop files, purge (packaging/debian/smoke-test.sh).
# Prints "packages: passed" or "packages: FAILED"; exits non-zero on failure.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${EINSORA_DEB_DIR:-$PWD/build-deb}
start=$SECONDS
if EINSORA_DEB_DIR=$out DEB_BUILD_OPTIONS="nocheck parallel=2" bash packaging/dev/package.sh &&
  bash packaging/debian/smoke-test.sh "$out"; then
  echo "packages: passed ($((SECONDS - start)) s)"
else
  echo "packages: FAILED ($((SECONDS - start)) s)"
  exit 1
fi
