#!/usr/bin/env python3
"""The real einsora-daemon at Lab scale on one machine (issue 15): sim
workloads running under the in-process agent, the controller at a 1 s
interval. For 0, 200, 500 and 1,000 running workloads (and BENCH_BIG,
10,000 by default, at the end of each round; an inventory offers at most
4,096 CPUs, so 4,096 of those run and the rest queue): the daemon's CPU over
BENCH_WINDOW seconds (20), GET /healthz latency over the same window (a
probe every 50 ms on one kept-alive connection, so the probe itself costs
the daemon little), and VmRSS. The peer in the same run is the same
daemon with nothing running: its CPU and /healthz p99 at 0 workloads.
Medians over BENCH_ROUNDS rounds (3), each a fresh daemon and data
directory. Progress goes to standard error, the table to standard output.

Usage: bench/lab-scale-bench.py [DAEMON] (default build-bench/daemon/einsora-daemon);
BENCH_BIG=0 leaves the 10,000 step out."""
import http.client
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
WINDOW_S = float(os.environ.get("BENCH_WINDOW", "20"))
BIG = int(os.environ.get("BENCH_BIG", "10000"))
STEPS = [0, 200, 500, 1000] + ([BIG] if BIG > 1000 else [])
MEASURED = {0, 200, 500}  # CPU and /healthz; RSS for every step
daemon = sys.argv[1] if len(sys.argv) > 1 else "build-bench/daemon/einsora-daemon"
TICK = os.sysconf("SC_CLK_TCK")
# The smallest built-in class needs 2 GiB, and the sim machine offers at
# most 1 TiB: the bench's catalog adds a class small enough for 10,000.
CLASS = {"name": "bench-1c-64m", "cpus": 1, "memory_mib": 64, "devices": 0,
         "accelerator": "cpu"}
BODY = json.dumps({"kind": "notebook", "gpu_class": CLASS["name"],
                   "image": "jupyter-notebook"}).encode()
# An inventory says at most 4,096 CPUs: past that many, workloads queue.
MACHINE_CPUS = 4096
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def say(text):
    print(f"lab-scale-bench: {text}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def running_count(db_path):
    # Read-only, beside the daemon's own connection (WAL): costs it nothing.
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=15)
    try:
        return db.execute("SELECT count(*) FROM workloads WHERE state = 'running'").fetchone()[0]
    finally:
        db.close()


def create(conn, token, n):
    for _ in range(n):
        conn.request("POST", "/v1/workloads", BODY,
                     {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        if answer.status != 201:
            raise SystemExit(f"POST /v1/workloads answered {answer.status}")


def window(pid, port):
    """CPU% of the daemon and /healthz latencies (ms) over WINDOW_S."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies = []
    start_ticks, start = cpu_ticks(pid), time.monotonic()
    while time.monotonic() - start < WINDOW_S:
        t0 = time.monotonic()
        conn.request("GET", "/healthz")
        answer = conn.getresponse()
        answer.read()
        latencies.append((time.monotonic() - t0) * 1000)
        time.sleep(max(0.0, 0.05 - (time.monotonic() - t0)))
    cpu = (cpu_ticks(pid) - start_ticks) / TICK / (time.monotonic() - start) * 100
    conn.close()
    return cpu, latencies


def one_round(number):
    results = {}
    with tempfile.TemporaryDirectory() as root:
        os.chmod(root, 0o700)
        data = os.path.join(root, "data")
        port, access = free_port(), free_port()
        catalog = json.load(open(os.path.join(ROOT, "catalog", "catalog.json")))
        catalog["classes"].append(CLASS)
        catalog_path = os.path.join(root, "catalog.json")
        with open(catalog_path, "w") as f:
            json.dump(catalog, f)
        env = dict(os.environ, EINSORA_DRIVERS="sim", EINSORA_CONTROLLER_INTERVAL="1s",
                   EINSORA_CATALOG=catalog_path, EINSORA_SIM_CPUS=str(MACHINE_CPUS),
                   EINSORA_SIM_MEMORY_MIB="1048576")
        env.pop("G_MESSAGES_DEBUG", None)
        log = open(os.path.join(root, "daemon.log"), "w")
        proc = subprocess.Popen([daemon, "--data-dir", data, "--listen", f"127.0.0.1:{port}",
                                 "--access-listen", f"127.0.0.1:{access}"],
                                env=env, stderr=log, stdout=log)
        try:
            token = None
            for _ in range(400):
                try:
                    token = open(os.path.join(data, "token")).read().strip()
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    c.request("GET", "/readyz")
                    if c.getresponse().status == 200:
                        break
                except (OSError, http.client.HTTPException):
                    pass
                time.sleep(0.05)
            else:
                log.flush()
                raise SystemExit("the daemon did not become ready:\n" +
                                 open(os.path.join(root, "daemon.log")).read()[-2000:])
            time.sleep(2)  # past start-up and the first passes
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            made = 0
            db_path = os.path.join(data, "einsora.db")
            for step in STEPS:
                if step > made:
                    t0 = time.monotonic()
                    create(conn, token, step - made)
                    made = step
                    while running_count(db_path) < min(step, MACHINE_CPUS):
                        if proc.poll() is not None:
                            raise SystemExit("the daemon exited")
                        time.sleep(0.5)
                    say(f"round {number}: {step} made, {min(step, MACHINE_CPUS)} running "
                        f"({time.monotonic() - t0:.0f} s to create and run)")
                    time.sleep(3)  # the last starts reported and observed
                if step in MEASURED:
                    cpu, latencies = window(proc.pid, port)
                    results[step] = {"cpu": cpu, "p50": statistics.median(latencies),
                                     "p99": pct(latencies, 99), "rss": rss_kib(proc.pid)}
                else:
                    results[step] = {"rss": rss_kib(proc.pid)}
                say(f"round {number}: {step}: {results[step]}")
        finally:
            proc.terminate()
            proc.wait()
            log.close()
    return results


rounds = [one_round(i + 1) for i in range(ROUNDS)]


def med(step, key):
    return statistics.median(r[step][key] for r in rounds)


print(f"| sim workloads on one machine (1 s interval; at most {MACHINE_CPUS} run) | daemon CPU over "
      f"{WINDOW_S:.0f} s | /healthz p50 | /healthz p99 | p99 / idle p99 | VmRSS |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for step in STEPS:
    if step in MEASURED:
        print(f"| {step} | {med(step, 'cpu'):.1f}% | {med(step, 'p50'):.2f} ms | "
              f"{med(step, 'p99'):.2f} ms | {med(step, 'p99') / med(0, 'p99'):.2f} | "
              f"{med(step, 'rss') / 1024:.1f} MiB |")
    else:
        print(f"| {step} | | | | | {med(step, 'rss') / 1024:.1f} MiB |")
print(f"\nMedians of {ROUNDS} rounds; the peer is the same daemon with 0 workloads.")
