#!/usr/bin/env python3
"""Counts the GLib test cases (TAP subtests) that meson ran, over every
tree given, and prints one closing line: 'tests: N passed, N failed',
after a line naming each failure, so that the tail of a CI log says which
test it was."""
import json
import re
import sys

passed = failed = skipped = 0
failures = []
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as log:
        for line in log:
            entry = json.loads(line)
            result = entry.get("result")
            out = entry.get("stdout") or ""
            oks = len(re.findall(r"^ok \d+.*$", out, re.M))
            skips = len(re.findall(r"^ok \d+.*# SKIP", out, re.M))
            not_oks = len(re.findall(r"^not ok \d+", out, re.M))
            if oks == 0 and not_oks == 0:
                # A test that is not TAP (the lint scripts) counts once.
                if result == "OK":
                    oks = 1
                elif result == "SKIP":
                    oks = skips = 1
            passed += oks - skips
            skipped += skips
            failed += not_oks
            name = f"{path.split('/')[0]}: {entry.get('name')}"
            for case in re.findall(r"^not ok \d+ (.*)$", out, re.M):
                failures.append(f"{name}: {case}")
            if result not in ("OK", "SKIP", "EXPECTEDFAIL") and not_oks == 0:
                failed += 1
                failures.append(f"{name}: {result}")
for failure in failures:
    print(f"failed: {failure}")
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
