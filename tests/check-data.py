#!/usr/bin/env python3
"""Checks the files in data/ that no packaged validator covers.

  check-data.py app-icon FILE             a full-colour SVG, 128x128 viewBox
  check-data.py symbolic-icon FILE        a 16x16 symbolic SVG, one colour
  check-data.py dbus-service FILE NAME    a D-Bus session service file
  check-data.py systemd-unit FILE         einsora-daemon's systemd unit

Prints what is wrong and exits 1; exits 0 when the file is right.
"""

import configparser
import os
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
SYMBOLIC_COLOUR = "#2e3436"

problems = []


def problem(message):
    problems.append(message)


def read_svg(path, size):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        problem(f"not well-formed XML: {e}")
        return None
    if root.tag != SVG + "svg":
        problem(f"the root element is {root.tag}, not an SVG <svg>")
        return None
    view_box = root.get("viewBox", "").replace(",", " ").split()
    if view_box != ["0", "0", str(size), str(size)]:
        problem(f'viewBox is "{root.get("viewBox")}", not "0 0 {size} {size}"')
    for attr in ("width", "height"):
        value = root.get(attr)
        if value is not None and value not in (str(size), f"{size}px"):
            problem(f'{attr} is "{value}", not {size}')
    for element in root.iter():
        if element.tag in (SVG + "image", SVG + "script", SVG + "foreignObject"):
            problem(f"<{element.tag[len(SVG):]}>: icons are plain vector shapes")
        for attr, value in element.attrib.items():
            if attr.endswith("href") and not value.startswith("#"):
                problem(f'{attr}="{value}": icons refer to nothing outside themselves')
    return root


def colours(element):
    """The fill and stroke colours an element sets, from attributes or style."""
    found = {}
    for attr in ("fill", "stroke", "stop-color", "color"):
        if attr in element.attrib:
            found[attr] = element.attrib[attr]
    for declaration in element.get("style", "").split(";"):
        if ":" in declaration:
            name, value = declaration.split(":", 1)
            name = name.strip()
            if name in ("fill", "stroke", "stop-color", "color"):
                found[name] = value.strip()
    return found


def check_app_icon(path):
    read_svg(path, 128)


def check_symbolic_icon(path):
    root = read_svg(path, 16)
    if root is None:
        return
    shapes = 0
    for element in root.iter():
        for attr, value in colours(element).items():
            if value.lower() not in (SYMBOLIC_COLOUR, "none"):
                problem(f"{attr}: {value} on <{element.tag[len(SVG):]}>: "
                        f"symbolic icons use {SYMBOLIC_COLOUR} only")
        if element.tag in (SVG + "linearGradient", SVG + "radialGradient"):
            problem("a gradient: symbolic icons are flat")
        if element.tag in (SVG + t for t in ("path", "rect", "circle", "ellipse", "polygon")):
            shapes += 1
    if shapes == 0:
        problem("no shapes")


def read_ini(path):
    parser = configparser.ConfigParser(interpolation=None, strict=False, delimiters=("=",))
    parser.optionxform = str  # keys are case-sensitive
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f)
    except (configparser.Error, UnicodeDecodeError) as e:
        problem(f"can't be read as a key file: {e}")
        return None
    return parser


def check_dbus_service(path, name):
    parser = read_ini(path)
    if parser is None:
        return
    if parser.sections() != ["D-BUS Service"]:
        problem(f"sections are {parser.sections()}, not ['D-BUS Service']")
        return
    section = parser["D-BUS Service"]
    if section.get("Name") != name:
        problem(f'Name is "{section.get("Name")}", not "{name}"')
    if os.path.basename(path) != name + ".service":
        problem(f"the file must be named {name}.service")
    exec_line = section.get("Exec", "").split()
    if not exec_line or not os.path.isabs(exec_line[0]):
        problem("Exec must start with an absolute path")
    elif "--gapplication-service" not in exec_line[1:]:
        problem("Exec must pass --gapplication-service (a D-Bus activated GApplication)")
    extra = set(section) - {"Name", "Exec", "SystemdService"}
    if extra:
        problem(f"unknown keys: {sorted(extra)}")


# The keys this unit may use; a misspelt one would be ignored by systemd
# with only a log line, so it is caught here.
UNIT_KEYS = {
    "Unit": {"Description", "Documentation", "After", "Wants", "Requires",
             "ConditionPathExists"},
    "Service": {"Type", "ExecStart", "ExecReload", "Restart", "RestartSec", "KillMode",
                "UMask", "Environment", "EnvironmentFile", "TimeoutStopSec"},
    "Install": {"WantedBy", "Alias"},
}
UNIT_VALUES = {
    ("Service", "Type"): {"simple", "exec", "notify", "forking", "oneshot", "dbus", "idle"},
    ("Service", "Restart"): {"no", "on-success", "on-failure", "on-abnormal",
                             "on-watchdog", "on-abort", "always"},
    ("Service", "KillMode"): {"control-group", "mixed", "process"},
}


def check_systemd_unit(path):
    parser = read_ini(path)
    if parser is None:
        return
    if parser.sections() != ["Unit", "Service", "Install"]:
        problem(f"sections are {parser.sections()}, not [Unit], [Service], [Install]")
        return
    for section, allowed in UNIT_KEYS.items():
        for key in parser[section]:
            if key not in allowed:
                problem(f"[{section}] {key}: not a key this unit uses (misspelt?)")
    for (section, key), allowed in UNIT_VALUES.items():
        value = parser[section].get(key)
        if value is not None and value not in allowed:
            problem(f"[{section}] {key}={value}: not one of {sorted(allowed)}")
    exec_start = parser["Service"].get("ExecStart", "").split()
    if not exec_start or not os.path.isabs(exec_start[0]) or "@" in exec_start[0]:
        problem("ExecStart must start with an absolute path (configured from @bindir@)")
    elif os.path.basename(exec_start[0]) != "einsora-daemon":
        problem(f"ExecStart runs {exec_start[0]}, not einsora-daemon")
    umask = parser["Service"].get("UMask")
    if umask is not None and not re.fullmatch(r"0?[0-7]{3}", umask):
        problem(f"UMask={umask} is not an octal mask")
    if "WantedBy" not in parser["Install"]:
        problem("[Install] has no WantedBy: `systemctl --user enable` would do nothing")


CHECKS = {
    "app-icon": (check_app_icon, 1),
    "symbolic-icon": (check_symbolic_icon, 1),
    "dbus-service": (check_dbus_service, 2),
    "systemd-unit": (check_systemd_unit, 1),
}


def main(argv):
    if len(argv) < 3 or argv[1] not in CHECKS or len(argv) - 2 != CHECKS[argv[1]][1]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    check, _ = CHECKS[argv[1]]
    path = os.path.normpath(argv[2])
    try:
        check(path, *argv[3:])
    except OSError as e:
        problem(str(e))
    for message in problems:
        print(f"{path}: {message}")
    if not problems:
        print(f"{path}: ok ({argv[1]})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
