#!/usr/bin/env python3
"""Docker notebooks: launch -> running through the daemon's docker driver,
next to the same container started by hand with `docker run`, in the same
run, on the same private Docker Engine.

Usage: python3 bench/docker-bench.py build/daemon/einsora-daemon

Needs root (a private dockerd, as tests/einsora-test-docker.c starts one)
and Debian's docker.io and jupyter-notebook (the image is made from this
machine's Jupyter by tests/docker/make-jupyter-image.sh, cached as the
tests cache it). Rounds alternate einsora and by hand, the order swapped
each round. Settings: BENCH_LAUNCHES (5)."""
import datetime
import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

LAUNCHES = int(os.environ.get("BENCH_LAUNCHES", "5"))
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = "quay.io/jupyter/minimal-notebook:python-3.12"  # the catalog's jupyter-notebook
POLL = 0.005


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=5):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def unix_get(path, url, headers=None, timeout=5):
    """(status, body) of a GET on a Unix socket; (0, None) when nothing answers."""
    try:
        c = UnixConnection(path, timeout)
        c.request("GET", url, headers=headers or {})
        answer = c.getresponse()
        body = answer.read()
        c.close()
        return answer.status, body
    except (OSError, http.client.HTTPException):
        return 0, None


def jupyter_ready(sock, token):
    return unix_get(sock, "/api/status", {"Authorization": "token " + token}, 1)[0] == 200


def wait_until(predicate, limit=120, what="it"):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(POLL)
    raise SystemExit(f"timed out waiting for {what}")


def api(method, url, token, body=None):
    data = json.dumps(body).encode() if body else None
    req = urllib.request.Request(url, data, {"Authorization": "Bearer " + token,
                                             "Content-Type": "application/json"}, method=method)
    with urllib.request.urlopen(req) as answer:
        text = answer.read()
        return json.loads(text) if text else None


def inspect(docker_sock, name):
    """(the Engine's start time in epoch seconds, the container's environment), or None."""
    status, body = unix_get(docker_sock, f"/v1.41/containers/{name}/json")
    if status != 200:
        return None
    container = json.loads(body)
    # RFC 3339 with up to 9 digits (Go trims trailing zeros); Python reads 6.
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?Z$", container["State"]["StartedAt"])
    started = datetime.datetime.fromisoformat(m.group(1) + "+00:00").timestamp()
    return started + float(m.group(2) or 0), container["Config"]["Env"]


def jupyter_tar():
    """The tests' cached image tar (tests/einsora-test-docker.c), made once per script version."""
    script = os.path.join(SOURCE, "tests/docker/make-jupyter-image.sh")
    digest = hashlib.sha256(open(script, "rb").read()).hexdigest()
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "einsora", "docker-test")
    os.makedirs(cache, mode=0o700, exist_ok=True)
    tar = os.path.join(cache, f"jupyter-{digest[:16]}.tar")
    if not os.path.exists(tar):
        print(f"making the notebook image from this machine's Jupyter (once): {tar}",
              file=sys.stderr, flush=True)
        with open(tar + ".part", "wb") as out:
            subprocess.run(["bash", script], stdout=out, check=True)
        os.rename(tar + ".part", tar)
    return tar


if os.geteuid() != 0:
    print("docker-bench: a private dockerd needs root", file=sys.stderr)
    sys.exit(2)
daemon = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SOURCE, "build/daemon/einsora-daemon")
dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
if not shutil.which("docker") or not os.access(dockerd, os.X_OK):
    raise SystemExit("docker-bench: Debian's docker.io isn't installed")

# Short: the containers' shims put sockets under the exec root.
root = tempfile.mkdtemp(prefix="edb-", dir="/tmp")
os.chmod(root, 0o700)
docker_sock = os.path.join(root, "docker.sock")
host = "unix://" + docker_sock
data, run = os.path.join(root, "data"), os.path.join(root, "run")
engine = daemon_proc = None
rows = {k: [] for k in ("running", "socket", "started", "hand", "hand_started")}
try:
    engine_log = open(os.path.join(root, "dockerd.log"), "w")
    # The tests' private Engine: no bridge, no iptables, its own everything.
    engine = subprocess.Popen(
        [dockerd, f"-H={host}", f"--data-root={root}/root", f"--exec-root={root}/exec",
         f"--pidfile={root}/docker.pid"] + "--iptables=false --ip6tables=false --ip-forward=false "
        "--ip-masq=false --bridge=none --storage-driver=overlay2".split(),
        stdout=engine_log, stderr=engine_log)
    wait_until(lambda: unix_get(docker_sock, "/_ping")[0] == 200, 30, "the private dockerd")
    subprocess.run(["docker", "-H", host, "import", jupyter_tar(), IMAGE], check=True,
                   stdout=subprocess.DEVNULL)

    with socket.create_server(("127.0.0.1", 0)) as a, socket.create_server(("127.0.0.1", 0)) as b:
        port_n, access_n = a.getsockname()[1], b.getsockname()[1]
    env = dict(os.environ, EINSORA_DRIVERS="docker", EINSORA_DOCKER_HOST=host,
               EINSORA_CONTROLLER_INTERVAL="200ms", EINSORA_AGENT_RUN_DIR=run)
    daemon_log = open(os.path.join(root, "daemon.log"), "w")
    daemon_proc = subprocess.Popen([daemon, "--data-dir", data, "--listen",
                                    f"127.0.0.1:{port_n}", "--access-listen",
                                    f"127.0.0.1:{access_n}", "--agent-run-dir", run],
                                   env=env, stdout=daemon_log, stderr=daemon_log)
    base = f"http://127.0.0.1:{port_n}"

    def up():
        try:
            urllib.request.urlopen(base + "/readyz")
            return os.path.exists(os.path.join(data, "token"))
        except Exception:
            return False
    wait_until(up, 30, "the daemon")
    token = open(os.path.join(data, "token")).read().strip()
    # The driver is offered once its probe of the Engine passes.
    wait_until(lambda: any("docker" in m.get("drivers", [])
                           for m in api("GET", base + "/v1/machines", token)["machines"]),
               30, "the docker driver")

    def through_einsora(i):
        t0, wall0 = time.perf_counter(), time.time()
        w = api("POST", base + "/v1/workloads", token,
                {"kind": "notebook", "gpu_class": "cpu-1c-2g", "image": "jupyter-notebook",
                 "name": f"bench-{i}"})
        sock = os.path.join(run, "docker", w["id"], "notebook.sock")
        running = answered = jupyter_token = None
        while running is None or answered is None:
            if time.perf_counter() - t0 > 180:
                raise SystemExit(f"workload {w['id']} isn't running after 180 s")
            if running is None:
                state = api("GET", f"{base}/v1/workloads/{w['id']}", token)["state"]
                if state == "running":
                    running = time.perf_counter() - t0
                elif state not in ("pending", "queued", "provisioning"):
                    raise SystemExit(f"workload {w['id']} is {state}")
            if jupyter_token is None and os.path.exists(sock):
                # The token lives in the container's environment; once its
                # socket exists the container does too.
                seen = inspect(docker_sock, f"einsora-{w['id']}")
                if seen is not None:
                    rows["started"].append(seen[0] - wall0)
                    jupyter_token = [e.split("=", 1)[1] for e in seen[1]
                                     if e.startswith("JUPYTER_TOKEN=")][0]
            if answered is None and jupyter_token and jupyter_ready(sock, jupyter_token):
                answered = time.perf_counter() - t0
            time.sleep(POLL)
        api("DELETE", f"{base}/v1/workloads/{w['id']}", token)
        wait_until(lambda: api("GET", f"{base}/v1/workloads/{w['id']}?include_deleted=true",
                               token)["state"] == "deleted", 60, "the delete")
        wait_until(lambda: inspect(docker_sock, f"einsora-{w['id']}") is None, 60,
                   "the container to go")
        rows["running"].append(running)
        rows["socket"].append(answered)

    def by_hand(i):
        # What the driver's recipe makes (drivers/docker/einsora-docker-recipe.c), by hand.
        name, jupyter_token = f"bench-hand-{i}", secrets.token_hex(24)
        home, rundir = f"{root}/hand-{i}/data", f"{root}/hand-{i}/run"
        for d in (home, rundir):
            os.makedirs(d, mode=0o700)
            os.chown(d, 1000, 100)
        sock = os.path.join(rundir, "notebook.sock")
        t0, wall0 = time.perf_counter(), time.time()
        cli = subprocess.Popen(
            ["docker", "-H", host, "run", "-d", "--name", name] +
            """--network none --user 1000:100 --memory 2g --memory-swap 2g --cpus 1
            --pids-limit 1024 --read-only --tmpfs /tmp:rw,nosuid,nodev,size=512m --cap-drop ALL
            --security-opt no-new-privileges --init --ipc private --log-opt max-size=10m
            --log-opt max-file=2 -w /home/jovyan -e HOME=/home/jovyan
            -e JUPYTER_RUNTIME_DIR=/tmp/jupyter-runtime -e PYTHONUNBUFFERED=1 -e LANG=C.UTF-8
            """.split() +
            ["-v", f"{home}:/home/jovyan", "-v", f"{rundir}:/run/einsora",
             "-e", "JUPYTER_TOKEN=" + jupyter_token, "--entrypoint", "jupyter-notebook", IMAGE,
             "--no-browser", "--sock=/run/einsora/notebook.sock", "--sock-mode=0600",
             "--KernelManager.transport=ipc", "--notebook-dir=/home/jovyan"],
            stdout=subprocess.DEVNULL)

        def ready():
            if cli.poll() not in (None, 0):
                raise SystemExit(f"docker run failed: {cli.returncode}")
            return jupyter_ready(sock, jupyter_token)
        wait_until(ready, 180, "the container by hand")
        rows["hand"].append(time.perf_counter() - t0)
        cli.wait()
        rows["hand_started"].append(inspect(docker_sock, name)[0] - wall0)
        subprocess.run(["docker", "-H", host, "rm", "-f", name], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.rmtree(f"{root}/hand-{i}")

    for i in range(LAUNCHES):
        for side in ((through_einsora, by_hand) if i % 2 == 0 else (by_hand, through_einsora)):
            side(i)
        print(f"round {i + 1}: einsora running {rows['running'][-1] * 1000:.0f} ms, socket "
              f"{rows['socket'][-1] * 1000:.0f} ms; by hand {rows['hand'][-1] * 1000:.0f} ms",
              file=sys.stderr, flush=True)
finally:
    if daemon_proc is not None:
        daemon_proc.terminate()
        daemon_proc.wait()
    if engine is not None:
        # Every container it ran goes with it (they'd outlive it).
        ids = subprocess.run(["docker", "-H", host, "ps", "-aq"], capture_output=True,
                             text=True).stdout.split()
        if ids:
            subprocess.run(["docker", "-H", host, "rm", "-f", *ids], capture_output=True)
        engine.send_signal(signal.SIGTERM)
        engine.wait()
    # Its overlay mounts are gone with it; what's left is files.
    shutil.rmtree(root, ignore_errors=True)

m = statistics.median
# What comes after the server answers: the driver's own readiness check, the report, the API.
rows["report"] = [r - s for r, s in zip(rows["running"], rows["socket"])]
ms = lambda s: f"{s * 1000:.0f} ms"
# Round 1 is the Engine's first containers; einsora goes first in it.
print(f"| docker notebook, cpu-1c-2g, {LAUNCHES} rounds each | round 1 (cold, einsora first) |"
      " median | min | max |")
print("| --- | ---: | ---: | ---: | ---: |")
for key, label in (("started", "einsora: POST /v1/workloads -> container started (StartedAt)"),
                   ("hand_started", "by hand: `docker run` -> container started"),
                   ("running", "einsora: POST /v1/workloads -> running in the API"),
                   ("socket", "einsora: POST /v1/workloads -> /api/status 200 on its socket"),
                   ("hand", "by hand: `docker run` -> /api/status 200 on its socket"),
                   ("report", "einsora: socket answers -> running in the API")):
    r = rows[key]
    print(f"| {label} | {ms(r[0])} | {ms(m(r))} | {ms(min(r))} | {ms(max(r))} |")
for key, label in (("running", "ratio: einsora running / by hand"),
                   ("socket", "ratio: einsora socket / by hand")):
    print(f"| {label} | {rows[key][0] / rows['hand'][0]:.2f} | "
          f"{m(rows[key]) / m(rows['hand']):.2f} | | |")
