"""Kernels compiled by code a new user writes: new slice offsets, integer indices, batch sizes
and batches stacked from slices (the hot-path issue's "compile storms").

Each loop runs 20 iterations after one warm-up of the same kind and prints the kernels the
worker compiled or loaded from the disk cache during them, and the loop's wall time. Run it
with a fresh cache so that disk hits count too:

    GT_CACHE_DIR=$(mktemp -d) python benchmarks/recompiles.py

With GT_JIT on (the default), repeated patterns also form fused regions, which are compiled
per shape in the background (they never stall the loop); GT_JIT=0 shows eager kernels alone.
"""
import time

import numpy as np

import gt


def kernels():
    s = gt.debug.stats()
    return s["kernels_compiled"] + s["kernel_disk_hits"]


def measure(name, body, n=20):
    body(0)  # the first of each kind compiles what it needs
    before, start = kernels(), time.perf_counter()
    for i in range(1, n + 1):
        body(i)
    return name, kernels() - before, time.perf_counter() - start


def main():
    data = gt.tensor(np.arange(10000, dtype=np.float32))
    rng = np.random.default_rng(0)
    rows = [
        measure("data[i:i+64].sum(), 20 offsets", lambda i: data[i:i + 64].sum().item()),
        measure("data[i], 20 integer indices", lambda i: data[i].item()),
        measure("(ones(b, 8) * 2 + 1).sum(), 20 batch sizes", lambda i: (gt.ones(i + 1, 8) * 2.0 + 1.0).sum().item()),
        measure("stack([data[j:j+64] for 8 random j]).sum(), 20 batches",
                lambda i: gt.stack([data[int(j):int(j) + 64] for j in rng.integers(0, 9000, 8)]).sum().item()),
    ]
    w = max(len(r[0]) for r in rows)
    print(f"| {'loop'.ljust(w)} | kernels compiled or loaded | wall time |")
    print(f"|{'-' * (w + 2)}|----------------------------|-----------|")
    for name, k, t in rows:
        print(f"| {name.ljust(w)} | {k:>26} | {t * 1e3:>6.0f} ms |")


if __name__ == "__main__":
    main()
