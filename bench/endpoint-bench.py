#!/usr/bin/env python3
"""Endpoints: what the access proxy costs a streamed chat answer, and how
long an endpoint takes to be ready, each next to its peer in the same run.

1. Tokens per second and time to the first token of a streamed
   /v1/chat/completions answer through the proxy (the endpoint's base URL,
   an API token) against the same llama-server called directly on its Unix
   socket with its own key, alternating request by request.
2. Launch -> ready: POST /v1/workloads to `running` in the API for an
   endpoint, against the same llama-server started by hand (no sandbox,
   no daemon) from exec to GET /health 200 on its socket.

The model is the tiny random-weight one tests make (about 17 MB; every
answer exactly MAX_TOKENS long, its special and byte tokens banned). A
real model generates far slower, so the proxy's share of each token is
smaller there than here.

Usage: EINSORA_LLAMA_DIR=$(bash packaging/dev/llama-server.sh) \
       python3 bench/endpoint-bench.py [DAEMON]   (default build/daemon/einsora-daemon)
Settings: BENCH_ROUNDS (20), BENCH_MAX_TOKENS (200), BENCH_LAUNCHES (5)."""
import configparser
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "20"))
MAX_TOKENS = int(os.environ.get("BENCH_MAX_TOKENS", "200"))
LAUNCHES = int(os.environ.get("BENCH_LAUNCHES", "5"))
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
daemon = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SOURCE, "build/daemon/einsora-daemon")
llama_dir = os.environ["EINSORA_LLAMA_DIR"]
llama = os.path.join(llama_dir, "bin", "llama-server")
BAN = {str(t): -100 for t in range(0, 259)}


def log(message):
    print(message, file=sys.stderr, flush=True)


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def api(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req) as answer:
        text = answer.read()
        return json.loads(text) if text else None


def stream(connection, path, key):
    """One streamed answer: (seconds to the first piece, tokens per second after it)."""
    body = json.dumps({"messages": [{"role": "user", "content": "Tell me a story"}],
                       "max_tokens": MAX_TOKENS, "stream": True,
                       "stream_options": {"include_usage": True},
                       "logit_bias": BAN}).encode()
    t0 = time.perf_counter()
    connection.request("POST", path, body=body,
                       headers={"Authorization": "Bearer " + key,
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200, response.status
    first = last = None
    tokens = 0
    while True:
        line = response.readline()
        if not line:
            break
        if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if any(c.get("delta", {}).get("content") for c in chunk.get("choices", [])):
            now = time.perf_counter()
            first = first or now
            last = now
    connection.close()
    assert tokens == MAX_TOKENS, tokens
    return first - t0, (tokens - 1) / (last - first)


def wait_until(predicate, limit=120):
    deadline = time.time() + limit
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.002)
    raise SystemExit("timed out")


def health(path):
    try:
        c = UnixConnection(path, timeout=1)
        c.request("GET", "/health")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


with tempfile.TemporaryDirectory() as root:
    os.chmod(root, 0o700)
    data = os.path.join(root, "data")
    run = os.path.join(root, "run")
    model = os.path.join(root, "tiny.gguf")
    subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "tests/models/make-tiny-model.py"),
                    os.path.join(llama_dir, "share"), model], check=True)
    port, access = free_port(), free_port()
    env = dict(os.environ, EINSORA_DRIVERS="linux-native", EINSORA_LLAMA_SERVER=llama,
               EINSORA_CONTROLLER_INTERVAL="5s")
    daemon_log = open(os.path.join(root, "daemon.log"), "w")
    proc = subprocess.Popen([daemon, "--data-dir", data, "--listen", f"127.0.0.1:{port}",
                             "--access-listen", f"127.0.0.1:{access}", "--agent-run-dir", run],
                            env=env, stderr=daemon_log, stdout=daemon_log)
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        def up():
            try:
                urllib.request.urlopen(base + "/readyz")
                return os.path.exists(os.path.join(data, "token"))
            except Exception:
                return False
        wait_until(up)
        token = open(os.path.join(data, "token")).read().strip()
        imported = api("POST", base + "/v1/model-store", token, {"name": "tiny", "source": model})
        wait_until(lambda: api("GET", f"{base}/v1/model-store/imports/{imported['id']}",
                               token)["state"] == "done")
        # The driver is offered once its probe passes.
        wait_until(lambda: any("linux-native" in m.get("drivers", [])
                               for m in api("GET", base + "/v1/machines", token)["machines"]))

        # 2. Launch -> ready, first, on a quiet machine.
        through_api, by_hand = [], []
        for i in range(LAUNCHES):
            t0 = time.perf_counter()
            w = api("POST", base + "/v1/workloads", token,
                    {"kind": "endpoint", "gpu_class": "cpu-2c-4g", "model": "tiny",
                     "name": f"launch-{i}"})
            wait_until(lambda: api("GET", f"{base}/v1/workloads/{w['id']}",
                                   token)["state"] == "running")
            through_api.append(time.perf_counter() - t0)
            api("DELETE", f"{base}/v1/workloads/{w['id']}", token)
            wait_until(lambda: not os.path.exists(os.path.join(run, w["id"])))

            sock = os.path.join(root, f"hand-{i}.sock")
            t0 = time.perf_counter()
            hand = subprocess.Popen([llama, "--model", model, "--alias", "tiny", "--host", sock,
                                     "--threads", "2", "--threads-batch", "2", "--ctx-size",
                                     "4096", "--parallel", "1", "--no-webui", "--offline"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_until(lambda: health(sock))
            by_hand.append(time.perf_counter() - t0)
            hand.terminate()
            hand.wait()
        log(f"launch -> ready: {through_api} vs {by_hand}")

        # 1. Streams through the proxy and direct, alternating.
        w = api("POST", base + "/v1/workloads", token,
                {"kind": "endpoint", "gpu_class": "cpu-2c-4g", "model": "tiny", "name": "bench"})
        wait_until(lambda: api("GET", f"{base}/v1/workloads/{w['id']}", token)["state"] == "running")
        grant = api("POST", f"{base}/v1/workloads/{w['id']}/access", token)
        url = urllib.parse.urlsplit(grant["base_url"])
        socket_path = os.path.join(run, w["id"], "endpoint.sock")
        state = configparser.ConfigParser(interpolation=None)
        state.read(os.path.join(run, w["id"] + ".state"))
        pid = state.getint("process", "pid")
        environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        key = [e for e in environ if e.startswith(b"LLAMA_API_KEY=")][0].split(b"=", 1)[1].decode()
        proxy_ttft, proxy_rate, direct_ttft, direct_rate = [], [], [], []
        stream(UnixConnection(socket_path), "/v1/chat/completions", key)  # warm-up
        for i in range(ROUNDS):
            order = [0, 1] if i % 2 == 0 else [1, 0]
            for which in order:
                if which == 0:
                    ttft, rate = stream(http.client.HTTPConnection(url.hostname, url.port),
                                        url.path + "/chat/completions", token)
                    proxy_ttft.append(ttft)
                    proxy_rate.append(rate)
                else:
                    ttft, rate = stream(UnixConnection(socket_path), "/v1/chat/completions", key)
                    direct_ttft.append(ttft)
                    direct_rate.append(rate)
        # Where the first token's extra time goes: one small request each way,
        # and one the proxy answers itself (a route it doesn't serve: the
        # token checked and the path read, no worker).
        def small(connection, path, key):
            t0 = time.perf_counter()
            connection.request("GET", path, headers={"Authorization": "Bearer " + key})
            response = connection.getresponse()
            response.read()
            connection.close()
            return time.perf_counter() - t0, response.status
        models_proxy, models_direct, refused = [], [], []
        for i in range(ROUNDS * 4):
            t, status = small(http.client.HTTPConnection(url.hostname, url.port),
                              url.path + "/models", token)
            assert status == 200, status
            models_proxy.append(t)
            t, status = small(UnixConnection(socket_path), "/v1/models", key)
            assert status == 200, status
            models_direct.append(t)
            t, status = small(http.client.HTTPConnection(url.hostname, url.port),
                              url.path + "/props", token)
            assert status == 404, status
            refused.append(t)
    finally:
        proc.terminate()
        proc.wait()
        daemon_log.close()

    m = statistics.median
    print(f"| endpoint, tiny model, {MAX_TOKENS} tokens, {ROUNDS} rounds each | through the proxy"
          f" | direct on its socket | ratio / difference | target |")
    print("| --- | ---: | ---: | ---: | --- |")
    print(f"| tokens per second (median) | {m(proxy_rate):.0f} | {m(direct_rate):.0f} | "
          f"{m(proxy_rate) / m(direct_rate):.3f}x | >= 0.95x |")
    print(f"| time to first token (median) | {m(proxy_ttft) * 1000:.2f} ms | "
          f"{m(direct_ttft) * 1000:.2f} ms | +{(m(proxy_ttft) - m(direct_ttft)) * 1000:.2f} ms |"
          f" <= 2 ms |")
    print(f"| GET /v1/models, a new connection each (median) | {m(models_proxy) * 1000:.2f} ms | "
          f"{m(models_direct) * 1000:.2f} ms | +{(m(models_proxy) - m(models_direct)) * 1000:.2f} ms"
          f" | |")
    print(f"| a route the proxy refuses itself (token checked, 404) | "
          f"{m(refused) * 1000:.2f} ms | | | |")
    print()
    print(f"| launch -> ready, {LAUNCHES} each | median | min | max |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| POST /v1/workloads -> running (daemon, sandbox) | {m(through_api) * 1000:.0f} ms | "
          f"{min(through_api) * 1000:.0f} ms | {max(through_api) * 1000:.0f} ms |")
    print(f"| llama-server by hand: exec -> /health 200 | {m(by_hand) * 1000:.0f} ms | "
          f"{min(by_hand) * 1000:.0f} ms | {max(by_hand) * 1000:.0f} ms |")
    print(f"| ratio of medians | {m(through_api) / m(by_hand):.2f} | | |")
