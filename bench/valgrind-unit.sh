#!/usr/bin/env bash
# Every test of the unit suite under valgrind's memcheck; not a test, and
# CI does not run it (the sanitizer tree there covers more, faster, but
# only what is built with the sanitizers: this sees the libraries too).
#
#   bash bench/valgrind-unit.sh [BUILD_DIR [TEST...]]   # default: build-valgrind
#
# BUILD_DIR is a plain meson tree, no sanitizer (valgrind and ASan don't
# mix); it is set up when it has no build.ninja, and built. TEST names
# limit the run to those unit tests (einsora-auth-test). Each test runs
# once (meson test --wrapper, timeouts x20) with --leak-check=full,
# GRegex without PCRE2's JIT (bench/valgrind-no-jit.c) and
# bench/valgrind.supp for what a library loses. The table goes to
# standard output: per test, the bytes definitely lost, the invalid reads
# and writes, memcheck's other errors and the test's own result; then
# PASS, or FAIL with the exit status 1 when any test has a definite leak,
# an invalid access, another memcheck error or fails itself. memcheck's
# logs stay in BUILD_DIR/valgrind/ (one per process, TEST.PID.log).
# Docs: docs/bench.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build-valgrind}
shift || true
command -v valgrind >/dev/null || {
  echo "valgrind-unit: valgrind is not installed (apt-get install valgrind)" >&2
  exit 1
}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" >/dev/null
fi
meson compile -C "$build" >&2
build=$(cd "$build" && pwd)

logs=$build/valgrind
rm -rf "$logs"
mkdir -p "$logs"
# GRegex without PCRE2's JIT, whose code memcheck can't follow
# (bench/valgrind-no-jit.c).
cc -shared -fPIC -o "$logs/valgrind-no-jit.so" bench/valgrind-no-jit.c
# The wrapper names each log after the test it runs; children that a test
# spawns (the daemon's helpers, g_test_trap_subprocess()) are not traced.
wrapper=$logs/memcheck.sh
cat >"$wrapper" <<EOF
#!/usr/bin/env bash
export LD_PRELOAD="$logs/valgrind-no-jit.so\${LD_PRELOAD:+:\$LD_PRELOAD}"
exec valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite \\
  --errors-for-leak-kinds=definite --error-exitcode=42 --num-callers=40 \\
  --suppressions="$root/bench/valgrind.supp" \\
  --log-file="$logs/\$(basename "\$1").%p.log" "\$@"
EOF
chmod +x "$wrapper"

# G_SLICE=always-malloc and G_DEBUG=gc-friendly are in the suite's
# environment already (tests/meson.build). Skipped: two checks of timing
# that memcheck alone fails: a call's speed (under 100 ms), and the main
# loop ticking while a password is checked in a thread (memcheck runs one
# thread at a time, so it sometimes ticks once).
status=0
meson test -C "$build" --suite unit --wrapper "$wrapper" --timeout-multiplier 20 "$@" \
  --test-args '-s /credential/password/async-leaves-main-loop-running -s /auth/login/right-and-wrong' \
  --print-errorlogs >"$logs/meson-test.txt" 2>&1 || status=1

mapfile -t tests < <(meson test -C "$build" --suite unit --list "$@" 2>/dev/null |
  sed -n 's|^.* / ||p')
printf '| test | definitely lost | invalid reads | invalid writes | other errors | test |\n'
printf '| --- | ---: | ---: | ---: | ---: | --- |\n'
python3 - "$logs" "$build/meson-logs/testlog-memcheck.sh.json" "${tests[@]}" <<'EOF' || status=1
import glob, json, os, re, sys

logs, testlog, tests = sys.argv[1], sys.argv[2], sys.argv[3:]
results = {}
for line in open(testlog):
    entry = json.loads(line)
    results[entry["name"].split(" / ")[-1]] = entry["result"]
bad = False
for test in tests:
    lost = reads = writes = errors = 0
    files = glob.glob(os.path.join(logs, test + ".*.log"))
    for path in files:
        text = open(path, errors="replace").read()
        lost += sum(int(n.replace(",", ""))
                    for n in re.findall(r"definitely lost: ([\d,]+) bytes", text))
        reads += len(re.findall(r"^==\d+== Invalid read of size", text, re.M))
        writes += len(re.findall(r"^==\d+== Invalid write of size", text, re.M))
        errors += sum(int(n.replace(",", ""))
                      for n in re.findall(r"ERROR SUMMARY: ([\d,]+) errors", text))
    leak_errors = sum(1 for path in files
                      for _ in re.finditer(r"are definitely lost in loss record",
                                           open(path, errors="replace").read()))
    other = max(errors - reads - writes - leak_errors, 0)
    result = results.get(test, "NOT RUN") if files else "NOT RUN"
    if lost or reads or writes or other or result != "OK":
        bad = True
    print(f"| {test} | {lost:,} B | {reads} | {writes} | {other} | {result} |")
print()
print("FAIL" if bad else "PASS")
sys.exit(1 if bad else 0)
EOF
exit $status
