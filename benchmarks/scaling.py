"""Step time and bytes moved per worker of a sharded MLP step, for 1, 2 and 4 CPU workers and
each strategy, and the dispatcher's cost per instruction (sharded vs unsharded pipeline).

The model: x (512, 256) -> Linear(256, 1024) -> ReLU -> Linear(1024, 256) -> MSE, plain SGD.
Each configuration runs in its own process with its own dispatcher and workers (configs in
test/python/sharding/); 1 worker runs without a config. Run:

    python benchmarks/scaling.py [--steps 10] [--warmup 3]

On a 2-core machine 4 workers share 2 cores: the table shows where the work and the bytes go,
not a speed-up.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "test", "python", "sharding")
STRATEGIES = {  # name -> (signals of w1, b1, w2, b2, x, stage 1, stage 2), config per worker count
    "data_parallel": (("params", "params", "params", "params", "data", "data", "data"),
                      {2: "data_parallel.yaml", 4: "data_parallel.yaml"}),
    "tensor_parallel": (("columns", "column_bias", "rows", "params", "params", None, None),
                        {2: "tensor_parallel.yaml", 4: "tensor_parallel.yaml"}),
    "pipeline": (("stage1_params", "stage1_params", "stage2_params", "stage2_params", "stage1", "stage1", "stage2"),
                 {2: "pipeline.yaml", 4: "pipeline_4.yaml"}),
}


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


def child(strategy, workers, steps, warmup):
    import gt
    gt.gpu_workers(workers)
    signals, configs = STRATEGIES[strategy]
    if workers > 1:
        gt.load_config(os.path.join(CONFIGS, configs[workers]))
    ctx = lambda name: gt.signal.context(name) if name else _Nothing()  # noqa: E731
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.05 for s in ((256, 1024), (1024,), (1024, 256), (256,))]
    params = []
    for name, a in zip(signals[:4], arrays):
        with ctx(name):
            params.append(gt.tensor(a, requires_grad=True))
    w1, b1, w2, b2 = params
    with ctx(signals[4]):
        x = gt.tensor(rng.standard_normal((512, 256)).astype(np.float32))
    with ctx(signals[5]):
        t = gt.tensor(rng.standard_normal((512, 256)).astype(np.float32))

    def step():
        with ctx(signals[5]):
            h = gt.relu(x @ w1 + b1)
        with ctx(signals[6]):
            loss = ((h @ w2 + b2 - t) ** 2).mean()
        loss.backward()
        with gt.no_grad():
            for p, name in zip(params, signals[:4]):
                with ctx(name):
                    p -= 0.01 * p.grad
                p.grad = None
        return loss.item()

    for _ in range(warmup):
        step()
    before = gt.debug.stats()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = time.perf_counter() - start
    after = gt.debug.stats()
    per_worker = {}
    for w, s in after["by_worker"].items():
        b = before["by_worker"].get(w, {})
        moved = sum(s.get(k, 0) - b.get(k, 0) for k in ("collective_bytes", "p2p_bytes_sent"))
        per_worker[w] = {"bytes": moved / steps, "ops": (s["eager_ops"] - b.get("eager_ops", 0)) / steps}
    instructions = after["dispatcher_instructions"] - before["dispatcher_instructions"]
    dispatch_ms = after["dispatcher_dispatch_ms"] - before["dispatcher_dispatch_ms"]
    print(json.dumps({"step_ms": 1000 * elapsed / steps, "workers": per_worker,
                      "dispatch_us": 1000 * dispatch_ms / max(instructions, 1)}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--child", nargs=2)
    args = p.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.steps, args.warmup)
    print(f"| strategy | workers | step (ms) | bytes sent per worker per step | ops per worker per step | dispatcher µs / instruction |")
    print("|---|---|---|---|---|---|")
    for strategy in STRATEGIES:
        for workers in (1, 2, 4):
            out = subprocess.run([sys.executable, __file__, "--child", strategy, str(workers), "--steps",
                                  str(args.steps), "--warmup", str(args.warmup)], capture_output=True, text=True)
            if out.returncode != 0:
                print(f"| {strategy} | {workers} | failed: {out.stderr.strip().splitlines()[-1]} | | | |")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            ws = sorted(r["workers"], key=int)
            bytes_ = ", ".join(f"{r['workers'][w]['bytes'] / 1024:.0f} KiB" for w in ws)
            ops = ", ".join(f"{r['workers'][w]['ops']:.0f}" for w in ws)
            print(f"| {strategy} | {workers} | {r['step_ms']:.1f} | {bytes_} | {ops} | {r['dispatch_us']:.1f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
