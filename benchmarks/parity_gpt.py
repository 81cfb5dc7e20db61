"""GT against PyTorch on one GPT, number for number (as llm.c's test_gpt2 checks its C code
against PyTorch): examples/char_gpt.py's model is built on GT, its weights are copied into the
same model built on PyTorch (the same source file, loaded a second time with `gt` standing for
`torch`), and on one batch of the real corpus it compares, in float32:

- the logits (max abs difference; llm.c's tolerance 1e-3 is the default here too),
- the loss (abs difference, tolerance 1e-5 as llm.c's),
- every parameter's gradient (max abs difference relative to that gradient's largest magnitude,
  tolerance 1e-3),
- every parameter after one AdamW step (max abs difference, tolerance 1e-5).

It exits 1 if any comparison is over its tolerance. PyTorch is not a GT dependency: run it with
a Python that has both (`python -m venv /tmp/tv && /tmp/tv/bin/pip install torch numpy pyyaml`
plus a .pth adding GT's site-packages; benchmarks/RESULTS.md):

    python benchmarks/parity_gpt.py [--layers 2 --heads 4 --embd 128 --block-size 64 --batch-size 8]
"""
import argparse
import contextlib
import importlib.util
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHAR_GPT = os.path.join(ROOT, "examples", "char_gpt.py")


def load_char_gpt(name, lib):
    """examples/char_gpt.py as module `name`, its `gt` meaning `lib` while it loads (its classes
    keep that binding: their methods look `gt`, `nn` and `F` up in the module's globals)."""
    import gt as real_gt
    saved = {k: sys.modules.get(k) for k in ("gt", "gt.nn", "gt.nn.functional")}
    if lib is not real_gt:
        if not hasattr(lib, "signal") or not hasattr(lib.signal, "context"):
            lib.signal = type("signals", (), {"context": staticmethod(lambda *a, **k: contextlib.nullcontext())})
        sys.modules.update({"gt": lib, "gt.nn": lib.nn, "gt.nn.functional": lib.nn.functional})
    try:
        spec = importlib.util.spec_from_file_location(name, CHAR_GPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        for k, v in saved.items():
            if v is not None:
                sys.modules[k] = v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--logits-tol", type=float, default=1e-3)
    p.add_argument("--loss-tol", type=float, default=1e-5)
    p.add_argument("--grad-tol", type=float, default=1e-3)
    p.add_argument("--step-tol", type=float, default=1e-5)
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("parity_gpt: torch is not importable here; nothing to compare (see the docstring)")
        return 0
    import gt
    torch.set_default_dtype(torch.float32)
    g_mod = load_char_gpt("char_gpt_on_gt", gt)
    t_mod = load_char_gpt("char_gpt_on_torch", torch)
    text = g_mod.load_corpus(g_mod.CORPUS)
    vocab = g_mod.Vocabulary(text)
    data = vocab.encode(text)
    rng = np.random.default_rng(0)
    starts = rng.integers(0, len(data) - args.block_size - 1, args.batch_size)
    x = np.stack([data[s:s + args.block_size] for s in starts]).astype(np.int64)
    y = np.stack([data[s + 1:s + args.block_size + 1] for s in starts]).astype(np.int64)

    gt.manual_seed(0)
    dims = (len(vocab), args.block_size, args.layers, args.heads, args.embd)
    g_model, t_model = g_mod.GPT(*dims), t_mod.GPT(*dims)
    weights = {k: v.numpy() for k, v in g_model.state_dict().items()}
    t_model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    g_opt = gt.optim.AdamW(g_model.parameters(), lr=1e-3)
    t_opt = torch.optim.AdamW(t_model.parameters(), lr=1e-3)

    g_logits = g_model(gt.tensor(x))
    t_logits = t_model(torch.from_numpy(x))
    g_loss = gt.nn.functional.cross_entropy(g_logits.reshape(-1, len(vocab)), gt.tensor(y).reshape(-1))
    t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, len(vocab)), torch.from_numpy(y).reshape(-1))
    g_loss.backward()
    t_loss.backward()

    rows, failed = [], False

    def record(what, value, tol):
        nonlocal failed
        ok = value <= tol
        failed |= not ok
        rows.append((what, value, tol, "ok" if ok else "OVER"))

    record("logits, max abs diff", float(np.abs(g_logits.numpy() - t_logits.detach().numpy()).max()),
           args.logits_tol)
    record("loss, abs diff", abs(g_loss.item() - t_loss.item()), args.loss_tol)
    t_params = dict(t_model.named_parameters())
    worst_grad = ("", 0.0)
    for name, gp in g_model.named_parameters():
        tg = t_params[name].grad.numpy()
        rel = float(np.abs(gp.grad.numpy() - tg).max() / max(np.abs(tg).max(), 1e-30))
        if rel >= worst_grad[1]:
            worst_grad = (name, rel)
        record(f"grad {name}, max abs diff / max |grad|", rel, args.grad_tol)
    g_opt.step()
    t_opt.step()
    worst_step = max(float(np.abs(gp.numpy() - t_params[n].detach().numpy()).max())
                     for n, gp in g_model.named_parameters())
    record("parameters after one AdamW step, max abs diff", worst_step, args.step_tol)

    print(f"GPT {args.layers} layers, {args.heads} heads, embd {args.embd}, block {args.block_size}, "
          f"batch {args.batch_size}; loss GT {g_loss.item():.6f} PyTorch {t_loss.item():.6f} "
          f"(torch {torch.__version__})")
    print("| check | value | tolerance | |\n|---|---|---|---|")
    for what, value, tol, verdict in rows:
        print(f"| {what} | {value:.2e} | {tol:.0e} | {verdict} |")
    print(f"worst gradient: {worst_grad[0]} ({worst_grad[1]:.2e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
