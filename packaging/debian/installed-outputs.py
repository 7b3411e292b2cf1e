#!/usr/bin/python3
"""Prints the build outputs that "meson install" copies, relative to the
build directory, for ninja: debian/rules builds only those."""
import json
import os
import subprocess
import sys

builddir = sys.argv[1]
targets = json.loads(
    subprocess.check_output(["meson", "introspect", "--targets", builddir])
)
root = os.path.realpath(builddir)
for target in targets:
    if target.get("installed"):
        for name in target["filename"]:
            print(os.path.relpath(name, root))
