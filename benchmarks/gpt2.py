"""A GPT-2 124M training step: GT beside PyTorch eager and torch.compile, the same model code.

The model is examples/char_gpt.py's GPT at GPT-2 small's size (Radford et al. 2019: 12 layers,
12 heads, 768 wide, 1024 positions, the 50257-token vocabulary, tied output head; 124M
parameters), trained with AdamW on random tokens under bfloat16 autocast (matrix products in
bfloat16, the rest in float32, on both). Each step reads the loss, as a loop that logs it does.
Prints tokens per second and milliseconds per step after warm-up steps (GT_JIT_SYNC=1, so the
warm-up compiles GT's hot regions), each configuration in its own process.

GT runs on GT_DEVICE (`GT_DEVICE=cuda` for the GPU); PyTorch on CUDA when it sees a GPU. PyTorch is
not a GT dependency: run this with a Python that has both (on the GPU machine, the device bundle's
`./run.sh python benchmarks/gpt2.py`). `--tiny` is a smoke test of the script (2 layers, 128 wide,
64 positions, batch 2) that runs on a CPU worker in seconds.

    python benchmarks/gpt2.py [--only gt,torch,torch.compile] [--batch 8] [--steps 5] [--tiny]
                              [--trace gpt2.trace.json]   (`gt trace summary gpt2.trace.json`)
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from vs_torch import backend_module, sync  # noqa: E402  (the same stand-in of torch for gt)

GPT2 = dict(layers=12, heads=12, embd=768, block=1024, vocab=50257)
TINY = dict(layers=2, heads=4, embd=128, block=64, vocab=50257)


def child(backend, args):
    lib, device = backend_module(backend)
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import char_gpt
    size = TINY if args.tiny else GPT2
    lib.manual_seed(0)
    model = char_gpt.GPT(size["vocab"], size["block"], size["layers"], size["heads"], size["embd"])
    params = sum(p.numel() for p in model.parameters())
    opt = lib.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
    forward = model
    if backend == "torch.compile":
        import torch
        forward = torch.compile(model)
    rng = np.random.default_rng(0)
    device_type = "cpu" if device in ("cpu", "GT_DEVICE=cpu") else "cuda"

    def step():
        tokens = rng.integers(0, size["vocab"], (args.batch, size["block"] + 1))
        x, y = lib.tensor(tokens[:, :-1]), lib.tensor(tokens[:, 1:])
        with lib.autocast(device_type=device_type, dtype=lib.bfloat16):
            logits = forward(x)
            loss = lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return sync(lib, loss)

    losses, times = [], []  # every step's loss and seconds, warm-up steps first
    for _ in range(args.warmup + args.steps):
        begin = time.perf_counter()
        losses.append(step())
        times.append(time.perf_counter() - begin)
    if args.trace and backend == "gt":  # one more step, on GT's timeline (gt.profiler)
        with lib.profiler.trace(args.trace):
            step()
    print(json.dumps({"device": device, "params": params, "step": sum(times[args.warmup:]) / args.steps,
                      "warmup": sum(times[:args.warmup]), "times": times,
                      "tokens": args.batch * size["block"], "losses": losses}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--child")
    p.add_argument("--only", default="gt,torch,torch.compile")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--tiny", action="store_true", help="a small model: a smoke test of the script")
    p.add_argument("--trace", help="GT only: write a gt.profiler trace of one more step after the timed ones")
    args = p.parse_args()
    if args.tiny and args.batch == 8:
        args.batch = 2
    if args.child:
        return child(args.child, args)
    rows, failed = {}, []
    for backend in args.only.split(","):
        cmd = [sys.executable, __file__, "--child", backend, "--batch", str(args.batch), "--steps", str(args.steps),
               "--warmup", str(args.warmup)] + (["--tiny"] if args.tiny else []) + \
              (["--trace", args.trace] if args.trace else [])
        out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, GT_JIT_SYNC="1"))
        if out.returncode:
            lines = out.stderr.strip().splitlines()
            failed.append(f"{backend}: {lines[-1] if lines else 'exit %d' % out.returncode}")
            print(out.stderr[-3000:], file=sys.stderr)
            continue
        rows[backend] = json.loads(out.stdout.strip().splitlines()[-1])
    size = TINY if args.tiny else GPT2
    print(f"GPT-2 {'tiny' if args.tiny else '124M'}: {size}, batch {args.batch}, bfloat16 autocast, AdamW; "
          f"{args.warmup} warm-up steps, {args.steps} timed")
    print("| backend | device | parameters | ms per step | tokens/s | warm-up s | first / last loss |")
    print("|---|---|---|---|---|---|---|")
    for backend, r in rows.items():
        print(f"| {backend} | {r['device']} | {r['params'] / 1e6:.1f}M | {r['step'] * 1e3:.1f} | "
              f"{r['tokens'] / r['step']:,.0f} | {r['warmup']:.1f} | {r['losses'][0]:.3f} / {r['losses'][-1]:.3f} |")
    for backend, r in rows.items():
        print(f"{backend}: ms per step, warm-up first: " + " ".join(f"{t * 1e3:.0f}" for t in r["times"]))
    if "gt" in rows and "torch" in rows:
        print(f"GT / PyTorch eager: {rows['gt']['step'] / rows['torch']['step']:.2f}x per step")
    for f in failed:
        print("failed: " + f)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
