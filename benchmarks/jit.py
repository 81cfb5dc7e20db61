"""The JIT on CPU: fusion off vs on, cold vs warm compile, beside NumPy doing the same math.

Prints one table:
- an elementwise chain, gelu(x * w + b) * y over 1M float32 (gelu in its tanh form,
  Hendrycks & Gimpel 2016), time per iteration;
- the Fashion-MNIST MLP training step (784-256-128-10, Adam, batch 128, synthetic data);
- compile costs: milliseconds per fused region compiled cold, loaded from the disk cache
  (warm), and kernels compiled by a second process (target 0).

Each GT configuration runs in its own process with its own daemons:
fusion off is GT_JIT=0; fusion on is the default (hot after 2 sightings, background compile),
timed in steady state (after warm-up loops shaped like the timed one; GT_JIT_SYNC=1 so
regions finish compiling during the warm-up). Run:

    python benchmarks/jit.py [--iters N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N = 1 << 20


def gelu_np(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def chain_numpy(iters):
    rng = np.random.default_rng(0)
    x, w, b, y = (rng.standard_normal(N).astype(np.float32) for _ in range(4))
    gelu_np(x * w + b) * y
    start = time.perf_counter()
    for _ in range(iters):
        out = gelu_np(x * w + b) * y
    return (time.perf_counter() - start) / iters, float(out.sum())


def mlp_numpy(iters, batch=128):
    """Seconds per MLP step in NumPy: overhead.numpy_epoch over `iters` synthetic batches."""
    sys.path.insert(0, HERE)
    from overhead import numpy_epoch
    rng = np.random.default_rng(0)
    x = rng.standard_normal((iters * batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, iters * batch)
    return numpy_epoch(x, y, batch=batch) / iters


# ---------------------------------------------------------------- GT side (run in a child process)

def gelu_gt(x):
    return 0.5 * x * (1 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())


def child(kind, iters, warmup):
    import gt
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    if kind == "chain":
        rng = np.random.default_rng(0)
        x, w, b, y = (gt.tensor(rng.standard_normal(N).astype(np.float32)) for _ in range(4))
        step = lambda: gelu_gt(x * w + b) * y  # noqa: E731
    else:
        import fashion_mnist
        gt.manual_seed(0)
        rng = np.random.default_rng(0)
        xb = rng.standard_normal((128, 784)).astype(np.float32)
        yb = rng.integers(0, 10, 128)
        model = fashion_mnist.MLP()
        opt = gt.optim.Adam(model.parameters(), lr=1e-3)
        step = lambda: fashion_mnist.train_step(model, opt, xb, yb)  # noqa: E731
    def timed_loop():
        outs = []  # keep every result alive: a result nobody reads is dead code
        start = time.perf_counter()
        for _ in range(iters):
            outs.append(step())
        outs[-1].sum().item()
        return start

    # Warm-up: the same loop, so the batches (and so the regions) are the ones timed below.
    for _ in range(warmup):
        timed_loop()
    start = timed_loop()
    elapsed = (time.perf_counter() - start) / iters
    print(json.dumps({"seconds": elapsed, "stats": gt.debug.stats()}))


def run_child(kind, iters, warmup, cache, **env):
    e = dict(os.environ, GT_CACHE_DIR=cache, **env)
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--iters", str(iters), "--warmup", str(warmup)],
                         capture_output=True, text=True, env=e, timeout=1800)
    if out.returncode:
        sys.exit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--child")
    p.add_argument("--warmup", type=int, default=0)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.iters, args.warmup)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for kind in ("chain", "mlp"):
            cold = os.path.join(tmp, kind + "-cold")
            off = run_child(kind, args.iters, 4, os.path.join(tmp, kind + "-off"), GT_JIT="0")
            # Cold: a fresh cache, regions compile (synchronously) during the warm-up.
            on = run_child(kind, args.iters, 4, cold, GT_JIT_SYNC="1")
            # Warm: a second process on the same cache; nothing may compile.
            warm = run_child(kind, args.iters, 1, cold, GT_JIT_SYNC="1")
            results[kind] = (off, on, warm)
        np_chain, _ = chain_numpy(args.iters)
        np_mlp = mlp_numpy(args.iters)

    def ms(s):
        return f"{s * 1e3:.2f} ms"

    for kind, label, np_time in (("chain", "gelu(x*w+b)*y, 1M f32, per iteration", np_chain),
                                 ("mlp", "MLP train step (784-256-128-10, b128)", np_mlp)):
        off, on, _ = results[kind]
        rows.append((label, ms(np_time), ms(off["seconds"]), ms(on["seconds"]),
                     f"{off['seconds'] / on['seconds']:.2f}x"))
        s = on["stats"]
        rows.append(("  ops fused / eager in the fused run", "", "", f"{s['fused_ops']} / {s['eager_ops']}", ""))
    for kind, label in (("chain", "gelu chain"), ("mlp", "MLP step")):
        _, on, warm = results[kind]
        s, w = on["stats"], warm["stats"]
        per_region = s["region_compile_ms"] / max(1, s["regions_compiled"] - s["region_disk_hits"])
        load = w["region_load_ms"] / max(1, w["region_disk_hits"])
        rows.append((f"{label}: cold compile per fused region", "", "", f"{per_region:.1f} ms", "target <= 250 ms"))
        rows.append((f"{label}: disk-cache load per fused region", "", "", f"{load:.2f} ms", "target <= 5 ms"))
        rows.append((f"{label}: kernels compiled by a 2nd process", "", "", f"{w['kernels_compiled']}", "target 0"))
    head = ("workload", "NumPy", "GT fusion off", "GT fusion on", "off/on")
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    line = lambda r: "| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |"  # noqa: E731
    print(line(head))
    print("|" + "|".join("-" * (n + 2) for n in w) + "|")
    for r in rows:
        print(line(r))


if __name__ == "__main__":
    main()
