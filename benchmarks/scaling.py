"""Step time and bytes moved per worker of a sharded MLP step, for 1, 2 and 4 CPU workers and
each strategy, and the dispatcher's cost per instruction with and without its plan cache.

Table 1, the model: x (512, 256) -> Linear(256, 1024) -> ReLU -> Linear(1024, 256) -> MSE,
plain SGD (configs in test/python/sharding/). Table 2: examples/char_gpt.py (2 layers, embd
64, batch 16 x 32 characters, about 1000 ops and as many frees per step) with the configs in
examples/configs/. Each run has its own process, dispatcher and workers; 1 worker runs without
a config. The dispatcher's cost is its time turning the measured steps' instructions into
worker programs, divided by their number (GT_PLAN_CACHE=0 turns the plan cache off). Run:

    python benchmarks/scaling.py [--steps 10] [--warmup 3] [--tables mlp,gpt,buckets]

Table 3 runs data parallel (the MLP and char_gpt) with the gradient all_reduces bucketed (the
default) and with GT_BUCKET_BYTES=0 (one all_reduce per gradient), side by side.

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
    # gt.debug.stats() flushes the frees a step leaves behind, so the step after it is a batch
    # of another shape: plan that one in the warm-up too, as the first timed step follows one.
    gt.debug.stats()
    step()
    before = gt.debug.stats()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = time.perf_counter() - start
    print(json.dumps(measured(before, gt.debug.stats(), elapsed, steps)))


def measured(before, after, elapsed, steps):
    """Per step, between two gt.debug.stats(): step time, each worker's bytes sent (collectives
    and point to point), ops (compute instructions) and kernels (one per eager op, one per fused
    region replay); instructions and plan-cache misses; and the dispatcher's µs per instruction."""
    per_worker = {}
    for w, s in after["by_worker"].items():
        b = before["by_worker"].get(w, {})
        moved = sum(s.get(k, 0) - b.get(k, 0) for k in ("collective_bytes", "p2p_bytes_sent"))
        delta = {k: s.get(k, 0) - b.get(k, 0) for k in ("eager_ops", "fused_ops", "region_replays", "collective_ops")}
        per_worker[w] = {"bytes": moved / steps, "collectives": delta["collective_ops"] / steps,
                         "ops": (delta["eager_ops"] + delta["fused_ops"]) / steps,  # compute instructions
                         "kernels": (delta["eager_ops"] + delta["region_replays"]) / steps}  # launched
    instructions = after["dispatcher_instructions"] - before["dispatcher_instructions"]
    dispatch_ms = after["dispatcher_dispatch_ms"] - before["dispatcher_dispatch_ms"]
    return {"step_ms": 1000 * elapsed / steps, "workers": per_worker, "instructions": instructions / steps,
            "misses": after["dispatcher_plan_cache_misses"] - before["dispatcher_plan_cache_misses"],
            "dispatch_us": 1000 * dispatch_ms / max(instructions, 1)}


def child_gpt(config, workers, steps, warmup):
    """One char_gpt run: the same numbers as `child`, measured over the steps after `warmup`."""
    import gt
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import char_gpt
    argv = ["--steps", str(warmup + steps), "--batch-size", "16", "--block-size", "32", "--layers", "2",
            "--embd", "64", "--sample", "0", "--eval-every", str(10 ** 9), "--workers", str(workers)]
    if config:
        argv += ["--config", os.path.join(HERE, "..", "examples", "configs", config)]
    args = char_gpt.parse(argv)
    char_gpt.start(args)
    marks = {}
    real_print = print

    def spy(*a, **k):  # char_gpt prints one line per step: take the stats after the warm-up
        line = " ".join(map(str, a))
        if line.startswith(f"step {warmup - 2:4d}"):  # plan the step after a stats() call (see child)
            gt.debug.stats()
        if line.startswith(f"step {warmup:4d}"):
            marks["before"], marks["start"] = gt.debug.stats(), time.perf_counter()
        if line.startswith(f"step {warmup + steps:4d}"):
            marks["elapsed"], marks["after"] = time.perf_counter() - marks["start"], gt.debug.stats()

    char_gpt.print = spy
    char_gpt.train(args)
    char_gpt.print = real_print
    print(json.dumps(measured(marks["before"], marks["after"], marks["elapsed"], steps)))


def run_child(argv, cache=True, env=None):
    env = dict(os.environ, GT_PLAN_CACHE="1" if cache else "0", **(env or {}))
    out = subprocess.run([sys.executable, __file__] + argv, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1]
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def row(name, workers, r, r_nocache):
    ws = sorted(r["workers"], key=int)
    bytes_ = ", ".join(f"{r['workers'][w]['bytes'] / 1024:.0f} KiB" for w in ws)
    ops = ", ".join(f"{r['workers'][w]['kernels']:.0f} ({r['workers'][w]['ops']:.0f})" for w in ws)
    nocache = f"{r_nocache['dispatch_us']:.1f}" if r_nocache else "-"
    return f"| {name} | {workers} | {r['step_ms']:.1f} | {bytes_} | {ops} | {r['dispatch_us']:.1f} | {nocache} |"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--child", nargs=2)
    p.add_argument("--child-gpt", nargs=2)
    p.add_argument("--tables", default="mlp,gpt,buckets", help="which tables to print (comma-separated)")
    args = p.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.steps, args.warmup)
    if args.child_gpt:
        config = "" if args.child_gpt[0] == "-" else args.child_gpt[0]
        return child_gpt(config, int(args.child_gpt[1]), args.steps, args.warmup)
    tables = args.tables.split(",")
    header = ("| {} | workers | step (ms) | bytes sent per worker per step | kernels (ops) per worker per step "
              "| dispatcher µs / instruction | without plan cache |")
    if "mlp" in tables:
        mlp_table(args, header)
    if "gpt" in tables:
        gpt_table(args, header)
    if "buckets" in tables:
        bucket_table(args)


def bucket_table(args):
    """Data parallel with the gradient all_reduces bucketed (the default) and one per gradient
    (GT_BUCKET_BYTES=0), side by side."""
    print()
    print("| data parallel | workers | step (ms), bucketed | all_reduces per worker per step "
          "| step (ms), GT_BUCKET_BYTES=0 | all_reduces per worker per step |")
    print("|---|---|---|---|---|---|")
    for name, flag, config in (("MLP", "--child", "data_parallel"), ("char_gpt", "--child-gpt", "data_parallel.yaml")):
        for workers in (2, 4):
            argv = [flag, config, str(workers), "--steps", str(args.steps), "--warmup", str(args.warmup)]
            cells = []
            for env in ({}, {"GT_BUCKET_BYTES": "0"}):
                r, error = run_child(argv, env=env)
                if error:
                    cells += [f"failed: {error}", ""]
                    continue
                collectives = max(w["collectives"] for w in r["workers"].values())
                cells += [f"{r['step_ms']:.1f}", f"{collectives:.0f}"]
            print(f"| {name} | {workers} | " + " | ".join(cells) + " |")
            sys.stdout.flush()


def mlp_table(args, header):
    print(header.format("strategy (MLP)"))
    print("|---|---|---|---|---|---|---|")
    for strategy in STRATEGIES:
        for workers in (1, 2, 4):
            argv = ["--child", strategy, str(workers), "--steps", str(args.steps), "--warmup", str(args.warmup)]
            r, error = run_child(argv)
            if error:
                print(f"| {strategy} | {workers} | failed: {error} | | | | |")
                continue
            r_nocache = run_child(argv, cache=False)[0]
            print(row(strategy, workers, r, r_nocache))
            sys.stdout.flush()


def gpt_table(args, header):
    print()
    print(header.format("char_gpt config"))
    print("|---|---|---|---|---|---|---|")
    for config, counts in (("", (1,)), ("data_parallel.yaml", (2, 4)), ("char_gpt_tensor_parallel.yaml", (2, 4)),
                           ("char_gpt_pipeline.yaml", (2,))):
        for workers in counts:
            argv = ["--child-gpt", config or "-", str(workers), "--steps", str(args.steps), "--warmup", str(args.warmup)]
            r, error = run_child(argv)
            if error:
                print(f"| {config or 'none'} | {workers} | failed: {error} | | | | |")
                continue
            r_nocache = run_child(argv, cache=False)[0]
            print(row(config or "none", workers, r, r_nocache))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
