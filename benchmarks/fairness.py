"""Sharing one worker fairly: a light client's latency beside heavy co-tenants, and the
throughput shares of identical clients.

    python benchmarks/fairness.py [--seconds S] [--size N]

Starts its own dispatcher and one CPU worker (2 GiB of memory, 25 % per session) and prints one
table, every row measured in this run:

- the light client (a small op and .item() every 50 ms, in this process): p50 / p99 / max
  latency alone; beside a co-tenant looping N x N matmuls (.item() after each); beside a
  co-tenant submitting batches of 200 (N/2 x N/2) matmuls; beside a co-tenant that keeps
  allocating past its memory quota;
- the co-tenants' longest single kernel, measured alone (a matmul and its .item());
- the throughput shares of 4 identical clients that submit their (N/4 x N/4) matmuls at once from
  a common start (each one's rate, matmuls over time to finish, over the sum of the rates), and
  of two clients the clients file gives weights 3 and 1 (with 3:1 work, so fair shares finish
  together).

Targets (issue 19): the light client's p99 beside a co-tenant <= that co-tenant's longest
kernel + 10 ms; each of 4 equal clients 25 % +- 3 %; the over-quota co-tenant costs the light
client nothing (its latency stays as alone, its results correct).
"""
import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import gt
from gt import _runtime

TOKEN = secrets.token_hex(16)

COTENANT = textwrap.dedent("""
    import sys, time, numpy as np, gt
    gt.connect(sys.argv[1])
    mode, n, until = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    if mode == "kernel":  # alone: each matmul timed with its .item()
        a = gt.randn(n, n) * (1 / n)
        (a @ a).sum().item()
        times = []
        for _ in range(10):
            start = time.perf_counter()
            (a @ a).sum().item()
            times.append(time.perf_counter() - start)
        print(" ".join(f"{t:.6f}" for t in times), flush=True)
    elif mode == "loop":  # one matmul at a time
        a = gt.randn(n, n) * (1 / n)
        print("ready", flush=True)
        while time.time() < until:
            a = (a @ a) * 0.5 + 0.1
            a.sum().item()
    elif mode == "batches":  # batches of 200 matmuls
        a = gt.randn(n // 2, n // 2) * (2 / n)
        print("ready", flush=True)
        while time.time() < until:
            for _ in range(200):
                a = (a @ a) * 0.5 + 0.1
            a.sum().item()
    elif mode == "hog":  # holds most of its quota and keeps asking for more
        quota = gt._runtime._client.limits()["session_memory_bytes"]
        held = [gt.ones(quota // 8 // 4) for _ in range(7)]
        [h.sum().item() for h in held]
        print("ready", flush=True)
        refused = 0
        while time.time() < until:
            more = gt.ones(quota // 4 // 4)  # alive at the .item(), so it is allocated (not fused away)
            try:
                more.sum().item()
            except gt.RemoteError:
                refused += 1
            del more
        print(refused, flush=True)
    elif mode == "share":  # from a common start, `count` matmuls submitted at once; prints when they are done
        count, start = int(sys.argv[5]), float(sys.argv[6])
        a, b = gt.randn(n // 4, n // 4), gt.randn(n // 4, n // 4) * (4 / n)
        (a @ b).sum().item()
        while time.time() < start:
            time.sleep(0.001)
        for _ in range(count):
            a = a @ b
        a.sum().item()
        print(time.time() - start, flush=True)
""")


WEIGHTED = {"heavy": (secrets.token_hex(16), 3), "light": (secrets.token_hex(16), 1)}  # the clients file


def start_daemons():
    env = dict(os.environ, GT_TOKEN=TOKEN, GT_WORKER_TOKEN=secrets.token_hex(16))
    clients = os.path.join(tempfile.mkdtemp(prefix="gt-fairness-"), "clients.yaml")
    with open(clients, "w") as f:
        for name, (token, weight) in WEIGHTED.items():
            f.write(f"{name}:\n  token: {token}\n  weight: {weight}\n")
    d = subprocess.Popen([os.path.join(_runtime.bin_dir(), "gt-dispatcher"), "-p", "0", "--clients", clients],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    port = int(d.stdout.readline().rsplit(":", 1)[1])
    w = subprocess.Popen([os.path.join(_runtime.bin_dir(), "gt-worker"), "-p", str(port), "--memory", "2GiB",
                          "--session-memory", "25%"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return [d, w], port


def cotenant(port, mode, n, until, *extra, token=TOKEN):
    return subprocess.Popen([sys.executable, "-c", COTENANT, f"127.0.0.1:{port}", mode, str(n), str(until),
                             *map(str, extra)], env=dict(os.environ, GT_TOKEN=token), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def light_client(seconds):
    """Latencies (s) of a small op + .item() every 50 ms, and whether every value was right."""
    x = gt.arange(16, dtype=gt.float32)
    samples, right = [], True
    end = time.time() + seconds
    k = 0
    while time.time() < end:
        start = time.perf_counter()
        value = (x + k).sum().item()
        samples.append(time.perf_counter() - start)
        right &= value == 120 + 16 * k
        k += 1
        time.sleep(0.05)
    return np.array(samples), right


def beside(port, mode, n, seconds):
    p = cotenant(port, mode, n, time.time() + seconds + 30)
    line = p.stdout.readline()
    assert line.strip() == "ready", line + p.stderr.read()
    time.sleep(0.5)  # its work is queued
    lat, right = light_client(seconds)
    p.kill()
    p.wait()
    return lat, right


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8, help="how long each light-client row measures")
    ap.add_argument("--size", type=int, default=2048, help="the co-tenant's matmul size N")
    ap.add_argument("--matmuls", type=int, default=200, help="matmuls of each identical client (N/4 x N/4)")
    args = ap.parse_args()
    daemons, port = start_daemons()
    try:
        os.environ["GT_TOKEN"] = TOKEN
        gt.connect(f"127.0.0.1:{port}")
        n = args.size
        kernels = {}
        for label, size in (("loop", n), ("batches", n // 2)):
            p = cotenant(port, "kernel", size, 0)
            out, err = p.communicate(timeout=600)
            kernels[label] = [float(t) for t in out.split()] or [float("nan")]
        rows = []
        alone, right = light_client(args.seconds)
        rows.append(("light client alone", alone, right, None))
        for mode, label in (("loop", f"beside {n}x{n} matmuls, one at a time"),
                            ("batches", f"beside batches of 200 {n // 2}x{n // 2} matmuls")):
            lat, right = beside(port, mode, n, args.seconds)
            rows.append((label, lat, right, max(kernels[mode]) * 1000 + 10))
        hog = cotenant(port, "hog", n, time.time() + args.seconds + 2)
        assert hog.stdout.readline().strip() == "ready"
        lat, right = light_client(args.seconds)
        refused = int(hog.communicate(timeout=120)[0].strip() or 0)
        rows.append((f"beside a co-tenant over its quota ({refused} allocations refused)", lat, right,
                     np.percentile(alone, 99) * 1000 + 10))

        # Throughput shares: every client submits its matmuls at once, from a common start; each
        # one's rate (matmuls / time to finish) over the sum of the rates. Equal work and equal
        # shares finish together; the weighted pair does 3:1 work, so 75/25 shares finish together.
        def shares(works, tokens):
            start = time.time() + 5
            ps = [cotenant(port, "share", n, 0, work, start, token=token) for work, token in zip(works, tokens)]
            elapsed = [float(p.communicate(timeout=900)[0].strip() or "nan") for p in ps]
            rates = [w / t for w, t in zip(works, elapsed)]
            return [(w, t, r / sum(rates)) for w, t, r in zip(works, elapsed, rates)]
        equal = shares([args.matmuls] * 4, [TOKEN] * 4)
        weighted = shares([3 * args.matmuls, args.matmuls], [token for token, _ in WEIGHTED.values()])
    finally:
        for p in daemons:
            p.kill()

    print(f"co-tenant kernels alone (a matmul + .item()): {n}x{n} median {np.median(kernels['loop']) * 1000:.1f} ms, "
          f"max {max(kernels['loop']) * 1000:.1f} ms; {n // 2}x{n // 2} median "
          f"{np.median(kernels['batches']) * 1000:.1f} ms, max {max(kernels['batches']) * 1000:.1f} ms")
    head = ("light client's .item()", "p50", "p99", "max", "target p99", "values")
    table = [head]
    for label, lat, right, target in rows:
        ms = lat * 1000
        table.append((label, f"{np.percentile(ms, 50):.1f} ms", f"{np.percentile(ms, 99):.1f} ms", f"{ms.max():.1f} ms",
                      f"<= {target:.0f} ms" if target else "", "right" if right else "WRONG"))
    table.append(("", "", "", "", "", ""))
    table.append((f"4 identical clients, {args.matmuls} matmuls each: share", "", "", "", "25 % +- 3 %", ""))
    for i, (work, t, share) in enumerate(equal):
        table.append((f"  client {i} (done after {t:.2f} s)", f"{100 * share:.1f} %", "", "", "", ""))
    table.append(("2 clients of weights 3 and 1 (--clients), work 3:1", "", "", "", "75 % / 25 %", ""))
    for (name, (_, weight)), (work, t, share) in zip(WEIGHTED.items(), weighted):
        table.append((f"  weight {weight}, {work} matmuls (done after {t:.2f} s)", f"{100 * share:.1f} %", "", "", "",
                      ""))
    w = [max(len(r[i]) for r in table) for i in range(len(head))]
    for k, r in enumerate(table):
        print("| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |")
        if k == 0:
            print("|" + "|".join("-" * (x + 2) for x in w) + "|")


if __name__ == "__main__":
    main()
