"""GT's client overhead beside NumPy doing the same math in-process.

Prints two tables. The first: async issue cost per op (10k small adds: the issuing thread's
CPU time, which is the client's cost, and its wall time, which on a machine with fewer cores
than GT has busy processes also holds the time the client waited for a core while the
dispatcher and the worker ran the ops already sent), .item() round trip p50/p99, and the
Fashion-MNIST MLP's epoch time (784-256-128-10, Adam, batch 128). Targets (issue 23): <= 3 us
per op issued, <= 100 us p50 round trip on loopback.

The second says where a round trip's time goes, by timing ever longer paths from this process
(p50 of 3000 each) and taking differences: the Python -> C++ call; an RPC the dispatcher answers
itself; a sync, which waits on the worker's queue; a fetch, which also reads the value; and
.item(), which also makes a Python number. Syncs and fetches go straight to the worker (one hop,
like the two-process floor) when the session reads from it directly (`gt-worker --listen`, as the
auto-started workers are), and through the dispatcher (two hops, like the three-process floor)
with GT_DIRECT_READS=0; the heading says which. Beside them, in the same run, the floors of the
same topology in plain Python sockets (no RPC system, no work): one process pair, and a chain of
three processes like client -> dispatcher -> worker, over TCP loopback and a Unix socket. Its
last column is the CPU time each GT process spent per round trip (from /proc; auto-started
daemons).

    python benchmarks/overhead.py [--epoch-limit N] [--round-trip-only]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import gt  # noqa: E402
import fashion_mnist  # noqa: E402


def issue_cost(n=10_000):
    a, b = gt.ones(16), gt.ones(16)
    gt.synchronize()
    start, cpu = time.perf_counter(), time.thread_time()
    for _ in range(n):
        a = a + b
    issued, issued_cpu = time.perf_counter() - start, time.thread_time() - cpu
    gt.synchronize()
    total = time.perf_counter() - start
    x, y = np.ones(16, np.float32), np.ones(16, np.float32)
    start = time.perf_counter()
    for _ in range(n):
        x = x + y
    numpy = time.perf_counter() - start
    return issued_cpu / n * 1e6, issued / n * 1e6, total / n * 1e6, numpy / n * 1e6


def round_trip(n=2000):
    t = gt.ones(())
    t.item()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        t.item()
        samples.append(time.perf_counter() - start)
    s = np.array(samples) * 1e6
    return np.percentile(s, 50), np.percentile(s, 99)


def p50_us(fn, n=3000):
    for _ in range(200):  # warm
        fn()
    samples = np.empty(n)
    for i in range(n):
        start = time.perf_counter_ns()
        fn()
        samples[i] = time.perf_counter_ns() - start
    return float(np.percentile(samples, 50)) / 1e3


def _cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def socket_floor(hops, family, n=3000):
    """p50 (us) of a 16-byte message sent down a chain of `hops` + 1 processes and echoed back,
    in plain Python sockets with blocking reads: what the kernel and the wake-ups cost alone."""
    import socket
    import tempfile

    def listener():
        if family == "unix":
            path = os.path.join(tempfile.mkdtemp(prefix="gt-floor-"), "s")
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.listen(1)
            return s, path
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        return s, ("127.0.0.1", s.getsockname()[1])

    def dial(address):
        c = socket.socket(socket.AF_UNIX) if family == "unix" else socket.socket()
        c.connect(address)
        if family != "unix":
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return c

    def accept(s):
        c, _ = s.accept()
        if family != "unix":
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return c

    children, downstream = [], None
    for stage in range(hops):  # the last process echoes; the ones between forward both ways
        s, address = listener()
        pid = os.fork()
        if pid == 0:
            try:
                up = accept(s)
                down = dial(downstream) if downstream else None
                while True:
                    d = up.recv(64)
                    if not d:
                        break
                    if down:
                        down.sendall(d)
                        d = down.recv(64)
                    up.sendall(d)
            finally:
                os._exit(0)
        children.append(pid)
        downstream = address
    c = dial(downstream)
    try:
        return p50_us(lambda: (c.sendall(b"x" * 16), c.recv(64)), n)
    finally:
        c.close()
        for pid in children:
            os.waitpid(pid, 0)


def round_trip_breakdown():
    """Rows (name, p50 us, what the step adds, CPU us per round trip by process)."""
    from gt import _runtime
    t = gt.ones(())
    t.item()
    c = t._h.client
    pids = [p.pid for p in _runtime._processes if p.poll() is None]
    paths = [
        ("Python -> C++ call (no message)", lambda: c.signal()),
        ("RPC the dispatcher answers", lambda: c.num_workers()),
        ("sync (waits on the worker's queue)", lambda: c.sync()),
        ("fetch of one float", lambda: c.fetch(t._h.id)),
        (".item()", lambda: t.item()),
    ]
    # Interleaved in rounds, so that this machine's drift falls on every path alike.
    rounds, per_round = 10, 300
    samples = {name: [] for name, _ in paths}
    cpu = {name: np.zeros(1 + len(pids)) for name, _ in paths}
    for name, fn in paths:  # warm
        for _ in range(100):
            fn()
    for _ in range(rounds):
        for name, fn in paths:
            before, me = [_cpu_seconds(p) for p in pids], os.times()
            for _ in range(per_round):
                start = time.perf_counter_ns()
                fn()
                samples[name].append(time.perf_counter_ns() - start)
            after, me2 = [_cpu_seconds(p) for p in pids], os.times()
            cpu[name] += [me2.user + me2.system - me.user - me.system] + [b - a for a, b in zip(before, after)]
    rows, previous = [], 0.0
    for name, _ in paths:
        us = float(np.percentile(samples[name], 50)) / 1e3
        rows.append((name, us, us - previous, cpu[name] / (rounds * per_round) * 1e6))
        previous = us
    return rows, _runtime.local_host(), c.read_path()


def print_breakdown():
    rows, host, path = round_trip_breakdown()
    floors = [(f"Python sockets, {h + 1} processes, {fam}", socket_floor(h, fam)) for h in (1, 2) for fam in ("tcp", "unix")]
    print(f"\nWhere a round trip goes (this client reaches its dispatcher at {host}; syncs and fetches: {path}):")
    table = [("path", "p50", "adds", "CPU us per round trip: client / dispatcher / worker(s)")]
    for name, us, adds, cpu in rows:
        table.append((name, f"{us:.1f} us", f"{adds:+.1f} us", " / ".join(f"{x:.0f}" for x in cpu)))
    for name, us in floors:
        table.append((f"floor: {name}", f"{us:.1f} us", "", ""))
    w = [max(len(r[i]) for r in table) for i in range(4)]
    for k, r in enumerate(table):
        print("| " + " | ".join(x.ljust(w[i]) for i, x in enumerate(r)) + " |")
        if k == 0:
            print("|" + "|".join("-" * (n + 2) for n in w) + "|")


def numpy_epoch(x, y, batch=128, lr=1e-3, seed=0):
    """The same MLP, loss and Adam in NumPy (float32), for comparison."""
    rng = np.random.default_rng(seed)
    sizes = [784, 256, 128, 10]
    params = []
    for i, o in zip(sizes, sizes[1:]):
        s = 1 / np.sqrt(3 * i)
        params += [(rng.standard_normal((o, i)) * s).astype(np.float32), (rng.standard_normal(o) * s).astype(np.float32)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    order = rng.permutation(len(x))
    start = time.perf_counter()
    for t, k in enumerate(range(0, len(x), batch), start=1):
        idx = order[k:k + batch]
        xb, yb = x[idx], y[idx]
        acts = [xb]
        for j in range(3):  # forward
            h = acts[-1] @ params[2 * j].T + params[2 * j + 1]
            acts.append(np.maximum(h, 0) if j < 2 else h)
        z = acts[-1] - acts[-1].max(1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        g = p
        g[np.arange(len(yb)), yb] -= 1
        g /= len(yb)
        grads = [None] * 6
        for j in reversed(range(3)):  # backward
            grads[2 * j], grads[2 * j + 1] = g.T @ acts[j], g.sum(0)
            if j:
                g = (g @ params[2 * j]) * (acts[j] > 0)
        for i, (pp, gg) in enumerate(zip(params, grads)):  # Adam
            m[i] = 0.9 * m[i] + 0.1 * gg
            v[i] = 0.999 * v[i] + 0.001 * gg * gg
            pp -= lr / (1 - 0.9 ** t) * m[i] / (np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
    return time.perf_counter() - start


def gt_epoch(x, y, batch=128):
    gt.manual_seed(0)
    model = fashion_mnist.MLP()
    opt = gt.optim.Adam(model.parameters(), lr=1e-3)
    fashion_mnist.train_step(model, opt, x[:batch], y[:batch]).item()  # compile outside the timing
    start = time.perf_counter()
    for k in range(0, len(x), batch):
        loss = fashion_mnist.train_step(model, opt, x[k:k + batch], y[k:k + batch])
    loss.item()
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epoch-limit", type=int, default=60000, help="images per epoch (default: all 60000)")
    p.add_argument("--round-trip-only", action="store_true", help="print only where a round trip's time goes")
    args = p.parse_args()
    if args.round_trip_only:
        print_breakdown()
        return
    issued_cpu, issued, executed, numpy_op = issue_cost()
    p50, p99 = round_trip()
    x, y = fashion_mnist.load("train")
    x, y = x[:args.epoch_limit], y[:args.epoch_limit]
    t_gt, t_np = gt_epoch(x, y), numpy_epoch(x, y)

    rows = [
        ("async issue cost per op (10k adds of 16 floats), client CPU", f"{issued_cpu:.2f} us", f"{numpy_op:.2f} us",
         "<= 3 us"),
        ("  same, wall time of the issuing loop", f"{issued:.2f} us", f"{numpy_op:.2f} us", ""),
        ("  same, issue + execute (until synchronize)", f"{executed:.2f} us", f"{numpy_op:.2f} us", ""),
        (".item() round trip p50", f"{p50:.1f} us", "0 (in-process)", "<= 100 us"),
        (".item() round trip p99", f"{p99:.1f} us", "0 (in-process)", ""),
        (f"MLP epoch ({len(x)} images, batch 128)", f"{t_gt:.2f} s", f"{t_np:.2f} s", ""),
        ("  samples/s", f"{len(x) / t_gt:,.0f}", f"{len(x) / t_np:,.0f}", ""),
    ]
    w = [max(len(r[i]) for r in rows + [("metric", "GT", "NumPy", "target")]) for i in range(4)]
    line = lambda r: "| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(r)) + " |"  # noqa: E731
    print(line(("metric", "GT", "NumPy", "target")))
    print("|" + "|".join("-" * (n + 2) for n in w) + "|")
    for r in rows:
        print(line(r))
    print_breakdown()


if __name__ == "__main__":
    main()
