#!/usr/bin/env python3
"""Time from POST /v1/workloads to the in-process agent starting it with
the sim driver (which runs nothing, zero delay), and to `running` in the
API, with the real einsora-daemon on loopback. A create and the agent's
report wake the controller (docs/adr/0029); before that it admitted on its
interval, so the interval is the peer: the figures are reported beside it.
Usage: bench/launch-latency.py [DAEMON] (default build-bench/daemon/einsora-daemon)."""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

N = 60
INTERVAL_MS = 100
daemon = sys.argv[1] if len(sys.argv) > 1 else "build-bench/daemon/einsora-daemon"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def request(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req) as answer:
        return json.loads(answer.read())


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


with tempfile.TemporaryDirectory() as root:
    os.chmod(root, 0o700)
    data = os.path.join(root, "data")
    port = free_port()
    env = dict(os.environ, EINSORA_DRIVERS="sim", G_MESSAGES_DEBUG="all",
               EINSORA_CONTROLLER_INTERVAL=f"{INTERVAL_MS}ms", EINSORA_SIM_CPUS="4096",
               EINSORA_SIM_MEMORY_MIB="1048576")
    log = open(os.path.join(root, "daemon.log"), "w")
    proc = subprocess.Popen([daemon, "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
                            env=env, stderr=log, stdout=log)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                token = open(os.path.join(data, "token")).read().strip()
                urllib.request.urlopen(base + "/readyz")
                break
            except Exception:
                time.sleep(0.05)
        time.sleep(1)  # past settling
        posted, running = {}, {}
        for i in range(N):
            t0 = time.time()
            w = request("POST", base + "/v1/workloads", token,
                        {"kind": "notebook", "name": f"lat-{i}", "gpu_class": "cpu-2c-4g",
                         "image": "jupyter-notebook"})
            posted[w["id"]] = t0
            while request("GET", f"{base}/v1/workloads/{w['id']}", token)["state"] != "running":
                time.sleep(0.002)
            running[w["id"]] = time.time() - t0
            time.sleep(0.013 * (i % 7))  # spread POSTs over the interval
    finally:
        proc.terminate()
        proc.wait()
        log.close()
    # The agent logs "HH:MM:SS.mmm: workload <id>: start with sim".
    day = time.strftime("%Y-%m-%d ")
    started = {}
    for line in open(os.path.join(root, "daemon.log")):
        m = re.search(r"(\d\d:\d\d:\d\d\.\d\d\d): workload ([0-9a-f-]{36}): start with sim", line)
        if m and m.group(2) in posted and m.group(2) not in started:
            t = time.mktime(time.strptime(day + m.group(1)[:8], "%Y-%m-%d %H:%M:%S"))
            started[m.group(2)] = t + int(m.group(1)[9:]) / 1000 - posted[m.group(2)]
    to_agent = [v * 1000 for v in started.values()]
    to_running = [v * 1000 for v in running.values()]
    print(f"| measure ({N} launches, controller interval {INTERVAL_MS} ms) | median | p99 |")
    print("| --- | ---: | ---: |")
    print(f"| POST -> the agent starts it (desired state received) | "
          f"{statistics.median(to_agent):.0f} ms | {pct(to_agent, 99):.0f} ms |")
    print(f"| POST -> `running` in the API | {statistics.median(to_running):.0f} ms | "
          f"{pct(to_running, 99):.0f} ms |")
    print(f"| ratio median(POST -> running) / interval | "
          f"{statistics.median(to_running) / INTERVAL_MS:.2f} | |")
