"""Trains an MLP (784-256-128-10, Adam, batch 128) on Fashion-MNIST through GT.

The data are the IDX files of Debian's `dataset-fashion-mnist` (nothing is downloaded).
GT starts a local dispatcher and worker by itself; pass --connect HOST:PORT to use running ones.
The script names two signals, 'params' (the model and optimizer state) and 'data' (the batch
and the compute on it); a sharding config decides what they mean, so the same script runs
data-parallel over 4 workers with

    python examples/fashion_mnist.py [--epochs 5] [--limit N]
    python examples/fashion_mnist.py --workers 4 --config examples/configs/data_parallel.yaml
"""
import argparse
import os
import sys
import time

import numpy as np

try:
    from tqdm import tqdm  # the progress bar on a terminal (installed by make build)
except ImportError:
    tqdm = None

import gt
import gt.nn as nn
import gt.nn.functional as F
from gt.vision.datasets import read_idx  # the IDX reader (gzipped or not)

DATA_DIR = os.environ.get("GT_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")


def load(split):
    """Images as float32 (N, 784) scaled to [0, 1], labels as int64 (N,)."""
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(DATA_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(DATA_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    return x.reshape(len(x), -1).astype(np.float32) / 255.0, y.astype(np.int64)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):  # x: (B, 784) -> logits (B, 10)
        return self.net(x)


def train_step(model, opt, xb, yb):
    """One Adam step on a batch; returns the loss tensor (not yet fetched)."""
    with gt.signal.context("data"):
        loss = F.cross_entropy(model(gt.from_numpy(xb)), gt.from_numpy(yb))
    opt.zero_grad()
    loss.backward()
    with gt.signal.context("params"):
        opt.step()
    return loss


def accuracy(model, x, y, batch=1000):
    correct = 0
    with gt.no_grad(), gt.signal.context("data"):
        for i in range(0, len(x), batch):
            logits = model(gt.from_numpy(x[i:i + batch])).numpy()
            correct += int((logits.argmax(1) == y[i:i + batch]).sum())
    return correct / len(x)


def progress_bar(epoch, steps):
    """A tqdm bar for one epoch on a terminal; None (one line per epoch) when stderr is not a
    terminal or tqdm is missing."""
    if tqdm is None or not sys.stderr.isatty():
        return None
    return tqdm(total=steps, desc=f"epoch {epoch}", unit="step", leave=False)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    p.add_argument("--connect", default="", help="HOST:PORT of a running dispatcher")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="local workers to start")
    p.add_argument("--config", default="", help="sharding config (YAML), e.g. examples/configs/data_parallel.yaml")
    args = p.parse_args()

    if args.connect:
        gt.connect(args.connect)
    else:
        gt.gpu_workers(args.workers)
    if args.config:
        gt.load_config(args.config)
    gt.manual_seed(args.seed)
    x_train, y_train = load("train")
    x_test, y_test = load("test")
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    print(f"Fashion-MNIST: {len(x_train)} train / {len(x_test)} test images from {DATA_DIR}")

    with gt.signal.context("params"):
        model = MLP()
        opt = gt.optim.Adam(model.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed)
    steps = (len(x_train) + args.batch_size - 1) // args.batch_size
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(len(x_train))
        start, total, seen = time.perf_counter(), 0.0, 0
        bar = progress_bar(epoch, steps)
        for s in range(steps):
            idx = order[s * args.batch_size:(s + 1) * args.batch_size]
            loss = train_step(model, opt, x_train[idx], y_train[idx])
            if s % 20 == 0 or s == steps - 1:  # fetching the loss is a sync point: not every step
                value = loss.item()
                total, seen = total + value, seen + 1
                if bar is not None:
                    bar.update(s + 1 - bar.n)
                    bar.set_postfix(loss=f"{value:.4f}")
        gt.synchronize()
        if bar is not None:
            bar.close()
        elapsed = time.perf_counter() - start
        acc = accuracy(model, x_test, y_test)
        print(f"epoch {epoch}: loss {total / seen:.4f}  test accuracy {acc:.2%}  "
              f"{len(x_train) / elapsed:,.0f} samples/s ({elapsed:.1f} s)", flush=True)
    return acc


if __name__ == "__main__":
    main()
