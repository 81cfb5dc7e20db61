"""Host cost of a hot region's replay, with and without CUDA graphs (the GPU issue's item 4).

A CUDA worker replays a hot region by running its compiled host code, which launches each of
the region's kernels (one cuLaunchKernel each); with CUDA graphs (GT_CUDA_GRAPHS=1; off by
default) a replay that reads and writes the same buffers as an earlier one is one cuGraphLaunch. This runs the training steps of benchmarks/vs_torch.py (the MLP and
examples/char_gpt.py's GPT) both ways, each in its own process, and prints per step: the time,
the region replays, the kernels per replay, the share of replays that were graph launches, and
the worker's host time per replay (GT_JIT_PROFILE: from finding the operands to the last launch
queued, allocation of the outputs included; the GPU runs the kernels asynchronously).
Target (the GPU issue): at most 20 us + 1 us per kernel.

    GT_DEVICE=cuda python benchmarks/cuda_graphs.py [--steps 20]

On a CPU worker there are no graphs: both columns run the same code (a smoke test).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PROFILE = re.compile(r"profile: region .*: (\d+) replays, ([0-9.eE+-]+) ms$")


def counters(gt):
    """Region replays, their host ms (GT_JIT_PROFILE), kernel launches, graph replays: summed."""
    s = gt.debug.stats()
    replays = ms = 0.0
    for note in s.get("notes", []):
        m = PROFILE.search(note)
        if m:
            replays += int(m.group(1))
            ms += float(m.group(2))
    return {"profiled": replays, "host_ms": ms, "replays": s["region_replays"],
            "graphs": s.get("cuda_graph_replays", 0), "captures": s.get("cuda_graph_captures", 0),
            "kernels": s.get("region_kernel_launches", 0)}


def child(workload, steps):
    import vs_torch
    import gt
    step = {"mlp": vs_torch.mlp_step, "gpt": vs_torch.gpt_training_step}[workload](gt)
    for _ in range(5):
        step()
    before = counters(gt)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = (time.perf_counter() - start) / steps
    after = counters(gt)
    d = {k: after[k] - before[k] for k in after}
    print(json.dumps({"step_ms": seconds * 1e3, "delta": d, "steps": steps}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--child", nargs=2)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]))
    print(f"device: GT_DEVICE={os.environ.get('GT_DEVICE', 'cpu')}, {args.steps} steps after 5 warm-up steps")
    print("| workload | CUDA graphs | ms per step | region replays per step | kernels per replay | "
          "as graph launches | host us per replay | target us |")
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    for workload in ("mlp", "gpt"):
        for graphs in ("0", "1"):
            env = dict(os.environ, GT_JIT_SYNC="1", GT_JIT_PROFILE="1", GT_CUDA_GRAPHS=graphs)
            out = subprocess.run([sys.executable, __file__, "--child", workload, str(args.steps)], env=env,
                                 capture_output=True, text=True)
            if out.returncode:
                print(out.stderr[-3000:], file=sys.stderr)
                print(f"| {workload} | {'on' if graphs == '1' else 'off'} | failed | | | | | |")
                failed = True
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            d, n = r["delta"], r["steps"]
            replays = max(d["replays"], 1)
            kernels = d["kernels"] / replays
            host_us = d["host_ms"] * 1e3 / max(d["profiled"], 1)
            target = 20 + kernels
            print(f"| {workload} | {'on' if graphs == '1' else 'off'} | {r['step_ms']:.2f} | {d['replays'] / n:.0f} | "
                  f"{kernels:.1f} | {d['graphs'] / replays:.0%} | {host_us:.1f} | {target:.0f} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
