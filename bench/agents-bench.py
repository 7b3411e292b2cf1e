#!/usr/bin/env python3
"""Networked agents at scale (issue 20): simulated agents long-polling one
real einsora-daemon over mutual TLS (bench/einsora-agents-load.c), at
BENCH_STEPS agents (500,1000,2000,5000). At each step: the ramp (enrolment
through the API, handshake, first sync), the daemon's VmRSS with every
agent holding a long poll, its CPU over BENCH_WINDOW seconds (20: each
long poll ends after 20 s and is sent again, so the window answers about
one sync per agent) and that CPU per sync answered; then one workload per
new machine (each offers one CPU), and from each workload's placement
event in the store to its agent's answer: wake-to-answer p50/p99. With
BENCH_TUNNELS=1 each agent also holds the idle tunnel stream einsora-daemon
agent keeps while its workloads are being opened (docs/adr/0059), a second
TLS connection: every agent warm at once, the worst case.

The peer in the same run is nginx (one worker) holding as many idle TLS
keep-alive connections (two an agent with tunnels), with the daemon's own certificate: what the same
connections cost a server built for holding them; and the daemon's own row
at 0 agents. One round, bounded by BENCH_TIME (below); RSS and the
per-sync CPU are fitted linearly against the number of agents and
extrapolated to BENCH_EXTRAPOLATE (10,000).

Usage: bench/agents-bench.py [DAEMON] (without one, build-bench/ is set up
as a release build and built). Everything listens on and connects to
127.0.0.1 (the agents from 127.0.0.2 and up), in a fresh temporary
directory. The open-file limit is raised to 65,536 where the hard limit
allows (each TLS connection costs the daemon 3 descriptors). BENCH_TIME (540 s) bounds the run: a step
whose ramp would pass it measures the agents it has, and later steps are
left out. Progress on standard error, the table on standard output. Docs: docs/bench.md."""
import json
import os
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

STEPS = os.environ.get("BENCH_STEPS", "500,1000,2000,5000")
WINDOW_S = int(os.environ.get("BENCH_WINDOW", "20"))
EXTRAPOLATE = int(os.environ.get("BENCH_EXTRAPOLATE", "10000"))
PEER = os.environ.get("BENCH_PEER", "1") != "0"
# The whole run's budget: no step ramps past it less what measuring one
# takes; a step cut short measures the agents it has.
TIME_S = int(os.environ.get("BENCH_TIME", "540"))
# Each agent also holds an idle tunnel stream (docs/adr/0059), as
# einsora-daemon agent does while its workloads are being opened (warm):
# two TLS connections an agent. Off by default: an agent opens streams
# only when asked.
TUNNELS = os.environ.get("BENCH_TUNNELS", "0") != "0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build-bench")
CLASS = {"name": "bench-1c-64m", "cpus": 1, "memory_mib": 64, "devices": 0,
         "accelerator": "cpu"}
NOFILE = 65536


def say(text):
    print(f"agents-bench: {text}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def fit(xs, ys):
    """Least squares: (slope, intercept)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


def build():
    say("building build-bench/ (release): the daemon and bench/einsora-agents-load")
    if not os.path.exists(os.path.join(BUILD, "build.ninja")):
        subprocess.run(["meson", "setup", BUILD, ROOT, "--buildtype=release", "-Dapp=disabled"],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", BUILD, "daemon/einsora-daemon", "bench/einsora-agents-load"],
                   check=True, stdout=subprocess.DEVNULL)


def start_nginx(root, port):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                      else None)
    if nginx is None:
        say("no nginx (apt-get install -y nginx-light): the peer is left out")
        return None
    tls = os.path.join(root, "data", "tls")
    conf = os.path.join(root, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off;
worker_processes 1;
worker_rlimit_nofile {NOFILE};
pid {root}/nginx.pid;
error_log {root}/nginx-error.log;
events {{ worker_connections 20000; }}
http {{
  access_log off;
  client_body_temp_path {root}/nginx-body;
  keepalive_timeout 600s;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {tls}/server.pem;
    ssl_certificate_key {tls}/server-key.pem;
    location / {{ return 200 "ok\\n"; }}
  }}
}}
""")
    proc = subprocess.Popen([nginx, "-c", conf, "-p", root], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc


def main():
    # Stopped from outside: clean up (daemon, nginx, the directory) all the same.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    daemon = sys.argv[1] if len(sys.argv) > 1 else None
    if daemon in ("-h", "--help"):
        print(__doc__)
        return
    if daemon is None:
        build()
        daemon = os.path.join(BUILD, "daemon", "einsora-daemon")
    load = os.environ.get("BENCH_LOAD", os.path.join(BUILD, "bench", "einsora-agents-load"))
    for path in (daemon, load):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"agents-bench: {path} is not an executable")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(NOFILE, soft), max(NOFILE, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        # A TLS connection costs the daemon 3 descriptors (the socket and
        # the pair between its TLS front and the HTTP connection).
        say(f"open files limited to {hard} here: the daemon runs out of descriptors "
            f"near {hard // 3} agents")

    with tempfile.TemporaryDirectory(prefix="einsora-agents-bench.") as root:
        os.chmod(root, 0o700)
        data = os.path.join(root, "data")
        port, access = free_port(), free_port()
        catalog = json.load(open(os.path.join(ROOT, "catalog", "catalog.json")))
        catalog["classes"].append(CLASS)
        catalog_path = os.path.join(root, "catalog.json")
        with open(catalog_path, "w") as f:
            json.dump(catalog, f)
        # No local drivers: the workloads can only go to the agents.
        env = dict(os.environ, EINSORA_TLS="on", EINSORA_DRIVERS="", EINSORA_CATALOG=catalog_path)
        env.pop("G_MESSAGES_DEBUG", None)
        log = open(os.path.join(root, "daemon.log"), "w")
        proc = subprocess.Popen([daemon, "--data-dir", data, "--listen", f"127.0.0.1:{port}",
                                 "--access-listen", f"127.0.0.1:{access}"],
                                env=env, stderr=log, stdout=log)
        nginx = None
        try:
            insecure = ssl.create_default_context()
            insecure.check_hostname = False
            insecure.verify_mode = ssl.CERT_NONE  # 127.0.0.1, the daemon just started
            for _ in range(400):
                try:
                    with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz",
                                                context=insecure, timeout=5) as answer:
                        if answer.status == 200 and os.path.exists(os.path.join(data, "token")):
                            break
                except OSError:
                    pass
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
            else:
                raise SystemExit("agents-bench: the daemon did not become ready")
            if proc.poll() is not None:
                log.flush()
                raise SystemExit("agents-bench: the daemon exited:\n" +
                                 open(os.path.join(root, "daemon.log")).read()[-2000:])
            time.sleep(3)  # past start-up and the first controller passes
            idle_rss = rss_kib(proc.pid)
            args = [load, "--port", str(port), "--token-file", os.path.join(data, "token"),
                    "--db", os.path.join(data, "einsora.db"), "--daemon-pid", str(proc.pid),
                    "--steps", STEPS, "--window", str(WINDOW_S),
                    "--ramp-until", str(max(60, TIME_S - 200))]
            if TUNNELS:
                args.append("--tunnels")
            peer_idle = None
            if PEER:
                peer_port = free_port()
                nginx = start_nginx(root, peer_port)
                if nginx is not None:
                    time.sleep(0.5)
                    pids = [nginx.pid] + children(nginx.pid)
                    peer_idle = sum(rss_kib(p) for p in pids)
                    args += ["--peer-port", str(peer_port),
                             "--peer-pids", ",".join(str(p) for p in pids)]
            say(f"daemon {proc.pid} on https://127.0.0.1:{port}, {idle_rss / 1024:.1f} MiB idle; "
                f"steps {STEPS}")
            rows = []
            loader = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
            try:
                # Row by row: a run stopped from outside still reports its steps.
                for line in loader.stdout:
                    if line.startswith("{"):
                        rows.append(json.loads(line))
                loader.wait()
            finally:
                if loader.poll() is None:
                    loader.kill()
                    loader.wait()
                if proc.poll() is not None:
                    say("the daemon exited during the run: " +
                        open(os.path.join(root, "daemon.log")).read()[-2000:])
                if loader.returncode != 0:
                    say(f"einsora-agents-load exited {loader.returncode}")
                report(rows, idle_rss, peer_idle)
        finally:
            if nginx is not None:
                nginx.terminate()
                nginx.wait()
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def report(rows, idle_rss, peer_idle):
    mib = lambda kib: f"{kib / 1024:.1f}" if kib is not None and kib >= 0 else "-"
    print(f"Agents long-polling one einsora-daemon over mutual TLS "
          f"({os.cpu_count()} CPUs; idle window {WINDOW_S} s; one round; "
          f"{'each with its idle tunnel stream too' if TUNNELS else 'syncs only, no tunnels'})\n")
    print("| agents | ramp (s) | daemon RSS (MiB) | nginx RSS, same idle TLS conns (MiB) "
          "| daemon CPU idle (%) | syncs in window | CPU per sync (µs) | woken "
          "| wake-to-answer p50 (ms) | p99 (ms) | max (ms) | RSS after wake (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| 0 | - | {mib(idle_rss)} | {mib(peer_idle)} | - | - | - | - | - | - | - | - |")
    for r in rows:
        cpu_pct = r["cpu_s"] / r["window_s"] * 100
        per_sync = r["cpu_s"] / r["syncs"] * 1e6 if r["syncs"] else float("nan")
        r["per_sync_us"] = per_sync
        # A window shorter than the long poll may answer none.
        per_sync_text = f"{per_sync:.0f}" if r["syncs"] else "-"
        print(f"| {r['agents']}{'' if r['up'] >= r['agents'] else ' (' + str(r['up']) + ' up)'} "
              f"| {r['ramp_s']:.0f} | {mib(r['rss_kib'])} | {mib(r['peer_rss_kib'])} "
              f"| {cpu_pct:.1f} | {r['syncs']} | {per_sync_text} | {r['woken']} "
              f"| {r['wake_p50_ms']:.0f} | {r['wake_p99_ms']:.0f} | {r['wake_max_ms']:.0f} "
              f"| {mib(r['rss_after_wake_kib'])} |")
    errors = rows[-1]["sync_errors"] + rows[-1]["other_errors"] if rows else 0
    print(f"\nErrors (syncs not answered 200, refused requests): {errors}")
    if len(rows) >= 2:
        xs = [r["agents"] for r in rows]
        slope, icpt = fit(xs, [r["rss_kib"] for r in rows])
        synced = [r for r in rows if r["syncs"]]
        s2, i2 = fit([r["agents"] for r in synced], [r["per_sync_us"] for r in synced]) \
            if len(synced) >= 2 else (float("nan"), float("nan"))
        s3, i3 = fit(xs, [r["cpu_s"] / r["window_s"] * 100 for r in rows])
        have_sync = s2 == s2  # not NaN: two steps or more answered syncs
        print(f"\nLinear fit over the steps: RSS {slope:.1f} KiB per agent + {icpt / 1024:.0f} MiB"
              + (f"; CPU per sync {s2 * 1000:.2f} µs per 1,000 agents + {i2:.0f} µs."
                 if have_sync else " (no per-sync fit: windows shorter than the long poll)."))
        print(f"At {EXTRAPOLATE:,} agents: about {(slope * EXTRAPOLATE + icpt) / 1024:.0f} MiB RSS"
              + (f", {s2 * EXTRAPOLATE + i2:.0f} µs per sync" if have_sync else "")
              + f", {s3 * EXTRAPOLATE + i3:.1f} % of a CPU while idle.")
        peers = [r for r in rows if r["peer_rss_kib"] >= 0]
        if len(peers) >= 2:
            ps, pi = fit([r["agents"] for r in peers], [r["peer_rss_kib"] for r in peers])
            print(f"nginx: {ps:.1f} KiB per idle TLS connection.")


if __name__ == "__main__":
    main()
