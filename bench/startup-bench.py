#!/usr/bin/env python3
"""exec -> first /readyz 200: how long einsora-daemon takes from being
started to answering /readyz, with the default drivers (linux-native is
probed: Jupyter in bubblewrap) and with the sim driver, on a fresh data
directory each round (first run included: the account, the token file).
Each daemon given is measured in the same run, rounds interleaved, so a
"before" and an "after" build compare on the same noisy machine.

Usage: bench/startup-bench.py DAEMON [DAEMON...] (default build/daemon/einsora-daemon)
Prints the median and the spread of ROUNDS rounds per daemon and mode."""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = 10
daemons = sys.argv[1:] or ["build/daemon/einsora-daemon"]
MODES = [("default drivers", None), ("sim", "sim")]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def readyz(port):
    """True once GET /readyz answers 200 (a raw request: no client
    library's own start-up in the way)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def once(daemon, drivers):
    with tempfile.TemporaryDirectory(prefix="einsora-startup-") as root:
        os.chmod(root, 0o700)
        port = free_port()
        env = dict(os.environ, G_MESSAGES_DEBUG="", EINSORA_ACCESS_ADDR="127.0.0.1:0",
                   EINSORA_AGENT_RUN_DIR=os.path.join(root, "run"))
        env.pop("EINSORA_DRIVERS", None)
        if drivers is not None:
            env["EINSORA_DRIVERS"] = drivers
        t0 = time.monotonic()
        proc = subprocess.Popen([daemon, "--data-dir", os.path.join(root, "data"), "--listen",
                                 f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            while not readyz(port):
                if proc.poll() is not None:
                    raise RuntimeError(f"{daemon} exited with {proc.returncode}")
                time.sleep(0.001)
            elapsed = time.monotonic() - t0
            # Past the probe, so the next round starts from a quiet machine.
            time.sleep(1.5)
        finally:
            proc.terminate()
            proc.wait()
        return elapsed * 1000


results = {(d, m): [] for d in daemons for m, _ in MODES}
for _ in range(ROUNDS):
    for mode, drivers in MODES:
        for daemon in daemons:
            results[(daemon, mode)].append(once(daemon, drivers))

print(f"exec -> first /readyz 200, {ROUNDS} rounds each (median, min-max):")
for daemon in daemons:
    for mode, _ in MODES:
        values = results[(daemon, mode)]
        print(f"  {daemon}, {mode}: median {statistics.median(values):.0f} ms "
              f"({min(values):.0f}-{max(values):.0f})")
if len(daemons) == 2:
    for mode, _ in MODES:
        ratio = (statistics.median(results[(daemons[1], mode)]) /
                 statistics.median(results[(daemons[0], mode)]))
        print(f"  ratio {daemons[1]} / {daemons[0]}, {mode}: {ratio:.2f}")
