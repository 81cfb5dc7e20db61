"""GT's client overhead beside NumPy doing the same math in-process.

Prints one table: async issue cost per op (10k small adds), .item() round trip p50/p99, and the
Fashion-MNIST MLP's epoch time (784-256-128-10, Adam, batch 128). Targets GT is designed for:
<= 5 us per op issued, <= 100 us p50 round trip on loopback.

    python benchmarks/overhead.py [--epoch-limit N]
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
    start = time.perf_counter()
    for _ in range(n):
        a = a + b
    issued = time.perf_counter() - start
    gt.synchronize()
    total = time.perf_counter() - start
    x, y = np.ones(16, np.float32), np.ones(16, np.float32)
    start = time.perf_counter()
    for _ in range(n):
        x = x + y
    numpy = time.perf_counter() - start
    return issued / n * 1e6, total / n * 1e6, numpy / n * 1e6


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
    args = p.parse_args()
    issued, executed, numpy_op = issue_cost()
    p50, p99 = round_trip()
    x, y = fashion_mnist.load("train")
    x, y = x[:args.epoch_limit], y[:args.epoch_limit]
    t_gt, t_np = gt_epoch(x, y), numpy_epoch(x, y)

    rows = [
        ("async issue cost per op (10k adds of 16 floats)", f"{issued:.2f} us", f"{numpy_op:.2f} us", "<= 5 us"),
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


if __name__ == "__main__":
    main()
