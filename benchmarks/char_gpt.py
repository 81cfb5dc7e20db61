"""Per-step time of examples/char_gpt.py (the default model: 2 layers, 4 heads, embd 128,
block 64, batch 32, AdamW) with GT's fusion off and on, and in PyTorch eager when PyTorch is
installed (on its GPU if it sees one, else the CPU; the same example file runs unchanged with
`torch` in place of `gt`: vs_torch.py's gpt_training_step).

Each configuration runs in its own process: fusion off is GT_JIT=0; fusion on is the default,
timed after warm-up steps that compile its regions (GT_JIT_SYNC=1). Every step, warm-up and
timed, ends by reading the loss (`.item()`), as a training loop that logs it does. Run:

    python benchmarks/char_gpt.py [--steps 20] [--warmup 10]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(backend, steps, warmup):
    sys.path.insert(0, HERE)
    import vs_torch  # the same model code and step as the GPU comparison
    lib, _ = vs_torch.backend_module(backend)
    step = vs_torch.gpt_training_step(lib)
    # The timed steps are shaped like the warm-up ones (each ends by reading the loss): the
    # client cuts batches at a read, so a differently shaped loop would bring new batch
    # structures, and new regions to compile, into the timed steps.
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = (time.perf_counter() - start) / steps
    stats = lib.debug.stats() if backend == "gt" else {}
    print(json.dumps({"seconds": seconds, "fused": stats.get("fused_ops"), "eager": stats.get("eager_ops")}))


def run(backend, steps, warmup, cache, **env):
    e = dict(os.environ, GT_CACHE_DIR=cache, **env)
    out = subprocess.run([sys.executable, __file__, "--child", backend, "--steps", str(steps), "--warmup",
                          str(warmup)], capture_output=True, text=True, env=e, timeout=3600)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    return json.loads(out.stdout.strip().splitlines()[-1]), ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--child")
    args = p.parse_args()
    if args.child:
        return child(args.child, args.steps, args.warmup)
    with tempfile.TemporaryDirectory() as tmp:
        off, _ = run("gt", args.steps, args.warmup, os.path.join(tmp, "off"), GT_JIT="0")
        on, _ = run("gt", args.steps, args.warmup, os.path.join(tmp, "on"), GT_JIT_SYNC="1")
        torch, why = run("torch", args.steps, args.warmup, os.path.join(tmp, "torch"))
    rows = [("GT, fusion off (GT_JIT=0)", f"{off['seconds'] * 1e3:.0f} ms", f"0 / {off['eager']}"),
            ("GT, fusion on (default)", f"{on['seconds'] * 1e3:.0f} ms", f"{on['fused']} / {on['eager']}"),
            ("PyTorch eager", f"{torch['seconds'] * 1e3:.0f} ms" if torch else "not run", "")]
    print(f"char_gpt.py default model, {args.steps} steps after {args.warmup} warm-up steps, {os.cpu_count()} cores")
    print(f"| {'configuration':32s} | {'time per step':>14s} | {'ops fused / eager (whole run)':>30s} |")
    print(f"|{'-' * 34}|{'-' * 16}|{'-' * 32}|")
    for name, t, ops in rows:
        print(f"| {name:32s} | {t:>14s} | {ops:>30s} |")
    if not torch:
        print(f"PyTorch: {why}")


if __name__ == "__main__":
    main()
