#!/usr/bin/env bash
# Runs a browser test: installs playwright-core from the lock file when
# node_modules lacks it (or holds another version), then runs the script
# named (notebook.mjs unless told).
# npm's output goes to stderr: standard output is the test's TAP.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

installed() {
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync(process.argv[1] + "/package-lock.json", "utf8"));
    const want = lock.packages["node_modules/playwright-core"].version;
    const have = JSON.parse(fs.readFileSync(
      process.argv[1] + "/node_modules/playwright-core/package.json", "utf8")).version;
    process.exit(have === want ? 0 : 1);
  ' "$here" 2>/dev/null
}

if ! installed; then
  # One install at a time when several build trees run this at once.
  exec 9<"$here"
  flock 9
  installed || npm ci --prefix "$here" --no-audit --no-fund >&2
  exec 9<&-
fi
exec node "$here/${1:-notebook.mjs}"
