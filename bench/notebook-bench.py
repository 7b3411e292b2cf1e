#!/usr/bin/env python3
"""Real notebooks with the linux-native driver (Debian's Jupyter in
bubblewrap), with the real einsora-daemon on loopback.

1. Launch to running: POST /v1/workloads for a CPU notebook until the API
   says running, median of 5 (each deleted before the next). The peer, in
   the same run, is the same sandbox started by hand: the exact bwrap
   command line einsora used (read from /proc), spawned directly, until its
   socket answers /api/status. The difference is what einsora adds
   (admission, the controller's interval, the agent's sync).
2. Memory: the daemon's resident memory (VmRSS) idle, then with N running
   notebooks (as many cpu-1c-2g as the machine's CPUs allow); the added
   memory per notebook is the difference over N. Beside it, for scale, the
   resident memory of one notebook's own processes (bwrap, Jupyter).

Usage: bench/notebook-bench.py [DAEMON] (default build/daemon/einsora-daemon)."""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROUNDS = 5
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
    argv = None
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

        launch = []
        for i in range(ROUNDS):
            t0 = time.time()
            w = request("POST", base + "/v1/workloads", token,
                        {"kind": "notebook", "name": f"bench-{i}", "gpu_class": CLASS,
                         "image": "jupyter-linux"})
            wait_state(base, token, w["id"], "running")
            launch.append(time.time() - t0)
            if argv is None:
                pid = state_pid(run_dir, w["id"])
                argv = open(f"/proc/{pid}/cmdline").read().split("\0")[:-1]
                sandbox_env = open(f"/proc/{pid}/environ").read().split("\0")[:-1]
                sock = [a for a in argv if a.startswith("--sock=")][0][len("--sock="):]
            request("DELETE", f"{base}/v1/workloads/{w['id']}", token)
            wait_state(base, token, w["id"], "deleted")

        # The peer: the same sandbox, by hand, on the same data and socket
        # paths (the workload's directories are recreated for it).
        peer = []
        data_dir = [a for a in argv if a.startswith("--notebook-dir=")][0].split("=", 1)[1]
        peer_token = "bench" * 8
        peer_env = {k: v for k, v in (e.split("=", 1) for e in sandbox_env)}
        peer_env["JUPYTER_TOKEN"] = peer_token
        for i in range(ROUNDS):
            os.makedirs(data_dir, mode=0o700, exist_ok=True)
            os.makedirs(os.path.dirname(sock), mode=0o700, exist_ok=True)
            if os.path.exists(sock):
                os.unlink(sock)
            t0 = time.time()
            p = subprocess.Popen(argv, env=peer_env, cwd=data_dir, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            while not socket_answers(sock, peer_token):
                time.sleep(0.01)
            peer.append(time.time() - t0)
            os.killpg(p.pid, 15)
            p.wait()

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

med = statistics.median(launch)
peer_med = statistics.median(peer)
print(f"launch to running, CPU notebook ({CLASS}), {ROUNDS} rounds, controller interval "
      f"{INTERVAL_MS} ms:")
print(f"  einsora (POST -> running in the API): median {med * 1000:.0f} ms "
      f"(all: {', '.join(f'{x * 1000:.0f}' for x in launch)})")
print(f"  peer (same bwrap command by hand -> socket answers): median {peer_med * 1000:.0f} ms "
      f"(all: {', '.join(f'{x * 1000:.0f}' for x in peer)})")
print(f"  ratio einsora/peer: {med / peer_med:.2f}; einsora adds {(med - peer_med) * 1000:.0f} ms")
print(f"daemon memory: idle {idle / 1024:.1f} MiB, with {n} running notebooks "
      f"{loaded / 1024:.1f} MiB: {(loaded - idle) / n:.0f} KiB added per notebook")
print(f"  for scale, one notebook's own processes (bwrap + Jupyter, no kernel): "
      f"{notebook / 1024:.1f} MiB")
