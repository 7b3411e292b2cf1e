#!/usr/bin/env bash
# run-in-german.sh PROGRAM ARGS...: runs PROGRAM in the de_DE.UTF-8 locale
# with German messages (docs/adr/0063). glibc ignores LANGUAGE under the C
# locale and a test can't install locales, so this compiles de_DE.UTF-8
# with localedef (from the locales package's sources) into a temporary
# directory of its own and points LOCPATH there: no root needed. PROGRAM
# binds the text domain to the build's catalogs itself
# (EINSORA_TEST_LOCALEDIR). Exits with PROGRAM's status; where localedef or
# the locale's sources are missing, skips: exit 77, or with --tap among ARGS
# a TAP "1..0 # SKIP" plan and exit 0 (as tests/run-under-xvfb.sh does).
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
if ! command -v localedef >/dev/null || [ ! -e /usr/share/i18n/locales/de_DE ]; then
  reason="no localedef or no de_DE locale sources (packaging/dev/deps.sh test: locales)"
  skip "$@"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# localedef exits 1 for mere warnings; the compiled locale is what counts.
localedef -i de_DE -f UTF-8 "$tmp/de_DE.UTF-8" >"$tmp/localedef.log" 2>&1 || true
if [ ! -e "$tmp/de_DE.UTF-8/LC_MESSAGES" ]; then
  echo "localedef didn't compile de_DE.UTF-8:" >&2
  cat "$tmp/localedef.log" >&2
  exit 1
fi

status=0
env LOCPATH="$tmp" LC_ALL=de_DE.UTF-8 LANGUAGE=de "$@" || status=$?
exit $status
