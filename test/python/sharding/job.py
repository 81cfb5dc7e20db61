"""One training run of a small MLP under a sharding strategy; prints a JSON report.

    python job.py STRATEGY WORKERS [--config FILE] [--live]

--live adds each worker's live tensor count after every step to the report ("live").

Run by test_distributed.py: every strategy on 2 and 4 workers must match its run on one
worker (no config). The model, data and steps are the same for every run.
"""
import json
import sys

import numpy as np

import gt

STEPS = 3
LR = 0.1


def main():
    strategy, workers = sys.argv[1], int(sys.argv[2])
    config = sys.argv[sys.argv.index("--config") + 1] if "--config" in sys.argv else None
    gt.gpu_workers(workers)
    if config:
        gt.load_config(config)
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((13, 6)).astype(np.float32)   # 13 rows: uneven over 2 and 4 workers
    t_np = rng.standard_normal((13, 4)).astype(np.float32)
    w1_np = (rng.standard_normal((6, 8)) * 0.3).astype(np.float32)
    b1_np = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2_np = (rng.standard_normal((8, 4)) * 0.3).astype(np.float32)
    b2_np = (rng.standard_normal(4) * 0.1).astype(np.float32)

    # Which signal each tensor / stage uses (names the configs in this folder define).
    sig = {
        "data_parallel": dict(w1="params", b1="params", w2="params", b2="params", x="data", s1="data", s2="data"),
        "tensor_parallel": dict(w1="columns", b1="column_bias", w2="rows", b2="params", x="params", s1=None, s2=None),
        "pipeline": dict(w1="stage1_params", b1="stage1_params", w2="stage2_params", b2="stage2_params",
                         x="stage1", s1="stage1", s2="stage2"),
        # the batch and targets made outside any signal: the data signal splits the batch as it
        # enters the compute
        "data_made_outside": dict(w1="params", b1="params", w2="params", b2="params", x=None, t=None, s1="data",
                                  s2="data"),
        "mixed": dict(w1="params", b1="params", w2="rows", b2="params", x="data", s1="data", s2=None),
        "plain": dict(w1=None, b1=None, w2=None, b2=None, x=None, s1=None, s2=None),  # GT_AUTO_SHARD
    }[strategy]

    def make(name, value):
        with gt.signal.context(sig[name]) if sig[name] else _nothing():
            return gt.tensor(value, requires_grad=name != "x")

    w1, b1, w2, b2 = make("w1", w1_np), make("b1", b1_np), make("w2", w2_np), make("b2", b2_np)
    x = make("x", x_np)
    t_signal = sig.get("t", sig["s1"])  # the targets: made under stage 1's signal unless named
    with gt.signal.context(t_signal) if t_signal else _nothing():
        t = gt.tensor(t_np)
    losses, live = [], []
    for _ in range(STEPS):
        with gt.signal.context(sig["s1"]) if sig["s1"] else _nothing():
            h = gt.relu(x @ w1 + b1)
        with gt.signal.context(sig["s2"]) if sig["s2"] else _nothing():
            y = h @ w2 + b2
            loss = ((y - t) ** 2).mean()
        loss.backward()
        with gt.no_grad():
            for p, name in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")):
                with gt.signal.context(sig[name]) if sig[name] else _nothing():
                    p -= LR * p.grad
                p.grad = None
        losses.append(loss.item())
        if "--live" in sys.argv:
            live.append({str(w): s["live_tensors"] for w, s in gt.debug.stats()["by_worker"].items()})
    report = {
        "losses": losses,
        "y": y.numpy().tolist(),
        "params": {n: p.numpy().tolist() for n, p in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))},
        "live": live,
    }
    stats = gt.debug.stats()
    report.update({
        "workers": {str(k): v for k, v in stats["by_worker"].items()},
        "dispatcher": {k: stats[k] for k in ("dispatcher_upload_bytes", "dispatcher_fetch_bytes")},
    })
    print(json.dumps(report))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


if __name__ == "__main__":
    main()
