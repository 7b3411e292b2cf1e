#!/usr/bin/env bash
# einsora-daemon --version says this version, and its man page (when pandoc
# made it) names every option --help lists and renders without a warning
# from groff. Usage: check-daemon-man.sh DAEMON VERSION [MAN-PAGE]
set -euo pipefail
daemon=$1
version=$2
page=${3:-}
status=0
out=$("$daemon" --version)
if [ "$out" != "einsora-daemon $version" ]; then
  echo "einsora-daemon --version: \"$out\", not \"einsora-daemon $version\"" >&2
  status=1
fi
if [ -z "$page" ]; then
  echo "no man page (no pandoc): its checks skipped"
  exit $status
fi
if ! command -v man >/dev/null; then
  echo "no man here: the man page's checks skipped"
  exit $status
fi
text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$page" 2>/dev/null)
for option in $("$daemon" --help | grep -oE '^ +--[a-z-]+' | tr -d ' '); do
  grep -qe "$option" <<<"$text" || {
    echo "einsora-daemon(8) doesn't name $option" >&2
    status=1
  }
done
warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
if [ -n "$warnings" ]; then
  echo "einsora-daemon(8): $warnings" >&2
  status=1
fi
exit $status
