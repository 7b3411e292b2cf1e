#!/usr/bin/env python3
"""Real notebooks with the linux-native driver (Debian's Jupyter in
bubblewrap), with the real einsora-daemon on loopback.

1. Launch to running: POST /v1/workloads for a CPU notebook until the API
   says running (its event feed, followed), median of 7 (each deleted before the next). The peer, in
   the same run and taking turns with it, is the same sandbox started by
   hand: the exact bwrap command line einsora used (read from /proc),
   spawned directly, until its socket answers /api/status. The difference
   is what einsora adds (admission, the agent's sync, readiness, the
   controller seeing the report).
2. Memory: the daemon's resident memory (VmRSS) idle, then with N running
   notebooks (as many cpu-1c-2g as the machine's CPUs allow); the added
   memory per notebook is the difference over N. Beside it, for scale, the
   resident memory of one notebook's own processes (bwrap, Jupyter).

Usage: bench/notebook-bench.py [DAEMON] (default build/daemon/einsora-daemon)."""
import http.client
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

ROUNDS = 7
INTERVAL_MS = 200
CLASS = "cpu-1c-2g"
daemon = sys.argv[1] if len(sys.argv) > 1 else "build/daemon/einsora-daemon"


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


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=2)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(2)
        self.sock.connect(self.path)


def socket_answers(path, token):
    try:
        conn = UnixConnection(path)
        conn.request("GET", "/api/status", headers={"Authorization": "token " + token})
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except OSError:
        return False


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def tree(pid):
    """pid and every live process under it."""
    found = {pid}
    grew = True
    while grew:
        grew = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in found:
                continue
            try:
                stat = open(f"/proc/{name}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if fields[0] != "Z" and int(fields[1]) in found:
                found.add(int(name))
                grew = True
    return found


def state_pid(run_dir, wid):
    with open(os.path.join(run_dir, wid + ".state")) as f:
        for line in f:
            if line.startswith("pid="):
                return int(line.split("=")[1])
    raise RuntimeError("no pid")


def wait_state(base, token, wid, state, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        w = request("GET", f"{base}/v1/workloads/{wid}?include_deleted=true", token)
        if w["state"] == state:
            return
        time.sleep(0.01)
    raise RuntimeError(f"{wid} never reached {state}")


with tempfile.TemporaryDirectory(prefix="einsora-bench-") as root:
    os.chmod(root, 0o700)
    data = os.path.join(root, "data")
    run_dir = os.path.join(root, "run")
    port = free_port()
    env = dict(os.environ, G_MESSAGES_DEBUG="", EINSORA_AGENT_RUN_DIR=run_dir,
               EINSORA_CONTROLLER_INTERVAL=f"{INTERVAL_MS}ms")
    env.pop("EINSORA_DRIVERS", None)
    log = open(os.path.join(root, "daemon.log"), "w")
    proc = subprocess.Popen([daemon, "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
                            env=env, stderr=log, stdout=log)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(400):
            try:
                token = open(os.path.join(data, "token")).read().strip()
                urllib.request.urlopen(base + "/readyz")
                break
            except Exception:
                time.sleep(0.05)
        time.sleep(1)  # past settling
        machine = request("GET", base + "/v1/machines", token)["machines"][0]

        posted = {}  # workload ID -> (POST sent, running seen), wall clock
        bound = {}  # workload ID -> its socket bound, wall clock

        def launch_once(i):
            # The feed says when it is running: polling the API every 10 ms
            # would take CPU from Jupyter's own start on a 2-core machine.
            feed = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            feed.request("GET", "/v1/events?follow=true",
                         headers={"Authorization": "Bearer " + token})
            stream = feed.getresponse()
            assert stream.status == 200
            t0 = time.time()
            w = request("POST", base + "/v1/workloads", token,
                        {"kind": "notebook", "name": f"bench-{i}", "gpu_class": CLASS,
                         "image": "jupyter-linux"})
            while True:
                line = stream.fp.readline().decode()
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[len("data: "):])
                if event.get("workload_id") == w["id"] and event.get("to_state") == "running":
                    break
                if event.get("workload_id") == w["id"] and event.get("to_state") == "failed":
                    raise RuntimeError(f"{w['id']} failed: {event.get('reason')}")
            elapsed = time.time() - t0
            feed.close()
            posted[w["id"]] = (t0, t0 + elapsed)
            pid = state_pid(run_dir, w["id"])
            # When the server bound its socket (its inode's change time).
            bound[w["id"]] = os.stat(os.path.join(run_dir, w["id"], "notebook.sock")).st_ctime
            cmdline = open(f"/proc/{pid}/cmdline").read().split("\0")[:-1]
            environ = open(f"/proc/{pid}/environ").read().split("\0")[:-1]
            request("DELETE", f"{base}/v1/workloads/{w['id']}", token)
            wait_state(base, token, w["id"], "deleted")
            return elapsed, cmdline, environ

        # The peer: the same sandbox, by hand, on the same data and socket
        # paths (the workload's directories are recreated for it). A first
        # launch (not counted) gives its command line; then the two take
        # turns, so both see the same load on a shared machine.
        _, argv, sandbox_env = launch_once(0)
        sock = [a for a in argv if a.startswith("--sock=")][0][len("--sock="):]
        data_dir = [a for a in argv if a.startswith("--notebook-dir=")][0].split("=", 1)[1]
        peer_token = "bench" * 8
        peer_env = {k: v for k, v in (e.split("=", 1) for e in sandbox_env)}
        peer_env["JUPYTER_TOKEN"] = peer_token

        def peer_once():
            os.makedirs(data_dir, mode=0o700, exist_ok=True)
            os.makedirs(os.path.dirname(sock), mode=0o700, exist_ok=True)
            if os.path.exists(sock):
                os.unlink(sock)
            t0 = time.time()
            p = subprocess.Popen(argv, env=peer_env, cwd=data_dir, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            while not socket_answers(sock, peer_token):
                time.sleep(0.01)
            elapsed = time.time() - t0
            os.killpg(p.pid, 15)
            p.wait()
            return elapsed

        launch, peer = [], []
        posted.clear()
        for i in range(ROUNDS):
            peer.append(peer_once())
            launch.append(launch_once(i + 1)[0])

        # Memory with as many notebooks running as the CPUs hold.
        n = max(1, min(4, machine["cpus"]))
        idle = rss_kib(proc.pid)
        ids = []
        for i in range(n):
            w = request("POST", base + "/v1/workloads", token,
                        {"kind": "notebook", "name": f"mem-{i}", "gpu_class": CLASS,
                         "image": "jupyter-linux"})
            ids.append(w["id"])
        for wid in ids:
            wait_state(base, token, wid, "running")
        time.sleep(3)
        loaded = rss_kib(proc.pid)
        notebook = sum(rss_kib(p) for p in tree(state_pid(run_dir, ids[0])))
        for wid in ids:
            request("DELETE", f"{base}/v1/workloads/{wid}", token)
        for wid in ids:
            wait_state(base, token, wid, "deleted")
    finally:
        proc.terminate()
        proc.wait()
        log.close()
        log_text = open(os.path.join(root, "daemon.log")).read()

# Einsora's own part, from the daemon's log (its lines carry the local
# wall time to the millisecond): POST -> its sandbox spawned, and the
# server answering its socket (as the driver saw it) -> running seen in
# the feed. Jupyter's own start, between the two, is what makes the
# totals noisy on a shared machine; these two are not.
def log_time(stamp, near):
    day = time.strftime("%Y-%m-%d ", time.localtime(near))
    whole = time.mktime(time.strptime(day + stamp[:8], "%Y-%m-%d %H:%M:%S"))
    return whole + int(stamp[9:12]) / 1000


spawned, answered = {}, {}
for line in log_text.splitlines():
    m = re.search(r"(\d\d:\d\d:\d\d\.\d\d\d): ([0-9a-f-]{36}): started, PID", line)
    if m and m.group(2) in posted:
        spawned[m.group(2)] = log_time(m.group(1), posted[m.group(2)][0])
    m = re.search(r"(\d\d:\d\d:\d\d\.\d\d\d): notebook ([0-9a-f-]{36}): its server answers", line)
    if m and m.group(2) in posted:
        answered[m.group(2)] = log_time(m.group(1), posted[m.group(2)][0])
to_spawn = [(spawned[w] - posted[w][0]) * 1000 for w in posted if w in spawned]
to_running = [(posted[w][1] - answered[w]) * 1000 for w in posted if w in answered]
seen_after_bind = [(answered[w] - bound[w]) * 1000 for w in posted if w in answered and w in bound]
in_sandbox = [(answered[w] - spawned[w]) * 1000 for w in posted if w in answered and w in spawned]

med = statistics.median(launch)
peer_med = statistics.median(peer)
print(f"launch to running, CPU notebook ({CLASS}), {ROUNDS} rounds, controller interval "
      f"{INTERVAL_MS} ms:")
print(f"  einsora (POST -> running in the API): median {med * 1000:.0f} ms "
      f"(all: {', '.join(f'{x * 1000:.0f}' for x in launch)})")
print(f"  peer (same bwrap command by hand -> socket answers): median {peer_med * 1000:.0f} ms "
      f"(all: {', '.join(f'{x * 1000:.0f}' for x in peer)})")
print(f"  ratio einsora/peer: {med / peer_med:.2f}; einsora adds {(med - peer_med) * 1000:.0f} ms")
if to_spawn and to_running:
    print(f"  einsora's own part: POST -> sandbox spawned median {statistics.median(to_spawn):.0f} ms; "
          f"server answers -> running in the feed median {statistics.median(to_running):.0f} ms "
          f"(the wait for Jupyter between them is the peer's)")
    print(f"  of which socket bound -> seen answering (Jupyter's last step and the readiness "
          f"check): median {statistics.median(seen_after_bind):.0f} ms "
          f"(all: {', '.join(f'{x:.0f}' for x in seen_after_bind)})")
    print(f"  between them, spawned -> its server seen answering: median "
          f"{statistics.median(in_sandbox):.0f} ms (all: {', '.join(f'{x:.0f}' for x in in_sandbox)})")
print(f"daemon memory: idle {idle / 1024:.1f} MiB, with {n} running notebooks "
      f"{loaded / 1024:.1f} MiB: {(loaded - idle) / n:.0f} KiB added per notebook")
print(f"  for scale, one notebook's own processes (bwrap + Jupyter, no kernel): "
      f"{notebook / 1024:.1f} MiB")
