"""Reductions, GT beside PyTorch eager on the same device: microseconds per op.

Each workload queues 20 of the same reduction back to back and then reads the last result (so
the time is the device's, not one round trip per op), after warm-up iterations (GT_JIT_SYNC=1:
the kernels are compiled by then). Shapes are the ones a small transformer's step reduces:
- sum of 1M float32 (a loss, a norm): one output, a long axis;
- row sums of (4096, 1024) (LayerNorm, softmax): many outputs, contiguous rows;
- column sums of (2048, 768) (a bias gradient): the reduced axis is the strided one;
- softmax over the last axis of (8192, 64) (attention): a max and a sum per short row.

GT runs on GT_DEVICE (cpu unless set), PyTorch on CUDA when it sees a GPU, else the CPU; each
in its own process. PyTorch is not a GT dependency: run this with a Python that has both (the
GPU machine's, through the device bundle's `./run.sh python benchmarks/reductions.py`):

    python benchmarks/reductions.py [--only gt,torch] [--iters N]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_torch import backend_module, sync  # noqa: E402

WORKLOADS = {
    "sum 1M": ((1 << 20,), lambda lib, x: x.sum()),
    "row sums (4096, 1024)": ((4096, 1024), lambda lib, x: x.sum(1)),
    "column sums (2048, 768)": ((2048, 768), lambda lib, x: x.sum(0)),
    "softmax (8192, 64)": ((8192, 64), lambda lib, x: lib.softmax(x, -1)),
}


def child(backend, iters):
    os.environ.setdefault("GT_JIT_SYNC", "1")
    lib, device = backend_module(backend)
    results = {"device": device}
    rng = np.random.default_rng(0)
    for name, (shape, f) in WORKLOADS.items():
        x = lib.tensor(rng.standard_normal(shape).astype(np.float32))
        for _ in range(3):  # warm-up, shaped like the timed run
            ys = [f(lib, x) for _ in range(20)]
            sync(lib, ys[-1])
        best = float("inf")
        for _ in range(iters):
            start = time.perf_counter()
            ys = [f(lib, x) for _ in range(20)]
            sync(lib, ys[-1])
            best = min(best, (time.perf_counter() - start) / 20)
        results[name] = best * 1e6
    print(json.dumps(results))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--child")
    p.add_argument("--only", default="gt,torch")
    p.add_argument("--iters", type=int, default=10, help="timed runs of 20 ops; the best is kept")
    args = p.parse_args()
    if args.child:
        return child(args.child, args.iters)
    columns = args.only.split(",")
    results = {}
    for backend in columns:
        out = subprocess.run([sys.executable, __file__, "--child", backend, "--iters", str(args.iters)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{backend} failed:\n{out.stderr[-3000:]}")
        results[backend] = json.loads(out.stdout.strip().splitlines()[-1])
    print("devices: " + ", ".join(f"{b} on {results[b]['device']}" for b in columns))
    print("| reduction | " + " | ".join(f"{b} us per op" for b in columns) +
          (" | GT / PyTorch |" if columns == ["gt", "torch"] else " |"))
    print("|---|" + "---|" * (len(columns) + (columns == ["gt", "torch"])))
    for name in WORKLOADS:
        row = [f"{results[b][name]:.1f}" for b in columns]
        if columns == ["gt", "torch"]:
            row.append(f"{results['gt'][name] / results['torch'][name]:.2f}x")
        print(f"| {name} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
