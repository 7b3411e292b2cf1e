#!/usr/bin/env bash
# Sets up, builds and runs every test: the normal tree with warnings as
# errors and the desktop app (all suites, the UI ones under Xvfb), then a
# second tree with AddressSanitizer and UndefinedBehaviorSanitizer, leak
# detection on (every suite but lint and ui), then the fuzzers for a
# bounded time.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bash packaging/dev/deps.sh test
# llama.cpp's llama-server and GGUF writer, built once into a cache outside
# the tree (several minutes the first time): the endpoint tests need them.
EINSORA_LLAMA_DIR=$(bash packaging/dev/llama-server.sh)
export EINSORA_LLAMA_DIR

setup() {
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

status=0
setup build -Dwerror=true -Dapp=enabled
meson compile -C build
meson test -C build --print-errorlogs || status=1

setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false
meson compile -C build-asan
# Full stacks on malloc, so tests/lsan.supp can match frames inside GLib
# and libsoup. The daemons that the tests start inherit these options: a
# leak or an invalid access in einsora-daemon makes it exit non-zero at its
# stop, which fails the test, the report on the test's stderr. Not here:
# lint (checks of the source, as in the first tree), ui (the app isn't
# built in this tree; its model is, in the unit suite). The hostile test
# leaves out its two timed subtests here (slow clients, 10,000
# connections): the sanitizers' slowness misses their deadlines.
# Three times the timeouts: the crash test's kill -9 loop took from 130
# to 540 s of its 600 here. intercept_tls_get_addr=0: LeakSanitizer in
# GCC 12 reads a bogus dynamic-TLS range of a dlopen()ed module (GLib's
# TLS backend, GnuTLS) and crashes at exit ("Tracer caught signal 11");
# without the interception it scans static TLS and the stacks as before.
mapfile -t asan_tests < <(meson test -C build-asan --list --no-suite lint --no-suite ui \
  2>/dev/null | sed -n 's|^einsora:[^ ]* / ||p')
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --timeout-multiplier 3 --print-errorlogs "${asan_tests[@]}" || status=1

# A third tree, clang's libFuzzer with both sanitizers: only the harnesses
# are built, and each runs against its seed corpus for a bounded time
# (tests/fuzz/run.sh; docs/fuzzing.md). Not a meson test: a finding sets
# the status and names the input.
if command -v clang >/dev/null; then
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang meson setup build-fuzz -Dfuzz=enabled -Dwerror=true \
      -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
  fi
  if meson compile -C build-fuzz fuzz; then
    bash tests/fuzz/run.sh build-fuzz "${EINSORA_FUZZ_SECONDS:-45}" || status=1
  else
    status=1
  fi
else
  echo "fuzz: skipped, no clang" >&2
fi

# The Debian packages (docs/adr/0064): built from this tree into build-deb/,
# linted, installed, the Lab daemon run as its unit says with a notebook,
# then purged. Needs root, as the docker tests do.
if [ "$(id -u)" -eq 0 ]; then
  bash packaging/dev/package-test.sh || status=1
else
  echo "packages: skipped, needs root"
fi

python3 "$root/packaging/dev/summarize-tests.py" build/meson-logs/testlog.json \
  build-asan/meson-logs/testlog.json || status=1
exit $status
